//! The contract between a lowered kernel's `.wasm` and the host that runs it:
//! import and export names, the memory layout, and the side tables that
//! give every host call and trap its meaning and its `.pk` source location.
//!
//! Everything here is plain data (serde), so a kernel package can carry the
//! `.wasm` with this manifest as JSON and any Wasm host can run it without
//! the compiler.
//!
//! invariant: the manifest describes exactly the module it was produced
//! with; `site` numbers in calls index [`CpuManifest::sites`].

use serde::{Deserialize, Serialize};

/// Bumped whenever the import/export contract or the layout rules change.
pub const ABI_VERSION: u32 = 3;

/// The module name of every host import.
pub const IMPORT_MODULE: &str = "pk";
/// `trap(site, kind, a, b)`: reports a strictness violation and never
/// returns. `kind` is a [`TrapKind`] code; `a`, `b` depend on the kind.
pub const IMPORT_TRAP: &str = "trap";
/// `dot(site, lhs_addr, rhs_addr, out_addr)`: the MXU. Shapes, strides and
/// dtypes are in [`DotSite`].
pub const IMPORT_DOT: &str = "dot";
/// `dma_start(site)` / `dma_wait(site)`: the DMA engine. Dynamic window
/// starts are written to the argument area first (see [`DmaSite`]).
pub const IMPORT_DMA_START: &str = "dma_start";
pub const IMPORT_DMA_WAIT: &str = "dma_wait";
/// `eup(fn, src_addr, dst_addr, lanes)`: the transcendental unit. Applies
/// the [`EupFn`] `fn & 0xff` to `lanes` f32 lanes at `src_addr`, writing
/// them at `dst_addr` (the same address, or a disjoint range); with
/// [`EUP_BF16`] set in `fn` the results are rounded to bf16 lanes. The
/// host computes exactly what the four-lane Wasm helpers compute, so
/// where a tile's lanes are computed never shows in its bits.
pub const IMPORT_EUP: &str = "eup";
/// `fill(ref, bits)`: stores the 32-bit pattern `bits` into every element
/// of ref `ref` (an `o[..] = 0.0` of a whole f32 output block). The host
/// fills the block where it lies: in VMEM, or in the output array when the
/// MXU writes that block in place (see [`RefSlot::mxu_out`]).
pub const IMPORT_FILL: &str = "fill";
/// `mesh(site, device, n) -> i32`: the operations of a kernel across
/// devices ([`MeshSite`]): this device's id, the phases of a remote copy,
/// and semaphore signals, waits and reads. `device` is the logical id of
/// the device a remote copy or signal goes to (-1 for this device), `n`
/// the count of a signal or wait; the result is the id or the value read
/// (0 otherwise). Dynamic window starts are in the argument area, as for
/// [`IMPORT_DMA_START`]. A wait blocks until its semaphore holds the count.
pub const IMPORT_MESH: &str = "mesh";
/// `print(site, tile_addr)`: a `print` ([`PrintSite`]). Its scalar
/// arguments (i32) are in the argument area, in order; `tile_addr` is the
/// address of the tile it prints (contiguous 32-bit lanes: f32 for float
/// dtypes, i32 for integers), when it prints one.
pub const IMPORT_PRINT: &str = "print";

/// The functions of the `eup` import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum EupFn {
    Exp = 0,
    Exp2 = 1,
    Log = 2,
    Tanh = 3,
    Logistic = 4,
}

impl EupFn {
    pub fn from_code(c: i32) -> Option<EupFn> {
        Some(match c {
            0 => EupFn::Exp,
            1 => EupFn::Exp2,
            2 => EupFn::Log,
            3 => EupFn::Tanh,
            4 => EupFn::Logistic,
            _ => return None,
        })
    }
}

/// The `fn` flag of an `eup` call on a bf16 tile.
pub const EUP_BF16: i32 = 0x100;

/// Tiles of at least this many lanes have their transcendentals computed
/// by the `eup` import; smaller ones stay in Wasm, fused into the loops of
/// their neighbours.
pub const EUP_MIN_LANES: u64 = 1024;

/// The exported linear memory (VMEM + SMEM of one TensorCore).
pub const EXPORT_MEMORY: &str = "memory";
/// The kernel body: one i32 parameter per grid axis.
pub const EXPORT_KERNEL: &str = "kernel";
/// A mutable i32 global holding the site of the innermost loop running,
/// or -1; read when a run is interrupted to say which loop did not end.
pub const EXPORT_LOOP_SITE: &str = "loop_site";

/// The export name of operand `i`'s index map: grid indices in, one block
/// index per array dimension out (multi-value).
pub fn index_map_export(operand: usize) -> String {
    format!("index_map_{operand}")
}

/// What a `trap` call reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[repr(i32)]
pub enum TrapKind {
    /// A dynamic window start outside the ref: `a` = dimension, `b` = start.
    OutOfBounds = 1,
    /// Integer division or remainder by zero.
    DivideByZero = 2,
    /// A load read elements never written (only with `check_uninit`): `a` =
    /// the flat element index inside the window.
    Uninitialized = 3,
    /// `multiple_of(x, n)` was given an `x` that is not a multiple of `n`:
    /// `a` = `x`, `b` = `n`.
    NotMultiple = 4,
}

impl TrapKind {
    pub fn from_code(c: i32) -> Option<TrapKind> {
        Some(match c {
            1 => TrapKind::OutOfBounds,
            2 => TrapKind::DivideByZero,
            3 => TrapKind::Uninitialized,
            4 => TrapKind::NotMultiple,
            _ => return None,
        })
    }
}

/// The bit patterns that mark never-written memory: a quiet NaN with a
/// recognisable payload for floats, and a byte pattern for integers.
pub mod poison {
    /// f32 poison (a quiet NaN).
    pub const F32: u32 = 0x7FC0_DEAD;
    /// bf16 poison (a quiet NaN).
    pub const BF16: u16 = 0x7FC1;
    /// 8-bit float poison: NaN in both fp8 formats (0x7F is NaN in
    /// e4m3fn, and a quiet NaN in e5m2).
    pub const F8: u8 = 0x7F;
    /// Integer poison, repeated to the element width.
    pub const INT_BYTE: u8 = 0xA5;
}

/// A source location: file, 1-based line and column, and the byte range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Loc {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub start: u32,
    pub end: u32,
}

/// One source file, carried so that diagnostics can quote the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceText {
    pub name: String,
    pub text: String,
}

/// An op that may call the host or trap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    /// What the op is, in words (`load of x`, `integer division`...).
    pub what: String,
    pub loc: Loc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Space {
    Vmem,
    Smem,
    Any,
    Semaphore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RefOrigin {
    Operand(usize),
    Scratch(usize),
    /// A view (`k.reshape(..)`, `k.bitcast(T)`) of the operand or scratch
    /// ref of slot N: the same memory (offset and shadow), seen with this
    /// slot's shape and dtype. The host gives it nothing of its own.
    View(usize),
}

/// Where one ref of the kernel lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefSlot {
    pub name: String,
    pub origin: RefOrigin,
    pub space: Space,
    /// The dtype's `.pk` name.
    pub dtype: String,
    pub shape: Vec<u64>,
    /// Byte offset in linear memory; `None` for ANY refs (host memory).
    pub offset: Option<u32>,
    /// Bytes of the buffer (elements x storage width).
    pub bytes: u32,
    /// Byte offset of the one-byte-per-element "written" map, when the
    /// module was lowered with `check_uninit`.
    pub shadow: Option<u32>,
    /// Some op of the kernel stores to the ref or makes it a DMA
    /// destination (if not, a block copied in stays as it was).
    pub written: bool,
    /// Every grid step stores the whole ref before anything reads it.
    pub filled_first: bool,
    /// Nothing but the MXU reads the ref, and it reads the whole ref in
    /// place (the `lhs_ref`/`rhs_ref` of its dots): the host may let the
    /// MXU read an input block from the array instead of copying it in.
    #[serde(default)]
    pub mxu_only: bool,
    /// A blocked f32 output that only the host writes, whole: `dot`s whose
    /// product is stored into it or accumulated in it (`out_ref` of their
    /// sites) and `fill` calls; the kernel's own code never loads or stores
    /// it. The host may then let the MXU write a full block where it lies
    /// in the output array instead of in VMEM and copying it out.
    #[serde(default)]
    pub mxu_out: bool,
}

/// How a grid axis is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Semantics {
    Parallel,
    Arbitrary,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridAxis {
    pub name: String,
    /// The number of steps, or for a dynamic axis its upper bound.
    pub extent: u64,
    pub semantics: Semantics,
    /// A dynamic axis runs as many steps as this prefetch element holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic: Option<DynamicAxis>,
}

/// Where a dynamic grid axis reads its number of steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamicAxis {
    /// Index into `CpuManifest::operands` (an `i32` prefetch operand).
    pub operand: usize,
    /// The element's row-major position in that operand.
    pub element: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    Prefetch,
    Input,
    Output,
}

/// One operand of the kernel as the host sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperandInfo {
    pub name: String,
    pub role: Role,
    pub dtype: String,
    /// The whole array's shape.
    pub shape: Vec<u64>,
    pub space: Space,
    /// Block extents per array dimension (squeezed dimensions are 1), or
    /// `None` when the kernel sees the whole array.
    pub block: Option<Vec<u64>>,
    /// Which dimensions of the block are squeezed (dropped in the kernel).
    pub squeezed: Vec<bool>,
    /// Index of the kernel's ref for this operand.
    pub ref_index: usize,
    /// For outputs: the operand whose buffer this output reuses.
    pub aliases: Option<usize>,
    pub loc: Loc,
}

/// The start of one window dimension: a constant, or an i32 the module
/// writes to the argument area (slot `n` at `args_offset + 4 n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WinStart {
    Const(u64),
    Arg(u32),
}

/// A window of a ref, as DMA descriptors carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub ref_index: usize,
    pub starts: Vec<WinStart>,
    /// Extent per ref dimension (1 for an indexed dimension).
    pub sizes: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DmaSite {
    pub site: u32,
    pub src: Window,
    pub dst: Window,
    pub sem: Window,
}

/// Element kind of a `dot` call's 32-bit lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DotKind {
    /// f32 lanes (f32 or bf16 values): f32 products, f32 accumulation.
    F32,
    /// i32 lanes (8/16/32-bit integer values): i32 wrapping accumulation.
    I32,
}

/// One `dot` op. The operands are row-major matrices in linear memory
/// with the given row strides (in elements); the output is contiguous
/// `m x n`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DotSite {
    pub site: u32,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub trans_lhs: bool,
    pub trans_rhs: bool,
    /// Row stride of the lhs as stored (before any transpose).
    pub lhs_ld: u32,
    pub rhs_ld: u32,
    /// Rows and columns of the lhs and rhs as stored.
    pub lhs_dims: (u32, u32),
    pub rhs_dims: (u32, u32),
    pub kind: DotKind,
    /// The dtype names of the operands (for cost accounting and messages).
    pub lhs_dtype: String,
    pub rhs_dtype: String,
    /// Whether the result is rounded to bf16 (never: results are 32-bit);
    /// kept for the future f32 -> bf16 fused output.
    pub out_dtype: String,
    /// The output already holds values the product is added to: the
    /// `acc[..] += dot(a, b)` of a whole VMEM ref, done by the GEMM itself.
    #[serde(default)]
    pub accumulate: bool,
    /// An operand is a bf16 ref's window read in place (2-byte elements),
    /// not a tile of f32 lanes; the host widens it.
    #[serde(default)]
    pub lhs_bf16: bool,
    #[serde(default)]
    pub rhs_bf16: bool,
    /// The ref an operand is read from in place, when no op of the kernel
    /// writes that ref: when the ref is `mxu_only`, the host may have left
    /// its block in the input array, and reads the operand there.
    #[serde(default)]
    pub lhs_ref: Option<u32>,
    #[serde(default)]
    pub rhs_ref: Option<u32>,
    /// The ref whose whole VMEM buffer is the output (`r[..] = dot(..)` or
    /// `r[..] += dot(..)` done by the GEMM itself): when the ref is
    /// `mxu_out`, the host may have placed its block in the output array,
    /// and writes the product there.
    #[serde(default)]
    pub out_ref: Option<u32>,
}

/// What a `mesh` call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MeshOp {
    /// Returns this device's logical id.
    DeviceId,
    /// Starts a remote copy from `src` here to `dst` on `device`.
    RemoteStart,
    /// Waits on `sem` (the send semaphore) for the copy's bytes.
    WaitSend,
    /// Waits on `recv_sem` for the copy's bytes (this device received).
    WaitRecv,
    /// Adds `n` to `sem`, here or on `device`.
    Signal,
    /// Waits until `sem` holds `n`, then subtracts it.
    Wait,
    /// Returns the value of `sem`.
    Read,
}

/// One `mesh` call site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeshSite {
    pub site: u32,
    pub op: MeshOp,
    /// The copy's windows (remote copies only).
    pub src: Option<Window>,
    pub dst: Option<Window>,
    /// The send semaphore of a copy, or the semaphore of a signal, wait or
    /// read.
    pub sem: Option<Window>,
    /// The receive semaphore of a copy.
    pub recv_sem: Option<Window>,
    /// Whether `sem` is the kernel's barrier semaphore.
    #[serde(default)]
    pub barrier: bool,
}

/// One `print` call site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrintSite {
    pub site: u32,
    /// The format as written: each `{}` takes the next argument, `{{` and
    /// `}}` are braces.
    pub fmt: String,
    /// Scalar i32 arguments, in the argument area.
    pub scalars: u32,
    /// The dtype (pk's name) and shape of the printed tile.
    pub tile: Option<(String, Vec<u64>)>,
}

/// One axis of the mesh a kernel runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeshAxisInfo {
    pub name: String,
    pub size: u64,
}

/// Linear memory regions, in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Layout {
    /// The argument area for DMA dynamic starts.
    pub args_offset: u32,
    pub args_bytes: u32,
    /// SMEM refs (scalar prefetch, SMEM scratch, semaphores).
    pub smem_offset: u32,
    pub smem_bytes: u32,
    /// VMEM refs (blocks, whole-array VMEM operands, scratch).
    pub vmem_offset: u32,
    pub vmem_bytes: u32,
    /// Intermediate tile values of the body.
    pub temps_offset: u32,
    pub temps_bytes: u32,
    /// Shadow maps (only with `check_uninit`).
    pub shadow_offset: u32,
    pub shadow_bytes: u32,
    /// The memory the module declares as its minimum size.
    pub memory_bytes: u64,
    /// The module's maximum memory: the target's VMEM + SMEM.
    pub memory_limit: u64,
}

/// Everything a host needs to run the `.wasm` of one kernel specialisation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuManifest {
    pub abi_version: u32,
    pub kernel: String,
    /// The target whose VMEM the memory models.
    pub target: String,
    /// `NAME=VALUE` of each parameter of this specialisation.
    pub params: Vec<(String, String)>,
    pub grid: Vec<GridAxis>,
    pub operands: Vec<OperandInfo>,
    /// Indexed by the IR's ref handles.
    pub refs: Vec<RefSlot>,
    pub layout: Layout,
    pub sites: Vec<Site>,
    pub dots: Vec<DotSite>,
    pub dmas: Vec<DmaSite>,
    /// The mesh of a kernel across devices (empty for one device), its
    /// axes in row-major order of the logical device ids.
    #[serde(default)]
    pub mesh: Vec<MeshAxisInfo>,
    /// The `mesh` call sites.
    #[serde(default)]
    pub meshes: Vec<MeshSite>,
    /// The `print` call sites.
    #[serde(default)]
    pub prints: Vec<PrintSite>,
    /// The collective id of a kernel with a barrier semaphore.
    #[serde(default)]
    pub collective_id: Option<u64>,
    /// Whether loads check the shadow maps (`check_uninit`).
    pub check_uninit: bool,
    /// The kernel's location.
    pub loc: Loc,
    pub sources: Vec<SourceText>,
}

impl CpuManifest {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> Result<CpuManifest, serde_json::Error> {
        serde_json::from_str(text)
    }

    pub fn dot(&self, site: u32) -> Option<&DotSite> {
        self.dots.iter().find(|d| d.site == site)
    }

    pub fn dma(&self, site: u32) -> Option<&DmaSite> {
        self.dmas.iter().find(|d| d.site == site)
    }

    pub fn mesh_site(&self, site: u32) -> Option<&MeshSite> {
        self.meshes.iter().find(|d| d.site == site)
    }

    pub fn print_site(&self, site: u32) -> Option<&PrintSite> {
        self.prints.iter().find(|d| d.site == site)
    }

    /// The devices of the kernel's mesh (1 without one).
    pub fn devices(&self) -> u64 {
        self.mesh.iter().map(|a| a.size).product()
    }
}

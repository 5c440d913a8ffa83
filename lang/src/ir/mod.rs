//! Tile IR: the one target-independent, verified representation that both
//! backends (Mosaic and WebAssembly) read.
//!
//! A [`Module`] holds kernel specialisations. Each [`Kernel`] has a grid,
//! operands with block specs, scratch buffers and a body [`Func`]. A `Func` is
//! structured SSA: values, ops and blocks live in arenas and refer to each
//! other by typed handles; control flow is nested (`If`, `For`, `While` own
//! blocks that end by yielding values), as in MLIR's `scf` dialect. Source
//! spans are a side table keyed by op.
//!
//! The entry block of every `Func` takes the grid indices (scalar `i32`, one
//! per grid axis) as parameters: the kernel body reads `program_id(a)` as
//! entry parameter `a`, and an index map computes block indices from them.
//!
//! invariant: a kernel given to a backend is specialised: every [`Dim`] is
//! [`Dim::Known`] (`verify::verify_kernel` with `specialised = true` checks it).

pub mod arena;
pub mod cost;
pub mod print;
pub mod types;
pub mod verify;
pub mod work;

pub use arena::{Arena, Handle};
pub use types::{shape_str, DType, Dim, RefType, Shape, Space, SymExpr, SymOp, Type};

use crate::span::{SourceMap, Span};
use std::sync::Arc;

pub type Value = Handle<ValueData>;
pub type OpId = Handle<Op>;
pub type BlockId = Handle<BlockData>;
pub type RefId = Handle<RefDecl>;

#[derive(Debug, Clone)]
pub struct ValueData {
    pub ty: Type,
    pub def: ValueDef,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueDef {
    /// Parameter `n` of a block.
    Param(BlockId, usize),
    /// Result `n` of an op.
    Result(OpId, usize),
}

/// A straight-line list of ops that ends by yielding values to its owner
/// (the results of an `If`, the next iteration of a loop; nothing for an
/// entry block, or the block indices for an index map).
#[derive(Debug, Clone, Default)]
pub struct BlockData {
    pub params: Vec<Value>,
    pub ops: Vec<OpId>,
    pub yields: Vec<Value>,
}

#[derive(Debug, Clone)]
pub struct Op {
    pub kind: OpKind,
    pub results: Vec<Value>,
}

/// A literal; a vector-typed `Const` splats it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Literal {
    Int(i64),
    Float(f64),
    Bool(bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    /// Logical not for bool, bitwise not for integers.
    Not,
    Abs,
    Exp,
    Exp2,
    Log,
    Log1p,
    Sqrt,
    Rsqrt,
    Tanh,
    Sin,
    Cos,
    Floor,
    Ceil,
    Round,
    Erf,
    Logistic,
    Sign,
}

impl UnaryOp {
    /// Whether the TPU evaluates it on its transcendental unit (the EUP)
    /// rather than the vector ALUs: what cost estimates count separately.
    pub fn is_transcendental(self) -> bool {
        matches!(
            self,
            UnaryOp::Exp
                | UnaryOp::Exp2
                | UnaryOp::Log
                | UnaryOp::Log1p
                | UnaryOp::Sqrt
                | UnaryOp::Rsqrt
                | UnaryOp::Tanh
                | UnaryOp::Sin
                | UnaryOp::Cos
                | UnaryOp::Erf
                | UnaryOp::Logistic
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    /// Float division, or integer division rounding toward zero.
    Div,
    /// Remainder with the sign of the dividend (C `%`, `fmod` for floats).
    Rem,
    Max,
    Min,
    Pow,
    And,
    Or,
    Xor,
    Shl,
    /// Arithmetic shift for signed integers, logical for unsigned.
    Shr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    /// Index (i32) of the first maximum.
    ArgMax,
    /// Index (i32) of the first minimum.
    ArgMin,
}

/// Where a slice of one ref dimension starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    Const(u64),
    /// A scalar i32 value.
    Dyn(Value),
}

/// How one ref dimension is indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slice {
    /// One position; the dimension is dropped from the result.
    Index(Start),
    /// `size` consecutive positions from `start`. In an unspecialised
    /// kernel, size 0 of a symbolic dimension stands for the whole of it.
    Range { start: Start, size: u64 },
    /// `size` positions from `start`, `stride` (at least 2) apart: the
    /// window `ds(start, size, stride)` (`tpu.strided_load` /
    /// `tpu.strided_store` in Mosaic).
    Strided {
        start: Start,
        size: u64,
        stride: u64,
    },
}

impl Slice {
    /// The first position.
    pub fn start(&self) -> Start {
        match *self {
            Slice::Index(s) | Slice::Range { start: s, .. } | Slice::Strided { start: s, .. } => s,
        }
    }

    /// The distance between consecutive positions (1 but for `Strided`).
    pub fn stride(&self) -> u64 {
        match *self {
            Slice::Strided { stride, .. } => stride,
            _ => 1,
        }
    }

    /// How many positions from the start the window spans.
    pub fn extent(&self) -> u64 {
        match *self {
            Slice::Index(_) => 1,
            Slice::Range { size, .. } => size,
            Slice::Strided { size, stride, .. } => (size - 1) * stride + 1,
        }
    }
}

/// A window of a ref: one [`Slice`] per ref dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefView {
    pub target: RefId,
    pub index: Vec<Slice>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum OpKind {
    /// The result type's value; vectors splat the literal.
    Const(Literal),
    Unary(UnaryOp, Value),
    /// Operands and result have one type (bool result for none: see `Compare`).
    Binary(BinaryOp, Value, Value),
    /// Operands of one type; the result is bool of the same shape.
    Compare(CmpOp, Value, Value),
    /// Elementwise choice; `cond` is bool of the result's shape.
    Select {
        cond: Value,
        on_true: Value,
        on_false: Value,
    },
    /// Value conversion to the result dtype, same shape. Float to integer
    /// rounds toward zero and saturates; NaN converts to 0. Float narrowing
    /// rounds to nearest even.
    Cast(Value),
    /// Reinterprets bits as the result dtype (same width), same shape.
    Bitcast(Value),
    /// A scalar copied to every element of the result vector.
    Splat(Value),
    /// A vector of the result's rank whose size-1 dimensions are repeated to
    /// the result's shape.
    Broadcast(Value),
    /// Same elements (row-major order), the result's shape.
    Reshape(Value),
    /// Result dim `i` is operand dim `perm[i]`.
    Transpose(Value, Vec<usize>),
    /// The static window `[start, start + size)` of each dimension (same
    /// rank; a dropped dimension is a size-1 window and a `Reshape`).
    Slice(Value, Vec<(u64, u64)>),
    /// The operands joined along `axis` (same dtype, equal other sizes).
    Concat(Vec<Value>, usize),
    /// Each element is its index along `dim` (result dtype i32).
    Iota {
        dim: usize,
    },
    /// Reduces one axis; the result keeps it as size 1 if `keepdims`.
    Reduce {
        op: ReduceOp,
        value: Value,
        axis: usize,
        keepdims: bool,
    },
    /// Matrix product of 2-D operands, accumulated in the result dtype (32
    /// bits). `trans_lhs`/`trans_rhs` transpose an operand first.
    Dot {
        lhs: Value,
        rhs: Value,
        trans_lhs: bool,
        trans_rhs: bool,
    },
    /// `numpy.roll`: element `i` moves to `(i + shift) mod n` along `axis`.
    /// `shift` is a scalar i32.
    Roll {
        value: Value,
        shift: Value,
        axis: usize,
    },
    /// `multiple_of(x, n)`: the scalar i32 `x`, which the kernel promises is
    /// a multiple of `n` (positive). The TPU compiler takes the promise for
    /// its alignment proofs (`tpu.assume_multiple`); the CPU reference
    /// checks it.
    AssumeMultiple(Value, u64),
    /// Reads a window of a ref: a vector, or a scalar when every dimension
    /// is indexed by `Slice::Index`.
    Load(RefView),
    /// Writes `value` (of the window's type) to a window of a ref. With a
    /// mask (a bool vector of the window's shape), only the elements where
    /// the mask is true are written; the others keep their old contents
    /// (Pallas' `pltpu.store(ref, v, mask=m)`).
    Store(RefView, Value, Option<Value>),
    /// Starts a DMA from `src` to `dst`; `sem` (one semaphore) is signalled
    /// when it completes.
    DmaStart {
        src: RefView,
        dst: RefView,
        sem: RefView,
    },
    /// Waits for the DMA described by the same three windows.
    DmaWait {
        src: RefView,
        dst: RefView,
        sem: RefView,
    },
    /// This device's logical id on the kernel's mesh (row-major over the
    /// mesh axes): a scalar i32.
    DeviceId,
    /// A copy from the local window `src` to the window `dst` of device
    /// `device` (a logical id, scalar i32): `Start` begins it, signalling
    /// `send_sem` here when the source has been read and `recv_sem` on
    /// `device` when the data has arrived; `WaitSend` waits on `send_sem`
    /// (the sender), `WaitRecv` on `recv_sem` (the receiver, whose own `dst`
    /// window the copy wrote). All three name the copy by the same operands.
    RemoteDma {
        phase: RemotePhase,
        src: RefView,
        dst: RefView,
        send_sem: RefView,
        recv_sem: RefView,
        device: Value,
    },
    /// Adds `n` (scalar i32) to the plain or barrier semaphore `sem`, on
    /// this device or on `device` (a logical id).
    SemSignal {
        sem: RefView,
        n: Value,
        device: Option<Value>,
    },
    /// Blocks until `sem` holds at least `n` (scalar i32), then subtracts it.
    SemWait {
        sem: RefView,
        n: Value,
    },
    /// The current value of a semaphore (scalar i32).
    SemRead(RefView),
    /// `print`: writes `fmt` with each `{}` replaced by the next argument
    /// (scalar i32s, or one tile for the last `{}`), with the grid step.
    Print {
        fmt: String,
        args: Vec<Value>,
    },
    /// Runs `then_block` or `else_block`; each yields the op's results.
    If {
        cond: Value,
        then_block: BlockId,
        else_block: BlockId,
    },
    /// `for iv in lo..hi step step`: `body` takes `[iv, carried...]` and
    /// yields the next carried values; the op's results are the final ones.
    /// `lo` and `hi` are scalar i32; `step` is positive.
    For {
        lo: Value,
        hi: Value,
        step: u64,
        inits: Vec<Value>,
        body: BlockId,
    },
    /// `cond` takes the carried values and yields one scalar bool; `body`
    /// takes them and yields the next ones. Results are the final values.
    While {
        inits: Vec<Value>,
        cond: BlockId,
        body: BlockId,
    },
}

impl OpKind {
    /// The blocks an op owns: `if` branches, a loop's condition and body.
    pub fn blocks(&self) -> Vec<BlockId> {
        match self {
            OpKind::If {
                then_block,
                else_block,
                ..
            } => vec![*then_block, *else_block],
            OpKind::For { body, .. } => vec![*body],
            OpKind::While { cond, body, .. } => vec![*cond, *body],
            _ => Vec::new(),
        }
    }

    /// Every value an op reads (not counting its blocks' contents).
    pub fn operands(&self) -> Vec<Value> {
        fn view(v: &RefView, out: &mut Vec<Value>) {
            for s in &v.index {
                if let Start::Dyn(x) = s.start() {
                    out.push(x);
                }
            }
        }
        let mut out = Vec::new();
        match self {
            OpKind::Const(_) | OpKind::Iota { .. } => {}
            OpKind::Unary(_, a)
            | OpKind::Cast(a)
            | OpKind::Bitcast(a)
            | OpKind::Splat(a)
            | OpKind::Broadcast(a)
            | OpKind::Reshape(a)
            | OpKind::Transpose(a, _)
            | OpKind::AssumeMultiple(a, _)
            | OpKind::Slice(a, _) => out.push(*a),
            OpKind::Concat(vs, _) => out.extend(vs.iter().copied()),
            OpKind::Binary(_, a, b) | OpKind::Compare(_, a, b) => out.extend([*a, *b]),
            OpKind::Select {
                cond,
                on_true,
                on_false,
            } => out.extend([*cond, *on_true, *on_false]),
            OpKind::Reduce { value, .. } => out.push(*value),
            OpKind::Dot { lhs, rhs, .. } => out.extend([*lhs, *rhs]),
            OpKind::Roll { value, shift, .. } => out.extend([*value, *shift]),
            OpKind::Load(v) => view(v, &mut out),
            OpKind::Store(v, x, mask) => {
                view(v, &mut out);
                out.push(*x);
                out.extend(*mask);
            }
            OpKind::DmaStart { src, dst, sem } | OpKind::DmaWait { src, dst, sem } => {
                view(src, &mut out);
                view(dst, &mut out);
                view(sem, &mut out);
            }
            OpKind::DeviceId => {}
            OpKind::RemoteDma {
                src,
                dst,
                send_sem,
                recv_sem,
                device,
                ..
            } => {
                for v in [src, dst, send_sem, recv_sem] {
                    view(v, &mut out);
                }
                out.push(*device);
            }
            OpKind::SemSignal { sem, n, device } => {
                view(sem, &mut out);
                out.push(*n);
                out.extend(*device);
            }
            OpKind::SemWait { sem, n } => {
                view(sem, &mut out);
                out.push(*n);
            }
            OpKind::SemRead(sem) => view(sem, &mut out),
            OpKind::Print { args, .. } => out.extend(args.iter().copied()),
            OpKind::If { cond, .. } => out.push(*cond),
            OpKind::For { lo, hi, inits, .. } => {
                out.extend([*lo, *hi]);
                out.extend(inits.iter().copied());
            }
            OpKind::While { inits, .. } => out.extend(inits.iter().copied()),
        }
        out
    }
}

/// A function body: values, ops and blocks in arenas, entry block first.
#[derive(Debug, Clone, Default)]
pub struct Func {
    pub values: Arena<ValueData>,
    pub ops: Arena<Op>,
    pub blocks: Arena<BlockData>,
    /// Source span of each op (side table indexed like `ops`).
    pub spans: Vec<Span>,
    pub entry: Option<BlockId>,
}

impl Func {
    pub fn ty(&self, v: Value) -> &Type {
        &self.values[v].ty
    }

    pub fn span(&self, op: OpId) -> Span {
        self.spans.get(op.index()).copied().unwrap_or_default()
    }

    pub fn entry_block(&self) -> &BlockData {
        match self.entry {
            Some(b) => &self.blocks[b],
            None => &EMPTY_BLOCK,
        }
    }

    /// Creates a block with parameters of the given types.
    pub fn new_block(&mut self, params: &[Type]) -> BlockId {
        let b = self.blocks.append(BlockData::default());
        for (i, t) in params.iter().enumerate() {
            let v = self.values.append(ValueData {
                ty: t.clone(),
                def: ValueDef::Param(b, i),
            });
            self.blocks[b].params.push(v);
        }
        b
    }

    /// Appends an op to `block` with results of the given types.
    pub fn push(
        &mut self,
        block: BlockId,
        kind: OpKind,
        result_types: &[Type],
        span: Span,
    ) -> OpId {
        let op = self.ops.append(Op {
            kind,
            results: Vec::new(),
        });
        for (i, t) in result_types.iter().enumerate() {
            let v = self.values.append(ValueData {
                ty: t.clone(),
                def: ValueDef::Result(op, i),
            });
            self.ops[op].results.push(v);
        }
        self.spans.push(span);
        self.blocks[block].ops.push(op);
        op
    }

    /// Appends a single-result op and returns its value.
    pub fn push1(&mut self, block: BlockId, kind: OpKind, ty: Type, span: Span) -> Value {
        let op = self.push(block, kind, &[ty], span);
        self.ops[op].results[0]
    }
}

static EMPTY_BLOCK: BlockData = BlockData {
    params: Vec::new(),
    ops: Vec::new(),
    yields: Vec::new(),
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Semantics {
    Parallel,
    Arbitrary,
}

impl Semantics {
    pub fn name(self) -> &'static str {
        match self {
            Semantics::Parallel => "parallel",
            Semantics::Arbitrary => "arbitrary",
        }
    }
}

#[derive(Debug, Clone)]
pub struct GridAxis {
    pub name: String,
    /// The number of steps; for a dynamic axis, its compile-time upper
    /// bound, which every static rule (budgets, races, index maps) uses.
    pub extent: Dim,
    pub semantics: Semantics,
    /// Set when the number of steps is read at run time from one element of
    /// a scalar-prefetch operand (`t in n[0] <= 64 arbitrary`).
    pub dynamic: Option<DynamicExtent>,
}

/// Where a dynamic grid axis reads its number of steps: one `i32` element
/// of a scalar-prefetch operand, at a compile-time position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicExtent {
    /// Index into `Kernel::operands` (a `Role::Prefetch` operand).
    pub operand: usize,
    /// One compile-time index per dimension of that operand.
    pub index: Vec<u64>,
}

impl DynamicExtent {
    /// The element's position in the operand's row-major order.
    pub fn flat_index(&self, shape: &[u64]) -> u64 {
        self.index
            .iter()
            .zip(shape)
            .fold(0, |acc, (&i, &d)| acc * d + i)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Scalar prefetch: copied to SMEM before the grid; may feed index maps.
    Prefetch,
    Input,
    Output,
}

#[derive(Debug, Clone, PartialEq)]
pub enum BlockDim {
    /// Size 1, dropped from the kernel's view of the block.
    Squeezed,
    Size(Dim),
}

impl BlockDim {
    /// The block's extent along this array dimension.
    pub fn extent(&self) -> Dim {
        match self {
            BlockDim::Squeezed => Dim::Known(1),
            BlockDim::Size(d) => d.clone(),
        }
    }
}

/// A blocked operand: which window of the array each grid step sees.
#[derive(Debug, Clone)]
pub struct BlockSpec {
    /// One entry per array dimension.
    pub dims: Vec<BlockDim>,
    /// Grid indices (entry params) to block indices: yields one scalar i32
    /// per array dimension. The element offset is `index * block extent`.
    pub index_map: Func,
    /// How many buffers the pipeline keeps for the block: 2 (the default:
    /// the next step's block is fetched while this one is used) or 1
    /// (`buffered(1)`: fetched when its index changes, before the step
    /// runs; Mosaic's `synchronous` pipeline mode). Symbolic until the
    /// kernel is specialised.
    pub buffers: Dim,
}

impl BlockSpec {
    /// The buffer count, two while it is not known yet.
    pub fn buffer_count(&self) -> u64 {
        self.buffers.known().map_or(2, |n| n.max(1) as u64)
    }
}

#[derive(Debug, Clone)]
pub struct Operand {
    pub name: String,
    pub docs: Vec<String>,
    pub role: Role,
    pub dtype: DType,
    /// The whole array's shape (in HBM).
    pub shape: Shape,
    /// Where the kernel sees it: VMEM or SMEM for blocked operands and
    /// whole-array operands, ANY for HBM refs reached by DMA.
    pub space: Space,
    /// `None`: the whole array is the kernel's ref.
    pub block: Option<BlockSpec>,
    /// The kernel's ref for this operand.
    pub ref_id: RefId,
    /// For outputs: the index (into `Kernel::operands`) of the input whose
    /// buffer it reuses.
    pub aliases: Option<usize>,
    pub span: Span,
}

/// Which part of a remote copy an [`OpKind::RemoteDma`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemotePhase {
    Start,
    WaitSend,
    WaitRecv,
}

/// One axis of the mesh a communicating kernel runs on.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshAxis {
    pub name: String,
    /// Known once the parameters it is written with have values.
    pub size: Dim,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefOrigin {
    /// Index into `Kernel::operands`.
    Operand(usize),
    /// Index into `Kernel::scratch`.
    Scratch(usize),
    /// The memory of another ref, declared before this one, seen with
    /// another shape or dtype: `k.reshape(..)` (same dtype and element
    /// count; `tpu.memref_reshape`) or `k.bitcast(T)` (same dimensions but
    /// the second-minor, which scales by the ratio of the widths;
    /// `tpu.memref_bitcast`). With a width change, element `[.., r, c]` of
    /// the wider view packs the narrower elements `[.., p*r + j, c]`,
    /// `j = 0..p`, element `j` in bits `j*w..(j+1)*w` (the TPU's sublane
    /// packing, and Pallas' definition of `bitcast`).
    View(RefId),
}

#[derive(Debug, Clone)]
pub struct RefDecl {
    pub name: String,
    pub ty: RefType,
    pub origin: RefOrigin,
}

#[derive(Debug, Clone)]
pub struct Scratch {
    pub name: String,
    pub ref_id: RefId,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Int(i64),
    Dtype(DType),
    Float(f64),
    Bool(bool),
    /// An optional parameter that is `none` (`window: int? = none`).
    None,
    /// No value in this specialisation (`pkc check` only).
    Unbound,
}

impl std::fmt::Display for ParamValue {
    /// A value as `-p` would take it (`1024`, `bf16`, `0.5`, `true`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Dtype(d) => write!(f, "{d}"),
            ParamValue::Float(x) => write!(f, "{x:?}"),
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::None => f.write_str("none"),
            ParamValue::Unbound => f.write_str("?"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub value: ParamValue,
    pub docs: Vec<String>,
    /// The values a tuner may choose (`bm = 256 in [128, 256]`): sorted,
    /// without repeats; `None` when the parameter is not tunable.
    pub candidates: Option<Vec<i64>>,
}

/// One kernel specialisation.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub name: String,
    pub docs: Vec<String>,
    pub params: Vec<Param>,
    pub grid: Vec<GridAxis>,
    /// In call order: prefetch operands, inputs, then outputs.
    pub operands: Vec<Operand>,
    pub scratch: Vec<Scratch>,
    pub refs: Arena<RefDecl>,
    pub body: Func,
    pub vmem_limit: Option<u64>,
    /// The mesh the kernel runs on (`mesh (..)`); empty for a kernel of
    /// one device.
    pub mesh: Vec<MeshAxis>,
    /// `collective_id c`: the id of the collective whose barrier semaphore
    /// the kernel uses.
    pub collective_id: Option<u64>,
    pub span: Span,
}

impl Kernel {
    /// The number of devices of the mesh (1 without one), when known.
    pub fn devices(&self) -> Option<u64> {
        self.mesh.iter().try_fold(1u64, |acc, a| {
            a.size.known().map(|s| acc.saturating_mul(s.max(0) as u64))
        })
    }

    /// Whether the kernel talks to other devices (remote copies or
    /// signals, or a barrier): Mosaic's `has_communication`.
    pub fn communicates(&self) -> bool {
        self.collective_id.is_some()
            || self.body.ops.iter().any(|(_, o)| {
                matches!(
                    o.kind,
                    OpKind::RemoteDma { .. }
                        | OpKind::SemSignal {
                            device: Some(_),
                            ..
                        }
                )
            })
    }

    pub fn inputs(&self) -> impl Iterator<Item = &Operand> {
        self.operands.iter().filter(|o| o.role != Role::Output)
    }

    pub fn outputs(&self) -> impl Iterator<Item = &Operand> {
        self.operands.iter().filter(|o| o.role == Role::Output)
    }

    pub fn ref_type(&self, r: RefId) -> &RefType {
        &self.refs[r].ty
    }

    /// The operand or scratch ref whose memory `r` is: `r` itself, or what
    /// a chain of views (`RefOrigin::View`) is taken of.
    pub fn root(&self, r: RefId) -> RefId {
        let mut r = r;
        while let RefOrigin::View(b) = self.refs[r].origin {
            r = b;
        }
        r
    }

    /// Whether `r` is a view whose elements have another width than its
    /// root's (a bitcast between widths): its elements are not at
    /// row-major positions of the root's.
    pub fn is_packed_view(&self, r: RefId) -> bool {
        self.refs[r].ty.dtype.bits() != self.refs[self.root(r)].ty.dtype.bits()
    }

    /// The number of grid steps, when known.
    pub fn grid_steps(&self) -> Option<u64> {
        self.grid.iter().try_fold(1u64, |acc, a| {
            a.extent.known().map(|e| acc * e.max(0) as u64)
        })
    }

    /// True when every parameter has a value (the kernel can be lowered).
    pub fn is_specialised(&self) -> bool {
        self.params.iter().all(|p| p.value != ParamValue::Unbound)
    }
}

/// The result of compiling a file: its kernels and the sources they came
/// from (for locations).
#[derive(Debug, Clone)]
pub struct Module {
    pub kernels: Vec<Kernel>,
    pub sources: Arc<SourceMap>,
    /// Diagnostics of warning severity (the kernels are valid).
    pub warnings: Vec<crate::diag::Diag>,
}

impl Module {
    /// `file:line:col` of a span, as backends write source locations.
    pub fn location(&self, span: Span) -> (String, u32, u32) {
        self.sources.location(span)
    }
}

//! TPU rules that need a whole kernel header: block tiling and packing,
//! block/array agreement, VMEM and SMEM budgets, and output races.

use super::Checker;
use crate::ast;
use crate::diag::{codes, Diag};
use crate::ir::{
    self, BinaryOp, BlockDim, Dim, Func, Kernel, OpKind, RefType, Role, Semantics, Space, Value,
};
use crate::span::Span;
use std::collections::HashSet;

const LANES: i64 = 128;

pub fn check_header(ck: &mut Checker, k: &Kernel, decl: &ast::KernelDecl, ragged: &[String]) {
    let grid: Vec<String> = k.grid.iter().map(|a| a.name.clone()).collect();
    // Axes with a run-time extent opt in through their bound.
    let dynamic: Vec<&str> = decl
        .clauses
        .iter()
        .filter_map(|c| match c {
            ast::Clause::Grid(dims, _) => Some(dims),
            _ => None,
        })
        .flatten()
        .filter(|g| g.bound.is_some())
        .map(|g| g.name.name.as_str())
        .collect();
    for o in &k.operands {
        let Some(b) = &o.block else {
            continue;
        };
        let span = block_span(decl, &o.name).unwrap_or(o.span);
        if o.space == Space::Any {
            ck.error(
                Diag::new(&codes::ANY_ACCESS, format!("`{}` is in HBM (`any`) and cannot be blocked", o.name), span)
                    .label("blocks are copied to VMEM or SMEM")
                    .help("drop `block ... at (...)` and write `in any`; copy windows yourself with `copy_start`"),
            );
            continue;
        }
        if b.dims.len() != o.shape.len() {
            continue;
        }
        let dim_spans = block_dim_spans(decl, &o.name, b.dims.len())
            .unwrap_or_else(|| vec![span; b.dims.len()]);
        let axes = dim_axes(decl, &o.name, b.dims.len(), &grid);
        block_fits(ck, o, &b.dims, &dim_spans, &axes, (ragged, &dynamic));
        // libtpu lays out SMEM blocks with the same tiles (measured:
        // E2002 "misaligned block and tiling" for an i32 [8, 50] or [8]
        // block in SMEM).
        if matches!(o.space, Space::Vmem | Space::Smem) {
            tiling(ck, o, &b.dims, &dim_spans);
        }
    }
    budgets(ck, k, decl);
    races(ck, k, decl);
}

/// The span of each block dimension expression of operand `name`.
fn block_dim_spans(decl: &ast::KernelDecl, name: &str, n: usize) -> Option<Vec<Span>> {
    let o = decl
        .inputs
        .iter()
        .chain(&decl.outputs)
        .find(|o| o.name.name == name)?;
    let ast::Placement::Block { dims, .. } = &o.placement else {
        return None;
    };
    let spans: Vec<Span> = dims
        .iter()
        .map(|d| match d {
            ast::BlockDim::Squeezed(s) => *s,
            ast::BlockDim::Size(e) => e.span,
        })
        .collect();
    (spans.len() == n).then_some(spans)
}

fn block_span(decl: &ast::KernelDecl, name: &str) -> Option<Span> {
    decl.inputs
        .iter()
        .chain(&decl.outputs)
        .find(|o| o.name.name == name)
        .and_then(|o| match &o.placement {
            ast::Placement::Block { span, .. } => Some(*span),
            _ => None,
        })
}

/// The grid axes each block dimension's index-map entry of operand `name`
/// reads (empty lists when the map cannot be found).
fn dim_axes<'g>(
    decl: &ast::KernelDecl,
    name: &str,
    n: usize,
    grid: &'g [String],
) -> Vec<Vec<&'g str>> {
    let entries = decl
        .inputs
        .iter()
        .chain(&decl.outputs)
        .find(|o| o.name.name == name)
        .and_then(|o| match &o.placement {
            ast::Placement::Block { index_map, .. } => Some(index_map),
            _ => None,
        });
    match entries {
        Some(e) if e.len() == n => e
            .iter()
            .map(|e| super::ragged::axes_read(e, grid))
            .collect(),
        _ => vec![Vec::new(); n],
    }
}

/// Each block dimension must divide its array dimension (so lie inside it),
/// unless the grid axis its index map reads opted in to a ragged last block
/// with `cdiv`: then, as in Pallas, the last block may be partial or even
/// larger than the array, and its padding is not array data.
fn block_fits(
    ck: &mut Checker,
    o: &ir::Operand,
    dims: &[BlockDim],
    spans: &[Span],
    axes: &[Vec<&str>],
    (ragged, dynamic): (&[String], &[&str]),
) {
    for (i, (bd, ad)) in dims.iter().zip(&o.shape).enumerate() {
        let (Some(b), Some(a)) = (bd.extent().known(), ad.known()) else {
            continue;
        };
        if a.checked_rem(b) == Some(0) || axes[i].iter().any(|x| ragged.iter().any(|r| r == x)) {
            continue;
        }
        let span = spans[i];
        // How to opt in: name the axis that walks this dimension, or say
        // that none does (a constant index can never be partial).
        let opt_in = |what: &str| {
            match axes[i].first() {
            Some(x) if dynamic.contains(x) => format!(
                ", or write the bound of grid axis `{x}` with `cdiv(...)` (`<= cdiv(M, tm) + G - 1`) to {what}"
            ),
            Some(x) => format!(", or write the extent of grid axis `{x}` as `cdiv(...)` to {what}"),
            None => " (its index map reads no grid axis, so no `cdiv` extent can make it partial)"
                .to_string(),
        }
        };
        if b > a {
            ck.error(
                Diag::new(
                    &codes::BLOCK_TOO_LARGE,
                    format!(
                        "block dimension {i} of `{}` is {b}, larger than the array's {a}",
                        o.name
                    ),
                    span,
                )
                .label("block larger than array")
                .help(format!(
                    "use a block of at most {a} (or exactly {a} to take the whole dimension){}",
                    opt_in("let Pallas pad the block")
                )),
            );
        } else {
            ck.error(
                Diag::new(
                    &codes::GRID_DIVISIBILITY,
                    format!(
                        "block dimension {i} of `{}` ({b}) does not divide the array's {a}",
                        o.name
                    ),
                    span,
                )
                .label("partial last block")
                .help(format!(
                    "choose a block size that divides the array{}",
                    opt_in("allow a ragged last block")
                )),
            );
        }
    }
}

/// Mosaic's layout rule for VMEM and SMEM blocks: the last two dimensions are
/// multiples of the (sublane, lane) tile or equal to the array's.
fn tiling(ck: &mut Checker, o: &ir::Operand, dims: &[BlockDim], spans: &[Span]) {
    let rank = dims.len();
    let d = o.dtype;
    let tile = d.sublane_tile() as i64;
    let ok = |b: &Dim, a: &Dim, m: i64| -> Option<bool> {
        if b == a {
            return Some(true);
        }
        let bv = b.known()?;
        Some(bv % m == 0 || a.known() == Some(bv))
    };
    if rank == 1 {
        // One row of 128 lanes of 32-bit words: 128 f32, 256 bf16, 512 i8
        // (libtpu 0.0.51 rejects shorter multiples with E2002, measured).
        let m = LANES * (32 / i64::from(d.bits()));
        if ok(&dims[0].extent(), &o.shape[0], m) == Some(false) {
            let span = spans[0];
            ck.error(
                Diag::new(
                    &codes::BLOCK_RANK1,
                    format!(
                        "the 1-D block of `{}` is {}, not a multiple of {m} nor the whole array",
                        o.name,
                        dims[0].extent()
                    ),
                    span,
                )
                .label("not a whole number of 128-lane rows")
                .help(format!(
                    "use a multiple of {m} elements, or the full length {}",
                    o.shape[0]
                )),
            );
        }
        return;
    }
    if rank == 0 {
        return;
    }
    let (bl, al) = (dims[rank - 1].extent(), &o.shape[rank - 1]);
    if ok(&bl, al, LANES) == Some(false) {
        let span = spans[rank - 1];
        ck.error(
            Diag::new(&codes::BLOCK_TILING, format!("the last block dimension of `{}` is {bl}, not a multiple of 128 nor the array's {al}", o.name), span)
                .label("breaks the (8, 128) tiling")
                .help("make the last block dimension a multiple of 128 lanes, or equal to the array's"),
        );
    }
    let (bs, as_) = (dims[rank - 2].extent(), &o.shape[rank - 2]);
    let span = spans[rank - 2];
    if ok(&bs, as_, 8) == Some(false) {
        ck.error(
            Diag::new(&codes::BLOCK_TILING, format!("the second-to-last block dimension of `{}` is {bs}, not a multiple of 8 nor the array's {as_}", o.name), span)
                .label("breaks the (8, 128) tiling")
                .help("make it a multiple of 8 sublanes, or equal to the array's"),
        );
    } else if tile > 8 && ok(&bs, as_, tile) == Some(false) {
        // libtpu compiles such blocks (measured), so this is a warning: the
        // block does not fill the packed (tile, 128) layout of its dtype.
        ck.error(
            Diag::new(&codes::BLOCK_PACKING, format!("`{}` is {d}: its second-to-last block dimension {bs} is not a multiple of {tile}", o.name), span)
                .warning()
                .label(format!("{d} packs {} rows per sublane", tile / 8))
                .help(format!("use a multiple of {tile} rows (or the array's {as_}) so the block fills whole packed tiles")),
        );
    }
}

/// Bytes a ref occupies in VMEM with its tiled layout (last dim padded to
/// 128 lanes, second-to-last to the dtype's sublane tile).
pub fn padded_bytes(t: &RefType) -> Option<u64> {
    let mut dims: Vec<u64> = t
        .shape
        .iter()
        .map(|d| d.known().map(|v| v.max(0) as u64))
        .collect::<Option<_>>()?;
    let n = dims.len();
    if n >= 1 {
        dims[n - 1] = dims[n - 1].div_ceil(128).saturating_mul(128);
    }
    if n >= 2 {
        let s = t.dtype.sublane_tile();
        dims[n - 2] = dims[n - 2].div_ceil(s).saturating_mul(s);
    }
    // Saturates: a block too large to count is certainly over any budget.
    Some(
        dims.iter()
            .try_fold(t.dtype.bytes(), |acc, &d| acc.checked_mul(d))
            .unwrap_or(u64::MAX),
    )
}

fn mib(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{:.2} MiB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", b as f64 / 1024.0)
    }
}

/// Named byte counts: the items of a memory estimate.
type Items = Vec<(String, u64)>;

/// What each VMEM operand block and scratch buffer takes, and each SMEM
/// one: the checker's VMEM and SMEM estimates, item by item.
fn budget_items(k: &Kernel) -> (Items, Items) {
    let mut vmem: Items = Vec::new();
    let mut smem: Items = Vec::new();
    for o in &k.operands {
        let t = &k.refs[o.ref_id].ty;
        let Some(bytes) = padded_bytes(t) else {
            continue;
        };
        match (o.space, &o.block) {
            (Space::Vmem, Some(b)) => vmem.push(match b.buffer_count() {
                1 => (format!("`{}` block {} x1 (buffered(1))", o.name, t), bytes),
                n => (
                    format!("`{}` block {} x{n} (double-buffered)", o.name, t),
                    bytes.saturating_mul(n),
                ),
            }),
            (Space::Vmem, None) => vmem.push((format!("`{}` whole array {}", o.name, t), bytes)),
            (Space::Smem, _) => smem.push((format!("`{}`", o.name), t.bytes().unwrap_or(0).max(4))),
            _ => {}
        }
    }
    for s in &k.scratch {
        let t = &k.refs[s.ref_id].ty;
        match t.space {
            Space::Vmem => {
                if let Some(b) = padded_bytes(t) {
                    vmem.push((format!("scratch `{}` {}", s.name, t), b));
                }
            }
            Space::Smem => smem.push((format!("scratch `{}`", s.name), t.bytes().unwrap_or(0))),
            _ => {}
        }
    }
    (vmem, smem)
}

/// The VMEM a kernel may use on its target: its `vmem_limit`, at most the
/// chip's VMEM.
fn vmem_usable(k: &Kernel, target: crate::target::Target) -> u64 {
    k.vmem_limit
        .unwrap_or(target.vmem_bytes())
        .min(target.vmem_bytes())
}

/// What the TPU compiler keeps in VMEM for one matmul, beside the blocks
/// and scratch.
struct DotVmem {
    /// Copies of narrow operands in the MXU's layout: up to the bytes of
    /// both operand tiles (measured with libtpu 0.0.51: about the lhs tile
    /// on v4, v5e and v5p, up to both tiles on TPU7x; f32 operands take
    /// nothing), and on v5p and TPU7x about 64 KiB more for any matmul
    /// ("Used 64.00M of 63.94M vmem" for 64 MiB of f32 matmul blocks).
    copies: u64,
    /// The result, when it is larger than the vector registers and the
    /// body computes on it (scales, masks, exponentiates: attention's
    /// scores) rather than only adding it to an accumulator, which the
    /// matmul does in place. Measured on v4: flash attention's forward
    /// with `bq = 2048, bk = 1024` (f32 scores of 8 MiB beside 8 MiB of
    /// blocks and scratch) is refused ("Used 17.06M of 16.00M vmem"), with
    /// `bq = 1024, bk = 2048` (5.5 MiB beside them) it compiles, and so
    /// does a matmul adding a 4 MiB result to its accumulator beside 14
    /// MiB.
    result: u64,
}

impl DotVmem {
    fn bytes(&self) -> u64 {
        self.copies + self.result
    }
}

/// The vector registers of a TensorCore: 64 of 8 x 128 32-bit lanes.
const VREG_FILE_BYTES: u64 = 64 * 4096;

/// The matmul of the body that needs the most VMEM of its own, and what it
/// needs; each matmul's copies and result are dead after it.
fn dot_vmem(k: &Kernel, target: crate::target::Target) -> Option<(DotVmem, Span)> {
    let fixed: u64 = match target {
        crate::target::Target::V5p | crate::target::Target::Tpu7x => 64 << 10,
        _ => 0,
    };
    let f = &k.body;
    let mut best: Option<(DotVmem, Span)> = None;
    for (id, op) in f.ops.iter() {
        let OpKind::Dot { lhs, rhs, .. } = &op.kind else {
            continue;
        };
        // An integer matmul (int8 operands, an i32 result) is fed to the
        // MXU without copies of its operands, but its result goes through
        // VMEM (libtpu's register allocator spills it) even when it is
        // only added to an accumulator. Measured with libtpu 0.0.51 on
        // v5p: `qmatmul_w8a8` with blocks 1024 x 2048 x 4096 uses 68.96
        // MiB, its blocks and scratch 53.05 MiB and "register allocator
        // spill slots" 15.95 MiB, the 16 MiB i32 result, with no operand
        // copy among its allocations.
        let integer = [*lhs, *rhs].iter().all(|v| f.ty(*v).dtype().is_int());
        let copies: u64 = [*lhs, *rhs]
            .iter()
            .map(|v| f.ty(*v))
            .filter(|t| !integer && t.dtype().bits() < 32)
            .filter_map(|t| t.elements().map(|n| n * t.dtype().bytes()))
            .sum::<u64>()
            + fixed;
        let result = op
            .results
            .first()
            .and_then(|r| {
                let t = f.ty(*r);
                let bytes = t.elements()? * t.dtype().bytes().max(4);
                let computed_on = integer
                    || f.ops.iter().any(|(_, user)| {
                        !matches!(user.kind, OpKind::Binary(BinaryOp::Add, ..))
                            && user.kind.operands().contains(r)
                    });
                (bytes > VREG_FILE_BYTES && computed_on).then_some(bytes)
            })
            .unwrap_or(0);
        let d = DotVmem { copies, result };
        if d.bytes() > 0 && best.as_ref().is_none_or(|(b, _)| d.bytes() > b.bytes()) {
            best = Some((d, f.span(id)));
        }
    }
    best
}

/// The VMEM budget once the body is known (PK0306): the blocks and
/// scratch of the header's estimate, plus the copies the TPU compiler
/// makes for narrow matmuls and the matmul result it keeps in VMEM.
/// Reports only what the header's check did not.
pub fn check_body_vmem(ck: &mut Checker, k: &Kernel, decl: &ast::KernelDecl) {
    let (vmem, _) = budget_items(k);
    let limit = vmem_usable(k, ck.target);
    let total = vmem.iter().fold(0u64, |acc, (_, b)| acc.saturating_add(*b));
    let Some((dot, span)) = dot_vmem(k, ck.target) else {
        return;
    };
    let extra = dot.bytes();
    if total > limit || total.saturating_add(extra) <= limit {
        return;
    }
    let what = if dot.result == 0 {
        "the matmul's operand copies"
    } else {
        "the matmul's operand copies and result"
    };
    let held = if dot.result == 0 {
        format!(
            "the TPU compiler keeps up to {} of VMEM for this matmul (copies of narrow operands)",
            mib(dot.copies)
        )
    } else {
        format!(
            "the TPU compiler keeps {} of VMEM for this matmul: up to {} of operand copies and its {} result, which is computed on",
            mib(extra),
            mib(dot.copies),
            mib(dot.result)
        )
    };
    let d = Diag::new(
        &codes::VMEM_BUDGET,
        format!(
            "kernel needs {} of VMEM with {what}, more than {}'s {}",
            mib(total.saturating_add(extra)),
            ck.target,
            mib(limit)
        ),
        decl.name.span,
    )
    .label("does not fit in VMEM")
    .with(span, held);
    let mut d = d.help("use smaller blocks (a smaller `bk` shrinks both operand tiles)");
    for (what, b) in &vmem {
        d = d.note(format!("{what}: {}", mib(*b)));
    }
    ck.error(d);
}

fn budgets(ck: &mut Checker, k: &Kernel, decl: &ast::KernelDecl) {
    let target = ck.target;
    let (vmem, smem) = budget_items(k);
    let limit_span = decl
        .clauses
        .iter()
        .find_map(|c| match c {
            ast::Clause::VmemLimit(_, s) => Some(*s),
            _ => None,
        })
        .unwrap_or(decl.name.span);
    if let Some(l) = k.vmem_limit {
        if l > target.vmem_bytes() {
            ck.error(
                Diag::new(
                    &codes::VMEM_BUDGET,
                    format!(
                        "`vmem_limit` {} exceeds {target}'s VMEM of {}",
                        mib(l),
                        mib(target.vmem_bytes())
                    ),
                    limit_span,
                )
                .label("more than the chip has")
                .help(format!("set at most {} bytes", target.vmem_bytes())),
            );
        }
    }
    let limit = vmem_usable(k, target);
    let total = vmem.iter().fold(0u64, |acc, (_, b)| acc.saturating_add(*b));
    if total > limit {
        let what = if k.vmem_limit.is_some() {
            "the kernel's `vmem_limit`".to_string()
        } else {
            format!("{target}'s VMEM")
        };
        let mut d = Diag::new(
            &codes::VMEM_BUDGET,
            format!(
                "kernel needs {} of VMEM, more than {what} ({})",
                mib(total),
                mib(limit)
            ),
            decl.name.span,
        )
        .label("does not fit in VMEM")
        .help("use smaller blocks or fewer scratch buffers");
        for (what, b) in &vmem {
            d = d.note(format!("{what}: {}", mib(*b)));
        }
        ck.error(d);
    }
    let stotal = smem.iter().fold(0u64, |acc, (_, b)| acc.saturating_add(*b));
    if stotal > target.smem_bytes() {
        let mut d = Diag::new(
            &codes::SMEM_BUDGET,
            format!(
                "kernel needs {} of SMEM, more than the {}",
                mib(stotal),
                mib(target.smem_bytes())
            ),
            decl.name.span,
        )
        .label("does not fit in SMEM")
        .help("keep large tables in `any` (HBM) and copy the part you need");
        for (what, b) in &smem {
            d = d.note(format!("{what}: {}", mib(*b)));
        }
        ck.error(d);
    }
}

/// An output whose index map ignores a `parallel` axis is written by several
/// parallel steps at once.
fn races(ck: &mut Checker, k: &Kernel, decl: &ast::KernelDecl) {
    for o in k.operands.iter().filter(|o| o.role == Role::Output) {
        // Whole-array outputs in HBM are written by DMA, to parts the body
        // chooses; in VMEM or SMEM every step holds the whole array.
        if o.block.is_none() && o.space == Space::Any {
            continue;
        }
        for (axis, g) in k.grid.iter().enumerate() {
            if g.semantics != Semantics::Parallel || g.extent == Dim::Known(1) {
                continue;
            }
            let shared = match &o.block {
                Some(b) => !depends_on(&b.index_map, axis),
                None => true,
            };
            if shared {
                let span = block_span(decl, &o.name).unwrap_or(o.span);
                let gspan = decl
                    .clauses
                    .iter()
                    .find_map(|c| match c {
                        ast::Clause::Grid(dims, _) => {
                            dims.iter().find(|d| d.name.name == g.name).map(|d| d.span)
                        }
                        _ => None,
                    })
                    .unwrap_or(decl.name.span);
                ck.error(
                    Diag::new(
                        &codes::SEMANTICS,
                        format!(
                            "output `{}` is written by every step of parallel axis `{}`",
                            o.name, g.name
                        ),
                        span,
                    )
                    .label(if o.block.is_some() {
                        format!("the index map does not use `{}`", g.name)
                    } else {
                        "the whole array is one block of every step".to_string()
                    })
                    .with(gspan, "declared parallel here")
                    .help(format!(
                        "mark `{}` as `arbitrary` to accumulate over it, or give the output a block indexed by it",
                        g.name
                    )),
                );
            }
        }
    }
}

/// Whether any value the index map yields depends on grid index `axis`.
fn depends_on(f: &Func, axis: usize) -> bool {
    let Some(entry) = f.entry else {
        return false;
    };
    let Some(&p) = f.blocks[entry].params.get(axis) else {
        return false;
    };
    let mut tainted: HashSet<Value> = HashSet::from([p]);
    // Ops are appended in program order, so one forward pass over the arena
    // sees every operand before its users.
    for (_, op) in f.ops.iter() {
        let uses = operands(f, &op.kind);
        if uses.iter().any(|u| tainted.contains(u)) {
            tainted.extend(op.results.iter().copied());
        }
    }
    f.blocks[entry].yields.iter().any(|y| tainted.contains(y))
}

/// What an op reads, counting the values its blocks yield into its results.
fn operands(f: &Func, k: &OpKind) -> Vec<Value> {
    let mut u = k.operands();
    for b in k.blocks() {
        u.extend(f.blocks[b].yields.iter().copied());
    }
    u
}

/// The VMEM the checker counts for `k` on `target`: the blocks and scratch
/// (times their buffer count where blocked) plus what the TPU compiler keeps for the
/// matmul that needs the most. PK0306 is this total against the kernel's
/// usable VMEM (its `vmem_limit`, at most the chip's).
pub fn vmem_estimate(k: &Kernel, target: crate::target::Target) -> u64 {
    let (vmem, _) = budget_items(k);
    let total = vmem.iter().fold(0u64, |acc, (_, b)| acc.saturating_add(*b));
    total.saturating_add(dot_vmem(k, target).map_or(0, |(d, _)| d.bytes()))
}

/// The VMEM bytes each operand and scratch buffer takes (for reports).
pub fn vmem_report(k: &Kernel) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for o in &k.operands {
        if o.space == Space::Vmem {
            if let Some(b) = padded_bytes(&k.refs[o.ref_id].ty) {
                out.push((
                    o.name.clone(),
                    b.saturating_mul(o.block.as_ref().map_or(1, |s| s.buffer_count())),
                ));
            }
        }
    }
    for s in &k.scratch {
        if k.refs[s.ref_id].ty.space == Space::Vmem {
            if let Some(b) = padded_bytes(&k.refs[s.ref_id].ty) {
                out.push((s.name.clone(), b));
            }
        }
    }
    out
}

//! TPU rules on the body's VMEM accesses, checked once the body is built.
//!
//! The provable-alignment rule (PK0325): a run-time position in one of the
//! last two dimensions of a VMEM ref must be provably a multiple of the
//! ref's tile there, or libtpu refuses the kernel (Mosaic E2003
//! `CompileTimeMosaicUnprovenMemoryAccessAlignment`).
//!
//! VMEM is laid out in (sublane, 128-lane) tiles: the last dimension is
//! reached in steps of 128, the second-to-last in steps of the dtype's
//! sublane tile (8 for 32-bit, 16 for 16-bit, 32 for 8-bit dtypes). Leading
//! dimensions take any index.
//!
//! The proof follows Mosaic's own (`isGuaranteedDivisible` in
//! `jaxlib/mosaic/dialect/tpu/util.cc`), so that the checker and libtpu
//! agree case by case (the agreement is tested against libtpu in
//! `lowering/tests/mosaic_libtpu.rs`):
//!
//! 1. a constant `c` is a multiple of `c`;
//! 2. `multiple_of(x, n)` is a multiple of `n`, whatever `x` is;
//! 3. a product `a * b` is a multiple of the product of what `a` and `b`
//!    are multiples of (Mosaic folds `(i * 4) * 2` to `i * 8`);
//! 4. a sum or difference of multiples of `p` and `q` is one of `gcd(p, q)`;
//! 5. the index of `for c in lo..hi step s` is a multiple of `gcd(lo, s)`;
//! 6. nothing else is known: grid indices, `while` values, SMEM reads.
//!
//! The DMA lane rule (PK0354): a DMA copies whole 128-lane tile columns.
//! A window of a VMEM or ANY ref given to `copy_start` either takes the
//! whole last dimension or starts at a multiple of 128 lanes (provably, for
//! a run-time start) and takes a multiple of 128 lanes; libtpu refuses the
//! others ("The contiguous inner slice in the DMA transfer must be
//! divisible by 512 bytes", "The dynamic offset times the element size is
//! not a multiple of the memory space word size"), on every target and
//! for every dtype.
//!
//! The column rule (PK0326): v4 cannot read a column of a VMEM ref as a
//! vector (`x[.., j]`): Mosaic needs a sublane gather there ("Sublane gather
//! not supported by this TPU generation"), which later chips have.

use super::Checker;
use crate::diag::{codes, Diag};
use crate::ir::{
    BinaryOp, BlockId, DType, Func, Kernel, Literal, OpId, OpKind, RefView, Slice, Space, Start,
    Value, ValueDef,
};
use crate::target::Target;

const LANES: u64 = 128;

/// A budget of steps for the proof, so that it stays linear in the size
/// of the index expression; no real index comes near it.
const FUEL: u32 = 256;

/// Reports every load and store of the kernel body whose run-time position
/// in a tiled dimension is not provably aligned.
pub fn check(ck: &mut Checker, k: &Kernel) {
    let f = &k.body;
    for (id, op) in f.ops.iter() {
        if let OpKind::DmaStart { src, dst, .. } = &op.kind {
            dma_lane_rule(ck, k, id, src, dst);
        }
        if let OpKind::RemoteDma {
            phase: crate::ir::RemotePhase::Start,
            src,
            dst,
            ..
        } = &op.kind
        {
            remote_tile_rule(ck, k, id, src, dst);
        }
        let view = match &op.kind {
            OpKind::Load(v) | OpKind::Store(v, _, _) => v,
            _ => continue,
        };
        if let (OpKind::Load(_), Some(&r)) = (&op.kind, op.results.first()) {
            if ck.target == Target::V4 && column_read(k, view) && !f.ty(r).is_scalar() {
                let name = &k.refs[view.target].name;
                ck.error(
                    Diag::new(
                        &codes::V4_COLUMN_READ,
                        format!("v4 cannot read a column of VMEM ref `{name}` as a vector"),
                        f.span(id),
                    )
                    .label("indexes the last dimension by one position")
                    .note("the TPU v4 has no sublane gather, which turning a column into a vector needs")
                    .help("keep the column 2-D: read whole 128-lane rows and reduce them with `where` and `sum(..., axis=1, keepdims=true)`; later targets accept the column read"),
                );
            }
        }
        if let Some((dim, m)) = unaligned(f, k, view) {
            let r = &k.refs[view.target];
            let which = if dim + 1 == view.index.len() {
                "last"
            } else {
                "second-to-last"
            };
            let why = if which == "last" {
                "the last dimension is reached in tiles of 128 lanes".to_string()
            } else {
                format!(
                    "`{}` is {}: its second-to-last dimension is reached in tiles of {m} rows",
                    r.name, r.ty.dtype
                )
            };
            ck.error(
                Diag::new(
                    &codes::UNPROVEN_ALIGNMENT,
                    format!(
                        "the run-time position in dimension {dim} ({which}) of VMEM ref `{}` is not provably a multiple of {m}",
                        r.name
                    ),
                    f.span(id),
                )
                .label("the TPU compiler cannot prove this index is aligned")
                .note(why)
                .help(format!(
                    "if the position is a multiple of {m}, say so with `multiple_of(index, {m})` or write it as a product (`j * {m}`); otherwise load an aligned window and select from it"
                )),
            );
        }
    }
}

const DMA_LANES_HELP: &str = "copy the whole last dimension, or a window that starts at a multiple of 128 lanes (`multiple_of(j, 128)`) and takes a multiple of 128 lanes, and slice the rest in VMEM";

/// Reports a DMA whose source or destination breaks the lane rule, once
/// per copy (the first side that does).
fn dma_lane_rule(ck: &mut Checker, k: &Kernel, id: OpId, src: &RefView, dst: &RefView) {
    let f = &k.body;
    let broken = [src, dst]
        .into_iter()
        .find_map(|v| dma_lanes(f, k, v).map(|why| (v, why)));
    let Some((view, why)) = broken else {
        return;
    };
    let name = &k.refs[view.target].name;
    let d = Diag::new(
        &codes::DMA_LANES,
        format!("the DMA window of `{name}` takes part of a 128-lane tile"),
        f.span(id),
    )
    .label(why)
    .note("a DMA moves whole tile columns of 128 lanes in the last dimension")
    .help(DMA_LANES_HELP);
    ck.error(d);
}

/// Reports a remote copy whose source or destination is not whole tiles
/// (PK0361): the lane rule of local DMAs, and whole sublane tiles in the
/// second-minor dimension, where the peer's layout is not this device's
/// to choose.
fn remote_tile_rule(ck: &mut Checker, k: &Kernel, id: OpId, src: &RefView, dst: &RefView) {
    let f = &k.body;
    let broken = [src, dst].into_iter().find_map(|v| {
        dma_lanes(f, k, v)
            .or_else(|| remote_rows(f, k, v))
            .map(|why| (v, why))
    });
    let Some((view, why)) = broken else {
        return;
    };
    let name = &k.refs[view.target].name;
    ck.error(
        Diag::new(
            &codes::REMOTE_WINDOW,
            format!("the remote copy window of `{name}` is not whole tiles"),
            f.span(id),
        )
        .label(why)
        .note("a remote copy moves whole (sublane, 128-lane) tiles between devices")
        .help("copy whole last two dimensions, or windows that start and end on tile boundaries (`multiple_of(j, 8)`)"),
    );
}

/// Why the second-minor dimension of a remote window is not whole sublane
/// tiles, if it is not.
fn remote_rows(f: &Func, k: &Kernel, view: &RefView) -> Option<String> {
    let t = &k.refs[view.target].ty;
    let rank = view.index.len();
    if rank < 2 {
        return None;
    }
    let n = t.shape[rank - 2].get();
    let rows = 8 * 32 / t.dtype.bits().max(1) as u64;
    let (start, size) = match view.index[rank - 2] {
        Slice::Index(st) => (st, 1),
        Slice::Range { start, size } => (start, size),
        Slice::Strided { .. } => return None,
    };
    if matches!(start, Start::Const(0)) && size == n {
        return None;
    }
    if size % rows != 0 {
        return Some(format!(
            "{size} of the {n} rows of the second-minor dimension (tiles of {rows})"
        ));
    }
    match start {
        Start::Const(c) if c % rows != 0 => Some(format!("rows from {c}, inside a tile of {rows}")),
        Start::Dyn(v) if !multiple(f, v, rows) => Some(format!(
            "a run-time first row, not provably a multiple of {rows}"
        )),
        _ => None,
    }
}

/// Why a DMA window breaks the lane rule, if it does.
fn dma_lanes(f: &Func, k: &Kernel, view: &RefView) -> Option<String> {
    let t = &k.refs[view.target].ty;
    if !matches!(t.space, Space::Vmem | Space::Any) {
        return None;
    }
    let (Some(s), Some(dim)) = (view.index.last(), t.shape.last()) else {
        return None;
    };
    let n = dim.get();
    let (start, size) = match *s {
        Slice::Index(st) => (st, 1),
        Slice::Range { start, size } => (start, size),
        Slice::Strided { .. } => return None,
    };
    if matches!(start, Start::Const(0)) && size == n {
        return None;
    }
    if size % LANES != 0 {
        return Some(format!("{size} of the {n} lanes of the last dimension"));
    }
    match start {
        Start::Const(c) if c % LANES != 0 => Some(format!("lanes from {c}, inside a tile")),
        Start::Dyn(v) if !multiple(f, v, LANES) => {
            Some("a run-time first lane, not provably a multiple of 128".to_string())
        }
        _ => None,
    }
}

/// Whether `view` reads one position of the last dimension of a VMEM ref of
/// rank 2 or more.
fn column_read(k: &Kernel, view: &RefView) -> bool {
    let t = &k.refs[view.target].ty;
    t.space == Space::Vmem
        && view.index.len() >= 2
        && matches!(view.index.last(), Some(Slice::Index(_)))
}

/// The first tiled dimension of `view` whose run-time start is not provably
/// a multiple of its tile, with that tile.
fn unaligned(f: &Func, k: &Kernel, view: &RefView) -> Option<(usize, u64)> {
    let t = &k.refs[view.target].ty;
    if t.space != Space::Vmem {
        return None;
    }
    let rank = view.index.len();
    for (d, s) in view.index.iter().enumerate() {
        // A strided window (`ds(start, size, stride)`) is read and written
        // row by row, and libtpu 0.0.51 compiles it at any run-time start
        // on every target (the agreement corpus shows it), so only
        // unit-stride positions need a proof.
        let (Start::Dyn(v), 1) = (s.start(), s.stride()) else {
            continue;
        };
        let v = &v;
        let m = if d + 1 == rank {
            LANES
        } else if d + 2 == rank {
            sublanes(t.dtype)
        } else {
            continue;
        };
        if !multiple(f, *v, m) {
            return Some((d, m));
        }
    }
    None
}

/// Whether `v` is provably a multiple of `m` (rules 1 to 6 above).
fn multiple(f: &Func, v: Value, m: u64) -> bool {
    divisor(f, v, FUEL).is_multiple_of(m)
}

/// A number `v` is provably a multiple of, 0 when `v` is 0 (a multiple of
/// everything), 1 when nothing is known.
fn divisor(f: &Func, v: Value, fuel: u32) -> u64 {
    if fuel == 0 {
        return 1;
    }
    let op = match f.values[v].def {
        ValueDef::Result(op, _) => op,
        ValueDef::Param(b, 0) => return loop_index(f, b, fuel),
        ValueDef::Param(..) => return 1,
    };
    match &f.ops[op].kind {
        OpKind::Const(Literal::Int(c)) => c.unsigned_abs(),
        OpKind::AssumeMultiple(_, n) => *n,
        OpKind::Binary(BinaryOp::Mul, a, b) => {
            let (x, y) = (divisor(f, *a, fuel / 2), divisor(f, *b, fuel / 2));
            // A product too large to hold is still a multiple of each factor.
            x.checked_mul(y).unwrap_or(x.max(y))
        }
        OpKind::Binary(BinaryOp::Add | BinaryOp::Sub, a, b) => {
            gcd(divisor(f, *a, fuel / 2), divisor(f, *b, fuel / 2))
        }
        _ => 1,
    }
}

/// The index of a `for` loop whose body is `b` takes the values `lo`,
/// `lo + step`, ...: multiples of `gcd(lo, step)`. Other block parameters
/// (grid indices, loop-carried values) are unknown.
fn loop_index(f: &Func, b: BlockId, fuel: u32) -> u64 {
    for (_, op) in f.ops.iter() {
        if let OpKind::For { lo, step, body, .. } = &op.kind {
            if *body == b {
                return gcd(divisor(f, *lo, fuel / 2), *step);
            }
        }
    }
    1
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The step of run-time positions in the second-to-last dimension: 8 rows
/// for 32- and 16-bit dtypes, 32 for 8-bit ones. libtpu 0.0.51 proves bf16
/// positions against 8, not against the 16 rows of a packed bf16 tile
/// (measured on all five targets).
fn sublanes(d: DType) -> u64 {
    if d.bits() == 8 {
        32
    } else {
        8
    }
}

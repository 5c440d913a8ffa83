//! Reads, writes and DMAs of kernel refs.
//!
//! A window of a ref becomes memory indices over the ref's memref: squeezed
//! block dimensions (kept as size 1 in the memref) are indexed at 0, and
//! dimensions the window indexes by a single position are read as size 1 and
//! then dropped with `vector.shape_cast`, as Pallas does. VMEM is read with
//! `vector.load` and written with `tpu.vector_store`; SMEM holds scalars and
//! is reached with `memref.load`/`memref.store`; booleans live in memory as
//! `i32` and become masks (`!= 0`) when read.

use crate::mosaic::body::{unsupported, Lower, PhysRef, R};
use crate::mosaic::error::MosaicError;
use crate::mosaic::mlir::{At, MemSpace, Val};
use melior::ir::Type;
use pk_lang::ir::{self, DType, RefView, RemotePhase, Slice, Space, Start};

/// One window over a memref: a start per memref dimension, the window's size
/// there, and whether the kernel's view drops that dimension.
struct Window<'c> {
    starts: Vec<Val<'c>>,
    sizes: Vec<u64>,
    dropped: Vec<bool>,
    /// The distance between positions per memref dimension (1 but for
    /// `ds(start, size, stride)`).
    strides: Vec<u64>,
    /// True when the window is the whole memref.
    whole: bool,
}

impl Window<'_> {
    fn strided(&self) -> bool {
        self.strides.iter().any(|s| *s != 1)
    }
}

/// Resolves `view` over `phys`; `index` selects `index`-typed starts (memory
/// ops) rather than `i32` ones (`tpu.memref_slice`).
fn window<'c>(
    cx: &Lower<'c, '_>,
    at: At<'c, '_>,
    view: &RefView,
    phys: &PhysRef<'c>,
    index: bool,
) -> R<Window<'c>> {
    let mut slices = view.index.iter();
    let mut w = Window {
        starts: Vec::new(),
        sizes: Vec::new(),
        dropped: Vec::new(),
        strides: Vec::new(),
        whole: true,
    };
    for (d, &squeezed) in phys.squeezed.iter().enumerate() {
        let (start, size, drop, stride) = if squeezed {
            (Start::Const(0), 1, true, 1)
        } else {
            match slices.next() {
                Some(Slice::Index(s)) => (*s, 1, true, 1),
                Some(Slice::Range { start, size }) => (*start, *size, false, 1),
                Some(Slice::Strided {
                    start,
                    size,
                    stride,
                }) => (*start, *size, false, *stride),
                None => return Err(rank_error(cx, at, view, phys)),
            }
        };
        w.whole &=
            !drop && stride == 1 && start == Start::Const(0) && Some(&size) == phys.shape.get(d);
        w.strides.push(stride);
        w.starts.push(start_value(cx, at, start, index)?);
        w.sizes.push(size);
        w.dropped.push(drop);
    }
    if slices.next().is_some() {
        return Err(rank_error(cx, at, view, phys));
    }
    Ok(w)
}

fn rank_error(
    cx: &Lower<'_, '_>,
    at: At<'_, '_>,
    view: &RefView,
    phys: &PhysRef<'_>,
) -> MosaicError {
    let message = format!(
        "a window of {} indices over a ref of rank {}",
        view.index.len(),
        phys.squeezed.iter().filter(|s| !**s).count()
    );
    cx.invalid(message, at.src.clone())
}

fn start_value<'c>(cx: &Lower<'c, '_>, at: At<'c, '_>, s: Start, index: bool) -> R<Val<'c>> {
    match (s, index) {
        (Start::Const(c), true) => cx.m.index_const(at, c as i64),
        (Start::Const(c), false) => cx.m.i32_const(at, c as i64),
        (Start::Dyn(v), true) => cx.m.to_index(at, cx.val(v)?),
        (Start::Dyn(v), false) => cx.val(v),
    }
}

/// `x != 0` over the `i32` storage of booleans.
fn to_mask<'c>(cx: &Lower<'c, '_>, at: At<'c, '_>, v: Val<'c>, shape: &[u64]) -> R<Val<'c>> {
    let i32t = cx.m.int(32);
    let zero = cx.m.int_splat(at, cx.m.vector(shape, i32t), i32t, 32, 0)?;
    let mask_ty = cx.m.vector(shape, cx.m.int(1));
    cx.m.cmp(at, "arith.cmpi", 1, v, zero, mask_ty)
}

/// The `i32` storage of a boolean value.
fn from_mask<'c>(cx: &Lower<'c, '_>, at: At<'c, '_>, v: Val<'c>, shape: &[u64]) -> R<Val<'c>> {
    cx.m.convert(at, "arith.extui", v, cx.m.vector(shape, cx.m.int(32)))
}

fn kept(w: &Window<'_>) -> Vec<u64> {
    w.sizes
        .iter()
        .zip(&w.dropped)
        .filter(|(_, d)| !**d)
        .map(|(s, _)| *s)
        .collect()
}

pub(crate) fn load<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    view: &RefView,
    rt: &ir::Type,
) -> R<Val<'c>> {
    let phys = cx.phys(view.target, at.src)?;
    let w = window(cx, at, view, &phys, true)?;
    let storage = cx.m.storage(phys.dtype);
    let shape = kept(&w);
    let v = match phys.space {
        Space::Smem | Space::Vmem
            if phys.shape.is_empty() || (phys.space == Space::Smem && rt.is_scalar()) =>
        {
            cx.m.memref_load(at, phys.mem, &w.starts, storage)?
        }
        Space::Smem => return unsupported(at, "a vector read from SMEM (SMEM holds scalars)"),
        Space::Vmem => {
            let full = cx.m.vector(&w.sizes, storage);
            let v = if w.strided() {
                cx.m.tpu_strided_load(at, phys.mem, &w.starts, &w.strides, full)?
            } else {
                cx.m.vector_load(at, phys.mem, &w.starts, full)?
            };
            if rt.is_scalar() {
                cx.m.extract(at, v, &vec![0; w.sizes.len()], storage)?
            } else if w.dropped.iter().any(|d| *d) {
                cx.m.shape_cast(at, v, cx.m.vector(&shape, storage))?
            } else {
                v
            }
        }
        Space::Any | Space::Semaphore | Space::Sem | Space::Barrier => {
            return unsupported(
                at,
                "a read of an HBM or semaphore ref (reached only by DMA)",
            )
        }
    };
    if phys.dtype == DType::Bool {
        return to_mask(cx, at, v, &shape);
    }
    Ok(v)
}

/// A store; with `mask`, the masked `tpu.vector_store` Pallas emits for
/// `pltpu.store(ref, v, mask=m)` (the checker allows masks only on vector
/// windows of VMEM refs).
pub(crate) fn store<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    view: &RefView,
    x: ir::Value,
    mask: Option<ir::Value>,
) -> R<()> {
    let phys = cx.phys(view.target, at.src)?;
    let w = window(cx, at, view, &phys, true)?;
    let mut v = cx.val(x)?;
    let shape = kept(&w);
    if phys.dtype == DType::Bool {
        v = from_mask(cx, at, v, &shape)?;
    }
    let storage = cx.m.storage(phys.dtype);
    match phys.space {
        Space::Smem | Space::Vmem
            if phys.shape.is_empty() || (phys.space == Space::Smem && shape.is_empty()) =>
        {
            cx.m.memref_store(at, v, phys.mem, &w.starts)
        }
        Space::Smem if mask.is_some() => unsupported(at, "a masked store to SMEM"),
        Space::Smem => unsupported(at, "a vector write to SMEM (SMEM holds scalars)"),
        Space::Vmem => {
            let full: Type<'c> = cx.m.vector(&w.sizes, storage);
            let dropped = w.dropped.iter().any(|d| *d);
            if shape.is_empty() {
                v = cx.m.broadcast(at, v, full)?;
            } else if dropped {
                v = cx.m.shape_cast(at, v, full)?;
            }
            let mask = match mask {
                None => None,
                Some(_) if shape.is_empty() => {
                    return unsupported(at, "a masked store of a scalar window");
                }
                Some(m) => {
                    let m = cx.val(m)?;
                    Some(if dropped {
                        cx.m.shape_cast(at, m, cx.m.vector(&w.sizes, cx.m.int(1)))?
                    } else {
                        m
                    })
                }
            };
            if w.strided() {
                if mask.is_some() {
                    return unsupported(at, "a masked strided store");
                }
                return cx
                    .m
                    .tpu_strided_store(at, v, phys.mem, &w.starts, &w.strides);
            }
            cx.m.tpu_vector_store(at, v, phys.mem, &w.starts, mask)
        }
        Space::Any | Space::Semaphore | Space::Sem | Space::Barrier => unsupported(
            at,
            "a write to an HBM or semaphore ref (reached only by DMA)",
        ),
    }
}

/// The memref of a window: the ref itself when the window covers it,
/// otherwise `tpu.memref_slice` (and `tpu.memref_squeeze` for the dimensions
/// the window drops), as Pallas slices refs for DMAs.
fn sliced<'c>(cx: &mut Lower<'c, '_>, at: At<'c, '_>, view: &RefView) -> R<Val<'c>> {
    let phys = cx.phys(view.target, at.src)?;
    let w = window(cx, at, view, &phys, false)?;
    if w.whole {
        return Ok(phys.mem);
    }
    if w.strided() {
        return unsupported(at, "a DMA of a strided window");
    }
    let space = MemSpace::of(phys.space);
    let elem = cx.m.storage(phys.dtype);
    let slice_ty = cx.m.memref(&w.sizes, elem, space);
    let s = cx.m.tpu_memref_slice(at, phys.mem, &w.starts, slice_ty)?;
    if !w.dropped.iter().any(|d| *d) {
        return Ok(s);
    }
    cx.m.tpu_memref_squeeze(at, s, cx.m.memref(&kept(&w), elem, space))
}

/// `tpu.enqueue_dma` (start) or `tpu.wait_dma2` (wait) of one local copy.
pub(crate) fn dma<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    src: &RefView,
    dst: &RefView,
    sem: &RefView,
    start: bool,
) -> R<()> {
    let s = sliced(cx, at, src)?;
    let d = sliced(cx, at, dst)?;
    let m = sliced(cx, at, sem)?;
    if start {
        cx.m.tpu_enqueue_dma(at, s, d, m)
    } else {
        cx.m.tpu_wait_dma2(at, m, s, d)
    }
}

/// The three parts of a remote copy (Pallas' `make_async_remote_copy`:
/// `start`, `wait_send`, `wait_recv`).
pub(crate) fn remote_dma<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    phase: RemotePhase,
    (src, dst): (&RefView, &RefView),
    (send, recv): (&RefView, &RefView),
    device: ir::Value,
) -> R<()> {
    let s = sliced(cx, at, src)?;
    let d = sliced(cx, at, dst)?;
    let dev = cx.val(device)?;
    match phase {
        RemotePhase::Start => {
            let ss = sliced(cx, at, send)?;
            let rs = sliced(cx, at, recv)?;
            cx.m.tpu_enqueue_remote_dma(at, s, ss, d, rs, dev)
        }
        RemotePhase::WaitSend => {
            let ss = sliced(cx, at, send)?;
            let zero = cx.m.i32_const(at, 0)?;
            cx.m.tpu_wait_remote_dma(at, ss, d, s, zero, Some(zero))
        }
        RemotePhase::WaitRecv => {
            let rs = sliced(cx, at, recv)?;
            cx.m.tpu_wait_remote_dma(at, rs, s, d, dev, None)
        }
    }
}

/// `tpu.sem_signal`, `tpu.sem_wait` and `tpu.sem_read` of one semaphore.
pub(crate) fn sem_signal<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    sem: &RefView,
    n: ir::Value,
    device: Option<ir::Value>,
) -> R<()> {
    let m = sliced(cx, at, sem)?;
    let n = cx.val(n)?;
    let d = device.map(|d| cx.val(d)).transpose()?;
    cx.m.tpu_sem_signal(at, m, n, d)
}

pub(crate) fn sem_wait<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    sem: &RefView,
    n: ir::Value,
) -> R<()> {
    let m = sliced(cx, at, sem)?;
    let n = cx.val(n)?;
    cx.m.tpu_sem_wait(at, m, n)
}

pub(crate) fn sem_read<'c>(cx: &mut Lower<'c, '_>, at: At<'c, '_>, sem: &RefView) -> R<Val<'c>> {
    let m = sliced(cx, at, sem)?;
    cx.m.tpu_sem_read(at, m)
}

//! Rules that move or combine elements: broadcasts, reshapes, transposes,
//! iota, reductions, the MXU product and rolls.

use crate::mosaic::body::{dims, unsupported, Lower, R};
use crate::mosaic::mlir::{At, Val};
use pk_lang::ir::{self, DType, ReduceOp};

/// `Splat` and `Broadcast`: `vector.broadcast` repeats a scalar, or the
/// size-1 dimensions of a vector of the same rank.
pub(crate) fn broadcast<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    a: ir::Value,
    rt: &ir::Type,
) -> R<Val<'c>> {
    let v = cx.val(a)?;
    if cx.ty(a) == rt {
        return Ok(v);
    }
    cx.m.broadcast(at, v, cx.mlir_ty(rt))
}

/// `vector.shape_cast`; to a scalar `vector.extract`, from a scalar
/// `vector.broadcast` (as Pallas lowers `reshape`).
pub(crate) fn reshape<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    a: ir::Value,
    rt: &ir::Type,
) -> R<Val<'c>> {
    let v = cx.val(a)?;
    let t = cx.ty(a);
    if t == rt {
        return Ok(v);
    }
    let out = cx.mlir_ty(rt);
    if t.is_scalar() {
        cx.m.broadcast(at, v, out)
    } else if rt.is_scalar() {
        cx.m.extract(at, v, &vec![0; t.rank()], out)
    } else {
        cx.m.shape_cast(at, v, out)
    }
}

/// `tpu.transpose`, as Pallas emits for `lax.transpose`.
pub(crate) fn transpose<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    a: ir::Value,
    perm: &[usize],
    rt: &ir::Type,
) -> R<Val<'c>> {
    let v = cx.val(a)?;
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(v);
    }
    let perm: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
    cx.m.tpu_transpose(at, v, &perm, cx.mlir_ty(rt))
}

/// `Slice`: `vector.extract_strided_slice` with unit strides, as Pallas
/// lowers a static slice of a traced value (`x[:, :64]`). libtpu accepts
/// windows that start inside a tile (tests/in/value_slices.pk).
pub(crate) fn slice<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    a: ir::Value,
    window: &[(u64, u64)],
    rt: &ir::Type,
) -> R<Val<'c>> {
    let v = cx.val(a)?;
    let offsets: Vec<i64> = window.iter().map(|(s, _)| *s as i64).collect();
    let sizes: Vec<i64> = window.iter().map(|(_, n)| *n as i64).collect();
    cx.m.extract_strided_slice(at, v, &offsets, &sizes, cx.mlir_ty(rt))
}

/// `Concat`: `tpu.concatenate` along `axis`, as Pallas lowers
/// `jnp.concatenate` (and `tile`, one per repeated dimension).
pub(crate) fn concat<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    vs: &[ir::Value],
    axis: usize,
    rt: &ir::Type,
) -> R<Val<'c>> {
    let vals = vs.iter().map(|v| cx.val(*v)).collect::<R<Vec<_>>>()?;
    cx.m.tpu_concatenate(at, &vals, axis as i32, cx.mlir_ty(rt))
}

/// `tpu.iota` along `dim`; a 1-D iota is built as a `(1, n)` one and
/// reshaped, since Mosaic lays out vectors of rank 2 and more.
pub(crate) fn iota<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    dim: usize,
    rt: &ir::Type,
) -> R<Val<'c>> {
    let shape = dims(rt.shape());
    let elem = cx.m.elem(rt.dtype());
    if shape.len() == 1 {
        let two = cx.m.vector(&[1, shape[0]], elem);
        let v = cx.m.tpu_iota(at, &[1], two)?;
        return cx.m.shape_cast(at, v, cx.mlir_ty(rt));
    }
    cx.m.tpu_iota(at, &[dim as i32], cx.mlir_ty(rt))
}

pub(crate) fn reduce<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    op: ReduceOp,
    a: ir::Value,
    axis: usize,
    keepdims: bool,
    rt: &ir::Type,
) -> R<Val<'c>> {
    let mut v = cx.val(a)?;
    let t = cx.ty(a);
    let d = t.dtype();
    let mut shape = dims(t.shape());
    let mut axis = axis;
    // A 1-D input gets a leading unit dimension, so that the reduction
    // produces a vector rather than a scalar (Pallas does the same).
    if shape.len() == 1 {
        shape.insert(0, 1);
        axis += 1;
        v = cx.m.shape_cast(at, v, cx.m.vector(&shape, cx.m.elem(d)))?;
    }
    let mut out_shape = shape.clone();
    out_shape.remove(axis);
    let out = match op {
        ReduceOp::ArgMax | ReduceOp::ArgMin => {
            // `tpu.reduce_index` takes f32; narrower floats widen exactly.
            if d.is_float() && d != DType::F32 {
                let wide = cx.m.vector(&shape, cx.m.elem(DType::F32));
                v = cx.m.convert(at, "arith.extf", v, wide)?;
            } else if d != DType::F32 {
                return unsupported(at, format!("an arg-max or arg-min over {t} (floats only)"));
            }
            let kind = if op == ReduceOp::ArgMax {
                "arg_max"
            } else {
                "arg_min"
            };
            let ty = cx.m.vector(&out_shape, cx.m.int(32));
            cx.m.tpu_reduce_index(at, v, axis as i64, kind, ty)?
        }
        _ => {
            let Some((kind, identity)) = combining(op, d) else {
                return unsupported(at, format!("a {op:?} reduction over {t}"));
            };
            let ty = cx.m.vector(&out_shape, cx.m.elem(d));
            let acc = match identity {
                Identity::Float(f) => cx.m.float_splat(at, ty, cx.m.elem(d), f)?,
                Identity::Int(i) => cx.m.int_splat(at, ty, cx.m.elem(d), d.bits(), i)?,
            };
            cx.m.multi_reduction(at, kind, v, acc, &[axis as i64])?
        }
    };
    let final_ty = cx.mlir_ty(rt);
    if rt.is_scalar() {
        return cx.m.extract(at, out, &[0], final_ty);
    }
    if keepdims || dims(rt.shape()) != out_shape {
        return cx.m.shape_cast(at, out, final_ty);
    }
    Ok(out)
}

enum Identity {
    Float(f64),
    Int(i64),
}

/// The `vector.kind` and identity element of a reduction.
fn combining(op: ReduceOp, d: DType) -> Option<(&'static str, Identity)> {
    let bits = d.bits();
    let (smin, smax) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
    let umax = (1i64 << bits) - 1;
    Some(match (op, d.is_float(), d.is_signed_int()) {
        (ReduceOp::Sum, true, _) => ("add", Identity::Float(0.0)),
        (ReduceOp::Max, true, _) => ("maximumf", Identity::Float(f64::NEG_INFINITY)),
        (ReduceOp::Min, true, _) => ("minimumf", Identity::Float(f64::INFINITY)),
        _ if d == DType::Bool => return None,
        (ReduceOp::Sum, false, _) => ("add", Identity::Int(0)),
        (ReduceOp::Max, false, true) => ("maxsi", Identity::Int(smin)),
        (ReduceOp::Max, false, false) => ("maxui", Identity::Int(0)),
        (ReduceOp::Min, false, true) => ("minsi", Identity::Int(smax)),
        (ReduceOp::Min, false, false) => ("minui", Identity::Int(umax)),
        _ => return None,
    })
}

/// `tpu.matmul` with a zero accumulator of the (32-bit) result type and
/// explicit dimension numbers; a transposed operand contracts its other
/// dimension instead of being transposed first.
pub(crate) fn dot<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    (lhs, trans_lhs): (ir::Value, bool),
    (rhs, trans_rhs): (ir::Value, bool),
    rt: &ir::Type,
) -> R<Val<'c>> {
    let (l, r) = (cx.val(lhs)?, cx.val(rhs)?);
    let d = rt.dtype();
    let ty = cx.mlir_ty(rt);
    let acc = if d.is_float() {
        cx.m.float_splat(at, ty, cx.m.elem(d), 0.0)?
    } else {
        cx.m.int_splat(at, ty, cx.m.elem(d), d.bits(), 0)?
    };
    let (lc, ln) = if trans_lhs { (0, 1) } else { (1, 0) };
    let (rc, rn) = if trans_rhs { (1, 0) } else { (0, 1) };
    let dims = cx.m.parse_attr(
        &format!("#tpu.dot_dimension_numbers<[{lc}], [{rc}], [{ln}], [{rn}], [0, {ln}, 1, {rn}], [], []>"),
        at.src,
    )?;
    cx.m.tpu_matmul(at, l, r, acc, dims)
}

/// `numpy.roll` as `tpu.dynamic_rotate`, whose amount must not be negative:
/// the shift is first reduced to `[0, n)` along the axis.
pub(crate) fn roll<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    a: ir::Value,
    shift: ir::Value,
    axis: usize,
) -> R<Val<'c>> {
    let v = cx.val(a)?;
    let s = cx.val(shift)?;
    let n = cx.ty(a).shape().get(axis).map(ir::Dim::get).unwrap_or(1) as i64;
    let n = cx.m.i32_const(at, n)?;
    let r = cx.m.same(at, "arith.remsi", &[s, n])?;
    let r = cx.m.same(at, "arith.addi", &[r, n])?;
    let r = cx.m.same(at, "arith.remsi", &[r, n])?;
    // Mosaic rotates vectors of rank 2 and more ("Unsupported 1D shape"): a
    // 1-D vector is rotated as a single row.
    let t = cx.ty(a);
    if t.rank() == 1 {
        let len = t.shape()[0].get();
        let row = cx.m.vector(&[1, len], cx.m.elem(t.dtype()));
        let v2 = cx.m.shape_cast(at, v, row)?;
        let rolled = cx.m.tpu_dynamic_rotate(at, v2, r, 1)?;
        return cx.m.shape_cast(at, rolled, cx.mlir_ty(t));
    }
    cx.m.tpu_dynamic_rotate(at, v, r, axis as i32)
}

//! Elementwise rules: constants, unary and binary arithmetic, comparisons,
//! selects, value casts and bitcasts. Each follows what JAX Pallas emits for
//! the matching `lax` primitive, so the TPU compiler sees familiar patterns.

use crate::mosaic::body::{dims, unsupported, Lower, R};
use crate::mosaic::mlir::{At, Val};
use melior::ir::Type;
use pk_lang::ir::{self, BinaryOp, CmpOp, DType, Literal, UnaryOp};

/// How arithmetic treats a dtype's bits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Float,
    Signed,
    Unsigned,
    Bool,
}

fn kind(d: DType) -> Kind {
    if d.is_float() {
        Kind::Float
    } else if d == DType::Bool {
        Kind::Bool
    } else if d.is_signed_int() {
        Kind::Signed
    } else {
        Kind::Unsigned
    }
}

/// The MLIR type of `d` elements in the shape of Tile IR type `like`.
fn ty_as<'c>(cx: &Lower<'c, '_>, like: &ir::Type, d: DType) -> Type<'c> {
    cx.m.vector(&dims(like.shape()), cx.m.elem(d))
}

/// A splat of an integer in the shape and dtype of `like`.
fn int_like<'c>(
    cx: &Lower<'c, '_>,
    at: At<'c, '_>,
    like: &ir::Type,
    d: DType,
    v: i64,
) -> R<Val<'c>> {
    let bits = if d == DType::Bool { 1 } else { d.bits() };
    cx.m.int_splat(at, ty_as(cx, like, d), cx.m.elem(d), bits, v)
}

/// A splat of a float in the shape and dtype of `like`.
fn float_like<'c>(
    cx: &Lower<'c, '_>,
    at: At<'c, '_>,
    like: &ir::Type,
    d: DType,
    v: f64,
) -> R<Val<'c>> {
    cx.m.float_splat(at, ty_as(cx, like, d), cx.m.elem(d), v)
}

/// `arith.constant`: a scalar, or a dense splat for vectors.
pub(crate) fn constant<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    lit: Literal,
    rt: &ir::Type,
) -> R<Val<'c>> {
    let d = rt.dtype();
    match (kind(d), lit) {
        (Kind::Float, Literal::Float(f)) => float_like(cx, at, rt, d, f),
        (Kind::Float, Literal::Int(i)) => float_like(cx, at, rt, d, i as f64),
        (Kind::Bool, Literal::Bool(b)) => int_like(cx, at, rt, d, i64::from(b)),
        (Kind::Signed | Kind::Unsigned, Literal::Int(i)) => int_like(cx, at, rt, d, i),
        _ => unsupported(at, format!("the literal {lit:?} as {rt}")),
    }
}

pub(crate) fn unary<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    u: UnaryOp,
    a: ir::Value,
) -> R<Val<'c>> {
    let v = cx.val(a)?;
    let t = cx.ty(a);
    let (w, wt) = widened(cx, at, &[v], t)?;
    let r = unary_on(cx, at, u, w[0], &wt)?;
    narrowed(cx, at, r, t)
}

fn unary_on<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    u: UnaryOp,
    v: Val<'c>,
    t: &ir::Type,
) -> R<Val<'c>> {
    let d = t.dtype();
    let k = kind(d);
    let math = |name: &str| -> R<Val<'c>> {
        if k == Kind::Float {
            cx.m.same(at, name, &[v])
        } else {
            unsupported(at, format!("`{}` of {t}", format!("{u:?}").to_lowercase()))
        }
    };
    match u {
        UnaryOp::Neg if k == Kind::Float => cx.m.same(at, "arith.negf", &[v]),
        // Integer negation is `0 - x`, as in Pallas.
        UnaryOp::Neg if k != Kind::Bool => {
            let zero = int_like(cx, at, t, d, 0)?;
            cx.m.same(at, "arith.subi", &[zero, v])
        }
        // `xor x, -1` is bitwise not for integers and logical not for i1.
        UnaryOp::Not if k != Kind::Float => {
            let ones = int_like(cx, at, t, d, -1)?;
            cx.m.same(at, "arith.xori", &[v, ones])
        }
        UnaryOp::Abs if k == Kind::Signed => cx.m.same(at, "math.absi", &[v]),
        UnaryOp::Abs if k == Kind::Unsigned => Ok(v),
        UnaryOp::Abs => math("math.absf"),
        UnaryOp::Exp => math("math.exp"),
        UnaryOp::Exp2 => math("math.exp2"),
        UnaryOp::Log => math("math.log"),
        UnaryOp::Log1p => math("math.log1p"),
        UnaryOp::Sqrt => math("math.sqrt"),
        UnaryOp::Rsqrt => math("math.rsqrt"),
        UnaryOp::Tanh => math("math.tanh"),
        UnaryOp::Sin => math("math.sin"),
        UnaryOp::Cos => math("math.cos"),
        UnaryOp::Floor => math("math.floor"),
        UnaryOp::Ceil => math("math.ceil"),
        // Round half to even, as numpy's and the CPU reference's `round`.
        UnaryOp::Round => math("math.roundeven"),
        UnaryOp::Erf => math("math.erf"),
        UnaryOp::Logistic if k == Kind::Float => {
            // 1 / (1 + exp(-x)), the composition Pallas emits.
            let one = float_like(cx, at, t, d, 1.0)?;
            let neg = cx.m.same(at, "arith.negf", &[v])?;
            let e = cx.m.same(at, "math.exp", &[neg])?;
            let den = cx.m.same(at, "arith.addf", &[one, e])?;
            cx.m.same(at, "arith.divf", &[one, den])
        }
        UnaryOp::Sign => sign(cx, at, v, t),
        _ => unsupported(at, format!("`{}` of {t}", format!("{u:?}").to_lowercase())),
    }
}

/// `sign(x)`: for floats the sign bit of `x` on 1.0, except where `|x| > 0`
/// fails (zeros and NaN keep `x`), as Pallas computes it; for integers
/// `(x > 0) - (x < 0)`.
fn sign<'c>(cx: &mut Lower<'c, '_>, at: At<'c, '_>, v: Val<'c>, t: &ir::Type) -> R<Val<'c>> {
    let d = t.dtype();
    let bool_t = ty_as(cx, t, DType::Bool);
    match kind(d) {
        Kind::Float if d.bits() >= 16 => {
            let (it, sign_mask, one_bits) = if d == DType::F32 {
                (DType::I32, 0x8000_0000_i64, 0x3F80_0000_i64)
            } else if d == DType::BF16 {
                (DType::I16, 0x8000, 0x3F80)
            } else {
                return unsupported(at, format!("`sign` of {t}"));
            };
            let bits = bitcast_value(cx, at, v, t, it)?;
            let mask = int_like(cx, at, t, it, sign_mask)?;
            let s = cx.m.same(at, "arith.andi", &[bits, mask])?;
            let one = int_like(cx, at, t, it, one_bits)?;
            let s = cx.m.same(at, "arith.ori", &[s, one])?;
            let s = bitcast_value(cx, at, s, &t.with_dtype(it), d)?;
            let abs = cx.m.same(at, "math.absf", &[v])?;
            let zero = float_like(cx, at, t, d, 0.0)?;
            let nz = cx.m.cmp(at, "arith.cmpf", CMPF_OGT, abs, zero, bool_t)?;
            cx.m.select(at, nz, s, v)
        }
        Kind::Signed => {
            let zero = int_like(cx, at, t, d, 0)?;
            let one = int_like(cx, at, t, d, 1)?;
            let minus = int_like(cx, at, t, d, -1)?;
            let pos = cx.m.cmp(at, "arith.cmpi", CMPI_SGT, v, zero, bool_t)?;
            let neg = cx.m.cmp(at, "arith.cmpi", CMPI_SLT, v, zero, bool_t)?;
            let n = cx.m.select(at, neg, minus, zero)?;
            cx.m.select(at, pos, one, n)
        }
        Kind::Unsigned => {
            let zero = int_like(cx, at, t, d, 0)?;
            let one = int_like(cx, at, t, d, 1)?;
            let nz = cx.m.cmp(at, "arith.cmpi", CMPI_NE, v, zero, bool_t)?;
            cx.m.select(at, nz, one, zero)
        }
        _ => unsupported(at, format!("`sign` of {t}")),
    }
}

/// Mosaic has no 8-bit integer arithmetic ("Only vector<i16> and
/// vector<i32> are supported") and no 16-bit `max`/`min`, so integers
/// narrower than 32 bits are computed in `i32` (sign- or zero-extended by
/// their kind) and truncated back, which gives the same bits for every
/// operation lowered here.
fn narrow(t: &ir::Type) -> bool {
    t.dtype().is_int() && t.dtype().bits() < 32
}

/// Widens 8-bit integer operands to `i32`; others are returned as they are,
/// with the type they are computed in.
fn widened<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    vals: &[Val<'c>],
    t: &ir::Type,
) -> R<(Vec<Val<'c>>, ir::Type)> {
    if !narrow(t) {
        return Ok((vals.to_vec(), t.clone()));
    }
    let w = vals
        .iter()
        .map(|&v| convert(cx, at, v, t, DType::I32))
        .collect::<R<Vec<_>>>()?;
    Ok((w, t.with_dtype(DType::I32)))
}

/// Truncates a result computed by [`widened`] back to `t`.
fn narrowed<'c>(cx: &mut Lower<'c, '_>, at: At<'c, '_>, v: Val<'c>, t: &ir::Type) -> R<Val<'c>> {
    if narrow(t) {
        convert(cx, at, v, &t.with_dtype(DType::I32), t.dtype())
    } else {
        Ok(v)
    }
}

pub(crate) fn binary<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    b: BinaryOp,
    x: ir::Value,
    y: ir::Value,
) -> R<Val<'c>> {
    let (xv, yv) = (cx.val(x)?, cx.val(y)?);
    let t = cx.ty(x);
    use Kind::*;
    let name = match (b, kind(t.dtype())) {
        (BinaryOp::Add, Float) => "arith.addf",
        (BinaryOp::Add, Signed | Unsigned) => "arith.addi",
        (BinaryOp::Sub, Float) => "arith.subf",
        (BinaryOp::Sub, Signed | Unsigned) => "arith.subi",
        (BinaryOp::Mul, Float) => "arith.mulf",
        (BinaryOp::Mul, Signed | Unsigned) => "arith.muli",
        (BinaryOp::Div, Float) => "arith.divf",
        (BinaryOp::Div, Signed) => "arith.divsi",
        (BinaryOp::Div, Unsigned) => "arith.divui",
        (BinaryOp::Rem, Float) => "arith.remf",
        (BinaryOp::Rem, Signed) => "arith.remsi",
        (BinaryOp::Rem, Unsigned) => "arith.remui",
        (BinaryOp::Max, Float) => "arith.maximumf",
        (BinaryOp::Max, Signed) => "arith.maxsi",
        (BinaryOp::Max, Unsigned) => "arith.maxui",
        (BinaryOp::Max, Bool) | (BinaryOp::Or, Bool | Signed | Unsigned) => "arith.ori",
        (BinaryOp::Min, Float) => "arith.minimumf",
        (BinaryOp::Min, Signed) => "arith.minsi",
        (BinaryOp::Min, Unsigned) => "arith.minui",
        (BinaryOp::Min, Bool) | (BinaryOp::And, Bool | Signed | Unsigned) => "arith.andi",
        (BinaryOp::Xor, Bool | Signed | Unsigned) => "arith.xori",
        (BinaryOp::Pow, Float) => "math.powf",
        (BinaryOp::Pow, Signed) => "math.ipowi",
        (BinaryOp::Shl, Signed | Unsigned) => "arith.shli",
        (BinaryOp::Shr, Signed) => "arith.shrsi",
        (BinaryOp::Shr, Unsigned) => "arith.shrui",
        _ => return unsupported(at, format!("`{}` of {t}", format!("{b:?}").to_lowercase())),
    };
    let (w, wt) = widened(cx, at, &[xv, yv], t)?;
    let r = match name {
        // Mosaic folds `max`/`min` of widened bytes (even as compare and
        // select) back into an 8-bit `max`/`min` that it cannot lower, so the
        // comparison is made in 32 bits and the select picks the bytes.
        "arith.maxsi" | "arith.maxui" | "arith.minsi" | "arith.minui" if narrow(t) => {
            let unsigned = name.ends_with("ui");
            let c = if name.starts_with("arith.max") {
                CmpOp::Gt
            } else {
                CmpOp::Lt
            };
            let bt = ty_as(cx, &wt, DType::Bool);
            let pick =
                cx.m.cmp(at, "arith.cmpi", cmpi_pred(c, unsigned), w[0], w[1], bt)?;
            return cx.m.select(at, pick, xv, yv);
        }
        _ => cx.m.same(at, name, &w)?,
    };
    narrowed(cx, at, r, t)
}

// Predicate numbers of `arith.cmpi` and `arith.cmpf` (the arith dialect's
// `CmpIPredicate` and `CmpFPredicate` enums).
const CMPI_EQ: i64 = 0;
const CMPI_NE: i64 = 1;
const CMPI_SLT: i64 = 2;
const CMPI_SGT: i64 = 4;
const CMPF_OEQ: i64 = 1;
const CMPF_OGT: i64 = 2;

fn cmpi_pred(c: CmpOp, unsigned: bool) -> i64 {
    let base = match c {
        CmpOp::Eq => return CMPI_EQ,
        CmpOp::Ne => return CMPI_NE,
        CmpOp::Lt => 2,
        CmpOp::Le => 3,
        CmpOp::Gt => 4,
        CmpOp::Ge => 5,
    };
    // ult..uge follow slt..sge at the same distance.
    if unsigned {
        base + 4
    } else {
        base
    }
}

/// Ordered predicates; `!=` is built from `==` by its caller.
fn cmpf_pred(c: CmpOp) -> i64 {
    match c {
        CmpOp::Eq | CmpOp::Ne => CMPF_OEQ,
        CmpOp::Gt => CMPF_OGT,
        CmpOp::Ge => 3,
        CmpOp::Lt => 4,
        CmpOp::Le => 5,
    }
}

pub(crate) fn compare<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    c: CmpOp,
    x: ir::Value,
    y: ir::Value,
    rt: &ir::Type,
) -> R<Val<'c>> {
    let (xv, yv) = (cx.val(x)?, cx.val(y)?);
    let t = cx.ty(x);
    let bt = cx.mlir_ty(rt);
    let (w, _) = widened(cx, at, &[xv, yv], t)?;
    let (xv, yv) = (w[0], w[1]);
    match kind(t.dtype()) {
        // Mosaic has no unordered predicates: `!=` is `!(x == y)`, which
        // keeps `NaN != x` true as in IEEE 754 and the CPU reference.
        Kind::Float if c == CmpOp::Ne => {
            let eq = cx.m.cmp(at, "arith.cmpf", CMPF_OEQ, xv, yv, bt)?;
            let ones = int_like(cx, at, rt, DType::Bool, 1)?;
            cx.m.same(at, "arith.xori", &[eq, ones])
        }
        Kind::Float => cx.m.cmp(at, "arith.cmpf", cmpf_pred(c), xv, yv, bt),
        Kind::Signed => cx.m.cmp(at, "arith.cmpi", cmpi_pred(c, false), xv, yv, bt),
        Kind::Unsigned => cx.m.cmp(at, "arith.cmpi", cmpi_pred(c, true), xv, yv, bt),
        // Booleans compare through boolean algebra, as Pallas lowers them
        // (Mosaic has no ordered comparison of masks).
        Kind::Bool => {
            let not = |cx: &Lower<'c, '_>, v: Val<'c>| -> R<Val<'c>> {
                let ones = int_like(cx, at, t, DType::Bool, 1)?;
                cx.m.same(at, "arith.xori", &[v, ones])
            };
            match c {
                CmpOp::Eq => {
                    let ne = cx.m.same(at, "arith.xori", &[xv, yv])?;
                    not(cx, ne)
                }
                CmpOp::Ne => cx.m.same(at, "arith.xori", &[xv, yv]),
                CmpOp::Lt => cx.m.same(at, "arith.andi", &[not(cx, xv)?, yv]),
                CmpOp::Le => cx.m.same(at, "arith.ori", &[not(cx, xv)?, yv]),
                CmpOp::Gt => cx.m.same(at, "arith.andi", &[xv, not(cx, yv)?]),
                CmpOp::Ge => cx.m.same(at, "arith.ori", &[xv, not(cx, yv)?]),
            }
        }
    }
}

pub(crate) fn select<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    c: ir::Value,
    t: ir::Value,
    f: ir::Value,
) -> R<Val<'c>> {
    cx.m.select(at, cx.val(c)?, cx.val(t)?, cx.val(f)?)
}

pub(crate) fn cast<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    a: ir::Value,
    rt: &ir::Type,
) -> R<Val<'c>> {
    let v = cx.val(a)?;
    let t = cx.ty(a).clone();
    convert(cx, at, v, &t, rt.dtype())
}

/// Converts `v` (of Tile IR type `t`) to dtype `to`, following Pallas's
/// `convert_element_type` rule: direct `arith` conversions where Mosaic has
/// them, and a detour through 32 bits where it does not.
fn convert<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    v: Val<'c>,
    t: &ir::Type,
    to: DType,
) -> R<Val<'c>> {
    let from = t.dtype();
    let out = ty_as(cx, t, to);
    use Kind::*;
    let (fb, tb) = (from.bits(), to.bits());
    // The conversion in two steps, through dtype `via`.
    let through = |cx: &mut Lower<'c, '_>, via: DType| -> R<Val<'c>> {
        let w = convert(cx, at, v, t, via)?;
        convert(cx, at, w, &t.with_dtype(via), to)
    };
    match (kind(from), kind(to)) {
        _ if from == to => Ok(v),
        (Float, Float) if fb < tb => cx.m.convert(at, "arith.extf", v, out),
        (Float, Float) if fb > tb => cx.m.convert(at, "arith.truncf", v, out),
        // Two 8-bit float formats: through f32.
        (Float, Float) => through(cx, DType::F32),
        (Signed | Unsigned, Signed | Unsigned) if fb == tb => Ok(v),
        (Signed, Signed | Unsigned) if fb < tb => cx.m.convert(at, "arith.extsi", v, out),
        (Unsigned | Bool, Signed | Unsigned) if fb < tb || from == DType::Bool => {
            cx.m.convert(at, "arith.extui", v, out)
        }
        (Signed | Unsigned, Signed | Unsigned) => cx.m.convert(at, "arith.trunci", v, out),
        (Float, Signed) => cx.m.convert(at, "arith.fptosi", v, out),
        (Signed, Float) => cx.m.convert(at, "arith.sitofp", v, out),
        // Unsigned bytes and booleans become floats through i32, which holds
        // every value exactly; floats become unsigned bytes through i32, then
        // truncation.
        (Unsigned | Bool, Float) | (Float, Unsigned) => through(cx, DType::I32),
        // `x != 0`, widened to 32 bits first as Pallas does for narrow types.
        (Float | Signed | Unsigned, Bool) => {
            let wide = if from.is_float() {
                DType::F32
            } else {
                DType::I32
            };
            let w = convert(cx, at, v, t, wide)?;
            let wt = t.with_dtype(wide);
            let zero = if from.is_float() {
                float_like(cx, at, &wt, wide, 0.0)?
            } else {
                int_like(cx, at, &wt, wide, 0)?
            };
            if from.is_float() {
                // `!(x == 0)`, so that NaN converts to true (see `compare`).
                let eq = cx.m.cmp(at, "arith.cmpf", CMPF_OEQ, w, zero, out)?;
                let ones = int_like(cx, at, t, DType::Bool, 1)?;
                return cx.m.same(at, "arith.xori", &[eq, ones]);
            }
            cx.m.cmp(at, "arith.cmpi", CMPI_NE, w, zero, out)
        }
        _ => unsupported(at, format!("a cast from {t} to {to}")),
    }
}

pub(crate) fn bitcast<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    a: ir::Value,
    rt: &ir::Type,
) -> R<Val<'c>> {
    let v = cx.val(a)?;
    let t = cx.ty(a).clone();
    if t.dtype() == DType::Bool {
        // Booleans are stored as i32: reinterpret that representation.
        let w = convert(cx, at, v, &t, DType::I32)?;
        return bitcast_value(cx, at, w, &t.with_dtype(DType::I32), rt.dtype());
    }
    if rt.dtype() == DType::Bool {
        let w = bitcast_value(cx, at, v, &t, DType::I32)?;
        return convert(cx, at, w, &t.with_dtype(DType::I32), DType::Bool);
    }
    bitcast_value(cx, at, v, &t, rt.dtype())
}

/// Reinterprets the bits of `v` as `to` (same width): `tpu.bitcast` for
/// vectors and `arith.bitcast` for scalars, as Pallas emits them.
fn bitcast_value<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    v: Val<'c>,
    t: &ir::Type,
    to: DType,
) -> R<Val<'c>> {
    if t.dtype() == to || (t.dtype().is_int() && to.is_int()) {
        return Ok(v);
    }
    let out = ty_as(cx, t, to);
    if t.is_scalar() {
        cx.m.convert(at, "arith.bitcast", v, out)
    } else {
        cx.m.tpu_bitcast(at, v, out)
    }
}

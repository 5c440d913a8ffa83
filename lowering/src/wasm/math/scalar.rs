//! Scalar math helpers. The f32 functions that are not on hot paths (sin,
//! cos, erf, log1p, pow, fmod) are computed in f64 and rounded once, which
//! makes them accurate to within 1 ulp with short code; vector ops call
//! them once per lane.
//!
//! The f64 kernels are the classic fdlibm algorithms (exp, log) and the
//! musl single-precision kernels for sin/cos (`__sindf`, `__cosdf`), whose
//! polynomials are evaluated in double.

use super::super::fb::Fb;
use super::arith::{horner, periods, reduce, square, Arith};
use super::{Helper, Helpers};
use wasm_encoder::{BlockType, Instruction as I, ValType};

const D: ValType = ValType::F64;
const L: ValType = ValType::I64;

/// `if (cond) return value` where both are pushed by the closures.
fn return_if(fb: &mut Fb, cond: impl FnOnce(&mut Fb), value: impl FnOnce(&mut Fb)) {
    cond(fb);
    fb.op(I::If(BlockType::Empty));
    value(fb);
    fb.op(I::Return).op(I::End);
}

/// What [`return_if_f64`] returns.
enum Ret {
    F64(f64),
    Local(u32),
}

/// `if x CMP c { return r }` for the f64 local `x`.
fn return_if_f64(fb: &mut Fb, x: u32, cmp: I<'static>, c: f64, r: Ret) {
    return_if(
        fb,
        |f| {
            f.get(x).f64c(c).op(cmp);
        },
        |f| match r {
            Ret::F64(v) => {
                f.f64c(v);
            }
            Ret::Local(l) => {
                f.get(l);
            }
        },
    );
}

/// Pushes whether the float local `x` is NaN, the one value not equal to
/// itself; `ne` is the `F32Ne` or `F64Ne` of its type.
fn is_nan(fb: &mut Fb, x: u32, ne: I<'static>) {
    fb.get(x).get(x).op(ne);
}

/// Pushes whether the f32 local `x` is infinite or NaN: `x - x` is NaN
/// exactly then.
fn not_finite(fb: &mut Fb, x: u32) {
    fb.get(x)
        .get(x)
        .op(I::F32Sub)
        .get(x)
        .get(x)
        .op(I::F32Sub)
        .op(I::F32Ne);
}

/// `if x is NaN { return x }` for a float local `x`; `ne` is the `F32Ne` or
/// `F64Ne` of its type.
fn return_nan(fb: &mut Fb, x: u32, ne: I<'static>) {
    return_if(
        fb,
        |f| {
            is_nan(f, x, ne);
        },
        |f| {
            f.get(x);
        },
    );
}

/// Pushes the f64 `2^k` for an i64 local `k` in [-1022, 1023].
fn pow2_64(fb: &mut Fb, k: u32) {
    fb.get(k)
        .op(I::I64Const(1023))
        .op(I::I64Add)
        .op(I::I64Const(52));
    fb.op(I::I64Shl).op(I::F64ReinterpretI64);
}

/// exp(x) in f64 (fdlibm `e_exp.c`): x = k ln2 + r, |r| <= ln2/2, then a
/// rational approximation of e^r; error below 1 ulp of double.
pub(super) fn exp64(fb: &mut Fb) {
    let x = 0;
    let (k, hi, lo, r, t, c, ki, k1) = (
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(L),
        fb.local(L),
    );
    return_nan(fb, x, I::F64Ne);
    return_if_f64(
        fb,
        x,
        I::F64Gt,
        709.782_712_893_384,
        Ret::F64(f64::INFINITY),
    );
    return_if_f64(fb, x, I::F64Lt, -745.133_219_101_941_2, Ret::F64(0.0));
    periods(fb, Arith::F64, x, std::f64::consts::LOG2_E, k);
    fb.get(x)
        .get(k)
        .f64c(0.6931471803691238)
        .op(I::F64Mul)
        .op(I::F64Sub)
        .set(hi);
    fb.get(k)
        .f64c(1.908_214_929_270_587_7e-10)
        .op(I::F64Mul)
        .set(lo);
    fb.get(hi).get(lo).op(I::F64Sub).set(r);
    square(fb, Arith::F64, r, t);
    horner(
        fb,
        Arith::F64,
        t,
        &[
            4.138_136_797_057_238_5e-8,
            -1.653_390_220_546_525_3e-6,
            6.613_756_321_437_934e-5,
            -2.777_777_777_701_559_3e-3,
            1.666_666_666_666_660_2e-1,
        ],
    );
    fb.get(t).op(I::F64Mul).set(c);
    fb.get(r).get(c).op(I::F64Sub).set(c);
    // y = 1 - ((lo - (r c) / (2 - c)) - hi)
    fb.f64c(1.0).get(lo).get(r).get(c).op(I::F64Mul);
    fb.f64c(2.0)
        .get(c)
        .op(I::F64Sub)
        .op(I::F64Div)
        .op(I::F64Sub);
    fb.get(hi).op(I::F64Sub).op(I::F64Sub).set(r);
    fb.get(k).op(I::I64TruncSatF64S).set(ki);
    fb.get(ki).op(I::I64Const(1)).op(I::I64ShrS).set(k1);
    fb.get(r);
    pow2_64(fb, k1);
    fb.op(I::F64Mul);
    fb.get(ki).get(k1).op(I::I64Sub).set(ki);
    pow2_64(fb, ki);
    fb.op(I::F64Mul);
}

/// ln(x) in f64 (fdlibm `e_log.c`): x = 2^k (1 + f) with 1 + f in
/// [sqrt(2)/2, sqrt(2)), ln(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)) with
/// s = f / (2 + f).
pub(super) fn log64(fb: &mut Fb) {
    let x = 0;
    let (k, bits, f, s, z, w, r, hfsq, dk) = (
        fb.local(L),
        fb.local(L),
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(D),
    );
    return_nan(fb, x, I::F64Ne);
    return_if_f64(fb, x, I::F64Lt, 0.0, Ret::F64(f64::NAN));
    return_if_f64(fb, x, I::F64Eq, 0.0, Ret::F64(f64::NEG_INFINITY));
    return_if_f64(fb, x, I::F64Eq, f64::INFINITY, Ret::Local(x));
    fb.op(I::I64Const(0)).set(k);
    fb.get(x).f64c(f64::MIN_POSITIVE).op(I::F64Lt);
    fb.if_(|b| {
        b.get(x).f64c(18_014_398_509_481_984.0).op(I::F64Mul).set(x);
        b.op(I::I64Const(-54)).set(k);
    });
    fb.get(x).op(I::I64ReinterpretF64).set(bits);
    fb.get(k).get(bits).op(I::I64Const(52)).op(I::I64ShrU);
    fb.op(I::I64Const(1023)).op(I::I64Sub).op(I::I64Add).set(k);
    fb.get(bits)
        .op(I::I64Const(0x000F_FFFF_FFFF_FFFF))
        .op(I::I64And);
    fb.op(I::I64Const(0x3FF0_0000_0000_0000)).op(I::I64Or);
    fb.op(I::F64ReinterpretI64).set(f);
    fb.get(f).f64c(std::f64::consts::SQRT_2).op(I::F64Gt);
    fb.if_(|b| {
        b.get(f).f64c(0.5).op(I::F64Mul).set(f);
        b.get(k).op(I::I64Const(1)).op(I::I64Add).set(k);
    });
    fb.get(f).f64c(1.0).op(I::F64Sub).set(f);
    fb.get(f)
        .f64c(2.0)
        .get(f)
        .op(I::F64Add)
        .op(I::F64Div)
        .set(s);
    square(fb, Arith::F64, s, z);
    square(fb, Arith::F64, z, w);
    // R = z (Lg1 + w (Lg3 + w (Lg5 + w Lg7))) + w (Lg2 + w (Lg4 + w Lg6))
    horner(
        fb,
        Arith::F64,
        w,
        &[
            1.479_819_860_511_658_6e-1,
            1.818_357_216_161_805e-1,
            2.857_142_874_366_239e-1,
            6.666_666_666_666_735e-1,
        ],
    );
    fb.get(z).op(I::F64Mul);
    horner(
        fb,
        Arith::F64,
        w,
        &[
            1.531_383_769_920_937_3e-1,
            2.222_219_843_214_978_4e-1,
            3.999_999_999_940_942e-1,
        ],
    );
    fb.get(w).op(I::F64Mul).op(I::F64Add).set(r);
    fb.f64c(0.5)
        .get(f)
        .op(I::F64Mul)
        .get(f)
        .op(I::F64Mul)
        .set(hfsq);
    fb.get(k).op(I::F64ConvertI64S).set(dk);
    // dk ln2_hi - ((hfsq - (s (hfsq + R) + dk ln2_lo)) - f)
    fb.get(dk).f64c(0.6931471803691238).op(I::F64Mul);
    fb.get(hfsq)
        .get(s)
        .get(hfsq)
        .get(r)
        .op(I::F64Add)
        .op(I::F64Mul);
    fb.get(dk)
        .f64c(1.908_214_929_270_587_7e-10)
        .op(I::F64Mul)
        .op(I::F64Add);
    fb.op(I::F64Sub).get(f).op(I::F64Sub).op(I::F64Sub);
}

/// sin or cos of an f32, reduced modulo pi/2 in double (musl
/// `__rem_pio2f`, exact for |x| < 2^28 pi/2) and evaluated with musl's
/// double-precision kernels.
pub(super) fn sincos(fb: &mut Fb, cos: bool) {
    let x = 0;
    let (xd, j, r, z, w, n, s, c) = (
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(ValType::I32),
        fb.local(D),
        fb.local(D),
    );
    // inf and NaN give NaN.
    return_if(
        fb,
        |b| {
            not_finite(b, x);
        },
        |b| {
            b.get(x).get(x).op(I::F32Sub);
        },
    );
    // Tiny arguments: sin x = x (keeping the sign of zero), cos x = 1.
    return_if(
        fb,
        |b| {
            b.get(x).op(I::F32Abs).f32c(2.441_406_3e-4).op(I::F32Lt);
        },
        |b| {
            if cos {
                b.f32c(1.0);
            } else {
                b.get(x);
            }
        },
    );
    fb.get(x).op(I::F64PromoteF32).set(xd);
    reduce(
        fb,
        Arith::F64,
        xd,
        j,
        std::f64::consts::FRAC_2_PI,
        1.570_796_310_901_641_8,
        1.589_325_477_352_819_7e-8,
    );
    fb.set(r);
    fb.get(j).op(I::I64TruncSatF64S).op(I::I32WrapI64);
    fb.i32c(i32::from(cos))
        .op(I::I32Add)
        .i32c(3)
        .op(I::I32And)
        .set(n);
    square(fb, Arith::F64, r, z);
    square(fb, Arith::F64, z, w);
    // __sindf: r + r z (S1 + z S2) + r z w (S3 + z S4)
    fb.get(r).get(r).get(z).op(I::F64Mul);
    horner(
        fb,
        Arith::F64,
        z,
        &[8.333_329_385_889_463e-3, -1.666_666_664_162_652_4e-1],
    );
    fb.op(I::F64Mul).op(I::F64Add);
    fb.get(r).get(z).op(I::F64Mul).get(w).op(I::F64Mul);
    horner(
        fb,
        Arith::F64,
        z,
        &[2.718_311_493_989_822e-6, -1.983_933_483_609_663_2e-4],
    );
    fb.op(I::F64Mul).op(I::F64Add).set(s);
    // __cosdf: 1 + z C0 + w C1 + w z (C2 + z C3)
    fb.f64c(1.0)
        .get(z)
        .f64c(-4.999_999_972_510_31e-1)
        .op(I::F64Mul)
        .op(I::F64Add);
    fb.get(w)
        .f64c(4.166_662_332_373_906e-2)
        .op(I::F64Mul)
        .op(I::F64Add);
    fb.get(w).get(z).op(I::F64Mul);
    horner(
        fb,
        Arith::F64,
        z,
        &[2.439_044_879_627_741e-5, -1.388_676_377_460_993e-3],
    );
    fb.op(I::F64Mul).op(I::F64Add).set(c);
    // Quadrant n: sin, cos, -sin, -cos of r.
    fb.get(c).get(s).get(n).i32c(1).op(I::I32And).op(I::Select);
    fb.op(I::F64Neg);
    fb.get(c).get(s).get(n).i32c(1).op(I::I32And).op(I::Select);
    fb.get(n).i32c(2).op(I::I32And).op(I::Select);
    fb.op(I::F32DemoteF64);
}

/// erf(x) = 2/sqrt(pi) e^(-x^2) sum_n (2x^2)^n x / (1 3 5 ... (2n+1)): every
/// term is positive, so the sum is accurate; |x| >= 4 rounds to +-1 in f32.
pub(super) fn erf(fb: &mut Fb, h: &mut Helpers) {
    let x = 0;
    let (a, t, sum, x2, n) = (
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(D),
        fb.local(D),
    );
    let exp64 = h.func(Helper::Exp64);
    return_nan(fb, x, I::F32Ne);
    return_if(
        fb,
        |b| {
            b.get(x).op(I::F32Abs).f32c(4.0).op(I::F32Ge);
        },
        |b| {
            b.f32c(1.0).get(x).op(I::F32Copysign);
        },
    );
    fb.get(x)
        .op(I::F32Abs)
        .op(I::F64PromoteF32)
        .tee(a)
        .tee(t)
        .set(sum);
    square(fb, Arith::F64, a, x2);
    fb.f64c(1.0).set(n);
    fb.op(I::Loop(BlockType::Empty));
    fb.get(t).get(x2).op(I::F64Mul).f64c(2.0).op(I::F64Mul);
    fb.get(n)
        .get(n)
        .op(I::F64Add)
        .f64c(1.0)
        .op(I::F64Add)
        .op(I::F64Div)
        .set(t);
    fb.get(sum).get(t).op(I::F64Add).set(sum);
    fb.get(n).f64c(1.0).op(I::F64Add).set(n);
    fb.get(t).get(sum).f64c(1e-17).op(I::F64Mul).op(I::F64Gt);
    fb.get(n)
        .f64c(400.0)
        .op(I::F64Lt)
        .op(I::I32And)
        .op(I::BrIf(0));
    fb.op(I::End);
    fb.get(sum)
        .f64c(std::f64::consts::FRAC_2_SQRT_PI)
        .op(I::F64Mul);
    fb.get(x2).op(I::F64Neg).op(I::Call(exp64)).op(I::F64Mul);
    fb.op(I::F32DemoteF64).get(x).op(I::F32Copysign);
}

/// log1p(x) = ln(u) x / (u - 1) with u = 1 + x in double (Goldberg's
/// correction), or x when u rounds to 1.
pub(super) fn log1p(fb: &mut Fb, h: &mut Helpers) {
    let x = 0;
    let (xd, u) = (fb.local(D), fb.local(D));
    let log64 = h.func(Helper::Log64);
    fb.get(x)
        .op(I::F64PromoteF32)
        .tee(xd)
        .f64c(1.0)
        .op(I::F64Add)
        .set(u);
    return_if_f64(fb, u, I::F64Eq, 1.0, Ret::Local(x));
    return_if_f64(fb, u, I::F64Eq, f64::INFINITY, Ret::Local(x));
    fb.get(u).op(I::Call(log64)).get(xd).op(I::F64Mul);
    fb.get(u)
        .f64c(1.0)
        .op(I::F64Sub)
        .op(I::F64Div)
        .op(I::F32DemoteF64);
}

/// pow(x, y) with C's special cases: exp(y ln|x|) in double, then the sign
/// for a negative base and an odd integer exponent, NaN for a negative
/// finite base and a non-integer exponent.
pub(super) fn pow(fb: &mut Fb, h: &mut Helpers) {
    let (x, y) = (0, 1);
    let (r, int, odd) = (fb.local(D), fb.local(ValType::I32), fb.local(ValType::I32));
    let exp64 = h.func(Helper::Exp64);
    let log64 = h.func(Helper::Log64);
    return_if(
        fb,
        |b| {
            b.get(y)
                .f32c(0.0)
                .op(I::F32Eq)
                .get(x)
                .f32c(1.0)
                .op(I::F32Eq)
                .op(I::I32Or);
        },
        |b| {
            b.f32c(1.0);
        },
    );
    return_if(
        fb,
        |b| {
            is_nan(b, x, I::F32Ne);
            is_nan(b, y, I::F32Ne);
            b.op(I::I32Or);
        },
        |b| {
            b.f32c(f32::NAN);
        },
    );
    return_if(
        fb,
        |b| {
            b.get(x).op(I::F32Abs).f32c(1.0).op(I::F32Eq);
            b.get(y)
                .op(I::F32Abs)
                .f32c(f32::INFINITY)
                .op(I::F32Eq)
                .op(I::I32And);
        },
        |b| {
            b.f32c(1.0);
        },
    );
    fb.get(x)
        .op(I::F32Abs)
        .op(I::F64PromoteF32)
        .op(I::Call(log64));
    fb.get(y)
        .op(I::F64PromoteF32)
        .op(I::F64Mul)
        .op(I::Call(exp64))
        .set(r);
    // y is an integer when it is finite and equal to its floor; it is odd
    // when, in addition, |y| < 2^24 and y/2 is not an integer.
    fb.get(y).op(I::F32Floor).get(y).op(I::F32Eq);
    fb.get(y)
        .op(I::F32Abs)
        .f32c(f32::INFINITY)
        .op(I::F32Ne)
        .op(I::I32And)
        .set(int);
    fb.get(int)
        .get(y)
        .op(I::F32Abs)
        .f32c(16_777_216.0)
        .op(I::F32Lt)
        .op(I::I32And);
    fb.get(y).f32c(0.5).op(I::F32Mul).op(I::F32Floor);
    fb.get(y)
        .f32c(0.5)
        .op(I::F32Mul)
        .op(I::F32Ne)
        .op(I::I32And)
        .set(odd);
    fb.get(x).op(I::I32ReinterpretF32).i32c(0).op(I::I32LtS);
    fb.if_(|b| {
        b.get(odd);
        b.if_(|b| {
            b.get(r).op(I::F64Neg).set(r);
        });
        // A negative, finite, non-zero base with a non-integer exponent.
        b.get(int).op(I::I32Eqz);
        b.get(x)
            .op(I::F32Abs)
            .f32c(f32::INFINITY)
            .op(I::F32Ne)
            .op(I::I32And);
        b.get(x).f32c(0.0).op(I::F32Ne).op(I::I32And);
        b.if_(|b| {
            b.f64c(f64::NAN).set(r);
        });
    });
    fb.get(r).op(I::F32DemoteF64);
}

/// fmod(x, y), exact: the remainder is reduced by the largest y 2^k not
/// above it until it is below |y|; each subtraction is exact (Sterbenz), in
/// double so that f32 subnormals need no special case.
pub(super) fn fmod(fb: &mut Fb) {
    let (x, y) = (0, 1);
    let (r, ay, p, k) = (fb.local(D), fb.local(D), fb.local(D), fb.local(L));
    return_if(
        fb,
        |b| {
            b.get(y).f32c(0.0).op(I::F32Eq);
            not_finite(b, x);
            b.op(I::I32Or);
            is_nan(b, y, I::F32Ne);
            b.op(I::I32Or);
        },
        |b| {
            b.f32c(f32::NAN);
        },
    );
    fb.get(x).op(I::F32Abs).op(I::F64PromoteF32).set(r);
    fb.get(y).op(I::F32Abs).op(I::F64PromoteF32).set(ay);
    fb.op(I::Block(BlockType::Empty));
    fb.get(r).get(ay).op(I::F64Lt).op(I::BrIf(0));
    fb.op(I::Loop(BlockType::Empty));
    // k = the difference of the biased exponents (both values are positive,
    // so the bits above the mantissa are the exponent).
    for v in [r, ay] {
        fb.get(v)
            .op(I::I64ReinterpretF64)
            .op(I::I64Const(52))
            .op(I::I64ShrU);
    }
    fb.op(I::I64Sub).set(k);
    fb.get(ay);
    pow2_64(fb, k);
    fb.op(I::F64Mul).set(p);
    fb.get(p).get(r).op(I::F64Gt);
    fb.if_(|b| {
        b.get(p).f64c(0.5).op(I::F64Mul).set(p);
    });
    fb.get(r)
        .get(p)
        .op(I::F64Sub)
        .tee(r)
        .get(ay)
        .op(I::F64Ge)
        .op(I::BrIf(0));
    fb.op(I::End).op(I::End);
    fb.get(r).op(I::F32DemoteF64).get(x).op(I::F32Copysign);
}

/// Integer power with wrapping multiplication; a negative exponent gives
/// 1 for base 1, +-1 for base -1 and 0 otherwise (integer division).
pub(super) fn ipow(fb: &mut Fb) {
    let (x, y) = (0, 1);
    let acc = fb.local(ValType::I32);
    fb.get(y).i32c(0).op(I::I32LtS);
    fb.if_(|b| {
        return_if(
            b,
            |b| {
                b.get(x).i32c(1).op(I::I32Eq);
            },
            |b| {
                b.i32c(1);
            },
        );
        return_if(
            b,
            |b| {
                b.get(x).i32c(-1).op(I::I32Eq);
            },
            |b| {
                b.i32c(1)
                    .get(y)
                    .i32c(1)
                    .op(I::I32And)
                    .i32c(1)
                    .op(I::I32Shl)
                    .op(I::I32Sub);
            },
        );
        b.i32c(0).op(I::Return);
    });
    fb.i32c(1).set(acc);
    fb.op(I::Block(BlockType::Empty));
    fb.op(I::Loop(BlockType::Empty));
    fb.get(y).op(I::I32Eqz).op(I::BrIf(1));
    fb.get(y).i32c(1).op(I::I32And);
    fb.if_(|b| {
        b.get(acc).get(x).op(I::I32Mul).set(acc);
    });
    fb.get(x).get(x).op(I::I32Mul).set(x);
    fb.get(y).i32c(1).op(I::I32ShrU).set(y);
    fb.op(I::Br(0)).op(I::End).op(I::End);
    fb.get(acc);
}

/// `check_init(addr, len)`: the index of the first zero byte of a shadow
/// run, or -1.
pub(super) fn check_init(fb: &mut Fb) {
    let (addr, len) = (0, 1);
    let i = fb.local(ValType::I32);
    fb.dyn_loop(i, len, 1, |b| {
        b.get(addr)
            .get(i)
            .op(I::I32Add)
            .op(I::I32Load8U(super::super::fb::mem(0, 0)));
        b.op(I::I32Eqz);
        b.if_(|b| {
            b.get(i).op(I::Return);
        });
    });
    fb.i32c(-1);
}

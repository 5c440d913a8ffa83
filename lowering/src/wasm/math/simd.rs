//! Transcendentals on four f32 lanes at once (`v128 -> v128`). These are the
//! hot ones of ML kernels (softmax, normalisations, activations), so they
//! stay in f32x4 arithmetic: Cody-Waite range reduction and the Cephes
//! single-precision minimax polynomials. No fused multiply-add is used (Wasm
//! SIMD has none that is deterministic), so results are the same on every
//! host.
//!
//! Accuracy, measured against libm over dense sweeps by the runtime's
//! `cpu_math` test (see `docs/cpu-reference.md`): exp, exp2, log and tanh
//! within 1 ulp, logistic within 2 ulp. Special values follow C: NaN in, NaN
//! out; exp(-inf) = 0, exp(inf) = inf, log(0) = -inf, log(x < 0) = NaN;
//! results that underflow are rounded into the subnormal range.

use super::super::fb::Fb;
use super::arith::{horner, reduce, square, Arith};
use super::{Helper, Helpers};
use wasm_encoder::{Instruction as I, ValType};

const LOG2E: f32 = std::f32::consts::LOG2_E;

/// `x = min(max(x, lo), hi)` for an f32x4 local `x`; NaN lanes stay NaN.
fn clamp(fb: &mut Fb, x: u32, lo: f32, hi: f32) {
    fb.get(x)
        .f32x4c(lo)
        .op(I::F32x4Max)
        .f32x4c(hi)
        .op(I::F32x4Min);
    fb.set(x);
}

/// Pushes `p 2^n` for the f32x4 local `p` and the f32x4 local `n` of whole
/// numbers (|n| <= 252), which becomes i32x4 in place. The product is made
/// in two steps so that each factor is a normal number and a result in the
/// subnormal range is rounded once.
fn scale2(fb: &mut Fb, p: u32, n: u32) {
    fb.get(n).op(I::I32x4TruncSatF32x4S).set(n);
    fb.get(p);
    let h = fb.local(ValType::V128);
    fb.get(n).i32c(1).op(I::I32x4ShrS).set(h);
    fb.get(h)
        .i32x4c(127)
        .op(I::I32x4Add)
        .i32c(23)
        .op(I::I32x4Shl);
    fb.op(I::F32x4Mul);
    fb.get(n).get(h).op(I::I32x4Sub).i32x4c(127).op(I::I32x4Add);
    fb.i32c(23).op(I::I32x4Shl).op(I::F32x4Mul);
}

/// exp(x), Cephes `expf`: x = n ln2 + r, |r| <= ln2/2, e^r by a degree-7
/// polynomial.
pub(super) fn exp(fb: &mut Fb, x: u32) {
    let (n, r, z, p) = (fb.local(V), fb.local(V), fb.local(V), fb.local(V));
    // Clamping keeps n in [-150, 128]: anything below underflows to 0,
    // anything above overflows to inf, and NaN passes through min/max.
    clamp(fb, x, -104.0, 89.0);
    reduce(fb, Arith::F32x4, x, n, LOG2E, 0.6933594, -2.121_944_4e-4);
    fb.set(r);
    square(fb, Arith::F32x4, r, z);
    horner(
        fb,
        Arith::F32x4,
        r,
        &[
            1.987_569_1e-4,
            1.398_199_9e-3,
            8.333_452e-3,
            4.166_579_6e-2,
            1.666_666_5e-1,
            0.5,
        ],
    );
    fb.get(z).op(I::F32x4Mul).get(r).op(I::F32x4Add);
    fb.f32x4c(1.0).op(I::F32x4Add).set(p);
    scale2(fb, p, n);
}

/// 2^x: x = n + r, |r| <= 1/2, 2^r by the Cephes `exp2f` polynomial.
pub(super) fn exp2(fb: &mut Fb, x: u32) {
    let (n, r, p) = (fb.local(V), fb.local(V), fb.local(V));
    clamp(fb, x, -151.0, 129.0);
    fb.get(x).op(I::F32x4Nearest).set(n);
    fb.get(x).get(n).op(I::F32x4Sub).set(r);
    horner(
        fb,
        Arith::F32x4,
        r,
        &[
            1.535_336_2e-4,
            1.339_887_4e-3,
            9.618_437e-3,
            5.550_332_5e-2,
            2.402_264_8e-1,
            6.931_472e-1,
        ],
    );
    fb.get(r).op(I::F32x4Mul).f32x4c(1.0).op(I::F32x4Add).set(p);
    scale2(fb, p, n);
}

/// ln(x), Cephes `logf`: x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln(m) by
/// a degree-9 polynomial in m - 1.
pub(super) fn log(fb: &mut Fb, x: u32) {
    let (xs, small, e, m, lt, z, y, fe) = (
        fb.local(V),
        fb.local(V),
        fb.local(V),
        fb.local(V),
        fb.local(V),
        fb.local(V),
        fb.local(V),
        fb.local(V),
    );
    // Subnormal inputs are scaled by 2^23 first.
    fb.get(x)
        .f32x4c(f32::MIN_POSITIVE)
        .op(I::F32x4Lt)
        .set(small);
    fb.get(x)
        .f32x4c(8_388_608.0)
        .op(I::F32x4Mul)
        .get(x)
        .get(small);
    fb.op(I::V128Bitselect).set(xs);
    fb.get(xs)
        .i32c(23)
        .op(I::I32x4ShrU)
        .i32x4c(0xff)
        .op(I::V128And);
    fb.i32x4c(126).op(I::I32x4Sub);
    fb.get(small)
        .i32x4c(-23)
        .op(I::V128And)
        .op(I::I32x4Add)
        .set(e);
    fb.get(xs).i32x4c(0x807F_FFFFu32 as i32).op(I::V128And);
    fb.i32x4c(0x3F00_0000).op(I::V128Or).set(m);
    fb.get(m)
        .f32x4c(std::f32::consts::FRAC_1_SQRT_2)
        .op(I::F32x4Lt)
        .set(lt);
    fb.get(e).get(lt).op(I::I32x4Add).set(e);
    // m < sqrt(1/2): use 2m - 1, else m - 1.
    fb.get(m)
        .get(m)
        .i32x4c(0)
        .get(lt)
        .op(I::V128Bitselect)
        .op(I::F32x4Add);
    fb.f32x4c(1.0).op(I::F32x4Sub).set(m);
    square(fb, Arith::F32x4, m, z);
    horner(
        fb,
        Arith::F32x4,
        m,
        &[
            7.037_683_6e-2,
            -1.151_461e-1,
            1.167_699_9e-1,
            -1.242_014_1e-1,
            1.424_932_3e-1,
            -1.666_805_8e-1,
            2.000_071_4e-1,
            -2.499_999_4e-1,
            3.333333e-1,
        ],
    );
    fb.get(m).op(I::F32x4Mul).get(z).op(I::F32x4Mul).set(y);
    fb.get(e).op(I::F32x4ConvertI32x4S).set(fe);
    fb.get(y)
        .get(fe)
        .f32x4c(-2.121_944_4e-4)
        .op(I::F32x4Mul)
        .op(I::F32x4Add);
    fb.get(z).f32x4c(0.5).op(I::F32x4Mul).op(I::F32x4Sub);
    fb.get(m).op(I::F32x4Add);
    fb.get(fe)
        .f32x4c(0.6933594)
        .op(I::F32x4Mul)
        .op(I::F32x4Add)
        .set(y);
    // Special values, in order: negative -> NaN, zero -> -inf, inf -> inf,
    // NaN -> NaN.
    fb.f32x4c(f32::NAN).get(y).get(x).f32x4c(0.0).op(I::F32x4Lt);
    fb.op(I::V128Bitselect).set(y);
    fb.f32x4c(f32::NEG_INFINITY)
        .get(y)
        .get(x)
        .f32x4c(0.0)
        .op(I::F32x4Eq);
    fb.op(I::V128Bitselect).set(y);
    fb.f32x4c(f32::INFINITY).get(y).get(x).f32x4c(f32::INFINITY);
    fb.op(I::F32x4Eq).op(I::V128Bitselect).set(y);
    fb.get(x)
        .get(y)
        .get(x)
        .get(x)
        .op(I::F32x4Ne)
        .op(I::V128Bitselect);
}

/// tanh(x): the Cephes `tanhf` odd polynomial for |x| < 0.625, else
/// 1 - 2 / (e^(2|x|) + 1) with the sign of x.
pub(super) fn tanh(fb: &mut Fb, h: &mut Helpers) {
    let x = 0;
    let (a, z, small, large) = (fb.local(V), fb.local(V), fb.local(V), fb.local(V));
    let exp = h.func(Helper::ExpV);
    fb.get(x).op(I::F32x4Abs).set(a);
    square(fb, Arith::F32x4, x, z);
    horner(
        fb,
        Arith::F32x4,
        z,
        &[
            -5.704_988_7e-3,
            2.063909e-2,
            -5.373_971_6e-2,
            1.333_144_2e-1,
            -3.333328e-1,
        ],
    );
    fb.get(z)
        .op(I::F32x4Mul)
        .get(x)
        .op(I::F32x4Mul)
        .get(x)
        .op(I::F32x4Add);
    fb.set(small);
    fb.f32x4c(1.0).f32x4c(2.0);
    fb.get(a).get(a).op(I::F32x4Add).op(I::Call(exp));
    fb.f32x4c(1.0)
        .op(I::F32x4Add)
        .op(I::F32x4Div)
        .op(I::F32x4Sub);
    fb.i32x4c(0x7FFF_FFFF).op(I::V128And);
    fb.get(x)
        .i32x4c(i32::MIN)
        .op(I::V128And)
        .op(I::V128Or)
        .set(large);
    fb.get(small).get(large).get(a).f32x4c(0.625).op(I::F32x4Lt);
    fb.op(I::V128Bitselect);
    // Tiny arguments: tanh x = x (keeping the sign of zero).
    fb.set(small)
        .get(x)
        .get(small)
        .get(a)
        .f32x4c(2.441_406_3e-4)
        .op(I::F32x4Lt);
    fb.op(I::V128Bitselect);
}

/// The logistic function 1 / (1 + e^-x), computed from e = e^-|x| as
/// 1 / (1 + e) or e / (1 + e) so that neither side loses precision.
pub(super) fn logistic(fb: &mut Fb, h: &mut Helpers) {
    let x = 0;
    let (e, d) = (fb.local(V), fb.local(V));
    let exp = h.func(Helper::ExpV);
    fb.get(x)
        .op(I::F32x4Abs)
        .op(I::F32x4Neg)
        .op(I::Call(exp))
        .set(e);
    fb.get(e).f32x4c(1.0).op(I::F32x4Add).set(d);
    fb.f32x4c(1.0).get(d).op(I::F32x4Div);
    fb.get(e).get(d).op(I::F32x4Div);
    fb.get(x).f32x4c(0.0).op(I::F32x4Ge).op(I::V128Bitselect);
}

const V: ValType = ValType::V128;

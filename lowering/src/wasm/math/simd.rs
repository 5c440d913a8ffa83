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
use super::arith::{horner, square, Arith};
use super::{Helper, Helpers};
use crate::wasm::cephes::*;
use wasm_encoder::{Instruction as I, ValType};

const LOG2E: f32 = std::f32::consts::LOG2_E;

/// `x = min(max(x, lo), hi)` for an f32x4 local `x`. The pseudo-min/max
/// (`b < a ? b : a`) are one instruction each on x86 (Wasm's `f32x4.min`
/// and `max` take seven or eight, for NaN and signed zeros); a NaN lane
/// stays NaN, since every comparison with it is false.
fn clamp(fb: &mut Fb, x: u32, lo: f32, hi: f32) {
    fb.get(x)
        .f32x4c(lo)
        .op(I::F32x4PMax)
        .f32x4c(hi)
        .op(I::F32x4PMin);
    fb.set(x);
}

/// Sets the f32x4 local `n` to `nearest(x s)` and the i32x4 local `ni` to
/// the same whole numbers, for a local `x` with |x s| < 2^22 (a NaN lane
/// gives a NaN `n`). One addition and two subtractions instead of
/// `nearest` and the long saturating conversion to integers.
fn periods(fb: &mut Fb, x: u32, s: f32, n: u32, ni: u32) {
    fb.get(x);
    if s != 1.0 {
        fb.f32x4c(s).op(I::F32x4Mul);
    }
    fb.f32x4c(ROUNDER).op(I::F32x4Add).tee(ni);
    fb.f32x4c(ROUNDER).op(I::F32x4Sub).set(n);
    fb.get(ni)
        .i32x4c(ROUNDER.to_bits() as i32)
        .op(I::I32x4Sub)
        .set(ni);
}

/// Pushes `p 2^n` for the f32x4 local `p` and the i32x4 local `n`
/// (|n| <= 252). The product is made in two steps so that each factor is a
/// normal number and a result in the subnormal range is rounded once.
fn scale2(fb: &mut Fb, p: u32, n: u32) {
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
    let (n, ni, r, z, p) = (
        fb.local(V),
        fb.local(V),
        fb.local(V),
        fb.local(V),
        fb.local(V),
    );
    // Clamping keeps n in [-150, 128]: anything below underflows to 0,
    // anything above overflows to inf, and NaN passes through.
    clamp(fb, x, EXP_RANGE.0, EXP_RANGE.1);
    periods(fb, x, LOG2E, n, ni);
    // r = x - n ln2, with ln2 in two parts (n * 0.6933594 is exact).
    fb.get(x)
        .get(n)
        .f32x4c(LN2_HI)
        .op(I::F32x4Mul)
        .op(I::F32x4Sub);
    fb.get(n)
        .f32x4c(LN2_LO)
        .op(I::F32x4Mul)
        .op(I::F32x4Sub)
        .set(r);
    square(fb, Arith::F32x4, r, z);
    horner(fb, Arith::F32x4, r, &EXP_POLY);
    fb.get(z).op(I::F32x4Mul).get(r).op(I::F32x4Add);
    fb.f32x4c(1.0).op(I::F32x4Add).set(p);
    scale2(fb, p, ni);
}

/// 2^x: x = n + r, |r| <= 1/2, 2^r by the Cephes `exp2f` polynomial.
pub(super) fn exp2(fb: &mut Fb, x: u32) {
    let (n, ni, r, p) = (fb.local(V), fb.local(V), fb.local(V), fb.local(V));
    clamp(fb, x, EXP2_RANGE.0, EXP2_RANGE.1);
    periods(fb, x, 1.0, n, ni);
    fb.get(x).get(n).op(I::F32x4Sub).set(r);
    horner(fb, Arith::F32x4, r, &EXP2_POLY);
    fb.get(r).op(I::F32x4Mul).f32x4c(1.0).op(I::F32x4Add).set(p);
    scale2(fb, p, ni);
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
    horner(fb, Arith::F32x4, m, &LOG_POLY);
    fb.get(m).op(I::F32x4Mul).get(z).op(I::F32x4Mul).set(y);
    fb.get(e).op(I::F32x4ConvertI32x4S).set(fe);
    fb.get(y)
        .get(fe)
        .f32x4c(LN2_LO)
        .op(I::F32x4Mul)
        .op(I::F32x4Add);
    fb.get(z).f32x4c(0.5).op(I::F32x4Mul).op(I::F32x4Sub);
    fb.get(m).op(I::F32x4Add);
    fb.get(fe)
        .f32x4c(LN2_HI)
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
    horner(fb, Arith::F32x4, z, &TANH_POLY);
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
    fb.get(small)
        .get(large)
        .get(a)
        .f32x4c(TANH_SMALL)
        .op(I::F32x4Lt);
    fb.op(I::V128Bitselect);
    // Tiny arguments: tanh x = x (keeping the sign of zero).
    fb.set(small)
        .get(x)
        .get(small)
        .get(a)
        .f32x4c(TANH_TINY)
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

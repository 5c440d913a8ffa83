//! Steps that the scalar (f64) and the SIMD (f32x4) helpers share:
//! polynomials, squares and range reduction, written once over the
//! arithmetic they compute in.

use super::super::fb::Fb;
use wasm_encoder::Instruction as I;

/// The float arithmetic of a helper: f64 scalars or four f32 lanes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Arith {
    F64,
    F32x4,
}

impl Arith {
    /// Pushes the constant `c`. A lane constant is rounded to f32, which is
    /// exact for the constants the SIMD helpers write as f32.
    fn push(self, fb: &mut Fb, c: impl Into<f64>) -> &mut Fb {
        let c = c.into();
        match self {
            Arith::F64 => fb.f64c(c),
            Arith::F32x4 => fb.f32x4c(c as f32),
        }
    }

    /// The f64 or the f32x4 form of an instruction.
    fn pick(self, f64: I<'static>, f32x4: I<'static>) -> I<'static> {
        match self {
            Arith::F64 => f64,
            Arith::F32x4 => f32x4,
        }
    }

    fn mul(self) -> I<'static> {
        self.pick(I::F64Mul, I::F32x4Mul)
    }

    fn add(self) -> I<'static> {
        self.pick(I::F64Add, I::F32x4Add)
    }

    fn sub(self) -> I<'static> {
        self.pick(I::F64Sub, I::F32x4Sub)
    }

    fn nearest(self) -> I<'static> {
        self.pick(I::F64Nearest, I::F32x4Nearest)
    }
}

/// Pushes the Horner polynomial `c[0] x^(n-1) + ... + c[n-1]` for a local
/// `x`.
pub(super) fn horner<T: Into<f64> + Copy>(fb: &mut Fb, a: Arith, x: u32, c: &[T]) {
    a.push(fb, c[0]);
    for &k in &c[1..] {
        fb.get(x).op(a.mul());
        a.push(fb, k).op(a.add());
    }
}

/// `into = x * x` for a local `x`.
pub(super) fn square(fb: &mut Fb, a: Arith, x: u32, into: u32) {
    fb.get(x).get(x).op(a.mul()).set(into);
}

/// `n = nearest(x s)` for a local `x`: the whole number of periods `1 / s`
/// closest to `x`.
pub(super) fn periods(fb: &mut Fb, a: Arith, x: u32, s: impl Into<f64>, n: u32) {
    fb.get(x);
    a.push(fb, s).op(a.mul()).op(a.nearest()).set(n);
}

/// Cody-Waite range reduction of a local `x` by a period `hi + lo`: sets
/// `n` as [`periods`] does with `s` = 1 / period, and pushes
/// `x - n hi - n lo`. `hi` has few enough significant bits that `n hi`, and
/// so the first subtraction, is exact.
pub(super) fn reduce<T: Into<f64>>(fb: &mut Fb, a: Arith, x: u32, n: u32, s: T, hi: T, lo: T) {
    periods(fb, a, x, s, n);
    fb.get(x).get(n);
    a.push(fb, hi).op(a.mul()).op(a.sub());
    fb.get(n);
    a.push(fb, lo).op(a.mul()).op(a.sub());
}

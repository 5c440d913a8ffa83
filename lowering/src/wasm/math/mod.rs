//! Math helper functions added to a kernel's module on demand.
//!
//! Vector code calls the `v128 -> v128` helpers directly; scalar code calls
//! them on a splat and keeps lane 0, so a value computes to the same bits
//! whether it sits in a tile or in a scalar. The helpers that work on one
//! f32 at a time are called once per lane by vector code.

mod arith;
mod scalar;
mod simd;

use super::fb::Fb;
use std::collections::HashMap;
use wasm_encoder::{Function, ValType};

/// One helper function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Helper {
    ExpV,
    Exp2V,
    LogV,
    TanhV,
    LogisticV,
    Exp64,
    Log64,
    Sin,
    Cos,
    Erf,
    Log1p,
    Pow,
    Fmod,
    IPow,
    CheckInit,
}

/// A helper's parameter and result types.
type Signature = (&'static [ValType], &'static [ValType]);

impl Helper {
    fn signature(self) -> Signature {
        use ValType::*;
        match self {
            Helper::ExpV | Helper::Exp2V | Helper::LogV | Helper::TanhV | Helper::LogisticV => {
                (&[V128], &[V128])
            }
            Helper::Exp64 | Helper::Log64 => (&[F64], &[F64]),
            Helper::Sin | Helper::Cos | Helper::Erf | Helper::Log1p => (&[F32], &[F32]),
            Helper::Pow | Helper::Fmod => (&[F32, F32], &[F32]),
            Helper::IPow | Helper::CheckInit => (&[I32, I32], &[I32]),
        }
    }

    pub fn params(self) -> &'static [ValType] {
        self.signature().0
    }

    pub fn results(self) -> &'static [ValType] {
        self.signature().1
    }

    /// The name shown in the WAT and in profiles.
    pub fn name(self) -> &'static str {
        match self {
            Helper::ExpV => "exp_f32x4",
            Helper::Exp2V => "exp2_f32x4",
            Helper::LogV => "log_f32x4",
            Helper::TanhV => "tanh_f32x4",
            Helper::LogisticV => "logistic_f32x4",
            Helper::Exp64 => "exp_f64",
            Helper::Log64 => "log_f64",
            Helper::Sin => "sin_f32",
            Helper::Cos => "cos_f32",
            Helper::Erf => "erf_f32",
            Helper::Log1p => "log1p_f32",
            Helper::Pow => "pow_f32",
            Helper::Fmod => "fmod_f32",
            Helper::IPow => "pow_i32",
            Helper::CheckInit => "check_init",
        }
    }

    fn build(self, h: &mut Helpers) -> Function {
        let mut fb = Fb::new(self.params().len() as u32);
        match self {
            Helper::ExpV => simd::exp(&mut fb, 0),
            Helper::Exp2V => simd::exp2(&mut fb, 0),
            Helper::LogV => simd::log(&mut fb, 0),
            Helper::TanhV => simd::tanh(&mut fb, h),
            Helper::LogisticV => simd::logistic(&mut fb, h),
            Helper::Exp64 => scalar::exp64(&mut fb),
            Helper::Log64 => scalar::log64(&mut fb),
            Helper::Sin => scalar::sincos(&mut fb, false),
            Helper::Cos => scalar::sincos(&mut fb, true),
            Helper::Erf => scalar::erf(&mut fb, h),
            Helper::Log1p => scalar::log1p(&mut fb, h),
            Helper::Pow => scalar::pow(&mut fb, h),
            Helper::Fmod => scalar::fmod(&mut fb),
            Helper::IPow => scalar::ipow(&mut fb),
            Helper::CheckInit => scalar::check_init(&mut fb),
        }
        fb.finish()
    }
}

/// Emits a SIMD helper's body in place (its input in the v128 local `x`,
/// its result left on the stack), saving a call per four lanes in hot
/// loops. Returns false for helpers that are always called.
pub(crate) fn inline(h: Helper, fb: &mut Fb, x: u32) -> bool {
    match h {
        Helper::ExpV => simd::exp(fb, x),
        Helper::Exp2V => simd::exp2(fb, x),
        Helper::LogV => simd::log(fb, x),
        _ => return false,
    }
    true
}

/// The helpers a module uses, numbered from `base` in the function index
/// space in the order they were first asked for.
pub(crate) struct Helpers {
    base: u32,
    order: Vec<Helper>,
    index: HashMap<Helper, u32>,
}

impl Helpers {
    pub fn new(base: u32) -> Helpers {
        Helpers {
            base,
            order: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// The function index of a helper, adding it if new.
    pub fn func(&mut self, h: Helper) -> u32 {
        if let Some(&i) = self.index.get(&h) {
            return i;
        }
        let i = self.base + self.order.len() as u32;
        self.order.push(h);
        self.index.insert(h, i);
        i
    }

    /// Builds every helper asked for, including those that helpers ask for
    /// while being built, in index order.
    pub fn build_all(&mut self) -> Vec<(Helper, Function)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.order.len() {
            let h = self.order[i];
            out.push((h, h.build(self)));
            i += 1;
        }
        out
    }
}

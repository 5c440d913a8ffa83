//! 8-bit floats in the CPU reference: `f8e4m3fn` and `f8e5m2` values are
//! held in tiles as f32 lanes (every fp8 value is exact in f32), read from
//! and written to their one-byte storage by [`decode_v`] and [`encode_v`],
//! and a cast to fp8 rounds a lane to the nearest fp8 value ([`round_v`]),
//! as a cast to bf16 rounds to bf16.
//!
//! Rounding is to nearest, ties to even, as `ml_dtypes` and XLA convert; a
//! value beyond the largest finite one (448 for e4m3fn, 57344 for e5m2)
//! after rounding becomes NaN in e4m3fn, which has no infinities, and
//! infinity in e5m2. Each conversion works on four lanes; the scalar forms
//! run it on a splatted lane.

use super::Fb;
use pk_lang::ir::DType;
use wasm_encoder::{Instruction as I, ValType};

/// An fp8 format: exponent bias, mantissa bits, largest finite value and
/// the encodings of NaN and, where it has one, infinity.
struct Format {
    bias: i32,
    mant: i32,
    max: f32,
    nan: i32,
    inf: Option<i32>,
}

fn format(d: DType) -> Format {
    match d {
        DType::F8E5M2 => Format {
            bias: 15,
            mant: 2,
            max: 57344.0,
            nan: 0x7E,
            inf: Some(0x7C),
        },
        // e4m3fn: no infinities, NaN is S.1111.111.
        _ => Format {
            bias: 7,
            mant: 3,
            max: 448.0,
            nan: 0x7F,
            inf: None,
        },
    }
}

/// The bits of the f32 `2^e`.
fn pow2_bits(e: i32) -> i32 {
    (e + 127) << 23
}

const F32_NAN: i32 = 0x7FC0_0000;
const F32_INF: i32 = 0x7F80_0000;

/// Four fp8 encodings (one byte in each i32 lane of the v128 on the stack)
/// to their f32 values.
pub(super) fn decode_v(fb: &mut Fb, d: DType) {
    let f = format(d);
    let (x, r) = (fb.local(ValType::V128), fb.local(ValType::V128));
    fb.set(x);
    // Subnormals (exponent 0): mantissa * 2^(1 - bias - mant).
    fb.get(x)
        .i32x4c((1 << f.mant) - 1)
        .op(I::V128And)
        .op(I::F32x4ConvertI32x4S)
        .i32x4c(pow2_bits(1 - f.bias - f.mant))
        .op(I::F32x4Mul);
    // Normals: the exponent and mantissa bits moved into place, rebiased.
    fb.get(x)
        .i32x4c(0x7F)
        .op(I::V128And)
        .i32c(23 - f.mant)
        .op(I::I32x4Shl)
        .i32x4c((127 - f.bias) << 23)
        .op(I::I32x4Add);
    fb.get(x)
        .i32x4c(0x7F)
        .op(I::V128And)
        .i32x4c(1 << f.mant)
        .op(I::I32x4LtS)
        .op(I::V128Bitselect)
        .set(r);
    match f.inf {
        None => {
            // S.1111.111 is NaN.
            fb.i32x4c(F32_NAN).get(r);
            fb.get(x)
                .i32x4c(0x7F)
                .op(I::V128And)
                .i32x4c(0x7F)
                .op(I::I32x4Eq);
        }
        Some(inf) => {
            // The top exponent: infinity with a zero mantissa, else NaN.
            fb.i32x4c(F32_INF).i32x4c(F32_NAN);
            fb.get(x)
                .i32x4c(0x7F)
                .op(I::V128And)
                .i32x4c(inf)
                .op(I::I32x4Eq);
            fb.op(I::V128Bitselect).get(r);
            fb.get(x)
                .i32x4c(inf)
                .op(I::V128And)
                .i32x4c(inf)
                .op(I::I32x4Eq);
        }
    }
    fb.op(I::V128Bitselect);
    fb.get(x)
        .i32x4c(0x80)
        .op(I::V128And)
        .i32c(24)
        .op(I::I32x4Shl)
        .op(I::V128Or);
}

/// Four f32 lanes holding fp8 values (or NaN, or infinity) to their
/// encodings, one byte in each i32 lane.
pub(super) fn encode_v(fb: &mut Fb, d: DType) {
    let f = format(d);
    let (b, a, r) = (
        fb.local(ValType::V128),
        fb.local(ValType::V128),
        fb.local(ValType::V128),
    );
    fb.set(b);
    fb.get(b).i32x4c(0x7FFF_FFFF).op(I::V128And).set(a);
    // Below the smallest normal: the mantissa of a subnormal, exactly.
    fb.get(a)
        .i32x4c(pow2_bits(f.bias + f.mant - 1))
        .op(I::F32x4Mul)
        .op(I::I32x4TruncSatF32x4S);
    // Normals: the f32 exponent and top mantissa bits, rebiased.
    fb.get(a)
        .i32c(23 - f.mant)
        .op(I::I32x4ShrU)
        .i32x4c((127 - f.bias) << f.mant)
        .op(I::I32x4Sub);
    fb.get(a)
        .i32x4c(pow2_bits(1 - f.bias))
        .op(I::I32x4LtS)
        .op(I::V128Bitselect)
        .set(r);
    match f.inf {
        None => {
            // Infinity and NaN are both NaN.
            fb.i32x4c(f.nan).get(r);
            fb.get(a).i32x4c(F32_INF - 1).op(I::I32x4GtS);
            fb.op(I::V128Bitselect).set(r);
        }
        Some(inf) => {
            fb.i32x4c(inf).get(r);
            fb.get(a).i32x4c(F32_INF).op(I::I32x4Eq);
            fb.op(I::V128Bitselect).set(r);
            fb.i32x4c(f.nan).get(r);
            fb.get(a).i32x4c(F32_INF).op(I::I32x4GtS);
            fb.op(I::V128Bitselect).set(r);
        }
    }
    fb.get(r);
    fb.get(b)
        .i32c(31)
        .op(I::I32x4ShrU)
        .i32c(7)
        .op(I::I32x4Shl)
        .op(I::V128Or);
}

/// Four f32 lanes rounded to the nearest values of the fp8 format.
pub(super) fn round_v(fb: &mut Fb, d: DType) {
    let f = format(d);
    let (b, q, y) = (
        fb.local(ValType::V128),
        fb.local(ValType::V128),
        fb.local(ValType::V128),
    );
    fb.set(b);
    // The spacing of fp8 values at this magnitude: 2^(e - mant) for the
    // binade 2^e, and the subnormals' below the smallest normal.
    fb.get(b)
        .i32x4c(0x7FFF_FFFF)
        .op(I::V128And)
        .i32c(23)
        .op(I::I32x4ShrU)
        .i32x4c(127)
        .op(I::I32x4Sub)
        .i32x4c(1 - f.bias)
        .op(I::I32x4MaxS)
        .i32x4c(127 - f.mant)
        .op(I::I32x4Add)
        .i32c(23)
        .op(I::I32x4Shl)
        .set(q);
    // |x| / q is exact (a power of two), rounded to the nearest integer
    // with ties to even, and scaled back exactly.
    fb.get(b)
        .i32x4c(0x7FFF_FFFF)
        .op(I::V128And)
        .get(q)
        .op(I::F32x4Div)
        .op(I::F32x4Nearest)
        .get(q)
        .op(I::F32x4Mul)
        .set(y);
    fb.i32x4c(if f.inf.is_some() { F32_INF } else { F32_NAN })
        .get(y);
    fb.get(y)
        .i32x4c(f.max.to_bits() as i32)
        .op(I::F32x4Gt)
        .op(I::V128Bitselect);
    fb.get(b).i32x4c(i32::MIN).op(I::V128And).op(I::V128Or);
}

/// [`decode_v`] of one encoding (an i32 on the stack) to an f32.
pub(super) fn decode_s(fb: &mut Fb, d: DType) {
    fb.op(I::I32x4Splat);
    decode_v(fb, d);
    fb.op(I::F32x4ExtractLane(0));
}

/// [`encode_v`] of one f32 to its encoding (an i32).
pub(super) fn encode_s(fb: &mut Fb, d: DType) {
    fb.op(I::F32x4Splat);
    encode_v(fb, d);
    fb.op(I::I32x4ExtractLane(0));
}

/// [`round_v`] of one f32.
pub(super) fn round_s(fb: &mut Fb, d: DType) {
    fb.op(I::F32x4Splat);
    round_v(fb, d);
    fb.op(I::F32x4ExtractLane(0));
}

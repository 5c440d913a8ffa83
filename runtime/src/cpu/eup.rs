//! The EUP, the TPU's transcendental unit: exp, exp2, log, tanh and the
//! logistic function over whole f32 (or bf16) tiles, for the `eup` import.
//!
//! Each function is the four-lane Wasm helper of the lowering
//! (`lowering/src/wasm/math/simd.rs`) step for step: the same constants
//! (`pk_lowering::wasm::cephes`), the same operations in the same order,
//! pseudo-min/max where it clamps, no fused multiply-add. Every step is an IEEE operation rounded once, so
//! a tile's lanes get the same bits here as in Wasm, whatever the host's
//! SIMD width (`tests/cpu_eup.rs` checks this bit for bit). The code is
//! written per lane, branch-free, and compiled once per x86 SIMD level
//! (AVX-512, AVX2, baseline); the widest one the host has runs.

use pk_lowering::wasm::abi::{EupFn, EUP_BF16};
use pk_lowering::wasm::cephes::*;

const LOG2E: f32 = std::f32::consts::LOG2_E;

/// Wasm's `f32x4.pmax`: `a < b ? b : a`.
#[inline(always)]
fn pmax(a: f32, b: f32) -> f32 {
    if a < b {
        b
    } else {
        a
    }
}

/// Wasm's `f32x4.pmin`: `b < a ? b : a`.
#[inline(always)]
fn pmin(a: f32, b: f32) -> f32 {
    if b < a {
        b
    } else {
        a
    }
}

/// Wasm's `v128.bitselect` of one lane: `m` all ones picks `a`, zero `b`.
#[inline(always)]
fn pick(m: bool, a: f32, b: f32) -> f32 {
    if m {
        a
    } else {
        b
    }
}

#[inline(always)]
fn horner(x: f32, c: &[f32]) -> f32 {
    let mut p = c[0];
    for &k in &c[1..] {
        p = p * x + k;
    }
    p
}

/// `p 2^n` in two steps (see the lowering's `scale2`).
#[inline(always)]
fn scale2(p: f32, n: i32) -> f32 {
    let h = n >> 1;
    let a = f32::from_bits((h.wrapping_add(127) << 23) as u32);
    let b = f32::from_bits((n.wrapping_sub(h).wrapping_add(127) << 23) as u32);
    p * a * b
}

/// `(nearest(x s), the same as an integer)` for |x s| < 2^22.
#[inline(always)]
fn periods(x: f32, s: f32) -> (f32, i32) {
    let y = if s == 1.0 { x } else { x * s };
    let t = y + ROUNDER;
    let n = t - ROUNDER;
    let ni = (t.to_bits() as i32).wrapping_sub(ROUNDER.to_bits() as i32);
    (n, ni)
}

#[inline(always)]
fn exp(x: f32) -> f32 {
    let x = pmin(pmax(x, EXP_RANGE.0), EXP_RANGE.1);
    let (n, ni) = periods(x, LOG2E);
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let z = r * r;
    let p = horner(r, &EXP_POLY);
    scale2(p * z + r + 1.0, ni)
}

#[inline(always)]
fn exp2(x: f32) -> f32 {
    let x = pmin(pmax(x, EXP2_RANGE.0), EXP2_RANGE.1);
    let (n, ni) = periods(x, 1.0);
    let r = x - n;
    let p = horner(r, &EXP2_POLY);
    scale2(p * r + 1.0, ni)
}

#[inline(always)]
fn log(x: f32) -> f32 {
    let small = x < f32::MIN_POSITIVE;
    let xs = pick(small, x * 8_388_608.0, x);
    let bits = xs.to_bits() as i32;
    let mut e = (((bits as u32) >> 23) & 0xff) as i32 - 126 + if small { -23 } else { 0 };
    let m = f32::from_bits(((bits & 0x807F_FFFFu32 as i32) | 0x3F00_0000) as u32);
    let lt = m < std::f32::consts::FRAC_1_SQRT_2;
    e += if lt { -1 } else { 0 };
    let m = (m + pick(lt, m, 0.0)) - 1.0;
    let z = m * m;
    let mut y = horner(m, &LOG_POLY) * m * z;
    let fe = e as f32;
    y = ((y + fe * LN2_LO) - z * 0.5) + m + fe * LN2_HI;
    let y = pick(x < 0.0, f32::NAN, y);
    let y = pick(x == 0.0, f32::NEG_INFINITY, y);
    let y = pick(x == f32::INFINITY, f32::INFINITY, y);
    pick(x.is_nan(), x, y)
}

#[inline(always)]
fn tanh(x: f32) -> f32 {
    let a = f32::from_bits(x.to_bits() & 0x7FFF_FFFF);
    let z = x * x;
    let small = horner(z, &TANH_POLY) * z * x + x;
    let t = 1.0 - 2.0 / (exp(a + a) + 1.0);
    let large = f32::from_bits((t.to_bits() & 0x7FFF_FFFF) | (x.to_bits() & 0x8000_0000));
    let r = pick(a < TANH_SMALL, small, large);
    pick(a < TANH_TINY, x, r)
}

#[inline(always)]
fn logistic(x: f32) -> f32 {
    let e = exp(-f32::from_bits(x.to_bits() & 0x7FFF_FFFF));
    let d = e + 1.0;
    pick(x >= 0.0, 1.0 / d, e / d)
}

/// Wasm's `round_bf16_v` of one lane: to the nearest bf16, ties to even;
/// NaN stays NaN with its quiet bit set.
#[inline(always)]
fn round_bf16(x: f32) -> f32 {
    let b = x.to_bits();
    let r = b.wrapping_add(0x7FFF).wrapping_add((b >> 16) & 1);
    let r = if x.is_nan() { b | 0x40_0000 } else { r };
    f32::from_bits(r & 0xFFFF_0000)
}

const CHUNK: usize = 64;

/// Applies `f` to `lanes` little-endian f32s at byte `s` of `mem`, writing
/// them at byte `d`, `CHUNK` lanes at a time (so that the per-lane code
/// vectorizes). Each chunk is read whole before it is written, and chunks
/// go backwards when the destination starts after an overlapping source,
/// so any overlap reads every lane before it is overwritten.
#[inline(always)]
fn map(mem: &mut [u8], s: usize, d: usize, lanes: usize, f: impl Fn(f32) -> f32) {
    let chunks = lanes.div_ceil(CHUNK);
    for c in 0..chunks {
        let c = if d > s { chunks - 1 - c } else { c };
        let first = c * CHUNK;
        let n = CHUNK.min(lanes - first);
        let (from, to) = (s + first * 4, d + first * 4);
        if n == CHUNK {
            // Fixed sizes: plain vector loads and stores.
            let mut buf = [0f32; CHUNK];
            let src: &[u8; CHUNK * 4] = mem[from..from + CHUNK * 4]
                .try_into()
                .unwrap_or(&[0; CHUNK * 4]);
            for (i, l) in buf.iter_mut().enumerate() {
                *l = f(f32::from_le_bytes([
                    src[4 * i],
                    src[4 * i + 1],
                    src[4 * i + 2],
                    src[4 * i + 3],
                ]));
            }
            let dst: &mut [u8] = &mut mem[to..to + CHUNK * 4];
            for (l, b) in buf.iter().zip(dst.chunks_exact_mut(4)) {
                b.copy_from_slice(&l.to_le_bytes());
            }
        } else {
            for i in 0..n {
                let b = &mem[from + 4 * i..from + 4 * i + 4];
                let y = f(f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                mem[to + 4 * i..to + 4 * i + 4].copy_from_slice(&y.to_le_bytes());
            }
        }
    }
}

/// One instantiation of [`map`] per function (a call through a function
/// pointer would not vectorize).
#[inline(always)]
fn run(func: EupFn, bf16: bool, mem: &mut [u8], s: usize, d: usize, lanes: usize) {
    macro_rules! each {
        ($($v:ident => $f:ident),*) => {
            match (func, bf16) {
                $(
                    (EupFn::$v, false) => map(mem, s, d, lanes, $f),
                    (EupFn::$v, true) => map(mem, s, d, lanes, |x| round_bf16($f(x))),
                )*
            }
        };
    }
    each!(Exp => exp, Exp2 => exp2, Log => log, Tanh => tanh, Logistic => logistic);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512bw,avx512vl")]
unsafe fn run_avx512(func: EupFn, bf16: bool, mem: &mut [u8], s: usize, d: usize, lanes: usize) {
    run(func, bf16, mem, s, d, lanes)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2(func: EupFn, bf16: bool, mem: &mut [u8], s: usize, d: usize, lanes: usize) {
    run(func, bf16, mem, s, d, lanes)
}

/// Runs an `eup(fn, src, dst, lanes)` call on an instance's memory.
pub(crate) fn apply(
    mem: &mut [u8],
    code: i32,
    src: u32,
    dst: u32,
    lanes: u32,
) -> Result<(), String> {
    let func =
        EupFn::from_code(code & 0xff).ok_or_else(|| format!("unknown eup function {code}"))?;
    let bf16 = code & EUP_BF16 != 0;
    let (s, d, n) = (src as usize, dst as usize, lanes as usize);
    if s + n * 4 > mem.len() || d + n * 4 > mem.len() {
        return Err(format!(
            "eup on {lanes} lanes at {src:#x} -> {dst:#x} leaves the memory"
        ));
    }
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512dq") && has!("avx512bw") && has!("avx512vl") {
            // SAFETY: the host has the features the function is built for.
            unsafe { run_avx512(func, bf16, mem, s, d, n) };
            return Ok(());
        }
        if has!("avx2") {
            // SAFETY: as above.
            unsafe { run_avx2(func, bf16, mem, s, d, n) };
            return Ok(());
        }
    }
    run(func, bf16, mem, s, d, n);
    Ok(())
}

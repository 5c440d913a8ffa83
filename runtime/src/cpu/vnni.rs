//! The integer MXU on the host's int8 dot-product instructions (AVX-512
//! VNNI): an int8 x int8 -> i32 GEMM, exact, wrapping like the chip's i32
//! accumulator.
//!
//! `vpdpbusd` multiplies unsigned by signed bytes, four products per i32
//! lane. The left operand is biased by 128 into `u8` and the bias taken off
//! afterwards: `sum (a + 128) b = sum a b + 128 sum b`, all in wrapping i32,
//! so the result is the exact sum modulo 2^32. Operands arrive as int8
//! values held in i32 lanes; any value outside `i8` sends the dot back to
//! the general routes, having written nothing.

use super::mxu::IntOperand;

/// Rows and columns of the register tile: 8 rows x 3 vectors of 16 i32.
const MR: usize = 8;
const NR: usize = 48;
/// Groups of four K (one `vpdpbusd` step) per cache block: 512 of K, so a
/// packed column panel (`NR x 512` bytes) stays in L1 across a row sweep.
const KCG: usize = 128;

/// Host buffers of the int8 GEMM, kept across calls.
#[derive(Default)]
pub(crate) struct Scratch {
    /// op(lhs) + 128 as bytes, `mp x kp`, padded with 128 (a = 0): padded
    /// rows are computed and dropped, padded K meets b = 0.
    a: Vec<u8>,
    /// op(rhs) in column panels of `NR`: `[n / NR][kp / 4][NR][4]` bytes.
    b: Vec<u8>,
    /// Column sums of op(rhs).
    colsum: Vec<i32>,
    /// The `mp x np` product of the padded operands.
    c: Vec<i32>,
}

fn has_vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Row `s` of a stored operand: its i32 elements as bytes.
fn stored_row<'m>(mem: &'m [u8], &(at, (_, cols), ld, _): &IntOperand, s: usize) -> &'m [u8] {
    &mem[at + 4 * s * ld..at + 4 * (s * ld + cols as usize)]
}

/// Converts stored i32 lanes to bytes with `f`; false when one is outside
/// `i8`. Branch-free, so that it vectorizes.
#[inline(always)]
fn bytes_of(
    row: &[u8],
    out: impl Iterator<Item = impl std::ops::DerefMut<Target = u8>>,
    f: impl Fn(i32) -> u8,
) -> bool {
    let mut ok = true;
    for (mut o, v) in out.zip(row.chunks_exact(4)) {
        let v = i32::from_le_bytes([v[0], v[1], v[2], v[3]]);
        ok &= (v.wrapping_add(128) as u32) < 256;
        *o = f(v);
    }
    ok
}

/// Packs op(lhs) (`m x k`) as `m` rows of `kp` bytes, each value plus 128.
fn pack_lhs(mem: &[u8], op: &IntOperand, kp: usize, a: &mut [u8]) -> bool {
    let biased = |v: i32| (v as u8) ^ 0x80;
    let (rows, trans) = (op.1 .0 as usize, op.3);
    let mut ok = true;
    for s in 0..rows {
        let row = stored_row(mem, op, s);
        ok &= if trans {
            // Stored row `s` is column `s` of op(lhs).
            bytes_of(row, a[s..].iter_mut().step_by(kp), biased)
        } else {
            bytes_of(row, a[s * kp..].iter_mut(), biased)
        };
    }
    ok
}

/// Packs op(rhs) (`k x n`) into column panels of `NR`, four K of a column
/// together (`[n / NR][kp / 4][NR][4]`), and sums its columns.
fn pack_rhs(mem: &[u8], op: &IntOperand, kp: usize, b: &mut [u8], colsum: &mut [i32]) -> bool {
    let (rows, trans) = (op.1 .0 as usize, op.3);
    if !trans {
        return pack_rhs_rows(mem, op, kp, b, colsum);
    }
    let mut ok = true;
    for (s, sum) in colsum[..rows].iter_mut().enumerate() {
        let row = stored_row(mem, op, s);
        // Stored row `s` is column `j = s`: its K run along the column's
        // four-byte slots, one slot per group of four.
        let (jp, jj) = (s / NR, s % NR);
        let col = &mut b[jp * kp * NR + jj * 4..];
        let slots = col.chunks_mut(NR * 4).flat_map(|g| g[..4].iter_mut());
        ok &= bytes_of(row, slots, |v| v as u8);
        // In range, the i32 values are the int8 values.
        *sum = row
            .chunks_exact(4)
            .map(|v| i32::from_le_bytes([v[0], v[1], v[2], v[3]]))
            .fold(0i32, i32::wrapping_add);
    }
    ok
}

/// [`pack_rhs`] for op(rhs) stored as it is (stored row `p` is K index
/// `p`): four stored rows at a time become one four-byte word per column,
/// the low byte from the first row, branch-free so that it vectorizes.
fn pack_rhs_rows(mem: &[u8], op: &IntOperand, kp: usize, b: &mut [u8], colsum: &mut [i32]) -> bool {
    let (rows, cols) = (op.1 .0 as usize, op.1 .1 as usize);
    let zero = vec![0u8; 4 * cols];
    let mut ok = true;
    for g in 0..kp / 4 {
        let r = [0, 1, 2, 3].map(|q| {
            let p = 4 * g + q;
            if p < rows {
                stored_row(mem, op, p)
            } else {
                &zero[..]
            }
        });
        for (jp, j0) in (0..cols).step_by(NR).enumerate() {
            let w = NR.min(cols - j0);
            let dst = &mut b[jp * kp * NR + g * NR * 4..][..4 * w];
            let src = [0, 1, 2, 3].map(|q| &r[q][4 * j0..4 * (j0 + w)]);
            let sums = &mut colsum[j0..j0 + w];
            for jj in 0..w {
                let v = src.map(|r| {
                    let x = &r[4 * jj..4 * jj + 4];
                    i32::from_le_bytes([x[0], x[1], x[2], x[3]])
                });
                ok &= v
                    .iter()
                    .fold(true, |o, &x| o & ((x.wrapping_add(128) as u32) < 256));
                let word = (v[0] as u32 & 0xff)
                    | (v[1] as u32 & 0xff) << 8
                    | (v[2] as u32 & 0xff) << 16
                    | (v[3] as u32) << 24;
                dst[4 * jj..4 * jj + 4].copy_from_slice(&word.to_le_bytes());
                // In range, the i32 values are the int8 values.
                sums[jj] = v.iter().fold(sums[jj], |c, &x| c.wrapping_add(x));
            }
        }
    }
    ok
}

/// `out[m x n] (+)= op(lhs) @ op(rhs)` for int8 values in i32 lanes, on
/// the int8 dot-product instructions. Returns false, having written
/// nothing, when the host lacks them, K is empty or a value is outside
/// `i8`.
pub(crate) fn gemm(
    mem: &mut [u8],
    (m, n, k): (usize, usize, usize),
    lhs: IntOperand,
    rhs: IntOperand,
    out: usize,
    accumulate: bool,
    s: &mut Scratch,
) -> bool {
    if k == 0 || m == 0 || n == 0 || !has_vnni() {
        return false;
    }
    let kp = k.next_multiple_of(4);
    let (mp, np) = (m.next_multiple_of(MR), n.next_multiple_of(NR));
    s.a.clear();
    s.a.resize(mp * kp, 128);
    s.b.clear();
    s.b.resize(np * kp, 0);
    s.colsum.clear();
    s.colsum.resize(n, 0);
    if !pack_lhs(mem, &lhs, kp, &mut s.a) || !pack_rhs(mem, &rhs, kp, &mut s.b, &mut s.colsum) {
        return false;
    }
    s.c.clear();
    s.c.resize(mp * np, 0);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the host has AVX-512 F, BW and VNNI (checked above); the
    // buffers have the padded sizes the sweep reads and writes.
    unsafe {
        sweep(&s.a, &s.b, &mut s.c, (mp, np, kp))
    };
    let dst = &mut mem[out..out + 4 * m * n];
    for (i, row) in dst.chunks_exact_mut(4 * n).enumerate() {
        let c = &s.c[i * np..i * np + n];
        for ((o, &v), &cs) in row.chunks_exact_mut(4).zip(c).zip(&s.colsum) {
            // Take off the bias: 128 times the column sum.
            let mut v = v.wrapping_sub(cs.wrapping_mul(128));
            if accumulate {
                v = v.wrapping_add(i32::from_le_bytes([o[0], o[1], o[2], o[3]]));
            }
            o.copy_from_slice(&v.to_le_bytes());
        }
    }
    true
}

/// `c += a @ b` over the padded packed operands, a K block at a time: each
/// column panel's block is read from L1 by every row tile.
///
/// # Safety
/// The host has AVX-512 F, BW and VNNI; `a` holds `mp x kp`, `b` `np x kp`
/// and `c` `mp x np`, with `mp`, `np` and `kp` multiples of `MR`, `NR` and 4.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn sweep(a: &[u8], b: &[u8], c: &mut [i32], (mp, np, kp): (usize, usize, usize)) {
    debug_assert!(a.len() >= mp * kp && b.len() >= np * kp && c.len() >= mp * np);
    let groups = kp / 4;
    for g0 in (0..groups).step_by(KCG) {
        let gl = KCG.min(groups - g0);
        for jp in 0..np / NR {
            let panel = jp * kp * NR + g0 * NR * 4;
            for ib in 0..mp / MR {
                // SAFETY: tile (ib, jp) and K groups g0..g0 + gl lie inside
                // the buffers (the caller's sizes).
                unsafe {
                    tile(
                        a.as_ptr().add(ib * MR * kp + 4 * g0),
                        kp,
                        b.as_ptr().add(panel),
                        gl,
                        c.as_mut_ptr().add(ib * MR * np + jp * NR),
                        np,
                    )
                };
            }
        }
    }
}

/// One `MR x NR` tile: `c[r][..] += sum over groups of a[r][4g..4g+4] .
/// b[g][..][0..4]`, the accumulators in registers.
///
/// # Safety
/// AVX-512 F, BW and VNNI; `a` has `MR` rows of stride `lda` with `4 *
/// groups` bytes each, `b` holds `groups * NR * 4` bytes, `c` has `MR` rows
/// of stride `ldc` with `NR` i32 each.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn tile(a: *const u8, lda: usize, b: *const u8, groups: usize, c: *mut i32, ldc: usize) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_si512(); 3]; MR];
    // SAFETY (all reads and writes): inside the ranges of the contract.
    unsafe {
        for g in 0..groups {
            let bg = b.add(g * NR * 4) as *const __m512i;
            let bv = [
                _mm512_loadu_si512(bg),
                _mm512_loadu_si512(bg.add(1)),
                _mm512_loadu_si512(bg.add(2)),
            ];
            for (r, acc) in acc.iter_mut().enumerate() {
                let four = (a.add(r * lda + 4 * g) as *const i32).read_unaligned();
                let av = _mm512_set1_epi32(four);
                for (q, acc) in acc.iter_mut().enumerate() {
                    *acc = _mm512_dpbusd_epi32(*acc, av, bv[q]);
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            for (q, &v) in acc.iter().enumerate() {
                let p = c.add(r * ldc + 16 * q) as *mut __m512i;
                _mm512_storeu_si512(p, _mm512_add_epi32(_mm512_loadu_si512(p), v));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::mxu::{assert_int_sums, int_problem};
    use super::*;

    /// Deterministic int8 values, the extremes among them.
    fn val(seed: usize) -> i32 {
        let x = seed.wrapping_mul(2654435761) >> 7;
        match x % 17 {
            0 => -128,
            1 => 127,
            _ => (x % 256) as i32 - 128,
        }
    }

    /// Shapes off every tile edge (m not a multiple of 8, n of 48, k of 4
    /// or of the 512 K block), every transpose, accumulating into outputs
    /// near the wrap: equal to the i64 sum taken modulo 2^32.
    #[test]
    fn int8_gemm_matches_the_wide_sum() {
        if !has_vnni() {
            eprintln!("no AVX-512 VNNI on this host: nothing to test");
            return;
        }
        let mut s = Scratch::default();
        for (m, n, k) in [(1, 1, 1), (9, 50, 7), (16, 96, 516), (13, 17, 1100)] {
            for t in [(false, false), (true, false), (false, true), (true, true)] {
                let a = |i: usize, p: usize| val(i * 7919 + p * 31 + 1);
                let b = |p: usize, j: usize| val(p * 104729 + j * 17 + 2);
                let init = |x: usize| i32::MAX - 5000 + 3 * x as i32;
                let (mut mem, l, r, o) = int_problem((m, n, k), t, a, b, init);
                assert!(gemm(&mut mem, (m, n, k), l, r, o, true, &mut s));
                assert_int_sums(
                    &mem,
                    o,
                    (m, n, k),
                    a,
                    b,
                    init,
                    &format!("{m}x{n}x{k} {t:?}"),
                );
            }
        }
    }

    /// A value outside int8 leaves the dot to the general routes, the
    /// output untouched.
    #[test]
    fn wide_values_are_left_alone() {
        let mut mem = vec![0u8; 64];
        mem[0..4].copy_from_slice(&300i32.to_le_bytes());
        mem[16..20].copy_from_slice(&2i32.to_le_bytes());
        mem[32..36].copy_from_slice(&7i32.to_le_bytes());
        let op = |at| (at, (1u32, 1u32), 1usize, false);
        assert!(!gemm(
            &mut mem,
            (1, 1, 1),
            op(0),
            op(16),
            32,
            false,
            &mut Scratch::default()
        ));
        assert_eq!(i32::from_le_bytes(mem[32..36].try_into().unwrap()), 7);
    }
}

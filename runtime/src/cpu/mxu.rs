//! The MXU: the `dot` host import, run directly on the instance's linear
//! memory (no copies of the operands).
//!
//! Numerics follow the TPU's matrix unit: float inputs (f32, or bf16 held
//! as f32 lanes) multiply exactly into an f32 accumulator, integer inputs
//! (int8 values held as i32 lanes) into an i32 accumulator that wraps.
//! bf16 x bf16 products have at most 16 significant bits, so f32 products
//! are exact; only the summation order differs from the chip, which is
//! what the test tolerances allow for.

use super::array::HostArray;
use pk_lowering::wasm::abi::{DotKind, DotSite};
use std::sync::Arc;

/// Byte range `[start, end)` of a stored matrix of `rows x cols` with row
/// stride `ld` (elements of `eb` bytes) at `addr`.
fn extent(start: usize, rows: u32, cols: u32, ld: u32, eb: usize) -> (usize, usize) {
    let elems = if rows == 0 || cols == 0 {
        0
    } else {
        (rows as usize - 1) * ld as usize + cols as usize
    };
    (start, start + elems * eb)
}

/// Widens a stored bf16 matrix (`rows x cols`, row stride `ld`, at byte
/// `at`) into dense f32 rows in `buf`: exactly, a bf16 is the top half of
/// an f32.
fn widen(mem: &[u8], at: usize, rows: usize, cols: usize, ld: usize, buf: &mut Vec<f32>) {
    buf.resize(rows * cols, 0.0);
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the host has AVX2.
            unsafe { widen_avx2(mem, at, cols, ld, buf) };
            return;
        }
    }
    widen_rows(mem, at, cols, ld, buf);
}

#[inline(always)]
fn widen_rows(mem: &[u8], at: usize, cols: usize, ld: usize, buf: &mut [f32]) {
    for (i, out) in buf.chunks_exact_mut(cols).enumerate() {
        let row = &mem[at + 2 * i * ld..at + 2 * (i * ld + cols)];
        for (o, h) in out.iter_mut().zip(row.chunks_exact(2)) {
            *o = f32::from_bits(u32::from(u16::from_le_bytes([h[0], h[1]])) << 16);
        }
    }
}

/// [`widen_rows`] compiled for AVX2 (the loop vectorizes to 8 lanes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn widen_avx2(mem: &[u8], at: usize, cols: usize, ld: usize, buf: &mut [f32]) {
    widen_rows(mem, at, cols, ld, buf)
}

/// A widened copy of one bf16 operand, with what it holds when it may be
/// kept: (ref, the ref's copy count, address, rows, cols, ld), for an
/// operand whose ref the kernel never writes.
#[derive(Default)]
struct Widened {
    buf: Vec<f32>,
    key: Option<[u64; 6]>,
}

/// The block a ref that only the MXU reads holds, left in the input array
/// instead of being copied into VMEM (see `RefSlot::mxu_only`).
#[derive(Clone)]
pub(crate) struct Direct {
    pub array: Arc<HostArray>,
    /// Byte offset of the block's first element in the array.
    pub at: usize,
    /// The array's row stride (elements).
    pub ld: u32,
    /// The ref's VMEM address: a dot reads the block when it names this.
    pub vmem: u32,
}

/// Host buffers an instance keeps for operands the MXU widens.
#[derive(Default)]
pub(crate) struct Scratch {
    lhs: Widened,
    rhs: Widened,
    /// Per ref, how many times the host has copied a block into it (the
    /// grid runner counts).
    copies: Vec<u64>,
    /// Per ref, the block the MXU reads from the array instead of VMEM.
    direct: Vec<Option<Direct>>,
}

impl Scratch {
    pub fn new(refs: usize) -> Scratch {
        Scratch {
            copies: vec![0; refs],
            direct: vec![None; refs],
            ..Default::default()
        }
    }

    /// Notes that the host wrote ref `r`'s VMEM buffer.
    pub fn copied(&mut self, r: usize) {
        if let Some(c) = self.copies.get_mut(r) {
            *c += 1;
        }
        if let Some(d) = self.direct.get_mut(r) {
            *d = None;
        }
    }

    /// Makes ref `r` stand for a block of an input array: the MXU reads
    /// the block there, and nothing else reads the ref.
    pub fn read_from_array(&mut self, r: usize, block: Direct) {
        self.copied(r);
        if let Some(d) = self.direct.get_mut(r) {
            *d = Some(block);
        }
    }
}

/// Where the MXU reads one operand: `bytes[at..]`, rows `ld` elements
/// apart; `in_memory` when `bytes` is linear memory.
struct Source<'m> {
    bytes: &'m [u8],
    at: usize,
    ld: u32,
    in_memory: bool,
}

/// Where an operand at linear-memory address `addr` (of ref `r`, row
/// stride `ld`) is read: linear memory, or the input array that ref's
/// block was left in.
fn source<'m>(
    mem: &'m [u8],
    direct: &'m [Option<Direct>],
    r: Option<u32>,
    addr: u32,
    ld: u32,
) -> Result<Source<'m>, String> {
    match r.and_then(|r| direct.get(r as usize)?.as_ref()) {
        None => Ok(Source {
            bytes: mem,
            at: addr as usize,
            ld,
            in_memory: true,
        }),
        Some(b) if b.vmem == addr => Ok(Source {
            bytes: &b.array.data,
            at: b.at,
            ld: b.ld,
            in_memory: false,
        }),
        Some(_) => Err(format!(
            "dot operand at {addr} is not the whole ref whose block stays in the array"
        )),
    }
}

impl Widened {
    /// Widens the stored bf16 matrix `dims` of `src` into dense f32 rows,
    /// unless the copy already held is of the same block of a ref (`r`)
    /// the kernel never writes and the host has not filled since.
    fn of(&mut self, src: &Source, dims: (u32, u32), r: Option<u32>, copies: &[u64]) -> *const f32 {
        let key = r.and_then(|r| {
            let c = *copies.get(r as usize)?;
            Some([
                u64::from(r),
                c,
                src.at as u64,
                u64::from(dims.0),
                u64::from(dims.1),
                u64::from(src.ld),
            ])
        });
        if key.is_none() || key != self.key {
            let (rows, cols) = (dims.0 as usize, dims.1 as usize);
            widen(
                src.bytes,
                src.at,
                rows,
                cols,
                src.ld as usize,
                &mut self.buf,
            );
            self.key = key;
        }
        self.buf.as_ptr()
    }
}

/// `out[m x n] = op(lhs) op(rhs)` on linear memory.
pub(crate) fn dot(
    mem: &mut [u8],
    d: &DotSite,
    lhs: u32,
    rhs: u32,
    out: u32,
    scratch: &mut Scratch,
) -> Result<(), String> {
    let eb = |bf16: bool| if bf16 { 2 } else { 4 };
    let o = extent(out as usize, d.m, d.n, d.n, 4);
    if o.1 > mem.len() || !o.0.is_multiple_of(4) {
        return Err(format!("dot out range {}..{} is outside memory", o.0, o.1));
    }
    if (d.lhs_bf16 || d.rhs_bf16) && d.kind != DotKind::F32 {
        return Err("bf16 operands of an integer dot".into());
    }
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    // Operands are read (and bf16 ones widened into host buffers, a dense
    // copy: row stride = columns) before the output is written.
    // Each operand's f32 rows: a host buffer or array (`Some`), or linear
    // memory at `offsets` (pointers into it are taken after the reads, from
    // the one mutable pointer the output is written through).
    let mut ptrs: [Option<*const f32>; 2] = [None; 2];
    let mut lds = [0u32; 2];
    let mut offsets = [0usize; 2];
    let mut in_memory = true;
    for (side, (addr, r, ld, dims, bf16)) in [
        (lhs, d.lhs_ref, d.lhs_ld, d.lhs_dims, d.lhs_bf16),
        (rhs, d.rhs_ref, d.rhs_ld, d.rhs_dims, d.rhs_bf16),
    ]
    .into_iter()
    .enumerate()
    {
        let what = ["lhs", "rhs"][side];
        let src = source(mem, &scratch.direct, r, addr, ld)?;
        let (s, e) = extent(src.at, dims.0, dims.1, src.ld, eb(bf16));
        let aligned = (src.bytes.as_ptr() as usize + s).is_multiple_of(eb(bf16));
        if e > src.bytes.len() || !aligned {
            return Err(format!("dot {what} range {s}..{e} is outside memory"));
        }
        if src.in_memory && s < o.1 && o.0 < e {
            return Err("dot output overlaps an operand".into());
        }
        in_memory &= src.in_memory;
        offsets[side] = s;
        (ptrs[side], lds[side]) = if bf16 {
            let w = if side == 0 {
                &mut scratch.lhs
            } else {
                &mut scratch.rhs
            };
            (Some(w.of(&src, dims, r, &scratch.copies)), dims.1)
        } else if src.in_memory {
            (None, src.ld)
        } else {
            // SAFETY: in bounds of the array (checked above).
            (
                Some(unsafe { src.bytes.as_ptr().add(s) as *const f32 }),
                src.ld,
            )
        };
    }
    let [lhs_ld, rhs_ld] = lds;
    // Strides (elements) of op(lhs) as m x k and op(rhs) as k x n.
    let (l_rs, l_cs) = if d.trans_lhs {
        (1, lhs_ld as isize)
    } else {
        (lhs_ld as isize, 1)
    };
    let (r_rs, r_cs) = if d.trans_rhs {
        (1, rhs_ld as isize)
    } else {
        (rhs_ld as isize, 1)
    };
    let base = mem.as_mut_ptr();
    // SAFETY: in bounds of `mem` (checked above).
    let [lhs_ptr, rhs_ptr] =
        [0, 1].map(|i| ptrs[i].unwrap_or_else(|| unsafe { base.add(offsets[i]) as *const f32 }));
    match d.kind {
        DotKind::F32 => {
            if k == 0 {
                if !d.accumulate {
                    mem[o.0..o.1].fill(0);
                }
                return Ok(());
            }
            // SAFETY: the output range was checked to lie inside `mem`,
            // which is borrowed mutably for the whole call, 4-byte aligned;
            // each operand range was checked to lie, 4-byte aligned, inside
            // `mem` (not overlapping the output), a scratch buffer, or an
            // input array that nothing writes during the run.
            unsafe {
                gemm::gemm(
                    m,
                    n,
                    k,
                    base.add(o.0) as *mut f32,
                    1,
                    n as isize,
                    d.accumulate,
                    lhs_ptr,
                    l_cs,
                    l_rs,
                    rhs_ptr,
                    r_cs,
                    r_rs,
                    // dst = alpha * dst + beta * lhs @ rhs: alpha = 1 adds
                    // the product to what `out` holds (`acc += dot(..)`).
                    if d.accumulate { 1.0 } else { 0.0 },
                    1.0,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
        }
        DotKind::I32 => {
            // The runner leaves only float blocks in their arrays.
            if !in_memory {
                return Err("an integer dot operand outside linear memory".into());
            }
            let [l0, r0] = offsets;
            let read = |mem: &[u8], start: usize, i: usize| -> i32 {
                let p = start + 4 * i;
                i32::from_le_bytes([mem[p], mem[p + 1], mem[p + 2], mem[p + 3]])
            };
            // Gather op(rhs) as a contiguous k x n matrix, then accumulate
            // rows (a vectorisable inner loop over n).
            let mut b = vec![0i32; k * n];
            for p in 0..k {
                for j in 0..n {
                    b[p * n + j] = read(mem, r0, p * r_rs as usize + j * r_cs as usize);
                }
            }
            let mut row = vec![0i32; n];
            for i in 0..m {
                if d.accumulate {
                    for (j, acc) in row.iter_mut().enumerate() {
                        *acc = read(mem, o.0, i * n + j);
                    }
                } else {
                    row.fill(0);
                }
                for p in 0..k {
                    let a = read(mem, l0, i * l_rs as usize + p * l_cs as usize);
                    for (acc, &bv) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                        *acc = acc.wrapping_add(a.wrapping_mul(bv));
                    }
                }
                for (j, v) in row.iter().enumerate() {
                    let p = o.0 + 4 * (i * n + j);
                    mem[p..p + 4].copy_from_slice(&v.to_le_bytes());
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(m: u32, n: u32, k: u32, tl: bool, tr: bool, kind: DotKind) -> DotSite {
        let (ld, rd) = (
            if tl { (k, m) } else { (m, k) },
            if tr { (n, k) } else { (k, n) },
        );
        DotSite {
            site: 0,
            m,
            n,
            k,
            trans_lhs: tl,
            trans_rhs: tr,
            lhs_ld: ld.1,
            rhs_ld: rd.1,
            lhs_dims: ld,
            rhs_dims: rd,
            kind,
            lhs_dtype: "f32".into(),
            rhs_dtype: "f32".into(),
            out_dtype: "f32".into(),
            accumulate: false,
            lhs_bf16: false,
            rhs_bf16: false,
            lhs_ref: None,
            rhs_ref: None,
        }
    }

    /// A dot with fresh host buffers.
    fn run(mem: &mut [u8], d: &DotSite, lhs: u32, rhs: u32, out: u32) -> Result<(), String> {
        dot(mem, d, lhs, rhs, out, &mut Scratch::default())
    }

    fn put(mem: &mut [u8], at: usize, v: &[f32]) {
        for (i, x) in v.iter().enumerate() {
            mem[at + 4 * i..at + 4 * i + 4].copy_from_slice(&x.to_le_bytes());
        }
    }

    fn get(mem: &[u8], at: usize, n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| f32::from_le_bytes(mem[at + 4 * i..at + 4 * i + 4].try_into().unwrap()))
            .collect()
    }

    #[test]
    fn transposes_and_strides() {
        // a = [[1, 2, 3], [4, 5, 6]] (2 x 3), b = [[1, 0], [0, 1], [1, 1]].
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let at = [1.0, 4.0, 2.0, 5.0, 3.0, 6.0];
        let b = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        let bt = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0];
        let want = [4.0, 5.0, 10.0, 11.0];
        for (tl, tr) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut mem = vec![0u8; 256];
            put(&mut mem, 0, if tl { &at } else { &a });
            put(&mut mem, 64, if tr { &bt } else { &b });
            run(&mut mem, &site(2, 2, 3, tl, tr, DotKind::F32), 0, 64, 128).unwrap();
            assert_eq!(get(&mem, 128, 4), want, "{tl} {tr}");
        }
    }

    #[test]
    fn integer_products_wrap() {
        let mut mem = vec![0u8; 64];
        for (i, v) in [i32::MAX, 2].iter().enumerate() {
            mem[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
        for (i, v) in [2i32, 1].iter().enumerate() {
            mem[16 + 4 * i..20 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        run(
            &mut mem,
            &site(1, 1, 2, false, false, DotKind::I32),
            0,
            16,
            32,
        )
        .unwrap();
        let got = i32::from_le_bytes(mem[32..36].try_into().unwrap());
        assert_eq!(got, i32::MAX.wrapping_mul(2).wrapping_add(2));
    }

    #[test]
    fn rejects_ranges_outside_memory() {
        let mut mem = vec![0u8; 32];
        assert!(run(
            &mut mem,
            &site(2, 2, 2, false, false, DotKind::F32),
            0,
            16,
            24
        )
        .is_err());
    }

    /// `acc += a @ b`: the product is added to what the output holds, for
    /// floats and (wrapping) integers.
    #[test]
    fn accumulates_into_the_output() {
        let mut mem = vec![0u8; 256];
        put(&mut mem, 0, &[1.0, 2.0, 3.0, 4.0]);
        put(&mut mem, 64, &[1.0, 0.0, 0.0, 1.0]);
        put(&mut mem, 128, &[10.0, 20.0, 30.0, 40.0]);
        let acc = DotSite {
            accumulate: true,
            ..site(2, 2, 2, false, false, DotKind::F32)
        };
        run(&mut mem, &acc, 0, 64, 128).unwrap();
        assert_eq!(get(&mem, 128, 4), [11.0, 22.0, 33.0, 44.0]);

        let mut mem = vec![0u8; 64];
        let ints = |mem: &mut [u8], at: usize, v: &[i32]| {
            for (i, x) in v.iter().enumerate() {
                mem[at + 4 * i..at + 4 * i + 4].copy_from_slice(&x.to_le_bytes());
            }
        };
        ints(&mut mem, 0, &[3]);
        ints(&mut mem, 16, &[5]);
        ints(&mut mem, 32, &[i32::MAX]);
        let acc = DotSite {
            accumulate: true,
            ..site(1, 1, 1, false, false, DotKind::I32)
        };
        run(&mut mem, &acc, 0, 16, 32).unwrap();
        let got = i32::from_le_bytes(mem[32..36].try_into().unwrap());
        assert_eq!(got, i32::MAX.wrapping_add(15));
    }
}

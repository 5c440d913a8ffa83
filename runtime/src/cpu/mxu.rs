//! The MXU: the `dot` host import, run directly on the instance's linear
//! memory and on the input arrays that hold blocks only the MXU reads (no
//! copies of f32 operands; bf16 operands are widened a chunk at a time).
//!
//! Numerics follow the TPU's matrix unit: float inputs (f32, or bf16 held
//! as f32 lanes) multiply exactly into an f32 accumulator, integer inputs
//! (int8 values held as i32 lanes) into an i32 accumulator that wraps.
//! bf16 x bf16 products have at most 16 significant bits, so f32 products
//! are exact; only the summation order differs from the chip, which is
//! what the test tolerances allow for. Integer sums are exact: int8 dots run
//! on the host's int8 dot-product instructions where it has them
//! ([`super::vnni`]), else as exact f32 GEMMs over short K chunks, else in
//! a plain wrapping loop.

use super::buffers::Input;
use pk_lowering::wasm::abi::{DotKind, DotSite};

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

/// The K extent of one GEMM call. A bf16 operand's share of it is widened
/// into a host buffer just before the call, so that the widened rows are
/// still in cache when the GEMM reads them. f32 operands go through the
/// same calls, so f32 and bf16 operands of the same values give the same
/// bits.
const KC: usize = 256;

/// The block a ref that only the MXU reads holds, left in the input array
/// instead of being copied into VMEM (see `RefSlot::mxu_only`).
#[derive(Clone)]
pub(crate) struct Direct {
    pub array: Input,
    /// Byte offset of the block's first element in the array.
    pub at: usize,
    /// The array's row stride (elements).
    pub ld: u32,
    /// The ref's VMEM address: a dot reads the block when it names this.
    pub vmem: u32,
}

/// The block of an output array that stands for a ref only the host
/// writes (see `RefSlot::mxu_out`): the MXU and `fill` write it where it
/// lies, instead of in VMEM with a copy out afterwards.
pub(crate) struct DirectOut {
    /// The block's first element in the output array.
    pub ptr: *mut f32,
    /// The array's row stride (elements).
    pub ld: usize,
    pub rows: usize,
    pub cols: usize,
    /// The ref's VMEM address: a dot or fill naming it writes the block.
    pub vmem: u32,
    /// Nothing has written the block yet in this visit, so it reads as
    /// poison: it is poisoned first when a dot adds to it, or when it is
    /// written back unwritten.
    pub fresh: bool,
}

// SAFETY: the pointer is into an output buffer that outlives the run; the
// runner claimed the block for its unit (no other unit writes it) and
// drops the `DirectOut` when it writes the block back, before the run
// ends. An instance moves between threads only between runs.
unsafe impl Send for DirectOut {}

impl DirectOut {
    /// Stores the 32-bit pattern `bits` into every element of the block.
    pub fn fill(&mut self, bits: u32) {
        let v = f32::from_bits(bits);
        for r in 0..self.rows {
            // SAFETY: row `r` of the block lies inside the output array,
            // which the runner checked when it placed the block, and only
            // this unit writes it.
            unsafe { std::slice::from_raw_parts_mut(self.ptr.add(r * self.ld), self.cols) }.fill(v);
        }
        self.fresh = false;
    }
}

/// Host state of an instance's MXU.
#[derive(Default)]
pub(crate) struct Scratch {
    /// Widened bf16 chunks of the two operands.
    lhs: Vec<f32>,
    rhs: Vec<f32>,
    /// Exact f32 sums of one K chunk of an integer dot.
    int_acc: Vec<f32>,
    /// Buffers of the int8 dot-product route.
    int8: super::vnni::Scratch,
    /// Per ref, the block the MXU reads from the array instead of VMEM.
    direct: Vec<Option<Direct>>,
    /// Per ref, the output block the MXU writes in the array instead of
    /// VMEM.
    direct_out: Vec<Option<DirectOut>>,
}

impl Scratch {
    pub fn new(refs: usize) -> Scratch {
        Scratch {
            direct: vec![None; refs],
            direct_out: (0..refs).map(|_| None).collect(),
            ..Default::default()
        }
    }

    /// Notes that the host copied a block into ref `r`'s VMEM buffer.
    pub fn copied(&mut self, r: usize) {
        if let Some(d) = self.direct.get_mut(r) {
            *d = None;
        }
    }

    /// Makes ref `r` stand for a block of an output array (or, with
    /// `None`, for its VMEM buffer again), returning the block it stood
    /// for until now.
    pub fn write_in_array(&mut self, r: usize, block: Option<DirectOut>) -> Option<DirectOut> {
        match self.direct_out.get_mut(r) {
            Some(d) => std::mem::replace(d, block),
            None => None,
        }
    }

    /// `fill(ref, bits)`: the block ref `r` stands for in an output array,
    /// filled; `false` when the ref is in VMEM (the caller fills it there).
    pub fn fill_in_array(&mut self, r: usize, bits: u32) -> bool {
        match self.direct_out.get_mut(r).and_then(Option::as_mut) {
            Some(b) => {
                b.fill(bits);
                true
            }
            None => false,
        }
    }

    /// Makes ref `r` stand for a block of an input array: the MXU reads
    /// the block there, and nothing else reads the ref.
    pub fn read_from_array(&mut self, r: usize, block: Direct) {
        if let Some(d) = self.direct.get_mut(r) {
            *d = Some(block);
        }
    }
}

/// One operand as stored: its first element, row stride (elements) and
/// whether its elements are bf16.
#[derive(Clone, Copy)]
struct Stored {
    ptr: *const u8,
    ld: usize,
    bf16: bool,
}

impl Stored {
    /// The `rows x cols` submatrix at element `(r0, c0)` as f32 rows: in
    /// place for f32, widened into `buf` for bf16. Returns the rows and
    /// their stride.
    ///
    /// # Safety
    /// The submatrix lies inside the operand's checked range.
    unsafe fn f32_rows(
        &self,
        (r0, c0): (usize, usize),
        (rows, cols): (usize, usize),
        buf: &mut Vec<f32>,
    ) -> (*const f32, usize) {
        let eb = if self.bf16 { 2 } else { 4 };
        // SAFETY: inside the checked range (the caller's contract).
        let first = unsafe { self.ptr.add((r0 * self.ld + c0) * eb) };
        if !self.bf16 {
            return (first as *const f32, self.ld);
        }
        let len = if rows == 0 {
            0
        } else {
            2 * ((rows - 1) * self.ld + cols)
        };
        // SAFETY: as above; nothing writes the range during the call (the
        // output does not overlap an operand).
        let src = unsafe { std::slice::from_raw_parts(first, len) };
        widen(src, 0, rows, cols, self.ld, buf);
        (buf.as_ptr(), cols)
    }
}

/// An operand of [`sgemm`]: its first element and its row and column
/// strides (elements).
type Strided = (*const f32, isize, isize);

/// `dst[m x n] (+)= lhs[m x k] @ rhs[k x n]` in f32 on one thread; `dst`
/// has row stride `dst_rs`, and is added to when `add`.
///
/// # Safety
/// Every element the shapes and strides reach lies inside its allocation;
/// `dst` is 4-byte aligned and overlaps neither operand.
unsafe fn sgemm(
    (m, n, k): (usize, usize, usize),
    (dst, dst_rs): (*mut f32, usize),
    add: bool,
    (lp, l_rs, l_cs): Strided,
    (rp, r_rs, r_cs): Strided,
) {
    // SAFETY: the caller's contract.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            dst_rs as isize,
            add,
            lp,
            l_cs,
            l_rs,
            rp,
            r_cs,
            r_rs,
            // dst = alpha * dst + beta * lhs @ rhs.
            if add { 1.0 } else { 0.0 },
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
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
    // The output: the block of an output array the ref stands for, or
    // linear memory.
    let in_array = match d
        .out_ref
        .and_then(|r| scratch.direct_out.get_mut(r as usize)?.as_mut())
    {
        None => None,
        Some(b) if b.vmem == out && (b.rows, b.cols) == (d.m as usize, d.n as usize) => {
            if d.kind != DotKind::F32 {
                return Err("an integer dot into an output block in its array".into());
            }
            // A product added to a block nothing wrote adds to poison, as
            // in VMEM.
            if b.fresh && d.accumulate {
                b.fill(pk_lowering::wasm::abi::poison::F32);
            }
            b.fresh = false;
            Some((b.ptr, b.ld))
        }
        Some(_) => {
            return Err(format!(
                "dot out at {out} is not the whole ref whose block is in the output array"
            ))
        }
    };
    let o = if in_array.is_some() {
        (0, 0)
    } else {
        extent(out as usize, d.m, d.n, d.n, 4)
    };
    if o.1 > mem.len() || !o.0.is_multiple_of(4) {
        return Err(format!("dot out range {}..{} is outside memory", o.0, o.1));
    }
    if (d.lhs_bf16 || d.rhs_bf16) && d.kind != DotKind::F32 {
        return Err("bf16 operands of an integer dot".into());
    }
    let (m, n, k) = (d.m as usize, d.n as usize, d.k as usize);
    // The operands as stored must be op(lhs) = m x k and op(rhs) = k x n,
    // with rows no longer than their stride: every chunk read below lies
    // inside the ranges checked next.
    let want_l = if d.trans_lhs { (d.k, d.m) } else { (d.m, d.k) };
    let want_r = if d.trans_rhs { (d.n, d.k) } else { (d.k, d.n) };
    if d.lhs_dims != want_l
        || d.rhs_dims != want_r
        || d.lhs_ld < d.lhs_dims.1
        || d.rhs_ld < d.rhs_dims.1
    {
        return Err("dot operand shapes do not match the product".into());
    }
    // Every access below goes through this one pointer (or an input
    // array's), after the ranges are checked.
    let mem_len = mem.len();
    let base = mem.as_mut_ptr();
    let mut stored = [Stored {
        ptr: base,
        ld: 0,
        bf16: false,
    }; 2];
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
        // Linear memory, or the input array the ref's block was left in.
        let (bytes, len, at, ld, here) =
            match r.and_then(|r| scratch.direct.get(r as usize)?.as_ref()) {
                None => (base as *const u8, mem_len, addr as usize, ld, true),
                Some(b) if b.vmem == addr => {
                    let a = b.array.bytes();
                    (a.as_ptr(), a.len(), b.at, b.ld, false)
                }
                Some(_) => {
                    return Err(format!(
                        "dot {what} at {addr} is not the whole ref whose block stays in the array"
                    ))
                }
            };
        let (s, e) = extent(at, dims.0, dims.1, ld, eb(bf16));
        if e > len || ld < dims.1 || !(bytes as usize + s).is_multiple_of(eb(bf16)) {
            return Err(format!("dot {what} range {s}..{e} is outside memory"));
        }
        if here && s < o.1 && o.0 < e {
            return Err("dot output overlaps an operand".into());
        }
        in_memory &= here;
        offsets[side] = s;
        stored[side] = Stored {
            // SAFETY: `s` is inside the allocation (checked above).
            ptr: unsafe { bytes.add(s) },
            ld: ld as usize,
            bf16,
        };
    }
    let [sl, sr] = stored;
    match d.kind {
        DotKind::F32 => {
            let dst = match in_array {
                Some(out) => out,
                // SAFETY: inside `mem`, checked above.
                None => (unsafe { base.add(o.0) as *mut f32 }, n),
            };
            if k == 0 && !d.accumulate {
                for r in 0..m {
                    // SAFETY: row `r` of the output, in `mem` (checked above)
                    // or in the block of the output array.
                    unsafe { std::slice::from_raw_parts_mut(dst.0.add(r * dst.1), n) }.fill(0.0);
                }
            }
            for k0 in (0..k).step_by(KC) {
                let kc = KC.min(k - k0);
                // op(lhs) is m x k, op(rhs) k x n; a transposed operand is
                // stored the other way round.
                // SAFETY (both): the chunk lies inside the operand.
                let (lp, lld) = unsafe {
                    if d.trans_lhs {
                        sl.f32_rows((k0, 0), (kc, m), &mut scratch.lhs)
                    } else {
                        sl.f32_rows((0, k0), (m, kc), &mut scratch.lhs)
                    }
                };
                let (rp, rld) = unsafe {
                    if d.trans_rhs {
                        sr.f32_rows((0, k0), (n, kc), &mut scratch.rhs)
                    } else {
                        sr.f32_rows((k0, 0), (kc, n), &mut scratch.rhs)
                    }
                };
                let (l_rs, l_cs) = if d.trans_lhs {
                    (1, lld as isize)
                } else {
                    (lld as isize, 1)
                };
                let (r_rs, r_cs) = if d.trans_rhs {
                    (1, rld as isize)
                } else {
                    (rld as isize, 1)
                };
                // Later chunks add to what the first wrote, as does the
                // first for `acc += dot(..)`.
                let add = d.accumulate || k0 > 0;
                // SAFETY: the output range lies inside `mem`, 4-byte
                // aligned, and overlaps no operand, or is the block of an
                // output array that only this unit writes; each operand
                // chunk lies, 4-byte aligned, inside `mem`, a scratch
                // buffer, or an input array that nothing writes during the
                // run.
                unsafe { sgemm((m, n, kc), dst, add, (lp, l_rs, l_cs), (rp, r_rs, r_cs)) };
            }
        }
        DotKind::I32 => {
            // The runner leaves only float blocks in their arrays.
            if !in_memory {
                return Err("an integer dot operand outside linear memory".into());
            }
            let [l0, r0] = offsets;
            let lhs = (l0, d.lhs_dims, sl.ld, d.trans_lhs);
            let rhs = (r0, d.rhs_dims, sr.ld, d.trans_rhs);
            if !super::vnni::gemm(
                mem,
                (m, n, k),
                lhs,
                rhs,
                o.0,
                d.accumulate,
                &mut scratch.int8,
            ) && !int_gemm(mem, (m, n, k), lhs, rhs, o.0, d.accumulate, scratch)
            {
                int_loop(mem, (m, n, k), lhs, rhs, o.0, d.accumulate);
            }
        }
    }
    Ok(())
}

/// One integer operand as stored: byte offset, stored dims, row stride
/// (elements) and whether it is stored transposed.
pub(crate) type IntOperand = (usize, (u32, u32), usize, bool);

fn read_i32(mem: &[u8], p: usize) -> i32 {
    i32::from_le_bytes([mem[p], mem[p + 1], mem[p + 2], mem[p + 3]])
}

/// Integers of magnitude at most 2^24 are exact in f32; a product whose
/// every partial sum stays within that is exact in any summation order.
const F32_EXACT: u64 = 1 << 24;

/// Below this many K per exact chunk the f32 route is not worth it.
const MIN_EXACT_K: u64 = 64;

/// An integer dot as f32 GEMMs over chunks of K short enough that every
/// partial sum is an exactly representable integer (int8 operands: 1024 of
/// K per chunk), each chunk's exact sums added into the i32 output with
/// wrapping, which is the i32 accumulator's sum modulo 2^32. Returns false,
/// having written nothing, when the operands' magnitudes leave chunks too
/// short (wide integers), for [`int_loop`] to do the dot.
fn int_gemm(
    mem: &mut [u8],
    (m, n, k): (usize, usize, usize),
    lhs: IntOperand,
    rhs: IntOperand,
    out: usize,
    accumulate: bool,
    scratch: &mut Scratch,
) -> bool {
    // Each operand as stored, converted to dense f32 rows; the largest
    // magnitude bounds every product.
    let dense = |(at, (rows, cols), ld, _): IntOperand, buf: &mut Vec<f32>| -> u64 {
        let (rows, cols) = (rows as usize, cols as usize);
        buf.clear();
        buf.reserve(rows * cols);
        let mut max = 0u32;
        for r in 0..rows {
            let row = &mem[at + 4 * r * ld..at + 4 * (r * ld + cols)];
            for v in row.chunks_exact(4) {
                let v = i32::from_le_bytes([v[0], v[1], v[2], v[3]]);
                max = max.max(v.unsigned_abs());
                buf.push(v as f32);
            }
        }
        u64::from(max)
    };
    let bound = dense(lhs, &mut scratch.lhs) * dense(rhs, &mut scratch.rhs);
    // Any chunk is exact when every product is zero.
    let kc = F32_EXACT.checked_div(bound).unwrap_or(k.max(1) as u64);
    if kc < MIN_EXACT_K.min(k as u64).max(1) {
        return false;
    }
    let kc = (kc as usize).min(k.max(1));
    let dst = &mut mem[out..out + 4 * m * n];
    if k == 0 || bound == 0 {
        if !accumulate {
            dst.fill(0);
        }
        return true;
    }
    scratch.int_acc.resize(m * n, 0.0);
    let (a, b, c) = (&scratch.lhs, &scratch.rhs, &mut scratch.int_acc);
    for k0 in (0..k).step_by(kc) {
        let kk = kc.min(k - k0);
        // op(lhs)[i][p] and op(rhs)[p][j] in the dense stored layouts.
        let (lp, l_rs, l_cs) = if lhs.3 {
            (a[k0 * m..].as_ptr(), 1, m as isize)
        } else {
            (a[k0..].as_ptr(), k as isize, 1)
        };
        let (rp, r_rs, r_cs) = if rhs.3 {
            (b[k0..].as_ptr(), 1, k as isize)
        } else {
            (b[k0 * n..].as_ptr(), n as isize, 1)
        };
        // SAFETY: `c` holds m x n; each operand chunk lies inside its dense
        // buffer (op(lhs) is m x k, op(rhs) k x n).
        unsafe {
            sgemm(
                (m, n, kk),
                (c.as_mut_ptr(), n),
                false,
                (lp, l_rs, l_cs),
                (rp, r_rs, r_cs),
            )
        };
        let add = accumulate || k0 > 0;
        for (o, &s) in dst.chunks_exact_mut(4).zip(c.iter()) {
            // `s` is an integer of magnitude at most 2^24: exact as i32.
            let mut v = s as i32;
            if add {
                v = v.wrapping_add(i32::from_le_bytes([o[0], o[1], o[2], o[3]]));
            }
            o.copy_from_slice(&v.to_le_bytes());
        }
    }
    true
}

/// An integer dot of any magnitudes, accumulating in wrapping i32.
fn int_loop(
    mem: &mut [u8],
    (m, n, k): (usize, usize, usize),
    (l0, _, lld, tl): IntOperand,
    (r0, _, rld, tr): IntOperand,
    out: usize,
    accumulate: bool,
) {
    let (l_rs, l_cs) = if tl { (1, lld) } else { (lld, 1) };
    let (r_rs, r_cs) = if tr { (1, rld) } else { (rld, 1) };
    // Gather op(rhs) as a contiguous k x n matrix, then accumulate rows (a
    // vectorisable inner loop over n).
    let mut b = vec![0i32; k * n];
    for p in 0..k {
        for j in 0..n {
            b[p * n + j] = read_i32(mem, r0 + 4 * (p * r_rs + j * r_cs));
        }
    }
    let mut row = vec![0i32; n];
    for i in 0..m {
        if accumulate {
            for (j, acc) in row.iter_mut().enumerate() {
                *acc = read_i32(mem, out + 4 * (i * n + j));
            }
        } else {
            row.fill(0);
        }
        for p in 0..k {
            let a = read_i32(mem, l0 + 4 * (i * l_rs + p * l_cs));
            for (acc, &bv) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *acc = acc.wrapping_add(a.wrapping_mul(bv));
            }
        }
        for (j, v) in row.iter().enumerate() {
            let p = out + 4 * (i * n + j);
            mem[p..p + 4].copy_from_slice(&v.to_le_bytes());
        }
    }
}

/// An int8 problem laid out for the integer-dot tests: op(lhs) `m x k`
/// from `a`, op(rhs) `k x n` from `b`, each stored transposed as `(tl, tr)`
/// say, after them the `m x n` output holding `init`. Returns the memory
/// and the lhs, rhs and output operands.
#[cfg(test)]
pub(crate) fn int_problem(
    (m, n, k): (usize, usize, usize),
    (tl, tr): (bool, bool),
    a: impl Fn(usize, usize) -> i32,
    b: impl Fn(usize, usize) -> i32,
    init: impl Fn(usize) -> i32,
) -> (Vec<u8>, IntOperand, IntOperand, usize) {
    let (la, ra, oa) = (0usize, 4 * m * k, 4 * (m + n) * k);
    let mut mem = vec![0u8; oa + 4 * m * n];
    let put = |mem: &mut [u8], at: usize, v: i32| mem[at..at + 4].copy_from_slice(&v.to_le_bytes());
    for i in 0..m {
        for p in 0..k {
            put(
                &mut mem,
                la + 4 * if tl { p * m + i } else { i * k + p },
                a(i, p),
            );
        }
    }
    for p in 0..k {
        for j in 0..n {
            put(
                &mut mem,
                ra + 4 * if tr { j * k + p } else { p * n + j },
                b(p, j),
            );
        }
    }
    for x in 0..m * n {
        put(&mut mem, oa + 4 * x, init(x));
    }
    let stored = |t: bool, (r, c): (usize, usize)| if t { (c, r) } else { (r, c) };
    let operand = |at, t, dims| {
        let (r, c) = stored(t, dims);
        (at, (r as u32, c as u32), c, t)
    };
    (mem, operand(la, tl, (m, k)), operand(ra, tr, (k, n)), oa)
}

/// Asserts that the output of an [`int_problem`] accumulated the products:
/// `init` plus the i64 sum, taken modulo 2^32.
#[cfg(test)]
pub(crate) fn assert_int_sums(
    mem: &[u8],
    out: usize,
    (m, n, k): (usize, usize, usize),
    a: impl Fn(usize, usize) -> i32,
    b: impl Fn(usize, usize) -> i32,
    init: impl Fn(usize) -> i32,
    what: &str,
) {
    for x in 0..m * n {
        let sum: i64 = (0..k).map(|p| i64::from(a(x / n, p) * b(p, x % n))).sum();
        let want = (i64::from(init(x)) + sum) as i32;
        let got = i32::from_le_bytes(mem[out + 4 * x..out + 4 * x + 4].try_into().unwrap());
        assert_eq!(got, want, "{what} at {x}");
    }
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
            out_ref: None,
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

    /// K in chunks (256, 256 and a tail of 88), bf16 operands widened per
    /// chunk, every transpose, accumulating into what `out` holds: small
    /// integers, so the sums are exact in any order.
    #[test]
    fn chunked_bf16_products_with_transposes() {
        let (m, n, k) = (3usize, 5usize, 600usize);
        let a = |i: usize, p: usize| ((i * 7 + p * 3) % 11) as f32 - 5.0;
        let b = |p: usize, j: usize| ((p * 5 + j * 2) % 9) as f32 - 4.0;
        let bf16 = |x: f32| ((x.to_bits() >> 16) as u16).to_le_bytes();
        for (tl, tr) in [(false, false), (true, false), (false, true), (true, true)] {
            let (la, ra, oa) = (0usize, 8192usize, 16384usize);
            let mut mem = vec![0u8; 32768];
            for i in 0..m {
                for p in 0..k {
                    let at = la + 2 * if tl { p * m + i } else { i * k + p };
                    mem[at..at + 2].copy_from_slice(&bf16(a(i, p)));
                }
            }
            for p in 0..k {
                for j in 0..n {
                    let at = ra + 2 * if tr { j * k + p } else { p * n + j };
                    mem[at..at + 2].copy_from_slice(&bf16(b(p, j)));
                }
            }
            put(&mut mem, oa, &vec![1.0; m * n]);
            let d = DotSite {
                accumulate: true,
                lhs_bf16: true,
                rhs_bf16: true,
                ..site(m as u32, n as u32, k as u32, tl, tr, DotKind::F32)
            };
            run(&mut mem, &d, la as u32, ra as u32, oa as u32).unwrap();
            let want: Vec<f32> = (0..m * n)
                .map(|x| 1.0 + (0..k).map(|p| a(x / n, p) * b(p, x % n)).sum::<f32>())
                .collect();
            assert_eq!(get(&mem, oa, m * n), want, "{tl} {tr}");
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

    /// int8 values (held as i32 lanes) over K = 2500, three exact f32
    /// chunks of 1024 with -128 x -128 products in them, every transpose,
    /// accumulating into outputs near the wrap: equal to the i64 sum taken
    /// modulo 2^32.
    #[test]
    fn int8_products_in_exact_chunks() {
        let (m, n, k) = (5usize, 7usize, 2500usize);
        let a = |i: usize, p: usize| {
            if p.is_multiple_of(3) {
                -128
            } else {
                ((i * 31 + p * 7) % 256) as i32 - 128
            }
        };
        let b = |p: usize, j: usize| {
            if p.is_multiple_of(5) {
                -128
            } else {
                ((p * 13 + j * 3) % 255) as i32 - 127
            }
        };
        let init = |x: usize| i32::MAX - 1000 + x as i32;
        let shape = (m, n, k);
        for t @ (tl, tr) in [(false, false), (true, false), (false, true), (true, true)] {
            // Through the dispatch (the int8 dot-product route where the
            // host has it) ...
            let (mut mem, l, r, o) = int_problem(shape, t, a, b, init);
            let d = DotSite {
                accumulate: true,
                ..site(m as u32, n as u32, k as u32, tl, tr, DotKind::I32)
            };
            run(&mut mem, &d, l.0 as u32, r.0 as u32, o as u32).unwrap();
            assert_int_sums(&mem, o, shape, a, b, init, &format!("dot {t:?}"));
            // ... and the exact f32 chunks every host has.
            let (mut mem, l, r, o) = int_problem(shape, t, a, b, init);
            let mut scratch = Scratch::default();
            assert!(int_gemm(&mut mem, shape, l, r, o, true, &mut scratch));
            assert_int_sums(&mem, o, shape, a, b, init, &format!("f32 chunks {t:?}"));
        }
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

//! Ops that move lanes between positions: broadcast, transpose, iota,
//! reductions and roll. Tiles are contiguous row-major lane buffers, so
//! each op is a loop nest over merged dimensions whose innermost run is a
//! bulk copy, a splat fill, or a SIMD accumulation where the data allows.

use super::elementwise::{canon, round_bf16};
use super::{is_f, shape, Addr, Em};
use crate::wasm::fb::{m128, m32};
use crate::wasm::Error;
use pk_lang::ir::{DType, ReduceOp, Value};
use wasm_encoder::{BlockType, Instruction as I, ValType};

/// Merges adjacent dimensions that a predicate says move together.
fn merge(dims: &[(u64, bool)]) -> Vec<(u64, bool)> {
    let mut out: Vec<(u64, bool)> = Vec::new();
    for &(n, b) in dims {
        if n == 1 {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.1 == b => last.0 *= n,
            _ => out.push((n, b)),
        }
    }
    out
}

/// The extents of a shape before, at and after `axis`: the [A, N, B] view
/// that reductions, rolls and iotas loop over.
fn around(s: &[u64], axis: usize) -> (u64, u64, u64) {
    let outer: u64 = s[..axis].iter().product();
    let inner: u64 = s[axis + 1..].iter().product();
    (outer, s[axis], inner)
}

impl Em<'_, '_> {
    /// Combines the two scalars on the stack with `sop` (or, for integer
    /// max/min, selects by the comparison `sop`).
    fn combine_s(&mut self, op: ReduceOp, f: bool, sop: &I<'static>) {
        if f || op == ReduceOp::Sum {
            self.fb.op(sop.clone());
            return;
        }
        let (x, y) = (self.fb.i32l(), self.fb.i32l());
        self.fb
            .set(y)
            .set(x)
            .get(x)
            .get(y)
            .get(x)
            .get(y)
            .op(sop.clone())
            .op(I::Select);
    }

    /// Sets two fresh locals to the addresses of tiles `a` and `r`, the
    /// source and destination cursors of a copying loop nest; returns them
    /// in that order.
    fn cursors(&mut self, a: Value, r: Value) -> (u32, u32) {
        let (src, dst) = (self.addr(a), self.addr(r));
        let (s, o) = (self.fb.i32l(), self.fb.i32l());
        self.push_addr(src);
        self.fb.set(s);
        self.push_addr(dst);
        self.fb.set(o);
        (s, o)
    }

    /// `dst = base + i * stride` for the i32 local `i` and a stride in
    /// bytes.
    fn set_strided(&mut self, dst: u32, base: Addr, i: u32, stride: u64) {
        self.push_addr(base);
        self.fb
            .get(i)
            .u32c(stride as u32)
            .op(I::I32Mul)
            .op(I::I32Add)
            .set(dst);
    }

    /// Stores the v128 in local `v` over the whole groups of four among
    /// `lanes` lanes at the address in local `o`, counting bytes in local
    /// `j`; returns the first lane left over, which the caller stores.
    fn store_groups(&mut self, o: u32, j: u32, v: u32, lanes: u64) -> u64 {
        let groups = lanes / 4;
        self.count_loop(j, groups * 16, 16, |em| {
            em.fb
                .get(o)
                .get(j)
                .op(I::I32Add)
                .get(v)
                .op(I::V128Store(m128(0)));
        });
        groups * 4
    }

    /// Repeats the size-1 dimensions of `a` to the shape of `r`.
    pub(super) fn broadcast(&mut self, a: Value, r: Value) -> Result<(), Error> {
        let (ins, outs) = (shape(self.f, a), shape(self.f, r));
        let dims: Vec<(u64, bool)> = outs
            .iter()
            .zip(&ins)
            .map(|(&o, &i)| (o, i == 1 && o != 1))
            .collect();
        let dims = merge(&dims);
        let (s, o) = self.cursors(a, r);
        self.bcast_nest(&dims, s, o);
        Ok(())
    }

    /// One level of the broadcast nest: `s` and `o` are locals holding the
    /// current source and destination byte addresses.
    fn bcast_nest(&mut self, dims: &[(u64, bool)], s: u32, o: u32) {
        let Some((&(n, rep), rest)) = dims.split_first() else {
            self.fb.copy_lane(o, s);
            return;
        };
        if rest.is_empty() {
            if rep {
                // Fill n lanes with one value.
                let (v, j) = (self.fb.local(ValType::V128), self.fb.i32l());
                self.fb.get(s).op(I::V128Load32Splat(m32(0))).set(v);
                for t in self.store_groups(o, j, v, n)..n {
                    self.fb.get(o).get(v).op(I::V128Store32Lane {
                        memarg: m32((t * 4) as u32),
                        lane: 0,
                    });
                }
            } else {
                self.fb.copy_lanes(o, s, n);
            }
            return;
        }
        let inner_out: u64 = rest.iter().map(|d| d.0).product();
        let inner_in: u64 = rest.iter().filter(|d| !d.1).map(|d| d.0).product();
        let (c, s0, o0) = (self.fb.i32l(), self.fb.i32l(), self.fb.i32l());
        self.fb.get(s).set(s0).get(o).set(o0);
        self.count_loop(c, n, 1, |em| {
            em.set_strided(o, Addr::Local(o0), c, inner_out * 4);
            if !rep {
                em.set_strided(s, Addr::Local(s0), c, inner_in * 4);
            } else {
                em.fb.get(s0).set(s);
            }
            em.bcast_nest(rest, s, o);
        });
    }

    /// Result dim `i` is operand dim `perm[i]`: a loop nest in result order
    /// reading the operand with its strides.
    pub(super) fn transpose(&mut self, a: Value, perm: &[usize], r: Value) -> Result<(), Error> {
        let ins = shape(self.f, a);
        let mut in_strides = vec![1u64; ins.len()];
        for i in (0..ins.len().saturating_sub(1)).rev() {
            in_strides[i] = in_strides[i + 1] * ins[i + 1];
        }
        // (extent, source stride) per result dim, dropping size-1 dims and
        // merging dims that stay adjacent.
        let mut dims: Vec<(u64, u64)> = Vec::new();
        for &p in perm {
            let (n, st) = (ins[p], in_strides[p]);
            if n == 1 {
                continue;
            }
            match dims.last_mut() {
                Some(last) if last.1 == st * n => *last = (last.0 * n, st),
                _ => dims.push((n, st)),
            }
        }
        let (s, o) = self.cursors(a, r);
        self.transpose_nest(&dims, s, o);
        Ok(())
    }

    /// A static window of a value: the copy loops of a transpose with the
    /// identity permutation, from the window's first element.
    pub(super) fn slice(&mut self, a: Value, window: &[(u64, u64)], r: Value) -> Result<(), Error> {
        let ins = shape(self.f, a);
        let mut in_strides = vec![1u64; ins.len()];
        for i in (0..ins.len().saturating_sub(1)).rev() {
            in_strides[i] = in_strides[i + 1] * ins[i + 1];
        }
        let offset: u64 = window
            .iter()
            .zip(&in_strides)
            .map(|((s, _), st)| s * st)
            .sum();
        // (extent, source stride) per result dim; size-1 dims are dropped
        // and a dim merges into the one before when that one is contiguous.
        let mut dims: Vec<(u64, u64)> = Vec::new();
        for (&(_, n), &st) in window.iter().zip(&in_strides) {
            if n == 1 {
                continue;
            }
            match dims.last_mut() {
                Some(last) if last.1 == st * n => *last = (last.0 * n, st),
                _ => dims.push((n, st)),
            }
        }
        let (s, o) = self.cursors(a, r);
        self.fb.add_to(s, (offset * 4) as i32);
        self.transpose_nest(&dims, s, o);
        Ok(())
    }

    /// Operands joined along `axis`: per position of the dimensions before
    /// it, each operand's contiguous run is copied after the previous one's.
    pub(super) fn concat(&mut self, vs: &[Value], axis: usize, r: Value) -> Result<(), Error> {
        let rs = shape(self.f, r);
        let outer: u64 = rs[..axis].iter().product();
        let inner: u64 = rs[axis + 1..].iter().product();
        let row = rs[axis] * inner;
        let mut off = 0u64;
        for &v in vs {
            let chunk = shape(self.f, v)[axis] * inner;
            let (s, o) = self.cursors(v, r);
            self.fb.add_to(o, (off * 4) as i32);
            let c = self.fb.i32l();
            self.count_loop(c, outer, 1, |em| {
                em.fb
                    .copy_lanes(o, s, chunk)
                    .add_to(s, (chunk * 4) as i32)
                    .add_to(o, (row * 4) as i32);
            });
            off += chunk;
        }
        Ok(())
    }

    fn transpose_nest(&mut self, dims: &[(u64, u64)], s: u32, o: u32) {
        let Some((&(n, st), rest)) = dims.split_first() else {
            self.fb.copy_lane(o, s).add_to(o, 4);
            return;
        };
        if rest.is_empty() && st == 1 {
            self.fb.copy_lanes(o, s, n).add_to(o, (n * 4) as i32);
            return;
        }
        let (c, s0) = (self.fb.i32l(), self.fb.i32l());
        self.fb.get(s).set(s0);
        self.count_loop(c, n, 1, |em| {
            em.set_strided(s, Addr::Local(s0), c, st * 4);
            em.transpose_nest(rest, s, o);
        });
    }

    /// Each element is its index along `dim`.
    pub(super) fn iota(&mut self, dim: usize, r: Value) -> Result<(), Error> {
        let (outer, n, inner) = around(&shape(self.f, r), dim);
        let out = self.addr(r);
        let (o, a, m, v, j) = (
            self.fb.i32l(),
            self.fb.i32l(),
            self.fb.i32l(),
            self.fb.local(ValType::V128),
            self.fb.i32l(),
        );
        self.push_addr(out);
        self.fb.set(o);
        self.count_loop(a, outer, 1, |em| {
            em.count_loop(m, n, 1, |em| {
                if inner == 1 {
                    em.fb.get(o).get(m).op(I::I32Store(m32(0)));
                    em.fb.add_to(o, 4);
                    return;
                }
                em.fb.get(m).op(I::I32x4Splat).set(v);
                for t in em.store_groups(o, j, v, inner)..inner {
                    em.fb.get(o).get(m).op(I::I32Store(m32((t * 4) as u32)));
                }
                em.fb.add_to(o, (inner * 4) as i32);
            });
        });
        Ok(())
    }

    /// Reduces `axis` of `value` (shape [A, N, B] around the axis).
    pub(super) fn reduce(
        &mut self,
        op: ReduceOp,
        value: Value,
        axis: usize,
        r: Value,
    ) -> Result<(), Error> {
        let (outer, n, inner) = around(&shape(self.f, value), axis);
        let d = self.f.ty(value).dtype();
        let (src, dst) = (self.addr(value), self.addr(r));
        if matches!(d, DType::F8E4M3FN | DType::F8E5M2) {
            return Err(self.unsupported(format!("reductions of {d}")));
        }
        let arg = matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin);
        if self.f.ty(r).is_scalar() {
            // A rank-1 value reduced to a scalar: the result is the
            // scalar's local, not a tile in memory.
            let (b, sp) = (self.fb.i32l(), self.fb.i32l());
            self.push_addr(src);
            self.fb.set(sp);
            if arg {
                self.fb.i32c(0).set(b);
                self.argreduce(op == ReduceOp::ArgMax, d, sp, b, n, inner);
            } else {
                self.reduce_row(op, d, sp, n);
            }
            let l = self.local(r);
            self.fb.set(l);
            return Ok(());
        }
        let (a, b, sp, op_) = (
            self.fb.i32l(),
            self.fb.i32l(),
            self.fb.i32l(),
            self.fb.i32l(),
        );
        self.push_addr(dst);
        self.fb.set(op_);
        self.count_loop(a, outer, 1, |em| {
            em.set_strided(sp, src, a, n * inner * 4);
            if inner == 1 && !arg {
                em.fb.get(op_);
                em.reduce_row(op, d, sp, n);
                em.lane_store(d, 0);
                em.fb.add_to(op_, 4);
            } else if !arg {
                em.reduce_columns(op, d, sp, n, inner, op_);
                em.fb.add_to(op_, (inner * 4) as i32);
            } else {
                em.count_loop(b, inner, 1, |em| {
                    em.fb.get(op_);
                    em.argreduce(op == ReduceOp::ArgMax, d, sp, b, n, inner);
                    em.fb.op(I::I32Store(m32(0)));
                    em.fb.add_to(op_, 4);
                });
            }
        });
        Ok(())
    }

    /// Pushes the reduction of `n` contiguous lanes at the address in `sp`.
    /// SIMD first: four vector accumulators, each taking every fourth
    /// group of four lanes (so that the loop is not one chain of dependent
    /// adds or maxes), folded pairwise (0 with 1, 2 with 3, then the two);
    /// then the four lanes in order, then the tail lanes. The order is
    /// fixed by `n` alone, so results do not depend on the host or on the
    /// thread count.
    fn reduce_row(&mut self, op: ReduceOp, d: DType, sp: u32, n: u64) {
        let f = is_f(d);
        let (j, x) = (self.fb.i32l(), self.fb.local(super::lane_type(d)));
        let accs: Vec<u32> = (0..ACCS).map(|_| self.fb.local(ValType::V128)).collect();
        let (vop, sop) = combine(op, f);
        let identity = |em: &mut Self, vec: bool| match (op, f) {
            // -0.0 is the identity of float addition (x + -0 = x for every x).
            (ReduceOp::Sum, true) => push_f(em, -0.0, vec),
            (ReduceOp::Sum, false) => push_i(em, 0, vec),
            (ReduceOp::Max, true) => push_f(em, f32::NEG_INFINITY, vec),
            (ReduceOp::Max, false) => push_i(em, i32::MIN, vec),
            (_, true) => push_f(em, f32::INFINITY, vec),
            (_, false) => push_i(em, i32::MAX, vec),
        };
        let nvec = n / 4;
        for &a in &accs {
            identity(self, true);
            self.fb.set(a);
        }
        let wide = nvec / ACCS as u64 * ACCS as u64;
        self.count_loop(j, wide * 16, 16 * ACCS, |em| {
            for (k, &a) in accs.iter().enumerate() {
                em.fb
                    .get(a)
                    .get(sp)
                    .get(j)
                    .op(I::I32Add)
                    .op(I::V128Load(m128(16 * k as u32)));
                em.fb.op(vop.clone()).set(a);
            }
        });
        for (k, v) in (wide..nvec).enumerate() {
            let a = accs[k];
            self.fb.get(a).get(sp).op(I::V128Load(m128(v as u32 * 16)));
            self.fb.op(vop.clone()).set(a);
        }
        let acc = accs[0];
        self.fb.get(accs[0]).get(accs[1]).op(vop.clone()).set(acc);
        self.fb.get(accs[2]).get(accs[3]).op(vop.clone());
        self.fb.get(acc).op(vop.clone()).set(acc);
        identity(self, false);
        self.fb.set(x);
        for lane in 0..4u8 {
            self.fb.get(x).get(acc);
            self.fb.op(if f {
                I::F32x4ExtractLane(lane)
            } else {
                I::I32x4ExtractLane(lane)
            });
            self.combine_s(op, f, &sop);
            self.fb.set(x);
        }
        for t in nvec * 4..n {
            self.fb.get(x).get(sp);
            self.lane_load(d, (t * 4) as u32);
            self.combine_s(op, f, &sop);
            self.fb.set(x);
        }
        self.fb.get(x);
        self.finish_lane(d);
    }

    /// Rounds or wraps an accumulated lane to its dtype.
    fn finish_lane(&mut self, d: DType) {
        if d == DType::BF16 {
            round_bf16(&mut self.fb);
        } else if !is_f(d) {
            canon(&mut self.fb, d);
        }
    }

    /// out[b] = op over i of x[i, b], for contiguous b in SIMD.
    fn reduce_columns(&mut self, op: ReduceOp, d: DType, sp: u32, n: u64, inner: u64, out: u32) {
        let f = is_f(d);
        let (vop, sop) = combine(op, f);
        let (i, j, row) = (self.fb.i32l(), self.fb.i32l(), self.fb.i32l());
        // Start from row 0, then fold rows 1.. into the output.
        self.fb.copy_lanes(out, sp, inner);
        let nvec = inner / 4;
        self.count_loop(i, n.saturating_sub(1), 1, |em| {
            em.fb
                .get(sp)
                .get(i)
                .i32c(1)
                .op(I::I32Add)
                .u32c((inner * 4) as u32);
            em.fb.op(I::I32Mul).op(I::I32Add).set(row);
            em.count_loop(j, nvec * 16, 16, |em| {
                em.fb.get(out).get(j).op(I::I32Add);
                em.fb.get(out).get(j).op(I::I32Add).op(I::V128Load(m128(0)));
                em.fb.get(row).get(j).op(I::I32Add).op(I::V128Load(m128(0)));
                em.fb.op(vop.clone()).op(I::V128Store(m128(0)));
            });
            for t in nvec * 4..inner {
                let off = (t * 4) as u32;
                em.fb.get(out).get(out);
                em.lane_load(d, off);
                em.fb.get(row);
                em.lane_load(d, off);
                em.combine_s(op, f, &sop);
                em.lane_store(d, off);
            }
        });
        // Round or wrap once at the end.
        if d == DType::BF16 || (!f && d != DType::I32) {
            let k = self.fb.i32l();
            self.count_loop(k, inner * 4, 4, |em| {
                em.fb.get(out).get(k).op(I::I32Add);
                em.fb.get(out).get(k).op(I::I32Add);
                em.lane_load(d, 0);
                em.finish_lane(d);
                em.lane_store(d, 0);
            });
        }
    }

    /// Pushes the index (i32) of the first maximum (or minimum) of column
    /// `b` of an [n, inner] block at `sp`; a NaN wins over numbers, as in
    /// numpy.
    fn argreduce(&mut self, max: bool, d: DType, sp: u32, b: u32, n: u64, inner: u64) {
        let f = is_f(d);
        let lt = super::lane_type(d);
        let (best, bi, x, i, p) = (
            self.fb.local(lt),
            self.fb.i32l(),
            self.fb.local(lt),
            self.fb.i32l(),
            self.fb.i32l(),
        );
        self.fb
            .get(sp)
            .get(b)
            .i32c(2)
            .op(I::I32Shl)
            .op(I::I32Add)
            .tee(p);
        self.lane_load(d, 0);
        self.fb.set(best).i32c(0).set(bi);
        self.count_loop(i, n.saturating_sub(1), 1, |em| {
            em.fb.add_to(p, (inner * 4) as i32);
            em.fb.get(p);
            em.lane_load(d, 0);
            em.fb.set(x);
            let better = match (max, f) {
                (true, true) => I::F32Gt,
                (false, true) => I::F32Lt,
                (true, false) => I::I32GtS,
                (false, false) => I::I32LtS,
            };
            em.fb.get(x).get(best).op(better);
            if f {
                // x is NaN and best is not.
                em.fb
                    .get(x)
                    .get(x)
                    .op(I::F32Ne)
                    .get(best)
                    .get(best)
                    .op(I::F32Eq);
                em.fb.op(I::I32And).op(I::I32Or);
            }
            em.fb.op(I::If(BlockType::Empty));
            em.fb.get(x).set(best).get(i).i32c(1).op(I::I32Add).set(bi);
            em.fb.op(I::End);
        });
        self.fb.get(bi);
    }

    /// `numpy.roll`: two bulk copies per outer index.
    pub(super) fn roll(
        &mut self,
        value: Value,
        shift: Value,
        axis: usize,
        r: Value,
    ) -> Result<(), Error> {
        let (outer, n, inner) = around(&shape(self.f, value), axis);
        let row = (inner * 4) as u32;
        let (src, dst) = (self.addr(value), self.addr(r));
        let (k, a, sp, dp) = (
            self.fb.i32l(),
            self.fb.i32l(),
            self.fb.i32l(),
            self.fb.i32l(),
        );
        // k = shift mod n, in [0, n).
        self.get(shift);
        self.fb
            .u32c(n as u32)
            .op(I::I32RemS)
            .tee(k)
            .i32c(0)
            .op(I::I32LtS);
        self.fb.op(I::If(BlockType::Empty));
        self.fb.add_to(k, n as i32);
        self.fb.op(I::End);
        let block = n * inner * 4;
        self.count_loop(a, outer, 1, |em| {
            em.set_strided(sp, src, a, block);
            em.set_strided(dp, dst, a, block);
            // out[k..n] = in[0..n-k]
            em.fb.get(dp).get(k).u32c(row).op(I::I32Mul).op(I::I32Add);
            em.fb.get(sp);
            em.fb
                .u32c(n as u32)
                .get(k)
                .op(I::I32Sub)
                .u32c(row)
                .op(I::I32Mul);
            em.fb.memory_copy();
            // out[0..k] = in[n-k..n]
            em.fb.get(dp);
            em.fb
                .get(sp)
                .u32c(n as u32)
                .get(k)
                .op(I::I32Sub)
                .u32c(row)
                .op(I::I32Mul);
            em.fb.op(I::I32Add);
            em.fb.get(k).u32c(row).op(I::I32Mul).memory_copy();
        });
        Ok(())
    }
}

fn push_f(em: &mut Em, v: f32, vec: bool) {
    if vec {
        em.fb.f32x4c(v);
    } else {
        em.fb.f32c(v);
    }
}

fn push_i(em: &mut Em, v: i32, vec: bool) {
    if vec {
        em.fb.i32x4c(v);
    } else {
        em.fb.i32c(v);
    }
}

/// The vector accumulators of a row reduction.
const ACCS: u32 = 4;

/// The vector instruction that combines two partial results, and the
/// scalar one (for integer max/min, the comparison `combine_s` selects by).
fn combine(op: ReduceOp, f: bool) -> (I<'static>, I<'static>) {
    match (op, f) {
        (ReduceOp::Sum, true) => (I::F32x4Add, I::F32Add),
        (ReduceOp::Max, true) => (I::F32x4Max, I::F32Max),
        (_, true) => (I::F32x4Min, I::F32Min),
        (ReduceOp::Sum, false) => (I::I32x4Add, I::I32Add),
        // Scalar integer max/min have no instruction: see `combine_s`.
        (ReduceOp::Max, false) => (I::I32x4MaxS, I::I32GtS),
        (_, false) => (I::I32x4MinS, I::I32LtS),
    }
}

//! The static work counter: what one grid step of a specialised kernel
//! does, counted from its Tile IR by one set of per-op rules. XLA's cost
//! estimate ([`super::cost`]) and the tuner's model (`pk_runtime::tune`)
//! both count with it, so the two never disagree about a kernel's work.
//!
//! Rules:
//! - a `dot` is a matmul of its `m x k` by `k x n` operands (transposes
//!   read), kept by shape: `2 m n k` flops;
//! - a unary, binary, compare, select or cast op on a tile processes each
//!   of its result's elements once (one flop each, as XLA counts an
//!   elementwise op, a convert included); a transcendental unary op is
//!   also one transcendental evaluation per element;
//! - a reduction processes each element of its input once;
//! - scalar-unit work (index arithmetic, loop counters) is not counted;
//! - a DMA moves its source window's bytes;
//! - an `if` whose condition is a constant (fixed at specialisation) runs
//!   its branch; any other `if` is charged its dearer branch (matmul and
//!   vector work, then DMA bytes); a `for` with constant bounds runs its
//!   trip count (none when they make it empty), any other loop one trip.

use super::cost::{const_int, vector_elements};
use super::{
    BlockId, DType, Func, Kernel, Literal, Op, OpKind, RefView, RemotePhase, Slice, Value, ValueDef,
};

/// One matmul shape and how often it runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dot {
    pub dtype: DType,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub count: u64,
}

impl Dot {
    /// Multiply-adds count as two flops each.
    pub fn flops(&self) -> u64 {
        2u64.saturating_mul(self.m)
            .saturating_mul(self.n)
            .saturating_mul(self.k)
            .saturating_mul(self.count)
    }
}

/// The work of (part of) one grid step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepWork {
    /// Matmuls, by shape.
    pub dots: Vec<Dot>,
    /// Elements processed by vector ops.
    pub vector_ops: u64,
    /// Transcendental evaluations.
    pub transcendentals: u64,
    /// Bytes moved by the body's DMAs.
    pub dma_bytes: u64,
    /// Bytes sent to other devices: the window of every remote copy
    /// started.
    pub remote_bytes: u64,
    /// The same bytes by destination: the device id value each copy names
    /// (its index in the body), with the bytes sent to it. Copies to
    /// distinct destinations leave on distinct links of the interconnect;
    /// copies to one destination share its link.
    pub remote_by_device: Vec<(usize, u64)>,
    /// Remote copies started.
    pub remote_copies: u64,
}

/// The static count of one grid step of `k`'s body.
pub fn step(k: &Kernel) -> StepWork {
    let mut w = StepWork::default();
    if let Some(e) = k.body.entry {
        w.add_block(k, &k.body, e, 1);
    }
    w
}

impl StepWork {
    /// Floating-point operations: matmuls and vector ops.
    pub fn flops(&self) -> u64 {
        self.dots
            .iter()
            .fold(self.vector_ops, |acc, d| acc.saturating_add(d.flops()))
    }

    /// Adds the work of op `o`, run `times` times, when it is a vector,
    /// transcendental or matrix op (one that does no control flow and no
    /// DMA); returns whether it was one.
    pub fn add_leaf(&mut self, f: &Func, o: &Op, times: u64) -> bool {
        let out = vector_elements(f, o).saturating_mul(times);
        match &o.kind {
            OpKind::Unary(u, _) => {
                self.vector_ops = self.vector_ops.saturating_add(out);
                if u.is_transcendental() {
                    self.transcendentals = self.transcendentals.saturating_add(out);
                }
            }
            OpKind::Binary(..) | OpKind::Compare(..) | OpKind::Select { .. } | OpKind::Cast(_) => {
                self.vector_ops = self.vector_ops.saturating_add(out)
            }
            OpKind::Reduce { value, .. } => {
                let n = f.ty(*value).elements().unwrap_or(1).saturating_mul(times);
                self.vector_ops = self.vector_ops.saturating_add(n)
            }
            OpKind::Dot {
                lhs,
                rhs,
                trans_lhs,
                trans_rhs,
            } => {
                let (l, r) = (f.ty(*lhs).shape(), f.ty(*rhs).shape());
                let dim = |s: &[super::Dim], i: usize| {
                    s.get(i).and_then(|d| d.known()).unwrap_or(1).max(1) as u64
                };
                let (m, k) = if *trans_lhs {
                    (dim(l, 1), dim(l, 0))
                } else {
                    (dim(l, 0), dim(l, 1))
                };
                let n = if *trans_rhs { dim(r, 0) } else { dim(r, 1) };
                self.add_dot(Dot {
                    dtype: f.ty(*lhs).dtype(),
                    m,
                    n,
                    k,
                    count: times,
                });
            }
            _ => return false,
        }
        true
    }

    /// Adds the work of block `b` of `f`, run `times` times.
    pub fn add_block(&mut self, k: &Kernel, f: &Func, b: BlockId, times: u64) {
        for &op in &f.blocks[b].ops {
            let o = &f.ops[op];
            if self.add_leaf(f, o, times) {
                continue;
            }
            match &o.kind {
                OpKind::DmaStart { src, .. } => {
                    self.dma_bytes = self
                        .dma_bytes
                        .saturating_add(times.saturating_mul(dma_bytes(k, src)))
                }
                OpKind::RemoteDma {
                    phase: RemotePhase::Start,
                    src,
                    device,
                    ..
                } => self.add_remote(
                    device.index(),
                    times.saturating_mul(dma_bytes(k, src)),
                    times,
                ),
                OpKind::If {
                    cond,
                    then_block,
                    else_block,
                } => match const_bool(f, *cond) {
                    Some(c) => {
                        self.add_block(k, f, if c { *then_block } else { *else_block }, times)
                    }
                    None => {
                        let (mut a, mut e) = (StepWork::default(), StepWork::default());
                        a.add_block(k, f, *then_block, times);
                        e.add_block(k, f, *else_block, times);
                        self.merge(StepWork::dearer(a, e));
                    }
                },
                OpKind::For {
                    lo, hi, step, body, ..
                } => {
                    let trips = match (const_int(f, *lo), const_int(f, *hi)) {
                        (Some(l), Some(h)) if h > l => ((h - l) as u64).div_ceil(*step),
                        // Constant bounds that make the loop empty.
                        (Some(_), Some(_)) => 0,
                        _ => 1,
                    };
                    self.add_block(k, f, *body, times.saturating_mul(trips));
                }
                OpKind::While { cond, body, .. } => {
                    self.add_block(k, f, *cond, times);
                    self.add_block(k, f, *body, times);
                }
                _ => {}
            }
        }
    }

    /// Adds `copies` remote copies of `bytes` in all to the device whose
    /// id is value `device` of the body.
    pub fn add_remote(&mut self, device: usize, bytes: u64, copies: u64) {
        self.remote_bytes = self.remote_bytes.saturating_add(bytes);
        self.remote_copies = self.remote_copies.saturating_add(copies);
        match self.remote_by_device.iter_mut().find(|(d, _)| *d == device) {
            Some((_, b)) => *b = b.saturating_add(bytes),
            None => self.remote_by_device.push((device, bytes)),
        }
    }

    /// Bytes sent to the destination that receives the most: what the
    /// busiest link of the interconnect carries.
    pub fn remote_link_bytes(&self) -> u64 {
        self.remote_by_device
            .iter()
            .map(|(_, b)| *b)
            .max()
            .unwrap_or(0)
    }

    /// Rounds of remote copies: copies to distinct destinations travel
    /// side by side, so the copies over the number of destinations
    /// (rounded up).
    pub fn remote_rounds(&self) -> u64 {
        match self.remote_by_device.len() as u64 {
            0 => 0,
            n => self.remote_copies.div_ceil(n),
        }
    }

    /// The more expensive of two branches' work: matmul and vector work,
    /// then DMA bytes (a branch that only copies is dearer than an empty
    /// one).
    pub fn dearer(a: StepWork, e: StepWork) -> StepWork {
        let cost = |x: &StepWork| {
            let ops = x
                .dots
                .iter()
                .map(|d| (d.m * d.n * d.k * d.count) as f64)
                .sum::<f64>()
                + x.vector_ops as f64;
            (ops, x.dma_bytes, x.remote_bytes)
        };
        if cost(&a) >= cost(&e) {
            a
        } else {
            e
        }
    }

    /// Adds `x`'s work.
    pub fn merge(&mut self, x: StepWork) {
        self.vector_ops = self.vector_ops.saturating_add(x.vector_ops);
        self.transcendentals = self.transcendentals.saturating_add(x.transcendentals);
        self.dma_bytes = self.dma_bytes.saturating_add(x.dma_bytes);
        for (d, b) in x.remote_by_device {
            self.add_remote(d, b, 0);
        }
        self.remote_copies = self.remote_copies.saturating_add(x.remote_copies);
        for d in x.dots {
            self.add_dot(d);
        }
    }

    /// Adds a matmul, merged with one of the same shape.
    pub fn add_dot(&mut self, d: Dot) {
        match self
            .dots
            .iter_mut()
            .find(|e| (e.dtype, e.m, e.n, e.k) == (d.dtype, d.m, d.n, d.k))
        {
            Some(e) => e.count = e.count.saturating_add(d.count),
            None => self.dots.push(d),
        }
    }
}

/// Bytes one DMA from window `src` moves.
pub fn dma_bytes(k: &Kernel, src: &RefView) -> u64 {
    let r = &k.refs[src.target].ty;
    let n: u64 = src
        .index
        .iter()
        .zip(r.shape.iter())
        .map(|(s, d)| match s {
            Slice::Index(_) => 1,
            Slice::Range { size: 0, .. } => d.known().unwrap_or(1) as u64,
            Slice::Range { size, .. } | Slice::Strided { size, .. } => *size,
        })
        .product();
    n * r.dtype.bytes()
}

/// The value of a `bool` constant op, if `v` is one.
fn const_bool(f: &Func, v: Value) -> Option<bool> {
    match f.values[v].def {
        ValueDef::Result(op, 0) => match f.ops[op].kind {
            OpKind::Const(Literal::Bool(b)) => Some(b),
            _ => None,
        },
        _ => None,
    }
}

//! The work of one kernel specialisation, counted from its Tile IR: what
//! the model of [`super::model`] needs per grid step (matmul shapes and
//! counts, vector and transcendental operations, DMA bytes) and per call
//! (bytes the pipeline copies when block indices change).
//!
//! Counting follows the pipeline's contract: an input block is copied in
//! when its block index differs from the previous step's, an output block
//! is written back when its index changes (and at the end). Index maps are
//! counted per step by [`pk_lang::ir::cost::fetches`]; a map it cannot
//! evaluate (one reading scalar-prefetch values) counts a copy every step.
//! A run-time `if` is charged its more expensive branch; a `for` with
//! constant bounds its trip count; a `while` one trip.
//!
//! [`super::count`] counts the same work on given inputs instead, step by
//! step: what it finds is in [`Work::classes`], and [`Work::counted`] says
//! so.

use pk_lang::ir::cost::{const_int, fetches, vector_elements};
use pk_lang::ir::{BlockId, DType, Func, Kernel, Op, OpKind, RefView, Semantics, Slice};

/// One matmul shape of the body and how often a step runs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dot {
    pub dtype: DType,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub count: u64,
}

/// See the module documentation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Work {
    pub steps: u64,
    /// Steps over the `parallel` axes (the product of their extents).
    pub parallel_steps: u64,
    /// Per step.
    pub dots: Vec<Dot>,
    /// Per step: elements processed by vector ops.
    pub vector_ops: f64,
    /// Per step: transcendental evaluations.
    pub transcendentals: f64,
    /// Per call: bytes of blocks copied in and written back, and moved by
    /// the body's DMAs.
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub dma_bytes: u64,
    /// The first step's input blocks and the last step's output blocks,
    /// which the pipeline cannot overlap with compute.
    pub first_in_bytes: u64,
    pub last_out_bytes: u64,
    /// Per call: the bytes of single-buffered blocks (`buffered(1)`)
    /// moved between steps, which the pipeline cannot overlap with
    /// compute either: with one buffer the copy waits for the step that
    /// used the old block and the next step waits for it. Also counted in
    /// `bytes_in` and `bytes_out`.
    pub exposed_bytes: u64,
    /// Every operand moved once (of those in HBM, at most what the DMAs
    /// move): the least traffic any blocking allows.
    pub min_bytes: u64,
    /// Whether the work was counted on inputs ([`super::count`]); then
    /// `steps`, the bytes and `classes` are what the grid really does, and
    /// `dots`, `vector_ops` and `transcendentals` stay the static count of
    /// one step.
    pub counted: bool,
    /// Counted mode: the grid steps grouped by the work they do.
    pub classes: Vec<StepClass>,
    /// Counted mode: how many times a branch, loop or index map depended
    /// on values the count does not know (tile data), and the static rule
    /// above was used for it instead.
    pub approximate: u64,
}

/// Grid steps that do the same work, in counted mode.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepClass {
    /// How many steps do this work.
    pub count: u64,
    /// Per step, as in [`Work`].
    pub dots: Vec<Dot>,
    pub vector_ops: f64,
    pub transcendentals: f64,
    /// Per step: bytes of the blocks copied in or written back at this
    /// step and moved by its DMAs.
    pub bytes: u64,
    /// Per step: the rounds of the body's own DMA pipeline, each a run of
    /// DMA waits that tile work follows (a double-buffered loop over key
    /// blocks waits once per block): each costs what a grid step's
    /// bookkeeping does.
    pub dma_rounds: u64,
    /// Per step: the part of `bytes` that single-buffered blocks move
    /// (see [`Work::exposed_bytes`]).
    pub exposed: u64,
}

impl Work {
    /// The work of one call: every dot shape with its count per call, the
    /// vector elements and the transcendental evaluations.
    pub fn per_call(&self) -> (Vec<Dot>, f64, f64) {
        let mut dots: Vec<Dot> = Vec::new();
        let (mut vector, mut trans) = (0.0, 0.0);
        let mut add = |ds: &[Dot], v: f64, t: f64, times: u64| {
            for d in ds {
                add_dot(
                    &mut dots,
                    Dot {
                        count: d.count * times,
                        ..*d
                    },
                );
            }
            vector += v * times as f64;
            trans += t * times as f64;
        };
        if self.counted {
            for c in &self.classes {
                add(&c.dots, c.vector_ops, c.transcendentals, c.count);
            }
        } else {
            add(
                &self.dots,
                self.vector_ops,
                self.transcendentals,
                self.steps,
            );
        }
        (dots, vector, trans)
    }
}

/// Counts the work of a specialised kernel.
pub fn count(k: &Kernel) -> Work {
    let steps = k.grid_steps().unwrap_or(1).max(1);
    let mut w = Work {
        steps,
        parallel_steps: k
            .grid
            .iter()
            .filter(|a| a.semantics == Semantics::Parallel)
            .map(|a| a.extent.known().unwrap_or(1).max(1) as u64)
            .product(),
        ..Work::default()
    };
    if let Some(e) = k.body.entry {
        body(k, &k.body, e, 1, &mut w);
    }
    // `body` counts DMA bytes per step.
    w.dma_bytes *= steps;
    w.min_bytes = least_bytes(k, w.dma_bytes);
    for o in &k.operands {
        let elem = o.dtype.bytes();
        let Some(b) = &o.block else {
            continue;
        };
        let block: u64 = b
            .dims
            .iter()
            .map(|d| d.extent().known().unwrap_or(1) as u64)
            .product::<u64>()
            * elem;
        let moves = fetches(k, &b.index_map, steps) * block;
        if b.buffer_count() == 1 {
            // Every move but the first fetch (or the last write-back),
            // which the fill and drain count.
            w.exposed_bytes += moves.saturating_sub(block);
        }
        if o.role == pk_lang::ir::Role::Output {
            w.bytes_out += moves;
            w.last_out_bytes += block;
        } else {
            w.bytes_in += moves;
            w.first_in_bytes += block;
        }
    }
    w
}

/// The least traffic any blocking allows: every blocked or whole VMEM/SMEM
/// operand moved once, and of the operands left in HBM (reached by DMA)
/// at most what the kernel's DMAs move, `dma_bytes` (a paged kernel reads
/// only the pages its lengths fill, not the whole cache).
pub(super) fn least_bytes(k: &Kernel, dma_bytes: u64) -> u64 {
    let (mut moved, mut in_hbm) = (0u64, 0u64);
    for o in &k.operands {
        let whole = o
            .shape
            .iter()
            .map(|d| d.known().unwrap_or(0).max(0) as u64)
            .product::<u64>()
            * o.dtype.bytes();
        if o.block.is_none() && o.space == pk_lang::ir::Space::Any {
            in_hbm += whole;
        } else {
            moved += whole;
        }
    }
    moved + in_hbm.min(dma_bytes)
}

fn elements(f: &Func, v: pk_lang::ir::Value) -> u64 {
    f.ty(v).elements().unwrap_or(1)
}

/// Adds the work of op `o` to `w`, run `times` times per step, when it is
/// a vector, transcendental or matrix op (one that does no control flow
/// and no DMA); returns whether it was one.
pub(super) fn leaf(f: &Func, o: &Op, times: u64, w: &mut Work) -> bool {
    let out = vector_elements(f, o);
    let t = times as f64;
    match &o.kind {
        OpKind::Unary(u, _) => {
            w.vector_ops += t * out as f64;
            if u.is_transcendental() {
                w.transcendentals += t * out as f64;
            }
        }
        OpKind::Binary(..) | OpKind::Compare(..) | OpKind::Select { .. } | OpKind::Cast(_) => {
            w.vector_ops += t * out as f64
        }
        OpKind::Reduce { value, .. } => w.vector_ops += t * elements(f, *value) as f64,
        OpKind::Dot {
            lhs,
            rhs,
            trans_lhs,
            trans_rhs,
        } => {
            let (l, r) = (f.ty(*lhs).shape(), f.ty(*rhs).shape());
            let dim = |s: &[pk_lang::ir::Dim], i: usize| {
                s.get(i).and_then(|d| d.known()).unwrap_or(1).max(1) as u64
            };
            let (m, kk) = if *trans_lhs {
                (dim(l, 1), dim(l, 0))
            } else {
                (dim(l, 0), dim(l, 1))
            };
            let n = if *trans_rhs { dim(r, 0) } else { dim(r, 1) };
            add_dot(
                &mut w.dots,
                Dot {
                    dtype: f.ty(*lhs).dtype(),
                    m,
                    n,
                    k: kk,
                    count: times,
                },
            );
        }
        _ => return false,
    }
    true
}

/// Bytes one DMA from window `src` moves.
pub(super) fn dma_bytes(k: &Kernel, src: &RefView) -> u64 {
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

fn add_dot(dots: &mut Vec<Dot>, d: Dot) {
    match dots
        .iter_mut()
        .find(|e| (e.dtype, e.m, e.n, e.k) == (d.dtype, d.m, d.n, d.k))
    {
        Some(e) => e.count += d.count,
        None => dots.push(d),
    }
}

/// Adds the work of block `b`, run `times` times per step, to `w` (DMA
/// bytes per step too).
pub(super) fn body(k: &Kernel, f: &Func, b: BlockId, times: u64, w: &mut Work) {
    for &op in &f.blocks[b].ops {
        let o = &f.ops[op];
        if leaf(f, o, times, w) {
            continue;
        }
        match &o.kind {
            OpKind::DmaStart { src, .. } => w.dma_bytes += times * dma_bytes(k, src),
            OpKind::If {
                cond,
                then_block,
                else_block,
            } => match const_bool(f, *cond) {
                // A condition fixed at specialisation (a `bool` argument of
                // an inlined function) takes its branch.
                Some(c) => body(k, f, if c { *then_block } else { *else_block }, times, w),
                None => {
                    let (mut a, mut e) = (Work::default(), Work::default());
                    body(k, f, *then_block, times, &mut a);
                    body(k, f, *else_block, times, &mut e);
                    merge(w, dearer(a, e));
                }
            },
            OpKind::For {
                lo,
                hi,
                step,
                body: inner,
                ..
            } => {
                let trips = match (const_int(f, *lo), const_int(f, *hi)) {
                    (Some(l), Some(h)) if h > l => ((h - l) as u64).div_ceil(*step),
                    _ => 1,
                };
                body(k, f, *inner, times * trips, w);
            }
            OpKind::While {
                cond, body: inner, ..
            } => {
                body(k, f, *cond, times, w);
                body(k, f, *inner, times, w);
            }
            _ => {}
        }
    }
}

/// The more expensive of two branches' work: matmul and vector work,
/// then DMA bytes (a branch that only copies is dearer than an empty one).
pub(super) fn dearer(a: Work, e: Work) -> Work {
    let cost = |x: &Work| {
        let ops = x
            .dots
            .iter()
            .map(|d| (d.m * d.n * d.k * d.count) as f64)
            .sum::<f64>()
            + x.vector_ops;
        (ops, x.dma_bytes)
    };
    if cost(&a) >= cost(&e) {
        a
    } else {
        e
    }
}

/// The value of a `bool` constant op, if `v` is one.
fn const_bool(f: &Func, v: pk_lang::ir::Value) -> Option<bool> {
    match f.values[v].def {
        pk_lang::ir::ValueDef::Result(op, 0) => match f.ops[op].kind {
            OpKind::Const(pk_lang::ir::Literal::Bool(b)) => Some(b),
            _ => None,
        },
        _ => None,
    }
}

/// Adds the per-step work of `x` to `w`.
pub(super) fn merge(w: &mut Work, x: Work) {
    w.vector_ops += x.vector_ops;
    w.transcendentals += x.transcendentals;
    w.dma_bytes += x.dma_bytes;
    for d in x.dots {
        add_dot(&mut w.dots, d);
    }
}

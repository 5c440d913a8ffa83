//! The work of one kernel specialisation, counted from its Tile IR: what
//! the model of [`super::model`] needs per grid step (matmul shapes and
//! counts, vector and transcendental operations, DMA bytes) and per call
//! (bytes the pipeline copies when block indices change).
//!
//! A step's work is [`pk_lang::ir::work`]'s count, the one XLA's cost
//! estimate uses too (its rules: a run-time `if` is charged its more
//! expensive branch; a `for` with constant bounds its trip count; a
//! `while` one trip). Copies follow the pipeline's contract: an input
//! block is copied in when its block index differs from the previous
//! step's, an output block is written back when its index changes (and at
//! the end). Index maps are counted per step by
//! [`pk_lang::ir::cost::fetches`]; a map it cannot evaluate (one reading
//! scalar-prefetch values) counts a copy every step.
//!
//! [`super::count`] counts the same work on given inputs instead, step by
//! step: what it finds is in [`Work::classes`], and [`Work::counted`] says
//! so.

use pk_lang::ir::cost::fetches;
use pk_lang::ir::work::StepWork;
use pk_lang::ir::{Kernel, Semantics};

/// One matmul shape of the body and how often a step runs it.
pub use pk_lang::ir::work::Dot;

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
    /// Per call: bytes sent to other devices by remote copies, the part of
    /// them the busiest link carries (copies to one destination share a
    /// link; see [`pk_lang::ir::work::StepWork::remote_link_bytes`]), and
    /// the rounds of remote copies (copies to distinct destinations start
    /// side by side).
    pub remote_bytes: u64,
    pub remote_link_bytes: u64,
    pub remote_rounds: u64,
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
    /// Per step: bytes sent to other devices, those of the busiest link,
    /// and the rounds of remote copies, as in [`Work`].
    pub remote_bytes: u64,
    pub remote_link_bytes: u64,
    pub remote_rounds: u64,
}

impl Work {
    /// The work of one call: every dot shape with its count per call, the
    /// vector elements and the transcendental evaluations.
    pub fn per_call(&self) -> (Vec<Dot>, f64, f64) {
        let mut dots = StepWork::default();
        let (mut vector, mut trans) = (0.0, 0.0);
        let mut add = |ds: &[Dot], v: f64, t: f64, times: u64| {
            for d in ds {
                dots.add_dot(Dot {
                    count: d.count * times,
                    ..*d
                });
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
        (dots.dots, vector, trans)
    }

    /// Sets the per-step work to `s`'s.
    pub(super) fn set_step(&mut self, s: StepWork) {
        self.remote_link_bytes = s.remote_link_bytes();
        self.remote_rounds = s.remote_rounds();
        self.dots = s.dots;
        self.vector_ops = s.vector_ops as f64;
        self.transcendentals = s.transcendentals as f64;
        self.dma_bytes = s.dma_bytes;
        self.remote_bytes = s.remote_bytes;
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
    w.set_step(pk_lang::ir::work::step(k));
    // The step's count has DMA and remote bytes per step.
    w.dma_bytes *= steps;
    w.remote_bytes *= steps;
    w.remote_link_bytes *= steps;
    w.remote_rounds *= steps;
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

//! Counting mode: the work of one kernel specialisation on given inputs,
//! step by step, for kernels whose work depends on scalar-prefetch values
//! (paged, ragged and grouped kernels: sequence lengths, page tables,
//! group offsets).
//!
//! The count runs the grid in row-major order without computing tiles: it
//! evaluates the scalar part of the Tile IR (grid indices, constants,
//! scalar arithmetic, comparisons and casts, scalar loads from the given
//! arrays and from SMEM scratch written earlier) and walks the body as
//! that scalar state decides, so an `if` runs the branch the inputs take, a
//! `for` its real trip count and a `while` its real iterations. Along the
//! way it counts what [`super::work`] counts statically, with the same
//! per-op rules ([`pk_lang::ir::work`]): dots, vector elements,
//! transcendentals, DMA bytes; index maps are evaluated with the same
//! values, so a block copy is counted exactly when its block index
//! changes. Dynamic grid axes take their extent from the given element.
//!
//! Invariants:
//! 1. Nothing reads tile data: a value that depends on it is unknown, and a
//!    branch, loop or index map that depends on an unknown value falls back
//!    to the static rule of [`super::work`] for that construct (counted in
//!    [`Work::approximate`]).
//! 2. With every branch decided, the count equals what the CPU reference
//!    does on the same inputs: the same DMAs started, the same dots called,
//!    the same blocks copied under the pipeline's rule (an input block when
//!    its index differs from the previous step's, an output block per run
//!    of equal indices). Two differences are the model's conventions: a
//!    block is charged whole where the executor counts only the part
//!    inside a ragged array, and the prefetch arrays the executor copies
//!    into SMEM are not charged.
//! 3. The static count is the count of a kernel whose every decision is
//!    unknown: both use the same per-op rules.

use super::work::{self, StepClass, Work};
use pk_lang::ir::work::{dma_bytes, StepWork};
use pk_lang::ir::{
    BinaryOp, BlockId, CmpOp, DType, Func, Kernel, Literal, OpKind, RefOrigin, RefView,
    RemotePhase, Role, Semantics, Slice, Start, UnaryOp, Value,
};
use std::collections::HashMap;

/// Grids with more steps than this are not counted (the static count
/// stands).
pub const MAX_STEPS: u64 = 1 << 20;

/// Iterations of one loop the count follows; past them the static rule
/// counts the rest.
const MAX_TRIPS: u64 = 1 << 20;

/// Ops the count walks for one configuration, every step and trip
/// included; past them it gives up and the static count stands, so that
/// no kernel keeps the tuner counting for long.
pub const MAX_OPS: u64 = 1 << 26;

/// A scalar as the count knows it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum S {
    I(i64),
    F(f64),
    B(bool),
    /// Depends on tile data, or on an input that was not given.
    U,
}

impl S {
    fn int(self) -> Option<i64> {
        match self {
            S::I(v) => Some(v),
            _ => None,
        }
    }
}

/// The arrays the count reads, by operand index (into `Kernel::operands`),
/// each as its elements in row-major order.
pub type Arrays = HashMap<usize, Vec<f64>>;

/// The operands whose values the count reads: those in SMEM (scalar
/// prefetch, and whole SMEM inputs), as indices into `Kernel::operands`.
pub fn read_operands(k: &Kernel) -> Vec<usize> {
    k.operands
        .iter()
        .enumerate()
        .filter(|(_, o)| {
            o.role == Role::Prefetch
                || (o.role == Role::Input && o.space == pk_lang::ir::Space::Smem)
        })
        .map(|(i, _)| i)
        .collect()
}

/// Counts the work of one call of `k` on `arrays`; `None` when the grid
/// has more than [`MAX_STEPS`] steps or the count walks more than
/// [`MAX_OPS`] ops.
pub fn count(k: &Kernel, arrays: &Arrays) -> Option<Work> {
    let mut c = Counter {
        k,
        arrays,
        smem: HashMap::new(),
        approximate: 0,
        ops_left: MAX_OPS,
        waiting: false,
        rounds: 0,
    };
    let extents: Vec<u64> = k
        .grid
        .iter()
        .map(|a| {
            let bound = a.extent.known().unwrap_or(1).max(0) as u64;
            match &a.dynamic {
                None => bound,
                Some(d) => {
                    let shape: Vec<u64> = k.operands[d.operand]
                        .shape
                        .iter()
                        .map(|s| s.known().unwrap_or(0).max(0) as u64)
                        .collect();
                    match arrays
                        .get(&d.operand)
                        .and_then(|v| v.get(d.flat_index(&shape) as usize))
                    {
                        // The CPU reference refuses an extent outside
                        // 0..=bound (PK1035); the count clamps it.
                        Some(&v) if v < 0.0 || v > bound as f64 => {
                            c.approximate += 1;
                            (v.max(0.0) as u64).min(bound)
                        }
                        Some(&v) => v as u64,
                        None => {
                            c.approximate += 1;
                            bound
                        }
                    }
                }
            }
        })
        .collect();
    let steps = extents
        .iter()
        .try_fold(1u64, |n, &e| n.checked_mul(e))
        .filter(|&n| n <= MAX_STEPS)?;
    let mut w = work::count(k);
    w.counted = true;
    w.steps = steps;
    w.parallel_steps = k
        .grid
        .iter()
        .zip(&extents)
        .filter(|(a, _)| a.semantics == Semantics::Parallel)
        .map(|(_, &e)| e.max(1))
        .product();
    w.bytes_in = 0;
    w.bytes_out = 0;
    w.dma_bytes = 0;
    w.remote_bytes = 0;
    w.remote_link_bytes = 0;
    w.remote_rounds = 0;
    w.first_in_bytes = 0;
    w.last_out_bytes = 0;
    w.exposed_bytes = 0;
    let block_bytes: Vec<u64> = k
        .operands
        .iter()
        .map(|o| {
            o.block.as_ref().map_or(0, |b| {
                b.dims
                    .iter()
                    .map(|d| d.extent().known().unwrap_or(1) as u64)
                    .product::<u64>()
                    * o.dtype.bytes()
            })
        })
        .collect();
    let mut last: Vec<Option<Vec<i64>>> = vec![None; k.operands.len()];
    let mut classes: HashMap<ClassKey, usize> = HashMap::new();
    let mut idx = vec![0i64; extents.len()];
    for s in 0..steps {
        let grid: Vec<S> = idx.iter().map(|&i| S::I(i)).collect();
        let mut bytes = 0u64;
        let mut exposed = 0u64;
        for (i, o) in k.operands.iter().enumerate() {
            let Some(b) = &o.block else { continue };
            let now = c.index_map(&b.index_map, &grid);
            // An index map the count cannot evaluate moves its block every
            // step, as in the static count.
            let moved = now.is_none() || now != last[i];
            if now.is_none() {
                c.approximate += 1;
            }
            last[i] = now;
            if !moved {
                continue;
            }
            bytes += block_bytes[i];
            if s > 0 && b.buffer_count() == 1 {
                exposed += block_bytes[i];
            }
            if o.role == Role::Output {
                w.bytes_out += block_bytes[i];
            } else {
                w.bytes_in += block_bytes[i];
                if s == 0 {
                    w.first_in_bytes += block_bytes[i];
                }
            }
        }
        let mut acc = StepWork::default();
        c.waiting = false;
        c.rounds = 0;
        if let Some(e) = k.body.entry {
            let mut env = vec![S::U; k.body.values.len()];
            for (p, g) in k.body.blocks[e].params.iter().zip(&grid) {
                env[p.index()] = *g;
            }
            c.block(&k.body, e, &mut env, &mut acc);
        }
        w.dma_bytes += acc.dma_bytes;
        bytes += acc.dma_bytes;
        w.exposed_bytes += exposed;
        let (remote, link, remote_rounds) = (
            acc.remote_bytes,
            acc.remote_link_bytes(),
            acc.remote_rounds(),
        );
        w.remote_bytes += remote;
        w.remote_link_bytes += link;
        w.remote_rounds += remote_rounds;
        let key = ClassKey::of(&acc, bytes, exposed, c.rounds);
        match classes.get(&key) {
            Some(&j) => w.classes[j].count += 1,
            None => {
                classes.insert(key, w.classes.len());
                w.classes.push(StepClass {
                    count: 1,
                    dots: acc.dots,
                    vector_ops: acc.vector_ops as f64,
                    transcendentals: acc.transcendentals as f64,
                    bytes,
                    dma_rounds: c.rounds,
                    exposed,
                    remote_bytes: remote,
                    remote_link_bytes: link,
                    remote_rounds,
                });
            }
        }
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if (idx[d] as u64) < extents[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    if c.exhausted() {
        return None;
    }
    if steps > 0 {
        w.last_out_bytes = k
            .operands
            .iter()
            .zip(&block_bytes)
            .filter(|(o, _)| o.role == Role::Output)
            .map(|(_, b)| b)
            .sum();
    }
    w.approximate = c.approximate;
    w.min_bytes = work::least_bytes(k, w.dma_bytes);
    Some(w)
}

/// What makes two steps' work the same.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ClassKey {
    dots: Vec<(DType, u64, u64, u64, u64)>,
    vector_ops: u64,
    transcendentals: u64,
    bytes: u64,
    exposed: u64,
    dma_rounds: u64,
    remote: Vec<(usize, u64)>,
    remote_copies: u64,
}

impl ClassKey {
    fn of(w: &StepWork, bytes: u64, exposed: u64, dma_rounds: u64) -> ClassKey {
        let mut dots: Vec<_> = w
            .dots
            .iter()
            .map(|d| (d.dtype, d.m, d.n, d.k, d.count))
            .collect();
        dots.sort();
        ClassKey {
            dots,
            vector_ops: w.vector_ops,
            transcendentals: w.transcendentals,
            bytes,
            exposed,
            dma_rounds,
            remote: w.remote_by_device.clone(),
            remote_copies: w.remote_copies,
        }
    }
}

struct Counter<'a> {
    k: &'a Kernel,
    arrays: &'a Arrays,
    /// Scalars stored to refs the arrays do not cover (SMEM scratch), by
    /// (ref, row-major position); they persist across steps, as scratch
    /// does.
    smem: HashMap<(usize, u64), S>,
    approximate: u64,
    /// Ops the count may still walk (see [`MAX_OPS`]).
    ops_left: u64,
    /// Whether the last DMA or tile op of this step was a DMA wait, and
    /// the step's rounds so far: a run of waits that tile work follows is
    /// one round of the body's own pipeline.
    waiting: bool,
    rounds: u64,
}

impl Counter<'_> {
    /// Forgets the scalars stored to ref `r`.
    fn forget(&mut self, r: usize) {
        self.smem.retain(|(at, _), _| *at != r);
    }

    /// Whether the count spent its budget of ops (it then gives up).
    fn exhausted(&self) -> bool {
        self.ops_left == 0
    }

    /// The block indices an index map gives at `grid`, when known.
    fn index_map(&mut self, f: &Func, grid: &[S]) -> Option<Vec<i64>> {
        let e = f.entry?;
        let mut env = vec![S::U; f.values.len()];
        for (p, g) in f.blocks[e].params.iter().zip(grid) {
            env[p.index()] = *g;
        }
        let mut scratch = StepWork::default();
        let ys = self.block(f, e, &mut env, &mut scratch);
        ys.into_iter().map(S::int).collect()
    }

    /// Walks block `b` of `f` once, adding its work to `acc`; returns the
    /// values it yields.
    fn block(&mut self, f: &Func, b: BlockId, env: &mut Vec<S>, acc: &mut StepWork) -> Vec<S> {
        let k = self.k;
        for &op in &f.blocks[b].ops {
            if self.exhausted() {
                return vec![S::U; f.blocks[b].yields.len()];
            }
            self.ops_left -= 1;
            let o = &f.ops[op];
            let results: Vec<S> = match &o.kind {
                OpKind::If {
                    cond,
                    then_block,
                    else_block,
                } => match env[cond.index()] {
                    S::B(c) => {
                        let taken = if c { *then_block } else { *else_block };
                        self.block(f, taken, env, acc)
                    }
                    _ => {
                        self.approximate += 1;
                        let (mut a, mut e) = (StepWork::default(), StepWork::default());
                        a.add_block(k, f, *then_block, 1);
                        e.add_block(k, f, *else_block, 1);
                        acc.merge(StepWork::dearer(a, e));
                        vec![S::U; o.results.len()]
                    }
                },
                OpKind::For {
                    lo,
                    hi,
                    step,
                    inits,
                    body,
                } => {
                    let inits: Vec<S> = inits.iter().map(|v| env[v.index()]).collect();
                    match (env[lo.index()].int(), env[hi.index()].int()) {
                        (Some(l), Some(h)) => {
                            let trips = if h > l {
                                ((h - l) as u64).div_ceil(*step)
                            } else {
                                0
                            };
                            self.for_loop(f, *body, l, *step, trips, inits, env, acc)
                        }
                        _ => {
                            self.approximate += 1;
                            acc.add_block(k, f, *body, 1);
                            vec![S::U; o.results.len()]
                        }
                    }
                }
                OpKind::While { inits, cond, body } => {
                    let inits: Vec<S> = inits.iter().map(|v| env[v.index()]).collect();
                    self.while_loop(f, *cond, *body, inits, env, acc)
                }
                OpKind::DmaStart { src, dst, .. } => {
                    acc.dma_bytes += dma_bytes(k, src);
                    self.forget(dst.target.index());
                    Vec::new()
                }
                OpKind::RemoteDma {
                    phase: RemotePhase::Start,
                    src,
                    device,
                    ..
                } => {
                    acc.add_remote(device.index(), dma_bytes(k, src), 1);
                    Vec::new()
                }
                OpKind::DmaWait { .. } => {
                    if !self.waiting {
                        self.waiting = true;
                        self.rounds += 1;
                    }
                    Vec::new()
                }
                OpKind::Store(view, x, None) if f.ty(*x).is_scalar() => {
                    match self.position(view, env) {
                        Some(at) => {
                            self.smem.insert((view.target.index(), at), env[x.index()]);
                        }
                        None => self.forget(view.target.index()),
                    }
                    Vec::new()
                }
                // A tile (or masked) store may overwrite scalars stored
                // before: they are unknown from here on.
                OpKind::Store(view, ..) => {
                    self.forget(view.target.index());
                    Vec::new()
                }
                _ => {
                    if acc.add_leaf(f, o, 1) && !f.ty(o.results[0]).is_scalar() {
                        self.waiting = false;
                    }
                    vec![self.scalar(f, o, env)]
                }
            };
            for (r, v) in o.results.iter().zip(results) {
                env[r.index()] = v;
            }
        }
        f.blocks[b].yields.iter().map(|y| env[y.index()]).collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn for_loop(
        &mut self,
        f: &Func,
        body: BlockId,
        lo: i64,
        step: u64,
        trips: u64,
        mut carried: Vec<S>,
        env: &mut Vec<S>,
        acc: &mut StepWork,
    ) -> Vec<S> {
        let params = f.blocks[body].params.clone();
        let Some((iv, rest)) = params.split_first() else {
            self.approximate += 1;
            acc.add_block(self.k, f, body, trips);
            return vec![S::U; carried.len()];
        };
        for t in 0..trips.min(MAX_TRIPS) {
            if self.exhausted() {
                return vec![S::U; carried.len()];
            }
            env[iv.index()] = S::I(lo + (t * step) as i64);
            for (p, v) in rest.iter().zip(&carried) {
                env[p.index()] = *v;
            }
            carried = self.block(f, body, env, acc);
        }
        if trips > MAX_TRIPS {
            self.approximate += 1;
            acc.add_block(self.k, f, body, trips - MAX_TRIPS);
            carried = vec![S::U; carried.len()];
        }
        carried
    }

    fn while_loop(
        &mut self,
        f: &Func,
        cond: BlockId,
        body: BlockId,
        mut carried: Vec<S>,
        env: &mut Vec<S>,
        acc: &mut StepWork,
    ) -> Vec<S> {
        let bind = |env: &mut Vec<S>, b: BlockId, vs: &[S]| {
            for (p, v) in f.blocks[b].params.iter().zip(vs) {
                env[p.index()] = *v;
            }
        };
        for _ in 0..MAX_TRIPS {
            if self.exhausted() {
                return vec![S::U; carried.len()];
            }
            bind(env, cond, &carried);
            match self.block(f, cond, env, acc).first() {
                Some(S::B(false)) => return carried,
                Some(S::B(true)) => {
                    bind(env, body, &carried);
                    carried = self.block(f, body, env, acc);
                }
                _ => break,
            }
        }
        // An unknown condition (or a loop past MAX_TRIPS): one more trip,
        // as the static count charges.
        self.approximate += 1;
        acc.add_block(self.k, f, body, 1);
        vec![S::U; carried.len()]
    }

    /// The row-major position of a scalar window (every dimension indexed),
    /// when its indices are known and inside the ref.
    fn position(&self, view: &RefView, env: &[S]) -> Option<u64> {
        let shape = &self.k.refs[view.target].ty.shape;
        let mut at = 0u64;
        for (s, d) in view.index.iter().zip(shape) {
            let Slice::Index(start) = s else { return None };
            let i = match start {
                Start::Const(c) => *c as i64,
                Start::Dyn(v) => env[v.index()].int()?,
            };
            let n = d.known()?;
            if i < 0 || i >= n {
                return None;
            }
            at = at * n as u64 + i as u64;
        }
        Some(at)
    }

    /// A scalar load: from a given array, or from a scalar stored earlier.
    fn load(&self, view: &RefView, d: DType, env: &[S]) -> S {
        let Some(at) = self.position(view, env) else {
            return S::U;
        };
        let from_array = match self.k.refs[view.target].origin {
            RefOrigin::Operand(i) => self.arrays.get(&i).and_then(|a| a.get(at as usize)),
            // Views are of VMEM and HBM refs only, never scalar memory.
            RefOrigin::Scratch(_) | RefOrigin::View(_) => None,
        };
        match from_array {
            Some(&v) if d == DType::Bool => S::B(v != 0.0),
            Some(&v) if d.is_float() => S::F(v),
            Some(&v) => S::I(v as i64),
            None => self
                .smem
                .get(&(view.target.index(), at))
                .copied()
                .unwrap_or(S::U),
        }
    }

    /// The value of a scalar op's result (unknown for tiles and for what
    /// the count does not evaluate).
    fn scalar(&self, f: &Func, o: &pk_lang::ir::Op, env: &[S]) -> S {
        let Some(r) = o.results.first() else {
            return S::U;
        };
        let ty = f.ty(*r);
        if !ty.is_scalar() {
            return S::U;
        }
        let d = ty.dtype();
        let get = |v: &Value| env[v.index()];
        let v = match &o.kind {
            OpKind::Const(l) => match *l {
                Literal::Bool(b) => S::B(b),
                Literal::Int(x) if d.is_float() => S::F(x as f64),
                Literal::Int(x) => S::I(x),
                Literal::Float(x) => S::F(x),
            },
            OpKind::Load(view) => self.load(view, d, env),
            OpKind::AssumeMultiple(x, _) => get(x),
            OpKind::Unary(u, x) => unary(*u, get(x)),
            OpKind::Binary(b, x, y) => binary(*b, get(x), get(y)),
            OpKind::Compare(c, x, y) => compare(*c, get(x), get(y)),
            OpKind::Select {
                cond,
                on_true,
                on_false,
            } => match get(cond) {
                S::B(true) => get(on_true),
                S::B(false) => get(on_false),
                _ => S::U,
            },
            OpKind::Cast(x) => cast(get(x), d),
            _ => S::U,
        };
        fit(v, d)
    }
}

/// `v` as a value of dtype `d` holds it: integers wrap to their width,
/// f32 rounds.
fn fit(v: S, d: DType) -> S {
    match (v, d) {
        (S::I(x), DType::I32) => S::I(x as i32 as i64),
        (S::I(x), DType::I16) => S::I(x as i16 as i64),
        (S::I(x), DType::I8) => S::I(x as i8 as i64),
        (S::I(x), DType::U8) => S::I(x as u8 as i64),
        (S::F(x), DType::F32) => S::F(x as f32 as f64),
        (v, _) => v,
    }
}

fn unary(u: UnaryOp, x: S) -> S {
    match x {
        S::B(b) if u == UnaryOp::Not => S::B(!b),
        S::I(v) => match u {
            UnaryOp::Neg => S::I(v.wrapping_neg()),
            UnaryOp::Not => S::I(!v),
            UnaryOp::Abs => S::I(v.wrapping_abs()),
            UnaryOp::Sign => S::I(v.signum()),
            _ => S::U,
        },
        S::F(v) => S::F(match u {
            UnaryOp::Neg => -v,
            UnaryOp::Abs => v.abs(),
            UnaryOp::Exp => v.exp(),
            UnaryOp::Exp2 => v.exp2(),
            UnaryOp::Log => v.ln(),
            UnaryOp::Log1p => v.ln_1p(),
            UnaryOp::Sqrt => v.sqrt(),
            UnaryOp::Rsqrt => 1.0 / v.sqrt(),
            UnaryOp::Tanh => v.tanh(),
            UnaryOp::Sin => v.sin(),
            UnaryOp::Cos => v.cos(),
            UnaryOp::Floor => v.floor(),
            UnaryOp::Ceil => v.ceil(),
            UnaryOp::Round => v.round_ties_even(),
            UnaryOp::Logistic => 1.0 / (1.0 + (-v).exp()),
            UnaryOp::Sign if v == 0.0 || v.is_nan() => v,
            UnaryOp::Sign => v.signum(),
            UnaryOp::Not | UnaryOp::Erf => return S::U,
        }),
        _ => S::U,
    }
}

fn binary(b: BinaryOp, x: S, y: S) -> S {
    match (x, y) {
        (S::I(x), S::I(y)) => match b {
            BinaryOp::Add => S::I(x.wrapping_add(y)),
            BinaryOp::Sub => S::I(x.wrapping_sub(y)),
            BinaryOp::Mul => S::I(x.wrapping_mul(y)),
            BinaryOp::Div => x.checked_div(y).map_or(S::U, S::I),
            BinaryOp::Rem => x.checked_rem(y).map_or(S::U, S::I),
            BinaryOp::Max => S::I(x.max(y)),
            BinaryOp::Min => S::I(x.min(y)),
            BinaryOp::And => S::I(x & y),
            BinaryOp::Or => S::I(x | y),
            BinaryOp::Xor => S::I(x ^ y),
            BinaryOp::Shl if (0..32).contains(&y) => S::I(x << y),
            BinaryOp::Shr if (0..32).contains(&y) => S::I(x >> y),
            _ => S::U,
        },
        (S::F(x), S::F(y)) => S::F(match b {
            BinaryOp::Add => x + y,
            BinaryOp::Sub => x - y,
            BinaryOp::Mul => x * y,
            BinaryOp::Div => x / y,
            BinaryOp::Rem => x % y,
            BinaryOp::Max => x.max(y),
            BinaryOp::Min => x.min(y),
            BinaryOp::Pow => x.powf(y),
            _ => return S::U,
        }),
        (S::B(x), S::B(y)) => match b {
            BinaryOp::And => S::B(x & y),
            BinaryOp::Or => S::B(x | y),
            BinaryOp::Xor => S::B(x ^ y),
            _ => S::U,
        },
        _ => S::U,
    }
}

fn compare(c: CmpOp, x: S, y: S) -> S {
    let ord = match (x, y) {
        (S::I(x), S::I(y)) => x.partial_cmp(&y),
        (S::F(x), S::F(y)) => x.partial_cmp(&y),
        (S::B(x), S::B(y)) => x.partial_cmp(&y),
        _ => return S::U,
    };
    use std::cmp::Ordering::*;
    // NaN compares unordered: only `!=` holds.
    S::B(match (c, ord) {
        (CmpOp::Ne, None) => true,
        (_, None) => false,
        (CmpOp::Eq, Some(o)) => o == Equal,
        (CmpOp::Ne, Some(o)) => o != Equal,
        (CmpOp::Lt, Some(o)) => o == Less,
        (CmpOp::Le, Some(o)) => o != Greater,
        (CmpOp::Gt, Some(o)) => o == Greater,
        (CmpOp::Ge, Some(o)) => o != Less,
    })
}

/// Conversions as the IR defines them: float to integer rounds toward
/// zero and saturates, NaN to 0.
fn cast(x: S, d: DType) -> S {
    let int_range = |d: DType| -> (f64, f64) {
        match d {
            DType::I32 => (i32::MIN as f64, i32::MAX as f64),
            DType::I16 => (i16::MIN as f64, i16::MAX as f64),
            DType::I8 => (i8::MIN as f64, i8::MAX as f64),
            _ => (0.0, u8::MAX as f64),
        }
    };
    match x {
        S::U => S::U,
        _ if d == DType::Bool => match x {
            S::I(v) => S::B(v != 0),
            S::F(v) => S::B(v != 0.0),
            b => b,
        },
        _ if d.is_float() => match x {
            S::I(v) => S::F(v as f64),
            S::B(b) => S::F(b as i64 as f64),
            f => f,
        },
        S::F(v) if v.is_nan() => S::I(0),
        S::F(v) => {
            let (lo, hi) = int_range(d);
            S::I(v.trunc().clamp(lo, hi) as i64)
        }
        S::B(b) => S::I(b as i64),
        i => i,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_follow_the_ir_semantics_of_their_dtype() {
        // i32 arithmetic wraps: 2^31 - 1 + 1 is -2^31.
        assert_eq!(
            fit(
                binary(BinaryOp::Add, S::I(i32::MAX as i64), S::I(1)),
                DType::I32
            ),
            S::I(i32::MIN as i64)
        );
        // Division rounds toward zero, remainder takes the dividend's sign.
        assert_eq!(binary(BinaryOp::Div, S::I(-7), S::I(2)), S::I(-3));
        assert_eq!(binary(BinaryOp::Rem, S::I(-7), S::I(2)), S::I(-1));
        // Division by zero is not a value the count knows.
        assert_eq!(binary(BinaryOp::Div, S::I(1), S::I(0)), S::U);
        // Float to integer truncates and saturates; NaN converts to 0.
        assert_eq!(cast(S::F(-2.7), DType::I32), S::I(-2));
        assert_eq!(cast(S::F(1e10), DType::I32), S::I(i32::MAX as i64));
        assert_eq!(cast(S::F(300.0), DType::I8), S::I(127));
        assert_eq!(cast(S::F(f64::NAN), DType::I32), S::I(0));
        assert_eq!(cast(S::I(3), DType::Bool), S::B(true));
        // NaN is unordered: only `!=` holds.
        assert_eq!(compare(CmpOp::Ne, S::F(f64::NAN), S::F(1.0)), S::B(true));
        assert_eq!(compare(CmpOp::Ge, S::F(f64::NAN), S::F(1.0)), S::B(false));
        // Anything that meets an unknown value is unknown.
        assert_eq!(binary(BinaryOp::Mul, S::U, S::I(0)), S::U);
        assert_eq!(compare(CmpOp::Lt, S::I(1), S::U), S::U);
        // f32 results are rounded to f32: 0.1 + 0.2 in f32.
        assert_eq!(
            fit(
                binary(BinaryOp::Add, S::F(0.1f32 as f64), S::F(0.2f32 as f64)),
                DType::F32
            ),
            S::F((0.1f32 + 0.2f32) as f64)
        );
    }
}

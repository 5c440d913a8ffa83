//! Fusion of elementwise work into one loop per materialised tile.
//!
//! A tile that only one elementwise op reads, in the same block, is not
//! stored: the reader computes it lane group by lane group inside its own
//! SIMD loop. Constant and splat tiles and broadcasts of a row or column
//! are never stored when only elementwise ops read them: each reader loads
//! or splats the source instead. Softmax's `exp(x - max(x))`, for example,
//! becomes one pass over `x` instead of three.
//!
//! invariant: an inline value has no buffer; its operands stay live (see
//! `plan`) until each op that finally materialises it.

use super::elementwise::Rule;
use super::{is_f, Addr, Em};
use crate::wasm::abi::{EupFn, EUP_BF16, EUP_MIN_LANES};
use crate::wasm::fb::{m128, m32};
use crate::wasm::plan::{same_lanes_bitcast, same_lanes_cast, GroupKind};
use pk_lang::ir::{BinaryOp, BlockId, DType, Func, Kernel, OpId, OpKind, UnaryOp, Value, ValueDef};
use wasm_encoder::Instruction as I;

/// The lane rule of an elementwise op that has one (not for constants,
/// splats and casts that keep the lanes), with its operands in rule order.
pub(crate) fn rule_of(f: &Func, op: OpId) -> Option<(Rule, Vec<Value>)> {
    let o = &f.ops[op];
    let d = f.ty(*o.results.first()?).dtype();
    Some(match &o.kind {
        OpKind::Unary(u, a) => (Rule::Unary(*u, d), vec![*a]),
        OpKind::Binary(b, x, y) => (Rule::Binary(*b, d), vec![*x, *y]),
        OpKind::Compare(c, x, y) => (Rule::Compare(*c, f.ty(*x).dtype()), vec![*x, *y]),
        OpKind::Select {
            cond,
            on_true,
            on_false,
        } => (Rule::Select, vec![*on_true, *on_false, *cond]),
        OpKind::Cast(a) if !same_lanes_cast(f.ty(*a).dtype(), d) => {
            (Rule::Cast(f.ty(*a).dtype(), d), vec![*a])
        }
        OpKind::Bitcast(a) if !same_lanes_bitcast(f.ty(*a).dtype(), d) => {
            (Rule::Bitcast(f.ty(*a).dtype(), d), vec![*a])
        }
        _ => return None,
    })
}

fn is_f8(d: pk_lang::ir::DType) -> bool {
    d.bits() == 8 && d.is_float()
}

/// Whether a rule has a four-lane (SIMD) form.
pub(crate) fn vector_ok(rule: Rule) -> bool {
    use BinaryOp as B;
    use UnaryOp as U;
    match rule {
        Rule::Unary(_, d) | Rule::Binary(_, d) if is_f8(d) => false,
        Rule::Unary(op, d) if is_f(d) => {
            !matches!(op, U::Not | U::Sin | U::Cos | U::Erf | U::Log1p)
        }
        Rule::Unary(op, _) => {
            matches!(
                op,
                U::Neg | U::Not | U::Abs | U::Floor | U::Ceil | U::Round | U::Sign
            )
        }
        Rule::Binary(op, d) if is_f(d) => {
            matches!(op, B::Add | B::Sub | B::Mul | B::Div | B::Max | B::Min)
        }
        Rule::Binary(op, _) => {
            matches!(
                op,
                B::Add | B::Sub | B::Mul | B::Max | B::Min | B::And | B::Or | B::Xor
            )
        }
        Rule::Compare(..) | Rule::Select => true,
        Rule::Cast(from, to) | Rule::Bitcast(from, to) => !is_f8(from) && !is_f8(to),
    }
}

/// How a broadcast's lanes are found from its source, in a loop over the
/// result's rows of `C` lanes (`C` a multiple of 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spread {
    /// `[..., 1] -> [..., C]`: one source element per row.
    Row,
    /// `[1, ..., C] -> [..., C]`: the same source row for every row.
    Col,
    /// `[1, ..., 1] -> [...]`: one element.
    All,
}

pub(crate) fn spread(f: &Func, src: Value, r: Value) -> Option<Spread> {
    let (s, t) = (f.ty(src).shape(), f.ty(r).shape());
    let n = t.len();
    if n == 0 || s.len() != n {
        return None;
    }
    let c = t[n - 1].get();
    if c % 4 != 0 {
        return None;
    }
    let one = |d: &pk_lang::ir::Dim| d.get() == 1;
    if s.iter().all(one) {
        Some(Spread::All)
    } else if one(&s[n - 1]) && s[..n - 1] == t[..n - 1] {
        Some(Spread::Row)
    } else if s[n - 1] == t[n - 1] && s[..n - 1].iter().all(one) {
        Some(Spread::Col)
    } else {
        None
    }
}

/// The source of a tile that repeats one tile along its last axis
/// (`tile(x, [1, n])`: a concat of `x` with itself), when its rows are
/// whole groups of four lanes: lane group `c` (bytes) of row `r` of the
/// result is group `c mod (4 W)` of row `r` of the source, `W` its width.
/// Such a repeat is read in place by elementwise readers, never stored;
/// flash attention's `s - nn::lanes(m, bk)` is one pass over `s`.
pub(crate) fn lane_repeat(f: &Func, op: OpId) -> Option<(Value, u64)> {
    let OpKind::Concat(vs, axis) = &f.ops[op].kind else {
        return None;
    };
    let src = *vs.first()?;
    let shape = f.ty(src).shape();
    let w = shape.last()?.get();
    (*axis + 1 == shape.len() && vs.iter().all(|&v| v == src) && w > 0 && w % 4 == 0)
        .then_some((src, w))
}

/// Whether an op computes its result in a fused SIMD loop (and can thus
/// take inline operands): a vector elementwise op, or a store of a whole
/// tile to a contiguous window of a 32-bit ref.
fn fusing(k: &Kernel, f: &Func, op: OpId) -> bool {
    if let OpKind::Store(view, x, None) = &f.ops[op].kind {
        return !f.ty(*x).is_scalar()
            && super::memory::view_kind(k, view, false) == Some(GroupKind::View { ld: None });
    }
    let Some(&r) = f.ops[op].results.first() else {
        return false;
    };
    !f.ty(r).is_scalar()
        && rule_of(f, op).is_some_and(|(rule, _)| vector_ok(rule))
        && eup_fn(f, op).is_none()
}

/// The `eup` function code (with [`EUP_BF16`] for bf16) of a tile op that
/// the transcendental unit computes: exp, exp2, log, tanh or logistic on a
/// float tile of at least [`EUP_MIN_LANES`] lanes.
pub(crate) fn eup_fn(f: &Func, op: OpId) -> Option<i32> {
    let OpKind::Unary(u, _) = &f.ops[op].kind else {
        return None;
    };
    let r = *f.ops[op].results.first()?;
    let t = f.ty(r);
    let d = t.dtype();
    if t.is_scalar() || !matches!(d, DType::F32 | DType::BF16) {
        return None;
    }
    if t.shape().iter().map(|x| x.get()).product::<u64>() < EUP_MIN_LANES {
        return None;
    }
    let code = match u {
        UnaryOp::Exp => EupFn::Exp,
        UnaryOp::Exp2 => EupFn::Exp2,
        UnaryOp::Log => EupFn::Log,
        UnaryOp::Tanh => EupFn::Tanh,
        UnaryOp::Logistic => EupFn::Logistic,
        _ => return None,
    } as i32;
    Some(if d == DType::BF16 {
        code | EUP_BF16
    } else {
        code
    })
}

/// Which values are computed inline by their readers (indexed by value).
pub(crate) fn inline_values(k: &Kernel, f: &Func) -> Vec<bool> {
    let mut users: Vec<Vec<OpId>> = vec![Vec::new(); f.values.len()];
    let mut yielded = vec![false; f.values.len()];
    let mut block_of: Vec<Option<BlockId>> = vec![None; f.ops.len()];
    for (b, data) in f.blocks.iter() {
        for &op in &data.ops {
            block_of[op.index()] = Some(b);
            for v in f.ops[op].kind.operands() {
                users[v.index()].push(op);
            }
        }
        for &y in &data.yields {
            yielded[y.index()] = true;
        }
    }
    let mut inline = vec![false; f.values.len()];
    for (id, op) in f.ops.iter() {
        let Some(&r) = op.results.first() else {
            continue;
        };
        if f.ty(r).is_scalar() || yielded[r.index()] || users[r.index()].is_empty() {
            continue;
        }
        let here = block_of[id.index()];
        let all_fusing = users[r.index()]
            .iter()
            .all(|&u| block_of[u.index()] == here && fusing(k, f, u));
        inline[r.index()] = all_fusing
            && match &op.kind {
                OpKind::Const(_) | OpKind::Splat(_) => true,
                OpKind::Broadcast(a) => spread(f, *a, r).is_some(),
                OpKind::Concat(..) => lane_repeat(f, id).is_some(),
                _ => users[r.index()].len() == 1 && fusing(k, f, id),
            };
    }
    inline
}

/// The ops that finally compute an inline value (its transitive readers
/// that store their result), or the op itself when it is not inline.
pub(crate) fn final_consumers(
    f: &Func,
    inline: &[bool],
    users: &[Vec<OpId>],
    op: OpId,
) -> Vec<OpId> {
    let Some(&r) = f.ops[op].results.first() else {
        return vec![op];
    };
    if !inline.get(r.index()).copied().unwrap_or(false) {
        return vec![op];
    }
    users[r.index()]
        .iter()
        .flat_map(|&u| final_consumers(f, inline, users, u))
        .collect()
}

/// Loop counters of a fused loop: the byte offset in the tile, and the row
/// and the byte offset in the row (for broadcasts).
#[derive(Clone, Copy)]
pub(super) struct Pos {
    pub i: u32,
    pub row: u32,
    pub col: u32,
}

impl Em<'_, '_> {
    pub(super) fn is_inline(&self, v: Value) -> bool {
        self.inline.get(v.index()).copied().unwrap_or(false)
    }

    /// Whether computing `v` needs the row/column counters.
    pub(super) fn needs_rows(&self, v: Value) -> bool {
        if !self.is_inline(v) {
            return false;
        }
        let ValueDef::Result(op, _) = self.f.values[v].def else {
            return false;
        };
        match &self.f.ops[op].kind {
            OpKind::Broadcast(a) => spread(self.f, *a, v) != Some(Spread::All),
            OpKind::Concat(..) => true,
            _ => {
                rule_of(self.f, op).is_some_and(|(_, ins)| ins.iter().any(|&x| self.needs_rows(x)))
            }
        }
    }

    /// Pushes four lanes of `v` at position `p`: loaded from its buffer, or
    /// computed in place when it is inline.
    pub(super) fn lanes(&mut self, v: Value, p: Pos) {
        if !self.is_inline(v) {
            let a = self.addr(v);
            let off = self.base(a, Some(p.i));
            self.fb.op(I::V128Load(m128(off)));
            return;
        }
        let ValueDef::Result(op, _) = self.f.values[v].def else {
            return;
        };
        // A per-row value splatted once for the row (see `fused`).
        if let Some(&(_, l)) = self.row_splats.iter().find(|&&(x, _)| x == v) {
            self.fb.get(l);
            return;
        }
        let d = self.f.ty(v).dtype();
        match &self.f.ops[op].kind {
            OpKind::Const(l) => super::elementwise::push_const(&mut self.fb, *l, d, true),
            OpKind::Splat(x) => self.splat(*x, d),
            OpKind::Broadcast(a) => {
                let src = self.addr(*a);
                match spread(self.f, *a, v) {
                    Some(Spread::Row) => {
                        self.push_addr(src);
                        self.fb.get(p.row).i32c(2).op(I::I32Shl).op(I::I32Add);
                        self.fb.op(I::V128Load32Splat(m32(0)));
                    }
                    Some(Spread::Col) => {
                        let off = self.base(src, Some(p.col));
                        self.fb.op(I::V128Load(m128(off)));
                    }
                    _ => {
                        let off = self.base(src, None);
                        self.fb.op(I::V128Load32Splat(m32(off)));
                    }
                }
            }
            OpKind::Concat(..) => {
                let Some((src, w)) = lane_repeat(self.f, op) else {
                    return;
                };
                // Row `r` of the source, at the column `c mod 4W` (bytes).
                let wb = (w * 4) as u32;
                self.fb.get(p.row).u32c(wb).op(I::I32Mul).get(p.col);
                if wb.is_power_of_two() {
                    self.fb.u32c(wb - 1).op(I::I32And);
                } else {
                    self.fb.u32c(wb).op(I::I32RemU);
                }
                self.fb.op(I::I32Add);
                let off = match self.addr(src) {
                    Addr::Const(c) => c,
                    Addr::Local(l) => {
                        self.fb.get(l).op(I::I32Add);
                        0
                    }
                };
                self.fb.op(I::V128Load(m128(off)));
            }
            _ => {
                if let Some((rule, ins)) = rule_of(self.f, op) {
                    for x in ins {
                        self.lanes(x, p);
                    }
                    self.vector_rule(rule);
                }
            }
        }
    }

    /// The SIMD loop of an elementwise op: `r = rule(ins)` four lanes at a
    /// time, inline operands computed in place.
    pub(super) fn fused_loop(&mut self, r: Value, rule: Rule, ins: &[Value]) {
        let out = self.addr(r);
        let n = super::elems(self.f, r);
        let padded = n.div_ceil(4) * 4;
        self.fused(out, padded, r, |em, p| {
            for &x in ins {
                em.lanes(x, p);
            }
            em.vector_rule(rule);
        });
    }

    /// Stores an inline tile to memory at `out` (exactly its elements).
    pub(super) fn fused_store(&mut self, out: Addr, x: Value) {
        let n = super::elems(self.f, x);
        self.fused(out, n, x, |em, p| em.lanes(x, p));
    }

    /// A loop over the `n` elements of tile `like`, four at a time: `lanes`
    /// pushes each group, stored at `out`; a last partial group stores only
    /// its valid lanes. When broadcasts need the row, the loop is a nest,
    /// rows outside and the row's groups inside, and each row's splat of a
    /// per-row value is made once, before the inner loop.
    fn fused(&mut self, out: Addr, n: u64, like: Value, lanes: impl Fn(&mut Self, Pos)) {
        let rows = self.needs_rows_of(like);
        let p = Pos {
            i: self.fb.i32l(),
            row: self.fb.i32l(),
            col: self.fb.i32l(),
        };
        let row_bytes = self.f.ty(like).shape().last().map_or(4, |d| d.get() * 4);
        let whole = n / 4;
        let group = |em: &mut Self| {
            let o = em.base(out, Some(p.i));
            lanes(em, p);
            em.fb.op(I::V128Store(m128(o)));
        };
        if rows {
            // Rows are whole groups here (`spread` asks for C % 4 == 0).
            let mut splats = Vec::new();
            self.row_broadcasts(like, &mut splats);
            let locals: Vec<(Value, u32)> = splats
                .iter()
                .map(|&v| (v, self.fb.local(wasm_encoder::ValType::V128)))
                .collect();
            self.fb.i32c(0).set(p.i);
            self.count_loop(p.row, whole * 16 / row_bytes, 1, |em| {
                for &(v, l) in &locals {
                    em.lanes(v, p);
                    em.fb.set(l);
                }
                let saved = std::mem::replace(&mut em.row_splats, locals.clone());
                em.count_loop(p.col, row_bytes, 16, |em| {
                    group(em);
                    em.fb.add_to(p.i, 16);
                });
                em.row_splats = saved;
            });
            return;
        }
        self.count_loop(p.i, whole * 16, 16, group);
        if !n.is_multiple_of(4) {
            // Row counters are only needed when rows are whole vectors, so
            // a partial group never needs them.
            self.fb.u32c((whole * 16) as u32).set(p.i);
            let t = self.fb.local(wasm_encoder::ValType::V128);
            lanes(self, p);
            self.fb.set(t);
            for lane in 0..(n % 4) as u8 {
                let o = self.base(out, Some(p.i));
                self.fb.get(t).op(I::V128Store32Lane {
                    memarg: m32(o + 4 * u32::from(lane)),
                    lane,
                });
            }
        }
    }

    /// The inline broadcasts of one value per row that computing `v`
    /// reads (each once).
    fn row_broadcasts(&self, v: Value, out: &mut Vec<Value>) {
        if !self.is_inline(v) {
            return;
        }
        let ValueDef::Result(op, _) = self.f.values[v].def else {
            return;
        };
        match &self.f.ops[op].kind {
            OpKind::Broadcast(a) => {
                if spread(self.f, *a, v) == Some(Spread::Row) && !out.contains(&v) {
                    out.push(v);
                }
            }
            _ => {
                if let Some((_, ins)) = rule_of(self.f, op) {
                    for x in ins {
                        self.row_broadcasts(x, out);
                    }
                }
            }
        }
    }

    /// Whether computing a tile shaped like `v` from its inline operands
    /// needs row counters.
    fn needs_rows_of(&self, v: Value) -> bool {
        if self.needs_rows(v) {
            return true;
        }
        let ValueDef::Result(op, _) = self.f.values[v].def else {
            return false;
        };
        rule_of(self.f, op).is_some_and(|(_, ins)| ins.iter().any(|&x| self.needs_rows(x)))
    }
}

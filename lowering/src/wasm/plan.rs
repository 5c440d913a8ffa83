//! Where each tile value of the body lives in linear memory.
//!
//! Scalars are Wasm locals; every vector value is a buffer of 32-bit lanes
//! (f32 for float dtypes, i32 for integer and bool dtypes). Values that are
//! the same lanes as another value share its buffer (a *group*): reshapes,
//! same-width bitcasts, widening casts, and the carried values of a loop
//! with the loop's results. A group rooted at a load of a contiguous window
//! of a 32-bit ref is a *view*: it reads the ref in place instead of
//! copying it, when no store to that ref can happen while it is live.
//!
//! Liveness is computed on a pre-order numbering of the structured body: a
//! value is live from its definition to its last use, and a use inside a
//! loop that does not contain the definition keeps the value live to the
//! end of that loop. Temporary buffers are then packed by a linear scan.
//!
//! invariant: two temp groups whose intervals overlap get disjoint bytes;
//! a view group never overlaps a store to its ref.

use pk_lang::ir::{BlockId, DType, Func, Kernel, OpId, OpKind, RefView, Value, ValueDef};
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GroupKind {
    Temp,
    /// A load read in place. `ld` is the row stride (elements) of a 2-D
    /// window that is only ever given to `dot`; `None` when contiguous.
    View {
        ld: Option<u32>,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub elems: u64,
    pub kind: GroupKind,
    pub start: u32,
    pub end: u32,
    /// Byte offset (from the start of the temp region) of a temp group.
    pub offset: u32,
}

impl Group {
    /// Bytes, padded so that whole-vector loops stay inside the buffer.
    pub fn bytes(&self) -> u32 {
        ((self.elems * 4).div_ceil(16) * 16) as u32
    }
}

#[derive(Debug, Default)]
pub(crate) struct Plan {
    group_of: Vec<Option<u32>>,
    pub groups: Vec<Group>,
    /// Staging buffers for loop yields that would overwrite a carried
    /// value still to be read: (loop op, carried index) -> group.
    pub staging: HashMap<(OpId, usize), u32>,
    pub temps_bytes: u32,
    /// Tiles computed inline by their readers (no buffer).
    pub inline: Vec<bool>,
}

impl Plan {
    /// The group of a vector value.
    pub fn group(&self, v: Value) -> Option<u32> {
        self.group_of.get(v.index()).copied().flatten()
    }
}

/// Positions of the pre-order numbering.
struct Numbering {
    pos: u32,
    start: Vec<u32>,
    end: Vec<u32>,
    block_end: Vec<u32>,
    /// The innermost loop op enclosing an op (not the op itself).
    op_loop: Vec<Option<OpId>>,
    /// The innermost loop whose iterations run a block's ops.
    block_loop: Vec<Option<OpId>>,
    block_owner: Vec<Option<OpId>>,
}

pub(crate) fn is_loop(k: &OpKind) -> bool {
    matches!(k, OpKind::For { .. } | OpKind::While { .. })
}

impl Numbering {
    fn new(f: &Func) -> Numbering {
        let mut n = Numbering {
            pos: 1,
            start: vec![0; f.ops.len()],
            end: vec![0; f.ops.len()],
            block_end: vec![0; f.blocks.len()],
            op_loop: vec![None; f.ops.len()],
            block_loop: vec![None; f.blocks.len()],
            block_owner: vec![None; f.blocks.len()],
        };
        if let Some(e) = f.entry {
            n.block(f, e, None);
        }
        n
    }

    fn block(&mut self, f: &Func, b: BlockId, cur: Option<OpId>) {
        self.block_loop[b.index()] = cur;
        for &op in &f.blocks[b].ops {
            self.op(f, op, cur);
        }
        self.block_end[b.index()] = self.pos;
        self.pos += 1;
    }

    fn op(&mut self, f: &Func, op: OpId, cur: Option<OpId>) {
        self.start[op.index()] = self.pos;
        self.pos += 1;
        self.op_loop[op.index()] = cur;
        let kind = &f.ops[op].kind;
        let inner = if is_loop(kind) { Some(op) } else { cur };
        for b in kind.blocks() {
            self.block_owner[b.index()] = Some(op);
            self.block(f, b, inner);
        }
        self.end[op.index()] = self.pos;
        self.pos += 1;
    }

    /// Definition position and home loop of a value.
    fn def(&self, f: &Func, v: Value) -> (u32, Option<OpId>) {
        match f.values[v].def {
            ValueDef::Result(op, _) => {
                let p = if f.ops[op].kind.blocks().is_empty() {
                    self.end[op.index()]
                } else {
                    self.start[op.index()]
                };
                (p, self.op_loop[op.index()])
            }
            ValueDef::Param(b, _) => match self.block_owner[b.index()] {
                Some(o) => (self.start[o.index()], self.block_loop[b.index()]),
                None => (0, None),
            },
        }
    }

    fn encloses(&self, outer: OpId, mut inner: Option<OpId>) -> bool {
        while let Some(l) = inner {
            if l == outer {
                return true;
            }
            inner = self.op_loop[l.index()];
        }
        false
    }

    /// The last position a use at `p` (inside loop `cur`) keeps a value
    /// defined in loop `home` alive.
    fn extend(&self, p: u32, mut cur: Option<OpId>, home: Option<OpId>) -> u32 {
        let mut end = p;
        while let Some(l) = cur {
            if self.encloses(l, home) {
                break;
            }
            end = end.max(self.end[l.index()]);
            cur = self.op_loop[l.index()];
        }
        end
    }
}

struct Uf(Vec<usize>);

impl Uf {
    fn find(&mut self, mut x: usize) -> usize {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.0[a.max(b)] = a.min(b);
        }
    }
}

/// Whether a value of dtype `from` has the same lanes as `to` (so a cast
/// or bitcast between them is the identity on the buffer).
pub(crate) fn same_lanes_cast(from: DType, to: DType) -> bool {
    from == to
        || (from == DType::BF16 && to == DType::F32)
        || (to == DType::I32 && matches!(from, DType::I16 | DType::I8 | DType::U8 | DType::Bool))
        || (to == DType::I16 && matches!(from, DType::I8 | DType::U8 | DType::Bool))
}

pub(crate) fn same_lanes_bitcast(from: DType, to: DType) -> bool {
    from == to
        || matches!(
            (from, to),
            (DType::F32, DType::I32) | (DType::I32, DType::F32)
        )
}

/// Plans the buffers of a kernel body. `view_of` decides whether a load can
/// be read in place, given whether all its users are `dot`s.
pub(crate) fn plan(k: &Kernel, view_of: &dyn Fn(&RefView, bool) -> Option<GroupKind>) -> Plan {
    let f = &k.body;
    let num = Numbering::new(f);
    let inline = super::emit::fuse::inline_values(k, f);
    let mut users: Vec<Vec<OpId>> = vec![Vec::new(); f.values.len()];
    for (id, op) in f.ops.iter() {
        for v in op.kind.operands() {
            users[v.index()].push(id);
        }
    }
    let nv = f.values.len();
    let is_vec = |v: Value| !f.ty(v).is_scalar() && !inline[v.index()];
    let mut uf = Uf((0..nv).collect());
    let mut loop_groups: Vec<(Value, OpId)> = Vec::new();
    for (id, op) in f.ops.iter() {
        let r0 = op.results.first().copied();
        match &op.kind {
            OpKind::Reshape(a) => uf.union(a.index(), r0.map_or(0, |r| r.index())),
            OpKind::Cast(a) if same_lanes_cast(f.ty(*a).dtype(), op_dtype(f, r0)) => {
                uf.union(a.index(), r0.map_or(0, |r| r.index()))
            }
            OpKind::Bitcast(a) if same_lanes_bitcast(f.ty(*a).dtype(), op_dtype(f, r0)) => {
                uf.union(a.index(), r0.map_or(0, |r| r.index()))
            }
            OpKind::For { body, .. } => {
                let ps = &f.blocks[*body].params;
                for (j, &r) in op.results.iter().enumerate() {
                    if let Some(&p) = ps.get(j + 1) {
                        uf.union(p.index(), r.index());
                        loop_groups.push((r, id));
                    }
                }
            }
            OpKind::While { cond, body, .. } => {
                for (j, &r) in op.results.iter().enumerate() {
                    for b in [cond, body] {
                        if let Some(&p) = f.blocks[*b].params.get(j) {
                            uf.union(p.index(), r.index());
                        }
                    }
                    loop_groups.push((r, id));
                }
            }
            _ => {}
        }
    }
    // Users of each value (for the dot-only view rule).
    let mut dot_only = vec![true; nv];
    for (_, op) in f.ops.iter() {
        let is_dot = matches!(op.kind, OpKind::Dot { .. });
        for v in op.kind.operands() {
            if !is_dot {
                dot_only[v.index()] = false;
            }
        }
    }
    for (_, b) in f.blocks.iter() {
        for &y in &b.yields {
            dot_only[y.index()] = false;
        }
    }
    // Group ids, intervals and producers.
    let mut gid: HashMap<usize, u32> = HashMap::new();
    let mut plan = Plan {
        group_of: vec![None; nv],
        ..Plan::default()
    };
    let mut members: Vec<Vec<Value>> = Vec::new();
    for (v, _) in f.values.iter() {
        if !is_vec(v) {
            continue;
        }
        let root = uf.find(v.index());
        let g = *gid.entry(root).or_insert_with(|| {
            plan.groups.push(Group {
                elems: f.ty(v).elements().unwrap_or(0),
                kind: GroupKind::Temp,
                start: u32::MAX,
                end: 0,
                offset: 0,
            });
            members.push(Vec::new());
            plan.groups.len() as u32 - 1
        });
        plan.group_of[v.index()] = Some(g);
        members[g as usize].push(v);
    }
    let touch = |plan: &mut Plan, v: Value, upto: u32| {
        if let Some(g) = plan.group(v) {
            let g = &mut plan.groups[g as usize];
            g.end = g.end.max(upto);
        }
    };
    for (v, _) in f.values.iter() {
        if let Some(g) = plan.group(v) {
            let (p, _) = num.def(f, v);
            let g = &mut plan.groups[g as usize];
            g.start = g.start.min(p);
            g.end = g.end.max(p);
        }
    }
    for (id, op) in f.ops.iter() {
        // An inline op reads its operands where its readers run.
        for at in super::emit::fuse::final_consumers(f, &inline, &users, id) {
            let p = num.end[at.index()];
            let cur = num.op_loop[at.index()];
            for v in op.kind.operands() {
                let (_, home) = num.def(f, v);
                touch(&mut plan, v, num.extend(p, cur, home));
            }
        }
    }
    for (b, data) in f.blocks.iter() {
        let p = num.block_end[b.index()];
        let cur = num.block_loop[b.index()];
        for &y in &data.yields {
            let (_, home) = num.def(f, y);
            touch(&mut plan, y, num.extend(p, cur, home));
        }
    }
    for &(r, op) in &loop_groups {
        if let Some(g) = plan.group(r) {
            let g = &mut plan.groups[g as usize];
            g.start = g.start.min(num.start[op.index()]);
            g.end = g.end.max(num.end[op.index()]);
        }
    }
    // Views: a group whose only producer is a load, with no store to the
    // loaded ref while it is live.
    let mut writes: HashMap<usize, Vec<u32>> = HashMap::new();
    for (id, op) in f.ops.iter() {
        let target = match &op.kind {
            OpKind::Store(v, _, _) => v.target,
            OpKind::DmaStart { dst, .. } | OpKind::DmaWait { dst, .. } => dst.target,
            _ => continue,
        };
        // Keyed by the memory written, which views share.
        writes
            .entry(k.root(target).index())
            .or_default()
            .push(num.start[id.index()]);
    }
    let in_loop_group: Vec<bool> = {
        let mut m = vec![false; plan.groups.len()];
        for &(r, _) in &loop_groups {
            if let Some(g) = plan.group(r) {
                m[g as usize] = true;
            }
        }
        m
    };
    for (gi, ms) in members.iter().enumerate() {
        if in_loop_group[gi] {
            continue;
        }
        let producers: Vec<&Value> = ms.iter().filter(|v| !is_alias_def(f, **v)).collect();
        let [&root] = producers.as_slice() else {
            continue;
        };
        let ValueDef::Result(op, _) = f.values[root].def else {
            continue;
        };
        let OpKind::Load(view) = &f.ops[op].kind else {
            continue;
        };
        let all_dot = ms.len() == 1 && dot_only[root.index()];
        let Some(kind) = view_of(view, all_dot) else {
            continue;
        };
        let g = &plan.groups[gi];
        let clash = writes
            .get(&k.root(view.target).index())
            .is_some_and(|ws| ws.iter().any(|&w| w > g.start && w <= g.end));
        if !clash {
            plan.groups[gi].kind = kind;
        }
    }
    plan.inline = inline;
    add_staging(f, &num, &mut plan);
    allocate(&mut plan);
    plan
}

fn op_dtype(f: &Func, r: Option<Value>) -> DType {
    r.map_or(DType::F32, |r| f.ty(r).dtype())
}

/// Whether a value is defined by an op whose result shares its operand's
/// buffer.
fn is_alias_def(f: &Func, v: Value) -> bool {
    let ValueDef::Result(op, _) = f.values[v].def else {
        return false;
    };
    let rd = f.ty(v).dtype();
    match &f.ops[op].kind {
        OpKind::Reshape(_) => true,
        OpKind::Cast(a) => same_lanes_cast(f.ty(*a).dtype(), rd),
        OpKind::Bitcast(a) => same_lanes_bitcast(f.ty(*a).dtype(), rd),
        _ => false,
    }
}

/// A loop body that yields carried value `i` into slot `j != i` would
/// overwrite slot `j` before it is read: such yields go through a staging
/// buffer live only at the end of the body.
fn add_staging(f: &Func, num: &Numbering, plan: &mut Plan) {
    for (id, op) in f.ops.iter() {
        let (body, first) = match &op.kind {
            OpKind::For { body, .. } => (*body, 1),
            OpKind::While { body, .. } => (*body, 0),
            _ => continue,
        };
        let params = &f.blocks[body].params;
        let p = num.block_end[body.index()];
        for (j, &y) in f.blocks[body].yields.iter().enumerate() {
            let (Some(gy), Some(_)) = (plan.group(y), params.get(j + first)) else {
                continue;
            };
            let clash = params
                .iter()
                .enumerate()
                .skip(first)
                .any(|(i, &pi)| i != j + first && plan.group(pi) == Some(gy));
            if clash {
                let elems = plan.groups[gy as usize].elems;
                plan.groups.push(Group {
                    elems,
                    kind: GroupKind::Temp,
                    start: p,
                    end: p,
                    offset: 0,
                });
                plan.staging.insert((id, j), plan.groups.len() as u32 - 1);
            }
        }
    }
}

/// Linear-scan packing of temp groups (first fit by address).
fn allocate(plan: &mut Plan) {
    let mut order: Vec<usize> = (0..plan.groups.len())
        .filter(|&g| plan.groups[g].kind == GroupKind::Temp)
        .collect();
    order.sort_by_key(|&g| (plan.groups[g].start, g));
    let mut active: Vec<(u32, u32, u32)> = Vec::new(); // (offset, bytes, end)
    let mut top = 0u32;
    for g in order {
        // Each buffer is followed by a gap of SKEW bytes: tiles are often a
        // multiple of 4 KiB, and buffers 4 KiB apart make the CPU's memory
        // disambiguation stall (4K aliasing) when one loop reads one and
        // writes the other.
        const SKEW: u32 = 192;
        let (start, end, bytes) = {
            let gr = &plan.groups[g];
            (gr.start, gr.end, gr.bytes() + SKEW)
        };
        active.retain(|&(_, _, e)| e >= start);
        active.sort_unstable();
        let mut at = 0u32;
        for &(o, b, _) in &active {
            if at + bytes <= o {
                break;
            }
            at = at.max(o + b);
        }
        plan.groups[g].offset = at;
        active.push((at, bytes, end));
        top = top.max(at + bytes);
    }
    plan.temps_bytes = top;
}

//! The depth limit on parsed syntax trees.
//!
//! Brackets are counted on tokens before parsing ([`crate::parse`]), but
//! some chains nest without brackets: `a + b + c + ...`, `x as i32 as f32
//! as ...`, `x[..][..][..]` and `if .. {} else if .. {} else if ...` each
//! add one tree level per link. Every pass after parsing (resolution, the
//! checker, printers, even `Drop`) recurses over the tree, so a tree deeper
//! than [`MAX_TREE_DEPTH`] is rejected here, by a walk that itself stops
//! descending at the limit.

use crate::ast::*;
use crate::span::Span;

/// Expression and block levels allowed in one item: far beyond hand-written
/// kernels, and shallow enough for every recursive pass on a small stack.
pub const MAX_TREE_DEPTH: usize = 256;

/// The span of the first node nested deeper than [`MAX_TREE_DEPTH`].
pub fn too_deep(m: &Module) -> Option<Span> {
    let mut w = Walk { hit: None };
    for item in &m.items {
        match item {
            Item::Use(_) => {}
            Item::Const(c) => w.expr(&c.value, 0),
            Item::Fn(f) => w.func(f, 0),
            Item::Kernel(k) => {
                for p in &k.params {
                    w.opt(p.default.as_ref());
                    match &p.candidates {
                        Some(Candidates::List(vs, _)) => w.exprs(vs),
                        Some(Candidates::Range { lo, hi, step, .. }) => {
                            w.expr(lo, 0);
                            w.expr(hi, 0);
                            w.opt(step.as_ref());
                        }
                        Some(Candidates::Pow2 { lo, hi, .. }) => {
                            w.expr(lo, 0);
                            w.expr(hi, 0);
                        }
                        None => {}
                    }
                }
                for o in k.inputs.iter().chain(&k.outputs) {
                    w.exprs(&o.dims);
                    if let Placement::Block {
                        dims,
                        index_map,
                        buffers,
                        ..
                    } = &o.placement
                    {
                        if let Some(e) = buffers {
                            w.expr(e, 0);
                        }
                        for d in dims {
                            if let BlockDim::Size(e) = d {
                                w.expr(e, 0);
                            }
                        }
                        w.exprs(index_map);
                    }
                }
                for c in &k.clauses {
                    match c {
                        Clause::Grid(g, _) => g.iter().for_each(|d| {
                            w.expr(&d.extent, 0);
                            if let Some(b) = &d.bound {
                                w.expr(b, 0);
                            }
                        }),
                        Clause::Prefetch(p, _) => p.iter().for_each(|d| w.exprs(&d.dims)),
                        Clause::Scratch(s, _) => s.iter().for_each(|d| match &d.kind {
                            ScratchKind::Buffer { dims, .. }
                            | ScratchKind::DmaSem { dims }
                            | ScratchKind::Sem { dims } => w.exprs(dims),
                            ScratchKind::BarrierSem => {}
                        }),
                        Clause::Mesh(axes, _) => axes.iter().for_each(|a| w.expr(&a.size, 0)),
                        Clause::VmemLimit(e, _) | Clause::CollectiveId(e, _) => w.expr(e, 0),
                        Clause::Assert(a) => w.expr(&a.cond, 0),
                        Clause::Where(e, _) => w.expr(e, 0),
                    }
                }
                w.block(&k.body, 0);
            }
        }
        if w.hit.is_some() {
            break;
        }
    }
    w.hit
}

/// The span of the first node of `e` nested deeper than the limit.
pub fn expr_too_deep(e: &Expr) -> Option<Span> {
    let mut w = Walk { hit: None };
    w.expr(e, 0);
    w.hit
}

struct Walk {
    hit: Option<Span>,
}

impl Walk {
    /// Whether to stop at a node at depth `d`, recording the first hit.
    fn stop(&mut self, d: usize, span: Span) -> bool {
        if self.hit.is_some() {
            return true;
        }
        if d > MAX_TREE_DEPTH {
            self.hit = Some(span);
            return true;
        }
        false
    }

    fn opt(&mut self, e: Option<&Expr>) {
        if let Some(e) = e {
            self.expr(e, 0);
        }
    }

    fn exprs(&mut self, es: &[Expr]) {
        for e in es {
            self.expr(e, 0);
        }
    }

    fn ty(&mut self, t: &TypeExpr) {
        for d in t.shape.iter().flatten() {
            if let DimExpr::Expr(e) = d {
                self.expr(e, 0);
            }
        }
    }

    fn func(&mut self, f: &FnDecl, d: usize) {
        for p in &f.params {
            if let Some(t) = &p.ty {
                self.ty(t);
            }
            if let Some(e) = &p.default {
                self.expr(e, d + 1);
            }
        }
        for t in f.ret.iter().flat_map(|r| r.types()) {
            self.ty(t);
        }
        self.block(&f.body, d);
    }

    fn block(&mut self, b: &Block, d: usize) {
        if self.stop(d, b.span) {
            return;
        }
        for s in &b.stmts {
            match s {
                Stmt::Let { value, .. } | Stmt::Expr(value) | Stmt::LetTuple { value, .. } => {
                    self.expr(value, d + 1)
                }
                Stmt::Fn(f) => self.func(f, d + 1),
                Stmt::Assign { target, value, .. } => {
                    self.expr(target, d + 1);
                    self.expr(value, d + 1);
                }
                Stmt::For {
                    lo, hi, step, body, ..
                } => {
                    self.expr(lo, d + 1);
                    self.expr(hi, d + 1);
                    if let Some(s) = step {
                        self.expr(s, d + 1);
                    }
                    self.block(body, d + 1);
                }
                Stmt::While { cond, body, .. } => {
                    self.expr(cond, d + 1);
                    self.block(body, d + 1);
                }
                Stmt::Assert(a) => self.expr(&a.cond, d + 1),
                Stmt::Print { args, .. } => args.iter().for_each(|a| self.expr(a, d + 1)),
            }
        }
        if let Some(t) = &b.tail {
            self.expr(t, d + 1);
        }
    }

    fn expr(&mut self, e: &Expr, d: usize) {
        if self.stop(d, e.span) {
            return;
        }
        let n = d + 1;
        match &e.kind {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Name(_)
            | ExprKind::Error => {}
            ExprKind::Unary(_, a) | ExprKind::Cast(a, _) => self.expr(a, n),
            ExprKind::Binary(_, a, b) => {
                self.expr(a, n);
                self.expr(b, n);
            }
            ExprKind::Call(_, args) => args.iter().for_each(|a| self.expr(&a.value, n)),
            ExprKind::Method(base, _, args) => {
                self.expr(base, n);
                args.iter().for_each(|a| self.expr(&a.value, n));
            }
            ExprKind::Index(base, idx) | ExprKind::At(base, _, idx) => {
                self.expr(base, n);
                for i in idx {
                    match i {
                        Index::Full(_) | Index::Rest(_) => {}
                        Index::Range(a, b, _) => {
                            self.expr(a, n);
                            self.expr(b, n);
                        }
                        Index::Expr(x) => self.expr(x, n),
                    }
                }
            }
            ExprKind::List(items) | ExprKind::Tuple(items) => {
                items.iter().for_each(|x| self.expr(x, n))
            }
            ExprKind::If(c, then, els) => {
                self.expr(c, n);
                self.block(then, n);
                if let Some(x) = els {
                    self.expr(x, n);
                }
            }
            ExprKind::Block(b) => self.block(b, n),
        }
    }
}

//! Statements and structured control flow.
//!
//! `let mut` variables are SSA values that the builder tracks in slots. An
//! `if`, `for` or `while` whose body assigns an outer variable carries it:
//! the variable becomes a yielded result of the `If`, or a block parameter
//! and yielded value of the loop, exactly as MLIR's `scf` ops carry values.

use super::builder::{Binding, Builder, Mode};
use super::value::Val;
use crate::ast::{self, AssignOp, BinOp, Block, Expr, ExprKind, Stmt};
use crate::diag::{codes, Diag};
use crate::ir::{DType, Literal, OpKind, Type, Value};
use crate::span::Span;
use std::collections::{BTreeSet, HashMap};

impl Builder<'_, '_> {
    /// Checks a block in a new scope and returns its tail value.
    pub fn block_value(&mut self, b: &Block) -> Val {
        self.scopes.push(HashMap::new());
        for s in &b.stmts {
            self.stmt(s);
        }
        let v = match &b.tail {
            Some(t) => {
                // A tail `if` with an `else` is the block's value when
                // both branches produce one; otherwise it is a statement.
                if let ExprKind::If(c, th, el) = &t.kind {
                    self.if_expr(c, th, el.as_deref(), t.span, el.is_some())
                } else {
                    self.expr(t)
                }
            }
            None => Val::Unit,
        };
        self.scopes.pop();
        v
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Let {
                name,
                mutable,
                ty,
                value,
                span,
            } => {
                let v = match &value.kind {
                    ExprKind::If(c, t, f) => self.if_expr(c, t, f.as_deref(), value.span, true),
                    _ => self.expr(value),
                };
                let v = match ty {
                    Some(t) => self.annotated(t, v, value.span),
                    None => v,
                };
                if self.ck.types.is_some() {
                    self.record(name.span, &v);
                }
                if *mutable {
                    if matches!(v, Val::Err) {
                        self.bind(&name.name, Binding::Val(Val::Err));
                        return;
                    }
                    let Some(x) = self.mutable_value(v, value.span) else {
                        self.bind(&name.name, Binding::Val(Val::Err));
                        return;
                    };
                    self.slots.push((x, name.name.clone()));
                    let i = self.slots.len() - 1;
                    self.bind(&name.name, Binding::Mut(i));
                } else {
                    if matches!(v, Val::Unit) {
                        self.error(
                            Diag::new(
                                &codes::NO_VALUE,
                                "this expression produces no value",
                                value.span,
                            )
                            .label("nothing to bind"),
                        );
                    }
                    let _ = span;
                    self.bind(&name.name, Binding::Val(v));
                }
            }
            Stmt::Assign {
                target,
                op,
                value,
                span,
            } => self.assign(target, *op, value, *span),
            Stmt::Expr(e) => {
                let _ = match &e.kind {
                    ExprKind::If(c, t, f) => self.if_expr(c, t, f.as_deref(), e.span, false),
                    _ => self.expr(e),
                };
            }
            Stmt::For {
                var,
                lo,
                hi,
                step,
                unroll: true,
                body,
                span,
            } => self.unrolled_loop(var, (lo, hi, step.as_ref()), body, *span),
            Stmt::For {
                var,
                lo,
                hi,
                step,
                body,
                span,
                ..
            } => self.for_loop(var, lo, hi, step.as_ref(), body, *span),
            Stmt::While { cond, body, span } => self.while_loop(cond, body, *span),
            Stmt::Assert(a) => {
                self.static_assert(a);
            }
            Stmt::LetTuple { names, value, .. } => self.let_tuple(names, value),
            Stmt::Fn(f) => self.local_fn(f),
            Stmt::Print { fmt, args, span } => self.print(fmt, args, *span),
        }
    }

    /// `print("..{}..", args)`: each `{}` takes the next argument. The
    /// TPU's logging ops take scalar i32s (`tpu.log`) or one tile for a
    /// format that ends with `{}` (`tpu.log_buffer`); `{{` and `}}` are
    /// literal braces.
    fn print(&mut self, fmt: &str, args: &[Expr], span: Span) {
        let vals: Vec<(Val, Span)> = args.iter().map(|a| (self.expr(a), a.span)).collect();
        if self.mode != Mode::Body {
            self.error(
                Diag::new(&codes::PRINT, "`print` runs in a kernel body only", span)
                    .label("not in a kernel body")
                    .help("index maps and compile-time code have no run time to print at; print the value in the body"),
            );
            return;
        }
        let Some(holes) = placeholders(fmt) else {
            self.error(
                Diag::new(
                    &codes::PRINT,
                    "a brace in a `print` format that is not `{}`",
                    span,
                )
                .label("this format")
                .help("each `{}` takes the next argument; write `{{` and `}}` for literal braces"),
            );
            return;
        };
        if holes != vals.len() {
            self.error(
                Diag::new(
                    &codes::PRINT,
                    format!(
                        "the format has {holes} `{{}}` but `print` has {} argument{}",
                        vals.len(),
                        if vals.len() == 1 { "" } else { "s" }
                    ),
                    span,
                )
                .label("here")
                .help("give one argument for each `{}`"),
            );
            return;
        }
        let mut values = Vec::new();
        for (v, s) in vals {
            let Some(x) = self.value(v, s) else {
                return;
            };
            values.push((x, s));
        }
        let tiles: Vec<Span> = values
            .iter()
            .filter(|(v, _)| !self.f.ty(*v).is_scalar())
            .map(|(_, s)| *s)
            .collect();
        if let Some(&s) = tiles.first() {
            if values.len() != 1 || !fmt.ends_with("{}") {
                self.error(
                    Diag::new(
                        &codes::PRINT,
                        "a tile is printed alone, at the end of the format",
                        s,
                    )
                    .label("this tile")
                    .help("the TPU logs one tile per `print`, for a format that ends with `{}`: `print(\"m = {}\", m)`; print scalars with another `print`"),
                );
                return;
            }
            if self.f.ty(values[0].0).dtype() == DType::Bool {
                self.error(
                    Diag::new(&codes::PRINT, "a `bool` tile in `print`", s)
                        .label("a `bool` tile")
                        .help("print it as integers: `m as i32`"),
                );
                return;
            }
        } else {
            for (v, s) in &values {
                let d = self.f.ty(*v).dtype();
                if d != DType::I32 {
                    self.error(
                        Diag::new(
                            &codes::PRINT,
                            format!("a `{d}` scalar in `print`; the TPU logs scalar i32s"),
                            *s,
                        )
                        .label(format!("a `{d}`"))
                        .help("convert it (`x as i32`), or print it as a tile: `print(\"x = {}\", full(f32, [8, 128], x))`"),
                    );
                    return;
                }
            }
        }
        let args = values.into_iter().map(|(v, _)| v).collect();
        self.f.push(
            self.cur,
            OpKind::Print {
                fmt: fmt.to_string(),
                args,
            },
            &[],
            span,
        );
    }

    /// `let x: T[...] = v`: converts constants, checks values.
    fn annotated(&mut self, t: &ast::TypeExpr, v: Val, span: Span) -> Val {
        if matches!(v, Val::Err) {
            return Val::Err;
        }
        let Some(d) = self.dtype_name(&t.dtype) else {
            return Val::Err;
        };
        let mut shape = Vec::new();
        for dim in t.shape.iter().flatten() {
            match dim {
                ast::DimExpr::Expr(e) => match self.const_dim(e, "a dimension") {
                    Some(x) => shape.push(x),
                    None => return Val::Err,
                },
                ast::DimExpr::Rest(sp) => {
                    return self.error(
                        Diag::new(
                            &codes::ARITY,
                            "`..` is only allowed in function parameter types",
                            *sp,
                        )
                        .label("not here"),
                    );
                }
            }
        }
        let want = Type::of(d, shape);
        if let Val::V(x) = &v {
            let have = self.ty(*x);
            if have != want {
                return self.error(
                    Diag::new(
                        &codes::TYPE_MISMATCH,
                        format!("expected `{want}`, found `{have}`"),
                        span,
                    )
                    .label(format!("this is {have}"))
                    .with(t.span, "declared type"),
                );
            }
            return v;
        }
        match self.coerce(v, &want, span) {
            Some(x) => Val::V(x),
            None => Val::Err,
        }
    }

    pub(super) fn mutable_value(&mut self, v: Val, span: Span) -> Option<Value> {
        if let Val::Tuple(items) = &v {
            let names: Vec<String> = (0..items.len()).map(|k| format!("mut x{k}")).collect();
            self.error(
                Diag::new(
                    &codes::TUPLE_MISMATCH,
                    "a `let mut` binding holds one value, not a tuple",
                    span,
                )
                .label(format!("a tuple of {} values", items.len()))
                .help(format!(
                    "destructure it: `let ({}) = ...`",
                    names.join(", ")
                )),
            );
            return None;
        }
        if matches!(v, Val::Ref(_) | Val::View(_) | Val::Dtype(_) | Val::List(_)) {
            let d = self.describe(&v);
            self.error(
                Diag::new(
                    &codes::WRONG_KIND,
                    format!("a `let mut` binding holds a value, not {d}"),
                    span,
                )
                .label("not a value"),
            );
            return None;
        }
        self.value(v, span)
    }

    fn assign(&mut self, target: &Expr, op: AssignOp, value: &Expr, span: Span) {
        let rhs = match &value.kind {
            ExprKind::If(c, t, f) => self.if_expr(c, t, f.as_deref(), value.span, true),
            _ => self.expr(value),
        };
        let bin = match op {
            AssignOp::Set => None,
            AssignOp::Add => Some(BinOp::Add),
            AssignOp::Sub => Some(BinOp::Sub),
            AssignOp::Mul => Some(BinOp::Mul),
            AssignOp::Div => Some(BinOp::Div),
        };
        match &target.kind {
            ExprKind::Name(p) if p.segments.len() == 1 => {
                let name = &p.segments[0].name;
                self.assign_name(name, target.span, bin, rhs, value.span, span);
            }
            ExprKind::Tuple(targets) if bin.is_none() => {
                self.assign_tuple(targets, rhs, value, span);
            }
            ExprKind::Index(base, idx) => {
                self.store_window(base, idx, target.span, bin, rhs, value.span, None, span);
            }
            _ => {
                self.error(
                    Diag::new(
                        &codes::NOT_ASSIGNABLE,
                        "cannot assign to this expression",
                        target.span,
                    )
                    .label("not a ref window or `let mut` binding")
                    .help("write to a ref (`y[..] = v;`) or to a `let mut` variable"),
                );
            }
        }
    }

    /// `name = v` (or `name op= v`) for a `let mut` name.
    pub(super) fn assign_name(
        &mut self,
        name: &str,
        tspan: Span,
        bin: Option<BinOp>,
        rhs: Val,
        vspan: Span,
        span: Span,
    ) {
        match self.lookup_local(name) {
            Some(Binding::Mut(i)) => {
                let old = self.slots[i].0;
                let new = match bin {
                    Some(b) => self.binary(b, Val::V(old), tspan, rhs, vspan, span),
                    None => rhs,
                };
                if matches!(new, Val::Err) {
                    return;
                }
                let want = self.ty(old);
                if let Val::V(x) = &new {
                    let have = self.ty(*x);
                    if have != want {
                        self.error(
                            Diag::new(
                                &codes::CARRIED_TYPE,
                                format!("`{name}` is `{want}` but is assigned `{have}`"),
                                vspan,
                            )
                            .label(format!("this is {have}"))
                            .help("a `let mut` binding keeps its type; broadcast or convert the value first"),
                        );
                        return;
                    }
                }
                if let Some(x) = self.coerce(new, &want, vspan) {
                    self.slots[i].0 = x;
                }
            }
            Some(Binding::Val(_)) | Some(Binding::Fn(_)) => {
                self.error(
                    Diag::new(&codes::IMMUTABLE, format!("`{name}` is not mutable"), tspan)
                        .label("assigned here")
                        .help(format!("declare it with `let mut {name} = ...`")),
                );
            }
            // Reading the name reports it (PK0230 for an absent one).
            Some(Binding::Absent(_)) | None => {
                let path = ast::Path {
                    segments: vec![ast::Ident {
                        name: name.to_string(),
                        span: tspan,
                    }],
                    span: tspan,
                };
                self.expr(&Expr {
                    kind: ExprKind::Name(path),
                    span: tspan,
                });
            }
        }
    }

    /// The outer `let mut` variables that a block assigns, as slot indices.
    fn carried(&self, blocks: &[&Block]) -> Vec<usize> {
        let mut names = BTreeSet::new();
        for b in blocks {
            assigned_names(b, &mut names);
        }
        let mut slots: Vec<usize> = names
            .iter()
            .filter_map(|n| match self.lookup_local(n) {
                Some(Binding::Mut(i)) => Some(i),
                _ => None,
            })
            .collect();
        slots.sort_unstable();
        slots.dedup();
        slots
    }

    /// A scalar bool condition (or a constant).
    fn condition(&mut self, c: &Expr) -> Option<Val> {
        let v = self.expr(c);
        match v {
            Val::Bool(_) | Val::Err => Some(v),
            other => {
                let x = self.value(other, c.span)?;
                let t = self.ty(x);
                if t != Type::Scalar(DType::Bool) {
                    self.error(
                        Diag::new(
                            &codes::BAD_CONDITION,
                            format!("a condition must be a scalar bool, found `{t}`"),
                            c.span,
                        )
                        .label(format!("this is {t}"))
                        .help("to choose per element, use `where(cond, a, b)`"),
                    );
                    return None;
                }
                Some(Val::V(x))
            }
        }
    }

    /// `if c { a } else { b }`; `want` says whether its value is used.
    pub fn if_expr(
        &mut self,
        c: &Expr,
        then: &Block,
        els: Option<&Expr>,
        span: Span,
        want: bool,
    ) -> Val {
        let Some(cond) = self.condition(c) else {
            return Val::Err;
        };
        let else_block = |e: &Expr| -> Option<Block> {
            match &e.kind {
                ExprKind::Block(b) => Some(b.clone()),
                _ => Some(Block {
                    stmts: Vec::new(),
                    tail: Some(Box::new(e.clone())),
                    span: e.span,
                }),
            }
        };
        let els_block = els.and_then(else_block);
        // A constant condition checks and builds only the branch taken.
        if let Val::Bool(b) = cond {
            return match (b, &els_block) {
                (true, _) => self.block_value(then),
                (false, Some(e)) => self.block_value(e),
                (false, None) => Val::Unit,
            };
        }
        let Val::V(cond) = cond else {
            return Val::Err;
        };
        if self.mode != Mode::Body && self.mode != Mode::IndexMap {
            return self.emit(
                OpKind::Const(Literal::Bool(false)),
                Type::Scalar(DType::Bool),
                span,
            );
        }
        let mut blocks = vec![then];
        if let Some(e) = &els_block {
            blocks.push(e);
        }
        let carried = self.carried(&blocks);
        let before: Vec<Value> = carried.iter().map(|i| self.slots[*i].0).collect();
        let outer = self.cur;

        let tb = self.f.new_block(&[]);
        self.cur = tb;
        let tv = self.block_value(then);
        let t_end = self.cur;
        let t_slots: Vec<Value> = carried.iter().map(|i| self.slots[*i].0).collect();
        for (k, i) in carried.iter().enumerate() {
            self.slots[*i].0 = before[k];
        }

        let eb = self.f.new_block(&[]);
        self.cur = eb;
        let ev = match &els_block {
            Some(b) => self.block_value(b),
            None => Val::Unit,
        };
        let e_end = self.cur;
        let e_slots: Vec<Value> = carried.iter().map(|i| self.slots[*i].0).collect();

        // The value of the `if`, when it has one (a tuple yields each element).
        let mut result_tys: Vec<Type> = Vec::new();
        let mut shape = None;
        let (mut ty_y, mut ey_y) = (Vec::new(), Vec::new());
        let has_value = want && !matches!(tv, Val::Unit) && !matches!(ev, Val::Unit);
        if want && els_block.is_none() {
            self.cur = outer;
            return self.error(
                Diag::new(
                    &codes::BRANCH_MISMATCH,
                    "an `if` used as a value needs an `else`",
                    span,
                )
                .label("no else branch")
                .help("add `else { ... }` producing a value of the same type"),
            );
        }
        if has_value {
            match self.unify_tree(
                tv,
                t_end,
                then.span,
                ev,
                e_end,
                els.map(|e| e.span).unwrap_or(span),
                span,
            ) {
                Some((a, b, sh)) => {
                    result_tys = a.iter().map(|x| self.ty(*x)).collect();
                    ty_y.extend(a);
                    ey_y.extend(b);
                    shape = Some(sh);
                }
                None => {
                    self.cur = outer;
                    return Val::Err;
                }
            }
        }
        ty_y.extend(t_slots);
        ey_y.extend(e_slots);
        self.f.blocks[t_end].yields = ty_y;
        self.f.blocks[e_end].yields = ey_y;
        // Branch-local blocks nest: the op goes in the block we started in.
        self.cur = outer;
        let off = result_tys.len();
        let mut types: Vec<Type> = result_tys;
        types.extend(before.iter().map(|v| self.ty(*v)));
        let op = self.f.push(
            outer,
            OpKind::If {
                cond,
                then_block: tb,
                else_block: eb,
            },
            &types,
            span,
        );
        let results = self.f.ops[op].results.clone();
        for (k, i) in carried.iter().enumerate() {
            self.slots[*i].0 = results[off + k];
        }
        match shape {
            Some(sh) => sh.rebuild(&results[..off], &mut 0, span),
            None => Val::Unit,
        }
    }

    /// Gives both branch values one type; constants are materialised in
    /// their own branch's block.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn unify_branches(
        &mut self,
        a: Val,
        ab: crate::ir::BlockId,
        asp: Span,
        b: Val,
        bb: crate::ir::BlockId,
        bsp: Span,
        span: Span,
    ) -> Option<(Value, Value)> {
        let saved = self.cur;
        let ty_of = |s: &Self, v: &Val| match v {
            Val::V(x) => Some(s.ty(*x)),
            _ => None,
        };
        let (ta, tb) = (ty_of(self, &a), ty_of(self, &b));
        let target = match (&ta, &tb) {
            (Some(x), Some(y)) if x != y => {
                self.error(
                    Diag::new(
                        &codes::BRANCH_MISMATCH,
                        format!("`if` branches have different types: `{x}` and `{y}`"),
                        span,
                    )
                    .with(asp, format!("this is {x}"))
                    .with(bsp, format!("this is {y}")),
                );
                return None;
            }
            (Some(x), _) => Some(x.clone()),
            (_, Some(y)) => Some(y.clone()),
            _ => None,
        };
        self.cur = ab;
        let x = match &target {
            Some(t) => self.coerce(a, t, asp),
            None => self.value(a, asp),
        };
        let t = x.map(|x| self.ty(x));
        self.cur = bb;
        let y = match (&target, &t) {
            (Some(tt), _) => self.coerce(b, tt, bsp),
            (None, Some(tt)) => self.coerce(b, tt, bsp),
            _ => self.value(b, bsp),
        };
        self.cur = saved;
        Some((x?, y?))
    }

    /// A loop bound: a constant or a scalar i32.
    fn bound(&mut self, e: &Expr) -> Option<Value> {
        let v = self.expr(e);
        let x = self.value_as(v, DType::I32, e.span)?;
        if self.ty(x) != Type::Scalar(DType::I32) {
            let t = self.ty(x);
            self.error(
                Diag::new(
                    &codes::TYPE_MISMATCH,
                    format!("a loop bound must be a scalar i32, found `{t}`"),
                    e.span,
                )
                .label(format!("this is {t}")),
            );
            return None;
        }
        Some(x)
    }

    /// Whether a loop may stand here (in a kernel body); reports it if not.
    pub(super) fn loop_allowed(&mut self, span: Span) -> bool {
        if self.mode == Mode::Body {
            return true;
        }
        self.error(
            Diag::new(
                &codes::NOT_CONSTANT,
                "loops are only allowed in kernel bodies",
                span,
            )
            .label("not here"),
        );
        false
    }

    fn for_loop(
        &mut self,
        var: &ast::Ident,
        lo: &Expr,
        hi: &Expr,
        step: Option<&Expr>,
        body: &Block,
        span: Span,
    ) {
        if !self.loop_allowed(span) {
            return;
        }
        let (lo, hi) = (self.bound(lo), self.bound(hi));
        let step = match step {
            Some(s) => match self.const_int(s, "a loop step") {
                Some(v) if v > 0 => Some(v as u64),
                Some(v) => {
                    self.error(
                        Diag::new(&codes::CONST_EVAL, "a loop step must be positive", s.span)
                            .label(format!("this is {v}")),
                    );
                    None
                }
                None => None,
            },
            None => Some(1),
        };
        let (Some(lo), Some(hi), Some(step)) = (lo, hi, step) else {
            return;
        };
        let carried = self.carried(&[body]);
        let inits: Vec<Value> = carried.iter().map(|i| self.slots[*i].0).collect();
        let mut ptypes = vec![Type::Scalar(DType::I32)];
        ptypes.extend(inits.iter().map(|v| self.ty(*v)));
        let outer = self.cur;
        let bb = self.f.new_block(&ptypes);
        let params = self.f.blocks[bb].params.clone();
        for (k, i) in carried.iter().enumerate() {
            self.slots[*i].0 = params[k + 1];
        }
        self.cur = bb;
        self.scopes.push(HashMap::new());
        self.bind(&var.name, Binding::Val(Val::V(params[0])));
        let _ = self.block_value(body);
        self.scopes.pop();
        let end = self.cur;
        self.f.blocks[end].yields = carried.iter().map(|i| self.slots[*i].0).collect();
        self.cur = outer;
        let types: Vec<Type> = inits.iter().map(|v| self.ty(*v)).collect();
        let op = self.f.push(
            outer,
            OpKind::For {
                lo,
                hi,
                step,
                inits,
                body: bb,
            },
            &types,
            span,
        );
        let results = self.f.ops[op].results.clone();
        for (k, i) in carried.iter().enumerate() {
            self.slots[*i].0 = results[k];
        }
    }

    fn while_loop(&mut self, cond: &Expr, body: &Block, span: Span) {
        if self.mode != Mode::Body {
            self.error(
                Diag::new(
                    &codes::NOT_CONSTANT,
                    "loops are only allowed in kernel bodies",
                    span,
                )
                .label("not here"),
            );
            return;
        }
        let carried = self.carried(&[body]);
        let inits: Vec<Value> = carried.iter().map(|i| self.slots[*i].0).collect();
        let types: Vec<Type> = inits.iter().map(|v| self.ty(*v)).collect();
        let outer = self.cur;

        let cb = self.f.new_block(&types);
        let cparams = self.f.blocks[cb].params.clone();
        for (k, i) in carried.iter().enumerate() {
            self.slots[*i].0 = cparams[k];
        }
        self.cur = cb;
        let c = match self.condition(cond) {
            Some(Val::Bool(b)) => {
                self.literal(Literal::Bool(b), Type::Scalar(DType::Bool), cond.span)
            }
            Some(Val::V(x)) => Some(x),
            _ => None,
        };
        let cend = self.cur;
        let Some(c) = c else {
            self.cur = outer;
            return;
        };
        self.f.blocks[cend].yields = vec![c];

        let bb = self.f.new_block(&types);
        let bparams = self.f.blocks[bb].params.clone();
        for (k, i) in carried.iter().enumerate() {
            self.slots[*i].0 = bparams[k];
        }
        self.cur = bb;
        let _ = self.block_value(body);
        let bend = self.cur;
        self.f.blocks[bend].yields = carried.iter().map(|i| self.slots[*i].0).collect();
        self.cur = outer;
        let op = self.f.push(
            outer,
            OpKind::While {
                inits,
                cond: cb,
                body: bb,
            },
            &types,
            span,
        );
        let results = self.f.ops[op].results.clone();
        for (k, i) in carried.iter().enumerate() {
            self.slots[*i].0 = results[k];
        }
    }
}

/// Names assigned (`name = ...`, `name += ...`) anywhere inside a block.
fn assigned_names(b: &Block, out: &mut BTreeSet<String>) {
    for s in &b.stmts {
        match s {
            Stmt::Assign { target, value, .. } => {
                let targets = match &target.kind {
                    ExprKind::Tuple(items) => items.iter().collect(),
                    _ => vec![target],
                };
                for t in targets {
                    if let ExprKind::Name(p) = &t.kind {
                        if p.segments.len() == 1 {
                            out.insert(p.segments[0].name.clone());
                        }
                    }
                }
                expr_assigned(value, out);
            }
            Stmt::Let { value, .. } | Stmt::LetTuple { value, .. } => expr_assigned(value, out),
            // A nested function cannot assign the names it captures.
            Stmt::Fn(_) => {}
            Stmt::Expr(e) => expr_assigned(e, out),
            Stmt::For { body, .. } | Stmt::While { body, .. } => assigned_names(body, out),
            Stmt::Assert(_) => {}
            Stmt::Print { args, .. } => args.iter().for_each(|a| expr_assigned(a, out)),
        }
    }
    if let Some(t) = &b.tail {
        expr_assigned(t, out);
    }
}

fn expr_assigned(e: &Expr, out: &mut BTreeSet<String>) {
    match &e.kind {
        ExprKind::If(_, t, f) => {
            assigned_names(t, out);
            if let Some(f) = f {
                expr_assigned(f, out);
            }
        }
        ExprKind::Block(b) => assigned_names(b, out),
        _ => {}
    }
}

/// The `{}` of a `print` format, or `None` when a brace is neither part of
/// one nor doubled (`{{`, `}}`).
fn placeholders(fmt: &str) -> Option<usize> {
    let mut n = 0;
    let mut it = fmt.chars().peekable();
    while let Some(c) = it.next() {
        match (c, it.peek()) {
            ('{', Some('}')) | ('{', Some('{')) | ('}', Some('}')) => {
                n += usize::from(it.next() == Some('}') && c == '{');
            }
            ('{' | '}', _) => return None,
            _ => {}
        }
    }
    Some(n)
}

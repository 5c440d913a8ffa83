//! Name resolution inside function and kernel bodies, run once per module
//! before any kernel is specialised: every name must be declared before use
//! (locals) or anywhere in the module (items), calls must name functions
//! with the right number of arguments, and functions must not recurse.
//!
//! Functions are checked for types only when a kernel instantiates them;
//! this pass makes a library module like `std/nn.pk` report unknown names
//! even when nothing calls it.

use super::{ItemRef, ModId, Program};
use crate::ast::{self, Expr, ExprKind, Item, Stmt};
use crate::check::{is_builtin, unsupported_dtype};
use crate::diag::{codes, Diag};
use crate::ir::DType;
use std::collections::HashSet;

/// Checks every body of module `m`.
pub fn check_module(p: &Program, m: ModId) -> Vec<Diag> {
    let mut w = Walker {
        p,
        m,
        scopes: Vec::new(),
        diags: Vec::new(),
        calls: Vec::new(),
    };
    for (i, item) in p.module(m).ast.items.iter().enumerate() {
        match item {
            Item::Fn(f) => {
                w.scopes.push(
                    f.generics
                        .iter()
                        .map(|g| g.name.clone())
                        .chain(f.params.iter().map(|x| x.name.name.clone()))
                        .collect(),
                );
                for prm in &f.params {
                    if let Some(t) = &prm.ty {
                        w.type_expr(t);
                    }
                }
                if let Some(t) = &f.ret {
                    w.type_expr(t);
                }
                w.calls.clear();
                w.block(&f.body);
                w.scopes.pop();
                let calls = std::mem::take(&mut w.calls);
                w.recursion(i, f, calls);
            }
            Item::Kernel(k) => {
                let mut names: HashSet<String> = HashSet::new();
                names.extend(k.params.iter().map(|x| x.name.name.clone()));
                names.extend(
                    k.inputs
                        .iter()
                        .chain(&k.outputs)
                        .map(|o| o.name.name.clone()),
                );
                for c in &k.clauses {
                    match c {
                        ast::Clause::Grid(g, _) => {
                            names.extend(g.iter().map(|d| d.name.name.clone()))
                        }
                        ast::Clause::Prefetch(ps, _) => {
                            names.extend(ps.iter().map(|d| d.name.name.clone()))
                        }
                        ast::Clause::Scratch(ss, _) => {
                            names.extend(ss.iter().map(|d| d.name.name.clone()))
                        }
                        ast::Clause::VmemLimit(..) | ast::Clause::Assert(_) => {}
                    }
                }
                w.scopes.push(names);
                w.block(&k.body);
                w.scopes.pop();
                w.calls.clear();
            }
            _ => {}
        }
    }
    w.diags
}

struct Walker<'p> {
    p: &'p Program,
    m: ModId,
    scopes: Vec<HashSet<String>>,
    diags: Vec<Diag>,
    /// Functions called by the body being walked.
    calls: Vec<(ModId, usize, crate::span::Span)>,
}

impl Walker<'_> {
    fn local(&self, n: &str) -> bool {
        self.scopes.iter().any(|s| s.contains(n))
    }

    fn declare(&mut self, n: &str) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(n.to_string());
        }
    }

    fn type_expr(&mut self, t: &ast::TypeExpr) {
        let n = &t.dtype.name;
        // A module constant may hold a dtype (`const D = bf16;`); the
        // checker verifies that it does.
        let is_const = matches!(
            self.p.lookup(self.m, std::slice::from_ref(&t.dtype)),
            Some(ItemRef::Const(..))
        );
        if !self.local(n) && !is_const && DType::from_name(n).is_none() {
            let d = unsupported_dtype(n, t.dtype.span).unwrap_or_else(|| {
                Diag::new(&codes::UNKNOWN_DTYPE, format!("unknown dtype `{n}`"), t.dtype.span)
                    .label("not a dtype or generic")
                    .help("declare generic dtypes in `fn name<T>`; dtypes are f32, bf16, i32, i16, i8, u8, bool, f8e4m3fn, f8e5m2")
            });
            self.diags.push(d);
        }
        for d in t.shape.iter().flatten() {
            if let ast::DimExpr::Expr(e) = d {
                self.expr(e);
            }
        }
    }

    fn block(&mut self, b: &ast::Block) {
        self.scopes.push(HashSet::new());
        for s in &b.stmts {
            self.stmt(s);
        }
        if let Some(t) = &b.tail {
            self.expr(t);
        }
        self.scopes.pop();
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Let {
                name, ty, value, ..
            } => {
                self.expr(value);
                if let Some(t) = ty {
                    self.type_expr(t);
                }
                self.declare(&name.name);
            }
            Stmt::Assign { target, value, .. } => {
                self.expr(target);
                self.expr(value);
            }
            Stmt::Expr(e) => self.expr(e),
            Stmt::For {
                var,
                lo,
                hi,
                step,
                body,
                ..
            } => {
                self.expr(lo);
                self.expr(hi);
                if let Some(s) = step {
                    self.expr(s);
                }
                self.scopes.push(HashSet::from([var.name.clone()]));
                self.block(body);
                self.scopes.pop();
            }
            Stmt::While { cond, body, .. } => {
                self.expr(cond);
                self.block(body);
            }
            Stmt::Assert(a) => self.expr(&a.cond),
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Error => {}
            ExprKind::Name(p) => self.name(p),
            ExprKind::Unary(_, a) | ExprKind::Cast(a, _) => self.expr(a),
            ExprKind::Binary(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Call(p, args) => {
                self.callee(p, args, e.span);
                for a in args {
                    self.expr(&a.value);
                }
            }
            ExprKind::Index(base, idx) => {
                self.expr(base);
                for i in idx {
                    match i {
                        ast::Index::Range(a, b, _) => {
                            self.expr(a);
                            self.expr(b);
                        }
                        ast::Index::Expr(x) => self.expr(x),
                        _ => {}
                    }
                }
            }
            ExprKind::List(items) => items.iter().for_each(|i| self.expr(i)),
            ExprKind::If(c, t, f) => {
                self.expr(c);
                self.block(t);
                if let Some(f) = f {
                    self.expr(f);
                }
            }
            ExprKind::Block(b) => self.block(b),
        }
    }

    fn name(&mut self, p: &ast::Path) {
        if p.segments.len() == 1 {
            let n = p.segments[0].name.as_str();
            if self.local(n)
                || DType::from_name(n).is_some()
                || matches!(n, "inf" | "nan" | "pi" | "none")
            {
                return;
            }
        }
        if self.p.lookup(self.m, &p.segments).is_some() {
            return;
        }
        if let Some(d) =
            unsupported_dtype(p.segments[0].name.as_str(), p.span).filter(|_| p.segments.len() == 1)
        {
            self.diags.push(d);
            return;
        }
        self.diags.push(
            Diag::new(
                &codes::UNKNOWN_NAME,
                format!("unknown name `{}`", p.to_string_path()),
                p.span,
            )
            .label("not found in this scope")
            .help("declare it with `let` before this use, or `use` the module that defines it"),
        );
    }

    fn callee(&mut self, p: &ast::Path, args: &[ast::Arg], span: crate::span::Span) {
        let nargs = args.len();
        match self.p.lookup(self.m, &p.segments) {
            Some(ItemRef::Fn(m, i)) => {
                if let Some(f) = self.p.fn_decl(m, i) {
                    if let Some(kw) = args.iter().find_map(|a| a.name.as_ref()) {
                        self.diags.push(keyword_to_fn(f, kw));
                    } else if f.params.len() != nargs {
                        self.diags.push(
                            Diag::new(
                                &codes::ARITY,
                                format!(
                                    "`{}` takes {} arguments, {nargs} given",
                                    f.name.name,
                                    f.params.len()
                                ),
                                span,
                            )
                            .label("wrong number of arguments")
                            .with(f.name.span, "defined here"),
                        );
                    }
                }
                self.calls.push((m, i, p.span));
            }
            Some(_) => {}
            None => {
                let n = p.segments[0].name.as_str();
                if p.segments.len() == 1 && (is_builtin(n) || self.local(n)) {
                    return;
                }
                self.diags.push(
                    Diag::new(
                        &codes::UNKNOWN_NAME,
                        format!("unknown function `{}`", p.to_string_path()),
                        p.span,
                    )
                    .label("not a function or builtin")
                    .help("builtins are listed in docs/language.md; module functions need `use`"),
                );
            }
        }
    }

    /// Reports a function that reaches itself through calls.
    fn recursion(
        &mut self,
        i: usize,
        f: &ast::FnDecl,
        direct: Vec<(ModId, usize, crate::span::Span)>,
    ) {
        let start = (self.m, i);
        let mut seen: HashSet<(ModId, usize)> = HashSet::new();
        let mut stack: Vec<(ModId, usize)> = direct.iter().map(|(m, j, _)| (*m, *j)).collect();
        while let Some(cur) = stack.pop() {
            if cur == start {
                let span = direct.first().map(|c| c.2).unwrap_or(f.name.span);
                self.diags.push(
                    Diag::new(
                        &codes::CYCLE,
                        format!("`{}` calls itself", f.name.name),
                        span,
                    )
                    .label("this call leads back to the function")
                    .with(f.name.span, "defined here")
                    .help("pk functions are inlined; write the repetition as a `for` loop"),
                );
                return;
            }
            if !seen.insert(cur) {
                continue;
            }
            if let Some(g) = self.p.fn_decl(cur.0, cur.1) {
                let mut sub = Walker {
                    p: self.p,
                    m: cur.0,
                    scopes: vec![g.params.iter().map(|x| x.name.name.clone()).collect()],
                    diags: Vec::new(),
                    calls: Vec::new(),
                };
                sub.block(&g.body);
                stack.extend(sub.calls.iter().map(|(m, j, _)| (*m, *j)));
            }
        }
    }
}

/// A keyword argument in a call of a `.pk` function: only builtins take
/// keywords, so the argument count would be the wrong thing to complain about.
pub(crate) fn keyword_to_fn(f: &ast::FnDecl, kw: &ast::Ident) -> Diag {
    Diag::new(
        &codes::UNKNOWN_ARGUMENT,
        format!("`{}` does not take keyword arguments", f.name.name),
        kw.span,
    )
    .label(format!("keyword `{}`", kw.name))
    .with(f.name.span, "defined here")
    .help(format!(
        "functions written in pk take their arguments by position: `{}({})`",
        f.name.name,
        f.params
            .iter()
            .map(|p| p.name.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

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
                w.calls.clear();
                w.func(f);
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
                        ast::Clause::Mesh(axes, _) => {
                            names.extend(axes.iter().map(|a| a.name.name.clone()))
                        }
                        ast::Clause::VmemLimit(..)
                        | ast::Clause::CollectiveId(..)
                        | ast::Clause::Assert(_)
                        | ast::Clause::Where(..) => {}
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

    /// A function's parameters, defaults, types and body, in a scope that
    /// adds its generics and parameters to the enclosing ones (none for a
    /// module function; the body's names for a nested one).
    fn func(&mut self, f: &ast::FnDecl) {
        self.scopes
            .push(f.generics.iter().map(|g| g.name.clone()).collect());
        let mut first_default: Option<&ast::FnParam> = None;
        for prm in &f.params {
            if let Some(t) = &prm.ty {
                self.type_expr(t);
            }
            match (&prm.default, first_default) {
                (Some(d), _) => {
                    self.expr(d);
                    first_default.get_or_insert(prm);
                }
                (None, Some(earlier)) => self.diags.push(
                    Diag::new(
                        &codes::ARITY,
                        format!("parameter `{}` needs a default value", prm.name.name),
                        prm.name.span,
                    )
                    .label("no default")
                    .with(earlier.span, "an earlier parameter has one")
                    .help("parameters with defaults come last, as in Python"),
                ),
                (None, None) => {}
            }
            self.declare(&prm.name.name);
        }
        for t in f.ret.iter().flat_map(|r| r.types()) {
            self.type_expr(t);
        }
        self.block(&f.body);
        self.scopes.pop();
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
            Stmt::Print { args, .. } => args.iter().for_each(|a| self.expr(a)),
            Stmt::LetTuple { names, value, .. } => {
                self.expr(value);
                for (n, _) in names {
                    self.declare(&n.name);
                }
            }
            Stmt::Fn(f) => {
                // Declared after its body: a nested function sees the names
                // before it and cannot call itself (calls are inlined).
                self.func(f);
                self.declare(&f.name.name);
            }
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
            ExprKind::Method(base, _, args) => {
                self.expr(base);
                for a in args {
                    self.expr(&a.value);
                }
            }
            ExprKind::Index(base, idx) | ExprKind::At(base, _, idx) => {
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
            ExprKind::List(items) | ExprKind::Tuple(items) => {
                items.iter().for_each(|i| self.expr(i))
            }
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
        match self.p.lookup(self.m, &p.segments) {
            Some(ItemRef::Fn(m, i)) => {
                if let Some(f) = self.p.fn_decl(m, i) {
                    if let Err(d) = bind_args(f, args, span) {
                        self.diags.push(*d);
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

/// Matches a call's arguments to the parameters of `f`: positional ones
/// first, then keywords by name, then defaults. Returns, per parameter, the
/// index of the argument that sets it (`None`: its default).
pub(crate) fn bind_args(
    f: &ast::FnDecl,
    args: &[ast::Arg],
    span: crate::span::Span,
) -> Result<Vec<Option<usize>>, Box<Diag>> {
    let mut bound: Vec<Option<usize>> = vec![None; f.params.len()];
    for (k, a) in args.iter().enumerate() {
        let slot = match &a.name {
            None => {
                if let Some(prev) = args[..k].iter().find_map(|a| a.name.as_ref()) {
                    return Err(Box::new(
                        Diag::new(
                            &codes::ARITY,
                            "a positional argument follows a keyword argument",
                            a.value.span,
                        )
                        .label("positional")
                        .with(prev.span, "keyword given before it")
                        .help("pass positional arguments first, then `name = value`"),
                    ));
                }
                if k >= f.params.len() {
                    return Err(Box::new(too_many(f, args.len(), span)));
                }
                k
            }
            Some(kw) => match f.params.iter().position(|p| p.name.name == kw.name) {
                Some(p) => p,
                None => {
                    return Err(Box::new(
                        Diag::new(
                            &codes::UNKNOWN_ARGUMENT,
                            format!("`{}` has no parameter `{}`", f.name.name, kw.name),
                            kw.span,
                        )
                        .label("unknown keyword")
                        .with(f.name.span, "defined here")
                        .help(format!("its parameters are: {}", param_list(f))),
                    ))
                }
            },
        };
        if bound[slot].is_some() {
            return Err(Box::new(
                Diag::new(
                    &codes::ARITY,
                    format!("parameter `{}` is given twice", f.params[slot].name.name),
                    a.value.span,
                )
                .label("given again here")
                .with(f.params[slot].name.span, "the parameter"),
            ));
        }
        bound[slot] = Some(k);
    }
    let missing: Vec<&str> = f
        .params
        .iter()
        .zip(&bound)
        .filter(|(p, b)| b.is_none() && p.default.is_none())
        .map(|(p, _)| p.name.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(Box::new(
            Diag::new(
                &codes::ARITY,
                format!(
                    "`{}` is missing {}: `{}`",
                    f.name.name,
                    if missing.len() == 1 {
                        "an argument"
                    } else {
                        "arguments"
                    },
                    missing.join("`, `")
                ),
                span,
            )
            .label("missing arguments")
            .with(f.name.span, "defined here")
            .help(format!("its parameters are: {}", param_list(f))),
        ));
    }
    Ok(bound)
}

fn too_many(f: &ast::FnDecl, n: usize, span: crate::span::Span) -> Diag {
    Diag::new(
        &codes::ARITY,
        format!(
            "`{}` takes {} arguments, {n} given",
            f.name.name,
            f.params.len()
        ),
        span,
    )
    .label("too many arguments")
    .with(f.name.span, "defined here")
    .help(format!("its parameters are: {}", param_list(f)))
}

/// `x, y, scale = 0.5` for help lines.
fn param_list(f: &ast::FnDecl) -> String {
    let names: Vec<String> = f
        .params
        .iter()
        .map(|p| match &p.default {
            Some(_) => format!("`{} = ...`", p.name.name),
            None => format!("`{}`", p.name.name),
        })
        .collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

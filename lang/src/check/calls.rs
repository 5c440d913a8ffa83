//! Index maps, the kernel body, and calls of `.pk` functions: resolution of
//! the callee, inlining with the arguments bound (keywords and defaults),
//! and the checks of declared parameter and return types.

use super::builder::{Binding, Builder};
use super::value::Val;
use crate::ast::{self, Expr, ExprKind};
use crate::diag::{codes, Diag};
use crate::ir::{self, DType, Dim, Func, Literal, Type};
use crate::resolve::{ItemRef, ModId};
use crate::span::Span;
use std::collections::HashMap;

impl Builder<'_, '_> {
    /// Builds an index map: yields one i32 per array dimension.
    pub fn index_map_func(mut self, exprs: &[Expr], rank: usize) -> Func {
        let mut ys = Vec::new();
        for e in exprs {
            let v = self.expr(e);
            match v {
                Val::Err => {}
                Val::Int(_) | Val::V(_) => {
                    let is_ok = match &v {
                        Val::V(x) => self.ty(*x) == Type::Scalar(DType::I32),
                        _ => true,
                    };
                    if !is_ok {
                        let t = match &v {
                            Val::V(x) => self.ty(*x).to_string(),
                            _ => String::new(),
                        };
                        self.error(
                            Diag::new(
                                &codes::INDEX_MAP_TYPE,
                                format!("a block index must be a scalar i32, found `{t}`"),
                                e.span,
                            )
                            .label("not a scalar i32"),
                        );
                    } else if let Some(x) = self.value(v, e.span) {
                        ys.push(x);
                    }
                }
                other => {
                    let d = self.describe(&other);
                    self.error(
                        Diag::new(&codes::INDEX_MAP_TYPE, format!("a block index must be a scalar i32, found {d}"), e.span)
                            .label("not a block index")
                            .help("index maps compute block indices from grid indices, constants and prefetch values"),
                    );
                }
            }
        }
        if ys.len() != rank || exprs.len() != rank {
            // The arity error was reported by the header; keep the IR valid.
            ys.clear();
            for _ in 0..rank {
                if let Some(z) =
                    self.literal(Literal::Int(0), Type::Scalar(DType::I32), Span::default())
                {
                    ys.push(z);
                }
            }
        }
        let entry = self.cur;
        self.f.blocks[entry].yields = ys;
        self.f
    }

    /// Builds the kernel body (its tail value, if any, is discarded).
    pub fn kernel_body(&mut self, body: &ast::Block) {
        let _ = self.block_value(body);
    }

    // ---- Calls -----------------------------------------------------------------

    pub(super) fn call(&mut self, p: &ast::Path, args: &[ast::Arg], span: Span) -> Val {
        if p.segments.len() == 1 {
            if let Some(Binding::Fn(f)) = self.lookup_local(&p.segments[0].name) {
                return self.call_local(f, args, span);
            }
        }
        if p.segments.len() == 1 && self.lookup_local(&p.segments[0].name).is_some() {
            return self.error(
                Diag::new(
                    &codes::WRONG_KIND,
                    format!("`{}` is not a function", p.segments[0].name),
                    p.span,
                )
                .label("a local name shadows this")
                .help("rename the local binding"),
            );
        }
        match self.ck.program.lookup(self.module, &p.segments) {
            Some(ItemRef::Fn(m, i)) => return self.call_fn(m, i, args, span),
            Some(_) => {
                return self.error(
                    Diag::new(
                        &codes::WRONG_KIND,
                        format!("`{}` is not a function", p.to_string_path()),
                        p.span,
                    )
                    .label("cannot be called"),
                )
            }
            None => {}
        }
        if p.segments.len() == 1 {
            if let Some(v) = self.builtin(&p.segments[0].name, args, span) {
                return v;
            }
        }
        let help = self.suggest(&p.last().name);
        let mut d = Diag::new(
            &codes::UNKNOWN_NAME,
            format!("unknown function `{}`", p.to_string_path()),
            p.span,
        )
        .label("not a function or builtin");
        d = d.help(help.unwrap_or_else(|| {
            "builtins are listed in docs/language.md; module functions need `use`".into()
        }));
        self.error(d)
    }

    /// Inlines a call of a `.pk` function with the arguments' types.
    fn call_fn(&mut self, m: ModId, i: usize, args: &[ast::Arg], span: Span) -> Val {
        let program = self.ck.program;
        let Some(decl) = program.fn_decl(m, i) else {
            return Val::Err;
        };
        if self.ck.call_stack.contains(&(m, i)) {
            return self.error(
                Diag::new(
                    &codes::CYCLE,
                    format!("`{}` calls itself", decl.name.name),
                    span,
                )
                .label("recursive call")
                .with(decl.name.span, "defined here")
                .help("pk functions are inlined; write the repetition as a `for` loop"),
            );
        }
        // The callee sees its own module and its parameters, not the caller's locals.
        self.inline(decl, m, (m, i), HashMap::new(), args, span)
    }

    /// Inlines `decl` at a call: binds the arguments (by position, keyword
    /// or default) in a scope on top of `base` and checks the body there.
    pub(super) fn inline(
        &mut self,
        decl: &ast::FnDecl,
        m: ModId,
        key: (ModId, usize),
        base: HashMap<String, Binding>,
        args: &[ast::Arg],
        span: Span,
    ) -> Val {
        let bound = match crate::resolve::bind_args(decl, args, span) {
            Ok(b) => b,
            Err(d) => return self.error(*d),
        };
        let mut vals: Vec<Option<(Val, Span)>> = args
            .iter()
            .map(|a| Some((self.expr(&a.value), a.value.span)))
            .collect();
        let saved_scopes = std::mem::replace(&mut self.scopes, vec![base, HashMap::new()]);
        let saved_module = std::mem::replace(&mut self.module, m);
        self.ck.call_stack.push(key);
        for g in &decl.generics {
            self.bind(&g.name, Binding::Val(Val::Unit));
        }
        let mut ok = true;
        for (p, slot) in decl.params.iter().zip(bound) {
            // A default is evaluated in the callee's scope, where the
            // parameters before it are already bound.
            let (v, vs) = match (slot.and_then(|k| vals[k].take()), &p.default) {
                (Some(a), _) => a,
                (None, Some(d)) => (self.expr(d), d.span),
                (None, None) => (Val::Err, span),
            };
            let v = match &p.ty {
                Some(t) => match self.match_type(t, v, vs, &decl.generics) {
                    Some(v) => v,
                    None => {
                        ok = false;
                        Val::Err
                    }
                },
                None => v,
            };
            self.bind(&p.name.name, Binding::Val(v));
        }
        let body_start = self.ck.diags.len();
        let mut result = if ok {
            self.block_value(&decl.body)
        } else {
            Val::Err
        };
        if let (true, Some(rt)) = (ok, &decl.ret) {
            result = self.check_ret(rt, result, decl.body.span);
        }
        // An error in the body depends on this call's arguments: name the
        // call site, as each enclosing call will (rustc's "in this macro
        // invocation"). The kernel adds its parameter values once at the end.
        let call = format!("in this call of `{}`", decl.name.name);
        for d in &mut self.ck.diags[body_start..] {
            d.secondary.push((span, call.clone()));
        }
        self.ck.call_stack.pop();
        if self.ck.call_stack.is_empty() {
            self.ck.inlined.extend(body_start..self.ck.diags.len());
        }
        self.module = saved_module;
        self.scopes = saved_scopes;
        result
    }

    /// Matches an argument against a parameter's type pattern, binding
    /// generic names; constants are converted to the pattern's dtype.
    fn match_type(
        &mut self,
        t: &ast::TypeExpr,
        v: Val,
        vs: Span,
        generics: &[ast::Ident],
    ) -> Option<Val> {
        let is_generic = |n: &str| generics.iter().any(|g| g.name == n);
        let actual: Option<Type> = match &v {
            Val::V(x) => Some(self.ty(*x)),
            _ => None,
        };
        // Dtype.
        let dname = &t.dtype.name;
        let want_dtype: Option<DType> = if is_generic(dname) {
            match self.lookup_local(dname) {
                Some(Binding::Val(Val::Dtype(d))) => Some(d),
                _ => {
                    if let Some(a) = &actual {
                        self.bind(dname, Binding::Val(Val::Dtype(a.dtype())));
                    }
                    actual.as_ref().map(|a| a.dtype())
                }
            }
        } else {
            Some(self.dtype_name(&t.dtype)?)
        };
        let v = match (&actual, want_dtype) {
            (Some(a), Some(d)) if a.dtype() != d => {
                self.error(
                    Diag::new(
                        &codes::PATTERN_MISMATCH,
                        format!("expected `{d}`, found `{a}`"),
                        vs,
                    )
                    .label(format!("this is {a}"))
                    .with(t.span, "parameter type"),
                );
                return None;
            }
            (None, Some(d)) if v.is_const() => match self.value_as(v, d, vs) {
                Some(x) => Val::V(x),
                None => return None,
            },
            _ => v,
        };
        let Some(shape) = &t.shape else {
            return Some(v);
        };
        let actual_shape: Vec<Dim> = match &v {
            Val::V(x) => self.ty(*x).shape().to_vec(),
            _ => Vec::new(),
        };
        let rest = shape
            .iter()
            .position(|d| matches!(d, ast::DimExpr::Rest(_)));
        let fixed = shape.len() - usize::from(rest.is_some());
        let rank_ok = if rest.is_some() {
            actual_shape.len() >= fixed
        } else {
            actual_shape.len() == fixed
        };
        if !rank_ok {
            self.error(
                Diag::new(
                    &codes::PATTERN_MISMATCH,
                    format!(
                        "expected rank {fixed}, found shape [{}]",
                        ir::shape_str(&actual_shape)
                    ),
                    vs,
                )
                .label("wrong rank")
                .with(t.span, "parameter type"),
            );
            return None;
        }
        let mut ai = 0usize;
        for d in shape {
            match d {
                ast::DimExpr::Rest(_) => ai += actual_shape.len() - fixed,
                ast::DimExpr::Expr(e) => {
                    let have = actual_shape[ai].clone();
                    ai += 1;
                    if let ExprKind::Name(p) = &e.kind {
                        if p.segments.len() == 1 && is_generic(&p.segments[0].name) {
                            let g = &p.segments[0].name;
                            match self.lookup_local(g) {
                                Some(Binding::Val(Val::Int(prev))) if prev != have => {
                                    self.error(
                                        Diag::new(
                                            &codes::PATTERN_MISMATCH,
                                            format!("`{g}` is {prev} here but {have} elsewhere"),
                                            vs,
                                        )
                                        .label("inconsistent size")
                                        .with(t.span, "parameter type"),
                                    );
                                    return None;
                                }
                                Some(Binding::Val(Val::Int(_))) => {}
                                _ => self.bind(g, Binding::Val(Val::Int(have))),
                            }
                            continue;
                        }
                    }
                    let want = self.const_dim(e, "a dimension")?;
                    if want != have {
                        self.error(
                            Diag::new(
                                &codes::PATTERN_MISMATCH,
                                format!("expected size {want}, found {have}"),
                                vs,
                            )
                            .label("wrong size")
                            .with(t.span, "parameter type"),
                        );
                        return None;
                    }
                }
            }
        }
        Some(v)
    }

    pub(super) fn check_return(&mut self, rt: &ast::TypeExpr, v: Val, span: Span) -> Val {
        let actual = match &v {
            Val::V(x) => self.ty(*x),
            Val::Err => return Val::Err,
            _ => return v,
        };
        let d = match self.lookup_local(&rt.dtype.name) {
            Some(Binding::Val(Val::Dtype(d))) => Some(d),
            _ => DType::from_name(&rt.dtype.name),
        };
        if let Some(d) = d {
            if d != actual.dtype() {
                return self.error(
                    Diag::new(
                        &codes::RETURN_MISMATCH,
                        format!("function returns `{actual}` but declares `{d}`"),
                        span,
                    )
                    .label(format!("body produces {actual}"))
                    .with(rt.span, "declared here"),
                );
            }
        }
        if let Some(want) = self.declared_shape(rt) {
            let have = actual.shape();
            let agrees = want.len() == have.len()
                && want.iter().zip(have).all(|(w, h)| match (w, h.known()) {
                    (Some(w), Some(h)) => *w == h,
                    _ => true,
                });
            if !agrees {
                let shown: Vec<String> = want
                    .iter()
                    .map(|w| w.map_or("_".to_string(), |v| v.to_string()))
                    .collect();
                return self.error(
                    Diag::new(
                        &codes::RETURN_MISMATCH,
                        format!(
                            "function returns `{actual}` but declares shape [{}]",
                            shown.join(", ")
                        ),
                        span,
                    )
                    .label(format!("body produces {actual}"))
                    .with(rt.span, "declared here"),
                );
            }
        }
        v
    }

    /// The sizes a declared return type fixes: `None` when it says nothing
    /// about the shape (`-> T` or a `..` pattern); a dimension that is not a
    /// known constant (a name bound nowhere) matches any size.
    fn declared_shape(&mut self, rt: &ast::TypeExpr) -> Option<Vec<Option<i64>>> {
        let dims = rt.shape.as_ref()?;
        let mut out = Vec::with_capacity(dims.len());
        for d in dims {
            let ast::DimExpr::Expr(e) = d else {
                return None;
            };
            let before = self.ck.diags.len();
            let v = self.const_expr(e);
            // A size the return type cannot fix is not an error here: the
            // shape check is best-effort on top of the dtype check.
            self.ck.diags.truncate(before);
            out.push(match v {
                Val::Int(d) => d.known(),
                _ => None,
            });
        }
        Some(out)
    }
}

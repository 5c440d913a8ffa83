//! Tuples and functions nested in bodies.
//!
//! A tuple (`(a, b)`) is a checker-only value ([`Val::Tuple`]): binding
//! (`let (a, mut b) = t;`), assigning (`(a, b) = f(a, b);`) and yielding it
//! from an `if` take it apart into its elements, so the IR and both
//! backends only ever see the elements. A `let mut` element is an ordinary
//! slot, which is how a tuple is carried through `for` and `while`.
//!
//! A nested `fn` captures the names in scope where it is declared: refs,
//! parameters and grid indices as they are, `let mut` variables by their
//! value at that point. A call inlines its body on top of that scope.

use super::builder::{Binding, Builder};
use super::value::Val;
use crate::ast::{self, Expr, ExprKind};
use crate::diag::{codes, Diag};
use crate::ir::{BlockId, Value};
use crate::resolve::ModId;
use crate::span::Span;
use std::collections::HashMap;
use std::rc::Rc;

/// A function declared in a body, with the scope it closes over.
#[derive(Debug)]
pub struct LocalFn {
    pub decl: ast::FnDecl,
    pub module: ModId,
    pub captured: HashMap<String, Binding>,
}

/// The nesting of a tuple yielded by an `if`, to rebuild it from the
/// flat list of the `If` op's results.
pub enum Shape {
    Leaf,
    Tuple(Vec<Shape>),
}

impl Shape {
    /// Rebuilds the value from `results`, starting at `*k`.
    pub fn rebuild(&self, results: &[Value], k: &mut usize, span: Span) -> Val {
        match self {
            Shape::Leaf => {
                *k += 1;
                Val::V(results[*k - 1])
            }
            Shape::Tuple(items) => Val::Tuple(
                items
                    .iter()
                    .map(|s| (s.rebuild(results, k, span), span))
                    .collect(),
            ),
        }
    }
}

impl Builder<'_, '_> {
    /// `fn name(...) { ... }` inside a body: binds `name` to the function
    /// and a snapshot of the scope.
    pub(super) fn local_fn(&mut self, f: &ast::FnDecl) {
        let mut captured = HashMap::new();
        for scope in &self.scopes {
            for (name, b) in scope {
                let b = match b {
                    Binding::Mut(i) => Binding::Val(Val::V(self.slots[*i].0)),
                    other => other.clone(),
                };
                captured.insert(name.clone(), b);
            }
        }
        let local = LocalFn {
            decl: f.clone(),
            module: self.module,
            captured,
        };
        self.bind(&f.name.name, Binding::Fn(Rc::new(local)));
    }

    /// A call of a nested function.
    pub(super) fn call_local(&mut self, f: Rc<LocalFn>, args: &[ast::Arg], span: Span) -> Val {
        // A nested function cannot name itself (it is bound after its
        // declaration), so it cannot recurse; `usize::MAX` marks it on the
        // call stack without matching any module function.
        let key = (f.module, usize::MAX);
        self.inline(&f.decl, f.module, key, f.captured.clone(), args, span)
    }

    /// Checks a function's result against its declared type.
    pub(super) fn check_ret(&mut self, rt: &ast::RetType, v: Val, span: Span) -> Val {
        match rt {
            ast::RetType::One(t) => {
                if let Val::Tuple(items) = &v {
                    return self.error(
                        Diag::new(
                            &codes::RETURN_MISMATCH,
                            format!(
                                "function returns a tuple of {} values but declares one",
                                items.len()
                            ),
                            span,
                        )
                        .label("body produces a tuple")
                        .with(t.span, "declared here")
                        .help("declare the tuple: `-> (T, U)`"),
                    );
                }
                self.check_return(t, v, span)
            }
            ast::RetType::Tuple(ts, tsp) => {
                let items = match v {
                    Val::Tuple(items) if items.len() == ts.len() => items,
                    Val::Err => return Val::Err,
                    other => {
                        let d = self.describe(&other);
                        return self.error(
                            Diag::new(
                                &codes::RETURN_MISMATCH,
                                format!(
                                    "function declares a tuple of {} values but returns {d}",
                                    ts.len()
                                ),
                                span,
                            )
                            .label(format!("body produces {d}"))
                            .with(*tsp, "declared here"),
                        );
                    }
                };
                let checked = items
                    .into_iter()
                    .zip(ts)
                    .map(|((v, vs), t)| (self.check_return(t, v, span), vs))
                    .collect();
                Val::Tuple(checked)
            }
        }
    }

    /// The elements of `v` for a destructuring with `n` names, or an error.
    fn elements(&mut self, v: Val, n: usize, span: Span) -> Option<Vec<(Val, Span)>> {
        match v {
            Val::Tuple(items) if items.len() == n => Some(items),
            Val::Err => None,
            other => {
                let d = self.describe(&other);
                self.error(
                    Diag::new(
                        &codes::TUPLE_MISMATCH,
                        format!("expected a tuple of {n} values, found {d}"),
                        span,
                    )
                    .label(format!("this is {d}"))
                    .help("use one name per element; `_` skips one"),
                );
                None
            }
        }
    }

    /// `let (a, mut b, _) = value;`
    pub(super) fn let_tuple(&mut self, names: &[(ast::Ident, bool)], value: &Expr) {
        let v = match &value.kind {
            ExprKind::If(c, t, f) => self.if_expr(c, t, f.as_deref(), value.span, true),
            _ => self.expr(value),
        };
        let Some(items) = self.elements(v, names.len(), value.span) else {
            for (n, _) in names {
                self.bind(&n.name, Binding::Val(Val::Err));
            }
            return;
        };
        for ((name, mutable), (v, vs)) in names.iter().zip(items) {
            if name.name == "_" {
                continue;
            }
            if !*mutable || matches!(v, Val::Err) {
                self.bind(&name.name, Binding::Val(v));
                continue;
            }
            match self.mutable_value(v, vs) {
                Some(x) => {
                    self.slots.push((x, name.name.clone()));
                    let i = self.slots.len() - 1;
                    self.bind(&name.name, Binding::Mut(i));
                }
                None => self.bind(&name.name, Binding::Val(Val::Err)),
            }
        }
    }

    /// `(a, b) = value;`: assigns each element to a `let mut` name.
    pub(super) fn assign_tuple(&mut self, targets: &[Expr], rhs: Val, value: &Expr, span: Span) {
        let Some(items) = self.elements(rhs, targets.len(), value.span) else {
            return;
        };
        for (t, (v, vs)) in targets.iter().zip(items) {
            match &t.kind {
                ExprKind::Name(p) if p.segments.len() == 1 && p.segments[0].name == "_" => {}
                ExprKind::Name(p) if p.segments.len() == 1 => {
                    self.assign_name(&p.segments[0].name, t.span, None, v, vs, span)
                }
                _ => {
                    self.error(
                        Diag::new(
                            &codes::NOT_ASSIGNABLE,
                            "a tuple assignment assigns to names",
                            t.span,
                        )
                        .label("not a `let mut` name")
                        .help("write refs one at a time: `y[..] = v;`"),
                    );
                }
            }
        }
    }

    /// Gives both branch values of an `if` one type, element by element
    /// for tuples: the flat values each branch yields and the tuple's shape.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn unify_tree(
        &mut self,
        a: Val,
        ab: BlockId,
        asp: Span,
        b: Val,
        bb: BlockId,
        bsp: Span,
        span: Span,
    ) -> Option<(Vec<Value>, Vec<Value>, Shape)> {
        match (a, b) {
            (Val::Tuple(xs), Val::Tuple(ys)) if xs.len() == ys.len() => {
                let (mut va, mut vb, mut shapes) = (Vec::new(), Vec::new(), Vec::new());
                for ((x, xsp), (y, ysp)) in xs.into_iter().zip(ys) {
                    let (p, q, s) = self.unify_tree(x, ab, xsp, y, bb, ysp, span)?;
                    va.extend(p);
                    vb.extend(q);
                    shapes.push(s);
                }
                Some((va, vb, Shape::Tuple(shapes)))
            }
            (a @ Val::Tuple(_), b) | (a, b @ Val::Tuple(_)) => {
                let (da, db) = (self.describe(&a), self.describe(&b));
                self.error(
                    Diag::new(
                        &codes::BRANCH_MISMATCH,
                        format!("`if` branches produce different values: {da} and {db}"),
                        span,
                    )
                    .with(asp, format!("this is {da}"))
                    .with(bsp, format!("this is {db}")),
                );
                None
            }
            (a, b) => {
                let (x, y) = self.unify_branches(a, ab, asp, b, bb, bsp, span)?;
                Some((vec![x], vec![y], Shape::Leaf))
            }
        }
    }
}

//! Static assertions: `assert(cond, "message")` in a kernel header or a
//! body. The condition is evaluated when the kernel is specialised; a false
//! one is PK0224 at the assertion, naming the parameter values it read and
//! which of them came from `-p`.
//!
//! invariant: an assertion never emits IR. A condition that depends on a
//! run-time value is PK0205; one on parameters without a value (`pkc check`
//! without `-p`) is skipped, as every rule on unknown sizes is.

use super::builder::Builder;
use super::value::Val;
use crate::ast::{self, Expr, ExprKind};
use crate::diag::{codes, Diag};
use std::collections::BTreeSet;

/// A kernel parameter's value and whether `-p` set it, for the notes of a
/// failed assertion.
#[derive(Debug, Clone)]
pub struct ParamShown {
    pub name: String,
    pub value: String,
    pub from_command_line: bool,
}

impl Builder<'_, '_> {
    /// Checks one assertion; `false` when it fails (or is malformed).
    pub fn static_assert(&mut self, a: &ast::StaticAssert) -> bool {
        match self.const_expr(&a.cond) {
            Val::Bool(true) | Val::Err => true,
            Val::Bool(false) => {
                let d = failed(&self.ck.shown_params, a);
                self.error(d);
                false
            }
            other => {
                let what = self.describe(&other);
                self.error(
                    Diag::new(
                        &codes::BAD_CONDITION,
                        "an assertion's condition must be a bool",
                        a.cond.span,
                    )
                    .label(format!("this is {what}"))
                    .help("compare it: `assert(M % bm == 0, \"...\")`"),
                );
                false
            }
        }
    }
}

/// The diagnostic of a false assertion.
fn failed(params: &[ParamShown], a: &ast::StaticAssert) -> Diag {
    let message = match &a.message {
        Some(m) => format!("static assertion failed: {m}"),
        None => "static assertion failed".to_string(),
    };
    let mut names = BTreeSet::new();
    names_in(&a.cond, &mut names);
    let used: Vec<&ParamShown> = params.iter().filter(|p| names.contains(&p.name)).collect();
    let label = if used.is_empty() {
        "this is false".to_string()
    } else {
        let values: Vec<String> = used
            .iter()
            .map(|p| format!("{}={}", p.name, p.value))
            .collect();
        format!("false for {}", values.join(", "))
    };
    let mut d = Diag::new(&codes::STATIC_ASSERT, message, a.span)
        .label(label)
        .help("pass other parameter values, or change the kernel so that it supports these");
    let given: Vec<String> = used
        .iter()
        .filter(|p| p.from_command_line)
        .map(|p| format!("-p {}={}", p.name, p.value))
        .collect();
    if !given.is_empty() {
        d = d.note(format!("set on the command line: {}", given.join(" ")));
    }
    d
}

/// The diagnostic of a false `where` constraint, in the words of a failed
/// assertion: the values it read and which came from `-p`.
pub(super) fn where_failed(params: &[ParamShown], cond: &Expr, span: crate::span::Span) -> Diag {
    let a = ast::StaticAssert {
        cond: cond.clone(),
        message: None,
        span,
    };
    let mut d = failed(params, &a);
    d.code = &codes::WHERE_FALSE;
    d.message = "the kernel's `where` constraint is false".to_string();
    d.help =
        Some("choose parameter values that satisfy it; `pkc tune` only tries those".to_string());
    d
}

/// The single-segment names an expression reads.
pub(super) fn names_in(e: &Expr, out: &mut BTreeSet<String>) {
    match &e.kind {
        ExprKind::Name(p) if p.segments.len() == 1 => {
            out.insert(p.segments[0].name.clone());
        }
        ExprKind::Unary(_, a) | ExprKind::Cast(a, _) => names_in(a, out),
        ExprKind::Binary(_, a, b) => {
            names_in(a, out);
            names_in(b, out);
        }
        ExprKind::Call(_, args) => args.iter().for_each(|x| names_in(&x.value, out)),
        ExprKind::List(items) => items.iter().for_each(|x| names_in(x, out)),
        _ => {}
    }
}

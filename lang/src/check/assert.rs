//! Static assertions: `assert(cond, "message")` in a kernel header or a
//! body. The condition is evaluated when the kernel is specialised; a false
//! one is PK0224 at the assertion, naming the parameter values it read and
//! where the given ones came from: `-p` on the command line, or the words a
//! host binding chose ([`crate::Options::param_origins`]).
//!
//! invariant: an assertion never emits IR. A condition that depends on a
//! run-time value is PK0205; one on parameters without a value (`pkc check`
//! without `-p`) is skipped, as every rule on unknown sizes is.

use super::builder::Builder;
use super::value::Val;
use crate::ast::{self, Expr, ExprKind};
use crate::diag::{codes, Diag};
use std::collections::BTreeSet;

/// A kernel parameter's value and where it came from, for the notes of a
/// failed assertion.
#[derive(Debug, Clone)]
pub struct ParamShown {
    pub name: String,
    pub value: String,
    pub origin: Origin,
}

/// Where a parameter's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The kernel's default.
    Default,
    /// `-p NAME=VALUE` on the command line.
    CommandLine,
    /// Given by a program that described where it came from, in its words
    /// ([`crate::Options::param_origins`]).
    Described(String),
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
    if let Some(note) = origins_note(&used) {
        d = d.note(note);
    }
    d
}

/// Where the given values among `used` came from: `set on the command line:
/// -p bq=64` for values of `-p`, and for values a program described, its
/// words followed by the values (`from the call's keyword arguments:
/// bq=64`), one group per origin in the order the parameters are declared.
fn origins_note(used: &[&ParamShown]) -> Option<String> {
    let mut groups: Vec<(&Origin, Vec<String>)> = Vec::new();
    for p in used {
        let value = match &p.origin {
            Origin::Default => continue,
            Origin::CommandLine => format!("-p {}={}", p.name, p.value),
            Origin::Described(_) => format!("{}={}", p.name, p.value),
        };
        match groups.iter_mut().find(|(o, _)| **o == p.origin) {
            Some((_, values)) => values.push(value),
            None => groups.push((&p.origin, vec![value])),
        }
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(origin, values)| match origin {
            Origin::Described(words) => format!("{words}: {}", values.join(", ")),
            _ => format!("set on the command line: {}", values.join(" ")),
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The diagnostic of a false `where` constraint, in the words of a failed
/// assertion: the values it read and where the given ones came from.
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

#[cfg(test)]
mod tests {
    use crate::{compile_source, Options};

    const SRC: &str = "kernel add_one<M = 1024, bm = 128, bn = 128>(
    x: f32[M, bn] block [bm, bn] at (i, 0),
) -> y: f32[M, bn] block [bm, bn] at (i, 0)
grid (i in M / bm parallel)
assert(M % bm == 0 && bn == 128, \"M must be a multiple of bm\")
{
    y[..] = x[..] + 1.0;
}
";

    fn note(opts: &Options) -> String {
        let f = compile_source("a.pk", SRC, opts).expect_err("the assertion fails");
        let d = &f.diags[0];
        assert_eq!(d.code.code, "PK0224");
        d.notes.join("\n")
    }

    fn given(params: &[(&str, &str)]) -> Vec<(String, String)> {
        params
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn values_of_the_command_line_are_spelled_as_flags() {
        let opts = Options {
            params: given(&[("M", "1000"), ("bm", "64")]),
            specialise: true,
            ..Default::default()
        };
        assert_eq!(note(&opts), "set on the command line: -p M=1000 -p bm=64");
    }

    #[test]
    fn described_values_are_grouped_by_their_origin_in_declaration_order() {
        let opts = Options {
            params: given(&[("bm", "64"), ("M", "1000"), ("bn", "128")]),
            param_origins: given(&[
                ("M", "taken from the arrays"),
                ("bm", "from the call's keyword arguments"),
                ("bn", "taken from the arrays"),
            ]),
            specialise: true,
            ..Default::default()
        };
        assert_eq!(
            note(&opts),
            "taken from the arrays: M=1000, bn=128; from the call's keyword arguments: bm=64"
        );
        // A value without a described origin came from the command line;
        // defaults are not listed.
        let opts = Options {
            params: given(&[("M", "1000")]),
            param_origins: given(&[("bm", "unused")]),
            specialise: true,
            ..Default::default()
        };
        assert_eq!(note(&opts), "set on the command line: -p M=1000");
    }
}

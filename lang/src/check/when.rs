//! Conditional declarations: an operand, a scalar-prefetch operand or a
//! scratch buffer written `... if COND` exists only in the specialisations
//! where the compile-time condition `COND` holds.
//!
//! invariant: an absent declaration leaves no trace in the kernel's IR: it is
//! not an operand (so not in the StableHLO call, the CPU manifest, the
//! package or `--in`), not a scratch buffer and not a ref. Its name is still
//! declared (duplicates are reported as for any name) and bound to
//! [`Binding::Absent`], so a use is PK0230 rather than "unknown name".
//!
//! invariant: a condition that cannot be decided (it reads an integer
//! parameter without a value, as in `pkc check` without `-p`) keeps the
//! declaration, as every rule on unknown sizes checks the general case.

use super::builder::Binding;
use super::header::KernelCx;
use super::value::Val;
use super::Checker;
use crate::ast::{self, Expr};
use crate::diag::{codes, Diag};
use crate::span::Span;

impl KernelCx<'_> {
    /// Whether a declaration with condition `when` is present. An absent one
    /// has its name bound to [`Binding::Absent`].
    pub(super) fn present(
        &mut self,
        ck: &mut Checker,
        name: &ast::Ident,
        when: Option<&Expr>,
    ) -> bool {
        let Some(cond) = when else {
            return true;
        };
        match self.constant(ck).const_expr(cond) {
            Val::Bool(true) | Val::Err => true,
            Val::Bool(false) => {
                self.bindings
                    .push((name.name.clone(), Binding::Absent(cond.span)));
                false
            }
            other => {
                let what = self.constant(ck).describe(&other);
                ck.error(
                    Diag::new(
                        &codes::BAD_CONDITION,
                        format!("the condition of `{}` must be a bool", name.name),
                        cond.span,
                    )
                    .label(format!("this is {what}"))
                    .help(
                        "write a condition on the kernel's parameters: `if QUANT`, `if window > 0`",
                    ),
                );
                true
            }
        }
    }
}

/// The diagnostic for a use of an absent declaration.
pub(super) fn absent(name: &str, used: Span, cond: Span) -> Diag {
    Diag::new(
        &codes::ABSENT,
        format!("`{name}` is absent in this specialisation"),
        used,
    )
    .label("used here")
    .with(cond, "its condition is false for these parameters")
    .help("use it only under the same condition: `if COND { ... }` builds only the branch taken")
}

//! Optional parameters: `window: int? = none` takes a value of its kind or
//! `none`, and `window is none` / `window is not none` (that is, `== none`
//! and `!= none`) decide at compile time which code a specialisation has.
//!
//! invariant: `none` never reaches the IR as a value. It is a parameter's
//! value ([`ParamValue::None`], shown `none` in packages and notes), and the
//! only operations on it are `==` and `!=`, which fold to a bool constant;
//! any other use is PK0231.

use super::builder::Builder;
use super::header::KernelCx;
use super::value::Val;
use super::{Checker, Expr2};
use crate::ast::{self, BinOp};
use crate::diag::{codes, Diag};
use crate::ir::ParamValue;
use crate::span::Span;

impl KernelCx<'_> {
    /// A parameter whose value (`-p` or default) is `none`: accepted when
    /// it is declared optional.
    pub(super) fn none_param(
        &self,
        ck: &mut Checker,
        p: &ast::KernelParam,
        given: Option<&Expr2>,
    ) -> (Val, ParamValue) {
        if p.optional {
            return (Val::None, ParamValue::None);
        }
        let written = given
            .map(|e| e.expr.span)
            .or(p.default.as_ref().map(|d| d.span))
            .unwrap_or(p.span);
        let kind = match p.kind {
            ast::ParamKind::Int => "int",
            ast::ParamKind::Float => "float",
            ast::ParamKind::Bool => "bool",
            ast::ParamKind::Dtype => "dtype",
        };
        ck.error(
            Diag::new(
                &codes::NONE_VALUE,
                format!("parameter `{}` is not optional", p.name.name),
                written,
            )
            .label("`none` given here")
            .with(p.name.span, "parameter declared here")
            .help(format!(
                "declare it optional to accept `none`: `{}: {kind}? = none`",
                p.name.name
            )),
        );
        (Val::Err, ParamValue::Unbound)
    }
}

impl Builder<'_, '_> {
    /// `a OP b` where one side is `none`: `==` and `!=` say whether the
    /// other side is `none` too; anything else is PK0231.
    pub(super) fn none_operand(&mut self, op: BinOp, a: &Val, sa: Span, b: &Val, sb: Span) -> Val {
        let both = matches!(a, Val::None) && matches!(b, Val::None);
        match op {
            BinOp::Eq => Val::Bool(both),
            BinOp::Ne => Val::Bool(!both),
            _ => {
                let at = if matches!(a, Val::None) { sa } else { sb };
                self.error(
                    Diag::new(
                        &codes::NONE_VALUE,
                        format!("`none` has no value to compute `{}` with", op.symbol()),
                        at,
                    )
                    .label("this is `none` here")
                    .help("test it first: `if window is not none { ... }` builds only the branch taken"),
                )
            }
        }
    }
}

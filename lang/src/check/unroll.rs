//! Static unrolling: `for h in lo..hi step s unroll { body }` checks and
//! emits `body` once per index, in order, with `h` bound to that index as a
//! compile-time integer, so that it can size windows, pick static positions
//! and satisfy the alignment rule (Pallas authors write a Python loop for
//! this). Nothing of the loop is left in the IR: both back ends see
//! straight-line code, and a `let mut` assigned in the body is simply
//! updated from one copy of the body to the next.

use super::builder::{Binding, Builder};
use super::value::Val;
use crate::ast::{Block, Expr, Ident};
use crate::diag::{codes, Diag};
use crate::ir::Dim;
use crate::span::Span;
use std::collections::HashMap;

/// The most copies of a body one unrolled loop may make; a longer loop is
/// almost certainly meant to run on the TPU (drop `unroll`).
pub const MAX_UNROLL: i64 = 1024;

impl Builder<'_, '_> {
    pub(super) fn unrolled_loop(
        &mut self,
        var: &Ident,
        (lo, hi, step): (&Expr, &Expr, Option<&Expr>),
        body: &Block,
        span: Span,
    ) {
        if !self.loop_allowed(span) {
            return;
        }
        let lo_v = self.const_int(lo, "the start of an unrolled loop");
        let hi_v = self.const_int(hi, "the end of an unrolled loop");
        let step_v = match step {
            Some(s) => self.const_int(s, "a loop step"),
            None => Some(1),
        };
        let (Some(lo_v), Some(hi_v), Some(step_v)) = (lo_v, hi_v, step_v) else {
            return;
        };
        if step_v <= 0 {
            let at = step.map_or(span, |s| s.span);
            self.error(
                Diag::new(&codes::CONST_EVAL, "a loop step must be positive", at)
                    .label(format!("this is {step_v}")),
            );
            return;
        }
        // In i128 so that no bounds overflow; every index is below `hi`.
        let (lo_w, hi_w, step_w) = (i128::from(lo_v), i128::from(hi_v), i128::from(step_v));
        let count = if hi_w > lo_w {
            (hi_w - lo_w + step_w - 1) / step_w
        } else {
            0
        };
        if count > i128::from(MAX_UNROLL) {
            self.error(
                Diag::new(
                    &codes::UNROLL_LENGTH,
                    format!("an unrolled loop of {count} iterations; at most {MAX_UNROLL} are copied"),
                    span,
                )
                .label("too many copies of the body")
                .help("drop `unroll` to run the loop on the TPU, or unroll an inner loop of fewer iterations"),
            );
            return;
        }
        for k in 0..count {
            let errors = self.ck.diags.iter().filter(|d| d.is_error()).count();
            self.scopes.push(HashMap::new());
            self.bind(
                &var.name,
                // In `lo..hi`, so it fits an i64.
                Binding::Val(Val::Int(Dim::Known((lo_w + k * step_w) as i64))),
            );
            let _ = self.block_value(body);
            self.scopes.pop();
            // An error in one copy of the body would repeat in every copy.
            if self.ck.diags.iter().filter(|d| d.is_error()).count() > errors {
                break;
            }
        }
    }
}

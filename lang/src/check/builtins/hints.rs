//! `multiple_of(x, n)`: Pallas' `pl.multiple_of`, a promise that a run-time
//! index is a multiple of `n`, which the alignment rule
//! ([`crate::check::align`]) and Mosaic (`tpu.assume_multiple`) rely on.

use super::Args;
use crate::check::builder::Builder;
use crate::check::value::Val;
use crate::diag::{codes, Diag};
use crate::ir::{DType, OpKind, Type};
use crate::span::Span;

impl Builder<'_, '_> {
    pub(super) fn multiple_of(&mut self, a: &Args, span: Span) -> Val {
        let n = self.const_int(a.pos[1], "the multiple of `multiple_of`");
        let x = self.expr(a.pos[0]);
        let Some(n) = n else { return Val::Err };
        if n <= 0 {
            return self.error(
                Diag::new(
                    &codes::MULTIPLE_OF,
                    format!("`multiple_of` needs a positive multiple, not {n}"),
                    a.pos[1].span,
                )
                .label("not positive")
                .help("write the alignment the index has, e.g. `multiple_of(x, 8)`"),
            );
        }
        match x {
            Val::Err => Val::Err,
            // A constant is checked now and needs no promise.
            Val::Int(d) => match d.known() {
                Some(c) if c % n != 0 => self.error(
                    Diag::new(
                        &codes::MULTIPLE_OF,
                        format!("{c} is not a multiple of {n}"),
                        a.pos[0].span,
                    )
                    .label(format!("{c} % {n} is {}", c.rem_euclid(n)))
                    .help(format!("use a multiple of {n}, or drop the hint")),
                ),
                _ => Val::Int(d),
            },
            Val::V(v) if self.ty(v) == Type::Scalar(DType::I32) => self.emit(
                OpKind::AssumeMultiple(v, n as u64),
                Type::Scalar(DType::I32),
                span,
            ),
            other => {
                let d = self.describe(&other);
                self.error(
                    Diag::new(
                        &codes::MULTIPLE_OF,
                        "`multiple_of` takes a scalar `i32` index",
                        a.pos[0].span,
                    )
                    .label(format!("this is {d}"))
                    .help("apply it to a run-time index such as `ids[i] * 8` or a loop variable"),
                )
            }
        }
    }
}

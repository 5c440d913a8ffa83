//! `concatenate([a, b], axis=1)` and `tile(x, [1, 4])`: values joined
//! along one dimension, as `jnp.concatenate` and `jnp.tile` in a Pallas
//! kernel. Both are `Concat` ops (`tpu.concatenate` in Mosaic); `tile` is
//! one per repeated dimension.

use super::Args;
use crate::check::builder::Builder;
use crate::check::value::Val;
use crate::diag::{codes, Diag};
use crate::ir::{Dim, OpKind, Type, Value};
use crate::span::Span;

impl Builder<'_, '_> {
    pub(super) fn concatenate(&mut self, a: &Args, span: Span) -> Val {
        let crate::ast::ExprKind::List(items) = &a.pos[0].kind else {
            return self.error(
                Diag::new(
                    &codes::ARITY,
                    "`concatenate` takes a list of values: `concatenate([a, b], axis=1)`",
                    a.pos[0].span,
                )
                .label("not a list"),
            );
        };
        if items.is_empty() {
            return self.error(
                Diag::new(&codes::ARITY, "`concatenate` of no values", a.pos[0].span)
                    .label("empty list"),
            );
        }
        let mut vals: Vec<(Value, Span)> = Vec::with_capacity(items.len());
        for e in items {
            let v = self.expr(e);
            if v.is_const() {
                return self.error(
                    Diag::new(
                        &codes::WRONG_KIND,
                        "`concatenate` joins tiles, not constants",
                        e.span,
                    )
                    .label("a constant")
                    .help("make a tile first: `full(f32, [8, 128], 1.0)`"),
                );
            }
            let Some(x) = self.value(v, e.span) else {
                return Val::Err;
            };
            vals.push((x, e.span));
        }
        let first = self.ty(vals[0].0);
        if first.is_scalar() {
            return self.error(
                Diag::new(&codes::BAD_AXIS, "cannot concatenate scalars", vals[0].1)
                    .label("rank 0"),
            );
        }
        let axis = match a.kw("axis") {
            Some(e) => match self.axis_arg(e, first.rank()) {
                Some(x) => x,
                None => return Val::Err,
            },
            None => 0,
        };
        let mut total = 0i64;
        for (x, sp) in &vals {
            let t = self.ty(*x);
            let agrees = t.dtype() == first.dtype()
                && t.rank() == first.rank()
                && t.shape()
                    .iter()
                    .zip(first.shape())
                    .enumerate()
                    .all(|(k, (d, f))| k == axis || d == f);
            if !agrees {
                let code = if t.dtype() != first.dtype() {
                    &codes::TYPE_MISMATCH
                } else {
                    &codes::SHAPE_MISMATCH
                };
                return self.error(
                    Diag::new(
                        code,
                        format!("cannot concatenate `{t}` with `{first}` along axis {axis}"),
                        *sp,
                    )
                    .label(format!("this is {t}"))
                    .with(vals[0].1, format!("the first is {first}"))
                    .help("the values need one dtype and equal sizes except along `axis`"),
                );
            }
            match t.shape()[axis].known() {
                Some(n) => total += n,
                None => {
                    return self.error(
                        Diag::new(
                            &codes::NOT_CONSTANT,
                            "`concatenate` needs known sizes along its axis",
                            *sp,
                        )
                        .label(format!("this is {t}"))
                        .help("give the kernel's parameters values with `-p`"),
                    )
                }
            }
        }
        if vals.len() == 1 {
            return Val::V(vals[0].0);
        }
        let mut shape = first.shape().to_vec();
        shape[axis] = Dim::Known(total);
        let values = vals.iter().map(|(x, _)| *x).collect();
        self.emit(
            OpKind::Concat(values, axis),
            Type::of(first.dtype(), shape),
            span,
        )
    }

    pub(super) fn tile(&mut self, a: &Args, span: Span) -> Val {
        let v = self.expr(a.pos[0]);
        let Some(mut x) = self.value(v, a.pos[0].span) else {
            return Val::Err;
        };
        let Some(reps) = self.shape_arg(a.pos[1]) else {
            return Val::Err;
        };
        let t = self.ty(x);
        if reps.len() != t.rank() {
            return self.error(
                Diag::new(
                    &codes::SHAPE_MISMATCH,
                    format!(
                        "`tile` of `{t}` needs {} repetition counts, found {}",
                        t.rank(),
                        reps.len()
                    ),
                    a.pos[1].span,
                )
                .label("one count per dimension")
                .help("reshape the value to the result's rank first"),
            );
        }
        for (axis, r) in reps.iter().enumerate() {
            let n = match r.known() {
                Some(n) if n >= 1 => n as usize,
                _ => {
                    return self.error(
                        Diag::new(
                            &codes::CONST_EVAL,
                            format!(
                                "a repetition count must be a known positive integer, found {r}"
                            ),
                            a.pos[1].span,
                        )
                        .label("not positive"),
                    )
                }
            };
            if n == 1 {
                continue;
            }
            let cur = self.ty(x);
            let mut shape = cur.shape().to_vec();
            let Some(size) = shape[axis].known() else {
                return self.error(
                    Diag::new(&codes::NOT_CONSTANT, "`tile` needs known sizes", span)
                        .label(format!("this is {cur}")),
                );
            };
            shape[axis] = Dim::Known(size * n as i64);
            match self.emit(
                OpKind::Concat(vec![x; n], axis),
                Type::of(cur.dtype(), shape),
                span,
            ) {
                Val::V(y) => x = y,
                other => return other,
            }
        }
        Val::V(x)
    }
}

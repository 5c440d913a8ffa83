//! `concatenate([a, b], axis=1)` and `tile(x, [1, 4])`: values joined
//! along one dimension, as `jnp.concatenate` and `jnp.tile` in a Pallas
//! kernel. Both are `Concat` ops (`tpu.concatenate` in Mosaic); `tile` is
//! one per repeated dimension.

use super::Args;
use crate::check::builder::Builder;
use crate::check::value::Val;
use crate::diag::{codes, Diag};
use crate::ir::{DType, Dim, OpKind, Type, Value};
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
            // No tile holds more than this many elements (128 MiB of 32-bit
            // lanes, the largest VMEM); a count past it is refused before
            // `n` copies are built.
            const MAX_ELEMS: i64 = 1 << 25;
            let others: i64 = shape
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != axis)
                .map(|(_, d)| d.known().unwrap_or(1))
                .fold(1i64, |a, b| a.saturating_mul(b));
            let total = size
                .checked_mul(n as i64)
                .filter(|&s| s.saturating_mul(others) <= MAX_ELEMS);
            let Some(total) = total else {
                return self.error(
                    Diag::new(
                        &codes::SHAPE_MISMATCH,
                        format!("`tile` repeats axis {axis} of `{cur}` {n} times: more elements than any VMEM holds"),
                        a.pos[1].span,
                    )
                    .label("too many repetitions")
                    .help("a tile holds at most 2^25 elements (128 MiB of 32-bit lanes)"),
                );
            };
            shape[axis] = Dim::Known(total);
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

impl Builder<'_, '_> {
    /// `repeat(x, n, axis=k)`: `jnp.repeat` with one count, each element
    /// repeated `n` times along `k`. As jnp lowers it: the axis is split
    /// into `[size, 1]`, broadcast to `[size, n]` and merged again, one
    /// `vector.shape_cast` / `vector.broadcast` / `vector.shape_cast` in
    /// Mosaic.
    pub(super) fn repeat(&mut self, a: &Args, span: Span) -> Val {
        let v = self.expr(a.pos[0]);
        let Some(x) = self.value(v, a.pos[0].span) else {
            return Val::Err;
        };
        let t = self.ty(x);
        if t.is_scalar() {
            return self.error(
                Diag::new(&codes::BAD_AXIS, "`repeat` of a scalar", a.pos[0].span)
                    .label(format!("this is {t}"))
                    .help("make a tile first: `full(f32, [n], x)`"),
            );
        }
        // Mosaic cannot lay out the split of a rank-1 vector (`[128]` to
        // `[128, 1]`, even by way of `[1, 128]`): libtpu 0.0.51 refuses it
        // on every target ("unsupported shape cast").
        if t.rank() == 1 && !self.ck.skip_tpu_rules {
            return self.error(
                Diag::new(&codes::REPEAT_RANK1, format!("`repeat` of the rank-1 `{t}`"), a.pos[0].span)
                    .label("one dimension")
                    .note("libtpu cannot lay out the split of a rank-1 vector (\"unsupported shape cast\")")
                    .help("keep the value 2-D, e.g. read `x[0..1, :]` rather than `x[0, :]`, and repeat along axis 1"),
            );
        }
        let Some(axis_e) = a.kw("axis") else {
            return self.error(
                Diag::new(&codes::ARITY, "`repeat` needs `axis=`", span)
                    .label("no axis")
                    .help("name the axis to repeat along: `repeat(x, 2, axis=0)`"),
            );
        };
        let Some(axis) = self.axis_arg(axis_e, t.rank()) else {
            return Val::Err;
        };
        let n = match self.const_int(a.pos[1], "a repetition count") {
            Some(n) if n >= 1 => n,
            Some(n) => {
                return self.error(
                    Diag::new(
                        &codes::CONST_EVAL,
                        format!("a repetition count must be positive, found {n}"),
                        a.pos[1].span,
                    )
                    .label("not positive"),
                )
            }
            None => return Val::Err,
        };
        if n == 1 {
            return Val::V(x);
        }
        let Some(size) = t.shape()[axis].known() else {
            return self.error(
                Diag::new(&codes::NOT_CONSTANT, "`repeat` needs known sizes", span)
                    .label(format!("this is {t}")),
            );
        };
        let (d, shape) = (t.dtype(), t.shape().to_vec());
        // Spreading 16-bit lanes makes libtpu spill registers by the
        // megabyte (v4 runs out of VMEM for a bf16[2, 32, 128]); the same
        // lanes spread as 32-bit values and narrowed again are exact.
        if axis + 1 == shape.len() && d.bits() == 16 {
            let wide = if d.is_float() { DType::F32 } else { DType::I32 };
            let Some(w) = self.emit_v(OpKind::Cast(x), t.with_dtype(wide), span) else {
                return Val::Err;
            };
            let Val::V(y) = self.spread(w, axis, n, span) else {
                return Val::Err;
            };
            let mut out = shape;
            out[axis] = Dim::Known(size * n);
            return self.emit(OpKind::Cast(y), Type::of(d, out), span);
        }
        self.spread(x, axis, n, span)
    }

    /// Each element of `x` repeated `n` times along `axis`: `[.., s, ..]`
    /// as `[.., s, 1, ..]`, broadcast to `[.., s, n, ..]`, merged.
    fn spread(&mut self, x: Value, axis: usize, n: i64, span: Span) -> Val {
        let t = self.ty(x);
        let (d, shape) = (t.dtype(), t.shape().to_vec());
        let size = shape[axis].get() as i64;
        let mut split = shape.clone();
        split.insert(axis + 1, Dim::Known(1));
        let mut spread = split.clone();
        spread[axis + 1] = Dim::Known(n);
        let mut out = shape;
        out[axis] = Dim::Known(size * n);
        let Some(y) = self.emit_v(OpKind::Reshape(x), Type::of(d, split), span) else {
            return Val::Err;
        };
        let Some(y) = self.emit_v(OpKind::Broadcast(y), Type::of(d, spread), span) else {
            return Val::Err;
        };
        self.emit(OpKind::Reshape(y), Type::of(d, out), span)
    }
}

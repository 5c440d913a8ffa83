//! Slicing values by compile-time ranges: `x[:, 0..64]`, `s[8..16, ..]`.
//!
//! A subscript of a value (not a ref) takes a static window of it, as
//! `x[..., :D]` does on a traced array in Pallas. Every entry is `:`, `..`
//! or a range `a..b` of compile-time integers, so the result keeps the
//! value's rank; it lowers to `vector.extract_strided_slice` in Mosaic.
//! libtpu 0.0.51 accepts windows that start inside a tile as well (lane 64,
//! bf16 row 8: tests/in/value_slices.pk compiles on all five targets), so
//! there is no alignment rule.

use super::builder::Builder;
use super::value::Val;
use crate::ast::{self, Expr};
use crate::diag::{codes, Diag};
use crate::ir::{Dim, OpKind, Type, Value};
use crate::span::Span;

impl Builder<'_, '_> {
    /// `x[idx]` where `x` is a value.
    pub(super) fn slice_value(
        &mut self,
        x: Value,
        base: &Expr,
        idx: &[ast::Index],
        span: Span,
    ) -> Val {
        let t = self.ty(x);
        let shape = t.shape().to_vec();
        let rank = shape.len();
        if rank == 0 {
            return self.error(
                Diag::new(
                    &codes::NOT_INDEXABLE,
                    format!("a scalar cannot be indexed; this is `{t}`"),
                    base.span,
                )
                .label("a scalar"),
            );
        }
        let rests = idx
            .iter()
            .filter(|i| matches!(i, ast::Index::Rest(_)))
            .count();
        let explicit = idx.len() - rests;
        if rests > 1 || explicit > rank {
            return self.error(
                Diag::new(
                    &codes::INDEX_RANK,
                    format!("a value of type `{t}` is indexed with {explicit} entries"),
                    span,
                )
                .label(format!("this is {t}"))
                .help("give at most one entry per dimension and `..` at most once"),
            );
        }
        let mut window: Vec<(u64, u64)> = Vec::with_capacity(rank);
        for ix in idx {
            let dim = window.len();
            match ix {
                ast::Index::Rest(_) => {
                    for d in &shape[dim..dim + (rank - explicit)] {
                        window.push((0, d.get()));
                    }
                }
                ast::Index::Full(_) => window.push((0, shape[dim].get())),
                ast::Index::Range(lo, hi, sp) => {
                    let (l, h) = (
                        self.const_int(lo, "a range start"),
                        self.const_int(hi, "a range end"),
                    );
                    let (Some(l), Some(h)) = (l, h) else {
                        return Val::Err;
                    };
                    let fits = shape[dim].known().is_none_or(|n| h <= n);
                    if l < 0 || h <= l || !fits {
                        return self.error(
                            Diag::new(
                                &codes::OUT_OF_BOUNDS,
                                format!("range {l}..{h} is outside dimension {dim} of `{t}`"),
                                *sp,
                            )
                            .label(format!("dimension {dim} has size {}", shape[dim]))
                            .help("a range `a..b` needs 0 <= a < b <= the size"),
                        );
                    }
                    window.push((l as u64, (h - l) as u64));
                }
                ast::Index::Expr(e) => {
                    return self.error(
                        Diag::new(
                            &codes::NOT_INDEXABLE,
                            "a value is sliced by compile-time ranges only",
                            e.span,
                        )
                        .label("not a range")
                        .help("write `k..k + 1` to take one position (the dimension stays); a run-time position needs a ref window"),
                    );
                }
            }
        }
        for d in &shape[window.len()..] {
            window.push((0, d.get()));
        }
        if window
            .iter()
            .zip(&shape)
            .all(|((s, n), d)| *s == 0 && d.known() == Some(*n as i64))
        {
            return Val::V(x);
        }
        // A dimension taken whole keeps its (possibly symbolic) size.
        let out: Vec<Dim> = window
            .iter()
            .zip(&shape)
            .map(|((s, n), d)| match d.known() {
                None if *s == 0 && *n == 0 => d.clone(),
                _ => Dim::Known(*n as i64),
            })
            .collect();
        self.emit(OpKind::Slice(x, window), Type::of(t.dtype(), out), span)
    }
}

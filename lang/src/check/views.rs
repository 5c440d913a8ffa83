//! Views of refs: `k.at[h]` is the part of `k` that a window selects, as
//! Pallas' `k_ref.at[h]`. A view is a ref of its own rank: it is indexed
//! (`kh[..]`, `kh[ds(j, 8), :]`), written, used in DMAs and `store`, and
//! passed to functions like a ref. The checker resolves every access
//! through a view into a window of the underlying ref at once (the view's
//! starts plus the access's), so that the IR and its back ends see plain
//! windows: Mosaic reads and writes them at the summed indices and slices
//! them with `tpu.memref_slice` for DMAs, and the alignment rule
//! (PK0325) judges the summed positions, as libtpu does.

use super::builder::Builder;
use super::value::{SubRef, Val};
use crate::ast::{self, Expr};
use crate::diag::{codes, Diag};
use crate::ir::{Dim, RefId, RefView, Slice, Start, Type};
use crate::span::Span;

impl Builder<'_, '_> {
    /// A whole ref as a view.
    pub(super) fn whole_ref(&self, r: RefId) -> SubRef {
        let shape = self.refs[r].ty.shape.clone();
        SubRef {
            target: r,
            index: shape
                .iter()
                .map(|d| Slice::Range {
                    start: Start::Const(0),
                    size: d.get(),
                })
                .collect(),
            shape,
        }
    }

    /// The ref or view an expression names, or an error.
    pub(super) fn sub_ref_of(&mut self, e: &Expr) -> Option<SubRef> {
        match self.expr(e) {
            Val::Ref(r) => Some(self.whole_ref(r)),
            Val::View(s) => Some(*s),
            Val::Err => None,
            other => {
                let d = self.describe(&other);
                self.error(
                    Diag::new(
                        &codes::NOT_INDEXABLE,
                        format!("only refs can be indexed; this is {d}"),
                        e.span,
                    )
                    .label("not a ref")
                    .help("operands, scratch buffers, prefetch arrays and semaphores are refs"),
                );
                None
            }
        }
    }

    /// `base.at[idx]`: the view of `base` that `idx` selects.
    pub(super) fn at(
        &mut self,
        base: &Expr,
        member: &ast::Ident,
        idx: &[ast::Index],
        span: Span,
    ) -> Val {
        if member.name != "at" {
            return self.error(
                Diag::new(
                    &codes::REF_VIEW,
                    format!("refs have no `.{}[...]`", member.name),
                    member.span,
                )
                .label("unknown member")
                .help("a view of a ref is `k.at[h]` (Pallas' `k_ref.at[h]`)"),
            );
        }
        let sub = match self.expr(base) {
            Val::Ref(r) => self.whole_ref(r),
            Val::View(s) => *s,
            Val::Err => return Val::Err,
            other => {
                let d = self.describe(&other);
                return self.error(
                    Diag::new(
                        &codes::REF_VIEW,
                        format!("`.at[...]` takes a view of a ref; this is {d}"),
                        base.span,
                    )
                    .label("not a ref")
                    .help("slice a value with `v[0..8, :]` instead"),
                );
            }
        };
        let Some((view, ty)) = self.sub_view(&sub, idx, span) else {
            return Val::Err;
        };
        if view.index.iter().any(|s| s.stride() != 1) {
            return self.error(
                Diag::new(
                    &codes::STRIDED_WINDOW,
                    "a view cannot be strided",
                    span,
                )
                .label("`ds(start, size, stride)` in a view")
                .help("take the strided window when reading or writing: `k.at[h][ds(0, 8, 2), :]`"),
            );
        }
        Val::View(Box::new(SubRef {
            target: view.target,
            index: view.index,
            shape: ty.shape().to_vec(),
        }))
    }

    /// The window `idx` of view `sub`, as a window of the underlying ref:
    /// each dimension the view keeps takes the next slice of `idx`, its
    /// start offset by the view's.
    pub(super) fn sub_view(
        &mut self,
        sub: &SubRef,
        idx: &[ast::Index],
        span: Span,
    ) -> Option<(RefView, Type)> {
        let (inner, shape) = self.window_of(sub.target, &sub.shape, idx, span)?;
        let mut inner = inner.into_iter();
        let mut index = Vec::with_capacity(sub.index.len());
        for s in &sub.index {
            index.push(match s {
                Slice::Index(_) => *s,
                // `at` refuses strided windows, so a view's kept
                // dimensions are ranges.
                Slice::Range { start, .. } | Slice::Strided { start, .. } => match inner.next()? {
                    Slice::Index(i) => Slice::Index(self.add_start(*start, i, span)?),
                    Slice::Range { start: i, size } => Slice::Range {
                        start: self.add_start(*start, i, span)?,
                        size,
                    },
                    Slice::Strided {
                        start: i,
                        size,
                        stride,
                    } => Slice::Strided {
                        start: self.add_start(*start, i, span)?,
                        size,
                        stride,
                    },
                },
            });
        }
        let dtype = self.refs[sub.target].ty.dtype;
        Some((
            RefView {
                target: sub.target,
                index,
            },
            Type::of(dtype, shape),
        ))
    }

    /// `a + b` for two positions; constants fold, and a zero adds nothing
    /// (so that `k.at[h][..]` is exactly the window `k[h]` and the
    /// alignment rule sees the same expression).
    fn add_start(&mut self, a: Start, b: Start, span: Span) -> Option<Start> {
        Some(match (a, b) {
            (Start::Const(0), x) | (x, Start::Const(0)) => x,
            (Start::Const(x), Start::Const(y)) => Start::Const(x + y),
            (x, y) => {
                let v = |s: Start| match s {
                    Start::Const(c) => Val::Int(Dim::Known(c as i64)),
                    Start::Dyn(v) => Val::V(v),
                };
                let sum = self.binary(ast::BinOp::Add, v(x), span, v(y), span, span);
                Start::Dyn(self.value(sum, span)?)
            }
        })
    }
}

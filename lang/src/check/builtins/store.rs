//! `store(y[win], v, mask=m)`: a write of a ref window, as Pallas'
//! `pltpu.store(ref, v, mask=m)`. Without a mask it is `y[win] = v`; with
//! one, only the elements where the mask is true are written and the
//! others keep their contents, which saves the read that `where` over the
//! old contents costs. Mosaic stores vectors to VMEM under a mask
//! (`tpu.vector_store` with its mask operand), so the window must be a
//! vector window of a VMEM ref; libtpu 0.0.51 implements the mask for
//! 32-bit elements only (and `vector.maskedstore` not at all), so the
//! ref's dtype must be 32 bits wide.

use super::Args;
use crate::ast::{self, BinOp, Expr};
use crate::check::builder::{Builder, Mode};
use crate::check::value::Val;
use crate::diag::{codes, Diag};
use crate::ir::{DType, OpKind, RefView, Space, Type, Value};
use crate::span::Span;

impl Builder<'_, '_> {
    /// Writes `rhs` (combined with the old contents by `bin` for `+=` and
    /// its kin) to the window `base[idx]`: `y[..] = v`, and the builtin
    /// `store(y[..], v, mask=m)`, which passes its (checked) mask along.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::check) fn store_window(
        &mut self,
        base: &Expr,
        idx: &[ast::Index],
        tspan: Span,
        bin: Option<BinOp>,
        rhs: Val,
        vspan: Span,
        mask: Option<&Expr>,
        span: Span,
    ) {
        let Some((view, ty)) = self.ref_view(base, idx, tspan) else {
            return;
        };
        if !self.check_access(&view, &ty, tspan, "written") || !self.check_strides(&view, tspan) {
            return;
        }
        if mask.is_some() && view.index.iter().any(|s| s.stride() != 1) {
            self.error(
                Diag::new(
                    &codes::STRIDED_WINDOW,
                    "a masked store cannot be strided",
                    tspan,
                )
                .label("`ds(start, size, stride)` with `mask=`")
                .help("store the strided window whole, or mask a unit-stride window"),
            );
            return;
        }
        if self.mode != Mode::Body {
            self.error(
                Diag::new(
                    &codes::NOT_ASSIGNABLE,
                    "refs can only be written in kernel bodies",
                    tspan,
                )
                .label("not in a kernel body"),
            );
            return;
        }
        let new = match bin {
            Some(b) => {
                let Some(old) = self.emit_v(OpKind::Load(view.clone()), ty.clone(), tspan) else {
                    return;
                };
                self.binary(b, Val::V(old), tspan, rhs, vspan, span)
            }
            None => rhs,
        };
        if matches!(new, Val::Err) {
            return;
        }
        if let Val::V(x) = &new {
            let have = self.ty(*x);
            if have.dtype() != ty.dtype() {
                self.error(
                    Diag::new(
                        &codes::TYPE_MISMATCH,
                        format!("cannot store `{have}` into a `{}` window", ty),
                        vspan,
                    )
                    .label(format!("this is {have}"))
                    .with(tspan, format!("the window is {ty}"))
                    .help(format!("convert with `as {}`", ty.dtype())),
                );
                return;
            }
        }
        let Some(x) = self.coerce(new, &ty, vspan) else {
            return;
        };
        let mask = match mask {
            Some(m) => match self.store_mask(m, &view, &ty, tspan) {
                Some(m) => Some(m),
                None => return,
            },
            None => None,
        };
        self.f
            .push(self.cur, OpKind::Store(view, x, mask), &[], span);
    }

    pub(super) fn store_call(&mut self, a: &Args, span: Span) -> Val {
        let target = a.pos[0];
        let (base, idx) = super::window_parts(target);
        match self.expr(base) {
            Val::Ref(_) | Val::View(_) => {}
            Val::Err => return Val::Err,
            other => {
                let d = self.describe(&other);
                return self.error(
                    Diag::new(
                        &codes::NOT_ASSIGNABLE,
                        format!("`store` writes a ref window; this is {d}"),
                        target.span,
                    )
                    .label("not a ref")
                    .help("write `store(y[..], v)` or `store(y[i, ds(j, 128)], v, mask=m)`"),
                );
            }
        }
        let value = a.pos[1];
        let rhs = self.expr(value);
        let mask = a.kw("mask");
        self.store_window(base, idx, target.span, None, rhs, value.span, mask, span);
        Val::Unit
    }

    /// Checks the mask of a masked store into `view` (of type `ty`) and
    /// broadcasts it to the window's shape.
    pub(in crate::check) fn store_mask(
        &mut self,
        m: &Expr,
        view: &RefView,
        ty: &Type,
        tspan: Span,
    ) -> Option<Value> {
        let space = self.refs[view.target].ty.space;
        if ty.is_scalar() || space != Space::Vmem {
            let why = if ty.is_scalar() {
                "this window is one element".to_string()
            } else {
                format!("this window is in {}", space.name())
            };
            self.error(
                Diag::new(
                    &codes::MASKED_STORE,
                    "a masked store writes a vector window of a VMEM ref",
                    tspan,
                )
                .label(why)
                .help("store one element with `y[i, j] = v;` (under an `if` for a condition)"),
            );
            return None;
        }
        let dtype = self.refs[view.target].ty.dtype;
        if dtype.bits() != 32 && !self.ck.skip_tpu_rules {
            self.error(
                Diag::new(
                    &codes::MASKED_STORE_WIDTH,
                    format!("a masked store of `{dtype}`: the TPU masks only 32-bit stores"),
                    tspan,
                )
                .label(format!("this window is {ty}"))
                .note("libtpu refuses it on every target: \"masked store with non-32-bit element type\" is not implemented")
                .help("merge with the old contents instead: `y[win] = where(m, v, y[win]);`"),
            );
            return None;
        }
        let v = self.expr(m);
        let x = self.value(v, m.span)?;
        let t = self.ty(x);
        if t.dtype() != DType::Bool {
            self.error(
                Diag::new(
                    &codes::MASKED_STORE,
                    format!("a store mask is a bool tile, found `{t}`"),
                    m.span,
                )
                .label(format!("this is {t}"))
                .help("compare to get a mask: `mask=iota(i32, [8, 128], 1) < n`"),
            );
            return None;
        }
        self.broadcast_to(x, ty.shape(), m.span)
    }
}

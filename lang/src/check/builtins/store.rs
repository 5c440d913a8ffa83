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
use crate::ast::{self, Expr, ExprKind};
use crate::check::builder::Builder;
use crate::check::value::Val;
use crate::diag::{codes, Diag};
use crate::ir::{DType, RefView, Space, Type, Value};
use crate::span::Span;

impl Builder<'_, '_> {
    pub(super) fn store_call(&mut self, a: &Args, span: Span) -> Val {
        let target = a.pos[0];
        let (base, idx): (&Expr, &[ast::Index]) = match &target.kind {
            ExprKind::Index(b, idx) => (b, idx),
            _ => (target, &[]),
        };
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

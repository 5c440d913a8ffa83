//! Strided windows, `ds(start, size, stride)` in a ref subscript, as
//! `pl.ds(start, size, stride)` in Pallas: `size` positions `stride`
//! apart. Mosaic reads and writes them with `tpu.strided_load` and
//! `tpu.strided_store`, which libtpu 0.0.51 compiles only for 32-bit
//! elements, a unit stride in the last (lane) dimension and a ref whose
//! last dimension is 128 lanes; these are the TPU rules below (PK0352).

use super::builder::Builder;
use crate::ast::Expr;
use crate::diag::{codes, Diag};
use crate::ir::{RefView, Space};
use crate::span::Span;

impl Builder<'_, '_> {
    /// The stride of `ds(start, size, stride)`: a positive constant.
    pub(super) fn ds_stride(&mut self, e: &Expr) -> Option<u64> {
        let s = self.const_int(e, "a stride")?;
        if s <= 0 {
            self.error(
                Diag::new(&codes::STRIDED_WINDOW, format!("a stride must be positive, found {s}"), e.span)
                    .label("not positive")
                    .help("`ds(start, size, stride)` takes every `stride`-th position; write `ds(start, size)` for consecutive ones"),
            );
            return None;
        }
        Some(s as u64)
    }

    /// The TPU's rules for a read or write through a strided window.
    pub(super) fn check_strides(&mut self, view: &RefView, span: Span) -> bool {
        let Some(last) = view.index.len().checked_sub(1) else {
            return true;
        };
        if view.index.iter().all(|s| s.stride() == 1) || self.ck.skip_tpu_rules {
            return true;
        }
        let r = &self.refs[view.target];
        let (name, ty) = (r.name.clone(), r.ty.clone());
        let why = if view.index[last].stride() != 1 {
            "the stride is in the last (lane) dimension".to_string()
        } else if ty.dtype.bits() != 32 {
            format!(
                "`{name}` holds {}-bit `{}` elements",
                ty.dtype.bits(),
                ty.dtype
            )
        } else if ty.space != Space::Vmem {
            format!("`{name}` is in {}", ty.space.name())
        } else if ty.shape[last].known() != Some(128) {
            format!(
                "the last dimension of `{name}` is {}, not 128 lanes",
                ty.shape[last]
            )
        } else {
            return true;
        };
        self.error(
            Diag::new(&codes::STRIDED_TPU, "the TPU cannot access this strided window", span)
                .label(why)
                .note("libtpu strides only the rows of 32-bit VMEM refs of 128 lanes (\"Stride on last dim is not 1\", \"Strided store with non 32-bit data\", \"The last dim size is not 128\")")
                .help("read the rows whole and pick them with a value slice or `where`, or keep the data in a 32-bit, 128-lane ref"),
        );
        false
    }
}

//! Ref windows: subscripts of refs and views (`x[i, ds(s, 128), ..]`)
//! resolved into windows of the underlying ref, with static bounds, run-time
//! starts and the memory-space rules of each access.

use super::builder::{Builder, Mode};
use super::value::Val;
use crate::ast::{self, Expr, ExprKind};
use crate::diag::{codes, Diag};
use crate::ir::{DType, Dim, OpKind, RefId, RefView, Slice, Space, Start, Type};
use crate::span::Span;

impl Builder<'_, '_> {
    /// A window of a ref or of a view of one (`k.at[h]`): `x[..]`,
    /// `x[i, ds(j, 128)]`, `x[0..8, :]`.
    pub fn ref_view(
        &mut self,
        base: &Expr,
        idx: &[ast::Index],
        span: Span,
    ) -> Option<(RefView, Type)> {
        let sub = self.sub_ref_of(base)?;
        self.sub_view(&sub, idx, span)
    }

    /// [`Builder::ref_view`] of a ref already evaluated from `base`.
    pub fn ref_view_of(
        &mut self,
        r: RefId,
        idx: &[ast::Index],
        span: Span,
    ) -> Option<(RefView, Type)> {
        let sub = self.whole_ref(r);
        self.sub_view(&sub, idx, span)
    }

    /// The window `idx` selects from dimensions of sizes `shape` of ref
    /// `r` (the whole ref, or the dimensions a view keeps): one slice per
    /// dimension, and the window's shape.
    pub(super) fn window_of(
        &mut self,
        r: RefId,
        dims: &[Dim],
        idx: &[ast::Index],
        span: Span,
    ) -> Option<(Vec<Slice>, Vec<Dim>)> {
        // Messages describe the ref itself, or the view's type.
        let whole = self.refs[r].ty.shape == dims;
        let rt = if whole {
            self.refs[r].ty.to_string()
        } else {
            Type::of(self.refs[r].ty.dtype, dims.to_vec()).to_string()
        };
        let name = self.refs[r].name.clone();
        let rank = dims.len();
        let rests = idx
            .iter()
            .filter(|i| matches!(i, ast::Index::Rest(_)))
            .count();
        if rests > 1 {
            self.error(
                Diag::new(
                    &codes::INDEX_RANK,
                    "`..` may appear once in a subscript",
                    span,
                )
                .label("two `..`"),
            );
            return None;
        }
        let explicit = idx.len() - rests;
        if explicit > rank {
            self.error(
                Diag::new(
                    &codes::INDEX_RANK,
                    format!("`{name}` has {rank} dimensions but is indexed with {explicit}"),
                    span,
                )
                .label(format!("`{name}` is {rt}"))
                .help("give at most one index per dimension"),
            );
            return None;
        }
        let mut slices = Vec::with_capacity(rank);
        let mut shape = Vec::new();
        let mut dim = 0usize;
        let mut ok = true;
        for ix in idx {
            match ix {
                ast::Index::Rest(_) => {
                    for _ in 0..(rank - explicit) {
                        let d = dims[dim].clone();
                        slices.push(Slice::Range {
                            start: Start::Const(0),
                            size: d.get(),
                        });
                        shape.push(d);
                        dim += 1;
                    }
                }
                ast::Index::Full(_) => {
                    let d = dims[dim].clone();
                    slices.push(Slice::Range {
                        start: Start::Const(0),
                        size: d.get(),
                    });
                    shape.push(d);
                    dim += 1;
                }
                ast::Index::Range(lo, hi, sp) => {
                    let (l, h) = (
                        self.const_int(lo, "a range start"),
                        self.const_int(hi, "a range end"),
                    );
                    match (l, h) {
                        (Some(l), Some(h)) if 0 <= l && l < h => {
                            self.static_bounds(&name, &dims[dim], l, h - l, *sp);
                            slices.push(Slice::Range {
                                start: Start::Const(l as u64),
                                size: (h - l) as u64,
                            });
                            shape.push(Dim::Known(h - l));
                        }
                        (Some(l), Some(h)) => {
                            self.error(
                                Diag::new(
                                    &codes::OUT_OF_BOUNDS,
                                    format!("empty or negative range {l}..{h}"),
                                    *sp,
                                )
                                .label("start must be below end"),
                            );
                            ok = false;
                        }
                        _ => ok = false,
                    }
                    dim += 1;
                }
                ast::Index::Expr(e) => {
                    if let ExprKind::Call(p, args) = &e.kind {
                        if p.segments.len() == 1 && p.segments[0].name == "ds" {
                            match self.ds(&name, &dims[dim], args, e.span) {
                                Some((s, size)) => {
                                    slices.push(s);
                                    shape.push(Dim::Known(size as i64));
                                }
                                None => ok = false,
                            }
                            dim += 1;
                            continue;
                        }
                    }
                    match self.start(e) {
                        Some(s) => {
                            if let Start::Const(c) = s {
                                self.static_bounds(&name, &dims[dim], c as i64, 1, e.span);
                            }
                            slices.push(Slice::Index(s));
                        }
                        None => ok = false,
                    }
                    dim += 1;
                }
            }
        }
        // Dimensions not mentioned are taken whole, as in numpy.
        while dim < rank {
            let d = dims[dim].clone();
            slices.push(Slice::Range {
                start: Start::Const(0),
                size: d.get(),
            });
            shape.push(d);
            dim += 1;
        }
        if !ok {
            return None;
        }
        Some((slices, shape))
    }

    fn static_bounds(&mut self, name: &str, dim: &Dim, start: i64, size: i64, span: Span) {
        if let Some(n) = dim.known() {
            let end = start.saturating_add(size);
            if start < 0 || end > n {
                self.error(
                    Diag::new(
                        &codes::OUT_OF_BOUNDS,
                        format!(
                            "window {start}..{end} is outside dimension of size {n} of `{name}`"
                        ),
                        span,
                    )
                    .label("out of bounds")
                    .help(format!("valid positions are 0..{n}")),
                );
            }
        }
    }

    /// `ds(start, size)`: a dynamic or static start and a static size.
    fn ds(&mut self, name: &str, dim: &Dim, args: &[ast::Arg], span: Span) -> Option<(Slice, u64)> {
        if !(2..=3).contains(&args.len()) || args.iter().any(|a| a.name.is_some()) {
            self.error(
                Diag::new(&codes::ARITY, "`ds` takes a start, a size and an optional stride", span)
                    .label("wrong arguments")
                    .help(
                        "`ds(start, size)` or `ds(start, size, stride)`: start may be computed at run time, size and stride are constants",
                    ),
            );
            return None;
        }
        let stride = match args.get(2) {
            Some(a) => self.ds_stride(&a.value)?,
            None => 1,
        };
        let size = self.const_int(&args[1].value, "a slice size")?;
        if size <= 0 {
            self.error(
                Diag::new(
                    &codes::CONST_EVAL,
                    "slice size must be positive",
                    args[1].value.span,
                )
                .label(format!("this is {size}")),
            );
            return None;
        }
        // The positions a strided window spans, first to last.
        let extent = (size - 1).saturating_mul(stride as i64).saturating_add(1);
        if let Some(n) = dim.known() {
            if extent > n {
                self.error(
                    Diag::new(
                        &codes::OUT_OF_BOUNDS,
                        format!("slice spanning {extent} positions does not fit dimension {n} of `{name}`"),
                        args[1].value.span,
                    )
                    .label("too large"),
                );
                return None;
            }
        }
        let start = self.start(&args[0].value)?;
        if let Start::Const(c) = start {
            self.static_bounds(name, dim, c as i64, extent, span);
        }
        let size = size as u64;
        let slice = if stride == 1 {
            Slice::Range { start, size }
        } else {
            Slice::Strided {
                start,
                size,
                stride,
            }
        };
        Some((slice, size))
    }

    /// A position: a constant, or a scalar i32 value.
    fn start(&mut self, e: &Expr) -> Option<Start> {
        match self.expr(e) {
            Val::Int(d) => match d.known() {
                Some(v) if v >= 0 => Some(Start::Const(v as u64)),
                Some(v) => {
                    self.error(
                        Diag::new(&codes::OUT_OF_BOUNDS, format!("negative index {v}"), e.span)
                            .label("indices start at 0"),
                    );
                    None
                }
                None => Some(Start::Const(0)),
            },
            Val::Err => None,
            other => {
                let x = self.value(other, e.span)?;
                let t = self.ty(x);
                if t != Type::Scalar(DType::I32) {
                    self.error(
                        Diag::new(
                            &codes::TYPE_MISMATCH,
                            format!("an index must be a scalar i32, found `{t}`"),
                            e.span,
                        )
                        .label(format!("this is {t}"))
                        .help("convert with `as i32`"),
                    );
                    return None;
                }
                Some(Start::Dyn(x))
            }
        }
    }

    pub(super) fn load(&mut self, base: &Expr, idx: &[ast::Index], span: Span) -> Val {
        let sub = match self.expr(base) {
            Val::Ref(r) => self.whole_ref(r),
            Val::View(s) => *s,
            Val::V(x) => return self.slice_value(x, base, idx, span),
            Val::Err => return Val::Err,
            other => {
                let d = self.describe(&other);
                return self.error(
                    Diag::new(
                        &codes::NOT_INDEXABLE,
                        format!("only refs and values can be indexed; this is {d}"),
                        base.span,
                    )
                    .label("not a ref or value")
                    .help(
                        "operands, scratch buffers and prefetch arrays are refs; tiles are values",
                    ),
                );
            }
        };
        let Some((view, ty)) = self.sub_view(&sub, idx, span) else {
            return Val::Err;
        };
        if !self.check_access(&view, &ty, span, "read") || !self.check_strides(&view, span) {
            return Val::Err;
        }
        let r = &self.refs[view.target];
        if !self.ck.skip_tpu_rules
            && r.ty.space == Space::Vmem
            && ty.is_scalar()
            && ty.dtype().bits() < 32
        {
            let (name, d) = (r.name.clone(), ty.dtype());
            return self.error(
                Diag::new(
                    &codes::NARROW_SCALAR_READ,
                    format!("cannot read one `{d}` element of VMEM ref `{name}` as a scalar"),
                    span,
                )
                .label("the TPU extracts only 32-bit scalars")
                .help("keep the array in a 32-bit dtype (f32, i32) to read single elements, or work on a window converted first (`x[0..8, :] as f32`)"),
            );
        }
        self.emit(OpKind::Load(view), ty, span)
    }

    /// The memory-space rules for a direct read or write of a window.
    pub fn check_access(&mut self, view: &RefView, ty: &Type, span: Span, verb: &str) -> bool {
        let r = &self.refs[view.target];
        let (name, space) = (r.name.clone(), r.ty.space);
        if self.mode == Mode::IndexMap && space != Space::Smem {
            self.error(
                Diag::new(
                    &codes::INDEX_MAP_TYPE,
                    format!(
                        "index maps can only read scalar-prefetch operands; `{name}` is not one"
                    ),
                    span,
                )
                .label("not a prefetch operand")
                .help("declare it in `prefetch (...)` so it is in SMEM before the grid runs"),
            );
            return false;
        }
        match space {
            Space::Smem if !ty.is_scalar() => {
                self.error(
                    Diag::new(
                        &codes::SMEM_VECTOR,
                        format!("cannot {verb} a vector `{ty}` in SMEM ref `{name}`"),
                        span,
                    )
                    .label("SMEM holds scalars")
                    .help("index every dimension to access one scalar: `x[i, j]`"),
                );
                false
            }
            Space::Any => {
                self.error(
                    Diag::new(&codes::ANY_ACCESS, format!("`{name}` is in HBM (`any`) and cannot be {verb} directly"), span)
                        .label("direct access to HBM")
                        .help("copy a window into a VMEM scratch buffer with `copy_start(src, dst, sem)` and `copy_wait(src, dst, sem)`"),
                );
                false
            }
            Space::Semaphore => {
                self.error(
                    Diag::new(
                        &codes::WRONG_KIND,
                        format!("`{name}` is a DMA semaphore"),
                        span,
                    )
                    .label("semaphores are not data")
                    .help("pass it as the third argument of `copy_start` / `copy_wait`"),
                );
                false
            }
            _ => true,
        }
    }

    // ---- Index maps and kernel bodies ---------------------------------------
}

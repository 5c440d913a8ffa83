//! The longer builtin rules, as methods of [`Builder`]: reductions,
//! `where`, `bitcast`, `iota`, shape ops, `dot`, grid queries and DMA. The
//! table in [`super::BUILTINS`] says which builtin calls which.

use super::Args;
use crate::ast::{self, BinOp as AstBin, Expr};
use crate::check::builder::{Builder, Mode};
use crate::check::value::Val;
use crate::diag::{codes, Diag};
use crate::ir::{self, BinaryOp, DType, Dim, OpKind, ReduceOp, Type, Value};
use crate::span::Span;

impl Builder<'_, '_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn float_binary(
        &mut self,
        op: BinaryOp,
        name: &str,
        x: Val,
        sx: Span,
        y: Val,
        sy: Span,
        span: Span,
    ) -> Val {
        let Some((x, y)) = self.unify(x, sx, y, sy, span) else {
            return Val::Err;
        };
        let t = self.ty(x);
        if !t.dtype().is_float() {
            return self.error(
                Diag::new(
                    &codes::BAD_OPERAND,
                    format!("`{name}` needs floats, found `{t}`"),
                    span,
                )
                .label(format!("this is {t}")),
            );
        }
        self.emit(OpKind::Binary(op, x, y), t, span)
    }

    pub(super) fn minmax(&mut self, is_max: bool, a: &Args, span: Span) -> Val {
        let x = self.expr(a.pos[0]);
        let y = self.expr(a.pos[1]);
        match (&x, &y) {
            (Val::Int(p), Val::Int(q)) => {
                let op = if is_max {
                    crate::ir::SymOp::Max
                } else {
                    crate::ir::SymOp::Min
                };
                return Dim::bin(op, p, q).map(Val::Int).unwrap_or(Val::Err);
            }
            (Val::Float(p), Val::Float(q)) => {
                return Val::Float(if is_max { p.max(*q) } else { p.min(*q) })
            }
            _ => {}
        }
        let Some((x, y)) = self.unify(x, a.pos[0].span, y, a.pos[1].span, span) else {
            return Val::Err;
        };
        let t = self.ty(x);
        if t.dtype() == DType::Bool {
            return self.error(
                Diag::new(&codes::BAD_OPERAND, "`max`/`min` need numbers", span).label("bool"),
            );
        }
        let op = if is_max { BinaryOp::Max } else { BinaryOp::Min };
        self.emit(OpKind::Binary(op, x, y), t, span)
    }

    pub(super) fn reduce(&mut self, op: ReduceOp, a: &Args, span: Span) -> Val {
        let v = self.expr(a.pos[0]);
        let Some(x) = self.value(v, a.pos[0].span) else {
            return Val::Err;
        };
        self.reduce_value(op, x, a, span)
    }

    /// Reduces the already checked first argument `x` of call `a`.
    pub(super) fn reduce_value(&mut self, op: ReduceOp, x: Value, a: &Args, span: Span) -> Val {
        let t = self.ty(x);
        if t.is_scalar() {
            return self.error(
                Diag::new(&codes::BAD_AXIS, "cannot reduce a scalar", a.pos[0].span)
                    .label("rank 0"),
            );
        }
        if t.dtype() == DType::Bool {
            return self.error(
                Diag::new(
                    &codes::BAD_OPERAND,
                    "cannot reduce bool values",
                    a.pos[0].span,
                )
                .label("convert with `as i32` first"),
            );
        }
        if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) && !t.dtype().is_float() {
            return self.error(
                Diag::new(
                    &codes::BAD_OPERAND,
                    format!("`argmax`/`argmin` take float values, found `{t}`"),
                    a.pos[0].span,
                )
                .label(format!("{} values", t.dtype()))
                .help("the TPU finds the index of float values only; convert with `as f32` first"),
            );
        }
        let Some(keepdims) = self.const_bool(a.kw("keepdims"), false) else {
            return Val::Err;
        };
        let axes: Vec<usize> = match a.kw("axis") {
            Some(e) => match self.axis_arg(e, t.rank()) {
                Some(ax) => vec![ax],
                None => return Val::Err,
            },
            None if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) && t.rank() != 1 => {
                return self.error(
                    Diag::new(
                        &codes::BAD_AXIS,
                        "`argmax`/`argmin` of a multi-dimensional value needs `axis=`",
                        span,
                    )
                    .label("no axis")
                    .help("e.g. `argmax(x, axis=1)`"),
                )
            }
            None => (0..t.rank()).rev().collect(),
        };
        let mut cur = x;
        for ax in axes {
            let ct = self.ty(cur);
            let mut shape = ct.shape().to_vec();
            if keepdims {
                shape[ax] = Dim::Known(1);
            } else {
                shape.remove(ax);
            }
            let dt = if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) {
                DType::I32
            } else {
                ct.dtype()
            };
            let Some(r) = self.emit_v(
                OpKind::Reduce {
                    op,
                    value: cur,
                    axis: ax,
                    keepdims,
                },
                Type::of(dt, shape),
                span,
            ) else {
                return Val::Err;
            };
            cur = r;
        }
        Val::V(cur)
    }

    pub(super) fn mean(&mut self, x: Value, a: &Args, span: Span) -> Val {
        let t = self.ty(x);
        if !t.dtype().is_float() {
            return self.error(
                Diag::new(&codes::BAD_OPERAND, "`mean` needs floats", span)
                    .label(format!("this is {t}")),
            );
        }
        // A count in f64 cannot overflow; every size is exact below 2^53.
        let n: f64 = match a.kw("axis") {
            Some(e) => match self.axis_arg(e, t.rank()) {
                Some(ax) => t.shape()[ax].known().unwrap_or(1) as f64,
                None => return Val::Err,
            },
            None => t
                .shape()
                .iter()
                .map(|d| d.known().unwrap_or(1) as f64)
                .product(),
        };
        let sum = self.reduce_value(ReduceOp::Sum, x, a, span);
        if !matches!(sum, Val::V(_)) {
            return sum;
        }
        self.binary(AstBin::Div, sum, span, Val::Float(n), span, span)
    }

    pub(super) fn select(&mut self, a: &Args, span: Span) -> Val {
        let c = self.expr(a.pos[0]);
        let x = self.expr(a.pos[1]);
        let y = self.expr(a.pos[2]);
        if let Val::Bool(b) = c {
            return if b { x } else { y };
        }
        let Some(c) = self.value(c, a.pos[0].span) else {
            return Val::Err;
        };
        let ct = self.ty(c);
        if ct.dtype() != DType::Bool {
            return self.error(
                Diag::new(
                    &codes::BAD_CONDITION,
                    format!("`where` needs a bool condition, found `{ct}`"),
                    a.pos[0].span,
                )
                .label(format!("this is {ct}"))
                .help("compare to get a bool: `where(x > 0.0, x, 0.0)`"),
            );
        }
        let (sx, sy) = (a.pos[1].span, a.pos[2].span);
        let (x, y) = if x.is_const() && y.is_const() {
            let x = self.value(x, sx);
            let d = x.map(|x| self.ty(x).dtype());
            match (x, d) {
                (Some(x), Some(d)) => match self.value_as(y, d, sy) {
                    Some(y) => (x, y),
                    None => return Val::Err,
                },
                _ => return Val::Err,
            }
        } else {
            match self.unify(x, sx, y, sy, span) {
                Some(p) => p,
                None => return Val::Err,
            }
        };
        let tx = self.ty(x);
        let Some(shape) = self.broadcast_shape(&ct, &tx, span) else {
            return Val::Err;
        };
        let (Some(c), Some(x), Some(y)) = (
            self.broadcast_to(c, &shape, span),
            self.broadcast_to(x, &shape, sx),
            self.broadcast_to(y, &shape, sy),
        ) else {
            return Val::Err;
        };
        self.emit(
            OpKind::Select {
                cond: c,
                on_true: x,
                on_false: y,
            },
            Type::of(tx.dtype(), shape),
            span,
        )
    }

    pub(super) fn bitcast(&mut self, a: &Args, span: Span) -> Val {
        let v = self.expr(a.pos[0]);
        let Some(d) = self.dtype_arg(a.pos[1]) else {
            return Val::Err;
        };
        let Some(x) = self.value(v, a.pos[0].span) else {
            return Val::Err;
        };
        let t = self.ty(x);
        if t.dtype().bits() != d.bits() || d == DType::Bool || t.dtype() == DType::Bool {
            return self.error(
                Diag::new(
                    &codes::BAD_CAST,
                    format!("cannot bitcast `{t}` to `{d}`"),
                    span,
                )
                .label(format!("{} bits to {} bits", t.dtype().bits(), d.bits()))
                .help(
                    "bitcast keeps the bits: the widths must be equal (f32 <-> i32, bf16 <-> i16)",
                ),
            );
        }
        self.emit(OpKind::Bitcast(x), t.with_dtype(d), span)
    }

    pub(super) fn iota(&mut self, a: &Args, span: Span) -> Val {
        let (Some(d), Some(shape)) = (self.dtype_arg(a.pos[0]), self.shape_arg(a.pos[1])) else {
            return Val::Err;
        };
        if shape.is_empty() {
            return self.error(
                Diag::new(
                    &codes::BAD_AXIS,
                    "`iota` needs a shape of rank at least 1",
                    a.pos[1].span,
                )
                .label("empty shape"),
            );
        }
        let Some(dim) = self.axis_arg(a.pos[2], shape.len()) else {
            return Val::Err;
        };
        if d == DType::Bool {
            return self.error(
                Diag::new(
                    &codes::BAD_OPERAND,
                    "`iota` produces numbers",
                    a.pos[0].span,
                )
                .label("bool"),
            );
        }
        let v = self.emit(OpKind::Iota { dim }, Type::of(DType::I32, shape), span);
        if d == DType::I32 {
            v
        } else {
            self.cast(v, d, span)
        }
    }

    pub(super) fn reshape(&mut self, a: &Args, span: Span) -> Val {
        let v = self.expr(a.pos[0]);
        let Some(shape) = self.shape_arg(a.pos[1]) else {
            return Val::Err;
        };
        let Some(x) = self.value(v, a.pos[0].span) else {
            return Val::Err;
        };
        let t = self.ty(x);
        let new = Type::of(t.dtype(), shape);
        if let (Some(p), Some(q)) = (t.elements(), new.elements()) {
            if p != q {
                return self.error(
                    Diag::new(
                        &codes::BAD_RESHAPE,
                        format!("cannot reshape `{t}` ({p} elements) to `{new}` ({q} elements)"),
                        span,
                    )
                    .label("element counts differ")
                    .help("a reshape keeps every element"),
                );
            }
        }
        if new == t {
            return Val::V(x);
        }
        self.emit(OpKind::Reshape(x), new, span)
    }

    pub(super) fn transpose(&mut self, a: &Args, span: Span) -> Val {
        let v = self.expr(a.pos[0]);
        let Some(x) = self.value(v, a.pos[0].span) else {
            return Val::Err;
        };
        let t = self.ty(x);
        let perm: Vec<usize> = match a.pos.get(1) {
            Some(e) => {
                let ast::ExprKind::List(items) = &e.kind else {
                    return self.error(
                        Diag::new(
                            &codes::ARITY,
                            "expected a permutation like `[1, 0]`",
                            e.span,
                        )
                        .label("not a list"),
                    );
                };
                let mut p = Vec::new();
                for i in items {
                    match self.axis_arg(i, t.rank()) {
                        Some(x) => p.push(x),
                        None => return Val::Err,
                    }
                }
                p
            }
            None if t.rank() >= 2 => {
                let mut p: Vec<usize> = (0..t.rank()).collect();
                p.swap(t.rank() - 2, t.rank() - 1);
                p
            }
            None => {
                return self.error(
                    Diag::new(&codes::BAD_AXIS, format!("cannot transpose `{t}`"), span)
                        .label("rank below 2"),
                )
            }
        };
        let mut sorted = perm.clone();
        sorted.sort_unstable();
        if sorted != (0..t.rank()).collect::<Vec<_>>() {
            return self.error(
                Diag::new(
                    &codes::BAD_AXIS,
                    format!("`{perm:?}` is not a permutation of the {} axes", t.rank()),
                    span,
                )
                .label("each axis exactly once"),
            );
        }
        let shape = perm.iter().map(|p| t.shape()[*p].clone()).collect();
        self.emit(OpKind::Transpose(x, perm), Type::of(t.dtype(), shape), span)
    }

    pub(super) fn roll(&mut self, a: &Args, span: Span) -> Val {
        let v = self.expr(a.pos[0]);
        let Some(x) = self.value(v, a.pos[0].span) else {
            return Val::Err;
        };
        let t = self.ty(x);
        if t.is_scalar() {
            return self.error(
                Diag::new(&codes::BAD_AXIS, "cannot roll a scalar", a.pos[0].span).label("rank 0"),
            );
        }
        let sv = self.expr(a.pos[1]);
        let Some(shift) = self.value_as(sv, DType::I32, a.pos[1].span) else {
            return Val::Err;
        };
        if !self.ty(shift).is_scalar() {
            return self.error(
                Diag::new(
                    &codes::TYPE_MISMATCH,
                    "the shift must be a scalar i32",
                    a.pos[1].span,
                )
                .label("not a scalar"),
            );
        }
        let Some(axis) = self.axis_arg(a.pos[2], t.rank()) else {
            return Val::Err;
        };
        self.emit(
            OpKind::Roll {
                value: x,
                shift,
                axis,
            },
            t,
            span,
        )
    }

    pub(super) fn dot(&mut self, a: &Args, span: Span) -> Val {
        let x = self.expr(a.pos[0]);
        let y = self.expr(a.pos[1]);
        let (Some(trans_lhs), Some(trans_rhs)) = (
            self.const_bool(a.kw("trans_a"), false),
            self.const_bool(a.kw("trans_b"), false),
        ) else {
            return Val::Err;
        };
        let (Some(x), Some(y)) = (self.value(x, a.pos[0].span), self.value(y, a.pos[1].span))
        else {
            return Val::Err;
        };
        // Mixed float operands are promoted to the wider dtype, as
        // `jnp.dot(f32, bf16)` computes in f32: the narrower one is cast
        // first (the cast is an op in the IR, so both backends see it).
        let (mut x, mut y) = (x, y);
        let (dx, dy) = (self.ty(x).dtype(), self.ty(y).dtype());
        if dx != dy && dx.is_float() && dy.is_float() {
            let wide = if dx.bits() >= dy.bits() { dx } else { dy };
            let (Val::V(cx), Val::V(cy)) = (
                self.cast(Val::V(x), wide, a.pos[0].span),
                self.cast(Val::V(y), wide, a.pos[1].span),
            ) else {
                return Val::Err;
            };
            (x, y) = (cx, cy);
        }
        let (tx, ty) = (self.ty(x), self.ty(y));
        if tx.rank() != 2 || ty.rank() != 2 {
            return self.error(
                Diag::new(
                    &codes::DOT_SHAPE,
                    format!("`dot` multiplies 2-D tiles, found `{tx}` and `{ty}`"),
                    span,
                )
                .label("not 2-D")
                .help("reshape to 2-D first"),
            );
        }
        if tx.dtype() != ty.dtype() {
            return self.error(
                Diag::new(
                    &codes::MATMUL_DTYPE,
                    format!(
                        "`dot` operands differ in dtype: `{}` and `{}`",
                        tx.dtype(),
                        ty.dtype()
                    ),
                    span,
                )
                .with(a.pos[0].span, format!("{tx}"))
                .with(a.pos[1].span, format!("{ty}"))
                .help(format!(
                    "integer and float operands are not promoted; convert one: `dot(x as {}, y)` or `dot(x, y as {})`",
                    ty.dtype(),
                    tx.dtype()
                )),
            );
        }
        let d = tx.dtype();
        let target = self.ck.target;
        if !self.ck.skip_tpu_rules && !target.matmul_input(d) {
            return self.error(
                Diag::new(
                    &codes::MATMUL_DTYPE,
                    format!("the {target} MXU does not take `{d}` inputs"),
                    span,
                )
                .label(format!("{d} matmul"))
                .help(
                    "MXU inputs: v4 f32/bf16; v5e, v5p, v6e f32/bf16/i8/u8/fp8; tpu7x f32/bf16/fp8",
                ),
            );
        }
        let natural = if d.is_float() { DType::F32 } else { DType::I32 };
        let acc = match a.kw("acc") {
            Some(e) => match self.dtype_arg(e) {
                Some(acc) if acc.bits() == 32 && acc.is_float() == d.is_float() && acc != DType::Bool => acc,
                Some(acc) => {
                    return self.error(
                        Diag::new(&codes::MATMUL_ACC, format!("`dot` cannot accumulate `{d}` inputs in `{acc}`"), e.span)
                            .label("the MXU accumulates in 32 bits")
                            .help(format!("accumulate in `{natural}` and convert the result: `dot(a, b, acc={natural}) as {acc}`")),
                    )
                }
                None => return Val::Err,
            },
            None => natural,
        };
        let (m, ka) = if trans_lhs {
            (&tx.shape()[1], &tx.shape()[0])
        } else {
            (&tx.shape()[0], &tx.shape()[1])
        };
        let (kb, n) = if trans_rhs {
            (&ty.shape()[1], &ty.shape()[0])
        } else {
            (&ty.shape()[0], &ty.shape()[1])
        };
        if ka != kb {
            return self.error(
                Diag::new(&codes::DOT_SHAPE, format!("`dot` contracting dimensions differ: {ka} and {kb}"), span)
                    .with(a.pos[0].span, format!("{tx}{}", if trans_lhs { " (transposed)" } else { "" }))
                    .with(a.pos[1].span, format!("{ty}{}", if trans_rhs { " (transposed)" } else { "" }))
                    .help("`dot(a, b)` multiplies [m, k] by [k, n]; use `trans_a=true` / `trans_b=true` to transpose an operand"),
            );
        }
        let out = Type::of(acc, vec![m.clone(), n.clone()]);
        self.emit(
            OpKind::Dot {
                lhs: x,
                rhs: y,
                trans_lhs,
                trans_rhs,
            },
            out,
            span,
        )
    }

    pub(super) fn grid_query(&mut self, is_id: bool, e: &Expr, span: Span) -> Val {
        let Some(axis) = self.const_int(e, "a grid axis") else {
            return Val::Err;
        };
        let rank = self.f.entry_block().params.len();
        if self.mode == Mode::Const || axis < 0 || axis as usize >= rank {
            return self.error(
                Diag::new(
                    &codes::BAD_AXIS,
                    format!("grid axis {axis} does not exist (the grid has {rank} axes)"),
                    e.span,
                )
                .label("no such axis")
                .help("grid axes count from 0 in the order of the `grid (...)` clause"),
            );
        }
        if is_id {
            Val::V(self.f.entry_block().params[axis as usize])
        } else if let Some(Some((r, index))) = self.grid_dynamic.get(axis as usize).cloned() {
            // A dynamic axis runs as many steps as its prefetch element
            // says; `num_programs` reads that element (what Pallas gets from
            // `tpu.iteration_bound`), not the compile-time bound.
            let index = index
                .iter()
                .map(|&i| ir::Slice::Index(ir::Start::Const(i)))
                .collect();
            let view = ir::RefView { target: r, index };
            self.emit(OpKind::Load(view), Type::Scalar(DType::I32), span)
        } else {
            match self.grid_extents.get(axis as usize) {
                Some(d) => Val::Int(d.clone()),
                None => {
                    let _ = span;
                    Val::Err
                }
            }
        }
    }

    pub(super) fn dma(&mut self, start: bool, a: &Args, span: Span) -> Val {
        if self.mode != Mode::Body {
            return self.error(
                Diag::new(
                    &codes::DMA_SPACES,
                    "DMAs are only allowed in kernel bodies",
                    span,
                )
                .label("not here"),
            );
        }
        let mut views = Vec::new();
        for (i, e) in a.pos.iter().enumerate() {
            let (base, idx) = super::window_parts(e);
            let what = ["source", "destination", "semaphore"][i];
            match self.expr(base) {
                Val::Ref(_) | Val::View(_) => {}
                Val::Err => return Val::Err,
                other => {
                    let d = self.describe(&other);
                    return self.error(
                        Diag::new(
                            &codes::DMA_SPACES,
                            format!("the {what} of a DMA must be a ref window; this is {d}"),
                            e.span,
                        )
                        .label("not a ref")
                        .help("DMAs copy between refs: `copy_start(src[..], dst[..], sem[0])`"),
                    );
                }
            }
            let Some((mut view, mut ty)) = self.ref_view(base, idx, e.span) else {
                return Val::Err;
            };
            if view.index.iter().any(|s| s.stride() != 1) {
                return self.error(
                    Diag::new(
                        &codes::STRIDED_WINDOW,
                        format!("the {what} of a DMA cannot be strided"),
                        e.span,
                    )
                    .label("`ds(start, size, stride)` in a DMA window")
                    .help("copy the unit-stride window and read it strided from VMEM"),
                );
            }
            let space = self.refs[view.target].ty.space;
            let is_sem = space == crate::ir::Space::Semaphore;
            // A lone semaphore (`sem: dma_sem`) is used without an index.
            // So is one semaphore of a view (`sem.at[slot]`): its remaining
            // size-1 dimensions become single positions.
            if is_sem && idx.is_empty() && ty.elements() == Some(1) {
                use crate::ir::Slice;
                for s in &mut view.index {
                    if let Slice::Range { start, .. } = *s {
                        *s = Slice::Index(start);
                    }
                }
                ty = Type::Scalar(ty.dtype());
            }
            if (i == 2) != is_sem {
                return self.error(
                    Diag::new(&codes::DMA_SPACES, format!("the {what} of a DMA must be {}", if i == 2 { "a DMA semaphore" } else { "a data ref window" }), e.span)
                        .label(format!("this is in {}", space.name()))
                        .help("`copy_start(src_window, dst_window, sem)`; declare semaphores in `scratch (sem: dma_sem[2])`"),
                );
            }
            if i == 2 && !ty.is_scalar() {
                return self.error(
                    Diag::new(&codes::DMA_SPACES, "a DMA signals one semaphore", e.span)
                        .label(format!("this is {} semaphores", ty.elements().unwrap_or(0)))
                        .help("index the semaphore array: `sem[slot]`"),
                );
            }
            views.push((view, ty, e.span));
        }
        let (s, d) = (&views[0], &views[1]);
        if s.1 != d.1 {
            return self.error(
                Diag::new(
                    &codes::DMA_SPACES,
                    format!("DMA windows differ: `{}` and `{}`", s.1, d.1),
                    span,
                )
                .with(s.2, format!("source is {}", s.1))
                .with(d.2, format!("destination is {}", d.1))
                .help("source and destination windows need the same shape and dtype"),
            );
        }
        let mut it = views.into_iter().map(|v| v.0);
        let (Some(src), Some(dst), Some(sem)) = (it.next(), it.next(), it.next()) else {
            return Val::Err;
        };
        let kind = if start {
            OpKind::DmaStart { src, dst, sem }
        } else {
            OpKind::DmaWait { src, dst, sem }
        };
        self.f.push(self.cur, kind, &[], span);
        Val::Unit
    }
}

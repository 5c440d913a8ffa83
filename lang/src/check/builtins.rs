//! Builtin functions: math, reductions, `dot`, shape ops, constructors,
//! grid queries and DMA. Each is a short rule that checks its arguments and
//! emits IR; the table of names is [`NAMES`].

use super::builder::{Builder, Mode};
use super::value::Val;
use crate::ast::{self, BinOp as AstBin, Expr};
use crate::diag::{codes, Diag};
use crate::ir::{BinaryOp, DType, Dim, OpKind, ReduceOp, Type, UnaryOp, Value};
use crate::span::Span;

/// Every builtin name (for suggestions and docs).
pub const NAMES: &[&str] = &[
    "exp",
    "exp2",
    "log",
    "log1p",
    "sqrt",
    "rsqrt",
    "tanh",
    "sin",
    "cos",
    "abs",
    "floor",
    "ceil",
    "round",
    "erf",
    "logistic",
    "sigmoid",
    "sign",
    "pow",
    "max",
    "min",
    "maximum",
    "minimum",
    "where",
    "select",
    "cast",
    "bitcast",
    "iota",
    "zeros",
    "ones",
    "full",
    "broadcast",
    "reshape",
    "transpose",
    "roll",
    "sum",
    "mean",
    "argmax",
    "argmin",
    "dot",
    "program_id",
    "num_programs",
    "cdiv",
    "copy_start",
    "copy_wait",
    "ds",
];

/// Positional and keyword arguments of one call.
struct Args<'a> {
    pos: Vec<&'a Expr>,
    kw: Vec<(&'a ast::Ident, &'a Expr)>,
}

impl<'a> Args<'a> {
    fn kw(&self, name: &str) -> Option<&'a Expr> {
        self.kw
            .iter()
            .find(|(k, _)| k.name == name)
            .map(|(_, e)| *e)
    }
}

fn math_op(name: &str) -> Option<UnaryOp> {
    Some(match name {
        "exp" => UnaryOp::Exp,
        "exp2" => UnaryOp::Exp2,
        "log" => UnaryOp::Log,
        "log1p" => UnaryOp::Log1p,
        "sqrt" => UnaryOp::Sqrt,
        "rsqrt" => UnaryOp::Rsqrt,
        "tanh" => UnaryOp::Tanh,
        "sin" => UnaryOp::Sin,
        "cos" => UnaryOp::Cos,
        "floor" => UnaryOp::Floor,
        "ceil" => UnaryOp::Ceil,
        "round" => UnaryOp::Round,
        "erf" => UnaryOp::Erf,
        "logistic" | "sigmoid" => UnaryOp::Logistic,
        _ => return None,
    })
}

impl Builder<'_, '_> {
    fn args<'a>(
        &mut self,
        name: &str,
        args: &'a [ast::Arg],
        pos: std::ops::RangeInclusive<usize>,
        kws: &[&str],
        span: Span,
    ) -> Option<Args<'a>> {
        let mut out = Args {
            pos: Vec::new(),
            kw: Vec::new(),
        };
        for a in args {
            match &a.name {
                None if !out.kw.is_empty() => {
                    self.error(
                        Diag::new(
                            &codes::ARITY,
                            "positional argument after a keyword argument",
                            a.value.span,
                        )
                        .label("move it before the keywords"),
                    );
                    return None;
                }
                None => out.pos.push(&a.value),
                Some(k) => {
                    if !kws.contains(&k.name.as_str()) {
                        let help = if kws.is_empty() {
                            format!("`{name}` takes no keyword arguments")
                        } else {
                            format!("`{name}` accepts: {}", kws.join(", "))
                        };
                        self.error(
                            Diag::new(
                                &codes::UNKNOWN_ARGUMENT,
                                format!("`{name}` has no argument `{}`", k.name),
                                k.span,
                            )
                            .label("unknown keyword")
                            .help(help),
                        );
                        return None;
                    }
                    out.kw.push((k, &a.value));
                }
            }
        }
        if !pos.contains(&out.pos.len()) {
            let want = if pos.start() == pos.end() {
                format!("{}", pos.start())
            } else {
                format!("{} to {}", pos.start(), pos.end())
            };
            self.error(
                Diag::new(
                    &codes::ARITY,
                    format!(
                        "`{name}` takes {want} positional arguments, {} given",
                        out.pos.len()
                    ),
                    span,
                )
                .label("wrong number of arguments")
                .help(signature(name)),
            );
            return None;
        }
        Some(out)
    }

    fn float_value(&mut self, name: &str, e: &Expr) -> Option<Value> {
        let v = self.expr(e);
        let v = if let Val::Int(_) = v {
            self.cast(v, DType::F32, e.span)
        } else {
            v
        };
        let x = self.value(v, e.span)?;
        let t = self.ty(x);
        if !t.dtype().is_float() {
            self.error(
                Diag::new(
                    &codes::BAD_OPERAND,
                    format!("`{name}` needs a float, found `{t}`"),
                    e.span,
                )
                .label(format!("this is {t}"))
                .help("convert first: `x as f32`"),
            );
            return None;
        }
        Some(x)
    }

    /// A compile-time bool keyword argument.
    fn const_bool(&mut self, e: Option<&Expr>, default: bool) -> Option<bool> {
        let Some(e) = e else {
            return Some(default);
        };
        match self.const_expr(e) {
            Val::Bool(b) => Some(b),
            Val::Err => None,
            _ => {
                self.error(
                    Diag::new(&codes::NOT_CONSTANT, "expected `true` or `false`", e.span)
                        .label("not a constant bool"),
                );
                None
            }
        }
    }

    /// A dtype argument.
    fn dtype_arg(&mut self, e: &Expr) -> Option<DType> {
        if let ast::ExprKind::Name(p) = &e.kind {
            if p.segments.len() == 1 && DType::from_name(&p.segments[0].name).is_none() {
                let v = self.expr(e);
                return match v {
                    Val::Dtype(d) => Some(d),
                    Val::Err => None,
                    _ => {
                        self.error(
                            Diag::new(&codes::WRONG_KIND, "expected a dtype", e.span)
                                .label("not a dtype"),
                        );
                        None
                    }
                };
            }
            if p.segments.len() == 1 {
                return self.dtype_name(&p.segments[0]);
            }
        }
        self.error(
            Diag::new(&codes::WRONG_KIND, "expected a dtype", e.span)
                .label("not a dtype")
                .help("write a dtype such as `f32`"),
        );
        None
    }

    /// A list of compile-time sizes: `[8, 128]`.
    fn shape_arg(&mut self, e: &Expr) -> Option<Vec<Dim>> {
        let ast::ExprKind::List(items) = &e.kind else {
            self.error(
                Diag::new(&codes::ARITY, "expected a shape like `[8, 128]`", e.span)
                    .label("not a list"),
            );
            return None;
        };
        let mut out = Vec::new();
        for i in items {
            out.push(self.const_dim(i, "a dimension")?);
        }
        Some(out)
    }

    /// An axis for a value of `rank` (negative counts from the end).
    fn axis_arg(&mut self, e: &Expr, rank: usize) -> Option<usize> {
        let a = self.const_int(e, "an axis")?;
        let r = rank as i64;
        let n = if a < 0 { a + r } else { a };
        if n < 0 || n >= r {
            self.error(
                Diag::new(
                    &codes::BAD_AXIS,
                    format!("axis {a} is out of range for rank {rank}"),
                    e.span,
                )
                .label("no such axis")
                .help(format!("axes are 0..{rank}, or negative from the end")),
            );
            return None;
        }
        Some(n as usize)
    }

    /// Runs a builtin; `None` if `name` is not one.
    /// Checks a call of builtin `name`; `None` when `name` is no builtin.
    /// A builtin called with bad arguments is an error value, never `None`.
    pub fn builtin(&mut self, name: &str, args: &[ast::Arg], span: Span) -> Option<Val> {
        if !NAMES.contains(&name) {
            return None;
        }
        Some(self.builtin_call(name, args, span).unwrap_or(Val::Err))
    }

    fn builtin_call(&mut self, name: &str, args: &[ast::Arg], span: Span) -> Option<Val> {
        if let Some(op) = math_op(name) {
            let a = self.args(name, args, 1..=1, &[], span)?;
            let x = self.float_value(name, a.pos[0]);
            return Some(match x {
                Some(x) => {
                    let t = self.ty(x);
                    self.emit(OpKind::Unary(op, x), t, span)
                }
                None => Val::Err,
            });
        }
        let v = match name {
            "abs" | "sign" => {
                let a = self.args(name, args, 1..=1, &[], span)?;
                let v = self.expr(a.pos[0]);
                match v {
                    Val::Int(d) if name == "abs" => {
                        return Some(match d.known().map(i64::checked_abs) {
                            Some(Some(x)) => Val::Int(Dim::Known(x)),
                            Some(None) => self.error(
                                Diag::new(
                                    &codes::CONST_EVAL,
                                    "constant arithmetic overflows",
                                    span,
                                )
                                .label("the absolute value does not fit in 64 bits"),
                            ),
                            None => Val::Int(d),
                        });
                    }
                    Val::Float(f) if name == "abs" => return Some(Val::Float(f.abs())),
                    _ => {}
                }
                let Some(x) = self.value(v, a.pos[0].span) else {
                    return Some(Val::Err);
                };
                let t = self.ty(x);
                if t.dtype() == DType::Bool {
                    return Some(
                        self.error(
                            Diag::new(
                                &codes::BAD_OPERAND,
                                format!("`{name}` needs a number, found `{t}`"),
                                a.pos[0].span,
                            )
                            .label("bool"),
                        ),
                    );
                }
                let op = if name == "abs" {
                    UnaryOp::Abs
                } else {
                    UnaryOp::Sign
                };
                self.emit(OpKind::Unary(op, x), t, span)
            }
            "pow" => {
                let a = self.args(name, args, 2..=2, &[], span)?;
                let x = self.expr(a.pos[0]);
                let y = self.expr(a.pos[1]);
                if let (Val::Float(p), Val::Float(q)) = (&x, &y) {
                    return Some(Val::Float(p.powf(*q)));
                }
                self.float_binary(
                    BinaryOp::Pow,
                    name,
                    x,
                    a.pos[0].span,
                    y,
                    a.pos[1].span,
                    span,
                )
            }
            "maximum" | "minimum" => {
                let a = self.args(name, args, 2..=2, &[], span)?;
                self.minmax(name == "maximum", &a, span)
            }
            "max" | "min" => {
                let a = self.args(name, args, 1..=2, &["axis", "keepdims"], span)?;
                if a.pos.len() == 2 {
                    if !a.kw.is_empty() {
                        return Some(self.error(Diag::new(&codes::UNKNOWN_ARGUMENT, format!("two-argument `{name}` is elementwise and takes no keywords"), span).label("keywords given")));
                    }
                    self.minmax(name == "max", &a, span)
                } else {
                    self.reduce(
                        if name == "max" {
                            ReduceOp::Max
                        } else {
                            ReduceOp::Min
                        },
                        &a,
                        span,
                    )
                }
            }
            "sum" | "argmax" | "argmin" | "mean" => {
                let a = self.args(name, args, 1..=1, &["axis", "keepdims"], span)?;
                let op = match name {
                    "argmax" => ReduceOp::ArgMax,
                    "argmin" => ReduceOp::ArgMin,
                    _ => ReduceOp::Sum,
                };
                let v = self.expr(a.pos[0]);
                let Some(x) = self.value(v, a.pos[0].span) else {
                    return Some(Val::Err);
                };
                if name == "mean" {
                    self.mean(x, &a, span)
                } else {
                    self.reduce_value(op, x, &a, span)
                }
            }
            "where" | "select" => {
                let a = self.args(name, args, 3..=3, &[], span)?;
                self.select(&a, span)
            }
            "cast" => {
                let a = self.args(name, args, 2..=2, &[], span)?;
                let v = self.expr(a.pos[0]);
                match self.dtype_arg(a.pos[1]) {
                    Some(d) => self.cast(v, d, span),
                    None => Val::Err,
                }
            }
            "bitcast" => {
                let a = self.args(name, args, 2..=2, &[], span)?;
                self.bitcast(&a, span)
            }
            "iota" => {
                let a = self.args(name, args, 3..=3, &[], span)?;
                self.iota(&a, span)
            }
            "zeros" | "ones" | "full" => {
                let n = if name == "full" { 3 } else { 2 };
                let a = self.args(name, args, n..=n, &[], span)?;
                let (Some(d), Some(shape)) = (self.dtype_arg(a.pos[0]), self.shape_arg(a.pos[1]))
                else {
                    return Some(Val::Err);
                };
                let fill = match name {
                    "zeros" => Val::Int(Dim::Known(0)),
                    "ones" => Val::Int(Dim::Known(1)),
                    _ => self.expr(a.pos[2]),
                };
                let fill = if d == DType::Bool {
                    match fill {
                        Val::Int(x) => Val::Bool(x != Dim::Known(0)),
                        other => other,
                    }
                } else {
                    fill
                };
                let sp = a.pos.last().map(|e| e.span).unwrap_or(span);
                match self.coerce(fill, &Type::of(d, shape), sp) {
                    Some(x) => Val::V(x),
                    None => Val::Err,
                }
            }
            "broadcast" => {
                let a = self.args(name, args, 2..=2, &[], span)?;
                let v = self.expr(a.pos[0]);
                let Some(shape) = self.shape_arg(a.pos[1]) else {
                    return Some(Val::Err);
                };
                let Some(x) = self.value(v, a.pos[0].span) else {
                    return Some(Val::Err);
                };
                match self.broadcast_to(x, &shape, span) {
                    Some(x) => Val::V(x),
                    None => Val::Err,
                }
            }
            "reshape" => {
                let a = self.args(name, args, 2..=2, &[], span)?;
                self.reshape(&a, span)
            }
            "transpose" => {
                let a = self.args(name, args, 1..=2, &[], span)?;
                self.transpose(&a, span)
            }
            "roll" => {
                let a = self.args(name, args, 3..=3, &[], span)?;
                self.roll(&a, span)
            }
            "dot" => {
                let a = self.args(name, args, 2..=2, &["trans_a", "trans_b", "acc"], span)?;
                self.dot(&a, span)
            }
            "program_id" | "num_programs" => {
                let a = self.args(name, args, 1..=1, &[], span)?;
                self.grid_query(name == "program_id", a.pos[0], span)
            }
            "cdiv" => {
                let a = self.args(name, args, 2..=2, &[], span)?;
                let x = self.expr(a.pos[0]);
                let y = self.expr(a.pos[1]);
                if let (Val::Int(p), Val::Int(q)) = (&x, &y) {
                    return Some(match Dim::bin(crate::ir::SymOp::CDiv, p, q) {
                        Some(d) => Val::Int(d),
                        None => self.error(
                            Diag::new(&codes::CONST_EVAL, "`cdiv` by zero", span)
                                .label("division by zero"),
                        ),
                    });
                }
                // (x + y - 1) / y on run-time integers.
                let (sx, sy) = (a.pos[0].span, a.pos[1].span);
                let s = self.binary(AstBin::Add, x, sx, y.clone(), sy, span);
                let s = self.binary(AstBin::Sub, s, span, Val::Int(Dim::Known(1)), span, span);
                self.binary(AstBin::Div, s, span, y, sy, span)
            }
            "copy_start" | "copy_wait" => {
                let a = self.args(name, args, 3..=3, &[], span)?;
                self.dma(name == "copy_start", &a, span)
            }
            "ds" => self.error(
                Diag::new(
                    &codes::WRONG_KIND,
                    "`ds(start, size)` is only valid inside a ref subscript",
                    span,
                )
                .label("not in a subscript")
                .help("write `x[ds(start, size)]`"),
            ),
            _ => return None,
        };
        Some(v)
    }

    #[allow(clippy::too_many_arguments)]
    fn float_binary(
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

    fn minmax(&mut self, is_max: bool, a: &Args, span: Span) -> Val {
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

    fn reduce(&mut self, op: ReduceOp, a: &Args, span: Span) -> Val {
        let v = self.expr(a.pos[0]);
        let Some(x) = self.value(v, a.pos[0].span) else {
            return Val::Err;
        };
        self.reduce_value(op, x, a, span)
    }

    /// Reduces the already checked first argument `x` of call `a`.
    fn reduce_value(&mut self, op: ReduceOp, x: Value, a: &Args, span: Span) -> Val {
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

    fn mean(&mut self, x: Value, a: &Args, span: Span) -> Val {
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

    fn select(&mut self, a: &Args, span: Span) -> Val {
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

    fn bitcast(&mut self, a: &Args, span: Span) -> Val {
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

    fn iota(&mut self, a: &Args, span: Span) -> Val {
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

    fn reshape(&mut self, a: &Args, span: Span) -> Val {
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

    fn transpose(&mut self, a: &Args, span: Span) -> Val {
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

    fn roll(&mut self, a: &Args, span: Span) -> Val {
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

    fn dot(&mut self, a: &Args, span: Span) -> Val {
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
                .help("convert one operand with `as`"),
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

    fn grid_query(&mut self, is_id: bool, e: &Expr, span: Span) -> Val {
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

    fn dma(&mut self, start: bool, a: &Args, span: Span) -> Val {
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
            let (base, idx): (&Expr, &[ast::Index]) = match &e.kind {
                ast::ExprKind::Index(b, idx) => (b, idx),
                _ => (e, &[]),
            };
            let what = ["source", "destination", "semaphore"][i];
            match self.expr(base) {
                Val::Ref(_) => {}
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
            let space = self.refs[view.target].ty.space;
            let is_sem = space == crate::ir::Space::Semaphore;
            // A lone semaphore (`sem: dma_sem`) is used without an index.
            if is_sem && idx.is_empty() && ty.elements() == Some(1) {
                view.index =
                    vec![crate::ir::Slice::Index(crate::ir::Start::Const(0)); view.index.len()];
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

/// The one-line signature of a builtin, for help texts.
fn signature(name: &str) -> String {
    let s = match name {
        "pow" | "maximum" | "minimum" => "(a, b)",
        "max" | "min" => "(a, b) elementwise, or (x, axis=, keepdims=) to reduce",
        "sum" | "mean" | "argmax" | "argmin" => "(x, axis=, keepdims=)",
        "where" | "select" => "(cond, a, b)",
        "cast" | "bitcast" => "(x, dtype)",
        "iota" => "(dtype, [shape], dim)",
        "zeros" | "ones" => "(dtype, [shape])",
        "full" => "(dtype, [shape], value)",
        "broadcast" | "reshape" => "(x, [shape])",
        "transpose" => "(x) or (x, [perm])",
        "roll" => "(x, shift, axis)",
        "dot" => "(a, b, trans_a=false, trans_b=false, acc=f32)",
        "program_id" | "num_programs" => "(axis)",
        "cdiv" => "(a, b)",
        "copy_start" | "copy_wait" => "(src_window, dst_window, sem)",
        _ => "(x)",
    };
    format!("usage: {name}{s}")
}

//! Builtin functions: what pk knows about each one is one entry of
//! [`BUILTINS`]: its name, its usage line, its arity and its rule. A rule
//! is either an elementwise math op or a function that checks the sorted
//! arguments and emits IR; the longer ones are in [`rules`].

mod comm;
mod concat;
mod hints;
mod rules;
mod store;

use super::builder::Builder;
use super::value::Val;
use crate::ast::{self, BinOp as AstBin, Expr};
use crate::diag::{codes, Diag};
use crate::ir::{BinaryOp, DType, Dim, OpKind, ReduceOp, Type, UnaryOp, Value};
use crate::span::Span;

/// A ref-window argument split into the ref (or view) it names and its
/// indices: `y[i, ..]` is `(y, [i, ..])`, a bare `y` has no indices.
fn window_parts(e: &Expr) -> (&Expr, &[ast::Index]) {
    match &e.kind {
        ast::ExprKind::Index(b, idx) => (b, idx),
        _ => (e, &[]),
    }
}

/// One builtin function.
pub struct Builtin {
    pub name: &'static str,
    /// The argument list shown in help texts: `(x, axis=, keepdims=)`.
    pub usage: &'static str,
    pub arity: Arity,
    pub rule: Rule,
}

/// How many positional arguments a builtin takes, and which keywords.
pub struct Arity {
    pub min: usize,
    pub max: usize,
    pub keywords: &'static [&'static str],
    /// Whether the arguments are checked before the rule runs; `ds` is only
    /// valid inside a subscript, where it is handled, so its rule reports
    /// that whatever the arguments.
    pub checked: bool,
}

const fn exactly(n: usize) -> Arity {
    between(n, n)
}

const fn between(min: usize, max: usize) -> Arity {
    Arity {
        min,
        max,
        keywords: &[],
        checked: true,
    }
}

const fn keywords(a: Arity, keywords: &'static [&'static str]) -> Arity {
    Arity { keywords, ..a }
}

const UNCHECKED: Arity = Arity {
    min: 0,
    max: usize::MAX,
    keywords: &[],
    checked: false,
};

/// What a builtin does with its arguments.
pub enum Rule {
    /// An elementwise float function of one argument.
    Math(UnaryOp),
    /// A rule given the builtin's name (rules shared by several builtins
    /// branch on it) and the sorted arguments.
    Call(fn(&mut Builder<'_, '_>, &'static str, &Args<'_>, Span) -> Val),
}

const AXIS_KW: &[&str] = &["axis", "keepdims"];

macro_rules! math {
    ($name:literal, $op:ident) => {
        Builtin {
            name: $name,
            usage: "(x)",
            arity: exactly(1),
            rule: Rule::Math(UnaryOp::$op),
        }
    };
}

macro_rules! call {
    ($name:literal, $usage:literal, $arity:expr, $rule:expr) => {
        Builtin {
            name: $name,
            usage: $usage,
            arity: $arity,
            rule: Rule::Call($rule),
        }
    };
}

/// Every builtin, in the order docs/language.md lists them.
pub static BUILTINS: &[Builtin] = &[
    math!("exp", Exp),
    math!("exp2", Exp2),
    math!("log", Log),
    math!("log1p", Log1p),
    math!("sqrt", Sqrt),
    math!("rsqrt", Rsqrt),
    math!("tanh", Tanh),
    math!("sin", Sin),
    math!("cos", Cos),
    call!("abs", "(x)", exactly(1), |b, n, a, s| b.abs_sign(n, a, s)),
    math!("floor", Floor),
    math!("ceil", Ceil),
    math!("round", Round),
    math!("erf", Erf),
    math!("logistic", Logistic),
    math!("sigmoid", Logistic),
    call!("sign", "(x)", exactly(1), |b, n, a, s| b.abs_sign(n, a, s)),
    call!("pow", "(a, b)", exactly(2), |b, n, a, s| b.pow(n, a, s)),
    call!(
        "max",
        "(a, b) elementwise, or (x, axis=, keepdims=) to reduce",
        keywords(between(1, 2), AXIS_KW),
        |b, n, a, s| b.max_min(n, a, s)
    ),
    call!(
        "min",
        "(a, b) elementwise, or (x, axis=, keepdims=) to reduce",
        keywords(between(1, 2), AXIS_KW),
        |b, n, a, s| b.max_min(n, a, s)
    ),
    call!("maximum", "(a, b)", exactly(2), |b, n, a, s| b.minmax(
        n == "maximum",
        a,
        s
    )),
    call!("minimum", "(a, b)", exactly(2), |b, n, a, s| b.minmax(
        n == "maximum",
        a,
        s
    )),
    call!("where", "(cond, a, b)", exactly(3), |b, _, a, s| b
        .select(a, s)),
    call!("select", "(cond, a, b)", exactly(3), |b, _, a, s| b
        .select(a, s)),
    call!("cast", "(x, dtype)", exactly(2), |b, _, a, s| b
        .cast_call(a, s)),
    call!("bitcast", "(x, dtype)", exactly(2), |b, _, a, s| b
        .bitcast(a, s)),
    call!("iota", "(dtype, [shape], dim)", exactly(3), |b, _, a, s| b
        .iota(a, s)),
    call!("zeros", "(dtype, [shape])", exactly(2), |b, n, a, s| b
        .filled(n, a, s)),
    call!("ones", "(dtype, [shape])", exactly(2), |b, n, a, s| b
        .filled(n, a, s)),
    call!(
        "full",
        "(dtype, [shape], value)",
        exactly(3),
        |b, n, a, s| b.filled(n, a, s)
    ),
    call!("broadcast", "(x, [shape])", exactly(2), |b, _, a, s| b
        .broadcast_call(a, s)),
    call!("reshape", "(x, [shape])", exactly(2), |b, _, a, s| b
        .reshape(a, s)),
    call!(
        "transpose",
        "(x) or (x, [perm])",
        between(1, 2),
        |b, _, a, s| b.transpose(a, s)
    ),
    call!("roll", "(x, shift, axis)", exactly(3), |b, _, a, s| b
        .roll(a, s)),
    call!(
        "concatenate",
        "([a, b, ...], axis=0)",
        keywords(exactly(1), &["axis"]),
        |b, _, a, s| b.concatenate(a, s)
    ),
    call!("tile", "(x, [reps])", exactly(2), |b, _, a, s| b.tile(a, s)),
    call!(
        "repeat",
        "(x, n, axis=k)",
        keywords(exactly(2), &["axis"]),
        |b, _, a, s| b.repeat(a, s)
    ),
    call!(
        "sum",
        "(x, axis=, keepdims=)",
        keywords(exactly(1), AXIS_KW),
        |b, n, a, s| b.reduction(n, a, s)
    ),
    call!(
        "mean",
        "(x, axis=, keepdims=)",
        keywords(exactly(1), AXIS_KW),
        |b, n, a, s| b.reduction(n, a, s)
    ),
    call!(
        "argmax",
        "(x, axis=, keepdims=)",
        keywords(exactly(1), AXIS_KW),
        |b, n, a, s| b.reduction(n, a, s)
    ),
    call!(
        "argmin",
        "(x, axis=, keepdims=)",
        keywords(exactly(1), AXIS_KW),
        |b, n, a, s| b.reduction(n, a, s)
    ),
    call!(
        "dot",
        "(a, b, trans_a=false, trans_b=false, acc=f32)",
        keywords(exactly(2), &["trans_a", "trans_b", "acc"]),
        |b, _, a, s| b.dot(a, s)
    ),
    call!("program_id", "(axis)", exactly(1), |b, _, a, s| b
        .grid_query(true, a.pos[0], s)),
    call!("num_programs", "(axis)", exactly(1), |b, _, a, s| b
        .grid_query(false, a.pos[0], s)),
    call!("cdiv", "(a, b)", exactly(2), |b, _, a, s| b.cdiv(a, s)),
    call!("multiple_of", "(x, n)", exactly(2), |b, _, a, s| b
        .multiple_of(a, s)),
    call!(
        "copy_start",
        "(src_window, dst_window, sem)",
        exactly(3),
        |b, _, a, s| b.dma(true, a, s)
    ),
    call!(
        "copy_wait",
        "(src_window, dst_window, sem)",
        exactly(3),
        |b, _, a, s| b.dma(false, a, s)
    ),
    call!("device_id", "(coords...)", between(0, 8), |b, _, a, s| b
        .device_id(a, s)),
    call!("mesh_size", "(axis)", exactly(1), |b, _, a, s| b
        .mesh_size(a, s)),
    call!(
        "remote_copy_start",
        "(src_window, dst_window, send_sem, recv_sem, device)",
        exactly(5),
        |b, n, a, s| b.remote_copy(n, a, s)
    ),
    call!(
        "remote_wait_send",
        "(src_window, dst_window, send_sem, recv_sem, device)",
        exactly(5),
        |b, n, a, s| b.remote_copy(n, a, s)
    ),
    call!(
        "remote_wait_recv",
        "(src_window, dst_window, send_sem, recv_sem, device)",
        exactly(5),
        |b, n, a, s| b.remote_copy(n, a, s)
    ),
    call!(
        "sem_signal",
        "(sem, n, device)",
        between(2, 3),
        |b, _, a, s| b.sem_signal(a, s)
    ),
    call!("sem_wait", "(sem, n)", exactly(2), |b, _, a, s| b
        .sem_wait(a, s)),
    call!("sem_read", "(sem)", exactly(1), |b, _, a, s| b
        .sem_read(a, s)),
    call!(
        "store",
        "(ref_window, value, mask=)",
        keywords(exactly(2), &["mask"]),
        |b, _, a, s| b.store_call(a, s)
    ),
    call!("ds", "(start, size)", UNCHECKED, |b, _, _, s| b
        .ds_outside(s)),
    call!("bits", "(dtype)", exactly(1), |b, n, a, _| b
        .dtype_query(n, a)),
    call!("packing", "(dtype)", exactly(1), |b, n, a, _| b
        .dtype_query(n, a)),
];

/// The builtin called `name`.
pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Positional and keyword arguments of one call.
pub struct Args<'a> {
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

impl Builder<'_, '_> {
    /// Sorts a call's arguments into positional and keyword ones, checking
    /// them against the builtin's arity.
    fn args<'a>(&mut self, def: &Builtin, args: &'a [ast::Arg], span: Span) -> Option<Args<'a>> {
        let (name, kws) = (def.name, def.arity.keywords);
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
        let (min, max) = (def.arity.min, def.arity.max);
        if !(min..=max).contains(&out.pos.len()) {
            let want = if min == max {
                format!("{min}")
            } else {
                format!("{min} to {max}")
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
                .help(format!("usage: {name}{}", def.usage)),
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
    pub(in crate::check) fn dtype_arg(&mut self, e: &Expr) -> Option<DType> {
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

    /// Checks a call of builtin `name`; `None` when `name` is no builtin.
    /// A builtin called with bad arguments is an error value, never `None`.
    pub fn builtin(&mut self, name: &str, args: &[ast::Arg], span: Span) -> Option<Val> {
        let def = find(name)?;
        let a = if def.arity.checked {
            match self.args(def, args, span) {
                Some(a) => a,
                None => return Some(Val::Err),
            }
        } else {
            Args {
                pos: Vec::new(),
                kw: Vec::new(),
            }
        };
        Some(match def.rule {
            Rule::Math(op) => match self.float_value(def.name, a.pos[0]) {
                Some(x) => {
                    let t = self.ty(x);
                    self.emit(OpKind::Unary(op, x), t, span)
                }
                None => Val::Err,
            },
            Rule::Call(rule) => rule(self, def.name, &a, span),
        })
    }

    // ---- The short rules -----------------------------------------------------

    fn abs_sign(&mut self, name: &str, a: &Args, span: Span) -> Val {
        let v = self.expr(a.pos[0]);
        match v {
            Val::Int(d) if name == "abs" => {
                return match d.known().map(i64::checked_abs) {
                    Some(Some(x)) => Val::Int(Dim::Known(x)),
                    Some(None) => self.error(
                        Diag::new(&codes::CONST_EVAL, "constant arithmetic overflows", span)
                            .label("the absolute value does not fit in 64 bits"),
                    ),
                    None => Val::Int(d),
                };
            }
            Val::Float(f) if name == "abs" => return Val::Float(f.abs()),
            _ => {}
        }
        let Some(x) = self.value(v, a.pos[0].span) else {
            return Val::Err;
        };
        let t = self.ty(x);
        if t.dtype() == DType::Bool {
            return self.error(
                Diag::new(
                    &codes::BAD_OPERAND,
                    format!("`{name}` needs a number, found `{t}`"),
                    a.pos[0].span,
                )
                .label("bool"),
            );
        }
        let op = if name == "abs" {
            UnaryOp::Abs
        } else {
            UnaryOp::Sign
        };
        self.emit(OpKind::Unary(op, x), t, span)
    }

    fn pow(&mut self, name: &str, a: &Args, span: Span) -> Val {
        let x = self.expr(a.pos[0]);
        let y = self.expr(a.pos[1]);
        if let (Val::Float(p), Val::Float(q)) = (&x, &y) {
            return Val::Float(p.powf(*q));
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

    /// `max(a, b)` is elementwise; `max(x, axis=..)` reduces.
    fn max_min(&mut self, name: &str, a: &Args, span: Span) -> Val {
        if a.pos.len() == 2 {
            if !a.kw.is_empty() {
                return self.error(
                    Diag::new(
                        &codes::UNKNOWN_ARGUMENT,
                        format!("two-argument `{name}` is elementwise and takes no keywords"),
                        span,
                    )
                    .label("keywords given"),
                );
            }
            self.minmax(name == "max", a, span)
        } else {
            let op = if name == "max" {
                ReduceOp::Max
            } else {
                ReduceOp::Min
            };
            self.reduce(op, a, span)
        }
    }

    fn reduction(&mut self, name: &str, a: &Args, span: Span) -> Val {
        let op = match name {
            "argmax" => ReduceOp::ArgMax,
            "argmin" => ReduceOp::ArgMin,
            _ => ReduceOp::Sum,
        };
        let v = self.expr(a.pos[0]);
        let Some(x) = self.value(v, a.pos[0].span) else {
            return Val::Err;
        };
        if name == "mean" {
            self.mean(x, a, span)
        } else {
            self.reduce_value(op, x, a, span)
        }
    }

    fn cast_call(&mut self, a: &Args, span: Span) -> Val {
        let v = self.expr(a.pos[0]);
        match self.dtype_arg(a.pos[1]) {
            Some(d) => self.cast(v, d, span),
            None => Val::Err,
        }
    }

    /// `zeros`, `ones` and `full`.
    fn filled(&mut self, name: &str, a: &Args, span: Span) -> Val {
        let (Some(d), Some(shape)) = (self.dtype_arg(a.pos[0]), self.shape_arg(a.pos[1])) else {
            return Val::Err;
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

    fn broadcast_call(&mut self, a: &Args, span: Span) -> Val {
        let v = self.expr(a.pos[0]);
        let Some(shape) = self.shape_arg(a.pos[1]) else {
            return Val::Err;
        };
        let Some(x) = self.value(v, a.pos[0].span) else {
            return Val::Err;
        };
        match self.broadcast_to(x, &shape, span) {
            Some(x) => Val::V(x),
            None => Val::Err,
        }
    }

    fn cdiv(&mut self, a: &Args, span: Span) -> Val {
        let x = self.expr(a.pos[0]);
        let y = self.expr(a.pos[1]);
        if let (Val::Int(p), Val::Int(q)) = (&x, &y) {
            return match Dim::bin(crate::ir::SymOp::CDiv, p, q) {
                Some(d) => Val::Int(d),
                None => self.error(
                    Diag::new(&codes::CONST_EVAL, "`cdiv` by zero", span).label("division by zero"),
                ),
            };
        }
        // (x + y - 1) / y on run-time integers.
        let (sx, sy) = (a.pos[0].span, a.pos[1].span);
        let s = self.binary(AstBin::Add, x, sx, y.clone(), sy, span);
        let s = self.binary(AstBin::Sub, s, span, Val::Int(Dim::Known(1)), span, span);
        self.binary(AstBin::Div, s, span, y, sy, span)
    }

    /// `bits(T)`: the storage width of a dtype; `packing(T)`: how many values
    /// share one 32-bit word (32 / bits). Both are compile-time integers.
    fn dtype_query(&mut self, name: &str, a: &Args) -> Val {
        let Some(d) = self.dtype_arg(a.pos[0]) else {
            return Val::Err;
        };
        let v = if name == "bits" {
            d.bits()
        } else {
            32 / d.bits()
        };
        Val::Int(Dim::Known(i64::from(v)))
    }

    fn ds_outside(&mut self, span: Span) -> Val {
        self.error(
            Diag::new(
                &codes::WRONG_KIND,
                "`ds(start, size)` is only valid inside a ref subscript",
                span,
            )
            .label("not in a subscript")
            .help("write `x[ds(start, size)]`"),
        )
    }
}

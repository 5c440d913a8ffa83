//! Builds IR for expressions: name lookup through scopes, compile-time
//! constants, implicit broadcasting, operators, ref windows and inlined
//! function calls. Statements and control flow are in `stmt.rs`; builtin
//! functions in `builtins.rs`.

use super::value::Val;
use super::Checker;
use crate::ast::{self, BinOp as AstBin, Expr, ExprKind, UnOp};
use crate::diag::{codes, Diag};
use crate::ir::{
    self, Arena, BinaryOp, BlockId, CmpOp, DType, Dim, Func, Literal, OpKind, RefDecl, RefId,
    RefView, Slice, Space, Start, SymOp, Type, UnaryOp, Value,
};
use crate::resolve::{ItemRef, ModId};
use crate::span::Span;
use std::borrow::Cow;
use std::collections::HashMap;

/// What a name in scope stands for.
#[derive(Debug, Clone)]
pub enum Binding {
    Val(Val),
    /// A `let mut` variable: its current value is `Builder::slots[i]`.
    Mut(usize),
    /// A function declared in a body, with the names it captured.
    Fn(std::rc::Rc<super::tuple::LocalFn>),
    /// An operand or scratch buffer whose `if` condition (at this span) is
    /// false: the name is known, but using it is PK0230.
    Absent(Span),
}

/// What kind of function is being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Compile-time evaluation: no op may be emitted.
    Const,
    /// An index map: scalars and prefetch reads only.
    IndexMap,
    Body,
}

pub struct Builder<'c, 'p> {
    pub ck: &'c mut Checker<'p>,
    pub module: ModId,
    /// The kernel's refs; a body builder appends the views it declares
    /// (`k.reshape(..)`, `k.bitcast(T)`), hence copy-on-write.
    pub refs: Cow<'c, Arena<RefDecl>>,
    pub f: Func,
    pub cur: BlockId,
    pub scopes: Vec<HashMap<String, Binding>>,
    pub slots: Vec<(Value, String)>,
    pub mode: Mode,
    /// Grid extents, for `num_programs`.
    pub grid_extents: Vec<Dim>,
    /// For each dynamic grid axis, the prefetch ref and element its extent
    /// is read from: `num_programs` on that axis loads it.
    pub grid_dynamic: Vec<Option<(RefId, Vec<u64>)>>,
}

impl<'c, 'p> Builder<'c, 'p> {
    fn new(
        ck: &'c mut Checker<'p>,
        module: ModId,
        refs: &'c Arena<RefDecl>,
        bindings: &[(String, Binding)],
        grid: &[String],
        mode: Mode,
    ) -> Self {
        let mut f = Func::default();
        let entry = f.new_block(&vec![Type::Scalar(DType::I32); grid.len()]);
        f.entry = Some(entry);
        let mut scope: HashMap<String, Binding> = bindings.iter().cloned().collect();
        let params = f.blocks[entry].params.clone();
        for (name, v) in grid.iter().zip(params) {
            scope.insert(name.clone(), Binding::Val(Val::V(v)));
        }
        Builder {
            ck,
            module,
            refs: Cow::Borrowed(refs),
            f,
            cur: entry,
            scopes: vec![scope],
            slots: Vec::new(),
            mode,
            grid_extents: Vec::new(),
            grid_dynamic: Vec::new(),
        }
    }

    /// A builder for compile-time expressions (shapes, defaults, extents).
    pub fn constant(
        ck: &'c mut Checker<'p>,
        module: ModId,
        refs: &'c Arena<RefDecl>,
        bindings: &[(String, Binding)],
    ) -> Self {
        Builder::new(ck, module, refs, bindings, &[], Mode::Const)
    }

    pub fn index_map(
        ck: &'c mut Checker<'p>,
        module: ModId,
        refs: &'c Arena<RefDecl>,
        bindings: &[(String, Binding)],
        grid: &[String],
    ) -> Self {
        Builder::new(ck, module, refs, bindings, grid, Mode::IndexMap)
    }

    pub fn body(
        ck: &'c mut Checker<'p>,
        module: ModId,
        refs: &'c Arena<RefDecl>,
        bindings: &[(String, Binding)],
        grid: &[String],
    ) -> Self {
        Builder::new(ck, module, refs, bindings, grid, Mode::Body)
    }

    pub fn finish(self) -> Func {
        self.f
    }

    /// The function and, when the body declared views, the kernel's refs
    /// with them appended.
    pub fn finish_with_refs(self) -> (Func, Option<Arena<RefDecl>>) {
        let refs = match self.refs {
            Cow::Owned(r) => Some(r),
            Cow::Borrowed(_) => None,
        };
        (self.f, refs)
    }

    pub fn error(&mut self, d: Diag) -> Val {
        self.ck.error(d);
        Val::Err
    }

    pub fn ty(&self, v: Value) -> Type {
        self.f.ty(v).clone()
    }

    pub fn describe(&self, v: &Val) -> String {
        v.describe(|x| self.ty(x))
    }

    // ---- Emitting ops ------------------------------------------------------

    /// Appends an op; in constant mode reports that the expression is not a
    /// compile-time constant instead.
    pub fn emit(&mut self, kind: OpKind, ty: Type, span: Span) -> Val {
        if self.mode == Mode::Const {
            return self.error(
                Diag::new(
                    &codes::NOT_CONSTANT,
                    "this must be a compile-time constant",
                    span,
                )
                .label("computed at run time")
                .help("use parameters, constants and literals here"),
            );
        }
        Val::V(self.f.push1(self.cur, kind, ty, span))
    }

    pub fn emit_v(&mut self, kind: OpKind, ty: Type, span: Span) -> Option<Value> {
        match self.emit(kind, ty, span) {
            Val::V(v) => Some(v),
            _ => None,
        }
    }

    /// Emits a constant of type `ty` (splatted for vectors).
    pub fn literal(&mut self, lit: Literal, ty: Type, span: Span) -> Option<Value> {
        self.emit_v(OpKind::Const(lit), ty, span)
    }

    // ---- Constants -----------------------------------------------------------

    /// Checks a compile-time expression.
    pub fn const_expr(&mut self, e: &Expr) -> Val {
        let saved = self.mode;
        self.mode = Mode::Const;
        let v = self.expr(e);
        self.mode = saved;
        v
    }

    /// A compile-time integer (a shape, an extent): positive when known.
    pub fn const_dim(&mut self, e: &Expr, what: &str) -> Option<Dim> {
        match self.const_expr(e) {
            Val::Int(d) => {
                if let Some(v) = d.known() {
                    if v <= 0 {
                        self.error(
                            Diag::new(
                                &codes::CONST_EVAL,
                                format!("{what} must be positive"),
                                e.span,
                            )
                            .label(format!("this is {v}"))
                            .help("sizes and extents are at least 1"),
                        );
                        return None;
                    }
                }
                Some(d)
            }
            Val::Err => None,
            other => {
                let d = self.describe(&other);
                self.error(
                    Diag::new(
                        &codes::NOT_CONSTANT,
                        format!("{what} must be a compile-time integer"),
                        e.span,
                    )
                    .label(format!("this is {d}")),
                );
                None
            }
        }
    }

    /// A compile-time non-negative integer (axes, slice sizes).
    pub fn const_int(&mut self, e: &Expr, what: &str) -> Option<i64> {
        match self.const_expr(e) {
            Val::Int(d) => match d.known() {
                Some(v) => Some(v),
                None => {
                    self.error(
                        Diag::new(
                            &codes::NOT_CONSTANT,
                            format!("{what} must be known when the kernel is checked"),
                            e.span,
                        )
                        .label(format!("depends on `{d}`, which has no value"))
                        .help("give the parameter a value with `-p NAME=VALUE`"),
                    );
                    None
                }
            },
            Val::Err => None,
            other => {
                let d = self.describe(&other);
                self.error(
                    Diag::new(
                        &codes::NOT_CONSTANT,
                        format!("{what} must be a compile-time integer"),
                        e.span,
                    )
                    .label(format!("this is {d}")),
                );
                None
            }
        }
    }

    /// Resolves a dtype name (`f32`, or a dtype parameter / generic).
    pub fn dtype_name(&mut self, id: &ast::Ident) -> Option<DType> {
        if let Some(Binding::Val(Val::Dtype(d))) = self.lookup_local(&id.name) {
            return Some(d);
        }
        if let Some(Binding::Val(Val::Err)) = self.lookup_local(&id.name) {
            return None;
        }
        match DType::from_name(&id.name) {
            Some(d) => {
                if !self.ck.target.supports(d) {
                    let t = self.ck.target;
                    self.error(
                        Diag::new(
                            &codes::DTYPE_TARGET,
                            format!("`{d}` is not supported on {t}"),
                            id.span,
                        )
                        .label(format!("no {d} on this generation"))
                        .help("fp8 types need v5e or later; pick another --target or dtype"),
                    );
                    return None;
                }
                Some(d)
            }
            None => {
                // A module constant holding a dtype: `const D = bf16;`.
                let item = self
                    .ck
                    .program
                    .lookup(self.module, std::slice::from_ref(id));
                if let Some(ItemRef::Const(m, i)) = item {
                    match self.module_const(m, i, id.span) {
                        Val::Dtype(d) => return Some(d),
                        Val::Err => return None,
                        _ => {}
                    }
                }
                self.unknown_dtype(id);
                None
            }
        }
    }

    pub fn unknown_dtype(&mut self, id: &ast::Ident) {
        let d = super::unsupported_dtype(&id.name, id.span).unwrap_or_else(|| {
            Diag::new(&codes::UNKNOWN_DTYPE, format!("unknown dtype `{}`", id.name), id.span)
                .label("not a dtype")
                .help("dtypes are f32, bf16, i32, i16, i8, u8, bool, f8e4m3fn, f8e5m2, or a `dtype` parameter")
        });
        self.ck.error(d);
    }

    // ---- Names ---------------------------------------------------------------

    pub fn lookup_local(&self, name: &str) -> Option<Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name).cloned())
    }

    pub fn bind(&mut self, name: &str, b: Binding) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), b);
        }
    }

    fn name(&mut self, path: &ast::Path, span: Span) -> Val {
        if path.segments.len() == 1 {
            let n = &path.segments[0].name;
            if let Some(b) = self.lookup_local(n) {
                return match b {
                    Binding::Val(v) => v,
                    Binding::Mut(i) => Val::V(self.slots[i].0),
                    Binding::Fn(f) => self.error(
                        Diag::new(&codes::WRONG_KIND, format!("`{n}` is a function"), span)
                            .label("used as a value")
                            .with(f.decl.name.span, "declared here")
                            .help("call it: `name(args)`"),
                    ),
                    Binding::Absent(cond) => self.error(super::when::absent(n, span, cond)),
                };
            }
        }
        match self.ck.program.lookup(self.module, &path.segments) {
            Some(ItemRef::Const(m, i)) => return self.module_const(m, i, span),
            Some(ItemRef::Fn(..)) => {
                return self.error(
                    Diag::new(
                        &codes::WRONG_KIND,
                        format!("`{}` is a function", path.to_string_path()),
                        span,
                    )
                    .label("used as a value")
                    .help("call it: `name(args)`"),
                )
            }
            Some(ItemRef::Kernel(..)) | Some(ItemRef::Module(_)) => {
                return self.error(
                    Diag::new(
                        &codes::WRONG_KIND,
                        format!("`{}` is not a value", path.to_string_path()),
                        span,
                    )
                    .label("a kernel or module")
                    .help("only functions and constants of a module can be used in expressions"),
                )
            }
            None => {}
        }
        if path.segments.len() == 1 {
            let n = path.segments[0].name.as_str();
            match n {
                "inf" => return Val::Float(f64::INFINITY),
                "nan" => return Val::Float(f64::NAN),
                "pi" => return Val::Float(std::f64::consts::PI),
                "none" => return Val::None,
                _ => {}
            }
            if let Some(d) = DType::from_name(n) {
                return Val::Dtype(d);
            }
            if let Some(d) = super::unsupported_dtype(n, span) {
                return self.error(d);
            }
        }
        if let Some(d) = self.runtime_name(path, span) {
            return self.error(d);
        }
        let help = self.suggest(path.last().name.as_str());
        let mut d = Diag::new(
            &codes::UNKNOWN_NAME,
            format!("unknown name `{}`", path.to_string_path()),
            span,
        )
        .label("not found in this scope");
        if let Some(h) = help {
            d = d.help(h);
        }
        self.error(d)
    }

    /// A kernel's operand, grid index or scratch buffer named where only
    /// compile-time values are visible (`grid (i in n parallel)` with `n` a
    /// prefetch operand): the name exists, so "unknown" would mislead.
    fn runtime_name(&self, path: &ast::Path, span: Span) -> Option<Diag> {
        if self.mode != Mode::Const || path.segments.len() != 1 {
            return None;
        }
        let n = &path.segments[0].name;
        let (decl, kind) = self
            .ck
            .runtime_names
            .iter()
            .find(|(m, ..)| m == n)
            .map(|(_, s, k)| (*s, *k))?;
        Some(
            Diag::new(&codes::NOT_CONSTANT, format!("`{n}` is not known at compile time"), span)
                .label("a compile-time value is needed here")
                .with(decl, format!("`{n}` is {kind}, known only when the kernel runs"))
                .help("grid extents, shapes and block sizes are computed from parameters, constants and literals"),
        )
    }

    /// A "did you mean" for a misspelt name, from what is in scope.
    fn suggest(&self, name: &str) -> Option<String> {
        let mut best: Option<(usize, String)> = None;
        let mut consider = |cand: &str| {
            let d = edit_distance(name, cand);
            if d <= 2 && d < name.len() && best.as_ref().is_none_or(|(bd, _)| d < *bd) {
                best = Some((d, cand.to_string()));
            }
        };
        for s in &self.scopes {
            for k in s.keys() {
                consider(k);
            }
        }
        for k in self.ck.program.module(self.module).names.keys() {
            consider(k);
        }
        for k in super::builtins::BUILTINS.iter().map(|b| b.name) {
            consider(k);
        }
        best.map(|(_, c)| format!("a name with a similar spelling exists: `{c}`"))
    }

    fn module_const(&mut self, m: ModId, i: usize, span: Span) -> Val {
        if let Some(v) = self.ck.const_cache.get(&(m, i)) {
            return v.clone();
        }
        let Some(decl) = self.ck.program.const_decl(m, i) else {
            return Val::Err;
        };
        if self.ck.const_stack.contains(&(m, i)) {
            return self.error(
                Diag::new(
                    &codes::CYCLE,
                    format!(
                        "constant `{}` is defined in terms of itself",
                        decl.name.name
                    ),
                    span,
                )
                .label("used while it is being defined")
                .with(decl.name.span, "defined here"),
            );
        }
        self.ck.const_stack.push((m, i));
        let value = decl.value.clone();
        let v = {
            let mut b = Builder::constant(self.ck, m, &self.refs, &[]);
            b.const_expr(&value)
        };
        self.ck.const_stack.pop();
        self.ck.const_cache.insert((m, i), v.clone());
        v
    }

    // ---- Expressions ---------------------------------------------------------

    pub fn expr(&mut self, e: &Expr) -> Val {
        match &e.kind {
            ExprKind::Int(v) => match i64::try_from(*v) {
                Ok(v) => Val::Int(Dim::Known(v)),
                Err(_) => self.error(
                    Diag::new(
                        &codes::NUMBER_OUT_OF_RANGE,
                        "integer literal is too large",
                        e.span,
                    )
                    .label("larger than 2^63 - 1")
                    .help("TPU integers are at most 32 bits"),
                ),
            },
            ExprKind::Float(v) => Val::Float(*v),
            ExprKind::Bool(b) => Val::Bool(*b),
            ExprKind::Name(p) => self.name(p, e.span),
            ExprKind::Unary(op, a) => {
                let a = self.expr(a);
                self.unary(*op, a, e.span)
            }
            ExprKind::Binary(op, a, b) => {
                let x = self.expr(a);
                let y = self.expr(b);
                self.binary(*op, x, a.span, y, b.span, e.span)
            }
            ExprKind::Cast(x, t) => {
                let v = self.expr(x);
                let Some(d) = self.dtype_name(t) else {
                    return Val::Err;
                };
                self.cast(v, d, e.span)
            }
            ExprKind::Call(p, args) => self.call(p, args, e.span),
            ExprKind::Index(base, idx) => self.load(base, idx, e.span),
            ExprKind::At(base, m, idx) => self.at(base, m, idx, e.span),
            ExprKind::Method(base, m, args) => self.method(base, m, args, e.span),
            ExprKind::List(items) => {
                Val::List(items.iter().map(|i| (self.expr(i), i.span)).collect())
            }
            ExprKind::Tuple(items) => {
                Val::Tuple(items.iter().map(|i| (self.expr(i), i.span)).collect())
            }
            ExprKind::If(c, t, f) => self.if_expr(c, t, f.as_deref(), e.span, true),
            ExprKind::Block(b) => self.block_value(b),
            ExprKind::Error => Val::Err,
        }
    }

    /// Materialises a value as an IR value: constants take their default
    /// types (i32, f32, bool).
    pub fn value(&mut self, v: Val, span: Span) -> Option<Value> {
        match v {
            Val::V(x) => Some(x),
            Val::Int(d) => {
                let n = self.int_value(&d);
                self.int_fits(n, DType::I32, span)?;
                self.literal(Literal::Int(n), Type::Scalar(DType::I32), span)
            }
            Val::Float(x) => self.literal(Literal::Float(x), Type::Scalar(DType::F32), span),
            Val::Bool(b) => self.literal(Literal::Bool(b), Type::Scalar(DType::Bool), span),
            Val::Err => None,
            other => {
                let d = self.describe(&other);
                let mut diag = Diag::new(
                    &codes::WRONG_KIND,
                    format!("expected a value, found {d}"),
                    span,
                )
                .label("not a value");
                diag = match other {
                    Val::Tuple(items) => Diag::new(
                        &codes::TUPLE_MISMATCH,
                        format!(
                            "expected one value, found a tuple of {} values",
                            items.len()
                        ),
                        span,
                    )
                    .label("a tuple")
                    .help("take it apart first: `let (a, b) = ...;`"),
                    Val::Ref(_) | Val::View(_) => diag.help(
                        "read a ref with `x[..]` (all of it) or `x[i, ds(j, 128)]` (a window)",
                    ),
                    Val::Unit => {
                        Diag::new(&codes::NO_VALUE, "this expression produces no value", span)
                            .label("no value")
                    }
                    _ => diag,
                };
                self.error(diag);
                None
            }
        }
    }

    /// Checks that constant `n` is representable in integer dtype `d`
    /// (`x_i8 + 300` is an error, as in numpy and JAX).
    fn int_fits(&mut self, n: i64, d: DType, span: Span) -> Option<()> {
        let (lo, hi): (i64, i64) = match d {
            DType::I32 => (i32::MIN.into(), i32::MAX.into()),
            DType::I16 => (i16::MIN.into(), i16::MAX.into()),
            DType::I8 => (i8::MIN.into(), i8::MAX.into()),
            DType::U8 => (0, u8::MAX.into()),
            _ => return Some(()),
        };
        if (lo..=hi).contains(&n) {
            return Some(());
        }
        self.error(
            Diag::new(
                &codes::CONST_EVAL,
                format!("constant {n} does not fit in `{d}`"),
                span,
            )
            .label(format!("`{d}` holds {lo}..={hi}"))
            .help(format!(
                "use a constant in range, or compute in a wider type (`x as i32`) and cast back with `as {d}`"
            )),
        );
        None
    }

    /// The value of a compile-time integer in a run-time context. Symbolic
    /// sizes only occur in `pkc check` of unspecialised kernels, whose IR is
    /// verified but never lowered; they stand in as 0.
    pub fn int_value(&self, d: &Dim) -> i64 {
        d.known().unwrap_or(0)
    }

    /// Materialises `v` with the dtype `d`, converting a constant (a literal
    /// adopts the dtype of what it meets) or checking a value's dtype.
    pub fn value_as(&mut self, v: Val, d: DType, span: Span) -> Option<Value> {
        let lit = match &v {
            Val::Int(n) => {
                let n = self.int_value(n);
                if d.is_float() {
                    Literal::Float(n as f64)
                } else if d == DType::Bool {
                    return self.mismatch_const(&v, d, span);
                } else {
                    self.int_fits(n, d, span)?;
                    Literal::Int(n)
                }
            }
            Val::Float(x) => {
                if d.is_float() {
                    Literal::Float(*x)
                } else {
                    return self.mismatch_const(&v, d, span);
                }
            }
            Val::Bool(b) => {
                if d == DType::Bool {
                    Literal::Bool(*b)
                } else {
                    return self.mismatch_const(&v, d, span);
                }
            }
            _ => {
                let x = self.value(v, span)?;
                let t = self.ty(x).dtype();
                if t != d {
                    self.error(
                        Diag::new(
                            &codes::TYPE_MISMATCH,
                            format!("expected `{d}`, found `{t}`"),
                            span,
                        )
                        .label(format!("this is {t}"))
                        .help(format!("convert explicitly with `as {d}`")),
                    );
                    return None;
                }
                return Some(x);
            }
        };
        self.literal(lit, Type::Scalar(d), span)
    }

    fn mismatch_const(&mut self, v: &Val, d: DType, span: Span) -> Option<Value> {
        let what = self.describe(v);
        self.error(
            Diag::new(
                &codes::TYPE_MISMATCH,
                format!("{what} cannot be used as `{d}`"),
                span,
            )
            .label(format!("expected `{d}`"))
            .help(format!(
                "write a literal of the right kind, or convert with `as {d}`"
            )),
        );
        None
    }

    /// Materialises `v` with exactly type `ty` (dtype conversion for
    /// constants, splat or broadcast for shapes).
    pub fn coerce(&mut self, v: Val, ty: &Type, span: Span) -> Option<Value> {
        let x = self.value_as(v, ty.dtype(), span)?;
        self.broadcast_to(x, ty.shape(), span)
    }

    /// Broadcasts a value to `shape` with numpy rules.
    pub fn broadcast_to(&mut self, x: Value, shape: &[Dim], span: Span) -> Option<Value> {
        let t = self.ty(x);
        if t.shape() == shape {
            return Some(x);
        }
        let d = t.dtype();
        if t.is_scalar() {
            return self.emit_v(OpKind::Splat(x), Type::of(d, shape.to_vec()), span);
        }
        let (r, n) = (t.rank(), shape.len());
        let ok = r <= n
            && t.shape()
                .iter()
                .zip(&shape[n - r..])
                .all(|(a, b)| a == b || *a == Dim::Known(1));
        if !ok {
            self.error(
                Diag::new(
                    &codes::SHAPE_MISMATCH,
                    format!("cannot broadcast `{t}` to shape [{}]", ir::shape_str(shape)),
                    span,
                )
                .label(format!("this is `{t}`"))
                .help("dimensions must match from the right, or be 1"),
            );
            return None;
        }
        let mut x = x;
        if r < n {
            let mut s = vec![Dim::Known(1); n - r];
            s.extend(t.shape().iter().cloned());
            x = self.emit_v(OpKind::Reshape(x), Type::of(d, s), span)?;
        }
        if self.ty(x).shape() != shape {
            x = self.emit_v(OpKind::Broadcast(x), Type::of(d, shape.to_vec()), span)?;
        }
        Some(x)
    }

    /// The common shape of two shapes under numpy broadcasting.
    pub fn broadcast_shape(&mut self, a: &Type, b: &Type, span: Span) -> Option<Vec<Dim>> {
        let (sa, sb) = (a.shape(), b.shape());
        let n = sa.len().max(sb.len());
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let da = if i + sa.len() >= n {
                sa[i + sa.len() - n].clone()
            } else {
                Dim::Known(1)
            };
            let db = if i + sb.len() >= n {
                sb[i + sb.len() - n].clone()
            } else {
                Dim::Known(1)
            };
            let d = if da == db || db == Dim::Known(1) {
                da
            } else if da == Dim::Known(1) {
                db
            } else {
                self.error(
                    Diag::new(
                        &codes::SHAPE_MISMATCH,
                        format!("shapes `{a}` and `{b}` do not broadcast"),
                        span,
                    )
                    .label(format!("dimension {i}: {da} vs {db}"))
                    .help("dimensions must match from the right, or be 1"),
                );
                return None;
            };
            out.push(d);
        }
        Some(out)
    }

    /// Two operands to one type: constants adopt the other's dtype, shapes
    /// broadcast. Reports a dtype mismatch between two typed values.
    pub fn unify(
        &mut self,
        a: Val,
        sa: Span,
        b: Val,
        sb: Span,
        span: Span,
    ) -> Option<(Value, Value)> {
        let (x, y) = match (a.is_const(), b.is_const()) {
            (true, false) => {
                let y = self.value(b, sb)?;
                let d = self.ty(y).dtype();
                (self.value_as(a, d, sa)?, y)
            }
            (false, true) => {
                let x = self.value(a, sa)?;
                let d = self.ty(x).dtype();
                (x, self.value_as(b, d, sb)?)
            }
            _ => {
                let x = self.value(a, sa);
                let y = self.value(b, sb);
                (x?, y?)
            }
        };
        let (tx, ty) = (self.ty(x), self.ty(y));
        if tx.dtype() != ty.dtype() {
            self.error(
                Diag::new(
                    &codes::TYPE_MISMATCH,
                    format!("mismatched dtypes `{}` and `{}`", tx.dtype(), ty.dtype()),
                    span,
                )
                .with(sa, format!("this is {}", tx))
                .with(sb, format!("this is {}", ty))
                .help(format!(
                    "pk never converts implicitly; write `(... as {})` on one side",
                    tx.dtype()
                )),
            );
            return None;
        }
        let shape = self.broadcast_shape(&tx, &ty, span)?;
        let x = self.broadcast_to(x, &shape, sa)?;
        let y = self.broadcast_to(y, &shape, sb)?;
        Some((x, y))
    }

    fn unary(&mut self, op: UnOp, a: Val, span: Span) -> Val {
        match (op, &a) {
            (_, Val::Err) => Val::Err,
            (UnOp::Neg, Val::Int(d)) => match Dim::bin(SymOp::Sub, &Dim::Known(0), d) {
                Some(d) => Val::Int(d),
                None => Val::Err,
            },
            (UnOp::Neg, Val::Float(x)) => Val::Float(-x),
            (UnOp::Not, Val::Bool(b)) => Val::Bool(!b),
            _ => {
                let Some(x) = self.value(a, span) else {
                    return Val::Err;
                };
                let t = self.ty(x);
                let d = t.dtype();
                let ok = match op {
                    UnOp::Neg => d != DType::Bool && d != DType::U8,
                    UnOp::Not => d == DType::Bool || d.is_int(),
                };
                if !ok {
                    let what = if op == UnOp::Neg {
                        "negate"
                    } else {
                        "apply `!` to"
                    };
                    return self.error(
                        Diag::new(&codes::BAD_OPERAND, format!("cannot {what} `{t}`"), span)
                            .label(format!("this is {t}"))
                            .help("`-` needs a signed number; `!` needs bool or an integer"),
                    );
                }
                let u = if op == UnOp::Neg {
                    UnaryOp::Neg
                } else {
                    UnaryOp::Not
                };
                self.emit(OpKind::Unary(u, x), t, span)
            }
        }
    }

    pub fn binary(&mut self, op: AstBin, a: Val, sa: Span, b: Val, sb: Span, span: Span) -> Val {
        if matches!(a, Val::Err) || matches!(b, Val::Err) {
            return Val::Err;
        }
        if matches!(a, Val::None) || matches!(b, Val::None) {
            return self.none_operand(op, &a, sa, &b, sb);
        }
        if let Some(v) = self.fold(op, &a, &b, span) {
            return v;
        }
        if matches!(a, Val::Dtype(_)) || matches!(b, Val::Dtype(_)) {
            return self.dtype_operand(op, &a, sa, &b, sb, span);
        }
        let Some((x, y)) = self.unify(a, sa, b, sb, span) else {
            return Val::Err;
        };
        let t = self.ty(x);
        let d = t.dtype();
        let (class, ok) = match op {
            AstBin::Add | AstBin::Sub | AstBin::Mul | AstBin::Div | AstBin::Rem => {
                ("arithmetic", d != DType::Bool)
            }
            AstBin::BitAnd | AstBin::BitOr | AstBin::BitXor => {
                ("bitwise", d.is_int() || d == DType::Bool)
            }
            AstBin::Shl | AstBin::Shr => ("shift", d.is_int()),
            AstBin::And | AstBin::Or => ("logical", d == DType::Bool),
            AstBin::Eq | AstBin::Ne => ("comparison", true),
            AstBin::Lt | AstBin::Le | AstBin::Gt | AstBin::Ge => ("comparison", d != DType::Bool),
        };
        if !ok {
            let help = match class {
                "logical" => "`&&` and `||` take bool; for numbers compare first (`x > 0.0`)",
                "bitwise" | "shift" => {
                    "bitwise operators take integers; use `bitcast` to reach a float's bits"
                }
                _ => "arithmetic takes numbers; convert bool with `as i32`",
            };
            return self.error(
                Diag::new(
                    &codes::BAD_OPERAND,
                    format!("`{}` is not defined for `{d}`", op.symbol()),
                    span,
                )
                .label(format!("{class} operator on {d}"))
                .help(help),
            );
        }
        let bin = |o: BinaryOp| OpKind::Binary(o, x, y);
        let cmp = |o: CmpOp| OpKind::Compare(o, x, y);
        let booly = t.with_dtype(DType::Bool);
        match op {
            AstBin::Add => self.emit(bin(BinaryOp::Add), t, span),
            AstBin::Sub => self.emit(bin(BinaryOp::Sub), t, span),
            AstBin::Mul => self.emit(bin(BinaryOp::Mul), t, span),
            AstBin::Div => self.emit(bin(BinaryOp::Div), t, span),
            AstBin::Rem => self.emit(bin(BinaryOp::Rem), t, span),
            AstBin::BitAnd | AstBin::And => self.emit(bin(BinaryOp::And), t, span),
            AstBin::BitOr | AstBin::Or => self.emit(bin(BinaryOp::Or), t, span),
            AstBin::BitXor => self.emit(bin(BinaryOp::Xor), t, span),
            AstBin::Shl => self.emit(bin(BinaryOp::Shl), t, span),
            AstBin::Shr => self.emit(bin(BinaryOp::Shr), t, span),
            AstBin::Eq => self.emit(cmp(CmpOp::Eq), booly, span),
            AstBin::Ne => self.emit(cmp(CmpOp::Ne), booly, span),
            AstBin::Lt => self.emit(cmp(CmpOp::Lt), booly, span),
            AstBin::Le => self.emit(cmp(CmpOp::Le), booly, span),
            AstBin::Gt => self.emit(cmp(CmpOp::Gt), booly, span),
            AstBin::Ge => self.emit(cmp(CmpOp::Ge), booly, span),
        }
    }

    /// A dtype in an operation other than a dtype query (`T == bf16`): one
    /// diagnostic for the whole expression.
    fn dtype_operand(
        &mut self,
        op: AstBin,
        a: &Val,
        sa: Span,
        b: &Val,
        sb: Span,
        span: Span,
    ) -> Val {
        let both = matches!((a, b), (Val::Dtype(_), Val::Dtype(_)));
        let (bad, bad_span) = if matches!(a, Val::Dtype(_)) && !both {
            (b, sb)
        } else {
            (a, sa)
        };
        let d = if both {
            Diag::new(
                &codes::BAD_OPERAND,
                format!(
                    "dtypes compare only with `==` and `!=`, not `{}`",
                    op.symbol()
                ),
                span,
            )
            .label("a dtype query")
            .help("to compare sizes, compare `bits(T)`")
        } else {
            let what = self.describe(bad);
            Diag::new(
                &codes::WRONG_KIND,
                "a dtype is compared only with another dtype",
                span,
            )
            .label("a dtype query")
            .with(bad_span, format!("this is {what}"))
            .help("write `T == bf16`, or `bits(T)` for its width")
        };
        self.error(d)
    }

    /// Folds an operator on two constants.
    fn fold(&mut self, op: AstBin, a: &Val, b: &Val, span: Span) -> Option<Val> {
        match (a, b) {
            (Val::Int(x), Val::Int(y)) => {
                let sym = match op {
                    AstBin::Add => Some(SymOp::Add),
                    AstBin::Sub => Some(SymOp::Sub),
                    AstBin::Mul => Some(SymOp::Mul),
                    AstBin::Div => Some(SymOp::Div),
                    AstBin::Rem => Some(SymOp::Rem),
                    _ => None,
                };
                if let Some(s) = sym {
                    return Some(match Dim::bin(s, x, y) {
                        Some(d) => Val::Int(d),
                        None => self.error(
                            Diag::new(
                                &codes::CONST_EVAL,
                                "constant arithmetic divides by zero or overflows",
                                span,
                            )
                            .label(format!("{x} {} {y}", op.symbol())),
                        ),
                    });
                }
                let (Some(x), Some(y)) = (x.known(), y.known()) else {
                    // Comparisons of symbolic sizes are decided at build time.
                    return if self.mode == Mode::Const {
                        Some(Val::Err)
                    } else {
                        None
                    };
                };
                Some(match op {
                    AstBin::Eq => Val::Bool(x == y),
                    AstBin::Ne => Val::Bool(x != y),
                    AstBin::Lt => Val::Bool(x < y),
                    AstBin::Le => Val::Bool(x <= y),
                    AstBin::Gt => Val::Bool(x > y),
                    AstBin::Ge => Val::Bool(x >= y),
                    AstBin::BitAnd => Val::Int(Dim::Known(x & y)),
                    AstBin::BitOr => Val::Int(Dim::Known(x | y)),
                    AstBin::BitXor => Val::Int(Dim::Known(x ^ y)),
                    AstBin::Shl => Val::Int(Dim::Known(x.checked_shl(y as u32).unwrap_or(0))),
                    AstBin::Shr => Val::Int(Dim::Known(x.checked_shr(y as u32).unwrap_or(0))),
                    _ => return None,
                })
            }
            (Val::Float(_), Val::Float(_))
            | (Val::Int(_), Val::Float(_))
            | (Val::Float(_), Val::Int(_)) => {
                let f = |v: &Val| match v {
                    Val::Float(x) => Some(*x),
                    Val::Int(d) => d.known().map(|v| v as f64),
                    _ => None,
                };
                let (x, y) = (f(a)?, f(b)?);
                Some(match op {
                    AstBin::Add => Val::Float(x + y),
                    AstBin::Sub => Val::Float(x - y),
                    AstBin::Mul => Val::Float(x * y),
                    AstBin::Div => Val::Float(x / y),
                    AstBin::Rem => Val::Float(x % y),
                    AstBin::Eq => Val::Bool(x == y),
                    AstBin::Ne => Val::Bool(x != y),
                    AstBin::Lt => Val::Bool(x < y),
                    AstBin::Le => Val::Bool(x <= y),
                    AstBin::Gt => Val::Bool(x > y),
                    AstBin::Ge => Val::Bool(x >= y),
                    _ => return None,
                })
            }
            // Dtype queries (`T == bf16`) are decided when the kernel is
            // specialised, like any other comparison of constants.
            (Val::Dtype(x), Val::Dtype(y)) => match op {
                AstBin::Eq => Some(Val::Bool(x == y)),
                AstBin::Ne => Some(Val::Bool(x != y)),
                _ => None,
            },
            (Val::Bool(x), Val::Bool(y)) => Some(match op {
                AstBin::And | AstBin::BitAnd => Val::Bool(*x && *y),
                AstBin::Or | AstBin::BitOr => Val::Bool(*x || *y),
                AstBin::BitXor | AstBin::Ne => Val::Bool(x != y),
                AstBin::Eq => Val::Bool(x == y),
                _ => return None,
            }),
            _ => None,
        }
    }

    /// `v as d` (and `cast(v, d)`).
    pub fn cast(&mut self, v: Val, d: DType, span: Span) -> Val {
        match v {
            Val::Err => Val::Err,
            Val::Int(n) if d.is_float() => match n.known() {
                Some(n) => Val::Float(n as f64),
                None => Val::Err,
            },
            Val::Int(n) if d.is_int() => Val::Int(n),
            Val::Float(x) if d.is_float() => Val::Float(x),
            Val::Float(x) if d.is_int() && x.is_finite() => Val::Int(Dim::Known(x.trunc() as i64)),
            Val::Bool(b) if d.is_int() => Val::Int(Dim::Known(b as i64)),
            Val::Bool(b) if d.is_float() => Val::Float(if b { 1.0 } else { 0.0 }),
            other => {
                let Some(x) = self.value(other, span) else {
                    return Val::Err;
                };
                let t = self.ty(x);
                if t.dtype() == d {
                    return Val::V(x);
                }
                self.emit(OpKind::Cast(x), t.with_dtype(d), span)
            }
        }
    }

    // ---- Refs ----------------------------------------------------------------

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

    fn load(&mut self, base: &Expr, idx: &[ast::Index], span: Span) -> Val {
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

    /// Builds an index map: yields one i32 per array dimension.
    pub fn index_map_func(mut self, exprs: &[Expr], rank: usize) -> Func {
        let mut ys = Vec::new();
        for e in exprs {
            let v = self.expr(e);
            match v {
                Val::Err => {}
                Val::Int(_) | Val::V(_) => {
                    let is_ok = match &v {
                        Val::V(x) => self.ty(*x) == Type::Scalar(DType::I32),
                        _ => true,
                    };
                    if !is_ok {
                        let t = match &v {
                            Val::V(x) => self.ty(*x).to_string(),
                            _ => String::new(),
                        };
                        self.error(
                            Diag::new(
                                &codes::INDEX_MAP_TYPE,
                                format!("a block index must be a scalar i32, found `{t}`"),
                                e.span,
                            )
                            .label("not a scalar i32"),
                        );
                    } else if let Some(x) = self.value(v, e.span) {
                        ys.push(x);
                    }
                }
                other => {
                    let d = self.describe(&other);
                    self.error(
                        Diag::new(&codes::INDEX_MAP_TYPE, format!("a block index must be a scalar i32, found {d}"), e.span)
                            .label("not a block index")
                            .help("index maps compute block indices from grid indices, constants and prefetch values"),
                    );
                }
            }
        }
        if ys.len() != rank || exprs.len() != rank {
            // The arity error was reported by the header; keep the IR valid.
            ys.clear();
            for _ in 0..rank {
                if let Some(z) =
                    self.literal(Literal::Int(0), Type::Scalar(DType::I32), Span::default())
                {
                    ys.push(z);
                }
            }
        }
        let entry = self.cur;
        self.f.blocks[entry].yields = ys;
        self.f
    }

    /// Builds the kernel body (its tail value, if any, is discarded).
    pub fn kernel_body(&mut self, body: &ast::Block) {
        let _ = self.block_value(body);
    }

    // ---- Calls -----------------------------------------------------------------

    fn call(&mut self, p: &ast::Path, args: &[ast::Arg], span: Span) -> Val {
        if p.segments.len() == 1 {
            if let Some(Binding::Fn(f)) = self.lookup_local(&p.segments[0].name) {
                return self.call_local(f, args, span);
            }
        }
        if p.segments.len() == 1 && self.lookup_local(&p.segments[0].name).is_some() {
            return self.error(
                Diag::new(
                    &codes::WRONG_KIND,
                    format!("`{}` is not a function", p.segments[0].name),
                    p.span,
                )
                .label("a local name shadows this")
                .help("rename the local binding"),
            );
        }
        match self.ck.program.lookup(self.module, &p.segments) {
            Some(ItemRef::Fn(m, i)) => return self.call_fn(m, i, args, span),
            Some(_) => {
                return self.error(
                    Diag::new(
                        &codes::WRONG_KIND,
                        format!("`{}` is not a function", p.to_string_path()),
                        p.span,
                    )
                    .label("cannot be called"),
                )
            }
            None => {}
        }
        if p.segments.len() == 1 {
            if let Some(v) = self.builtin(&p.segments[0].name, args, span) {
                return v;
            }
        }
        let help = self.suggest(&p.last().name);
        let mut d = Diag::new(
            &codes::UNKNOWN_NAME,
            format!("unknown function `{}`", p.to_string_path()),
            p.span,
        )
        .label("not a function or builtin");
        d = d.help(help.unwrap_or_else(|| {
            "builtins are listed in docs/language.md; module functions need `use`".into()
        }));
        self.error(d)
    }

    /// Inlines a call of a `.pk` function with the arguments' types.
    fn call_fn(&mut self, m: ModId, i: usize, args: &[ast::Arg], span: Span) -> Val {
        let program = self.ck.program;
        let Some(decl) = program.fn_decl(m, i) else {
            return Val::Err;
        };
        if self.ck.call_stack.contains(&(m, i)) {
            return self.error(
                Diag::new(
                    &codes::CYCLE,
                    format!("`{}` calls itself", decl.name.name),
                    span,
                )
                .label("recursive call")
                .with(decl.name.span, "defined here")
                .help("pk functions are inlined; write the repetition as a `for` loop"),
            );
        }
        // The callee sees its own module and its parameters, not the caller's locals.
        self.inline(decl, m, (m, i), HashMap::new(), args, span)
    }

    /// Inlines `decl` at a call: binds the arguments (by position, keyword
    /// or default) in a scope on top of `base` and checks the body there.
    pub(super) fn inline(
        &mut self,
        decl: &ast::FnDecl,
        m: ModId,
        key: (ModId, usize),
        base: HashMap<String, Binding>,
        args: &[ast::Arg],
        span: Span,
    ) -> Val {
        let bound = match crate::resolve::bind_args(decl, args, span) {
            Ok(b) => b,
            Err(d) => return self.error(*d),
        };
        let mut vals: Vec<Option<(Val, Span)>> = args
            .iter()
            .map(|a| Some((self.expr(&a.value), a.value.span)))
            .collect();
        let saved_scopes = std::mem::replace(&mut self.scopes, vec![base, HashMap::new()]);
        let saved_module = std::mem::replace(&mut self.module, m);
        self.ck.call_stack.push(key);
        for g in &decl.generics {
            self.bind(&g.name, Binding::Val(Val::Unit));
        }
        let mut ok = true;
        for (p, slot) in decl.params.iter().zip(bound) {
            // A default is evaluated in the callee's scope, where the
            // parameters before it are already bound.
            let (v, vs) = match (slot.and_then(|k| vals[k].take()), &p.default) {
                (Some(a), _) => a,
                (None, Some(d)) => (self.expr(d), d.span),
                (None, None) => (Val::Err, span),
            };
            let v = match &p.ty {
                Some(t) => match self.match_type(t, v, vs, &decl.generics) {
                    Some(v) => v,
                    None => {
                        ok = false;
                        Val::Err
                    }
                },
                None => v,
            };
            self.bind(&p.name.name, Binding::Val(v));
        }
        let body_start = self.ck.diags.len();
        let mut result = if ok {
            self.block_value(&decl.body)
        } else {
            Val::Err
        };
        if let (true, Some(rt)) = (ok, &decl.ret) {
            result = self.check_ret(rt, result, decl.body.span);
        }
        // An error in the body depends on this call's arguments: name the
        // call site, as each enclosing call will (rustc's "in this macro
        // invocation"). The kernel adds its parameter values once at the end.
        let call = format!("in this call of `{}`", decl.name.name);
        for d in &mut self.ck.diags[body_start..] {
            d.secondary.push((span, call.clone()));
        }
        self.ck.call_stack.pop();
        if self.ck.call_stack.is_empty() {
            self.ck.inlined.extend(body_start..self.ck.diags.len());
        }
        self.module = saved_module;
        self.scopes = saved_scopes;
        result
    }

    /// Matches an argument against a parameter's type pattern, binding
    /// generic names; constants are converted to the pattern's dtype.
    fn match_type(
        &mut self,
        t: &ast::TypeExpr,
        v: Val,
        vs: Span,
        generics: &[ast::Ident],
    ) -> Option<Val> {
        let is_generic = |n: &str| generics.iter().any(|g| g.name == n);
        let actual: Option<Type> = match &v {
            Val::V(x) => Some(self.ty(*x)),
            _ => None,
        };
        // Dtype.
        let dname = &t.dtype.name;
        let want_dtype: Option<DType> = if is_generic(dname) {
            match self.lookup_local(dname) {
                Some(Binding::Val(Val::Dtype(d))) => Some(d),
                _ => {
                    if let Some(a) = &actual {
                        self.bind(dname, Binding::Val(Val::Dtype(a.dtype())));
                    }
                    actual.as_ref().map(|a| a.dtype())
                }
            }
        } else {
            Some(self.dtype_name(&t.dtype)?)
        };
        let v = match (&actual, want_dtype) {
            (Some(a), Some(d)) if a.dtype() != d => {
                self.error(
                    Diag::new(
                        &codes::PATTERN_MISMATCH,
                        format!("expected `{d}`, found `{a}`"),
                        vs,
                    )
                    .label(format!("this is {a}"))
                    .with(t.span, "parameter type"),
                );
                return None;
            }
            (None, Some(d)) if v.is_const() => match self.value_as(v, d, vs) {
                Some(x) => Val::V(x),
                None => return None,
            },
            _ => v,
        };
        let Some(shape) = &t.shape else {
            return Some(v);
        };
        let actual_shape: Vec<Dim> = match &v {
            Val::V(x) => self.ty(*x).shape().to_vec(),
            _ => Vec::new(),
        };
        let rest = shape
            .iter()
            .position(|d| matches!(d, ast::DimExpr::Rest(_)));
        let fixed = shape.len() - usize::from(rest.is_some());
        let rank_ok = if rest.is_some() {
            actual_shape.len() >= fixed
        } else {
            actual_shape.len() == fixed
        };
        if !rank_ok {
            self.error(
                Diag::new(
                    &codes::PATTERN_MISMATCH,
                    format!(
                        "expected rank {fixed}, found shape [{}]",
                        ir::shape_str(&actual_shape)
                    ),
                    vs,
                )
                .label("wrong rank")
                .with(t.span, "parameter type"),
            );
            return None;
        }
        let mut ai = 0usize;
        for d in shape {
            match d {
                ast::DimExpr::Rest(_) => ai += actual_shape.len() - fixed,
                ast::DimExpr::Expr(e) => {
                    let have = actual_shape[ai].clone();
                    ai += 1;
                    if let ExprKind::Name(p) = &e.kind {
                        if p.segments.len() == 1 && is_generic(&p.segments[0].name) {
                            let g = &p.segments[0].name;
                            match self.lookup_local(g) {
                                Some(Binding::Val(Val::Int(prev))) if prev != have => {
                                    self.error(
                                        Diag::new(
                                            &codes::PATTERN_MISMATCH,
                                            format!("`{g}` is {prev} here but {have} elsewhere"),
                                            vs,
                                        )
                                        .label("inconsistent size")
                                        .with(t.span, "parameter type"),
                                    );
                                    return None;
                                }
                                Some(Binding::Val(Val::Int(_))) => {}
                                _ => self.bind(g, Binding::Val(Val::Int(have))),
                            }
                            continue;
                        }
                    }
                    let want = self.const_dim(e, "a dimension")?;
                    if want != have {
                        self.error(
                            Diag::new(
                                &codes::PATTERN_MISMATCH,
                                format!("expected size {want}, found {have}"),
                                vs,
                            )
                            .label("wrong size")
                            .with(t.span, "parameter type"),
                        );
                        return None;
                    }
                }
            }
        }
        Some(v)
    }

    pub(super) fn check_return(&mut self, rt: &ast::TypeExpr, v: Val, span: Span) -> Val {
        let actual = match &v {
            Val::V(x) => self.ty(*x),
            Val::Err => return Val::Err,
            _ => return v,
        };
        let d = match self.lookup_local(&rt.dtype.name) {
            Some(Binding::Val(Val::Dtype(d))) => Some(d),
            _ => DType::from_name(&rt.dtype.name),
        };
        if let Some(d) = d {
            if d != actual.dtype() {
                return self.error(
                    Diag::new(
                        &codes::RETURN_MISMATCH,
                        format!("function returns `{actual}` but declares `{d}`"),
                        span,
                    )
                    .label(format!("body produces {actual}"))
                    .with(rt.span, "declared here"),
                );
            }
        }
        if let Some(want) = self.declared_shape(rt) {
            let have = actual.shape();
            let agrees = want.len() == have.len()
                && want.iter().zip(have).all(|(w, h)| match (w, h.known()) {
                    (Some(w), Some(h)) => *w == h,
                    _ => true,
                });
            if !agrees {
                let shown: Vec<String> = want
                    .iter()
                    .map(|w| w.map_or("_".to_string(), |v| v.to_string()))
                    .collect();
                return self.error(
                    Diag::new(
                        &codes::RETURN_MISMATCH,
                        format!(
                            "function returns `{actual}` but declares shape [{}]",
                            shown.join(", ")
                        ),
                        span,
                    )
                    .label(format!("body produces {actual}"))
                    .with(rt.span, "declared here"),
                );
            }
        }
        v
    }

    /// The sizes a declared return type fixes: `None` when it says nothing
    /// about the shape (`-> T` or a `..` pattern); a dimension that is not a
    /// known constant (a name bound nowhere) matches any size.
    fn declared_shape(&mut self, rt: &ast::TypeExpr) -> Option<Vec<Option<i64>>> {
        let dims = rt.shape.as_ref()?;
        let mut out = Vec::with_capacity(dims.len());
        for d in dims {
            let ast::DimExpr::Expr(e) = d else {
                return None;
            };
            let before = self.ck.diags.len();
            let v = self.const_expr(e);
            // A size the return type cannot fix is not an error here: the
            // shape check is best-effort on top of the dtype check.
            self.ck.diags.truncate(before);
            out.push(match v {
                Val::Int(d) => d.known(),
                _ => None,
            });
        }
        Some(out)
    }
}

/// Levenshtein distance, for suggestions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

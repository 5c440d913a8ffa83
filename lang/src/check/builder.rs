//! The expression builder: the state of one function being built (scopes,
//! mutable slots, the mode), op emission, compile-time constants, name
//! lookup and the dispatch of each expression kind. The rest of building
//! an expression is beside it: operators and casts in `arith.rs`, ref
//! windows in `windows.rs`, views in `views.rs` and `reshape.rs`, calls of
//! `.pk` functions in `calls.rs`, statements and control flow in
//! `stmt.rs`, builtin functions in `builtins/`.

use super::value::Val;
use super::Checker;
use crate::ast::{self, Expr, ExprKind};
use crate::diag::{codes, Diag};
use crate::ir::{Arena, BlockId, DType, Dim, Func, Literal, OpKind, RefDecl, RefId, Type, Value};
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
    /// The kernel's mesh, for `device_id(..)`, `mesh_size` and the checks
    /// of device ids.
    pub mesh: Vec<crate::ir::MeshAxis>,
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
            mesh: Vec::new(),
        }
    }

    /// Binds each mesh axis name to this device's coordinate along it,
    /// `(device_id / stride) % size` with row-major strides (Pallas'
    /// `lax.axis_index` over a mesh), computed at the start of the block.
    pub fn bind_mesh(&mut self, mesh: &[crate::ir::MeshAxis], span: Span) {
        self.mesh = mesh.to_vec();
        if mesh.is_empty() || self.mode == Mode::Const {
            return;
        }
        let i32t = Type::Scalar(DType::I32);
        let Some(id) = self.emit_v(OpKind::DeviceId, i32t.clone(), span) else {
            return;
        };
        for (i, a) in mesh.iter().enumerate() {
            let stride: i64 = mesh[i + 1..]
                .iter()
                .map(|b| self.int_value(&b.size).max(1))
                .product();
            let size = self.int_value(&a.size).max(1);
            let (Some(st), Some(sz)) = (
                self.literal(Literal::Int(stride), i32t.clone(), span),
                self.literal(Literal::Int(size), i32t.clone(), span),
            ) else {
                return;
            };
            let Some(q) = self.emit_v(
                OpKind::Binary(crate::ir::BinaryOp::Div, id, st),
                i32t.clone(),
                span,
            ) else {
                return;
            };
            let Some(c) = self.emit_v(
                OpKind::Binary(crate::ir::BinaryOp::Rem, q, sz),
                i32t.clone(),
                span,
            ) else {
                return;
            };
            self.scopes[0].insert(a.name.clone(), Binding::Val(Val::V(c)));
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
    pub(super) fn suggest(&self, name: &str) -> Option<String> {
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
        let v = self.expr_kind(e);
        if self.ck.types.is_some() {
            self.record(e.span, &v);
        }
        v
    }

    /// Notes what `v` is at `span` when the checker records types.
    pub fn record(&mut self, span: Span, v: &Val) {
        let note = match v {
            Val::V(x) => self.ty(*x).to_string(),
            Val::Int(d) => format!("int = {d}"),
            Val::Float(x) => format!("float = {x}"),
            Val::Bool(b) => format!("bool = {b}"),
            Val::Dtype(d) => format!("dtype = {d}"),
            Val::Ref(r) => match self.refs.get(*r) {
                Some(decl) => decl.ty.to_string(),
                None => return,
            },
            Val::View(sub) => match self.refs.get(sub.target) {
                Some(decl) => format!(
                    "view of `{}`: ref<{} {}[{}]>",
                    decl.name,
                    decl.ty.space.name(),
                    decl.ty.dtype,
                    crate::ir::types::shape_str(&sub.shape)
                ),
                None => return,
            },
            Val::Tuple(items) => {
                let parts: Vec<String> = items.iter().map(|(x, _)| self.describe(x)).collect();
                format!("({})", parts.join(", "))
            }
            Val::None => "none".to_string(),
            Val::List(_) | Val::Unit | Val::Err => return,
        };
        if let Some(t) = self.ck.types.as_mut() {
            t.push((span, note));
        }
    }

    fn expr_kind(&mut self, e: &Expr) -> Val {
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

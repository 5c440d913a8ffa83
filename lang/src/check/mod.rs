//! The type checker: one kernel specialisation of a resolved program to
//! typed Tile IR, enforcing the language's typing rules and the TPU's rules
//! for the selected target.
//!
//! The header (parameters, grid, operands, scratch) is checked here; bodies
//! are built by [`builder::Builder`]; the TPU rules that need the whole
//! header (tiling, VMEM budget) are in [`rules`].

mod align;
mod arith;
mod assert;
pub mod builder;
pub mod builtins;
mod calls;
mod dyngrid;
mod header;
mod optional;
mod ragged;
mod reshape;
pub mod rules;
mod slice;
mod stmt;
mod strided;
mod tunable;
mod tuple;
mod unroll;
pub mod value;
mod views;
mod when;
mod windows;

/// Whether `name` is a builtin function.
pub fn is_builtin(name: &str) -> bool {
    builtins::find(name).is_some()
}

/// Every builtin function, for editors.
pub fn builtins_table() -> &'static [builtins::Builtin] {
    builtins::BUILTINS
}

use crate::ast::{self, Clause, Expr, ExprKind};
use crate::diag::{codes, Diag};
use crate::ir::{self, DType, Func, ParamValue};
use crate::resolve::{ModId, Program};
use crate::span::{FileId, Span};
use crate::target::Target;
use builder::{Binding, Builder};
use header::KernelCx;
use std::collections::HashMap;
use value::Val;

/// How a kernel is specialised.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    pub target: Target,
    /// `-p NAME=VALUE` pairs, values as written.
    pub params: Vec<(String, String)>,
    /// See [`crate::Options::param_origins`].
    pub param_origins: Vec<(String, String)>,
    /// Whether every parameter must have a value (build, run, emit).
    pub specialise: bool,
}

/// State shared by everything checked in one compilation.
pub struct Checker<'p> {
    pub program: &'p Program,
    pub target: Target,
    pub diags: Vec<Diag>,
    /// Functions being inlined, to report recursion.
    pub call_stack: Vec<(ModId, usize)>,
    /// Constants being evaluated, to report cycles; and their values.
    pub const_stack: Vec<(ModId, usize)>,
    pub const_cache: HashMap<(ModId, usize), Val>,
    /// The file `-p` values are parsed in.
    pub param_file: Option<FileId>,
    /// See [`crate::Options::skip_tpu_rules`].
    pub skip_tpu_rules: bool,
    /// The names of the kernel being checked that hold run-time values
    /// (operands, grid indices, scratch), with their declarations and what
    /// they are, to explain their use in a compile-time expression.
    pub runtime_names: Vec<(String, Span, &'static str)>,
    /// The diagnostics (indices into `diags`) reported inside inlined
    /// function bodies, which get a note naming the kernel's parameters.
    pub inlined: Vec<usize>,
    /// The parameter values of the kernel being checked, for the notes of a
    /// failed static assertion.
    pub shown_params: Vec<assert::ParamShown>,
    /// When set (by the editor analysis, [`crate::analysis`]), what each
    /// checked expression is, at its span: a type (`f32[128, 128]`), a
    /// compile-time constant or a ref. Recording never changes a
    /// diagnostic; an expression inlined twice is recorded twice.
    pub types: Option<Vec<(Span, String)>>,
}

impl<'p> Checker<'p> {
    pub fn new(program: &'p Program, target: Target) -> Checker<'p> {
        Checker {
            program,
            target,
            diags: Vec::new(),
            call_stack: Vec::new(),
            const_stack: Vec::new(),
            const_cache: HashMap::new(),
            param_file: None,
            skip_tpu_rules: false,
            runtime_names: Vec::new(),
            inlined: Vec::new(),
            shown_params: Vec::new(),
            types: None,
        }
    }

    pub fn error(&mut self, d: Diag) {
        self.diags.push(d);
    }

    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(|d| d.is_error())
    }
}

/// Checks one kernel of module `m` and returns its IR, or `None` when errors
/// were reported to `ck`. The header is checked stage by stage
/// ([`header::KernelCx`]), then the TPU rules that need the whole header,
/// then the body.
pub fn check_kernel(
    ck: &mut Checker,
    m: ModId,
    decl: &ast::KernelDecl,
    spec: &Spec,
    param_values: &[(String, Expr2)],
) -> Option<ir::Kernel> {
    let before = ck.diags.len();
    ck.runtime_names = runtime_names(decl);
    ck.inlined.clear();
    let mut cx = KernelCx::new(m, decl);

    let params = cx.params(ck, spec, param_values);
    if spec.specialise
        && params.iter().any(|p| p.value == ParamValue::Unbound)
        && ck.diags.len() > before
    {
        instantiation_notes(ck, &decl.name.name, &params);
        return None;
    }
    ck.shown_params = params
        .iter()
        .filter(|p| p.value != ParamValue::Unbound)
        .map(|p| assert::ParamShown {
            name: p.name.clone(),
            value: p.value.to_string(),
            origin: origin(spec, param_values, &p.name),
        })
        .collect();
    let clauses = cx.clauses(ck);
    // A false header assertion explains what the rest would only report the
    // consequences of (a block that does not divide, a budget overrun).
    if !cx.asserts(ck, &clauses.asserts) || !cx.wheres(ck, &clauses.wheres) {
        instantiation_notes(ck, &decl.name.name, &params);
        return None;
    }
    cx.mesh(ck, &clauses.mesh);
    cx.mesh_span = clauses.mesh_span.unwrap_or(decl.span);
    let collective_id = cx.collective_id(ck, clauses.collective_id, &clauses.scratch);
    let (mut grid, ragged) = cx.grid(ck, &clauses.grid, &clauses.prefetch);
    let grid_names: Vec<String> = grid.iter().map(|a| a.name.clone()).collect();
    let mut operands = cx.operands(
        ck,
        &clauses.prefetch,
        (&clauses.grid, &mut grid),
        &grid_names,
    );
    cx.aliases(ck, &mut operands);
    let scratch = cx.scratch(ck, &clauses.scratch);
    let vmem_limit = cx.vmem_limit(ck, clauses.vmem_limit);

    let mut kernel = ir::Kernel {
        name: decl.name.name.clone(),
        docs: decl.docs.clone(),
        params,
        grid,
        operands,
        scratch,
        refs: cx.refs,
        body: Func::default(),
        vmem_limit,
        mesh: cx.mesh.clone(),
        collective_id,
        span: decl.span,
    };
    if !ck.diags[before..].iter().any(|d| d.is_error()) && !ck.skip_tpu_rules {
        rules::check_header(ck, &kernel, decl, &ragged);
    }
    let (body, views) = {
        let mut b = Builder::body(ck, m, &kernel.refs, &cx.bindings, &grid_names);
        b.grid_extents = cx.grid_extents.clone();
        b.grid_dynamic = cx.grid_dynamic.clone();
        b.bind_mesh(&cx.mesh, cx.mesh_span);
        b.kernel_body(&decl.body);
        b.finish_with_refs()
    };
    kernel.body = body;
    if let Some(refs) = views {
        kernel.refs = refs;
    }
    if !ck.diags[before..].iter().any(|d| d.is_error()) && !ck.skip_tpu_rules {
        align::check(ck, &kernel);
        rules::check_body_vmem(ck, &kernel, decl);
    }
    instantiation_notes(ck, &kernel.name, &kernel.params);
    if ck.diags[before..].iter().any(|d| d.is_error()) {
        return None;
    }
    Some(kernel)
}

/// Checks only the parameters of a kernel (values, kinds, candidates) and
/// returns them; see [`crate::kernel_params`].
pub fn kernel_params(
    ck: &mut Checker,
    m: ModId,
    decl: &ast::KernelDecl,
    spec: &Spec,
    param_values: &[(String, Expr2)],
) -> Vec<ir::Param> {
    KernelCx::new(m, decl).params(ck, spec, param_values)
}

/// Whether kernel `decl`'s `where` constraints hold with `param_values`
/// (the header's other rules are not checked). A configuration whose
/// parameters themselves have errors counts as holding: the full check
/// reports those. What the tuner filters a space by before it samples it.
pub fn wheres_hold(
    ck: &mut Checker,
    m: ModId,
    decl: &ast::KernelDecl,
    spec: &Spec,
    param_values: &[(String, Expr2)],
) -> bool {
    let mut cx = KernelCx::new(m, decl);
    cx.params(ck, spec, param_values);
    if ck.has_errors() {
        return true;
    }
    let clauses = cx.clauses(ck);
    if ck.has_errors() {
        return true;
    }
    cx.wheres(ck, &clauses.wheres)
}

/// Where the value of parameter `name` came from: given (on the command
/// line, or by a program that described its origin) or the default.
fn origin(spec: &Spec, param_values: &[(String, Expr2)], name: &str) -> assert::Origin {
    if !param_values.iter().any(|(n, _)| n == name) {
        return assert::Origin::Default;
    }
    match spec.param_origins.iter().find(|(n, _)| n == name) {
        Some((_, words)) => assert::Origin::Described(words.clone()),
        None => assert::Origin::CommandLine,
    }
}

/// Adds to each diagnostic from an inlined function body the kernel and
/// parameter values it was instantiated with: a function is checked once per
/// call, so the same body can be right for one `-p` value and wrong for
/// another.
fn instantiation_notes(ck: &mut Checker, kernel: &str, params: &[ir::Param]) {
    let values: Vec<String> = params
        .iter()
        .filter(|p| p.value != ParamValue::Unbound)
        .map(|p| format!("{}={}", p.name, p.value))
        .collect();
    let note = if values.is_empty() {
        format!("instantiated by kernel `{kernel}`")
    } else {
        format!(
            "instantiated by kernel `{kernel}` with {}",
            values.join(", ")
        )
    };
    for i in std::mem::take(&mut ck.inlined) {
        if let Some(d) = ck.diags.get_mut(i) {
            d.notes.push(note.clone());
        }
    }
}

/// The kernel's names that stand for run-time values, with what they are.
fn runtime_names(decl: &ast::KernelDecl) -> Vec<(String, Span, &'static str)> {
    let mut out: Vec<(String, Span, &'static str)> = Vec::new();
    let mut add = |id: &ast::Ident, kind| out.push((id.name.clone(), id.span, kind));
    for c in &decl.clauses {
        match c {
            Clause::Grid(g, _) => g.iter().for_each(|d| add(&d.name, "a grid index")),
            Clause::Prefetch(p, _) => p
                .iter()
                .for_each(|d| add(&d.name, "a scalar-prefetch operand")),
            Clause::Scratch(x, _) => x.iter().for_each(|d| add(&d.name, "a scratch buffer")),
            Clause::Mesh(axes, _) => axes.iter().for_each(|a| add(&a.name, "a mesh coordinate")),
            Clause::VmemLimit(..)
            | Clause::CollectiveId(..)
            | Clause::Assert(_)
            | Clause::Where(..) => {}
        }
    }
    decl.inputs.iter().for_each(|o| add(&o.name, "an input"));
    decl.outputs.iter().for_each(|o| add(&o.name, "an output"));
    out
}

/// A `-p` value: its parsed expression and the text as written.
#[derive(Clone)]
pub struct Expr2 {
    pub expr: ast::Expr,
    pub text: String,
}

pub(super) fn missing_param(p: &ast::Ident, decl: &ast::KernelDecl) -> Diag {
    Diag::new(
        &codes::MISSING_PARAM,
        format!(
            "parameter `{}` of kernel `{}` has no value",
            p.name, decl.name.name
        ),
        p.span,
    )
    .label("no default")
    .help(format!(
        "pass it with `-p {}=VALUE`, or give it a default in the kernel (`{} = ...`)",
        p.name, p.name
    ))
}

/// The first name in a `-p` value that is neither a dtype nor an earlier
/// parameter (`-p bm=big`).
pub(super) fn unknown_name<'a>(
    e: &'a Expr,
    bindings: &[(String, Binding)],
) -> Option<&'a ast::Ident> {
    match &e.kind {
        ExprKind::Name(p) if p.segments.len() == 1 => {
            let id = &p.segments[0];
            let known = DType::from_name(&id.name).is_some()
                || id.name == "none"
                || bindings.iter().any(|(n, _)| *n == id.name);
            (!known).then_some(id)
        }
        ExprKind::Unary(_, a) | ExprKind::Cast(a, _) => unknown_name(a, bindings),
        ExprKind::Binary(_, a, b) => {
            unknown_name(a, bindings).or_else(|| unknown_name(b, bindings))
        }
        _ => None,
    }
}

/// The diagnostic for a dtype name pk knows but the TPU does not support
/// (`f64`, `u32`, ...), or `None` for any other name. Every place a dtype
/// can be written (declarations, casts, `bitcast`, `-p`) reports it this way.
pub fn unsupported_dtype(name: &str, span: Span) -> Option<Diag> {
    let why = match name {
        "f64" | "i64" | "u64" | "c64" | "c128" => "64-bit types do not exist on the TPU",
        "f16" | "u16" | "u32" => "not supported by Mosaic",
        _ => return None,
    };
    Some(
        Diag::new(
            &codes::WIDE_TYPE,
            format!("`{name}` is not a TPU dtype"),
            span,
        )
        .label(why)
        .help("use f32, bf16, i32, i16, i8 or u8"),
    )
}

/// Describes a parameter value of the wrong kind. A number given with `-p`
/// is quoted as written (`30.0`, not `30`), so the message shows what is
/// wrong with it.
pub(super) fn describe_const(v: &Val, given: Option<&Expr2>) -> String {
    match v {
        Val::Int(d) => format!("the integer `{d}`"),
        Val::Float(_) if given.is_some() => {
            format!("the number `{}`", given.map_or("", |g| g.text.trim()))
        }
        Val::Float(x) if x.is_finite() && x.fract() == 0.0 => format!("the number `{x:.1}`"),
        Val::Float(x) => format!("the number `{x}`"),
        Val::Bool(b) => format!("`{b}`"),
        Val::Dtype(d) => format!("the dtype `{d}`"),
        _ => "not a constant".to_string(),
    }
}

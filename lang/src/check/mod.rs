//! The type checker: one kernel specialisation of a resolved program to
//! typed Tile IR, enforcing the language's typing rules and the TPU's rules
//! for the selected target.
//!
//! The header (parameters, grid, operands, scratch) is checked here; bodies
//! are built by [`builder::Builder`]; the TPU rules that need the whole
//! header (tiling, VMEM budget) are in [`rules`].

pub mod builder;
mod builtins;
pub mod rules;
mod stmt;
pub mod value;

/// Every builtin function name.
pub fn builtins_names() -> &'static [&'static str] {
    builtins::NAMES
}

use crate::ast::{self, BlockDim as AstBlockDim, Clause, Expr, ExprKind, ParamKind, Placement};
use crate::diag::{codes, Diag};
use crate::ir::{
    self, Arena, BlockDim, DType, Dim, Func, ParamValue, RefDecl, RefOrigin, RefType, Role, Space,
};
use crate::resolve::{ModId, Program};
use crate::span::{FileId, Span};
use crate::target::Target;
use builder::{Binding, Builder};
use std::collections::HashMap;
use value::Val;

/// How a kernel is specialised.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    pub target: Target,
    /// `-p NAME=VALUE` pairs, values as written.
    pub params: Vec<(String, String)>,
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
        }
    }

    pub fn error(&mut self, d: Diag) {
        self.diags.push(d);
    }

    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(|d| d.is_error())
    }
}

/// The checked kernel header: what the body builder sees by name.
struct Header {
    bindings: Vec<(String, Binding)>,
}

/// Checks one kernel of module `m` and returns its IR, or `None` when errors
/// were reported to `ck`.
pub fn check_kernel(
    ck: &mut Checker,
    m: ModId,
    decl: &ast::KernelDecl,
    spec: &Spec,
    param_values: &[(String, Expr2)],
) -> Option<ir::Kernel> {
    let before = ck.diags.len();
    ck.runtime_names = runtime_names(decl);
    let mut refs: Arena<RefDecl> = Arena::new();
    let mut header = Header {
        bindings: Vec::new(),
    };
    let mut seen: HashMap<String, Span> = HashMap::new();
    let mut declare = |ck: &mut Checker, name: &ast::Ident| {
        if let Some(first) = seen.get(&name.name) {
            ck.error(
                Diag::new(&codes::DUPLICATE, format!("`{}` is declared twice in kernel", name.name), name.span)
                    .label("second declaration")
                    .with(*first, "first declared here")
                    .help("parameters, operands, grid indices and scratch buffers share one namespace; rename one"),
            );
        } else {
            seen.insert(name.name.clone(), name.span);
        }
    };

    // Parameters, in order: each default may use the ones before it.
    let mut params = Vec::new();
    for p in &decl.params {
        declare(ck, &p.name);
        let given = param_values
            .iter()
            .find(|(n, _)| *n == p.name.name)
            .map(|(_, e)| e);
        let val =
            {
                let mut b = Builder::constant(ck, m, &refs, &header.bindings);
                match (given, &p.default) {
                    (Some(e), _) => match unknown_name(&e.expr, &header.bindings) {
                        Some(bad) if unsupported_dtype(&bad.name, bad.span).is_some() => {
                            b.error(unsupported_dtype(&bad.name, bad.span).expect("checked above"))
                        }
                        Some(bad) => {
                            let want = if p.kind == ParamKind::Int {
                                "an integer"
                            } else {
                                "a dtype"
                            };
                            b.error(
                            Diag::new(
                                &codes::BAD_PARAM_VALUE,
                                format!("parameter `{}` takes {want}", p.name.name),
                                bad.span,
                            )
                            .label(format!("`{}` is not a number, dtype or parameter", bad.name))
                            .help(
                                "values are integers, integer expressions of earlier parameters \
                                 (`4 * bm`) or dtype names (`bf16`)",
                            ),
                        )
                        }
                        None => b.const_expr(&e.expr),
                    },
                    (None, Some(d)) => b.const_expr(d),
                    (None, None) => Val::Unit,
                }
            };
        let (bound, value) = match (p.kind, val) {
            (ParamKind::Int, Val::Int(d)) => (
                Val::Int(d.clone()),
                d.known()
                    .map(ParamValue::Int)
                    .unwrap_or(ParamValue::Unbound),
            ),
            (ParamKind::Dtype, Val::Dtype(d)) if !ck.target.supports(d) => {
                let t = ck.target;
                let span = given
                    .map(|e| e.expr.span)
                    .or(p.default.as_ref().map(|d| d.span))
                    .unwrap_or(p.span);
                ck.error(
                    Diag::new(
                        &codes::DTYPE_TARGET,
                        format!("`{d}` is not supported on {t}"),
                        span,
                    )
                    .label(format!("no {d} on this generation"))
                    .with(p.name.span, "parameter declared here")
                    .help("fp8 types need v5e or later; pick another --target or dtype"),
                );
                (Val::Err, ParamValue::Unbound)
            }
            (ParamKind::Dtype, Val::Dtype(d)) => (Val::Dtype(d), ParamValue::Dtype(d)),
            (ParamKind::Int, Val::Unit) => {
                if spec.specialise {
                    ck.error(missing_param(&p.name, decl));
                }
                (Val::Int(Dim::param(&p.name.name)), ParamValue::Unbound)
            }
            (ParamKind::Dtype, Val::Unit) => {
                ck.error(missing_param(&p.name, decl));
                (Val::Err, ParamValue::Unbound)
            }
            (_, Val::Err) => (Val::Err, ParamValue::Unbound),
            (kind, other) => {
                let span = given
                    .map(|e| e.expr.span)
                    .or(p.default.as_ref().map(|d| d.span))
                    .unwrap_or(p.span);
                let want = if kind == ParamKind::Int {
                    "an integer"
                } else {
                    "a dtype"
                };
                ck.error(
                    Diag::new(
                        &codes::BAD_PARAM_VALUE,
                        format!("parameter `{}` takes {want}", p.name.name),
                        span,
                    )
                    .label(format!("this is {}", describe_const(&other, given)))
                    .with(p.name.span, "parameter declared here"),
                );
                (Val::Err, ParamValue::Unbound)
            }
        };
        header
            .bindings
            .push((p.name.name.clone(), Binding::Val(bound)));
        params.push(ir::Param {
            name: p.name.name.clone(),
            value,
            docs: p.docs.clone(),
        });
    }
    if spec.specialise
        && params.iter().any(|p| p.value == ParamValue::Unbound)
        && ck.diags.len() > before
    {
        return None;
    }

    // Clauses.
    let mut grid_decls: Vec<&ast::GridDim> = Vec::new();
    let mut prefetch: Vec<&ast::PrefetchDecl> = Vec::new();
    let mut scratch_decls: Vec<&ast::ScratchDecl> = Vec::new();
    let mut vmem_limit_expr = None;
    let mut seen_clause: HashMap<&'static str, Span> = HashMap::new();
    for c in &decl.clauses {
        let (name, span) = match c {
            Clause::Grid(g, s) => {
                grid_decls.extend(g.iter());
                ("grid", *s)
            }
            Clause::Prefetch(p, s) => {
                prefetch.extend(p.iter());
                ("prefetch", *s)
            }
            Clause::Scratch(x, s) => {
                scratch_decls.extend(x.iter());
                ("scratch", *s)
            }
            Clause::VmemLimit(e, s) => {
                vmem_limit_expr = Some(e);
                ("vmem_limit", *s)
            }
        };
        if let Some(first) = seen_clause.insert(name, span) {
            ck.error(
                Diag::new(
                    &codes::DUPLICATE,
                    format!("`{name}` clause given twice"),
                    span,
                )
                .label("second clause")
                .with(first, "first here")
                .help("merge the two clauses into one"),
            );
        }
    }

    // Grid.
    let mut grid = Vec::new();
    let mut ragged = false;
    for g in &grid_decls {
        declare(ck, &g.name);
        if matches!(&g.extent.kind, ast::ExprKind::Call(p, _) if p.segments.len() == 1 && p.segments[0].name == "cdiv")
        {
            ragged = true;
        }
        let extent = {
            let mut b = Builder::constant(ck, m, &refs, &header.bindings);
            b.const_dim(&g.extent, "a grid extent")
        };
        let extent = extent.unwrap_or(Dim::Known(1));
        grid.push(ir::GridAxis {
            name: g.name.name.clone(),
            extent,
            semantics: match g.semantics {
                ast::Semantics::Parallel => ir::Semantics::Parallel,
                ast::Semantics::Arbitrary => ir::Semantics::Arbitrary,
            },
        });
    }

    // Operands: prefetch first, then inputs, then outputs (the call order).
    let mut operands: Vec<ir::Operand> = Vec::new();
    let mut operand_decls: Vec<OperandSrc> = Vec::new();
    for p in &prefetch {
        operand_decls.push(OperandSrc::Prefetch(p));
    }
    for o in &decl.inputs {
        operand_decls.push(OperandSrc::Operand(o, Role::Input));
    }
    for o in &decl.outputs {
        operand_decls.push(OperandSrc::Operand(o, Role::Output));
    }
    // Prefetch refs are visible to index maps; declare them first.
    let grid_names: Vec<String> = grid.iter().map(|a| a.name.clone()).collect();
    for src in &operand_decls {
        let (name, docs, dtype_id, dims, span) = src.parts();
        declare(ck, name);
        let dtype = {
            let mut b = Builder::constant(ck, m, &refs, &header.bindings);
            b.dtype_name(dtype_id)
        };
        let shape = {
            let mut b = Builder::constant(ck, m, &refs, &header.bindings);
            dims.iter()
                .map(|d| {
                    b.const_dim(d, "an array dimension")
                        .unwrap_or(Dim::Known(1))
                })
                .collect::<Vec<_>>()
        };
        let dtype = dtype.unwrap_or(ir::DType::F32);
        let op_index = operands.len();
        let (space, block, ref_shape) = match src {
            OperandSrc::Prefetch(_) => (Space::Smem, None, shape.clone()),
            OperandSrc::Operand(o, _) => match &o.placement {
                Placement::Whole { space, .. } => (mem_space(*space), None, shape.clone()),
                Placement::Block {
                    dims: bdims,
                    index_map,
                    space,
                    span: pspan,
                } => {
                    let space = space.map(|(s, _)| mem_space(s)).unwrap_or(Space::Vmem);
                    let bd: Vec<BlockDim> = {
                        let mut b = Builder::constant(ck, m, &refs, &header.bindings);
                        bdims
                            .iter()
                            .map(|d| match d {
                                AstBlockDim::Squeezed(_) => BlockDim::Squeezed,
                                AstBlockDim::Size(e) => BlockDim::Size(
                                    b.const_dim(e, "a block dimension").unwrap_or(Dim::Known(1)),
                                ),
                            })
                            .collect()
                    };
                    if bd.len() != shape.len() {
                        ck.error(
                            Diag::new(
                                &codes::INDEX_MAP_ARITY,
                                format!(
                                    "block of `{}` has {} dimensions, the array has {}",
                                    name.name,
                                    bd.len(),
                                    shape.len()
                                ),
                                *pspan,
                            )
                            .label("block shape")
                            .help("give one block size (or `_` to squeeze) per array dimension"),
                        );
                    }
                    if index_map.len() != shape.len() {
                        let span = index_map
                            .first()
                            .map(|e| e.span.to(index_map[index_map.len() - 1].span))
                            .unwrap_or(*pspan);
                        ck.error(
                            Diag::new(&codes::INDEX_MAP_ARITY, format!("index map of `{}` returns {} block indices, the array has {} dimensions", name.name, index_map.len(), shape.len()), span)
                                .label("index map")
                                .help("return one block index per array dimension, squeezed ones included (e.g. `at (i, 0)`)"),
                        );
                    }
                    let f = {
                        let b = Builder::index_map(ck, m, &refs, &header.bindings, &grid_names);
                        b.index_map_func(index_map, shape.len())
                    };
                    let ref_shape: Vec<Dim> = bd
                        .iter()
                        .filter_map(|d| match d {
                            BlockDim::Squeezed => None,
                            BlockDim::Size(s) => Some(s.clone()),
                        })
                        .collect();
                    (
                        space,
                        Some(ir::BlockSpec {
                            dims: bd,
                            index_map: f,
                        }),
                        ref_shape,
                    )
                }
            },
        };
        let role = match src {
            OperandSrc::Prefetch(_) => Role::Prefetch,
            OperandSrc::Operand(_, r) => *r,
        };
        let ref_id = refs.append(RefDecl {
            name: name.name.clone(),
            ty: RefType {
                space,
                dtype,
                shape: ref_shape,
            },
            origin: RefOrigin::Operand(op_index),
        });
        header
            .bindings
            .push((name.name.clone(), Binding::Val(Val::Ref(ref_id))));
        operands.push(ir::Operand {
            name: name.name.clone(),
            docs: docs.to_vec(),
            role,
            dtype,
            shape,
            space,
            block,
            ref_id,
            aliases: None,
            span,
        });
    }
    // Aliases: an output reusing an input's buffer.
    for (i, src) in operand_decls.iter().enumerate() {
        if let OperandSrc::Operand(o, role) = src {
            if let Some(a) = &o.aliases {
                let target = operands
                    .iter()
                    .position(|x| x.name == a.name && x.role != Role::Output);
                match (role, target) {
                    (Role::Output, Some(t)) => {
                        if operands[t].shape != operands[i].shape
                            || operands[t].dtype != operands[i].dtype
                        {
                            ck.error(
                                Diag::new(&codes::SHAPE_MISMATCH, format!("`{}` aliases `{}` but their arrays differ", o.name.name, a.name), a.span)
                                    .label(format!("`{}` is {}[{}]", a.name, operands[t].dtype, ir::shape_str(&operands[t].shape)))
                                    .with(o.name.span, format!("`{}` is {}[{}]", o.name.name, operands[i].dtype, ir::shape_str(&operands[i].shape)))
                                    .help("an output can reuse an input's buffer only when shape and dtype agree"),
                            );
                        } else {
                            operands[i].aliases = Some(t);
                        }
                    }
                    _ => ck.error(
                        Diag::new(
                            &codes::UNKNOWN_NAME,
                            format!("`aliases {}` must name an input of this kernel", a.name),
                            a.span,
                        )
                        .label("not an input")
                        .help("only outputs alias, and only inputs can be aliased"),
                    ),
                }
            }
        }
    }

    // Scratch.
    let mut scratch = Vec::new();
    for s in &scratch_decls {
        declare(ck, &s.name);
        let (space, dtype, dims) = match &s.kind {
            ast::ScratchKind::Buffer { space, dtype, dims } => {
                let d = {
                    let mut b = Builder::constant(ck, m, &refs, &header.bindings);
                    b.dtype_name(dtype)
                };
                (
                    mem_space(*space),
                    d.unwrap_or(ir::DType::F32),
                    dims.as_slice(),
                )
            }
            ast::ScratchKind::DmaSem { dims } => {
                (Space::Semaphore, ir::DType::I32, dims.as_slice())
            }
        };
        let mut shape: Vec<Dim> = {
            let mut b = Builder::constant(ck, m, &refs, &header.bindings);
            dims.iter()
                .map(|d| {
                    b.const_dim(d, "a scratch dimension")
                        .unwrap_or(Dim::Known(1))
                })
                .collect()
        };
        if shape.is_empty() {
            shape.push(Dim::Known(1));
        }
        if space == Space::Any {
            ck.error(
                Diag::new(
                    &codes::ANY_ACCESS,
                    "scratch buffers live in VMEM or SMEM",
                    s.span,
                )
                .label("`any` is HBM, which the kernel does not allocate")
                .help("write `vmem` or `smem`"),
            );
        }
        let ref_id = refs.append(RefDecl {
            name: s.name.name.clone(),
            ty: RefType {
                space,
                dtype,
                shape,
            },
            origin: RefOrigin::Scratch(scratch.len()),
        });
        header
            .bindings
            .push((s.name.name.clone(), Binding::Val(Val::Ref(ref_id))));
        scratch.push(ir::Scratch {
            name: s.name.name.clone(),
            ref_id,
            span: s.span,
        });
    }

    let vmem_limit = vmem_limit_expr.and_then(|e| {
        let mut b = Builder::constant(ck, m, &refs, &header.bindings);
        b.const_dim(e, "a VMEM limit")
            .and_then(|d| d.known())
            .map(|v| v.max(0) as u64)
    });

    let mut kernel = ir::Kernel {
        name: decl.name.name.clone(),
        docs: decl.docs.clone(),
        params,
        grid,
        operands,
        scratch,
        refs,
        body: Func::default(),
        vmem_limit,
        span: decl.span,
    };

    if !ck.diags[before..].iter().any(|d| d.is_error()) && !ck.skip_tpu_rules {
        rules::check_header(ck, &kernel, decl, ragged);
    }

    // Body.
    let body = {
        let mut b = Builder::body(ck, m, &kernel.refs, &header.bindings, &grid_names);
        b.grid_extents = kernel.grid.iter().map(|a| a.extent.clone()).collect();
        b.kernel_body(&decl.body);
        b.finish()
    };
    kernel.body = body;
    instantiation_notes(ck, &kernel);
    if ck.diags[before..].iter().any(|d| d.is_error()) {
        return None;
    }
    Some(kernel)
}

/// Adds to each diagnostic from an inlined function body the kernel and
/// parameter values it was instantiated with: a function is checked once per
/// call, so the same body can be right for one `-p` value and wrong for
/// another.
fn instantiation_notes(ck: &mut Checker, kernel: &ir::Kernel) {
    let values: Vec<String> = kernel
        .params
        .iter()
        .filter_map(|p| match &p.value {
            ParamValue::Int(v) => Some(format!("{}={v}", p.name)),
            ParamValue::Dtype(d) => Some(format!("{}={d}", p.name)),
            ParamValue::Unbound => None,
        })
        .collect();
    let note = if values.is_empty() {
        format!("instantiated by kernel `{}`", kernel.name)
    } else {
        format!(
            "instantiated by kernel `{}` with {}",
            kernel.name,
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
            Clause::VmemLimit(..) => {}
        }
    }
    decl.inputs.iter().for_each(|o| add(&o.name, "an input"));
    decl.outputs.iter().for_each(|o| add(&o.name, "an output"));
    out
}

/// A `-p` value: its parsed expression and the text as written.
pub struct Expr2 {
    pub expr: ast::Expr,
    pub text: String,
}

enum OperandSrc<'a> {
    Prefetch(&'a ast::PrefetchDecl),
    Operand(&'a ast::OperandDecl, Role),
}

impl<'a> OperandSrc<'a> {
    fn parts(
        &self,
    ) -> (
        &'a ast::Ident,
        &'a [String],
        &'a ast::Ident,
        &'a [ast::Expr],
        Span,
    ) {
        match self {
            OperandSrc::Prefetch(p) => (&p.name, &p.docs, &p.dtype, &p.dims, p.span),
            OperandSrc::Operand(o, _) => (&o.name, &o.docs, &o.dtype, &o.dims, o.span),
        }
    }
}

fn mem_space(s: ast::MemSpace) -> Space {
    match s {
        ast::MemSpace::Vmem => Space::Vmem,
        ast::MemSpace::Smem => Space::Smem,
        ast::MemSpace::Any => Space::Any,
    }
}

fn missing_param(p: &ast::Ident, decl: &ast::KernelDecl) -> Diag {
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
fn unknown_name<'a>(e: &'a Expr, bindings: &[(String, Binding)]) -> Option<&'a ast::Ident> {
    match &e.kind {
        ExprKind::Name(p) if p.segments.len() == 1 => {
            let id = &p.segments[0];
            let known =
                DType::from_name(&id.name).is_some() || bindings.iter().any(|(n, _)| *n == id.name);
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
fn describe_const(v: &Val, given: Option<&Expr2>) -> String {
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

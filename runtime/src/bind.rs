//! Binding a kernel to the arrays of a call: what a host framework (JAX,
//! through the `pk` Python package) needs to call a `.pk` kernel like a
//! function, without the caller spelling out every size.
//!
//! Each question takes a [`Session`] of the kernel's file, opened once
//! ([`Sessions`] keeps one per path for a host that asks about the same
//! file call after call). [`infer_params`] reads the kernel's header
//! (resolved, not checked) and matches each input operand's declared type, `T[M, K]`, against the
//! dtype and shape of the array passed for it. A dimension written as a bare
//! integer parameter (`M`) that the caller did not set takes the array's
//! extent; a dtype written as a dtype parameter (`T`) takes the array's
//! dtype. Everything else (literal dimensions, parameters the caller set,
//! dimensions written as expressions) is checked after the kernel is
//! specialised, by [`check_args`] against the compiled operand shapes.
//! [`header`] names a call's arrays before any array exists, for a host
//! that declares an operation's signature up front (a PyTorch custom op).
//! [`batched`] is the session of a kernel batched over a leading grid axis
//! (`jax.vmap`), an edit of the parsed kernel.
//!
//! Invariants:
//! 1. Inference never overrides a parameter the caller set: a conflict is
//!    an error (`PK5003`, `PK5004`) naming the operand and the dimension.
//! 2. Two operands that name the same parameter must agree on its value.
//! 3. Whatever the header says, the compiled kernel is the judge: every
//!    argument is checked against it before the kernel runs.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pk_lang::ast::{self, ExprKind, ParamKind};
use pk_lang::diag::{Diag, Explanation};
use pk_lang::span::{SourceMap, Span};
use pk_lang::{Failure, Session};

/// The dtype (pk's spelling, `f32`) and shape of one array of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgSig {
    pub dtype: String,
    pub shape: Vec<u64>,
}

/// One input operand of a specialised kernel, as the call sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperandSig {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
}

pub const EXPLANATIONS: &[Explanation] = &[
    Explanation {
        code: "PK5001",
        title: "call-argument-count",
        what: "A kernel was called with more or fewer arrays than it has inputs.",
        why: "Each array is bound to one input operand, in the order the kernel declares \
              them; outputs are returned, never passed.",
        example: "k = pk.jax.kernel(\"kernels/add.pk\")\n\
                  k(x)        # error[PK5001]: `add` takes 2 arrays (x, y), 1 given\n\
                  k(x, y)",
    },
    Explanation {
        code: "PK5002",
        title: "call-rank",
        what: "An array passed to a kernel has a different number of dimensions than the \
               operand it is bound to.",
        why: "Operands have a fixed rank; pk neither broadcasts nor reshapes arguments. \
              Use `jax.vmap` for a leading batch dimension.",
        example: "k(jnp.ones((8, 128, 128)), b)   # error[PK5002]: `a` is 2-D\n\
                  jax.vmap(k, in_axes=(0, None))(a3, b)",
    },
    Explanation {
        code: "PK5003",
        title: "call-shape-conflict",
        what: "A dimension of an array passed to a kernel does not match the operand: it \
               differs from a parameter the caller set, from the value another array gave the \
               same parameter, or from the size the kernel fixes.",
        why: "Sizes written as a bare parameter (`a: T[M, K]`) are taken from the arrays \
              when not given; every array naming the same parameter must agree.",
        example: "k(jnp.ones((256, 512)), jnp.ones((256, 128)))\n\
                  error[PK5003]: dimension 0 of `b` is 256, but `K` is 512 (from dimension 1 of `a`)",
    },
    Explanation {
        code: "PK5004",
        title: "call-dtype",
        what: "An array passed to a kernel has a different dtype than the operand it is bound \
               to.",
        why: "pk does not convert arguments: a conversion changes the numbers the kernel sees \
              and the bytes it moves, so it is left to the caller (`x.astype(jnp.bfloat16)`).",
        example: "k = pk.jax.kernel(\"kernels/softmax.pk\")\n\
                  k(jnp.ones((128, 128), jnp.bfloat16))   # error[PK5004]: `x` is f32\n\
                  k(x.astype(jnp.float32))",
    },
    Explanation {
        code: "PK5005",
        title: "package-parameters",
        what: "Parameters were given when calling a built package.",
        why: "A package holds one specialisation, built with its parameters fixed; only the \
              `.pk` source can be specialised again.",
        example: "pk.jax.kernel(\"build/matmul\", bm=128)   # error[PK5005]\n\
                  pk.jax.kernel(\"kernels/matmul.pk\", bm=128)",
    },
    Explanation {
        code: "PK5006",
        title: "call-mesh-axes",
        what: "A kernel with a mesh was called outside `jax.shard_map`, or its mesh axes do \
               not match the shard_map mesh: an axis (its own name, or the one `axis_names` \
               maps it to) that is not a manual axis of the shard_map, a size that differs \
               from that axis's, or, lowered for TPU, axes that are not the whole device mesh.",
        why: "Each device of the mesh runs the kernel on its own shard and finds its peers \
              by mesh coordinates, which pk takes from the shard_map axes \
              (`jax.lax.axis_index`); on TPU the kernel's device ids are the program's \
              logical device ids, so its mesh must be the device mesh.",
        example: "ag = pk.jax.kernel(\"kernels/all_gather.pk\", n=4)   # mesh (d in n)\n\
                  jax.shard_map(ag, mesh=mesh, ...)   # mesh axes (\"x\",): error[PK5006]\n\
                  ag = pk.jax.kernel(\"kernels/all_gather.pk\", n=4, axis_names=(\"x\",))",
    },
];

fn explanation(code: &str) -> &'static Explanation {
    EXPLANATIONS
        .iter()
        .find(|e| e.code == code)
        .unwrap_or(&EXPLANATIONS[0])
}

/// A value as it is passed to the compiler (`-p NAME=VALUE`).
type Params = Vec<(String, String)>;

/// The sessions of `.pk` files by path: each file is read, parsed and
/// resolved once, and opened again only to see whether it changed (its
/// text, or a module it uses), parsing only what did.
#[derive(Debug, Default)]
pub struct Sessions {
    open: Mutex<HashMap<PathBuf, Arc<Session>>>,
}

impl Sessions {
    /// The session of `path` as the file is now. A file that cannot be read
    /// is the failure (and is forgotten).
    pub fn open(&self, path: &Path) -> Result<Arc<Session>, Failure> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let text = match pk_lang::read_source(path) {
            Ok(t) => t,
            Err(f) => {
                open.remove(path);
                return Err(f);
            }
        };
        match open.get_mut(path) {
            Some(s) => {
                // Sessions handed out before stay as they were.
                let s_mut = Arc::make_mut(s);
                let root = pk_lang::span::FileId(0);
                if s_mut.sources().get(root).text.as_ref() == pk_lang::files::strip_bom(&text) {
                    s_mut.reload();
                } else {
                    s_mut.edit(&text);
                }
                Ok(s.clone())
            }
            None => {
                let dir = path.parent().map(Path::to_path_buf);
                let s = Arc::new(Session::from_text(&path.to_string_lossy(), &text, dir));
                open.insert(path.to_path_buf(), s.clone());
                Ok(s)
            }
        }
    }
}

/// Adds to `given` the parameters that the arrays `args` determine for the
/// kernel `kernel` of `session` (the file's only kernel when `None`). A
/// file with errors, or without such a kernel, is returned unchanged: the
/// compiler then reports it with its own diagnostics.
pub fn infer_params(
    session: &Session,
    kernel: Option<&str>,
    given: &[(String, String)],
    args: &[ArgSig],
) -> Result<Params, Failure> {
    let Some(decl) = select(session, kernel) else {
        return Ok(given.to_vec());
    };
    let mut b = Binder {
        decl,
        given: given.iter().cloned().collect(),
        inferred: BTreeMap::new(),
        diags: Vec::new(),
    };
    b.bind(args);
    if !b.diags.is_empty() {
        return Err(Failure {
            diags: b.diags,
            sources: Arc::new(session.sources().clone()),
        });
    }
    let mut out = given.to_vec();
    // In declaration order, so the package name and the cache key are
    // stable.
    for p in &decl.params {
        if let Some((v, _)) = b.inferred.get(&p.name.name) {
            out.push((p.name.name.clone(), v.clone()));
        }
    }
    Ok(out)
}

/// The operands of a call, by name, as a kernel's header declares them for
/// the parameters a caller gives: what a host framework needs to declare
/// the call's signature before it sees any array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub kernel: String,
    /// Every parameter, in declaration order.
    pub params: Vec<String>,
    /// The arrays a call passes (scalar prefetch first), in call order.
    pub inputs: Vec<String>,
    /// The arrays a call returns, in order.
    pub outputs: Vec<String>,
}

/// The header of kernel `kernel` of `session` (the file's only kernel when
/// `None`) for the parameters `given`: a declaration whose `if COND` is
/// false for them is left out, as [`infer_params`] leaves it out. `None`
/// when the file has errors or no such kernel; the compiler then reports
/// why, with its own diagnostics.
pub fn header(
    session: &Session,
    kernel: Option<&str>,
    given: &[(String, String)],
) -> Option<Header> {
    let decl = select(session, kernel)?;
    let b = Binder {
        decl,
        given: given.iter().cloned().collect(),
        inferred: BTreeMap::new(),
        diags: Vec::new(),
    };
    let inputs = declared_inputs(decl)
        .into_iter()
        .filter(|d| !b.absent(d.when))
        .map(|d| d.name.name.clone())
        .collect();
    let outputs = decl
        .outputs
        .iter()
        .filter(|o| !b.absent(o.when.as_ref()))
        .map(|o| o.name.name.clone())
        .collect();
    Some(Header {
        kernel: decl.name.name.clone(),
        params: decl.params.iter().map(|p| p.name.name.clone()).collect(),
        inputs,
        outputs,
    })
}

/// Kernel `kernel` of the session's root file, or its only kernel when
/// `None`; `None` too when parsing or resolving found an error.
fn select<'s>(session: &'s Session, kernel: Option<&str>) -> Option<&'s ast::KernelDecl> {
    if session.has_errors() || session.program().modules.is_empty() {
        return None;
    }
    let mut kernels = session.program().root_kernels().into_iter().map(|(_, k)| k);
    match kernel {
        Some(name) => kernels.find(|k| k.name.name == name),
        None => {
            let first = kernels.next()?;
            kernels.next().is_none().then_some(first)
        }
    }
}

/// One array a call passes, as the header declares it.
struct Declared<'a> {
    name: &'a ast::Ident,
    dtype: &'a ast::Ident,
    dims: &'a [ast::Expr],
    /// The declaration's `if COND`, when it has one.
    when: Option<&'a ast::Expr>,
    span: Span,
}

/// The arrays a call passes, in call order: the scalar-prefetch operands
/// (in their `prefetch (...)` clauses), then the inputs.
fn declared_inputs(decl: &ast::KernelDecl) -> Vec<Declared<'_>> {
    let prefetch = decl.clauses.iter().flat_map(|c| match c {
        ast::Clause::Prefetch(ps, _) => ps.as_slice(),
        _ => &[],
    });
    prefetch
        .map(|p| Declared {
            name: &p.name,
            dtype: &p.dtype,
            dims: &p.dims,
            when: p.when.as_ref(),
            span: p.span,
        })
        .chain(decl.inputs.iter().map(|o| Declared {
            name: &o.name,
            dtype: &o.dtype,
            dims: &o.dims,
            when: o.when.as_ref(),
            span: o.span,
        }))
        .collect()
}

struct Binder<'a> {
    decl: &'a ast::KernelDecl,
    given: BTreeMap<String, String>,
    /// Parameter -> (value, where it was read: "dimension 1 of `a`").
    inferred: BTreeMap<String, (String, String)>,
    diags: Vec<Diag>,
}

impl Binder<'_> {
    fn param_kind(&self, name: &str) -> Option<ParamKind> {
        self.decl
            .params
            .iter()
            .find(|p| p.name.name == name)
            .map(|p| p.kind)
    }

    /// Whether a declaration's `if COND` is false: a bool parameter, or its
    /// negation, with the value the call gives or the default. Any other
    /// condition keeps the declaration, and the compiled kernel's operand
    /// list judges the call (invariant 3).
    fn absent(&self, when: Option<&ast::Expr>) -> bool {
        let Some(mut e) = when else { return false };
        let mut negated = false;
        while let ExprKind::Unary(ast::UnOp::Not, inner) = &e.kind {
            negated = !negated;
            e = inner;
        }
        let ExprKind::Name(p) = &e.kind else {
            return false;
        };
        let [seg] = p.segments.as_slice() else {
            return false;
        };
        let Some(param) = self.decl.params.iter().find(|q| q.name.name == seg.name) else {
            return false;
        };
        if param.kind != ParamKind::Bool {
            return false;
        }
        let value = match self.given.get(&seg.name) {
            Some(v) => v.trim() == "true",
            None => match param.default.as_ref().map(|d| &d.kind) {
                Some(ExprKind::Bool(b)) => *b,
                _ => return false,
            },
        };
        value == negated
    }

    fn bind(&mut self, args: &[ArgSig]) {
        // A declaration whose `if COND` is false for the call's parameters
        // is absent from the call (`existing_out ... if ACC` with ACC false).
        let inputs: Vec<Declared> = declared_inputs(self.decl)
            .into_iter()
            .filter(|d| !self.absent(d.when))
            .collect();
        if args.len() != inputs.len() {
            let names: Vec<&str> = inputs.iter().map(|o| o.name.name.as_str()).collect();
            self.diags.push(
                Diag::new(
                    explanation("PK5001"),
                    format!(
                        "`{}` takes {} array{} ({}), {} given",
                        self.decl.name.name,
                        inputs.len(),
                        if inputs.len() == 1 { "" } else { "s" },
                        names.join(", "),
                        args.len()
                    ),
                    self.decl.name.span,
                )
                .label("kernel declared here")
                .help("pass one array per input operand, in order; outputs are returned"),
            );
            return;
        }
        for (o, a) in inputs.iter().zip(args) {
            self.bind_dtype(o, a);
            if o.dims.len() != a.shape.len() {
                self.diags.push(
                    Diag::new(
                        explanation("PK5002"),
                        format!(
                            "`{}` is {}-D, but the array passed for it has shape [{}]",
                            o.name.name,
                            o.dims.len(),
                            join(&a.shape)
                        ),
                        o.span,
                    )
                    .label("operand declared here")
                    .help("reshape the array, or use jax.vmap for a leading batch dimension"),
                );
                continue;
            }
            for (d, (e, &n)) in o.dims.iter().zip(&a.shape).enumerate() {
                self.bind_dim(o, d, e, n);
            }
        }
    }

    fn bind_dtype(&mut self, o: &Declared, a: &ArgSig) {
        let name = &o.dtype.name;
        let where_ = format!("the dtype of `{}`", o.name.name);
        if self.param_kind(name) == Some(ParamKind::Dtype) {
            self.unify(name, &a.dtype, &where_, o.dtype.span, "PK5004");
        } else if pk_lang::ir::DType::from_name(name).is_some() && *name != a.dtype {
            self.diags.push(
                Diag::new(
                    explanation("PK5004"),
                    format!(
                        "`{}` is {name}, but the array passed for it is {}",
                        o.name.name, a.dtype
                    ),
                    o.dtype.span,
                )
                .label(format!("declared {name}"))
                .help(format!(
                    "convert the array: `x.astype({})`",
                    numpy_name(name)
                )),
            );
        }
    }

    fn bind_dim(&mut self, o: &Declared, d: usize, e: &ast::Expr, n: u64) {
        let where_ = format!("dimension {d} of `{}`", o.name.name);
        match &e.kind {
            ExprKind::Name(p) if p.segments.len() == 1 => {
                let name = &p.segments[0].name;
                if self.param_kind(name) == Some(ParamKind::Int) {
                    self.unify(name, &n.to_string(), &where_, e.span, "PK5003");
                }
            }
            ExprKind::Int(v) if *v != n => self.diags.push(
                Diag::new(
                    explanation("PK5003"),
                    format!("{where_} is {n}, but the kernel fixes it to {v}",),
                    e.span,
                )
                .label(format!("always {v}"))
                .help("pass an array of the declared shape"),
            ),
            _ => {}
        }
    }

    /// Gives parameter `name` the value `v` read from `where_`, or reports
    /// a conflict with the caller's value or an earlier operand's.
    fn unify(&mut self, name: &str, v: &str, where_: &str, span: Span, code: &str) {
        let what = if code == "PK5004" { "dtype" } else { "size" };
        if let Some(g) = self.given.get(name) {
            // A given value that is an expression (`4 * 128`) is left to
            // the check after compilation.
            let plain = g.trim();
            let comparable = plain.parse::<u64>().is_ok() || code == "PK5004";
            if comparable && plain != v {
                self.diags.push(
                    Diag::new(
                        explanation(code),
                        format!("{where_} is {v}, but `{name}` was given as {plain}"),
                        span,
                    )
                    .label(format!("`{name}` = {plain}"))
                    .help(format!(
                        "pass an array whose {what} matches, or drop `{name}={plain}` to take it from the arrays"
                    )),
                );
            }
            return;
        }
        match self.inferred.get(name) {
            Some((prev, from)) if prev != v => {
                let (prev, from) = (prev.clone(), from.clone());
                self.diags.push(
                    Diag::new(
                        explanation(code),
                        format!("{where_} is {v}, but `{name}` is {prev} (from {from})"),
                        span,
                    )
                    .label(format!("`{name}` must be the same {what} here"))
                    .help("every array that names the same parameter must agree on it"),
                );
            }
            Some(_) => {}
            None => {
                self.inferred
                    .insert(name.to_string(), (v.to_string(), where_.to_string()));
            }
        }
    }
}

/// Checks the arrays of a call against the inputs of the specialised
/// kernel (after [`infer_params`], for what the header did not decide).
/// The diagnostics have no source to point into, so they name the kernel.
pub fn check_args(kernel: &str, inputs: &[OperandSig], args: &[ArgSig]) -> Result<(), Failure> {
    check_args_diag(kernel, inputs, args).map_err(|d| unlocated(kernel, *d))
}

fn check_args_diag(kernel: &str, inputs: &[OperandSig], args: &[ArgSig]) -> Result<(), Box<Diag>> {
    let here = Span::default();
    if inputs.len() != args.len() {
        let names: Vec<&str> = inputs.iter().map(|o| o.name.as_str()).collect();
        return Err(Diag::new(
            explanation("PK5001"),
            format!(
                "`{kernel}` takes {} array{} ({}), {} given",
                inputs.len(),
                if inputs.len() == 1 { "" } else { "s" },
                names.join(", "),
                args.len()
            ),
            here,
        )
        .help("pass one array per input operand, in order; outputs are returned")
        .into());
    }
    for (o, a) in inputs.iter().zip(args) {
        if o.dtype != a.dtype {
            return Err(Diag::new(
                explanation("PK5004"),
                format!(
                    "`{}` of `{kernel}` is {}, but the array passed for it is {}",
                    o.name, o.dtype, a.dtype
                ),
                here,
            )
            .help(format!(
                "convert the array: `x.astype({})`",
                numpy_name(&o.dtype)
            ))
            .into());
        }
        if o.shape.len() != a.shape.len() {
            return Err(Diag::new(
                explanation("PK5002"),
                format!(
                    "`{}` of `{kernel}` is {}-D ([{}]), but the array passed for it has shape [{}]",
                    o.name,
                    o.shape.len(),
                    join(&o.shape),
                    join(&a.shape)
                ),
                here,
            )
            .help("reshape the array, or use jax.vmap for a leading batch dimension")
            .into());
        }
        if let Some(d) = (0..o.shape.len()).find(|&d| o.shape[d] != a.shape[d]) {
            return Err(Diag::new(
                explanation("PK5003"),
                format!(
                    "dimension {d} of `{}` is {}, but `{kernel}` was built for [{}]",
                    o.name,
                    a.shape[d],
                    join(&o.shape)
                ),
                here,
            )
            .help("pass an array of the shape the kernel was specialised for")
            .into());
        }
    }
    Ok(())
}

/// The error for parameters passed to a built package.
pub fn package_params(dir: &str, names: &[String]) -> Failure {
    let d = Diag::new(
        explanation("PK5005"),
        format!(
            "`{dir}` is a built package; its parameters are fixed, but {} {} given",
            names.join(", "),
            if names.len() == 1 { "was" } else { "were" }
        ),
        Span::default(),
    )
    .help("specialise the .pk source instead, or build another package with `pkc build -p`");
    unlocated(dir, d)
}

/// A diagnostic about a call rather than a line of source: it is rendered
/// against an empty file named after what was called.
fn unlocated(name: &str, d: Diag) -> Failure {
    let mut sources = SourceMap::new();
    sources.add(name, "");
    Failure {
        diags: vec![d],
        sources: Arc::new(sources),
    }
}

fn numpy_name(d: &str) -> String {
    let n = match d {
        "f32" => "jnp.float32",
        "bf16" => "jnp.bfloat16",
        "i32" => "jnp.int32",
        "i16" => "jnp.int16",
        "i8" => "jnp.int8",
        "u8" => "jnp.uint8",
        "bool" => "jnp.bool_",
        "f8e4m3fn" => "jnp.float8_e4m3fn",
        "f8e5m2" => "jnp.float8_e5m2",
        other => other,
    };
    n.to_string()
}

fn join(v: &[u64]) -> String {
    v.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The name of the grid axis [`batched`] adds.
pub const BATCH_AXIS: &str = "pk_batch";

/// The session of a batched kernel: `kernel` of `session` (the file's only
/// kernel when `None`) with a leading dimension of `batch` on the inputs
/// marked in `batched` and on every output, each with a squeezed block
/// (`_`) indexed by a new leading `parallel` grid axis, [`BATCH_AXIS`]. Each
/// step of that axis is one unbatched call, as Pallas batches a kernel.
/// The kernel is edited as parsed (see [`Session::edit_kernel`]): the
/// source is neither rewritten nor parsed again, and diagnostics and
/// locations point into the file as written.
///
/// `None` when the kernel cannot be batched this way: the file has errors,
/// or the kernel has scalar-prefetch operands, no grid, or a batched
/// operand that is not blocked (a whole array, or one left in HBM for DMA).
pub fn batched(
    session: &Session,
    kernel: Option<&str>,
    batched: &[bool],
    batch: u64,
) -> Option<Session> {
    let name = select(session, kernel)?.name.name.clone();
    let mut out = session.clone();
    out.edit_kernel(&name, |decl| batch_decl(decl, batched, batch).is_some())
        .then_some(out)
}

/// Adds the batch to `decl` as [`batched`] describes; `None` (with `decl`
/// half changed, to be dropped) when it cannot be batched.
fn batch_decl(decl: &mut ast::KernelDecl, batched: &[bool], batch: u64) -> Option<()> {
    if decl.inputs.len() != batched.len() {
        return None;
    }
    let mut grid = None;
    for c in &mut decl.clauses {
        match c {
            ast::Clause::Prefetch(..) => return None,
            ast::Clause::Grid(dims, _) => grid = Some(dims),
            _ => {}
        }
    }
    let dims = grid?;
    // New nodes sit where the text would have them: an empty span at the
    // start of the node they precede.
    let at = |s: Span| Span { end: s.start, ..s };
    let first_axis = at(dims.first()?.span);
    let size = |span: Span| ast::Expr {
        kind: ExprKind::Int(batch),
        span,
    };
    dims.insert(
        0,
        ast::GridDim {
            name: ast::Ident {
                name: BATCH_AXIS.to_string(),
                span: first_axis,
            },
            extent: size(first_axis),
            bound: None,
            semantics: ast::Semantics::Parallel,
            span: first_axis,
        },
    );
    let inputs = decl
        .inputs
        .iter_mut()
        .zip(batched)
        .filter(|(_, &b)| b)
        .map(|(o, _)| o);
    for o in inputs.chain(&mut decl.outputs) {
        let ast::Placement::Block {
            dims, index_map, ..
        } = &mut o.placement
        else {
            return None;
        };
        let dim = at(o.dims.first()?.span);
        o.dims.insert(0, size(dim));
        let block = at(match dims.first()? {
            ast::BlockDim::Squeezed(s) => *s,
            ast::BlockDim::Size(e) => e.span,
        });
        dims.insert(0, ast::BlockDim::Squeezed(block));
        let index = at(index_map.first()?.span);
        index_map.insert(
            0,
            ast::Expr {
                kind: ExprKind::Name(ast::Path {
                    segments: vec![ast::Ident {
                        name: BATCH_AXIS.to_string(),
                        span: index,
                    }],
                    span: index,
                }),
                span: index,
            },
        );
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADD: &str = "kernel add<M = 8, N = 128, bm = 8>(\n    x: f32[M, N] block [bm, N] at (i, 0),\n    y: f32[M, N] block [bm, N] at (i, 0),\n) -> z: f32[M, N] block [bm, N] at (i, 0)\ngrid (i in M / bm parallel)\n{\n    z[..] = x[..] + y[..];\n}\n";

    fn open(path: &Path) -> Session {
        Session::open(path).expect("opens")
    }

    fn session(text: &str) -> Session {
        Session::from_text("add.pk", text, None)
    }

    fn specialised() -> pk_lang::Options {
        pk_lang::Options {
            specialise: true,
            ..Default::default()
        }
    }

    /// The batched kernel is the kernel a person would write by hand with
    /// the batch in its header: the same IR, the same operands.
    #[test]
    fn batching_adds_a_squeezed_leading_dimension_and_grid_axis() {
        let by_hand = "kernel add<M = 8, N = 128, bm = 8>(\n    x: f32[3, M, N] block [_, bm, N] at (pk_batch, i, 0),\n    y: f32[M, N] block [bm, N] at (i, 0),\n) -> z: f32[3, M, N] block [_, bm, N] at (pk_batch, i, 0)\ngrid (pk_batch in 3 parallel, i in M / bm parallel)\n{\n    z[..] = x[..] + y[..];\n}\n";
        let want = session(by_hand).check(&specialised()).expect("by hand");
        let s = session(ADD);
        let b = batched(&s, None, &[true, false], 3).expect("batchable");
        let got = b
            .check(&specialised())
            .expect("the batched kernel compiles");
        assert_eq!(
            pk_lang::ir::print::module(&got),
            pk_lang::ir::print::module(&want)
        );
        let k = &got.kernels[0];
        let shape: Vec<u64> = k.operands[0].shape.iter().map(|d| d.get()).collect();
        assert_eq!(shape, [3, 8, 128]);
        assert_eq!(k.grid.len(), 2);
        // Nothing was parsed again, and the session batched from is as
        // it was.
        assert_eq!(b.parses(), s.parses());
        let plain = s.check(&specialised()).expect("unbatched");
        assert_eq!(plain.kernels[0].grid.len(), 1);
        // Locations point into the file as written: the body's ops are
        // the unbatched kernel's, at the same places, and the store of `z`
        // is on line 7 of `add.pk`.
        let spans = &got.kernels[0].body.spans;
        assert_eq!(spans, &plain.kernels[0].body.spans);
        let last = spans.last().expect("a store");
        assert_eq!(got.sources.get(last.file).name, "add.pk");
        assert_eq!(got.sources.get(last.file).line_col(last.start).0, 7);
    }

    #[test]
    fn kernels_without_grid_or_with_whole_batched_operands_are_not_batched() {
        let whole = session(&ADD.replace("x: f32[M, N] block [bm, N] at (i, 0)", "x: f32[M, N]"));
        assert!(batched(&whole, None, &[true, true], 2).is_none());
        assert!(batched(&whole, None, &[false, true], 2).is_some());
        let add = session(ADD);
        assert!(batched(&add, None, &[true], 2).is_none(), "arity");
        assert!(batched(&add, Some("other"), &[true, true], 2).is_none());
    }

    /// A kernel that calls a function of a sibling module batches too: the
    /// batched kernel is checked in the session that resolved the `use`.
    #[test]
    fn a_kernel_using_a_sibling_module_is_batched() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("lib.pk"), "fn twice(x) {\n    x + x\n}\n").unwrap();
        let main = ADD
            .replace(
                "z[..] = x[..] + y[..];",
                "z[..] = lib::twice(x[..]) + y[..];",
            )
            .replacen("kernel", "use lib;\n\nkernel", 1);
        std::fs::write(dir.path().join("add.pk"), main).unwrap();
        let s = open(&dir.path().join("add.pk"));
        let b = batched(&s, None, &[true, true], 2).expect("batchable");
        let m = b
            .check(&specialised())
            .expect("the batched kernel compiles");
        let shape: Vec<u64> = m.kernels[0].operands[2]
            .shape
            .iter()
            .map(|d| d.get())
            .collect();
        assert_eq!(shape, [2, 8, 128]);
    }

    /// A file opened again is not parsed again until it changes.
    #[test]
    fn sessions_parse_a_file_again_only_when_it_changed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("add.pk");
        std::fs::write(&path, ADD).expect("source");
        let sessions = Sessions::default();
        let first = sessions.open(&path).expect("opens");
        let again = sessions.open(&path).expect("opens");
        assert_eq!(again.parses(), first.parses());
        assert_eq!(again.resolves(), first.resolves());
        std::fs::write(&path, ADD.replace("M = 8", "M = 16")).expect("source");
        let edited = sessions.open(&path).expect("opens");
        assert_eq!(edited.parses(), first.parses() + 1);
        let m = edited.check(&specialised()).expect("compiles");
        assert_eq!(m.kernels[0].operands[0].shape[0].get(), 16);
        // What was handed out before stays as it was.
        let m = first.check(&specialised()).expect("compiles");
        assert_eq!(m.kernels[0].operands[0].shape[0].get(), 8);
        std::fs::remove_file(&path).expect("removed");
        assert!(sessions.open(&path).is_err());
    }

    /// Scalar-prefetch operands come first in a call, as in the compiled
    /// kernel's operand order, and their sizes are inferred like inputs'.
    /// A source that starts with a byte-order mark is read as the
    /// compiler reads it: the sizes are bound from the arrays.
    #[test]
    fn a_source_with_a_bom_binds_its_sizes() {
        let src =
            "\u{feff}kernel copy<R, C>(x: f32[R, C]) -> y: f32[R, C]\n{\n    y[..] = x[..];\n}\n";
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("copy.pk");
        std::fs::write(&path, src).expect("source");
        let x = ArgSig {
            dtype: "f32".to_string(),
            shape: vec![24, 256],
        };
        let got = infer_params(&open(&path), None, &[], &[x]).expect("binds");
        assert_eq!(
            got,
            [
                ("R".to_string(), "24".to_string()),
                ("C".to_string(), "256".to_string())
            ]
        );
    }

    #[test]
    fn prefetch_operands_are_bound_before_the_inputs() {
        let src = "kernel rows<G = 8, R = 16>(x: f32[R, 128] block [8, 128] at (t, 0))\n    -> y: f32[R, 128] block [8, 128] at (t, 0)\nprefetch (n: i32[G])\ngrid (t in n[0] <= R / 8 arbitrary)\n{\n    y[..] = x[..];\n}\n";
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("rows.pk");
        std::fs::write(&path, src).expect("source");
        let sig = |dtype: &str, shape: &[u64]| ArgSig {
            dtype: dtype.to_string(),
            shape: shape.to_vec(),
        };
        let got = infer_params(
            &open(&path),
            None,
            &[],
            &[sig("i32", &[3]), sig("f32", &[64, 128])],
        )
        .expect("binds");
        assert_eq!(
            got,
            [
                ("G".to_string(), "3".to_string()),
                ("R".to_string(), "64".to_string())
            ]
        );
        // The input alone is one array short.
        let e =
            infer_params(&open(&path), None, &[], &[sig("f32", &[64, 128])]).expect_err("count");
        assert!(
            e.diags[0]
                .message
                .contains("takes 2 arrays (n, x), 1 given"),
            "{}",
            e.diags[0].message
        );
    }

    /// The header names a call's arrays for the parameters given: prefetch
    /// first, conditional operands only where their condition holds.
    #[test]
    fn header_lists_the_operands_of_a_call() {
        let src = "kernel acc<M = 8, ACC: bool = false>(\n    x: f32[M, 128],\n    prev: f32[M, 128] if ACC,\n) -> (y: f32[M, 128], s: f32[M, 1] if !ACC)\nprefetch (n: i32[1])\n{\n    y[..] = x[..];\n}\nkernel other<M = 8>(x: f32[M, 128]) -> y: f32[M, 128]\n{\n    y[..] = x[..];\n}\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acc.pk");
        std::fs::write(&path, src).unwrap();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let h = header(&open(&path), Some("acc"), &[]).expect("acc");
        assert_eq!(h.kernel, "acc");
        assert_eq!(h.params, names(&["M", "ACC"]));
        assert_eq!(h.inputs, names(&["n", "x"]));
        assert_eq!(h.outputs, names(&["y", "s"]));
        let on = [("ACC".to_string(), "true".to_string())];
        let h = header(&open(&path), Some("acc"), &on).expect("acc");
        assert_eq!(
            (h.inputs, h.outputs),
            (names(&["n", "x", "prev"]), names(&["y"]))
        );
        // Two kernels and no choice, or a name the file lacks: the
        // compiler is left to say so.
        assert!(header(&open(&path), None, &[]).is_none());
        assert!(header(&open(&path), Some("missing"), &[]).is_none());
    }

    /// An operand written `if COND` takes an array only where its condition
    /// holds, by the bool parameter's given value or its default.
    #[test]
    fn absent_conditional_operands_take_no_array() {
        let src = "kernel acc<M = 8, ACC: bool = false>(\n    x: f32[M, 128],\n    prev: f32[M, 128] if ACC,\n    other: f32[M, 128] if !ACC,\n) -> y: f32[M, 128] aliases prev\n{\n    y[..] = x[..];\n}\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acc.pk");
        std::fs::write(&path, src).unwrap();
        let a = ArgSig {
            dtype: "f32".to_string(),
            shape: vec![16, 128],
        };
        let two = [a.clone(), a.clone()];
        let got = infer_params(&open(&path), None, &[], &two).expect("x and other");
        assert_eq!(got, vec![("M".to_string(), "16".to_string())]);
        let on = [("ACC".to_string(), "true".to_string())];
        assert!(
            infer_params(&open(&path), None, &on, &two).is_ok(),
            "x and prev"
        );
        assert!(infer_params(&open(&path), None, &on, &[a.clone(), a.clone(), a]).is_err());
    }
}

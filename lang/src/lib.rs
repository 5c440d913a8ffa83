//! pk's front end: `.pk` source to typed, verified Tile IR.
//!
//! The pipeline, one module per stage:
//!
//! ```text
//! source --lexer--> tokens --parse--> ast --resolve--> Program --check--> ir::Module --verify
//! ```
//!
//! [`compile_source`] and [`compile_file`] run it for the kernels of one
//! file, specialised with the given parameters for one target.

pub mod analysis;
pub mod ast;
pub mod check;
pub mod depth;
pub mod diag;
pub mod files;
pub mod fmt;
pub mod ir;
pub mod lexer;
pub mod parse;
pub mod resolve;
pub mod span;
pub mod target;

use diag::{codes, Diag};
use span::{SourceMap, Span};
use std::path::Path;
use std::sync::Arc;
pub use target::Target;

/// Source files larger than this are rejected before lexing.
pub const MAX_SOURCE_BYTES: usize = 16 << 20;

/// What to compile and how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub target: Target,
    /// `-p NAME=VALUE` pairs, values as written (an integer expression or a
    /// dtype name).
    pub params: Vec<(String, String)>,
    /// Where values of `params` came from, by name, in the words of the
    /// program that set them (`"from the call's keyword arguments"`), for
    /// the note of a failed assertion. A value not listed here was set on
    /// the command line, and the note spells it `-p NAME=VALUE`.
    pub param_origins: Vec<(String, String)>,
    /// `--kernel NAME`: only this kernel. Without it, every kernel of the
    /// file (and `specialise` then applies to each).
    pub kernel: Option<String>,
    /// Require every parameter to have a value (build, run, emit); without
    /// it unbound sizes stay symbolic and are checked as far as possible.
    pub specialise: bool,
    /// Skip the TPU rules (block tiling and divisibility, VMEM and SMEM
    /// budgets, races, MXU input dtypes, 32-bit scalar reads) so that a
    /// kernel breaking one still
    /// lowers. (A 32-bit matmul accumulator is an invariant of the IR.)
    /// Only for tests that show libtpu rejecting what the checker rejects;
    /// no command sets it.
    pub skip_tpu_rules: bool,
}

/// A failed compilation: its diagnostics and the sources they point into.
#[derive(Debug, Clone)]
pub struct Failure {
    pub diags: Vec<Diag>,
    pub sources: Arc<SourceMap>,
}

impl Failure {
    /// Renders the first [`diag::DEFAULT_MAX_SHOWN`] diagnostics as text,
    /// and a count of the rest (which stay in `diags`).
    pub fn render(&self, style: diag::RenderStyle) -> String {
        diag::render_capped(
            &self.diags,
            &self.sources,
            style,
            Some(diag::DEFAULT_MAX_SHOWN),
            "`pkc check --all-errors` shows every one",
        )
    }
}

/// Compiles source text; `name` is the file name shown in diagnostics, and
/// `use NAME` of sibling modules is resolved relative to `dir`.
pub fn compile_source(name: &str, text: &str, opts: &Options) -> Result<ir::Module, Failure> {
    compile_in(name, text, None, opts)
}

/// Compiles a kernel again from the sources a kernel package carries (its
/// CPU reference's side table): `files` are every file the build loaded,
/// the root first, by the names they were loaded under, so that the
/// result's source map and locations are the build's. Sibling modules come
/// from `files`, never from the disk; the standard library is this pk's.
pub fn compile_embedded(files: &[(String, String)], opts: &Options) -> Result<ir::Module, Failure> {
    let Some((name, text)) = files.first() else {
        let mut sources = SourceMap::new();
        let root = sources.add("<package>", "");
        let d = Diag::new(
            &codes::IO_ERROR,
            "the package carries no source file",
            Span::new(root, 0, 0),
        );
        return Err(Failure {
            diags: vec![d],
            sources: Arc::new(sources),
        });
    };
    let dir = Path::new(name).parent().map(Path::to_path_buf);
    let modules = Loaded {
        dir,
        embedded: Some(files[1..].to_vec()),
    };
    on_compiler_stack(|| compile_here(name, text, modules.clone(), opts, Stage::Kernels)).map(|c| {
        match c {
            Compiled::Module(m) => m,
            _ => unreachable!("the kernel stage returns a module"),
        }
    })
}

/// Where `use NAME` finds sibling modules: next to the root file on disk,
/// or among the files a package carries.
#[derive(Clone)]
struct Loaded {
    dir: Option<std::path::PathBuf>,
    embedded: Option<Vec<(String, String)>>,
}

impl Loaded {
    fn disk(dir: Option<std::path::PathBuf>) -> Loaded {
        Loaded {
            dir,
            embedded: None,
        }
    }
}

/// Reads and compiles a `.pk` file.
pub fn compile_file(path: &Path, opts: &Options) -> Result<ir::Module, Failure> {
    let name = path.to_string_lossy().to_string();
    let text = read_source(path)?;
    compile_in(&name, &text, path.parent().map(Path::to_path_buf), opts)
}

/// Reads a source file, reporting unreadable, binary and oversized files.
pub fn read_source(path: &Path) -> Result<String, Failure> {
    read_text(path).map_err(|d| {
        let mut sources = SourceMap::new();
        sources.add(path.to_string_lossy().to_string(), "");
        Failure {
            diags: vec![*d],
            sources: Arc::new(sources),
        }
    })
}

fn read_text(path: &Path) -> Result<String, Box<Diag>> {
    let here = Span::default();
    let bytes = files::read_limited(path, MAX_SOURCE_BYTES as u64).map_err(|e| match e {
        files::ReadError::TooLarge(size) => Diag::new(
            &codes::FILE_TOO_LARGE,
            match size {
                Some(n) => format!(
                    "`{}` is {n} bytes, more than the 16 MiB limit",
                    path.display()
                ),
                None => format!("`{}` is more than the 16 MiB limit", path.display()),
            },
            here,
        )
        .help("is this really a .pk source file?"),
        e => Diag::new(
            &codes::IO_ERROR,
            format!("cannot read `{}`: {}", path.display(), e.reason()),
            here,
        )
        .help("check the path; pk source files end in `.pk`"),
    })?;
    source_text(path, bytes)
}

/// The text of a source file's bytes, without a byte-order mark; bytes
/// that are not UTF-8 are `PK0007`, naming `path`.
pub(crate) fn source_text(path: &Path, bytes: Vec<u8>) -> Result<String, Box<Diag>> {
    let mut text = String::from_utf8(bytes).map_err(|e| {
        Box::new(
            Diag::new(
                &codes::NOT_UTF8,
                format!(
                    "`{}` is not UTF-8 text (invalid byte at offset {})",
                    path.display(),
                    e.utf8_error().valid_up_to()
                ),
                Span::default(),
            )
            .help("pass a .pk source file"),
        )
    })?;
    if text.starts_with(files::BOM) {
        text.drain(..files::BOM.len());
    }
    Ok(text)
}

/// Stack for the compiler's recursive passes. Trees are at most
/// [`depth::MAX_TREE_DEPTH`] deep, so this bound holds whatever thread calls
/// pk (test harness threads have 2 MiB). Only touched pages are committed.
const COMPILER_STACK_BYTES: usize = 64 << 20;

fn compile_in(
    name: &str,
    text: &str,
    dir: Option<std::path::PathBuf>,
    opts: &Options,
) -> Result<ir::Module, Failure> {
    on_compiler_stack(|| compile_here(name, text, Loaded::disk(dir.clone()), opts, Stage::Kernels))
        .map(|c| match c {
            Compiled::Module(m) => m,
            _ => unreachable!("the kernel stage returns a module"),
        })
}

/// The parameters of each selected kernel of `text`, checked as far as
/// their own declarations (values, kinds, candidates) and no further: what
/// a tuner needs to know of a kernel before it picks a configuration, even
/// when the default configuration breaks a rule for the given shapes.
pub fn kernel_params(
    path: &Path,
    opts: &Options,
) -> Result<Vec<(String, Vec<ir::Param>)>, Failure> {
    let name = path.to_string_lossy().to_string();
    let text = read_source(path)?;
    let dir = path.parent().map(Path::to_path_buf);
    on_compiler_stack(|| compile_here(&name, &text, Loaded::disk(dir.clone()), opts, Stage::Params))
        .map(|c| match c {
            Compiled::Params(p) => p,
            _ => unreachable!("the parameter stage returns parameters"),
        })
}

/// For each configuration (one value per name in `names`, set on top of
/// `opts.params`), whether the selected kernel's `where` constraints hold.
/// The file is read and parsed once, and only the kernel's parameters and
/// constraints are checked per configuration, so a tuner can filter a
/// large space before it samples it. A configuration whose parameters have
/// errors of their own counts as holding: its full check reports them.
pub fn where_holds(
    path: &Path,
    opts: &Options,
    names: &[String],
    configs: &[Vec<i64>],
) -> Result<Vec<bool>, Failure> {
    let name = path.to_string_lossy().to_string();
    let text = read_source(path)?;
    let dir = path.parent().map(Path::to_path_buf);
    let stage = Stage::Wheres(names, configs);
    on_compiler_stack(|| compile_here(&name, &text, Loaded::disk(dir.clone()), opts, stage)).map(
        |c| match c {
            Compiled::Holds(h) => h,
            _ => unreachable!("the constraint stage returns one answer per configuration"),
        },
    )
}

/// `v` as an integer literal expression at `span`.
fn int_literal(v: i64, span: Span) -> ast::Expr {
    let lit = ast::Expr {
        kind: ast::ExprKind::Int(v.unsigned_abs()),
        span,
    };
    if v >= 0 {
        lit
    } else {
        ast::Expr {
            kind: ast::ExprKind::Unary(ast::UnOp::Neg, Box::new(lit)),
            span,
        }
    }
}

/// Runs `f` on a thread with the compiler's stack.
pub(crate) fn on_compiler_stack<T: Send>(f: impl FnOnce() -> T + Send + Clone) -> T {
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("pk-compile".into())
            .stack_size(COMPILER_STACK_BYTES)
            .spawn_scoped(s, f.clone());
        match worker {
            Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            // No thread to be had: compile on this one.
            Err(_) => f(),
        }
    })
}

/// How far [`compile_here`] goes.
#[derive(Clone, Copy, PartialEq)]
enum Stage<'a> {
    Params,
    Kernels,
    /// The `where` constraints of the selected kernel, once per
    /// configuration: values of the named parameters.
    Wheres(&'a [String], &'a [Vec<i64>]),
}

enum Compiled {
    Module(ir::Module),
    Params(Vec<(String, Vec<ir::Param>)>),
    Holds(Vec<bool>),
}

fn compile_here(
    name: &str,
    text: &str,
    modules: Loaded,
    opts: &Options,
    stage: Stage<'_>,
) -> Result<Compiled, Failure> {
    // Offsets count from after a byte-order mark, as editors count columns.
    let text = files::strip_bom(text);
    let mut sources = SourceMap::new();
    let root = sources.add(name, text);
    if text.len() > MAX_SOURCE_BYTES {
        let d = Diag::new(
            &codes::FILE_TOO_LARGE,
            "source is larger than the 16 MiB limit",
            Span::new(root, 0, 0),
        );
        return Err(Failure {
            diags: vec![d],
            sources: Arc::new(sources),
        });
    }
    let mut loader = resolve::Loader::new(&mut sources, modules.dir);
    loader.embedded = modules.embedded;
    let (program, mut diags) = loader.load(root);
    if diags.iter().any(|d| d.is_error()) {
        return Err(Failure {
            diags,
            sources: Arc::new(sources),
        });
    }
    // `-p` values are parsed as expressions in a file of their own.
    let mut param_exprs = Vec::new();
    for (n, v) in &opts.params {
        let f = sources.add(format!("-p {n}"), v.clone());
        match parse::parse_expr(f, v) {
            Ok(e) => param_exprs.push((
                n.clone(),
                check::Expr2 {
                    expr: e,
                    text: v.clone(),
                },
            )),
            Err(ds) => {
                for d in ds {
                    diags.push(
                        Diag::new(&codes::BAD_PARAM_VALUE, format!("cannot read the value of `-p {n}={v}`"), d.span)
                            .label(d.message)
                            .help("values are integers, integer expressions (`4 * 128`) or dtype names (`bf16`)"),
                    );
                }
            }
        }
    }
    let kernels = program.root_kernels();
    let selected: Vec<(usize, &ast::KernelDecl)> = match &opts.kernel {
        Some(k) => kernels
            .iter()
            .filter(|(_, d)| d.name.name == *k)
            .cloned()
            .collect(),
        None => kernels.clone(),
    };
    if let Some(k) = &opts.kernel {
        if selected.is_empty() {
            let names = kernels
                .iter()
                .map(|(_, d)| d.name.name.clone())
                .collect::<Vec<_>>()
                .join(", ");
            let arg = sources.add("<command line>", format!("--kernel {k}"));
            diags.push(
                Diag::new(
                    &codes::NO_KERNEL,
                    format!("no kernel `{k}` in `{name}`"),
                    Span::new(arg, 9, 9 + k.len()),
                )
                .label("not a kernel of this file")
                .help(if names.is_empty() {
                    "the file defines no kernels".to_string()
                } else {
                    format!("kernels here: {names}")
                }),
            );
        }
    }
    for (n, v) in &opts.params {
        let known = selected
            .iter()
            .any(|(_, d)| d.params.iter().any(|p| p.name.name == *n));
        if !known && !selected.is_empty() {
            let names = selected
                .iter()
                .flat_map(|(_, d)| d.params.iter().map(|p| p.name.name.clone()))
                .collect::<Vec<_>>()
                .join(", ");
            let arg = sources.add("<command line>", format!("-p {n}={v}"));
            diags.push(
                Diag::new(
                    &codes::UNKNOWN_PARAM,
                    format!("no kernel here has a parameter `{n}`"),
                    Span::new(arg, 3, 3 + n.len()),
                )
                .label("unknown parameter")
                .help(format!("parameters: {names} (names are case-sensitive)")),
            );
        }
    }
    if diags.iter().any(|d| d.is_error()) {
        return Err(Failure {
            diags,
            sources: Arc::new(sources),
        });
    }
    let spec = check::Spec {
        target: opts.target,
        params: opts.params.clone(),
        param_origins: opts.param_origins.clone(),
        specialise: opts.specialise,
    };
    let mut ck = check::Checker::new(&program, opts.target);
    ck.skip_tpu_rules = opts.skip_tpu_rules;
    if let Stage::Wheres(names, configs) = stage {
        let constrained = |d: &ast::KernelDecl| {
            d.clauses
                .iter()
                .any(|c| matches!(c, ast::Clause::Where(..)))
        };
        let Some((_, decl)) = selected.first().filter(|(_, d)| constrained(d)) else {
            return Ok(Compiled::Holds(vec![true; configs.len()]));
        };
        let at = Span::new(root, 0, 0);
        let holds = configs
            .iter()
            .map(|c| {
                let mut values: Vec<(String, check::Expr2)> = param_exprs
                    .iter()
                    .filter(|(n, _)| !names.contains(n))
                    .cloned()
                    .collect();
                for (n, &v) in names.iter().zip(c) {
                    let expr = int_literal(v, at);
                    values.push((
                        n.clone(),
                        check::Expr2 {
                            expr,
                            text: v.to_string(),
                        },
                    ));
                }
                let mut ck = check::Checker::new(&program, opts.target);
                check::wheres_hold(&mut ck, resolve::ModId(0), decl, &spec, &values)
            })
            .collect();
        return Ok(Compiled::Holds(holds));
    }
    if stage == Stage::Params {
        let params: Vec<(String, Vec<ir::Param>)> = selected
            .iter()
            .map(|(_, decl)| {
                let ps =
                    check::kernel_params(&mut ck, resolve::ModId(0), decl, &spec, &param_exprs);
                (decl.name.name.clone(), ps)
            })
            .collect();
        if ck.has_errors() {
            diags.extend(ck.diags);
            return Err(Failure {
                diags,
                sources: Arc::new(sources),
            });
        }
        return Ok(Compiled::Params(params));
    }
    let mut out = Vec::new();
    for (_, decl) in selected {
        if let Some(k) = check::check_kernel(&mut ck, resolve::ModId(0), decl, &spec, &param_exprs)
        {
            if let Err(e) = ir::verify::verify_kernel(&k, opts.specialise) {
                ck.error(
                    Diag::new(
                        &codes::INTERNAL,
                        format!(
                            "internal error: the IR of `{}` is invalid: {}",
                            k.name, e.message
                        ),
                        e.span,
                    )
                    .help("this is a bug in pk; please report it with the kernel source"),
                );
            }
            out.push(k);
        }
    }
    diags.extend(ck.diags);
    if diags.iter().any(|d| d.is_error()) {
        return Err(Failure {
            diags,
            sources: Arc::new(sources),
        });
    }
    Ok(Compiled::Module(ir::Module {
        kernels: out,
        sources: Arc::new(sources),
        warnings: diags,
    }))
}

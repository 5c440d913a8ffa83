//! A compile session: one file (or in-memory text) read, parsed and
//! resolved once, then checked as often as asked, per parameter set and
//! per target, against the same resolved program.
//!
//! ```text
//! Session::open(path)  --lex, parse, resolve-->  Program + SourceMap
//!   .check(opts)       --check, verify-->        ir::Module  (per -p set, per target)
//!   .params(opts)      --parameters only-->      a tuner's view of the kernel
//!   .edit(text)        --re-parse what changed-->  the same session
//! ```
//!
//! `-p` values ([`Options::params`]) are an overlay of each call: they are
//! parsed into that call's copy of the source map and never stored in the
//! session. After an edit ([`Session::edit`], [`Session::set_module`],
//! [`Session::reload`]) only changed files are parsed again, and only
//! modules that changed or reach a changed one are resolved again; the
//! counters [`Session::parses`] and [`Session::resolves`] show it.

use crate::diag::{codes, Diag};
use crate::resolve::{self, ParseCache, Program};
use crate::span::{FileId, SourceMap, Span};
use crate::{ast, check, files, ir, parse, read_source, Failure, Options, MAX_SOURCE_BYTES};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Stack for the compiler's recursive passes. Trees are at most
/// [`crate::depth::MAX_TREE_DEPTH`] deep, so this bound holds whatever
/// thread calls pk (test harness threads have 2 MiB). Only touched pages
/// are committed.
const COMPILER_STACK_BYTES: usize = 64 << 20;

/// One `.pk` file and everything it uses, parsed and resolved.
///
/// A session is `Sync`: threads may check configurations of it at once.
#[derive(Debug, Clone)]
pub struct Session {
    /// The root file's name, as diagnostics show it.
    name: String,
    /// Where `use NAME` finds sibling modules on disk.
    dir: Option<PathBuf>,
    /// Sibling modules a kernel package carries (never the disk).
    embedded: Option<Vec<(String, String)>>,
    /// Sibling modules' texts that stand for the disk's.
    overlays: HashMap<String, String>,
    /// Every file loaded so far; the root is file 0, and files keep their
    /// ids across edits.
    sources: SourceMap,
    cache: ParseCache,
    program: Program,
    /// What loading said: parse and resolution diagnostics.
    diags: Vec<Diag>,
}

impl Session {
    /// Reads, parses and resolves a `.pk` file; sibling modules are read
    /// next to it. A file that cannot be read is the failure.
    pub fn open(path: &Path) -> Result<Session, Failure> {
        let name = path.to_string_lossy().to_string();
        let text = read_source(path)?;
        Ok(Session::from_text(
            &name,
            &text,
            path.parent().map(Path::to_path_buf),
        ))
    }

    /// Parses and resolves source text; `name` is the file name shown in
    /// diagnostics, and `use NAME` reads `NAME.pk` in `dir` (the working
    /// directory without one).
    pub fn from_text(name: &str, text: &str, dir: Option<PathBuf>) -> Session {
        Session::new(name, text, dir, None)
    }

    /// A session of the sources a kernel package carries: `files` are every
    /// file the build loaded, the root first, by the names they were loaded
    /// under, so that locations are the build's. Sibling modules come from
    /// `files`, never from the disk; the standard library is this pk's.
    pub fn embedded(files: &[(String, String)]) -> Result<Session, Failure> {
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
        Ok(Session::new(name, text, dir, Some(files[1..].to_vec())))
    }

    fn new(
        name: &str,
        text: &str,
        dir: Option<PathBuf>,
        embedded: Option<Vec<(String, String)>>,
    ) -> Session {
        let mut sources = SourceMap::new();
        // Offsets count from after a byte-order mark, as editors count columns.
        sources.add(name, files::strip_bom(text));
        let mut s = Session {
            name: name.to_string(),
            dir,
            embedded,
            overlays: HashMap::new(),
            sources,
            cache: ParseCache::default(),
            program: Program::default(),
            diags: Vec::new(),
        };
        s.load();
        s
    }

    /// Replaces the root file's text (an edit in an editor) and resolves
    /// again, parsing only what changed.
    pub fn edit(&mut self, text: &str) {
        self.sources.replace(FileId(0), files::strip_bom(text));
        self.load();
    }

    /// Sets the text of the sibling module at `path` (as `use` reads it:
    /// the root's directory joined with `NAME.pk`), standing for the disk's
    /// until [`Session::clear_module`]; resolves again.
    pub fn set_module(&mut self, path: &Path, text: &str) {
        self.overlays
            .insert(path.to_string_lossy().to_string(), text.to_string());
        self.load();
    }

    /// Drops the text [`Session::set_module`] set; the disk's counts again.
    pub fn clear_module(&mut self, path: &Path) {
        self.overlays.remove(&*path.to_string_lossy());
        self.load();
    }

    /// Reads sibling modules from the disk again (one may have changed)
    /// and resolves again; unchanged files are not parsed again.
    pub fn reload(&mut self) {
        self.load();
    }

    fn load(&mut self) {
        let root = FileId(0);
        if self.sources.get(root).text.len() > MAX_SOURCE_BYTES {
            self.program = Program::default();
            self.diags = vec![Diag::new(
                &codes::FILE_TOO_LARGE,
                "source is larger than the 16 MiB limit",
                Span::new(root, 0, 0),
            )];
            return;
        }
        let (program, diags) = on_compiler_stack(|| {
            let mut loader = resolve::Loader::new(&mut self.sources, self.dir.clone());
            loader.embedded = self.embedded.clone();
            loader.overlays = self.overlays.clone();
            loader.cache = Some(&mut self.cache);
            loader.load(root)
        });
        self.program = program;
        self.diags = diags;
    }

    /// The root file's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The resolved program: module 0 is the root file.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Every file loaded, by the ids spans carry.
    pub fn sources(&self) -> &SourceMap {
        &self.sources
    }

    /// What parsing and resolving said (errors and warnings); checks add
    /// their own.
    pub fn diagnostics(&self) -> &[Diag] {
        &self.diags
    }

    /// Whether parsing and resolving found an error.
    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(|d| d.is_error())
    }

    /// The names of the root file's kernels, in source order.
    pub fn kernels(&self) -> Vec<&str> {
        if self.program.modules.is_empty() {
            return Vec::new();
        }
        self.program
            .root_kernels()
            .into_iter()
            .map(|(_, k)| k.name.name.as_str())
            .collect()
    }

    /// How many files this session has parsed, edits included.
    pub fn parses(&self) -> usize {
        self.cache.parses
    }

    /// How many module bodies this session has resolved, edits included.
    pub fn resolves(&self) -> usize {
        self.cache.resolves
    }

    /// Checks the selected kernels (all without [`Options::kernel`]) for
    /// `opts.target` with `opts.params` set, to verified Tile IR.
    pub fn check(&self, opts: &Options) -> Result<ir::Module, Failure> {
        self.run(opts, Stage::Kernels).map(|c| match c {
            Compiled::Module(m) => m,
            _ => unreachable!("the kernel stage returns a module"),
        })
    }

    /// The parameters of each selected kernel, checked as far as their own
    /// declarations (values, kinds, candidates) and no further: what a
    /// tuner needs to know of a kernel before it picks a configuration,
    /// even when the default configuration breaks a rule for the given
    /// shapes.
    pub fn params(&self, opts: &Options) -> Result<Vec<(String, Vec<ir::Param>)>, Failure> {
        self.run(opts, Stage::Params).map(|c| match c {
            Compiled::Params(p) => p,
            _ => unreachable!("the parameter stage returns parameters"),
        })
    }

    /// For each configuration (one value per name in `names`, set on top of
    /// `opts.params`), whether the selected kernel's `where` constraints
    /// hold. Only the kernel's parameters and constraints are checked per
    /// configuration, so a tuner can filter a large space before it
    /// samples it. A configuration whose parameters have errors of their
    /// own counts as holding: its full check reports them.
    pub fn where_holds(
        &self,
        opts: &Options,
        names: &[String],
        configs: &[Vec<i64>],
    ) -> Result<Vec<bool>, Failure> {
        self.run(opts, Stage::Wheres(names, configs))
            .map(|c| match c {
                Compiled::Holds(h) => h,
                _ => unreachable!("the constraint stage returns one answer per configuration"),
            })
    }

    fn run(&self, opts: &Options, stage: Stage<'_>) -> Result<Compiled, Failure> {
        on_compiler_stack(|| self.run_here(opts, stage))
    }

    fn run_here(&self, opts: &Options, stage: Stage<'_>) -> Result<Compiled, Failure> {
        // Each call's `-p` values and command-line spans go into its own
        // copy of the source map.
        let mut sources = self.sources.clone();
        let mut diags = self.diags.clone();
        let name = &self.name;
        let program = &self.program;
        let root = FileId(0);
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
        let mut ck = check::Checker::new(program, opts.target);
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
                    let mut ck = check::Checker::new(program, opts.target);
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
            if let Some(k) =
                check::check_kernel(&mut ck, resolve::ModId(0), decl, &spec, &param_exprs)
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
pub(crate) fn on_compiler_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let f = Mutex::new(Some(f));
    let take = || f.lock().unwrap_or_else(|e| e.into_inner()).take();
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("pk-compile".into())
            .stack_size(COMPILER_STACK_BYTES)
            .spawn_scoped(s, || take().expect("the compile runs once")());
        match worker {
            Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            // No thread to be had: compile on this one.
            Err(_) => take().expect("the compile runs once")(),
        }
    })
}

/// How far [`Session::run`] goes.
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

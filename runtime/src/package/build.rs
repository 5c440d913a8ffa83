//! Building packages from `.pk` source: what `pkc build` does, as a library
//! so that tests and benchmarks run the same code.
//!
//! ```text
//! .pk --check (each target)--> Tile IR --mosaic::lower--> stable Mosaic
//!     --custom_call + each target's VMEM limit--> StableHLO per target
//!     --wasm::lower--> CPU reference
//!     [--aot: libtpu compile per target--> executable + report]
//! ```
//!
//! Errors come back as pk diagnostics pointing into the `.pk` source: the
//! front end's own, the Mosaic back end's (`PK21xx`, located by the
//! `loc(...)` it attached), and libtpu's (`PK2007`, located through the
//! `loc(...)` entries the TPU compiler quotes).

use std::path::Path;
use std::sync::Arc;

use pk_lang::diag::{codes, Diag, Explanation};
use pk_lang::ir;
use pk_lang::span::{SourceMap, Span};
use pk_lang::Failure;
use pk_lowering::{mosaic, stablehlo, wasm};

use super::error::explanation;
use super::{AotArtifact, Manifest, NewPackage, StablehloModule};
use crate::pjrt::{self, PjrtError, Plugin, TpuTarget};

/// What to build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// The TPU generations to check the kernel for, at least one. The
    /// first one's VMEM sizes the CPU reference's memory.
    pub targets: Vec<TpuTarget>,
    /// `-p NAME=VALUE` pairs, values as written.
    pub params: Vec<(String, String)>,
    /// Where values of `params` came from, for a program that is not the
    /// command line (see `pk_lang::Options::param_origins`).
    pub param_origins: Vec<(String, String)>,
    /// Only this kernel of the file.
    pub kernel: Option<String>,
    /// Also lower the kernel to WebAssembly (the CPU reference).
    pub cpu_reference: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            targets: vec![TpuTarget::V5e],
            params: Vec::new(),
            param_origins: Vec::new(),
            kernel: None,
            cpu_reference: true,
        }
    }
}

/// The packages of one `.pk` file, not yet written.
#[derive(Debug)]
pub struct Built {
    pub kernels: Vec<BuiltKernel>,
    /// Warnings (e.g. no CPU reference); render them against `sources`.
    pub warnings: Vec<Diag>,
    pub sources: Arc<SourceMap>,
}

/// One kernel specialisation, ready to be compiled ahead of time and
/// written.
#[derive(Debug)]
pub struct BuiltKernel {
    /// The specialised Tile IR (for locating later errors).
    pub kernel: ir::Kernel,
    pub package: NewPackage,
    /// The package's directory name: the kernel's name, followed by the
    /// parameters set on the command line (`matmul-bm128-T_f32`), so that
    /// specialisations built side by side do not overwrite each other.
    pub dir_name: String,
}

/// Checks `path` for every target and lowers each of its kernels (or the
/// one selected) to a package.
pub fn build_file(path: &Path, opts: &BuildOptions) -> Result<Built, Failure> {
    build_session(&pk_lang::Session::open(path)?, opts)
}

/// [`build_file`] of a file already open: every target (and every call,
/// as a tuner makes one per configuration) is checked against the
/// session's one parse.
pub fn build_session(session: &pk_lang::Session, opts: &BuildOptions) -> Result<Built, Failure> {
    let source = Path::new(session.name())
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    build_with(&|o: &pk_lang::Options| session.check(o), &source, opts)
}

/// [`build_file`] for a kernel a package carries: its source files, root
/// first, by the names the build loaded them under (see
/// [`pk_lang::compile_embedded`]), and `source`, the manifest's file name.
pub fn build_embedded(
    files: &[(String, String)],
    source: &str,
    opts: &BuildOptions,
) -> Result<Built, Failure> {
    let session = pk_lang::Session::embedded(files)?;
    build_with(&|o: &pk_lang::Options| session.check(o), source, opts)
}

type Compile<'a> = dyn Fn(&pk_lang::Options) -> Result<ir::Module, Failure> + 'a;

fn build_with(compile: &Compile<'_>, source: &str, opts: &BuildOptions) -> Result<Built, Failure> {
    let Some(&first) = opts.targets.first() else {
        return Err(usage_failure("no target to build for"));
    };
    let compile = |t: TpuTarget| {
        compile(&pk_lang::Options {
            target: t,
            params: opts.params.clone(),
            param_origins: opts.param_origins.clone(),
            kernel: opts.kernel.clone(),
            specialise: true,
            ..Default::default()
        })
    };
    let module = compile(first)?;
    // Only the checks differ between targets (dtype support, VMEM budget),
    // so the first target's IR is lowered and the others are checked.
    let mut failures: Vec<Failure> = Vec::new();
    for &t in &opts.targets[1..] {
        if let Err(f) = compile(t) {
            failures.push(f);
        }
    }
    if let Some(first_failure) = failures.first() {
        // Every compile numbers the same files in the same order, so their
        // spans agree and one source map renders them all.
        let mut diags: Vec<Diag> = Vec::new();
        for d in failures.iter().flat_map(|f| f.diags.iter()) {
            if !diags.contains(d) {
                diags.push(d.clone());
            }
        }
        return Err(Failure {
            diags,
            sources: first_failure.sources.clone(),
        });
    }
    let mut kernels = Vec::new();
    // The checker's warnings (of the first target) come first.
    let mut warnings = module.warnings.clone();
    let mut errors = Vec::new();
    for k in &module.kernels {
        match build_kernel(&module, k, source, opts) {
            Ok((built, warning)) => {
                kernels.push(built);
                warnings.extend(warning);
            }
            Err(d) => errors.push(*d),
        }
    }
    if !errors.is_empty() {
        return Err(Failure {
            diags: errors,
            sources: module.sources.clone(),
        });
    }
    Ok(Built {
        kernels,
        warnings,
        sources: module.sources,
    })
}

fn build_kernel(
    module: &ir::Module,
    k: &ir::Kernel,
    source: &str,
    opts: &BuildOptions,
) -> Result<(BuiltKernel, Option<Diag>), Box<Diag>> {
    let lowered = mosaic::lower(module, k, &mosaic::Options::default())
        .map_err(|e| mosaic_diagnostic(&e, k, &module.sources))?;
    // One module per target, each with that target's scoped VMEM limit;
    // targets with the same limit share the text (and, in the package, the
    // file).
    let mut modules: Vec<StablehloModule> = Vec::new();
    for &target in &opts.targets {
        let limit = vmem_limit(k, target);
        let text = match modules.iter().find(|m| m.vmem_limit_bytes == limit) {
            Some(m) => m.text.clone(),
            None => {
                let mut call = mosaic::custom_call(k, &lowered);
                call.vmem_limit_bytes = Some(limit);
                stablehlo::custom_call_module(&call).map_err(|e| {
                    Diag::new(
                        &codes::INTERNAL,
                        format!(
                            "internal error: cannot wrap `{}` into StableHLO: {e}",
                            k.name
                        ),
                        k.span,
                    )
                    .help("this is a bug in pk; please report it with the kernel source")
                })?
            }
        };
        modules.push(StablehloModule {
            target,
            vmem_limit_bytes: limit,
            text,
        });
    }
    let mut warning = None;
    let cpu_reference = if opts.cpu_reference {
        let wasm_opts = wasm::Options {
            target: opts.targets[0],
            check_uninit: false,
        };
        match wasm::lower(k, &module.sources, &wasm_opts) {
            Ok(w) => Some((w.bytes, w.manifest)),
            Err(e) => {
                warning = Some(
                    Diag::new(
                        explanation("PK3012"),
                        format!("no CPU reference for `{}`: {e}", k.name),
                        e.span().unwrap_or(k.span),
                    )
                    .warning()
                    .label("the CPU reference cannot run this")
                    .help("the package's TPU artifacts are complete; `pkc run` needs kernel.wasm"),
                );
                None
            }
        }
    } else {
        None
    };
    let manifest = Manifest::describe(k, source, &opts.targets, lowered.version);
    let package = NewPackage {
        manifest,
        modules,
        mosaic: lowered.text,
        cpu_reference,
        aot: Vec::new(),
    };
    let built = BuiltKernel {
        kernel: k.clone(),
        package,
        dir_name: dir_name(k, &opts.params),
    };
    Ok((built, warning))
}

/// The scoped VMEM limit passed to the TPU compiler for `target`: the
/// kernel's own `vmem_limit`, else the target's whole VMEM.
///
/// libtpu's default scoped limit is a fraction of the chip's VMEM (16 MiB of
/// v5e's 128 MiB), while pk's type checker accepts any kernel whose blocks
/// and scratch fit the whole VMEM of every target it was checked for. So
/// that every kernel pk accepts also compiles, pk passes that whole VMEM, as
/// Pallas users do by hand with `vmem_limit_bytes`. Each target gets its
/// own: the limit changes the code libtpu generates, so a target's
/// executable is the same whichever targets were built with it.
pub fn vmem_limit(kernel: &ir::Kernel, target: TpuTarget) -> u64 {
    kernel.vmem_limit.unwrap_or_else(|| target.vmem_bytes())
}

/// Compiles a built kernel for one target with libtpu (with that target's
/// module). libtpu's own log lines are printed only when `verbose`; see
/// [`Plugin::compile_logged`].
pub fn compile_aot(
    plugin: &'static Plugin,
    built: &BuiltKernel,
    target: TpuTarget,
    verbose: bool,
) -> Result<AotArtifact, PjrtError> {
    let Some(stablehlo) = built.package.stablehlo_for(target) else {
        return Err(PjrtError::Compile {
            target: target.to_string(),
            status: "INVALID_ARGUMENT".into(),
            message: format!("`{}` was not built for {target}", built.kernel.name),
            locations: Vec::new(),
        });
    };
    let k = &built.kernel;
    if let Some(n) = k
        .devices()
        .filter(|&n| !k.mesh.is_empty() && n > pjrt::MAX_MESH_DEVICES)
    {
        return Err(PjrtError::Compile {
            target: target.to_string(),
            status: "INVALID_ARGUMENT".into(),
            message: format!(
                "{MESH_TOO_LARGE} {n} devices; the largest {target} slice pk compiles for ({}) has {}",
                target
                    .topology_for(pjrt::MAX_MESH_DEVICES)
                    .unwrap_or_default(),
                pjrt::MAX_MESH_DEVICES
            ),
            locations: Vec::new(),
        });
    }
    plugin
        .compile_logged(target, stablehlo, verbose)
        .map(AotArtifact::from_compiled)
}

const MESH_TOO_LARGE: &str = "the kernel's mesh has";

fn dir_name(k: &ir::Kernel, given: &[(String, String)]) -> String {
    let mut name = k.name.clone();
    for p in &k.params {
        if !given.iter().any(|(n, _)| *n == p.name) {
            continue;
        }
        let value = match &p.value {
            ir::ParamValue::Int(v) => v.to_string(),
            ir::ParamValue::Dtype(d) => format!("_{}", d.name()),
            ir::ParamValue::Float(x) => format!("{x:?}"),
            ir::ParamValue::Bool(b) => format!("_{b}"),
            ir::ParamValue::None => "_none".to_string(),
            ir::ParamValue::Unbound => continue,
        };
        name.push('-');
        name.push_str(&p.name);
        name.push_str(&value);
    }
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A diagnostic for a Mosaic back-end error, at the `.pk` location it
/// names, else at the kernel.
pub fn mosaic_diagnostic(
    e: &mosaic::MosaicError,
    k: &ir::Kernel,
    sources: &SourceMap,
) -> Box<Diag> {
    use miette::Diagnostic as _;
    use mosaic::MosaicError as E;
    let code = e.code().map(|c| c.to_string()).unwrap_or_default();
    let at = match e {
        E::InvalidIr { at, .. } | E::Unsupported { at, .. } | E::Build { at, .. } => {
            span_at(sources, &at.0, at.1, at.2)
        }
        E::NotSpecialised { .. } | E::Verify { .. } | E::Serialize { .. } => None,
    };
    let mut d = Diag::new(
        find_code(mosaic::EXPLANATIONS, &code),
        e.to_string(),
        at.unwrap_or(k.span),
    );
    if let Some(help) = e.help() {
        d = d.help(help.to_string());
    }
    Box::new(d)
}

/// A diagnostic for libtpu rejecting a kernel (`PK2007`), pointing at the
/// first `.pk` location the compiler's message names, with the rest as
/// secondary labels and the message's substance as notes. `None` for other
/// PJRT errors, which are not about the source.
pub fn libtpu_diagnostic(e: &PjrtError, k: &ir::Kernel, sources: &SourceMap) -> Option<Diag> {
    let PjrtError::Compile {
        target,
        status,
        message,
        locations,
    } = e
    else {
        return None;
    };
    let mut spans: Vec<Span> = Vec::new();
    for (file, line, col) in locations {
        if let Some(s) = span_at(sources, file, *line, *col) {
            if !spans.contains(&s) {
                spans.push(s);
            }
        }
    }
    let lines = summary_lines(message);
    let headline = lines.first().cloned().unwrap_or_else(|| status.clone());
    let too_large = message.starts_with(MESH_TOO_LARGE);
    let who = if too_large {
        "pk cannot compile"
    } else {
        "libtpu rejected"
    };
    let mut d = Diag::new(
        find_code(pjrt::EXPLANATIONS, "PK2007"),
        format!("{who} `{}` for {target}: {headline}", k.name),
        spans.first().copied().unwrap_or(k.span),
    )
    .label(if spans.is_empty() {
        "in this kernel"
    } else {
        "the TPU compiler names this"
    });
    for &s in spans.iter().skip(1).take(4) {
        d = d.with(s, "also named by the TPU compiler");
    }
    for l in lines.iter().skip(1) {
        d = d.note(l.clone());
    }
    if too_large {
        return Some(d.help(
            "AOT compiles a kernel on a mesh of at most 8 devices (each generation's slice of 8 devices): build it with a smaller mesh, e.g. `-p n=8`",
        ));
    }
    Some(d.note(format!("libtpu status: {status}")).help(
        "pk should have rejected this kernel itself; please report it. `pkc build -v` prints libtpu's full message",
    ))
}

/// The lines of a compiler message worth showing, at most five of at most
/// 240 characters: without MLIR operation dumps, `loc(...)` trails, HLO
/// text, bug-report boilerplate and libtpu's own source trace. A line
/// ending in `:` is joined with the next, so that an error code and its
/// text stay together.
fn summary_lines(message: &str) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    for line in message.lines().map(str::trim) {
        // What follows is the location of libtpu's own C++ code.
        if line.starts_with("=== ") {
            break;
        }
        let noise = [
            "%",
            "\"",
            "^bb",
            "loc(",
            "at location",
            "The MLIR operation",
            "Please report",
        ];
        if line.is_empty()
            || noise.iter().any(|p| line.starts_with(p))
            || line.contains("stable_mosaic.")
        {
            continue;
        }
        let line = without_ir(line);
        if line.is_empty() {
            continue;
        }
        match kept.last_mut() {
            Some(last) if last.ends_with(':') => {
                last.push(' ');
                last.push_str(&line);
            }
            _ => kept.push(line),
        }
    }
    kept.into_iter()
        .take(5)
        .map(|l| {
            if l.chars().count() > 240 {
                let cut: String = l.chars().take(240).collect();
                format!("{cut}...")
            } else {
                l
            }
        })
        .collect()
}

/// `line` without a trailing `loc(...)` and with each sentence that quotes
/// IR (`%name = ...`) cut where the quote starts.
fn without_ir(line: &str) -> String {
    let line = match line.find(" loc(") {
        Some(i) => line[..i].trim_end(),
        None => line,
    };
    let sentences: Vec<&str> = line
        .split(". ")
        .filter_map(|s| {
            let cut = match s.find(" for %").or_else(|| s.find('%')) {
                Some(i) => s[..i].trim_end(),
                None => s,
            };
            (!cut.is_empty()).then_some(cut)
        })
        .collect();
    sentences.join(". ")
}

/// The span of the word at `file:line:col` (1-based, column in characters),
/// or of one character where no word starts; `None` when the file is not
/// among `sources` or the position is outside it.
pub fn span_at(sources: &SourceMap, file: &str, line: u32, col: u32) -> Option<Span> {
    let (id, f) = sources.files().find(|(_, f)| f.name == file)?;
    let text: &str = &f.text;
    let line_start = if line <= 1 {
        0
    } else {
        text.match_indices('\n')
            .nth(line as usize - 2)
            .map(|(i, _)| i + 1)?
    };
    let rest = &text[line_start..];
    let line_text = rest.split('\n').next().unwrap_or("");
    let (offset, _) = line_text
        .char_indices()
        .nth(col.saturating_sub(1) as usize)
        .or(if col as usize == line_text.chars().count() + 1 {
            Some((line_text.len(), ' '))
        } else {
            None
        })?;
    let start = line_start + offset;
    let word = text[start..]
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(text.len() - start);
    let end = start + word.max(text[start..].chars().next().map_or(0, char::len_utf8));
    Some(Span::new(id, start, end))
}

fn find_code(table: &'static [Explanation], code: &str) -> &'static Explanation {
    table
        .iter()
        .find(|e| e.code == code)
        .unwrap_or(&codes::INTERNAL)
}

fn usage_failure(message: &str) -> Failure {
    let mut sources = SourceMap::new();
    let file = sources.add("<command line>", "");
    Failure {
        diags: vec![Diag::new(&codes::INTERNAL, message, Span::new(file, 0, 0))],
        sources: Arc::new(sources),
    }
}

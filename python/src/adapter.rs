//! The extension's only contact with pk's crates: building a kernel from
//! source (what `pkc build` does), opening a package, binding a call's
//! arrays, running the CPU reference and compiling with libtpu. Everything
//! else in the extension sees the plain types defined here, so a change in
//! pk's APIs is a change in this file.

use std::path::Path;
use std::sync::Arc;

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme};
use pk_lang::diag::RenderStyle;
use pk_lang::ir::{self, DType};
use pk_lang::span::SourceMap;
use pk_lang::Failure;
use pk_lowering::wasm;
use pk_runtime::bind::{self, ArgSig, OperandSig};
use pk_runtime::cpu::{CpuKernel, Error as CpuError, HostArray, RunOptions};
use pk_runtime::package::build::{build_session, BuildOptions};
use pk_runtime::package::{OperandRole, Package, PackageError};
use pk_runtime::pjrt::{Plugin, TpuTarget};

/// A pk error rendered for a person: the diagnostic's text, carets and
/// help included, and its code.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub code: Option<String>,
    pub message: String,
}

impl Rendered {
    fn failure(f: &Failure) -> Rendered {
        Rendered {
            code: f.diags.first().map(|d| d.code.code.to_string()),
            message: f.render(RenderStyle::Plain).trim_end().to_string(),
        }
    }

    pub fn diagnostic(e: &dyn Diagnostic) -> Rendered {
        let mut out = String::new();
        if GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
            .render_report(&mut out, e)
            .is_err()
        {
            out = e.to_string();
        }
        Rendered {
            code: e.code().map(|c| c.to_string()),
            message: out.trim_end().to_string(),
        }
    }

    pub fn plain(message: impl Into<String>) -> Rendered {
        Rendered {
            code: None,
            message: message.into(),
        }
    }
}

/// One specialised kernel, ready to lower (its StableHLO) and to run (its
/// CPU reference).
pub struct Built {
    pub name: String,
    /// The parameters it was specialised with, as `NAME=VALUE` strings.
    pub params: Vec<(String, String)>,
    pub inputs: Vec<OperandSig>,
    pub outputs: Vec<OperandSig>,
    /// `(input, output)` pairs that share a buffer.
    pub aliases: Vec<(usize, usize)>,
    /// The module `pkc build` writes: one `tpu_custom_call`.
    pub stablehlo: String,
    pub cpu: Option<Arc<CpuKernel>>,
    /// The error running it on CPU is, when it has no CPU reference: what
    /// `pkc run` reports for the same source (`PK1021`, at the operation
    /// the CPU reference lacks) or package (`PK3012`).
    pub no_cpu: Option<Rendered>,
    /// Where a kernel built from source came from (none for a package).
    pub origin: Option<Origin>,
}

/// The source a kernel was built from, kept to build its batched form.
pub struct Origin {
    pub text: String,
    pub targets: Vec<TpuTarget>,
    /// Where the parameters came from (see [`build_source`]).
    pub param_origins: Vec<(String, String)>,
}

/// Parses a target name (`v5e`).
pub fn target(name: &str) -> Result<TpuTarget, Rendered> {
    pk_runtime::pjrt::parse_target(name).map_err(|e| Rendered::diagnostic(&e))
}

pub fn all_targets() -> Vec<String> {
    TpuTarget::all()
        .iter()
        .map(|t| t.name().to_string())
        .collect()
}

/// Builds kernel `kernel` of `path` (the only one when `None`) with
/// `params`, checked for `targets`, as `pkc build` does. `param_origins`
/// says in the caller's words where each parameter came from (`"from the
/// call's keyword arguments"`), for the notes of a failed assertion; a
/// parameter without one is described as set on the command line.
pub fn build_source(
    path: &Path,
    kernel: Option<&str>,
    params: &[(String, String)],
    param_origins: &[(String, String)],
    targets: &[TpuTarget],
) -> Result<Built, Rendered> {
    let opts = BuildOptions {
        targets: targets.to_vec(),
        params: params.to_vec(),
        param_origins: param_origins.to_vec(),
        kernel: kernel.map(str::to_string),
        cpu_reference: true,
    };
    // One read and parse serves every target's check and the source the
    // package carries.
    let session = pk_lang::Session::open(path).map_err(|f| Rendered::failure(&f))?;
    let built = build_session(&session, &opts).map_err(|f| Rendered::failure(&f))?;
    let text = session
        .sources()
        .get(pk_lang::span::FileId(0))
        .text
        .to_string();
    let names: Vec<&str> = built
        .kernels
        .iter()
        .map(|k| k.kernel.name.as_str())
        .collect();
    let k = match built.kernels.as_slice() {
        [only] => only,
        _ => {
            return Err(Rendered::plain(format!(
                "error: `{}` defines several kernels ({}); pass kernel=NAME",
                path.display(),
                names.join(", ")
            )))
        }
    };
    let sig = |o: &ir::Operand| OperandSig {
        name: o.name.clone(),
        dtype: o.dtype.name().to_string(),
        shape: o.shape.iter().map(|d| d.get()).collect(),
    };
    let ops = &k.kernel.operands;
    let input_pos: Vec<usize> = (0..ops.len())
        .filter(|&i| ops[i].role != ir::Role::Output)
        .collect();
    let aliases = k
        .kernel
        .outputs()
        .enumerate()
        .filter_map(|(r, o)| {
            let a = o.aliases?;
            Some((input_pos.iter().position(|&i| i == a)?, r))
        })
        .collect();
    let (cpu, no_cpu) = match &k.package.cpu_reference {
        Some((wasm, m)) => (
            Some(Arc::new(
                CpuKernel::new(wasm, m.clone(), false).map_err(|e| Rendered::diagnostic(&e))?,
            )),
            None,
        ),
        None => (
            None,
            Some(no_cpu_reference(&k.kernel, &built.sources, targets)),
        ),
    };
    Ok(Built {
        name: k.kernel.name.clone(),
        params: params.to_vec(),
        inputs: k.kernel.inputs().map(sig).collect(),
        outputs: k.kernel.outputs().map(sig).collect(),
        aliases,
        stablehlo: k.package.stablehlo().to_string(),
        cpu,
        no_cpu,
        origin: Some(Origin {
            text,
            targets: targets.to_vec(),
            param_origins: param_origins.to_vec(),
        }),
    })
}

/// The error of running `b` on CPU when it has no CPU reference.
pub fn no_cpu(b: &Built) -> Rendered {
    b.no_cpu
        .clone()
        .unwrap_or_else(|| Rendered::plain(format!("error: `{}` has no CPU reference", b.name)))
}

/// Why `kernel` has no CPU reference, as `pkc run` of its source says it:
/// the CPU lowering's error (`PK1021` at the operation it lacks), which
/// `pkc build` only keeps as the message of its `PK3012` warning.
fn no_cpu_reference(kernel: &ir::Kernel, sources: &SourceMap, targets: &[TpuTarget]) -> Rendered {
    let opts = wasm::Options {
        target: targets.first().copied().unwrap_or(TpuTarget::V5e),
        check_uninit: false,
    };
    match wasm::lower(kernel, sources, &opts) {
        Err(e) => Rendered::diagnostic(&CpuError::from_lowering(&e, sources)),
        Ok(_) => Rendered::plain(format!(
            "error: `{}` was built without a CPU reference",
            kernel.name
        )),
    }
}

/// The kernel `b` batched over a leading grid axis of `size` steps (see
/// `pk_runtime::bind::batched_source`), with a leading dimension on the
/// inputs marked in `batched` and on every output. `None` when the kernel
/// cannot be batched that way (a package, a kernel without a grid or with
/// an unblocked batched operand) or the batched form does not build.
pub fn batch(b: &Built, batched: &[bool], size: u64) -> Option<Built> {
    let origin = b.origin.as_ref()?;
    let text = bind::batched_source(&origin.text, Some(&b.name), batched, size)?;
    // The batched source is a file of its own in a directory of this
    // process; the user's directories are never written.
    static DIR: std::sync::OnceLock<Option<tempfile::TempDir>> = std::sync::OnceLock::new();
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = DIR
        .get_or_init(|| {
            tempfile::Builder::new()
                .prefix("pk-batched-")
                .tempdir()
                .ok()
        })
        .as_ref()?;
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.path().join(format!("{}-batched-{n}.pk", b.name));
    std::fs::write(&path, &text).ok()?;
    build_source(
        &path,
        Some(&b.name),
        &b.params,
        &origin.param_origins,
        &origin.targets,
    )
    .ok()
}

/// Opens a package built by `pkc build`, verifying every file against its
/// manifest.
pub fn open_package(dir: &Path) -> Result<Built, Rendered> {
    let p = Package::open(dir).map_err(|e| Rendered::diagnostic(&e))?;
    let m = p.manifest();
    let sig = |o: &pk_runtime::package::Operand| OperandSig {
        name: o.name.clone(),
        dtype: o.dtype.clone(),
        shape: o.shape.clone(),
    };
    let inputs: Vec<OperandSig> = m
        .operands
        .iter()
        .filter(|o| o.role != OperandRole::Output)
        .map(sig)
        .collect();
    let outputs_m: Vec<_> = m
        .operands
        .iter()
        .filter(|o| o.role == OperandRole::Output)
        .collect();
    let aliases = outputs_m
        .iter()
        .enumerate()
        .filter_map(|(r, o)| {
            let a = o.alias.as_ref()?;
            Some((inputs.iter().position(|i| &i.name == a)?, r))
        })
        .collect();
    let cpu = match p.cpu_reference() {
        Some((wasm, cm)) => Some(Arc::new(
            CpuKernel::new(wasm, cm.clone(), false).map_err(|e| Rendered::diagnostic(&e))?,
        )),
        None => None,
    };
    let params = m
        .params
        .iter()
        .map(|p| (p.name.clone(), p.value.to_string()))
        .collect();
    Ok(Built {
        name: m.kernel.clone(),
        params,
        inputs,
        outputs: outputs_m.into_iter().map(sig).collect(),
        aliases,
        stablehlo: p.stablehlo().to_string(),
        no_cpu: cpu.is_none().then(|| {
            Rendered::diagnostic(&PackageError::NoCpuReference {
                dir: dir.display().to_string(),
                kernel: m.kernel.clone(),
            })
        }),
        cpu,
        origin: None,
    })
}

/// The parameters the arrays of a call determine, added to `given`.
pub fn infer_params(
    path: &Path,
    kernel: Option<&str>,
    given: &[(String, String)],
    args: &[ArgSig],
) -> Result<Vec<(String, String)>, Rendered> {
    bind::infer_params(path, kernel, given, args).map_err(|f| Rendered::failure(&f))
}

/// The operands of a call of a kernel, by name, from its header (see
/// `pk_runtime::bind::header`).
pub fn header(
    path: &Path,
    kernel: Option<&str>,
    given: &[(String, String)],
) -> Option<bind::Header> {
    bind::header(path, kernel, given)
}

/// Checks a call's arrays against a specialised kernel's inputs.
pub fn check_args(b: &Built, args: &[ArgSig]) -> Result<(), Rendered> {
    bind::check_args(&b.name, &b.inputs, args).map_err(|f| Rendered::failure(&f))
}

pub fn package_params(dir: &str, names: &[String]) -> Rendered {
    Rendered::failure(&bind::package_params(dir, names))
}

pub fn dtype(name: &str) -> Option<DType> {
    DType::from_name(name)
}

/// Bytes per element of a pk dtype in memory (bool is 4).
pub fn elem_bytes(d: DType) -> usize {
    d.bytes() as usize
}

/// Runs the CPU reference: `inputs` hold the input operands' bytes in call
/// order, and each output's bytes are copied into `outputs`.
pub fn run_cpu(
    k: &CpuKernel,
    inputs: Vec<Arc<HostArray>>,
    outputs: &mut [&mut [u8]],
) -> Result<(), Rendered> {
    let opts = RunOptions::default();
    let results = k
        .run_shared(&inputs, &opts)
        .map_err(|e| Rendered::diagnostic(&e))?;
    for (dst, r) in outputs.iter_mut().zip(&results) {
        if dst.len() != r.data.len() {
            return Err(Rendered::plain(format!(
                "internal error: output of {} bytes for a buffer of {}",
                r.data.len(),
                dst.len()
            )));
        }
        dst.copy_from_slice(&r.data);
    }
    Ok(())
}

/// Runs the CPU reference on a host framework's buffers, in place.
pub fn run_cpu_in_place(
    k: &CpuKernel,
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
) -> Result<(), Rendered> {
    k.run_in_place(inputs, outputs, &RunOptions::default())
        .map_err(|e| Rendered::diagnostic(&e))
}

pub fn host_array(d: DType, shape: Vec<usize>, data: Vec<u8>) -> HostArray {
    HostArray::new(d, shape, data)
}

/// What libtpu said about one compiled target.
pub struct AotResult {
    pub target: String,
    pub topology: String,
    pub generated_code_bytes: u64,
    pub executable_bytes: u64,
    pub compile_ms: f64,
    /// `(name, bytes)` of libtpu's memory accounting, when it gives one.
    pub memory: Vec<(&'static str, u64)>,
    pub executable: Vec<u8>,
}

/// Removes the `TPU_*` variables that importing JAX leaves behind (keeping
/// `TPU_SKIP_MDS_QUERY`): libtpu reads them at plugin initialisation and
/// fails on JAX's placeholders ("unexpected worker hostname").
pub fn clean_tpu_environment() {
    let stale: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("TPU_") && k != "TPU_SKIP_MDS_QUERY")
        .collect();
    for k in stale {
        std::env::remove_var(k);
    }
    std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
}

/// Compiles a StableHLO module (text or bytecode) for `target` with
/// libtpu, as `pkc build --aot` does.
pub fn aot_compile(
    code: &[u8],
    target: TpuTarget,
    replicas: u32,
    partitions: u32,
) -> Result<AotResult, Rendered> {
    let plugin = Plugin::load(None).map_err(|e| Rendered::diagnostic(&e))?;
    let devices = u64::from(replicas.max(1)) * u64::from(partitions.max(1));
    let topology = plugin
        .topology_for(target, devices)
        .map_err(|e| Rendered::diagnostic(&e))?;
    let c = topology
        .compile_program(code, replicas, partitions)
        .map_err(|e| Rendered::diagnostic(&e))?;
    let memory = c
        .memory_stats
        .map(|m| {
            vec![
                ("argument_bytes", m.argument_bytes),
                ("output_bytes", m.output_bytes),
                ("alias_bytes", m.alias_bytes),
                ("temp_bytes", m.temp_bytes),
                ("generated_code_bytes", m.generated_code_bytes),
                ("peak_memory_bytes", m.peak_memory_bytes),
            ]
        })
        .unwrap_or_default();
    Ok(AotResult {
        target: target.name().to_string(),
        topology: c.topology.to_string(),
        generated_code_bytes: c.generated_code_bytes,
        executable_bytes: c.serialized_executable.len() as u64,
        compile_ms: c.compile_time.as_secs_f64() * 1e3,
        memory,
        executable: c.serialized_executable,
    })
}

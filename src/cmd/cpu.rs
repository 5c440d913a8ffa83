//! What `pkc run`, `pkc test` and `pkc bench` share: compiling a kernel for
//! the CPU reference (from a `.pk` file, or from a package directory built
//! by `pkc build`, verified against its manifest first), run options, named
//! `.npy` arguments, and printing CPU reference diagnostics.

use super::common::{cpu_exit_code, report, KernelArgs, EXIT_ERRORS};
use super::ui::print_diagnostic;
use super::usage::UsageError;
use clap::{Args as ClapArgs, ValueEnum};
use pk_lang::ir::{self, DType};
use pk_lowering::wasm::abi::Role;
use pk_runtime::cpu::{CpuKernel, DmaMode, Error, HostArray, RunOptions};
use pk_runtime::package::Package;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaArg {
    /// A copy completes when it starts.
    Start,
    /// A copy completes when it is waited for (its destination reads as
    /// NaN until then).
    Wait,
}

#[derive(ClapArgs, Debug, Clone)]
pub struct CpuArgs {
    #[command(flatten)]
    pub kernel: KernelArgs,
    /// Worker threads, one kernel instance each (default: every core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Let workers move between CPUs (by default each one is pinned to its
    /// own CPU for the run).
    #[arg(long)]
    pub no_pin: bool,
    /// Stop a run that takes longer than this many seconds of wall-clock
    /// time (a positive number, e.g. 2.5), or `none` for no limit.
    #[arg(long, value_name = "SECS|none", default_value = "300", value_parser = parse_timeout)]
    pub timeout: Timeout,
    /// Meter execution with fuel and stop a run after N units per thread
    /// (slower than the time limit, but deterministic).
    #[arg(long, value_name = "N")]
    pub fuel: Option<u64>,
    /// When DMA copies complete.
    #[arg(long, value_enum, default_value = "start")]
    pub dma: DmaArg,
    /// Report reads of memory never written (scratch before its first
    /// store, padding of partial blocks) as errors instead of NaN.
    #[arg(long)]
    pub check_uninit: bool,
    /// Run a kernel that has a mesh on a mesh of devices in this process:
    /// `4` devices, or `2x2` for its axis sizes. One instance runs per
    /// device, with its own memories and semaphores; every `--in`,
    /// `--out` and `--expect` array stacks the devices' arrays on leading
    /// dimensions (`[4, ...]`, or `[2, 2, ...]`).
    #[arg(long, value_name = "N|AxB", value_parser = parse_mesh)]
    pub mesh: Option<MeshShape>,
    /// With --mesh: run N random orders of the devices' progress and of
    /// their remote copies' landing (instead of the fixed order), and stop
    /// at the first that fails, saying its seed.
    #[arg(long, value_name = "N", requires = "mesh", value_parser = clap::value_parser!(u64).range(1..))]
    pub schedules: Option<u64>,
    /// The seed of the first random order (order i has seed S + i); with
    /// `--schedules 1` it replays one order.
    #[arg(long, value_name = "S", requires = "schedules", default_value = "0")]
    pub seed: u64,
}

/// The device counts of a mesh given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeshShape(pub Vec<u64>);

/// `--mesh`: `N` or `AxB` (positive sizes).
pub fn parse_mesh(s: &str) -> Result<MeshShape, String> {
    let dims: Result<Vec<u64>, _> = s
        .trim()
        .split(['x', 'X'])
        .map(|d| d.trim().parse::<u64>())
        .collect();
    match dims {
        Ok(d) if !d.is_empty() && d.iter().all(|&v| v > 0) => Ok(MeshShape(d)),
        _ => Err(format!(
            "expected a device count (`4`) or axis sizes (`2x2`), found `{s}`"
        )),
    }
}

/// How `pkc run`/`test` runs a kernel on a mesh.
#[derive(Debug, Clone)]
pub struct MeshRun {
    /// The leading dimensions of every array: the devices, one axis or
    /// the kernel's axes.
    pub shape: Vec<u64>,
    pub schedules: Option<u64>,
    pub seed: u64,
}

/// Checks `--mesh` against the kernel's mesh.
pub fn mesh_run(k: &CpuKernel, a: &CpuArgs) -> Result<Option<MeshRun>, Error> {
    let m = k.manifest();
    let Some(given) = &a.mesh else {
        return Ok(None);
    };
    let sizes: Vec<u64> = m.mesh.iter().map(|x| x.size).collect();
    let text = |v: &[u64]| {
        v.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("x")
    };
    if sizes.is_empty() {
        return Err(Error::MeshMismatch {
            message: format!(
                "kernel `{}` has no mesh, but --mesh {} was given",
                m.kernel,
                text(&given.0)
            ),
        });
    }
    let fits = if given.0.len() == 1 {
        given.0[0] == m.devices()
    } else {
        given.0 == sizes
    };
    if !fits {
        return Err(Error::MeshMismatch {
            message: format!(
                "kernel `{}` runs on {}, but --mesh {} was given (pass --mesh {}, or set the mesh's parameters with -p)",
                m.kernel,
                pk_runtime::cpu::mesh_text(m),
                text(&given.0),
                text(&sizes)
            ),
        });
    }
    Ok(Some(MeshRun {
        shape: given.0.clone(),
        schedules: a.schedules,
        seed: a.seed,
    }))
}

/// The wall-clock limit of a run: `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeout(pub Option<Duration>);

/// `--timeout`: a positive, finite number of seconds that a [`Duration`]
/// can hold, or `none`. Zero, negative, NaN and infinite values are usage
/// errors rather than a silent "no limit".
pub fn parse_timeout(s: &str) -> Result<Timeout, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(Timeout(None));
    }
    let secs: f64 = t
        .parse()
        .map_err(|_| format!("expected a number of seconds or `none`, found `{s}`"))?;
    if secs == 0.0 {
        return Err("a limit of 0 seconds stops every run; for no limit say `none`".into());
    }
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!(
            "expected a positive, finite number of seconds or `none`, found `{s}`"
        ));
    }
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if d.is_zero() => Err(format!("{s} seconds rounds to no time at all")),
        Ok(d) => Ok(Timeout(Some(d))),
        Err(_) => Err(format!(
            "{s} seconds is too long a limit; for no limit say `none`"
        )),
    }
}

/// A kernel ready to run, and its IR when it was compiled from source.
pub struct Loaded {
    pub kernel: CpuKernel,
    pub ir: Option<ir::Kernel>,
}

/// Prints a line to stdout; a closed pipe (`pkc bench ... | head -1`) is
/// not an error worth a panic.
pub fn outln(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

/// `NAME=PATH` arguments.
pub fn parse_named(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((n, p)) if !n.trim().is_empty() && !p.trim().is_empty() => {
            Ok((n.trim().to_string(), PathBuf::from(p.trim())))
        }
        _ => Err(format!("expected NAME=PATH, found `{s}`")),
    }
}

/// Prints a CPU reference diagnostic and returns the exit code.
pub fn report_cpu(e: &Error) -> u8 {
    super::ui::print_diagnostic(e);
    cpu_exit_code(e)
}

pub fn run_options(a: &CpuArgs) -> RunOptions {
    let mut o = RunOptions::default();
    if let Some(t) = a.threads {
        o.threads = t.max(1);
    }
    o.timeout = a.timeout.0;
    o.fuel = a.fuel;
    o.pin = !a.no_pin;
    o.dma = match a.dma {
        DmaArg::Start => DmaMode::AtStart,
        DmaArg::Wait => DmaMode::AtWait,
    };
    o
}

/// Compiles the kernel of `file` (or loads the package directory `file`).
pub fn load(file: &Path, a: &CpuArgs) -> Result<Loaded, u8> {
    load_from(file, None, a)
}

/// [`load`], checking the kernel in `session` when the caller has `file`
/// open already (so it is read and parsed once).
pub fn load_from(
    file: &Path,
    session: Option<&pk_lang::Session>,
    a: &CpuArgs,
) -> Result<Loaded, u8> {
    a.kernel.validate()?;
    let fuel = a.fuel.is_some();
    let loaded = if super::common::is_package_arg(file) {
        if let Some(flag) = a.kernel.source_only_flag() {
            return Err(UsageError::NotApplicable {
                flag: flag.to_string(),
                context: format!(
                    "to the package `{}`, which holds one built specialisation",
                    file.display()
                ),
                hint: "run the .pk source to choose parameters, or build another package with `pkc build`".into(),
            }
            .report());
        }
        load_package(file, fuel, a.check_uninit)?
    } else {
        let opened;
        let session = match session {
            Some(s) => s,
            None => {
                opened = pk_lang::Session::open(file).map_err(|f| report(&f).max(EXIT_ERRORS))?;
                &opened
            }
        };
        compile(file, session, a, fuel)?
    };
    // Before any input file is read: the sizes follow from the operands.
    loaded
        .kernel
        .check_host_memory(run_options(a).threads)
        .map_err(|e| report_cpu(&e))?;
    Ok(loaded)
}

fn compile(file: &Path, session: &pk_lang::Session, a: &CpuArgs, fuel: bool) -> Result<Loaded, u8> {
    let module = session
        .check(&a.kernel.options(true))
        .map_err(|f| report(&f).max(EXIT_ERRORS))?;
    let names: Vec<&str> = module.kernels.iter().map(|k| k.name.as_str()).collect();
    let k = &module.kernels[only_kernel(file, &names)?];
    let opts = pk_lowering::wasm::Options {
        target: a.kernel.target(),
        check_uninit: a.check_uninit,
    };
    let kernel = CpuKernel::from_ir(k, &module.sources, &opts, fuel).map_err(|e| report_cpu(&e))?;
    Ok(Loaded {
        kernel,
        ir: Some(k.clone()),
    })
}

/// The index of the one kernel a command runs: a file that defines none, or
/// several without `--kernel`, is an error.
pub fn only_kernel(file: &Path, names: &[&str]) -> Result<usize, u8> {
    match names {
        [_] => Ok(0),
        [] => Err(UsageError::NoKernel {
            file: file.display().to_string(),
        }
        .report()),
        _ => Err(UsageError::SeveralKernels {
            file: file.display().to_string(),
            names: names.join(", "),
        }
        .report()),
    }
}

/// Opens the package in `dir`, verified whole against its manifest before
/// anything in it is used (see `Package::open`), and compiles its CPU
/// reference. A directory without a manifest is not a package (`PK3001`).
fn load_package(dir: &Path, fuel: bool, check_uninit: bool) -> Result<Loaded, u8> {
    let (_, kernel) = Package::load_cpu(dir, fuel).map_err(|e| {
        print_diagnostic(&e);
        EXIT_ERRORS
    })?;
    if check_uninit && !kernel.manifest().check_uninit {
        eprintln!(
            "warning: this package was built without --check-uninit; run the .pk source to check"
        );
    }
    Ok(Loaded { kernel, ir: None })
}

/// One operand of a kernel as the command line sees it: what `--in`,
/// `--out` and `--expect` name and are checked against.
#[derive(Debug, Clone, PartialEq)]
pub struct Operand {
    pub name: String,
    pub output: bool,
    pub dtype: DType,
    pub shape: Vec<u64>,
}

/// A kernel's operands in call order (prefetch, inputs, outputs), the same
/// whichever device runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Operands {
    pub kernel: String,
    pub list: Vec<Operand>,
}

impl Operands {
    /// The operands of a CPU reference kernel, from its manifest.
    pub fn of_cpu(k: &CpuKernel) -> Operands {
        let list = k
            .manifest()
            .operands
            .iter()
            .enumerate()
            .map(|(i, o)| Operand {
                name: o.name.clone(),
                output: o.role == Role::Output,
                dtype: k.dtype(i),
                shape: o.shape.clone(),
            })
            .collect();
        Operands {
            kernel: k.manifest().kernel.clone(),
            list,
        }
    }

    /// The operands of a specialised kernel, from its IR.
    pub fn of_ir(k: &ir::Kernel) -> Operands {
        let list = k
            .operands
            .iter()
            .map(|o| Operand {
                name: o.name.clone(),
                output: o.role == ir::Role::Output,
                dtype: o.dtype,
                shape: o.shape.iter().map(|d| d.get()).collect(),
            })
            .collect();
        Operands {
            kernel: k.name.clone(),
            list,
        }
    }

    pub fn inputs(&self) -> impl Iterator<Item = &Operand> {
        self.list.iter().filter(|o| !o.output)
    }

    pub fn outputs(&self) -> impl Iterator<Item = &Operand> {
        self.list.iter().filter(|o| o.output)
    }

    pub fn names(&self, output: bool) -> String {
        let names: Vec<&str> = self
            .list
            .iter()
            .filter(|o| o.output == output)
            .map(|o| o.name.as_str())
            .collect();
        names.join(", ")
    }
}

/// Reads the `--in` arrays, in the kernel's input order, each checked
/// against its operand.
pub fn read_inputs(k: &Operands, given: &[(String, PathBuf)]) -> Result<Vec<HostArray>, Error> {
    for (name, _) in given {
        if !k.inputs().any(|o| &o.name == name) {
            return Err(Error::UnknownOperand {
                kernel: k.kernel.clone(),
                role: "input".into(),
                name: name.clone(),
                known: k.names(false),
            });
        }
    }
    let mut out = Vec::new();
    for o in k.inputs() {
        let Some((_, path)) = given.iter().rev().find(|(n, _)| *n == o.name) else {
            return Err(Error::MissingInput {
                operand: o.name.clone(),
                expected: format!("{}[{}]", o.dtype, join(&o.shape)),
            });
        };
        out.push(pk_runtime::cpu::read_operand(
            &o.name, o.dtype, &o.shape, path,
        )?);
    }
    Ok(out)
}

/// Checks that every `--out`/`--expect` name is an output; returns the
/// output index of each.
pub fn output_indices(k: &Operands, given: &[(String, PathBuf)]) -> Result<Vec<usize>, Error> {
    given
        .iter()
        .map(|(name, _)| {
            k.outputs()
                .position(|o| &o.name == name)
                .ok_or_else(|| Error::UnknownOperand {
                    kernel: k.kernel.clone(),
                    role: "output".into(),
                    name: name.clone(),
                    known: k.names(true),
                })
        })
        .collect()
}

pub fn join(v: &[u64]) -> String {
    v.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs a kernel on a mesh: each stacked input is split into the devices'
/// arrays, the outputs stacked back. With `--schedules`, runs each random
/// order in turn and reports the first that fails, with its seed; on
/// failure, prints the diagnostic and returns the exit code.
pub fn run_on_mesh(
    k: &CpuKernel,
    mesh: &MeshRun,
    inputs: Vec<HostArray>,
    opts: &RunOptions,
) -> Result<Vec<HostArray>, u8> {
    use pk_runtime::cpu::mesh::Order;
    use std::sync::Arc;
    let lead = mesh.shape.len();
    let n: usize = mesh.shape.iter().product::<u64>() as usize;
    let mut per: Vec<Vec<Arc<HostArray>>> = vec![Vec::new(); n];
    for a in &inputs {
        let inner: Vec<usize> = a.shape[lead..].to_vec();
        let each = a.data.len() / n.max(1);
        for (d, dev) in per.iter_mut().enumerate() {
            dev.push(Arc::new(HostArray::new(
                a.dtype,
                inner.clone(),
                a.data[d * each..(d + 1) * each].to_vec(),
            )));
        }
    }
    drop(inputs);
    let orders: Vec<Order> = match mesh.schedules {
        None => vec![Order::Fixed],
        Some(count) => (0..count)
            .map(|i| Order::Random(mesh.seed.wrapping_add(i)))
            .collect(),
    };
    let mut last = None;
    for order in orders {
        match k.run_mesh(&per, opts, order) {
            Ok((outs, _)) => last = Some(outs),
            Err(e) => {
                if let Order::Random(seed) = order {
                    eprintln!(
                        "the schedule with seed {seed} fails (replay it with --schedules 1 --seed {seed}):"
                    );
                }
                return Err(report_cpu(&e));
            }
        }
    }
    let Some(outs) = last else {
        return Err(report_cpu(&Error::Internal("no schedule ran".into())));
    };
    // Stack each output over the devices.
    let count = outs.first().map_or(0, Vec::len);
    let mut stacked = Vec::with_capacity(count);
    for j in 0..count {
        let first = &outs[0][j];
        let mut shape: Vec<usize> = mesh.shape.iter().map(|&d| d as usize).collect();
        shape.extend(&first.shape);
        let mut data = Vec::with_capacity(first.data.len() * n);
        for dev in &outs {
            data.extend_from_slice(&dev[j].data);
        }
        stacked.push(HostArray::new(first.dtype, shape, data));
    }
    Ok(stacked)
}

/// `pkc emit wat`: the WebAssembly text of each kernel of a file.
pub fn emit_wat(file: &Path, k: &KernelArgs) -> u8 {
    let module = match pk_lang::compile_file(file, &k.options(true)) {
        Ok(m) => m,
        Err(f) => return report(&f).max(EXIT_ERRORS),
    };
    let opts = pk_lowering::wasm::Options {
        target: k.target(),
        check_uninit: false,
    };
    for (i, kernel) in module.kernels.iter().enumerate() {
        let w = match pk_lowering::wasm::lower(kernel, &module.sources, &opts) {
            Ok(w) => w,
            Err(e) => return report_cpu(&Error::from_lowering(&e, &module.sources)),
        };
        match pk_lowering::wasm::to_wat(&w.bytes) {
            Ok(text) => {
                if module.kernels.len() > 1 {
                    if i > 0 {
                        outln("");
                    }
                    outln(&format!(";; kernel {}", kernel.name));
                }
                outln(text.trim_end());
            }
            Err(e) => return report_cpu(&Error::Internal(e.to_string())),
        }
    }
    super::common::EXIT_OK
}

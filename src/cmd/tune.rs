//! `pkc tune FILE -p M=.. [--in NAME=PATH].. --target T[,..] [--eval
//! model|cpu|tpu] [--budget N] [--jobs J] [--seed S] [--json] [--tuned-cache
//! DIR] [--no-aot] [--plot FILE.svg]`: chooses a kernel's tunable parameters
//! per target (docs/tuning.md).
//!
//! The pipeline, per target: take the space the kernel's candidates declare
//! (every configuration when it holds at most `--budget`, else a seeded
//! sample that includes the default); build each configuration with the
//! checker for that target, which prunes what breaks the TPU's rules (and
//! the kernel's `where`), counting the pruned per diagnostic code; compile
//! the survivors with libtpu ahead of time, on `--jobs` threads, recording
//! code size and memory and dropping what libtpu refuses; rank them with
//! one evaluator (successive halving over timing repeats for `cpu`); print
//! the best, the default and why it lost; cache the best. With `--in`, the
//! model sees the work counted on those inputs (`tune::count`) instead of
//! the static count. With `--ray ADDRESS`, the libtpu compiles of every
//! target run as tasks on a Ray cluster ([`super::tune_ray`]).

use super::build::{parse_targets, Targets};
use super::common::{parse_param, reject_repeats, report, EXIT_ERRORS, EXIT_OK, EXIT_TOOLCHAIN};
use super::cpu::parse_named;
use super::tune_inputs::{count_arrays, read_given, Given};
use super::tune_ray::{self, RayError, RayUse};
use super::ui::{json_line, print_diagnostic, progress, ui};
use clap::{Args as ClapArgs, ValueEnum};
use pk_lang::ir::{self, ParamValue};
use pk_runtime::cpu::Error as CpuError;
use pk_runtime::package::build::{self, BuildOptions, BuiltKernel};
use pk_runtime::pjrt::{MemoryStats, PjrtError, Plugin, TpuTarget, LIBTPU_VERSION};
use pk_runtime::tune::cache::{self, Entry, Key};
use pk_runtime::tune::model::{self, Generation, Prediction};
use pk_runtime::tune::space::{Axis, Config, Space};
use pk_runtime::tune::{count, search, work};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The .pk file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The kernel to tune when the file defines several.
    #[arg(long, short = 'k', value_name = "NAME")]
    pub kernel: Option<String>,
    /// Fix a parameter (shapes, dtypes, or a tunable one to leave alone):
    /// `-p M=4096`. Repeatable.
    #[arg(short = 'p', long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    /// An input array: `--in lengths=lengths.npy`. `--eval model` counts
    /// the work on the given inputs (every scalar-prefetch operand is then
    /// needed); `--eval cpu` times runs on them (the others random).
    #[arg(long = "in", value_name = "NAME=PATH", value_parser = parse_named)]
    pub inputs: Vec<(String, PathBuf)>,
    /// TPU generations, comma-separated (v4, v5e, v5p, v6e, tpu7x), or `all`.
    #[arg(long, short = 't', value_name = "T,...|all", default_value = "v5e", value_parser = parse_targets)]
    pub target: Targets,
    /// How configurations are ranked.
    #[arg(long = "eval", value_enum, default_value = "model")]
    pub eval: Eval,
    /// At most this many configurations per target are built and ranked;
    /// a larger space is sampled with --seed.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    pub budget: u64,
    /// Threads that compile configurations with libtpu (default: every core).
    #[arg(long, short = 'j', value_name = "J", value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: Option<u64>,
    /// Seed of the sampling of large spaces.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Print one JSON object per target instead of tables.
    #[arg(long)]
    pub json: bool,
    /// The tuning cache directory (default: $PK_TUNE_CACHE, else
    /// ~/.cache/pk/tune).
    #[arg(long, value_name = "DIR")]
    pub tuned_cache: Option<PathBuf>,
    /// Skip compiling with libtpu (rank what the checker keeps).
    #[arg(long)]
    pub no_aot: bool,
    /// The libtpu to load (default: $PK_LIBTPU, else pk's cache).
    #[arg(long, value_name = "PATH")]
    pub libtpu: Option<PathBuf>,
    /// Draw every target's space (time against configuration) into this
    /// SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Run the libtpu compiles on the Ray cluster at this address
    /// (`HOST:PORT` of its head, or `auto`), with the Python of $PK_PYTHON,
    /// else `python3`.
    #[arg(long, value_name = "ADDRESS", conflicts_with = "no_aot")]
    pub ray: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Eval {
    /// Predict with the performance model (docs/tuning.md).
    Model,
    /// Time the CPU reference (median of repeats).
    Cpu,
    /// Time on this host's TPU.
    Tpu,
}

impl Eval {
    pub fn name(self) -> &'static str {
        match self {
            Eval::Model => "model",
            Eval::Cpu => "cpu",
            Eval::Tpu => "tpu",
        }
    }
}

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum TuneError {
    #[error("`{kernel}` has no tunable parameter left to choose")]
    #[diagnostic(
        code(PK6001),
        help("declare candidates (`bm = 256 in [128, 256, 512]`), or do not fix them all with -p")
    )]
    NothingToTune { kernel: String },
    #[error("every configuration of `{kernel}` tried for {target} was rejected ({why})")]
    #[diagnostic(code(PK6002), help("check the -p shapes against the candidates; `pkc check -p ...` shows one configuration's diagnostics"))]
    AllPruned {
        kernel: String,
        target: String,
        why: String,
    },
    #[error("cannot write the tuning cache `{dir}`: {message}")]
    #[diagnostic(
        code(PK6003),
        help("pass a writable directory with --tuned-cache DIR or $PK_TUNE_CACHE")
    )]
    CacheUnwritable { dir: String, message: String },
    #[error(
        "--eval tpu times on this host's TPU, a {host}; --target {asked} is another generation"
    )]
    #[diagnostic(
        code(PK6004),
        help("tune with --target {host} here, or rank other generations with --eval model (the default)")
    )]
    TpuTargetMismatch { host: String, asked: String },
}

/// What became of one configuration.
enum Outcome {
    /// The checker (or lowering) rejected it: the first error's code.
    Pruned(String),
    /// The `--in` arrays do not fit it (a missing, unknown or misshapen
    /// operand): counted with the pruned, under the error's code.
    BadInput(Box<CpuError>),
    /// libtpu refused it: its message's first line.
    Refused(String),
    Built(Box<Candidate>),
}

pub struct Candidate {
    pub config: Config,
    pub built: BuiltKernel,
    pub code_bytes: Option<u64>,
    pub memory: Option<MemoryStats>,
    pub work: work::Work,
    pub prediction: Prediction,
    /// The evaluator's time, seconds.
    pub seconds: f64,
}

/// What became of one configuration tried, for the plot and the JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum PointStatus {
    /// Ranked with this time, seconds.
    Ranked(f64),
    /// Rejected by the checker (or its inputs): the code.
    Pruned(String),
    /// Refused by libtpu: its message.
    Refused(String),
    /// Built, but the evaluator could not time it.
    Unranked,
}

#[derive(Debug, Clone)]
pub struct Point {
    pub config: Config,
    pub status: PointStatus,
}

/// The result of one target, for the report and the cache.
pub struct TargetResult {
    pub target: TpuTarget,
    pub space: Space,
    pub space_size: u64,
    pub tried: usize,
    pub pruned: BTreeMap<String, usize>,
    pub refused: Vec<(String, String)>,
    /// Ranked, best first.
    pub ranked: Vec<Candidate>,
    pub default: Option<Config>,
    pub cache_path: Option<PathBuf>,
    /// Whether libtpu compiled the survivors (not under `--no-aot`).
    pub aot: bool,
    /// Every configuration tried, in the order tried.
    pub points: Vec<Point>,
    /// The first `--in` error, shown when it pruned every configuration.
    pub input_error: Option<Box<CpuError>>,
    /// Where the compiles ran, under `--ray`.
    pub ray: Option<RayUse>,
}

/// One target's configurations after the checker (and, without `--ray`,
/// libtpu): built candidates wait for the ranking, or for their compile.
struct Staged {
    target: TpuTarget,
    configs: Vec<Config>,
    outcomes: Vec<Outcome>,
}

pub fn run(a: Args) -> u8 {
    if let Err(code) =
        reject_repeats("-p", &a.params).and_then(|()| reject_repeats("--in", &a.inputs))
    {
        return code;
    }
    let text = match pk_lang::read_source(&a.file) {
        Ok(t) => t,
        Err(f) => return report(&f).max(EXIT_ERRORS),
    };
    // The parameters alone fix the kernel, the space and the shapes the
    // cache is keyed by: the default configuration need not be valid for
    // the shapes given.
    let first = a.target.0[0];
    let (name, params) = match kernel_params(&a.file, a.kernel.as_deref(), &a.params, first) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let space = space_of(&params, &a.params);
    if space.axes.is_empty() {
        print_diagnostic(&TuneError::NothingToTune {
            kernel: name.clone(),
        });
        return EXIT_ERRORS;
    }
    // `--eval tpu` opens this host's TPU before anything is built.
    let device = match a.eval {
        Eval::Tpu => match super::tune_tpu::Device::open(a.libtpu.as_deref(), &a.target.0) {
            Ok(d) => Some(d),
            Err(code) => return code,
        },
        _ => None,
    };
    let plugin = if a.no_aot || a.ray.is_some() {
        None
    } else {
        match Plugin::load_logged(a.libtpu.as_deref(), ui().verbose) {
            Ok(p) => Some(p),
            Err(e) => {
                print_diagnostic(&e);
                return super::common::pjrt_exit_code(&e);
            }
        }
    };
    // The arrays the model counts the work on are read once.
    let given = if a.eval == Eval::Model {
        match read_given(&a.inputs) {
            Ok(g) => g,
            Err(e) => return super::cpu::report_cpu(&e),
        }
    } else {
        Vec::new()
    };
    // The plot's destination is checked (and its temporary file made)
    // before anything is tuned.
    let plot = match a.plot.as_deref().map(super::output::Output::prepare) {
        None => None,
        Some(Ok(o)) => Some(o),
        Some(Err(e)) => return super::cpu::report_cpu(&e),
    };
    let dir = cache::dir(a.tuned_cache.as_deref());
    // Under `--ray`, every target is checked first and their compiles go to
    // the cluster together; else each target is compiled here in turn.
    let mut staged = Vec::new();
    let mut ray = None;
    if let Some(address) = &a.ray {
        for &target in &a.target.0 {
            staged.push(stage(&a, &name, &space, target, None, &given));
        }
        match compile_on_ray(address, a.libtpu.as_deref(), &name, &mut staged) {
            Ok(u) => ray = Some(u),
            Err(e) => {
                print_diagnostic(&e);
                return EXIT_TOOLCHAIN;
            }
        }
    }
    let mut staged = staged.into_iter();
    let mut status = EXIT_OK;
    let mut results = Vec::new();
    for &target in &a.target.0 {
        let st = match staged.next() {
            Some(st) => st,
            None => stage(&a, &name, &space, target, plugin, &given),
        };
        let aot = plugin.is_some() || ray.is_some();
        let mut r = finish(&a, &space, st, aot, ray.clone(), device.as_ref());
        if r.ranked.is_empty() {
            if let Some(e) = &r.input_error {
                print_diagnostic(e.as_ref());
            }
            let mut why: Vec<String> = r
                .pruned
                .iter()
                .map(|(c, n)| format!("{n} by {c}"))
                .collect();
            if !r.refused.is_empty() {
                why.push(format!("{} by libtpu", r.refused.len()));
            }
            print_diagnostic(&TuneError::AllPruned {
                kernel: name.clone(),
                target: target.to_string(),
                why: why.join(", "),
            });
            status = EXIT_ERRORS;
            results.push(r);
            continue;
        }
        let key = cache_key(&text, &name, &params, &a.params, &space, target, a.eval);
        if let Some(dir) = &dir {
            match cache::store(dir, &key, &entry(&r, &key, a.eval)) {
                Ok(p) => r.cache_path = Some(p),
                Err(e) => {
                    print_diagnostic(&TuneError::CacheUnwritable {
                        dir: dir.display().to_string(),
                        message: e.to_string(),
                    });
                    status = EXIT_ERRORS;
                }
            }
        }
        if a.json || ui().json {
            json_line(&super::tune_report::json(&name, a.eval, &r));
        } else if !ui().quiet {
            print!("{}", super::tune_report::table(&name, a.eval, &r));
        }
        results.push(r);
    }
    if let Some(out) = plot {
        let written = super::tune_plot::svg(&name, a.eval, &results)
            .map_err(|reason| CpuError::WriteFailed {
                path: a
                    .plot
                    .as_ref()
                    .map_or(String::new(), |p| p.display().to_string()),
                reason,
            })
            .and_then(|svg| super::output::commit(vec![out], &[svg.into_bytes()]));
        if let Err(e) = written {
            print_diagnostic(&e);
            status = status.max(EXIT_ERRORS);
        }
    }
    status
}

/// The parameters that declare candidates and are not fixed by `-p`.
pub(super) fn space_of(params: &[ir::Param], fixed: &[(String, String)]) -> Space {
    let axes = params
        .iter()
        .filter(|p| !fixed.iter().any(|(n, _)| *n == p.name))
        .filter_map(|p| {
            let candidates = p.candidates.clone()?;
            let default = match p.value {
                ParamValue::Int(v) if candidates.contains(&v) => Some(v),
                _ => None,
            };
            Some(Axis {
                name: p.name.clone(),
                candidates,
                default,
            })
        })
        .collect();
    Space { axes }
}

/// The cache key of a tuning of kernel `name` (whose parameters, as
/// checked, are `params`) for `target` with evaluator `eval`. The values of
/// the parameters that are not tuned (sizes, dtypes, flags) stand for the
/// shapes: the operand shapes are functions of them.
pub(super) fn cache_key(
    text: &str,
    name: &str,
    params: &[ir::Param],
    given: &[(String, String)],
    space: &Space,
    target: TpuTarget,
    eval: Eval,
) -> Key {
    let tuned = |n: &str| space.axes.iter().any(|a| a.name == n);
    let mut fixed: Vec<(String, String)> =
        given.iter().filter(|(n, _)| !tuned(n)).cloned().collect();
    fixed.sort();
    Key {
        source_sha256: cache::source_hash(text),
        kernel: name.to_string(),
        fixed,
        shapes: params
            .iter()
            .filter(|p| !tuned(&p.name))
            .map(|p| format!("{}={}", p.name, p.value))
            .collect(),
        target: target.name().to_string(),
        evaluator: eval.name().to_string(),
        libtpu: LIBTPU_VERSION.to_string(),
        pk: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// The one selected kernel's name and checked parameters.
fn kernel_params(
    file: &Path,
    kernel: Option<&str>,
    params: &[(String, String)],
    target: TpuTarget,
) -> Result<(String, Vec<ir::Param>), u8> {
    let opts = pk_lang::Options {
        target: build::lang_target(target),
        params: params.to_vec(),
        kernel: kernel.map(str::to_string),
        specialise: true,
        ..Default::default()
    };
    let mut ks = pk_lang::kernel_params(file, &opts).map_err(|f| report(&f).max(EXIT_ERRORS))?;
    match ks.len() {
        1 => Ok(ks.remove(0)),
        0 => Err(super::usage::UsageError::NoKernel {
            file: file.display().to_string(),
        }
        .report()),
        _ => {
            let names: Vec<&str> = ks.iter().map(|(n, _)| n.as_str()).collect();
            Err(super::usage::UsageError::SeveralKernels {
                file: file.display().to_string(),
                names: names.join(", "),
            }
            .report())
        }
    }
}

fn entry(r: &TargetResult, key: &Key, eval: Eval) -> Entry {
    let best = &r.ranked[0];
    Entry {
        kernel: key.kernel.clone(),
        target: r.target.name().to_string(),
        evaluator: eval.name().to_string(),
        best: r.space.params(&best.config),
        seconds: best.seconds,
        default_seconds: r
            .default
            .as_ref()
            .and_then(|d| r.ranked.iter().find(|c| &c.config == d))
            .map(|c| c.seconds),
        evaluated: r.ranked.len() as u64,
        key: serde_json::to_value(key).unwrap_or_default(),
    }
}

/// Checks and lowers every configuration tried for `target` and, with a
/// plugin, compiles the survivors, on `--jobs` threads.
fn stage(
    a: &Args,
    name: &str,
    space: &Space,
    target: TpuTarget,
    plugin: Option<&'static Plugin>,
    given: &Given,
) -> Staged {
    let configs = space.choose(a.budget, a.seed);
    let jobs = a
        .jobs
        .map(|j| j as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, configs.len().max(1));
    let bar = progress(configs.len() as u64, &format!("tune {name} {target}"));
    bar.set_message(if plugin.is_some() {
        "checking and compiling"
    } else {
        "checking"
    });
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    let g = Generation::of(target);
    // Each worker takes the next configuration: check and lower it for the
    // target, then compile it with libtpu.
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(c) = configs.get(i) else { break };
                let mut o = lower(a, space, c, target, g, given);
                if let (Some(p), Outcome::Built(cand)) = (plugin, &o) {
                    let compiled =
                        module_of(cand, target).and_then(|m| compile_module(p, target, m));
                    o = with_compile(o, compiled);
                }
                outcomes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((i, o));
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let mut outcomes = outcomes.into_inner().unwrap_or_else(|e| e.into_inner());
    outcomes.sort_by_key(|(i, _)| *i);
    Staged {
        target,
        configs,
        outcomes: outcomes.into_iter().map(|(_, o)| o).collect(),
    }
}

/// Sends the compiles of every staged target's candidates to the Ray
/// cluster at `address`, and records what came back.
fn compile_on_ray(
    address: &str,
    libtpu: Option<&Path>,
    name: &str,
    staged: &mut [Staged],
) -> Result<RayUse, RayError> {
    let mut at = Vec::new();
    let mut jobs = Vec::new();
    let mut missing = Vec::new();
    for (t, st) in staged.iter().enumerate() {
        for (i, o) in st.outcomes.iter().enumerate() {
            if let Outcome::Built(c) = o {
                match module_of(c, st.target) {
                    Ok(module) => {
                        at.push((t, i));
                        jobs.push(tune_ray::Job {
                            target: st.target,
                            module,
                        });
                    }
                    Err(m) => missing.push(((t, i), Err(m))),
                }
            }
        }
    }
    let bar = progress(jobs.len() as u64, &format!("tune {name} on Ray"));
    bar.set_message(format!("connecting to {address}"));
    let (compiled, used) = tune_ray::compile(address, libtpu, &jobs, &bar)?;
    bar.finish_and_clear();
    drop(jobs);
    for ((t, i), r) in at.into_iter().zip(compiled).chain(missing) {
        let o = std::mem::replace(&mut staged[t].outcomes[i], Outcome::Pruned(String::new()));
        staged[t].outcomes[i] = with_compile(o, r);
    }
    Ok(used)
}

/// The StableHLO module libtpu compiles for a built candidate.
pub(super) fn module_of(c: &Candidate, target: TpuTarget) -> Result<&str, String> {
    c.built
        .package
        .stablehlo_for(target)
        .ok_or_else(|| format!("no StableHLO for {target}"))
}

/// A built candidate with libtpu's result: its code size and memory, or
/// its refusal.
fn with_compile(o: Outcome, compiled: tune_ray::Compiled) -> Outcome {
    match (o, compiled) {
        (Outcome::Built(mut c), Ok((code, memory))) => {
            c.code_bytes = Some(code);
            c.memory = memory;
            Outcome::Built(c)
        }
        (Outcome::Built(_), Err(m)) => Outcome::Refused(m),
        (o, _) => o,
    }
}

/// Ranks one staged target's candidates.
fn finish(
    a: &Args,
    space: &Space,
    st: Staged,
    aot: bool,
    ray: Option<RayUse>,
    device: Option<&super::tune_tpu::Device>,
) -> TargetResult {
    let Staged {
        target,
        configs,
        outcomes,
    } = st;
    let mut pruned: BTreeMap<String, usize> = BTreeMap::new();
    let mut refused = Vec::new();
    let mut built: Vec<Candidate> = Vec::new();
    let mut points = Vec::new();
    let mut input_error = None;
    for (i, o) in outcomes.into_iter().enumerate() {
        let status = match o {
            Outcome::Pruned(code) => {
                *pruned.entry(code.clone()).or_default() += 1;
                PointStatus::Pruned(code)
            }
            Outcome::BadInput(e) => {
                let code =
                    miette::Diagnostic::code(e.as_ref()).map_or("?".to_string(), |c| c.to_string());
                *pruned.entry(code.clone()).or_default() += 1;
                input_error.get_or_insert(e);
                PointStatus::Pruned(code)
            }
            Outcome::Refused(m) => {
                refused.push((space.describe(&configs[i]), m.clone()));
                PointStatus::Refused(m)
            }
            Outcome::Built(c) => {
                built.push(*c);
                PointStatus::Unranked
            }
        };
        points.push(Point {
            config: configs[i].clone(),
            status,
        });
    }
    let ranked = rank(a, built, target, device);
    for p in points
        .iter_mut()
        .filter(|p| p.status == PointStatus::Unranked)
    {
        if let Some(c) = ranked.iter().find(|c| c.config == p.config) {
            p.status = PointStatus::Ranked(c.seconds);
        }
    }
    TargetResult {
        points,
        input_error,
        target,
        space: space.clone(),
        space_size: space.size(),
        tried: configs.len(),
        pruned,
        refused,
        ranked,
        default: space.default_config(),
        cache_path: None,
        aot,
        ray,
    }
}

/// Checks and lowers one configuration, and predicts its time; libtpu has
/// not seen it yet.
fn lower(
    a: &Args,
    space: &Space,
    c: &Config,
    target: TpuTarget,
    g: &Generation,
    given: &Given,
) -> Outcome {
    let mut params = a.params.clone();
    params.extend(space.params(c));
    let opts = BuildOptions {
        targets: vec![target],
        params,
        kernel: a.kernel.clone(),
        // `--eval tpu` makes its inputs from the CPU reference's operands.
        cpu_reference: a.eval != Eval::Model,
        ..Default::default()
    };
    let b = match build::build_file(&a.file, &opts) {
        Ok(b) => b,
        Err(f) => {
            let code = f
                .diags
                .iter()
                .find(|d| d.is_error())
                .map_or("?".to_string(), |d| d.code.code.to_string());
            return Outcome::Pruned(code);
        }
    };
    let Some(built) = b.kernels.into_iter().next() else {
        return Outcome::Pruned("?".into());
    };
    // With `--in`, the work the grid really does on those inputs; without,
    // the same for a kernel whose control reads no array (a causal skip
    // depends on the grid indices alone); else the static count (also for
    // a grid too large to count). Inputs that do not fit this configuration
    // prune it before libtpu is asked.
    let w = if given.is_empty() {
        if count::read_operands(&built.kernel).is_empty() {
            count::count(&built.kernel, &count::Arrays::new())
                .unwrap_or_else(|| work::count(&built.kernel))
        } else {
            work::count(&built.kernel)
        }
    } else {
        match count_arrays(&built.kernel, given) {
            Ok(arrays) => {
                count::count(&built.kernel, &arrays).unwrap_or_else(|| work::count(&built.kernel))
            }
            Err(e) => return Outcome::BadInput(Box::new(e)),
        }
    };
    let prediction = model::predict(g, &w);
    Outcome::Built(Box::new(Candidate {
        config: c.clone(),
        built,
        code_bytes: None,
        memory: None,
        work: w,
        seconds: prediction.seconds,
        prediction,
    }))
}

/// Compiles one configuration's StableHLO for `target` with libtpu: its
/// generated code bytes and memory, or libtpu's refusal. Each thread
/// compiles on its own topology; libtpu's compiler is thread-safe, and the
/// shared stderr capture of `compile_logged` would serialise the workers.
pub(super) fn compile_module(
    plugin: &'static Plugin,
    target: TpuTarget,
    stablehlo: &str,
) -> tune_ray::Compiled {
    plugin
        .topology(target)
        .and_then(|t| t.compile(stablehlo))
        .map(|ck| (ck.generated_code_bytes, ck.memory_stats))
        .map_err(|e| refusal(&e))
}

/// libtpu's reason for refusing a configuration, on one line: its status
/// and the first line of its message (e.g. `RESOURCE_EXHAUSTED: ... Ran out
/// of memory in memory space vmem. Used 17.00M of 16.00M vmem.`).
fn refusal(e: &PjrtError) -> String {
    let line = |m: &str| {
        m.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .chars()
            .take(240)
            .collect::<String>()
    };
    match e {
        PjrtError::Compile {
            status, message, ..
        } => format!("{status}: {}", line(message)),
        other => line(&other.to_string()),
    }
}

/// Orders the candidates by the evaluator, best first; candidates the
/// evaluator cannot run (no CPU reference, or not loadable on the TPU) are
/// dropped.
fn rank(
    a: &Args,
    built: Vec<Candidate>,
    target: TpuTarget,
    device: Option<&super::tune_tpu::Device>,
) -> Vec<Candidate> {
    let det = a.eval == Eval::Model;
    let mut cpu: Vec<Option<super::tune_report::CpuRun>> = Vec::new();
    let tpu = device.map(|d| d.prepare(&built, &a.inputs));
    if a.eval == Eval::Cpu {
        let bar = progress(built.len() as u64, &format!("time {target} on CPU"));
        for c in &built {
            cpu.push(super::tune_report::CpuRun::prepare(c, &a.inputs));
            bar.inc(1);
        }
        bar.finish_and_clear();
    }
    let order = search::successive_halving(built.len(), det, 8, |i, repeats| {
        if det {
            Some(built[i].prediction.seconds)
        } else if let Some(t) = &tpu {
            t.median(i, repeats)
        } else {
            cpu.get(i)?.as_ref()?.median(repeats)
        }
    });
    let mut slots: Vec<Option<Candidate>> = built.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|(i, t)| {
            let mut c = slots[i].take()?;
            c.seconds = t;
            Some(c)
        })
        .collect()
}

/// `--tuned` of `pkc build` and `pkc run`: the `-p` values with the cached
/// best configuration of `file`'s kernel for `target` added (parameters
/// given with `-p` stay as given). Says which configuration it uses, or
/// that there is none. An entry timed on a TPU is preferred to one timed
/// on the CPU reference, and that to the model's.
pub fn tuned_params(
    file: &Path,
    kernel: Option<&str>,
    params: &[(String, String)],
    target: TpuTarget,
) -> Result<Vec<(String, String)>, u8> {
    let text = pk_lang::read_source(file).map_err(|f| report(&f).max(EXIT_ERRORS))?;
    let (name, kparams) = kernel_params(file, kernel, params, target)?;
    let space = space_of(&kparams, params);
    let found = cache::dir(None).and_then(|dir| {
        [Eval::Tpu, Eval::Cpu, Eval::Model]
            .into_iter()
            .find_map(|e| {
                let key = cache_key(&text, &name, &kparams, params, &space, target, e);
                cache::lookup(&dir, &key).map(|entry| (entry, dir.join(key.file_name())))
            })
    });
    let mut out = params.to_vec();
    match found {
        Some((entry, path)) => {
            let shown: Vec<String> = entry.best.iter().map(|(n, v)| format!("{n}={v}")).collect();
            super::ui::status(&format!(
                "using the tuned configuration of `{name}` for {target} ({}): {} (from {})",
                entry.evaluator,
                shown.join(" "),
                path.display()
            ));
            for (n, v) in entry.best {
                if !out.iter().any(|(m, _)| *m == n) {
                    out.push((n, v));
                }
            }
        }
        None => super::ui::status(&format!(
            "no tuning cache entry for `{name}` on {target} with these parameters and shapes; using the defaults (run `pkc tune` first)"
        )),
    }
    Ok(out)
}

//! `pkc tune FILE -p M=.. [--in NAME=PATH].. --target T[,..] [--eval
//! model|cpu|tpu] [--budget N] [--jobs J] [--seed S] [--timeout SECS|none]
//! [--screen FACTOR|none] [--json] [--tuned-cache DIR] [--force] [--no-aot] [--plot FILE.svg]`:
//! chooses a kernel's tunable parameters per target (docs/tuning.md).
//!
//! The pipeline, per target: look the request up in the tuning cache, and
//! when an entry answers it (the same key, settings and configurations)
//! print the entry's report and stop (`--force` tunes anyway). Else take
//! the space the kernel's candidates declare (every configuration when it
//! holds at most `--budget`, else a seeded sample that includes the
//! default); build each configuration with the checker for that target,
//! which prunes what breaks the TPU's rules (and the kernel's `where`),
//! counting the pruned per diagnostic code; compile the survivors with
//! libtpu ahead of time (under `--eval schedule` only those the roofline
//! model puts within `--screen` of its best, and the default), on `--jobs`
//! threads, recording code size and
//! memory and dropping what libtpu refuses; rank them with one evaluator
//! (successive halving over timing repeats for `cpu`, each run stopped at
//! `--timeout`); print the best, the default and why it lost; cache the
//! best with the whole report ([`super::tune_sweep`],
//! [`super::tune_report`], [`super::tune_cache`]). With `--in`, the model
//! sees the work counted on those inputs (`tune::count`) instead of the
//! static count. With `--ray ADDRESS`, the libtpu compiles of every target
//! run as tasks on a Ray cluster ([`super::tune_ray`]).
//!
//! invariant: everything that can make the command fail without tuning
//! (the kernel, the space, the cache directory being writable, the plot's
//! destination, libtpu, the TPU, the `--in` arrays) is checked before the
//! first configuration is built.

use super::build::{parse_targets, Targets};
use super::common::{parse_param, reject_repeats, report, EXIT_ERRORS, EXIT_OK, EXIT_TOOLCHAIN};
use super::cpu::{parse_named, parse_timeout, Timeout};
use super::tune_inputs::read_given;
use super::tune_sweep::{compile_on_ray, finish, stage, TargetResult};
use super::ui::{json_line, print_diagnostic, status, ui};
use clap::{Args as ClapArgs, ValueEnum};
use pk_lang::ir::{self, ParamValue};
use pk_runtime::cpu::{npy, Error as CpuError};
use pk_runtime::pjrt::{Plugin, TpuTarget};
use pk_runtime::tune::cache::{self, Entry};
use pk_runtime::tune::report::Report;
use pk_runtime::tune::space::{Axis, Config, Space};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// How configurations are ranked [default: schedule where libtpu is
    /// found and compiles the configurations, else model].
    #[arg(long = "eval", value_enum)]
    pub eval_flag: Option<Eval>,
    /// The evaluator used: `--eval`, else the default (set by `run`).
    #[arg(skip = Eval::Model)]
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
    /// `--eval cpu`: stop each timed run that takes longer than this many
    /// seconds of wall-clock time (a positive number, e.g. 2.5), or `none`
    /// for no limit; the configuration is then listed as timed out, not
    /// ranked [default: 300, as `pkc run`].
    #[arg(long, value_name = "SECS|none", value_parser = parse_timeout)]
    pub timeout: Option<Timeout>,
    /// `--eval schedule`: compile (and read libtpu's schedule of) only the
    /// configurations the roofline model predicts within this factor of its
    /// best (a number >= 1, e.g. 1.5), and the default; `none` compiles
    /// every one [default: 1.5].
    #[arg(long, value_name = "FACTOR|none", value_parser = parse_screen)]
    pub screen: Option<Screen>,
    /// Print one JSON object per target instead of tables.
    #[arg(long)]
    pub json: bool,
    /// The tuning cache directory (default: $PK_TUNE_CACHE, else `tune`
    /// under $PK_CACHE_DIR, else $XDG_CACHE_HOME/pk, else ~/.cache/pk).
    #[arg(long, value_name = "DIR")]
    pub tuned_cache: Option<PathBuf>,
    /// Tune even when the cache holds the result of the same tuning, and
    /// replace it.
    #[arg(long)]
    pub force: bool,
    /// Skip compiling with libtpu (rank what the checker keeps).
    #[arg(long)]
    pub no_aot: bool,
    /// The libtpu to load (default: $PK_LIBTPU, else pk's cache).
    #[arg(long, value_name = "PATH")]
    pub libtpu: Option<PathBuf>,
    /// Draw every target's space (time against each tuned parameter) into
    /// this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Run the libtpu compiles on the Ray cluster at this address
    /// (`HOST:PORT` of its head, or `auto`), with the Python of $PK_PYTHON,
    /// else `python3`.
    #[arg(long, value_name = "ADDRESS", conflicts_with = "no_aot")]
    pub ray: Option<String>,
}

impl Args {
    /// The limit of each timed CPU run: `--timeout`, else `pkc run`'s
    /// default.
    pub fn timeout(&self) -> Timeout {
        self.timeout.unwrap_or(Timeout(Some(DEFAULT_TIMEOUT)))
    }

    /// The screen's margin: `--screen`, else [`DEFAULT_SCREEN`]; `None`
    /// (every configuration compiled) for evaluators other than
    /// `schedule`.
    pub fn screen(&self) -> Option<f64> {
        match self.eval {
            Eval::Schedule => self.screen.unwrap_or(Screen(Some(DEFAULT_SCREEN))).0,
            _ => None,
        }
    }
}

/// `--screen`: the margin over the roofline model's best within which a
/// configuration is compiled under `--eval schedule`; `None` compiles all.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Screen(pub Option<f64>);

/// The default `--screen`. On the library's spaces measured by
/// `bench/screen_margin.py` (docs/tuning.md, "The screen"), the schedule
/// model's best is at most 1.19x the roofline model's best by the roofline
/// model's own times; 1.5 keeps it with room to spare.
pub const DEFAULT_SCREEN: f64 = 1.5;

/// `--screen`: a finite number of at least 1, or `none`.
fn parse_screen(s: &str) -> Result<Screen, String> {
    if s == "none" {
        return Ok(Screen(None));
    }
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 1.0 => Ok(Screen(Some(f))),
        _ => Err(format!(
            "`{s}` is not a factor of at least 1 (e.g. 1.5) or `none`"
        )),
    }
}

/// `pkc run`'s default limit (`--timeout 300`).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Eval {
    /// Predict from libtpu's own schedule of each configuration: its
    /// cycles per grid step against its copies (docs/tuning.md).
    Schedule,
    /// Predict with the roofline performance model (docs/tuning.md).
    Model,
    /// Time the CPU reference (median of repeats).
    Cpu,
    /// Time on this host's TPU.
    Tpu,
}

impl Eval {
    /// Whether the evaluator predicts rather than measures.
    pub fn predicts(self) -> bool {
        matches!(self, Eval::Schedule | Eval::Model)
    }

    pub fn name(self) -> &'static str {
        match self {
            Eval::Schedule => "schedule",
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
    #[error("no configuration of `{kernel}` tried for {target} could be ranked: {why}")]
    #[diagnostic(code(PK6002), help("{help}"))]
    AllPruned {
        kernel: String,
        target: String,
        why: String,
        help: String,
    },
    #[error("cannot write the tuning cache `{dir}`: {message}")]
    #[diagnostic(
        code(PK6003),
        help("pass a writable directory with --tuned-cache DIR or set PK_TUNE_CACHE; nothing was tuned")
    )]
    CacheUnwritable { dir: String, message: String },
    #[error("no tuning cache directory: none of --tuned-cache, PK_TUNE_CACHE, PK_CACHE_DIR, XDG_CACHE_HOME and HOME is set")]
    #[diagnostic(
        code(PK6003),
        help("pass a directory with --tuned-cache DIR or set PK_TUNE_CACHE; nothing was tuned")
    )]
    NoCacheDir,
    #[error(
        "--eval tpu times on this host's TPU, a {host}; --target {asked} is another generation"
    )]
    #[diagnostic(
        code(PK6004),
        help("tune with --target {host} here, or rank other generations with --eval model (the default)")
    )]
    TpuTargetMismatch { host: String, asked: String },
    #[error("the tuning cache entry `{path}` is damaged: {reason}")]
    #[diagnostic(code(PK6008), severity(Warning), help("{help}"))]
    DamagedEntry {
        path: String,
        reason: String,
        help: String,
    },
}

/// What each target gets: the report of an entry that answers it, or a
/// sweep.
enum Plan {
    Cached(Box<Report>, PathBuf),
    Tune,
}

/// The evaluator of a tuning that names none: the schedule where libtpu
/// compiles the configurations here (found, and neither `--no-aot` nor
/// `--ray`), else the roofline model.
fn default_eval(a: &Args) -> Eval {
    let local_libtpu = !a.no_aot
        && a.ray.is_none()
        && pk_runtime::pjrt::locate_libtpu(a.libtpu.as_deref()).is_ok();
    if local_libtpu {
        Eval::Schedule
    } else {
        Eval::Model
    }
}

pub fn run(mut a: Args) -> u8 {
    a.eval = a.eval_flag.unwrap_or_else(|| default_eval(&a));
    if a.eval == Eval::Schedule && (a.no_aot || a.ray.is_some()) {
        let flag = if a.no_aot { "--no-aot" } else { "--ray" };
        return super::usage::UsageError::NotApplicable {
            flag: flag.into(),
            context: "with --eval schedule".into(),
            hint: "the schedule is libtpu's, read as it compiles each configuration on this machine; rank with --eval model without it".into(),
        }
        .report();
    }
    if let Err(code) =
        reject_repeats("-p", &a.params).and_then(|()| reject_repeats("--in", &a.inputs))
    {
        return code;
    }
    if let Some((name, _)) = a.inputs.iter().find(|(_, p)| npy::is_stdin(p)) {
        return super::usage::UsageError::NotApplicable {
            flag: format!("--in {name}=-"),
            context: "to pkc tune".into(),
            hint: "tune reads each --in file again for every configuration it runs; save the array to a file".into(),
        }
        .report();
    }
    // Every --in file is opened and its header read before any work.
    if let Err(e) = super::tune_inputs::check_given(&a.inputs) {
        return super::cpu::report_cpu(&e);
    }
    if a.screen.is_some() && a.eval != Eval::Schedule {
        return super::usage::UsageError::NotApplicable {
            flag: "--screen".into(),
            context: format!("with --eval {}", a.eval.name()),
            hint: "--screen chooses which configurations --eval schedule compiles".into(),
        }
        .report();
    }
    if a.timeout.is_some() && a.eval != Eval::Cpu {
        return super::usage::UsageError::NotApplicable {
            flag: "--timeout".into(),
            context: format!("with --eval {}", a.eval.name()),
            hint: "--timeout limits each timed run of --eval cpu".into(),
        }
        .report();
    }
    // The file is read, parsed and resolved once; every configuration and
    // target is checked against that.
    let session = match pk_lang::Session::open(&a.file) {
        Ok(s) => s,
        Err(f) => return report(&f).max(EXIT_ERRORS),
    };
    let text = session
        .sources()
        .get(pk_lang::span::FileId(0))
        .text
        .to_string();
    // The parameters alone fix the kernel, the space and the values the
    // cache is keyed by: the default configuration need not be valid for
    // the shapes given.
    let first = a.target.0[0];
    let (name, params) = match kernel_params(&session, a.kernel.as_deref(), &a.params, first) {
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
    let configs = match choose(&a, &session, &name, &space, first) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // The plot's destination is checked (and its temporary file made)
    // before anything is tuned.
    let plot = match a.plot.as_deref().map(super::output::Output::prepare) {
        None => None,
        Some(Ok(o)) => Some(o),
        Some(Err(e)) => return super::cpu::report_cpu(&e),
    };
    let dir = cache::dir(a.tuned_cache.as_deref());
    let settings = super::tune_cache::settings(&a);
    let req = Request {
        text: &text,
        name: &name,
        params: &params,
        space: &space,
        configs: &configs,
        settings: &settings,
    };
    let plans = plan(&a, &req, dir.as_deref());
    let todo: Vec<TpuTarget> = a
        .target
        .0
        .iter()
        .zip(&plans)
        .filter(|(_, p)| matches!(p, Plan::Tune))
        .map(|(t, _)| *t)
        .collect();
    let mut sweep = None;
    if !todo.is_empty() {
        match Sweep::open(&a, dir.as_deref(), &todo) {
            Ok(s) => sweep = Some(s),
            Err(code) => return code,
        }
    }
    // Under `--ray`, every target tuned is checked first and their
    // compiles go to the cluster together; else each target is compiled
    // here in turn.
    let mut staged = Vec::new();
    let mut ray = None;
    if let (Some(address), Some(s)) = (&a.ray, &sweep) {
        for &target in &todo {
            staged.push(stage(
                &a, &session, &name, &space, &configs, target, None, &s.given,
            ));
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
    let fixed = super::tune_cache::fixed_json(&params, &space);
    let mut exit = EXIT_OK;
    let mut reports = Vec::new();
    for (&target, plan) in a.target.0.iter().zip(plans) {
        let (report, code) = match (plan, &sweep) {
            (Plan::Cached(r, path), _) => {
                status(&format!(
                    "`{name}` on {target}: the same tuning is cached in {}; its report follows (--force tunes again)",
                    path.display()
                ));
                (*r, EXIT_OK)
            }
            (Plan::Tune, Some(s)) => {
                let st = match staged.next() {
                    Some(st) => st,
                    None => stage(
                        &a, &session, &name, &space, &configs, target, s.plugin, &s.given,
                    ),
                };
                let aot = s.plugin.is_some() || ray.is_some();
                let r = finish(&a, &space, st, aot, ray.clone(), s.device.as_ref());
                warn_schedule_fallbacks(&a, &name, &r, s.plugin);
                conclude(&a, &req, &s.dir, &r, &fixed)
            }
            (Plan::Tune, None) => continue,
        };
        exit = exit.max(code);
        if a.json || ui().json {
            json_line(&serde_json::to_value(&report).unwrap_or_default());
        } else if !ui().quiet {
            print!("{}", super::tune_report::table(&report));
        }
        if code != EXIT_OK && report.ranked == 0 {
            // The diagnostic after the report that lists every reason.
            print_all_pruned(&a, &name, &report);
        }
        reports.push(report);
    }
    if let Some(out) = plot {
        let written = super::tune_plot::svg(&reports)
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
            exit = exit.max(EXIT_ERRORS);
        }
    }
    exit
}

/// PK2013 once per target when `--eval schedule` ranked configurations by
/// the roofline model because their schedule could not be read.
fn warn_schedule_fallbacks(a: &Args, name: &str, r: &TargetResult, plugin: Option<&Plugin>) {
    let Some((config, why)) = r.schedule_fallbacks.first() else {
        return;
    };
    let reason = match plugin.and_then(|p| p.capture_off_reason()) {
        Some(off) => off,
        None => format!("{config}: {why}"),
    };
    let n = r.schedule_fallbacks.len();
    let total = r.ranked.len() + r.timed_out.len() + r.failed.len();
    print_diagnostic(&pk_runtime::pjrt::PjrtError::ScheduleUnreadable {
        kernel: name.to_string(),
        target: r.target.to_string(),
        fallback: format!("the roofline model ranks {n} of its {total} configurations"),
        reason,
        version: pk_runtime::pjrt::LIBTPU_VERSION.to_string(),
    });
    let _ = a;
}

/// What a tuning is asked for, beyond the target: what its cache entries
/// are keyed by and must match.
struct Request<'a> {
    text: &'a str,
    name: &'a str,
    /// The kernel's parameters, as resolved.
    params: &'a [ir::Param],
    space: &'a Space,
    /// The configurations tried: the space filtered by the kernel's
    /// `where` constraints, then sampled.
    configs: &'a [Config],
    settings: &'a cache::Settings,
}

impl Request<'_> {
    fn key(&self, target: TpuTarget, eval: Eval) -> cache::Key {
        super::tune_cache::key(self.text, self.name, self.params, self.space, target, eval)
    }
}

/// Per target, whether the cache answers it: an entry for the same key,
/// with the same settings and configurations tried, unless `--force`. A
/// damaged entry is warned about and tuned again.
fn plan(a: &Args, req: &Request<'_>, dir: Option<&Path>) -> Vec<Plan> {
    let configs = req.configs;
    a.target
        .0
        .iter()
        .map(|&target| {
            let Some(dir) = dir.filter(|_| !a.force) else {
                return Plan::Tune;
            };
            let key = req.key(target, a.eval);
            let then = "`pkc tune` tunes again and replaces it";
            match super::tune_cache::find(dir, &key, req.space, then) {
                Ok(Some((entry, path)))
                    if super::tune_cache::answers(&entry, req.settings, configs) =>
                {
                    let mut r = entry.report;
                    r.cache = Some(path.display().to_string());
                    Plan::Cached(Box::new(r), path)
                }
                _ => Plan::Tune,
            }
        })
        .collect()
}

/// What a sweep needs opened, and checked, before its first configuration
/// is built.
struct Sweep {
    /// The cache directory, checked writable.
    dir: PathBuf,
    plugin: Option<&'static Plugin>,
    device: Option<super::tune_tpu::Device>,
    given: super::tune_inputs::Given,
}

impl Sweep {
    /// Checks that the cache can be written, opens the TPU (`--eval tpu`)
    /// and libtpu, and reads the arrays the model counts the work on; on
    /// failure prints why and returns the exit code.
    fn open(a: &Args, dir: Option<&Path>, targets: &[TpuTarget]) -> Result<Sweep, u8> {
        let Some(dir) = dir else {
            print_diagnostic(&TuneError::NoCacheDir);
            return Err(EXIT_ERRORS);
        };
        if let Err(e) = cache::check_writable(dir) {
            print_diagnostic(&TuneError::CacheUnwritable {
                dir: dir.display().to_string(),
                message: e.to_string(),
            });
            return Err(EXIT_ERRORS);
        }
        let device = match a.eval {
            Eval::Tpu => Some(super::tune_tpu::Device::open(a.libtpu.as_deref(), targets)?),
            _ => None,
        };
        let plugin = if a.no_aot || a.ray.is_some() {
            None
        } else {
            let loaded = if a.eval == Eval::Schedule {
                Plugin::load_capturing(a.libtpu.as_deref(), ui().verbose)
            } else {
                Plugin::load_logged(a.libtpu.as_deref(), ui().verbose)
            };
            match loaded {
                Ok(p) => Some(p),
                Err(e) => {
                    print_diagnostic(&e);
                    return Err(super::common::pjrt_exit_code(&e));
                }
            }
        };
        // Both models count the work on the `--in` arrays.
        let given = if matches!(a.eval, Eval::Model | Eval::Schedule) {
            read_given(&a.inputs).map_err(|e| super::cpu::report_cpu(&e))?
        } else {
            Vec::new()
        };
        Ok(Sweep {
            dir: dir.to_path_buf(),
            plugin,
            device,
            given,
        })
    }
}

/// The report of one target's sweep, written to the cache when something
/// was ranked; and the exit code.
fn conclude(
    a: &Args,
    req: &Request<'_>,
    dir: &Path,
    r: &TargetResult,
    fixed: &std::collections::BTreeMap<String, serde_json::Value>,
) -> (Report, u8) {
    let mut report = super::tune_report::summarise(req.name, a.eval, r, fixed);
    if r.ranked.is_empty() {
        if let Some(e) = &r.input_error {
            print_diagnostic(e.as_ref());
        }
        return (report, EXIT_ERRORS);
    }
    let key = req.key(r.target, a.eval);
    let path = dir.join(key.file_name());
    report.cache = Some(path.display().to_string());
    let entry = Entry {
        key,
        settings: req.settings.clone(),
        best: req
            .space
            .axes
            .iter()
            .map(|x| x.name.clone())
            .zip(r.ranked[0].config.iter().copied())
            .collect(),
        seconds: r.ranked[0].seconds,
        report: report.clone(),
    };
    match cache::store(dir, &entry) {
        Ok(_) => (report, EXIT_OK),
        Err(e) => {
            report.cache = None;
            print_diagnostic(&TuneError::CacheUnwritable {
                dir: dir.display().to_string(),
                message: e.to_string(),
            });
            (report, EXIT_ERRORS)
        }
    }
}

/// PK6002 for a target where nothing could be ranked: how many
/// configurations each cause took, and help for the cause that took most.
fn print_all_pruned(a: &Args, name: &str, r: &Report) {
    let mut why: Vec<String> = r
        .pruned
        .iter()
        .map(|(c, n)| format!("{n} pruned by {c}"))
        .collect();
    if !r.refused.is_empty() {
        why.push(format!("{} refused by libtpu", r.refused.len()));
    }
    let limit = match a.timeout().0 {
        Some(d) => format!("{} s", d.as_secs_f64()),
        None => "no limit".into(),
    };
    if !r.timed_out.is_empty() {
        why.push(format!(
            "{} timed out on the CPU reference (--timeout {limit} per run)",
            r.timed_out.len()
        ));
    }
    if let Some(f) = r.failed.first() {
        why.push(format!(
            "{} could not be timed by --eval {} (first: {}: {})",
            r.failed.len(),
            r.evaluator,
            f.config,
            f.message
        ));
    }
    // Help for the last stage that stopped configurations: the ones it
    // stopped got past every earlier stage, so it is what keeps them from
    // being ranked.
    let top = if !r.timed_out.is_empty() {
        2
    } else if !r.failed.is_empty() {
        3
    } else if !r.refused.is_empty() {
        1
    } else {
        0
    };
    let help = match top {
        1 => "libtpu's reasons are listed above; `pkc build --aot -p ...` shows one configuration's error".to_string(),
        2 => format!(
            "raise the limit (--timeout SECS, or --timeout none), or rank with the model (--eval model); `pkc run {} -p ... --timeout {limit}` shows one configuration's run",
            a.file.display()
        ),
        3 => format!(
            "`pkc run {} -p ...` shows one configuration's error; --eval model ranks without running",
            a.file.display()
        ),
        _ => "check the -p shapes against the candidates; `pkc check -p ...` shows one configuration's diagnostics".to_string(),
    };
    print_diagnostic(&TuneError::AllPruned {
        kernel: name.to_string(),
        target: r.target.clone(),
        why: why.join(", "),
        help,
    });
}

/// The configurations to try: the space filtered by the kernel's `where`
/// constraints (with the `-p` values), then sampled to `--budget` with
/// `--seed`. Says how many the constraints leave when they exclude some.
fn choose(
    a: &Args,
    session: &pk_lang::Session,
    name: &str,
    space: &Space,
    target: TpuTarget,
) -> Result<Vec<Config>, u8> {
    let opts = pk_lang::Options {
        target,
        params: a.params.clone(),
        kernel: Some(name.to_string()),
        ..Default::default()
    };
    let names: Vec<String> = space.axes.iter().map(|x| x.name.clone()).collect();
    let mut failure = None;
    let mut considered = 0u64;
    let mut excluded = 0u64;
    let configs = space.choose_legal(a.budget, a.seed, |cs| {
        if failure.is_some() {
            return vec![false; cs.len()];
        }
        match session.where_holds(&opts, &names, cs) {
            Ok(h) => {
                considered += h.len() as u64;
                excluded += h.iter().filter(|ok| !**ok).count() as u64;
                h
            }
            Err(f) => {
                failure = Some(f);
                vec![false; cs.len()]
            }
        }
    });
    if let Some(f) = failure {
        return Err(report(&f).max(EXIT_ERRORS));
    }
    if excluded > 0 {
        status(&format!(
            "`{name}`: the `where` constraints exclude {excluded} of the {considered} configurations considered; {} tried",
            configs.len()
        ));
    }
    Ok(configs)
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

/// The one selected kernel's name and checked parameters.
pub(super) fn kernel_params(
    session: &pk_lang::Session,
    kernel: Option<&str>,
    params: &[(String, String)],
    target: TpuTarget,
) -> Result<(String, Vec<ir::Param>), u8> {
    let opts = pk_lang::Options {
        target,
        params: params.to_vec(),
        kernel: kernel.map(str::to_string),
        specialise: true,
        ..Default::default()
    };
    let mut ks = session
        .params(&opts)
        .map_err(|f| report(&f).max(EXIT_ERRORS))?;
    let file = session.name();
    match ks.len() {
        1 => Ok(ks.remove(0)),
        0 => Err(super::usage::UsageError::NoKernel {
            file: file.to_string(),
        }
        .report()),
        _ => {
            let names: Vec<&str> = ks.iter().map(|(n, _)| n.as_str()).collect();
            Err(super::usage::UsageError::SeveralKernels {
                file: file.to_string(),
                names: names.join(", "),
            }
            .report())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tuning_diagnostic_has_an_explanation() {
        let s = String::new;
        let all = [
            TuneError::NothingToTune { kernel: s() },
            TuneError::AllPruned {
                kernel: s(),
                target: s(),
                why: s(),
                help: s(),
            },
            TuneError::CacheUnwritable {
                dir: s(),
                message: s(),
            },
            TuneError::NoCacheDir,
            TuneError::TpuTargetMismatch {
                host: s(),
                asked: s(),
            },
            TuneError::DamagedEntry {
                path: s(),
                reason: s(),
                help: s(),
            },
        ];
        for e in &all {
            let code = miette::Diagnostic::code(e).map(|c| c.to_string());
            let code = code.expect("every tuning diagnostic has a code");
            assert!(
                pk_runtime::tune::EXPLANATIONS
                    .iter()
                    .any(|x| x.code == code),
                "{code} has no explanation"
            );
        }
        // A damaged entry is a warning: the command goes on without it.
        assert_eq!(
            miette::Diagnostic::severity(&all[5]),
            Some(miette::Severity::Warning)
        );
    }
}

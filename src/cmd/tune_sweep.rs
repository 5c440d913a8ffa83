//! One target's sweep of `pkc tune`: every configuration tried is built by
//! the checker for the target (which prunes what breaks the TPU's rules and
//! the kernel's `where`), the survivors are compiled by libtpu (here on
//! `--jobs` threads, or on a Ray cluster) and ranked by one evaluator.
//!
//! invariant: every configuration tried ends in exactly one state, in the
//! order tried: pruned (with the code of the first error), refused by
//! libtpu (with its reason), timed out or failed in the evaluator (with
//! its reason), or ranked (with its time). Nothing is dropped without a
//! reason the report can show.

use super::tune::{Args, Eval};
use super::tune_inputs::{count_arrays, Given};
use super::tune_ray::{self, RayError, RayUse};
use super::ui::progress;
use pk_runtime::cpu::Error as CpuError;
use pk_runtime::package::build::{self, BuildOptions, BuiltKernel};
use pk_runtime::pjrt::{Captured, MemoryStats, PjrtError, Plugin, TpuTarget};
use pk_runtime::schedule::cache as kept_schedule;
use pk_runtime::tune::cache;
use pk_runtime::tune::model::{self, Generation, Prediction};
use pk_runtime::tune::report::Status;
use pk_runtime::tune::schedule::{self as sched, ScheduleEstimate};
use pk_runtime::tune::space::{Config, Space};
use pk_runtime::tune::{count, search, work};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What became of one configuration before the ranking.
pub(super) enum Outcome {
    /// The checker (or lowering) rejected it: the first error's code.
    Pruned(String),
    /// The `--in` arrays do not fit it (a missing, unknown or misshapen
    /// operand): counted with the pruned, under the error's code.
    BadInput(Box<CpuError>),
    /// libtpu refused it: its message's first line.
    Refused(String),
    Built(Box<Candidate>),
    /// Checked and predicted, not compiled: the roofline model puts it
    /// past the screen's margin (`--screen`).
    Screened(Box<Candidate>),
}

/// Why the evaluator has no time for a built configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum NotTimed {
    /// A timed run did not finish within `--timeout`.
    TimedOut(String),
    /// It could not be run or timed (no CPU reference, a failed run).
    Failed(String),
}

pub struct Candidate {
    pub config: Config,
    pub built: BuiltKernel,
    /// Why the candidate has no CPU reference, when it has none (the
    /// PK3012 warning of its build).
    pub no_cpu_reference: Option<String>,
    pub code_bytes: Option<u64>,
    pub memory: Option<MemoryStats>,
    pub work: work::Work,
    /// The roofline model's prediction.
    pub prediction: Prediction,
    /// The schedule model's, when libtpu's schedule was captured and read.
    pub schedule: Option<ScheduleEstimate>,
    /// Why the schedule was captured and could not be read.
    pub schedule_unreadable: Option<String>,
    /// The evaluator's time, seconds.
    pub seconds: f64,
}

impl Candidate {
    /// The prediction the candidate is ranked by under a predicting
    /// evaluator: the schedule model's where it has one, else the
    /// roofline's.
    pub fn ranked_by(&self) -> &Prediction {
        self.schedule
            .as_ref()
            .map_or(&self.prediction, |s| &s.prediction)
    }
}

/// The result of one target's sweep.
pub struct TargetResult {
    pub target: TpuTarget,
    pub space: Space,
    pub tried: usize,
    pub pruned: BTreeMap<String, usize>,
    /// Configurations libtpu refused, and those the evaluator could not
    /// time, described (`bm=.. bn=..`) with the reason.
    pub refused: Vec<(String, String)>,
    pub timed_out: Vec<(String, String)>,
    pub failed: Vec<(String, String)>,
    /// Ranked, best first.
    pub ranked: Vec<Candidate>,
    pub default: Option<Config>,
    /// Whether libtpu compiled the survivors (not under `--no-aot`).
    pub aot: bool,
    /// Every configuration tried, in the order tried.
    pub points: Vec<(Config, Status)>,
    /// The first `--in` error, shown when it pruned every configuration.
    pub input_error: Option<Box<CpuError>>,
    /// Where the compiles ran, under `--ray`.
    pub ray: Option<RayUse>,
    /// `--eval schedule`: configurations ranked by the roofline model since
    /// their schedule could not be read, with why.
    pub schedule_fallbacks: Vec<(String, String)>,
    /// `--eval schedule`: the screen's margin, and how many configurations
    /// it left uncompiled.
    pub screen: Option<f64>,
    pub screened: usize,
}

/// One target's configurations after the checker (and, without `--ray`,
/// libtpu): built candidates wait for the ranking, or for their compile.
pub(super) struct Staged {
    pub target: TpuTarget,
    configs: Vec<Config>,
    outcomes: Vec<Outcome>,
}

/// Checks and lowers every configuration tried for `target` and, with a
/// plugin, compiles the survivors, on `--jobs` threads. Under `--screen`
/// only the survivors the roofline model cannot rule out are compiled.
#[allow(clippy::too_many_arguments)]
pub(super) fn stage(
    a: &Args,
    session: &pk_lang::Session,
    name: &str,
    space: &Space,
    configs: &[Config],
    target: TpuTarget,
    plugin: Option<&'static Plugin>,
    given: &Given,
) -> Staged {
    let jobs = a
        .jobs
        .map(|j| j as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, configs.len().max(1));
    let g = Generation::of(target);
    let bar = progress(configs.len() as u64, &format!("tune {name} {target}"));
    bar.set_message("checking");
    let mut outcomes = in_parallel(jobs, configs.len(), |i| {
        let o = lower(a, session, space, &configs[i], target, g, given);
        bar.inc(1);
        o
    });
    bar.finish_and_clear();
    let Some(p) = plugin else {
        return Staged {
            target,
            configs: configs.to_vec(),
            outcomes,
        };
    };
    // `--eval schedule`: schedules already captured are kept beside the
    // tuning cache, so a configuration that recurs is not compiled again.
    let kept = (a.eval == Eval::Schedule)
        .then(|| cache::dir(a.tuned_cache.as_deref()))
        .flatten()
        .map(|d| d.join("schedules"));
    let compile = |todo: Vec<(usize, Outcome)>| -> Vec<(usize, Outcome)> {
        let bar = progress(todo.len() as u64, &format!("tune {name} {target}"));
        bar.set_message("compiling");
        let todo: Vec<Mutex<Option<(usize, Outcome)>>> =
            todo.into_iter().map(|t| Mutex::new(Some(t))).collect();
        let done = in_parallel(jobs.min(todo.len().max(1)), todo.len(), |k| {
            let taken = todo[k].lock().unwrap_or_else(|e| e.into_inner()).take();
            let (i, mut o) = taken.expect("each job is taken once");
            if let Outcome::Built(cand) = &o {
                let (compiled, captured) = match module_of(cand, target) {
                    Ok(m) => compile_cached(p, target, m, kept.as_deref()),
                    Err(e) => (Err(e), Captured::Off),
                };
                o = with_compile(o, compiled);
                o = with_schedule(o, captured, g);
            }
            bar.inc(1);
            (i, o)
        });
        bar.finish_and_clear();
        done
    };
    let screened = screen(&mut outcomes, configs, space, a.screen());
    let todo = take_built(&mut outcomes);
    let any_compiled = put_back(&mut outcomes, compile(todo));
    // When libtpu refused every configuration within the margin, the
    // screened ones are compiled after all: a ranking is never lost to the
    // screen.
    if !any_compiled && screened > 0 {
        let todo = take_screened(&mut outcomes);
        put_back(&mut outcomes, compile(todo));
    }
    Staged {
        target,
        configs: configs.to_vec(),
        outcomes,
    }
}

/// `f(0)`, .., `f(n - 1)` on `jobs` threads, each taking the next index;
/// the results in index order.
fn in_parallel<T: Send>(jobs: usize, n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<(usize, T)>> = Mutex::new(Vec::with_capacity(n));
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, n.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(i);
                out.lock().unwrap_or_else(|e| e.into_inner()).push((i, r));
            });
        }
    });
    let mut out = out.into_inner().unwrap_or_else(|e| e.into_inner());
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

/// Marks as screened every built configuration whose roofline prediction
/// is more than `margin` times the best built one's, except the default
/// (always compiled, so that its rank is known); the number marked.
fn screen(
    outcomes: &mut [Outcome],
    configs: &[Config],
    space: &Space,
    margin: Option<f64>,
) -> usize {
    let Some(margin) = margin else { return 0 };
    let best = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Built(c) => Some(c.prediction.seconds),
            _ => None,
        })
        .fold(f64::INFINITY, f64::min);
    let default = space.default_config();
    let mut n = 0;
    for (o, c) in outcomes.iter_mut().zip(configs) {
        let out = matches!(o, Outcome::Built(cand)
            if cand.prediction.seconds > margin * best && default.as_ref() != Some(c));
        if out {
            if let Outcome::Built(cand) = std::mem::replace(o, Outcome::Pruned(String::new())) {
                *o = Outcome::Screened(cand);
                n += 1;
            }
        }
    }
    n
}

/// The built outcomes, taken out of `outcomes` with their indices; a
/// placeholder stays until they are put back.
fn take_built(outcomes: &mut [Outcome]) -> Vec<(usize, Outcome)> {
    let mut out = Vec::new();
    for (i, o) in outcomes.iter_mut().enumerate() {
        if matches!(o, Outcome::Built(_)) {
            out.push((i, std::mem::replace(o, Outcome::Pruned(String::new()))));
        }
    }
    out
}

/// The screened outcomes, taken out as built ones to compile.
fn take_screened(outcomes: &mut [Outcome]) -> Vec<(usize, Outcome)> {
    let mut out = Vec::new();
    for (i, o) in outcomes.iter_mut().enumerate() {
        if matches!(o, Outcome::Screened(_)) {
            if let Outcome::Screened(c) = std::mem::replace(o, Outcome::Pruned(String::new())) {
                out.push((i, Outcome::Built(c)));
            }
        }
    }
    out
}

/// Puts compiled outcomes back in their places; whether any of them
/// compiled (was not refused).
fn put_back(outcomes: &mut [Outcome], done: Vec<(usize, Outcome)>) -> bool {
    let mut any = false;
    for (i, o) in done {
        any |= matches!(o, Outcome::Built(_));
        outcomes[i] = o;
    }
    any
}

/// Sends the compiles of every staged target's candidates to the Ray
/// cluster at `address`, and records what came back.
pub(super) fn compile_on_ray(
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

/// A built candidate with libtpu's schedule of it, and the schedule
/// model's prediction from it.
fn with_schedule(o: Outcome, captured: Captured, g: &Generation) -> Outcome {
    let Outcome::Built(mut c) = o else { return o };
    match captured {
        Captured::Off => {}
        Captured::Read(s) => match s.kernel() {
            Some(k) => c.schedule = Some(sched::predict(g, k, &c.work)),
            None => {
                c.schedule_unreadable =
                    Some("the dump holds no program of the kernel itself".into())
            }
        },
        Captured::Unreadable(why) => c.schedule_unreadable = Some(why),
    }
    Outcome::Built(c)
}

/// Ranks one staged target's candidates.
pub(super) fn finish(
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
    // The configurations' states, `None` for a built one until it is ranked.
    let mut states: Vec<Option<Status>> = Vec::new();
    let mut input_error = None;
    let mut screened = 0;
    for (i, o) in outcomes.into_iter().enumerate() {
        let status = match o {
            Outcome::Pruned(code) => {
                *pruned.entry(code.clone()).or_default() += 1;
                Some(Status::Pruned { code })
            }
            Outcome::BadInput(e) => {
                let code =
                    miette::Diagnostic::code(e.as_ref()).map_or("?".to_string(), |c| c.to_string());
                *pruned.entry(code.clone()).or_default() += 1;
                input_error.get_or_insert(e);
                Some(Status::Pruned { code })
            }
            Outcome::Refused(m) => {
                refused.push((space.describe(&configs[i]), m.clone()));
                Some(Status::Refused { message: m })
            }
            Outcome::Built(c) => {
                built.push(*c);
                None
            }
            Outcome::Screened(c) => {
                screened += 1;
                Some(Status::Screened {
                    predicted_seconds: c.prediction.seconds,
                })
            }
        };
        states.push(status);
    }
    let schedule_fallbacks = if a.eval == Eval::Schedule {
        built
            .iter()
            .filter(|c| c.schedule.is_none())
            .map(|c| {
                let why = c
                    .schedule_unreadable
                    .clone()
                    .unwrap_or_else(|| "libtpu was not asked for its schedule".to_string());
                (space.describe(&c.config), why)
            })
            .collect()
    } else {
        Vec::new()
    };
    let (ranked, not_timed) = rank(a, built, target, device);
    let (mut timed_out, mut failed) = (Vec::new(), Vec::new());
    for (config, why) in not_timed {
        let shown = space.describe(&config);
        let status = match why {
            NotTimed::TimedOut(m) => {
                timed_out.push((shown, m.clone()));
                Status::TimedOut { message: m }
            }
            NotTimed::Failed(m) => {
                failed.push((shown, m.clone()));
                Status::Failed { message: m }
            }
        };
        if let Some(i) = configs.iter().position(|c| *c == config) {
            states[i] = Some(status);
        }
    }
    for c in &ranked {
        if let Some(i) = configs.iter().position(|x| *x == c.config) {
            states[i] = Some(Status::Ranked {
                seconds: c.seconds,
                bound: if a.eval == Eval::Model || a.eval == Eval::Schedule {
                    c.ranked_by().bound.name().to_string()
                } else {
                    String::new()
                },
            });
        }
    }
    let points = configs
        .iter()
        .zip(states)
        .map(|(c, s)| {
            // Every built candidate is ranked or not timed (search.rs).
            let s = s.unwrap_or_else(|| Status::Failed {
                message: "not evaluated".into(),
            });
            (c.clone(), s)
        })
        .collect();
    TargetResult {
        points,
        input_error,
        target,
        space: space.clone(),
        tried: configs.len(),
        pruned,
        refused,
        timed_out,
        failed,
        ranked,
        default: space.default_config(),
        aot,
        ray,
        schedule_fallbacks,
        screen: a.screen(),
        screened,
    }
}

/// Checks and lowers one configuration, and predicts its time; libtpu has
/// not seen it yet.
fn lower(
    a: &Args,
    session: &pk_lang::Session,
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
        cpu_reference: !a.eval.predicts(),
        ..Default::default()
    };
    let b = match build::build_session(session, &opts) {
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
    let no_cpu_reference = b
        .warnings
        .iter()
        .find(|d| d.code.code == "PK3012")
        .map(|d| format!("PK3012: {}", d.message));
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
        no_cpu_reference,
        code_bytes: None,
        memory: None,
        schedule: None,
        schedule_unreadable: None,
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
) -> (tune_ray::Compiled, Captured) {
    match plugin
        .topology(target)
        .and_then(|t| t.compile_for_tuning(stablehlo))
    {
        Ok(ck) => (Ok((ck.generated_code_bytes, ck.memory_stats)), ck.schedule),
        Err(e) => (Err(refusal(&e)), Captured::Off),
    }
}

/// [`compile_module`], answered from the schedules kept in `kept` when the
/// same module was compiled for `target` before; a new schedule is kept.
fn compile_cached(
    plugin: &'static Plugin,
    target: TpuTarget,
    stablehlo: &str,
    kept: Option<&Path>,
) -> (tune_ray::Compiled, Captured) {
    let key = kept.map(|_| kept_schedule::key(stablehlo, target));
    if let (Some(dir), Some(key)) = (kept, &key) {
        if let Some(c) = kept_schedule::load(dir, key) {
            return (
                Ok((c.generated_code_bytes, c.memory)),
                Captured::Read(c.schedule),
            );
        }
    }
    let (compiled, captured) = compile_module(plugin, target, stablehlo);
    if let (Some(dir), Some(key), Ok((code, memory)), Captured::Read(s)) =
        (kept, key, &compiled, &captured)
    {
        // A schedule that cannot be kept is compiled again next time.
        let _ = kept_schedule::store(
            dir,
            &kept_schedule::Compiled {
                key,
                generated_code_bytes: *code,
                memory: *memory,
                schedule: s.clone(),
            },
        );
    }
    (compiled, captured)
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

/// Orders the candidates by the evaluator, best first; the candidates the
/// evaluator cannot time (no CPU reference, a failed run, a run past
/// `--timeout`, not loadable on the TPU) come back apart, with why.
fn rank(
    a: &Args,
    built: Vec<Candidate>,
    target: TpuTarget,
    device: Option<&super::tune_tpu::Device>,
) -> (Vec<Candidate>, Vec<(Config, NotTimed)>) {
    let det = a.eval.predicts();
    let mut cpu: Vec<Result<super::tune_cpu::CpuRun, NotTimed>> = Vec::new();
    let tpu = device.map(|d| d.prepare(&built, &a.inputs));
    if a.eval == Eval::Cpu {
        let bar = progress(built.len() as u64, &format!("time {target} on CPU"));
        let timeout = a.timeout().0;
        for c in &built {
            cpu.push(match &c.no_cpu_reference {
                Some(why) => Err(NotTimed::Failed(why.clone())),
                None => super::tune_cpu::CpuRun::prepare(&c.built.package, &a.inputs, timeout),
            });
            bar.inc(1);
        }
        bar.finish_and_clear();
    }
    let order = search::successive_halving(built.len(), det, 8, |i, repeats| {
        if det && a.eval == Eval::Schedule {
            Ok(built[i].ranked_by().seconds)
        } else if det {
            Ok(built[i].prediction.seconds)
        } else if let Some(t) = &tpu {
            t.median(i, repeats)
        } else {
            match cpu.get(i) {
                Some(Ok(run)) => run.median(repeats),
                Some(Err(why)) => Err(why.clone()),
                None => Err(NotTimed::Failed("not prepared".into())),
            }
        }
    });
    let mut slots: Vec<Option<Candidate>> = built.into_iter().map(Some).collect();
    let not_timed = order
        .failed
        .into_iter()
        .filter_map(|(i, why)| Some((slots[i].as_ref()?.config.clone(), why)))
        .collect();
    let ranked = order
        .ranked
        .into_iter()
        .filter_map(|(i, t)| {
            let mut c = slots[i].take()?;
            c.seconds = t;
            Some(c)
        })
        .collect();
    (ranked, not_timed)
}

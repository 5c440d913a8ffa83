//! `pkc profile FILE -t TARGET [-p NAME=VALUE].. [--in NAME=PATH].. [--json]
//! [--html FILE] [--trace FILE.json] [--keep-dump DIR]`: what libtpu's
//! schedule of one configuration says, for a person (docs/tuning.md).
//!
//! The kernel is built for the target (parameters from `-p`, else the
//! kernel's defaults) and compiled once by libtpu with its schedule and
//! the dumps that map it to `.pk` lines ([`pk_runtime::schedule::attrib`]).
//! Reported: the predicted time per call (the schedule model, beside the
//! roofline model) and its roofline fraction; a grid step's bundles, its
//! compute, DMA and fixed overhead, its critical unit and that unit's
//! share; each `.pk` line with the bundles of a step that hold its
//! operations and those operations by unit; what is not attributed, as
//! rows of their own.
//!
//! invariant: every figure is read from libtpu's dump or computed from it
//! and the kernel's counted work; an operation is given a line only where
//! the dumps state it (see `attrib`), the rest stays in the rows named for
//! what they are. A dump that does not read gives PK2013, and no figure
//! that depends on it.

use super::common::{parse_param, reject_repeats, EXIT_ERRORS, EXIT_OK};
use super::cpu::parse_named;
use super::output::Output;
use super::tune_inputs::{count_arrays, read_given};
use super::ui::{json_line, print_diagnostic, ui};
use clap::Args as ClapArgs;
use pk_runtime::package::build::{self, BuildOptions};
use pk_runtime::pjrt::{Captured, PjrtError, Plugin, TpuTarget, LIBTPU_VERSION};
use pk_runtime::schedule::attrib::{Attribution, Origin};
use pk_runtime::schedule::KernelSchedule;
use pk_runtime::tune::model::{self, Generation};
use pk_runtime::tune::schedule::{self as sched, SCHEDULE_STEP_OVERHEAD_S};
use pk_runtime::tune::{count, work};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The .pk file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The kernel to profile when the file defines several.
    #[arg(long, short = 'k', value_name = "NAME")]
    pub kernel: Option<String>,
    /// Set a parameter: `-p bm=512`. Repeatable; the others keep the
    /// kernel's defaults.
    #[arg(short = 'p', long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    /// An input array the work is counted on: `--in lengths=lengths.npy`
    /// (as `pkc tune --in`).
    #[arg(long = "in", value_name = "NAME=PATH", value_parser = parse_named)]
    pub inputs: Vec<(String, PathBuf)>,
    /// The TPU generation (v4, v5e, v5p, v6e, tpu7x).
    #[arg(long, short = 't', value_name = "T", default_value = "v5e", value_parser = parse_target)]
    pub target: TpuTarget,
    /// Print one JSON object instead of the text report (as does
    /// `--message-format json`).
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML page: the heat-mapped source and
    /// a timeline of DMA against compute per grid step.
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,
    /// Also write the modelled steps as a Chrome trace (Perfetto,
    /// chrome://tracing).
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    /// Keep libtpu's raw dump of the compile in this new directory.
    #[arg(long, value_name = "DIR")]
    pub keep_dump: Option<PathBuf>,
    /// The libtpu to load (default: $PK_LIBTPU, else pk's cache).
    #[arg(long, value_name = "PATH")]
    pub libtpu: Option<PathBuf>,
}

fn parse_target(s: &str) -> Result<TpuTarget, String> {
    pk_runtime::pjrt::parse_target(s).map_err(|e| e.to_string())
}

/// The unit class of an LLO instruction, by its mnemonic (`pkc profile`'s
/// columns).
pub const CLASSES: [&str; 7] = ["MXU", "VPU", "EUP", "XLU", "load/store", "DMA", "scalar"];

fn class_of(mnemonic: &str) -> &'static str {
    let kind = mnemonic.split('.').next().unwrap_or(mnemonic);
    match kind {
        "vmatmul" | "vmatpush" | "vdwg" | "vlatch" | "vmatprep" => "MXU",
        "vpop" if mnemonic.contains(".mrf") => "MXU",
        "vld" | "vst" => "load/store",
        "vexp2" | "vpow2" | "vlog2" | "vrcp" | "vrsqrt" | "vtanh" | "vsqrt" | "vsin" | "vcos"
        | "verf" | "vsigmoid" => "EUP",
        "vxpose" | "vrot" | "vperm" | "vbcast" | "vshuffle" | "vxlane" => "XLU",
        "dma" => "DMA",
        k if k.starts_with("vsync") || k.starts_with("dma") => "DMA",
        k if k.starts_with('v') => "VPU",
        _ => "scalar",
    }
}

/// The class of one of libtpu's units (the utilization file's names).
fn class_of_unit(unit: &str) -> &'static str {
    match unit {
        "MATMUL" | "MATPUSH" | "VPOP" => "MXU",
        "VALU" => "VPU",
        "EUP" => "EUP",
        "XLU" => "XLU",
        "SALU" => "scalar",
        u if u.starts_with("VLOAD") || u.starts_with("VSTORE") => "load/store",
        _ => "other",
    }
}

#[derive(Default, Clone)]
struct Row {
    bundles: u64,
    share: f64,
    ops: BTreeMap<&'static str, u64>,
    /// Of the operations, those given the line by data flow.
    inferred: u64,
}

/// The rows of one grid step: per `.pk` line, and for the operations with
/// no line, per kind.
struct Lines {
    lines: BTreeMap<(u16, u32), Row>,
    dma: Row,
    scalar: Row,
    vector: Row,
    empty: Row,
    ops: u64,
    stated: u64,
    inferred: u64,
}

fn rows(a: &Attribution, range: (u64, u64)) -> Lines {
    let mut out = Lines {
        lines: BTreeMap::new(),
        dma: Row::default(),
        scalar: Row::default(),
        vector: Row::default(),
        empty: Row::default(),
        ops: 0,
        stated: 0,
        inferred: 0,
    };
    for (addr, ops) in &a.bundles {
        if *addr < range.0 || *addr > range.1 {
            continue;
        }
        if ops.is_empty() {
            out.empty.bundles += 1;
            out.empty.share += 1.0;
            continue;
        }
        let each = 1.0 / ops.len() as f64;
        // Rows this bundle already counts in.
        let mut touched: Vec<(u8, u16, u32)> = Vec::new();
        for op in ops {
            out.ops += 1;
            let class = class_of(&op.mnemonic);
            let (key, row) = match op.origin.line() {
                Some((f, l)) => {
                    if matches!(op.origin, Origin::Line(..)) {
                        out.stated += 1;
                    } else {
                        out.inferred += 1;
                    }
                    ((0, f, l), out.lines.entry((f, l)).or_default())
                }
                None => match class {
                    "DMA" => ((1, 0, 0), &mut out.dma),
                    "scalar" => ((2, 0, 0), &mut out.scalar),
                    _ => ((3, 0, 0), &mut out.vector),
                },
            };
            row.share += each;
            *row.ops.entry(class).or_default() += 1;
            if matches!(op.origin, Origin::Inferred(..)) {
                row.inferred += 1;
            }
            if !touched.contains(&key) {
                touched.push(key);
                row.bundles += 1;
            }
        }
    }
    out
}

fn row_json(r: &Row) -> Value {
    let ops: serde_json::Map<String, Value> = CLASSES
        .iter()
        .map(|c| (c.to_string(), json!(r.ops.get(c).copied().unwrap_or(0))))
        .collect();
    json!({"bundles": r.bundles, "share": round(r.share, 3), "ops": ops, "inferred_ops": r.inferred})
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

pub fn run(a: Args) -> u8 {
    if let Err(code) =
        reject_repeats("-p", &a.params).and_then(|()| reject_repeats("--in", &a.inputs))
    {
        return code;
    }
    if let Err(e) = super::tune_inputs::check_given(&a.inputs) {
        return super::cpu::report_cpu(&e);
    }
    // Destinations are checked (and their temporary files made) first.
    let mut outs = Vec::new();
    for p in [&a.html, &a.trace].into_iter().flatten() {
        match Output::prepare(p) {
            Ok(o) => outs.push(o),
            Err(e) => return super::cpu::report_cpu(&e),
        }
    }
    if let Some(k) = &a.keep_dump {
        if k.exists() {
            return super::usage::UsageError::NotApplicable {
                flag: format!("--keep-dump {}", k.display()),
                context: "to an existing path".into(),
                hint: "name a directory that does not exist yet; pk moves libtpu's dump there"
                    .into(),
            }
            .report();
        }
    }
    let given = match read_given(&a.inputs) {
        Ok(g) => g,
        Err(e) => return super::cpu::report_cpu(&e),
    };
    let opts = BuildOptions {
        targets: vec![a.target],
        params: a.params.clone(),
        kernel: a.kernel.clone(),
        cpu_reference: false,
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let built = match pk_lang::Session::open(&a.file).and_then(|s| build::build_session(&s, &opts))
    {
        Ok(b) => b,
        Err(f) => return super::common::report(&f),
    };
    super::ui::print_diags(&built.warnings, &built.sources);
    let mut kernels = built.kernels;
    let k = match kernels.len() {
        1 => kernels.remove(0),
        0 => {
            return super::usage::UsageError::NoKernel {
                file: a.file.display().to_string(),
            }
            .report()
        }
        _ => {
            let names: Vec<&str> = kernels.iter().map(|k| k.kernel.name.as_str()).collect();
            return super::usage::UsageError::SeveralKernels {
                file: a.file.display().to_string(),
                names: names.join(", "),
            }
            .report();
        }
    };
    let w = if given.is_empty() {
        if count::read_operands(&k.kernel).is_empty() {
            count::count(&k.kernel, &count::Arrays::new()).unwrap_or_else(|| work::count(&k.kernel))
        } else {
            work::count(&k.kernel)
        }
    } else {
        match count_arrays(&k.kernel, &given) {
            Ok(arrays) => {
                count::count(&k.kernel, &arrays).unwrap_or_else(|| work::count(&k.kernel))
            }
            Err(e) => return super::cpu::report_cpu(&e),
        }
    };
    let g = Generation::of(a.target);
    let roofline = model::predict(g, &w);
    let built_s = started.elapsed().as_secs_f64();
    let plugin = match Plugin::load_profiling(a.libtpu.as_deref(), ui().verbose) {
        Ok(p) => p,
        Err(e) => {
            print_diagnostic(&e);
            return super::common::pjrt_exit_code(&e);
        }
    };
    let Some(module) = k.package.stablehlo_for(a.target) else {
        return EXIT_ERRORS;
    };
    if let Some(d) = &a.keep_dump {
        plugin.keep_next_dump(std::path::absolute(d).unwrap_or_else(|_| d.clone()));
    }
    let loaded_s = started.elapsed().as_secs_f64() - built_s;
    let compiled = plugin.topology(a.target).and_then(|t| t.compile(module));
    let ck = match compiled {
        Ok(c) => c,
        Err(e) => {
            print_diagnostic(&e);
            return super::common::pjrt_exit_code(&e);
        }
    };
    let name = k.kernel.name.clone();
    let warn = |fallback: &str, reason: String| {
        print_diagnostic(&PjrtError::ScheduleUnreadable {
            kernel: name.clone(),
            target: a.target.to_string(),
            fallback: fallback.into(),
            reason,
            version: LIBTPU_VERSION.to_string(),
        })
    };
    let schedule = match &ck.schedule {
        Captured::Read(s) => match s.kernel() {
            Some(k) => Some(k.clone()),
            None => {
                warn(
                    "only the roofline model's prediction is shown",
                    "the dump holds no program of the kernel itself".into(),
                );
                None
            }
        },
        Captured::Unreadable(why) => {
            warn("only the roofline model's prediction is shown", why.clone());
            None
        }
        Captured::Off => {
            warn(
                "only the roofline model's prediction is shown",
                plugin
                    .capture_off_reason()
                    .unwrap_or_else(|| "libtpu was not asked for its schedule".into()),
            );
            None
        }
    };
    if let Some(Some(Err(why))) = schedule.as_ref().map(|s| s.source.as_ref()) {
        warn(
            "no operation is attributed to a .pk line; the schedule's totals stand",
            why.clone(),
        );
    }
    let params: serde_json::Map<String, Value> = k
        .kernel
        .params
        .iter()
        .map(|p| {
            let v = p.value.to_string();
            let j = v
                .parse::<i64>()
                .map(Value::from)
                .or_else(|_| v.parse::<f64>().map(Value::from))
                .unwrap_or(Value::String(v));
            (p.name.clone(), j)
        })
        .collect();
    let source = std::fs::read_to_string(&a.file).unwrap_or_default();
    let report = build_report(
        &a,
        &name,
        params,
        g,
        &w,
        &roofline,
        schedule.as_ref(),
        &source,
    );
    let took = started.elapsed().as_secs_f64();
    if a.json || ui().json {
        json_line(&report);
    } else {
        print!("{}", text(&report, &source));
    }
    let mut images: Vec<Vec<u8>> = Vec::new();
    if a.html.is_some() {
        images.push(html(&report, &source).into_bytes());
    }
    if a.trace.is_some() {
        images.push(trace(&report).to_string().into_bytes());
    }
    if !outs.is_empty() {
        if let Err(e) = super::output::commit(outs, &images) {
            print_diagnostic(&e);
            return EXIT_ERRORS;
        }
    }
    super::ui::status(&format!(
        "profiled in {took:.2} s (build {built_s:.2} s, libtpu load {loaded_s:.2} s, libtpu compile {:.2} s)",
        ck.compile_time.as_secs_f64()
    ));
    EXIT_OK
}

#[allow(clippy::too_many_arguments)]
fn build_report(
    a: &Args,
    name: &str,
    params: serde_json::Map<String, Value>,
    g: &Generation,
    w: &work::Work,
    roofline: &model::Prediction,
    s: Option<&KernelSchedule>,
    source: &str,
) -> Value {
    let mut r = json!({
        "type": "profile",
        "kernel": name,
        "file": a.file.display().to_string(),
        "target": a.target.to_string(),
        "libtpu": LIBTPU_VERSION,
        "params": params,
        "roofline_model": {
            "seconds": roofline.seconds,
            "roofline_fraction": roofline.roofline_fraction,
            "memory_bound": roofline.memory_bound,
            "bound": roofline.bound.name(),
        },
        "steps": w.steps,
    });
    let Some(s) = s else {
        r["prediction"] = r["roofline_model"].clone();
        r["prediction"]["model"] = json!("roofline");
        return r;
    };
    let est = sched::predict(g, s, w);
    r["prediction"] = json!({
        "model": "schedule",
        "seconds": est.prediction.seconds,
        "roofline_fraction": est.prediction.roofline_fraction,
        "memory_bound": est.prediction.memory_bound,
        "bound": est.prediction.bound.name(),
    });
    let main = s.main_loop();
    let clock = g.clock_hz();
    let steps = w.steps.max(1) as f64;
    let step_bundles = main.map_or(s.bundles, |m| m.bundles);
    let compute_s = step_bundles as f64 / clock;
    // As the schedule model: the TensorCores of a megacore device share
    // the parallel steps and the HBM bandwidth, unless the grid's loop
    // states that one core runs every step.
    let one_core_runs_all = main
        .and_then(|m| m.trips)
        .is_some_and(|t| t >= w.steps.max(1));
    let cores_used = if w.parallel_steps >= g.cores as u64 && !one_core_runs_all {
        g.cores as f64
    } else {
        1.0
    };
    let bw = g.hbm_bytes_per_s / cores_used;
    let copy_s = (w.bytes_in + w.bytes_out + w.dma_bytes) as f64 / steps / bw;
    let step_s = compute_s.max(copy_s) + SCHEDULE_STEP_OVERHEAD_S;
    let units: Vec<Value> = s
        .units
        .iter()
        .map(|u| {
            json!({
                "unit": u.unit,
                "class": class_of_unit(&u.unit),
                "capacity": u.capacity,
                "utilization": s.utilization(&u.unit, main).unwrap_or(0.0),
            })
        })
        .collect();
    let (busiest, busiest_share) = sched::critical_unit(s);
    let critical = if copy_s > compute_s {
        json!({"class": "DMA", "unit": "DMA", "share": copy_s / step_s,
               "why": "the step's copies outlast its scheduled bundles"})
    } else {
        json!({"class": class_of_unit(&busiest), "unit": busiest, "share": busiest_share,
               "why": "the unit whose slots the step's bundles fill the most"})
    };
    r["step"] = json!({
        "loop": main.is_some(),
        "bundles": step_bundles,
        "outside_bundles": s.bundles - step_bundles.min(s.bundles),
        "program_bundles": s.bundles,
        "clock_hz": clock,
        "compute_seconds": compute_s,
        "dma_seconds": copy_s,
        "overhead_seconds": SCHEDULE_STEP_OVERHEAD_S,
        "seconds": step_s,
        "dma_bytes": (w.bytes_in + w.bytes_out + w.dma_bytes) as f64 / steps,
        "critical": critical,
        "units": units,
    });
    let range = main.map_or((0, u64::MAX), |m| (m.start, m.end));
    match &s.source {
        Some(Ok(at)) => {
            let l = rows(at, range);
            let attributed: u64 = l.lines.values().map(|r| r.ops.values().sum::<u64>()).sum();
            // The kernel's own file first, then the files of the functions
            // it calls (the standard library's are pk's own copies).
            let own = std::fs::canonicalize(&a.file).ok();
            let is_own = |f: &str| own.is_some() && std::fs::canonicalize(f).ok() == own;
            let texts: Vec<(String, bool, Vec<String>)> = at
                .files
                .iter()
                .map(|f| {
                    let text = if is_own(f) {
                        source.to_string()
                    } else {
                        file_text(f)
                    };
                    (
                        f.clone(),
                        is_own(f),
                        text.lines().map(str::to_string).collect(),
                    )
                })
                .collect();
            let mut list: Vec<(&(u16, u32), &Row)> = l.lines.iter().collect();
            list.sort_by_key(|((f, n), _)| (!texts.get(*f as usize).is_some_and(|t| t.1), *f, *n));
            r["lines"] = Value::Array(
                list.into_iter()
                    .map(|((f, n), row)| {
                        let mut v = row_json(row);
                        let t = texts.get(*f as usize);
                        v["file"] = json!(t.map_or("", |t| t.0.as_str()));
                        v["kernel_file"] = json!(t.is_some_and(|t| t.1));
                        v["line"] = json!(n);
                        v["text"] = json!(t
                            .and_then(|t| t.2.get((*n as usize).wrapping_sub(1)))
                            .map_or("", |t| t.trim_end()));
                        v
                    })
                    .collect(),
            );
            r["other"] = json!({
                "dma": row_json(&l.dma),
                "scalar": row_json(&l.scalar),
                "vector": row_json(&l.vector),
                "empty": row_json(&l.empty),
            });
            r["attribution"] = json!({
                "ops": l.ops,
                "attributed_ops": attributed,
                "stated_ops": l.stated,
                "inferred_ops": l.inferred,
                "files": at.files,
            });
        }
        Some(Err(why)) => r["attribution"] = json!({"error": why}),
        None => r["attribution"] = json!({"error": "not captured"}),
    }
    r["step"]["cores"] = json!(cores_used);
    r["timeline"] = timeline(w, bw, compute_s, copy_s);
    r
}

/// The first grid steps of one core as the schedule model runs them: the
/// first blocks' copies, then each step's compute beside the next step's
/// copies (the average step's), then the fixed overhead. Microseconds.
fn timeline(w: &work::Work, bw: f64, compute_s: f64, copy_s: f64) -> Value {
    let us = 1e6;
    let mut ev = Vec::new();
    let first = w.first_in_bytes as f64 / bw;
    ev.push(json!({"track": "DMA", "name": "first blocks in", "step": -1, "start_us": 0.0, "dur_us": first * us}));
    let mut t = first;
    let n = w.steps.clamp(1, 8);
    for k in 0..n {
        ev.push(json!({"track": "compute", "name": format!("step {k}"), "step": k, "start_us": t * us, "dur_us": compute_s * us}));
        if k + 1 < w.steps {
            ev.push(json!({"track": "DMA", "name": format!("blocks of step {}", k + 1), "step": k, "start_us": t * us, "dur_us": copy_s * us}));
        }
        let busy = compute_s.max(if k + 1 < w.steps { copy_s } else { 0.0 });
        ev.push(json!({"track": "overhead", "name": "step overhead", "step": k, "start_us": (t + busy) * us, "dur_us": SCHEDULE_STEP_OVERHEAD_S * us}));
        t += busy + SCHEDULE_STEP_OVERHEAD_S;
    }
    Value::Array(ev)
}

/// The text of a file Mosaic's locations name: pk's copy of a standard
/// library module (`std/nn.pk`), else the file as it is now (empty when it
/// cannot be read).
fn file_text(f: &str) -> String {
    if let Some(m) = f.strip_prefix("std/").and_then(|m| m.strip_suffix(".pk")) {
        if let Some((_, t)) = pk_lang::resolve::STD_MODULES.iter().find(|(n, _)| *n == m) {
            return t.to_string();
        }
    }
    std::fs::read_to_string(f).unwrap_or_default()
}

fn fmt_s(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.2} us", s * 1e6)
    }
}

fn text(r: &Value, _source: &str) -> String {
    let mut o = String::new();
    let params: Vec<String> = r["params"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"')))
                .collect()
        })
        .unwrap_or_default();
    o += &format!(
        "{} on {} ({}), libtpu {}\n",
        r["kernel"].as_str().unwrap_or(""),
        r["target"].as_str().unwrap_or(""),
        params.join(" "),
        r["libtpu"].as_str().unwrap_or("")
    );
    let p = &r["prediction"];
    o += &format!(
        "predicted {} per call ({} model; roofline model {}), {:.0}% of the roofline\n",
        fmt_s(p["seconds"].as_f64().unwrap_or(0.0)),
        p["model"].as_str().unwrap_or(""),
        fmt_s(r["roofline_model"]["seconds"].as_f64().unwrap_or(0.0)),
        100.0 * p["roofline_fraction"].as_f64().unwrap_or(0.0)
    );
    let st = &r["step"];
    if st.is_null() {
        return o;
    }
    o += &format!(
        "grid: {} steps; a step: {} bundles ({} compute), {} DMA, {} overhead = {}\n",
        r["steps"],
        st["bundles"],
        fmt_s(st["compute_seconds"].as_f64().unwrap_or(0.0)),
        fmt_s(st["dma_seconds"].as_f64().unwrap_or(0.0)),
        fmt_s(st["overhead_seconds"].as_f64().unwrap_or(0.0)),
        fmt_s(st["seconds"].as_f64().unwrap_or(0.0)),
    );
    let c = &st["critical"];
    let (class, unit) = (
        c["class"].as_str().unwrap_or(""),
        c["unit"].as_str().unwrap_or(""),
    );
    // The slot's name in parentheses when it says more than the class.
    let named = if unit == class {
        class.to_string()
    } else {
        format!("{class} ({unit})")
    };
    o += &format!(
        "critical: {named} at {:.0}%: {}\n",
        100.0 * c["share"].as_f64().unwrap_or(0.0),
        c["why"].as_str().unwrap_or("")
    );
    let units: Vec<String> = st["units"]
        .as_array()
        .map(|u| {
            u.iter()
                .map(|u| {
                    format!(
                        "{} {:.0}%",
                        u["unit"].as_str().unwrap_or(""),
                        100.0 * u["utilization"].as_f64().unwrap_or(0.0)
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    o += &format!("slots used per step: {}\n", units.join(", "));
    let Some(lines) = r["lines"].as_array() else {
        o += &format!(
            "source lines: not attributed ({})\n",
            r["attribution"]["error"].as_str().unwrap_or("")
        );
        return o;
    };
    o += "\nper grid step: bundles holding the line's operations, its share of the step's bundles, its operations by unit\n";
    o += &format!(
        "{:>10} {:>8} {:>8} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>6}  source\n",
        "line", "bundles", "share", "MXU", "VPU", "EUP", "XLU", "ld/st", "DMA", "scalar"
    );
    let row = |label: &str, v: &Value, text: &str| {
        let ops = |c: &str| v["ops"][c].as_u64().unwrap_or(0);
        format!(
            "{:>10} {:>8} {:>8.1} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>6}  {}\n",
            label,
            v["bundles"].as_u64().unwrap_or(0),
            v["share"].as_f64().unwrap_or(0.0),
            ops("MXU"),
            ops("VPU"),
            ops("EUP"),
            ops("XLU"),
            ops("load/store"),
            ops("DMA"),
            ops("scalar"),
            text
        )
    };
    for l in lines {
        let label = if l["kernel_file"].as_bool() == Some(true) {
            l["line"].to_string()
        } else {
            let f = l["file"].as_str().unwrap_or("");
            let f = f.rsplit('/').next().unwrap_or(f);
            format!("{f}:{}", l["line"])
        };
        o += &row(&label, l, l["text"].as_str().unwrap_or("").trim());
    }
    for (key, label) in [
        ("dma", "(no line: DMAs and sync flags)"),
        ("scalar", "(no line: scalar)"),
        ("vector", "(no line: vector)"),
        ("empty", "(empty bundles)"),
    ] {
        o += &row("-", &r["other"][key], label);
    }
    let at = &r["attribution"];
    let (ops, att) = (
        at["ops"].as_u64().unwrap_or(0),
        at["attributed_ops"].as_u64().unwrap_or(0),
    );
    let pct = if ops > 0 {
        100.0 * att as f64 / ops as f64
    } else {
        0.0
    };
    o += &format!(
        "\n{att} of the step's {ops} operations have a line ({pct:.0}%): {} as libtpu states it, {} by data flow\n",
        at["stated_ops"], at["inferred_ops"],
    );
    o
}

/// The Chrome trace event format (JSON object form): one complete event
/// (`ph: "X"`) per modelled interval, microseconds.
fn trace(r: &Value) -> Value {
    let tid = |track: &str| match track {
        "compute" => 1,
        "DMA" => 2,
        _ => 3,
    };
    let mut ev = vec![
        json!({"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": format!("{} on {} (modelled from libtpu's schedule)", r["kernel"].as_str().unwrap_or(""), r["target"].as_str().unwrap_or(""))}}),
        json!({"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "compute (TensorCore)"}}),
        json!({"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "DMA (HBM <-> VMEM)"}}),
        json!({"ph": "M", "pid": 1, "tid": 3, "name": "thread_name", "args": {"name": "step overhead"}}),
    ];
    for e in r["timeline"].as_array().into_iter().flatten() {
        let track = e["track"].as_str().unwrap_or("");
        ev.push(json!({
            "name": e["name"],
            "cat": track,
            "ph": "X",
            "ts": e["start_us"],
            "dur": e["dur_us"],
            "pid": 1,
            "tid": tid(track),
            "args": {"step": e["step"]},
        }));
    }
    json!({"traceEvents": ev, "displayTimeUnit": "ns"})
}

fn escape_script(s: &str) -> String {
    s.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// A self-contained page: the report as JSON, drawn by inline script into
/// the heat-mapped source and the step timeline (SVG).
fn html(r: &Value, source: &str) -> String {
    let data = json!({"report": r, "source": source.lines().collect::<Vec<_>>()});
    HTML_PAGE.replace("__DATA__", &escape_script(&data.to_string()))
}

const HTML_PAGE: &str = include_str!("profile.html");

//! What `pkc tune` prints: one target's sweep summarised as a
//! [`Report`] (the data the cache stores and `--json` prints), and the
//! table of a report.
//!
//! invariant: the table is made from the report alone, so a report read
//! back from the cache prints the same text as the run that wrote it.

use super::tune::Eval;
use super::tune_sweep::{Candidate, TargetResult};
use pk_runtime::tune::report::{self, Params, Report, Row, Status, Unranked, WorkSeen, SHOWN};
use std::collections::BTreeMap;

fn time(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

fn bytes(b: Option<u64>) -> String {
    b.map_or("-".to_string(), |b| b.to_string())
}

/// The report of one target's sweep. `fixed` holds the values of the
/// parameters that were not tuned.
pub fn summarise(
    kernel: &str,
    eval: Eval,
    r: &TargetResult,
    fixed: &BTreeMap<String, serde_json::Value>,
) -> Report {
    let params = |c: &[i64]| -> Params {
        r.space
            .axes
            .iter()
            .zip(c)
            .map(|(a, v)| (a.name.clone(), *v))
            .collect()
    };
    let row = |c: &Candidate| Row {
        params: params(&c.config),
        seconds: c.seconds,
        predicted_seconds: c.prediction.seconds,
        schedule: c.schedule.as_ref().map(report::ScheduleSeen::of),
        roofline_fraction: c.ranked_by().roofline_fraction,
        memory_bound: c.ranked_by().memory_bound,
        bound: c.ranked_by().bound.name().to_string(),
        grid_steps: c.work.steps,
        generated_code_bytes: c.code_bytes,
        memory: c.memory,
        work: WorkSeen::of(&c.work),
        rank: None,
        why_slower: None,
    };
    let unranked = |v: &[(String, String)]| -> Vec<Unranked> {
        v.iter()
            .map(|(c, m)| Unranked {
                config: c.clone(),
                message: m.clone(),
            })
            .collect()
    };
    let default = r.default.as_ref().and_then(|d| {
        let pos = r.ranked.iter().position(|c| &c.config == d)?;
        let c = &r.ranked[pos];
        let mut v = row(c);
        v.rank = Some(pos + 1);
        if pos > 0 {
            v.why_slower = Some(why_lost(c, &r.ranked[0], eval));
        }
        Some(v)
    });
    Report {
        kind: "tune".into(),
        kernel: kernel.to_string(),
        target: r.target.name().to_string(),
        evaluator: eval.name().to_string(),
        axes: r
            .space
            .axes
            .iter()
            .map(|a| report::Axis {
                name: a.name.clone(),
                candidates: a.candidates.clone(),
                default: a.default,
            })
            .collect(),
        fixed: fixed.clone(),
        space: r.space.size(),
        tried: r.tried,
        pruned: r.pruned.clone(),
        aot: r.aot,
        ray: r.ray.clone(),
        refused: unranked(&r.refused),
        timed_out: unranked(&r.timed_out),
        failed: unranked(&r.failed),
        ranked: r.ranked.len(),
        best: r.ranked.iter().take(SHOWN).map(row).collect(),
        default,
        cache: None,
        points: r
            .points
            .iter()
            .map(|(c, s)| report::Point {
                params: params(c),
                status: s.clone(),
            })
            .collect(),
        device: pk_runtime::tune::model::Generation::of(r.target)
            .device
            .describe()
            .to_string(),
        schedule_fallbacks: unranked(&r.schedule_fallbacks),
        screen: r.screen,
        screened: r.screened,
    }
}

/// The human-readable report of one target.
pub fn table(r: &Report) -> String {
    let mut out = String::new();
    let what = if r.evaluator == Eval::Model.name() || r.evaluator == Eval::Schedule.name() {
        "predicted"
    } else {
        "measured"
    };
    let kept = r.tried - r.pruned.values().sum::<usize>();
    let compiled = if r.aot {
        format!("{} compiled by libtpu", kept - r.screened - r.refused.len())
    } else {
        "libtpu not run (--no-aot)".to_string()
    };
    out.push_str(&format!(
        "{} on {}: {} configurations in the space, {} tried, {kept} kept by the checker, {compiled}, {} ranked ({})\n",
        r.kernel, r.target, r.space, r.tried, r.ranked, r.evaluator
    ));
    if !r.pruned.is_empty() {
        let parts: Vec<String> = r.pruned.iter().map(|(c, n)| format!("{c} x{n}")).collect();
        out.push_str(&format!("  pruned by the checker: {}\n", parts.join(", ")));
    }
    if let (Some(m), true) = (r.screen, r.screened > 0) {
        out.push_str(&format!(
            "  not compiled, the roofline model predicting them over {m}x its best (--screen none compiles them): {}\n",
            r.screened
        ));
    }
    if r.aot {
        out.push_str(&format!("  refused by libtpu: {}\n", r.refused.len()));
    }
    if let Some(u) = &r.ray {
        out.push_str(&format!(
            "  compiled on the Ray cluster at {} ({} nodes, {} CPUs): {} compiles of every target ran on {} nodes in {} workers\n",
            u.address, u.cluster_nodes, u.cluster_cpus, u.jobs, u.nodes, u.workers
        ));
    }
    for u in &r.refused {
        out.push_str(&format!("    {}: {}\n", u.config, u.message));
    }
    for (list, what) in [(&r.timed_out, "timed out"), (&r.failed, "not timed")] {
        if !list.is_empty() {
            out.push_str(&format!("  {what}: {}\n", list.len()));
            for u in list {
                out.push_str(&format!("    {}: {}\n", u.config, u.message));
            }
        }
    }
    if !r.device.is_empty() {
        out.push_str(&format!("  device: {}\n", r.device));
    }
    if !r.schedule_fallbacks.is_empty() {
        out.push_str(&format!(
            "  ranked by the roofline model, libtpu's schedule unreadable (PK2013): {}\n",
            r.schedule_fallbacks.len()
        ));
    }
    let schedule = r.evaluator == Eval::Schedule.name();
    out.push_str(&format!(
        "  {:<4} {:<28} {:>12} {:>9} {:>12} {:>10} {:>8}{}\n",
        "rank",
        "configuration",
        what,
        "roofline",
        "bound",
        "code B",
        "steps",
        if schedule {
            "  model (roofline)  bundles/step  busiest unit"
        } else {
            ""
        }
    ));
    for (i, c) in r.best.iter().enumerate() {
        out.push_str(&row(&format!("{}", i + 1), r, c));
    }
    match (&r.default, r.best.first()) {
        (Some(d), Some(best)) if d.rank.unwrap_or(1) > 1 => {
            let pos = d.rank.unwrap_or(1);
            if pos > SHOWN {
                out.push_str(&row("dflt", r, d));
            }
            out.push_str(&format!(
                "  the default ranks {pos} of {}, {:.2}x the best: {}\n",
                r.ranked,
                d.seconds / best.seconds,
                d.why_slower.as_deref().unwrap_or("")
            ));
        }
        (Some(_), _) => out.push_str("  the default is the best configuration\n"),
        (None, _) => out.push_str(&format!(
            "  the default was not ranked: {}\n",
            default_missing(r)
        )),
    }
    if let Some(p) = &r.cache {
        out.push_str(&format!("  cached in {p}\n"));
    }
    out
}

fn row(rank: &str, r: &Report, c: &Row) -> String {
    let schedule = match (&c.schedule, r.evaluator == Eval::Schedule.name()) {
        (Some(s), true) => format!(
            "  {:>16}  {:>12}  {} {:.0}%",
            time(c.predicted_seconds),
            s.step_bundles,
            s.critical_unit,
            100.0 * s.critical_share
        ),
        (None, true) => format!("  {:>16}  {:>12}  -", time(c.predicted_seconds), "-"),
        _ => String::new(),
    };
    format!(
        "  {:<4} {:<28} {:>12} {:>8.1}% {:>12} {:>10} {:>8}{schedule}\n",
        rank,
        r.describe(&c.params),
        time(c.seconds),
        100.0 * c.roofline_fraction,
        if c.bound.is_empty() { "-" } else { &c.bound },
        bytes(c.generated_code_bytes),
        c.grid_steps
    )
}

/// Why the default configuration has no rank: what became of it.
fn default_missing(r: &Report) -> String {
    let Some(d) = r.default_params() else {
        return "a tuned parameter has no default among its candidates".into();
    };
    match r.points.iter().find(|p| p.params == d).map(|p| &p.status) {
        None => "it was not among the configurations sampled".into(),
        Some(Status::Pruned { code }) => {
            format!("the checker rejected it for this target ({code})")
        }
        Some(Status::Refused { message }) => format!("libtpu refused it: {message}"),
        Some(Status::TimedOut { message }) => format!("it timed out: {message}"),
        Some(Status::Failed { message }) => format!("it could not be timed: {message}"),
        Some(Status::Ranked { .. }) => "it was ranked".into(),
        Some(Status::Screened { predicted_seconds }) => format!(
            "it was not compiled: the roofline model predicts {}, past the screen's margin",
            time(*predicted_seconds)
        ),
    }
}

/// Why the default is slower than the best, in the model's terms: more
/// bytes copied, more grid steps, or more compute.
fn why_lost(d: &Candidate, b: &Candidate, eval: Eval) -> String {
    let moved = |c: &Candidate| c.work.bytes_in + c.work.bytes_out + c.work.dma_bytes;
    let mut why = Vec::new();
    if moved(d) > moved(b) {
        why.push(format!(
            "it copies {:.2}x the bytes ({:.1} MB vs {:.1} MB){}",
            moved(d) as f64 / moved(b).max(1) as f64,
            moved(d) as f64 / 1e6,
            moved(b) as f64 / 1e6,
            if d.prediction.memory_bound {
                " and is bound by HBM bandwidth"
            } else {
                ""
            }
        ));
    }
    if d.ranked_by().bound == pk_runtime::tune::model::Bound::Interconnect {
        why.push(format!(
            "it is bound by the interconnect ({:.1} MB on its busiest link)",
            d.work.remote_link_bytes as f64 / 1e6
        ));
    }
    if d.work.steps > b.work.steps {
        why.push(format!(
            "it takes {} grid steps against {} ({} us overhead each)",
            d.work.steps,
            b.work.steps,
            pk_runtime::tune::model::STEP_OVERHEAD_S * 1e6
        ));
    }
    if why.is_empty() {
        why.push("its steps use the units less fully (smaller or padded MXU tiles)".into());
    }
    if eval == Eval::Schedule {
        if let (Some(ds), Some(bs)) = (&d.schedule, &b.schedule) {
            why.insert(
                0,
                format!(
                    "libtpu schedules {} bundles per grid step against {} (busiest unit {} at {:.0}%)",
                    ds.step_bundles,
                    bs.step_bundles,
                    ds.critical_unit,
                    100.0 * ds.critical_share
                ),
            );
        }
    } else if eval != Eval::Model {
        why.push("(the model's account; the ranking is measured)".into());
    }
    why.join("; ")
}

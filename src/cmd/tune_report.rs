//! What `pkc tune` prints: the table of the best configurations, the
//! default and why it lost, or one JSON object per target; and the CPU
//! timing of `--eval cpu`.

use super::tune::{Candidate, Eval, PointStatus, TargetResult};
use pk_runtime::cpu::{CpuKernel, HostArray, RunOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Rows of the table: the best this many configurations.
const SHOWN: usize = 5;

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

/// The human-readable report of one target.
pub fn table(kernel: &str, eval: Eval, r: &TargetResult) -> String {
    let mut out = String::new();
    let what = if eval == Eval::Model {
        "predicted"
    } else {
        "measured"
    };
    let kept = r.tried - r.pruned.values().sum::<usize>();
    let compiled = if r.aot {
        format!("{} compiled by libtpu", kept - r.refused.len())
    } else {
        "libtpu not run (--no-aot)".to_string()
    };
    out.push_str(&format!(
        "{kernel} on {}: {} configurations in the space, {} tried, {kept} kept by the checker, {compiled}, {} ranked ({})\n",
        r.target,
        r.space_size,
        r.tried,
        r.ranked.len(),
        eval.name()
    ));
    if !r.pruned.is_empty() {
        let parts: Vec<String> = r.pruned.iter().map(|(c, n)| format!("{c} x{n}")).collect();
        out.push_str(&format!("  pruned by the checker: {}\n", parts.join(", ")));
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
    for (c, m) in &r.refused {
        out.push_str(&format!("    {c}: {m}\n"));
    }
    out.push_str(&format!(
        "  {:<4} {:<28} {:>12} {:>9} {:>10} {:>8}\n",
        "rank", "configuration", what, "roofline", "code B", "steps"
    ));
    for (i, c) in r.ranked.iter().take(SHOWN).enumerate() {
        out.push_str(&row(&format!("{}", i + 1), r, c));
    }
    match default_of(r) {
        Some((pos, c)) if pos > 0 => {
            if pos >= SHOWN {
                out.push_str(&row("dflt", r, c));
            }
            out.push_str(&format!(
                "  the default ranks {} of {}, {:.2}x the best: {}\n",
                pos + 1,
                r.ranked.len(),
                c.seconds / r.ranked[0].seconds,
                why_lost(c, &r.ranked[0], eval)
            ));
        }
        Some(_) => out.push_str("  the default is the best configuration\n"),
        None => out.push_str(&format!(
            "  the default was not ranked: {}\n",
            default_missing(r)
        )),
    }
    if let Some(p) = &r.cache_path {
        out.push_str(&format!("  cached in {}\n", p.display()));
    }
    out
}

fn row(rank: &str, r: &TargetResult, c: &Candidate) -> String {
    format!(
        "  {:<4} {:<28} {:>12} {:>8.1}% {:>10} {:>8}\n",
        rank,
        r.space.describe(&c.config),
        time(c.seconds),
        100.0 * c.prediction.roofline_fraction,
        bytes(c.code_bytes),
        c.work.steps
    )
}

fn default_of(r: &TargetResult) -> Option<(usize, &Candidate)> {
    let d = r.default.as_ref()?;
    r.ranked.iter().enumerate().find(|(_, c)| &c.config == d)
}

fn default_missing(r: &TargetResult) -> String {
    match &r.default {
        None => "a tuned parameter has no default among its candidates".into(),
        Some(_) => "the checker or libtpu rejected it for this target".into(),
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
    if eval != Eval::Model {
        why.push("(the model's account; the ranking is measured)".into());
    }
    why.join("; ")
}

/// One target's result as JSON.
pub fn json(kernel: &str, eval: Eval, r: &TargetResult) -> serde_json::Value {
    let cand = |c: &Candidate| {
        serde_json::json!({
            "params": r.space.params(&c.config).into_iter().collect::<std::collections::BTreeMap<_, _>>(),
            "seconds": c.seconds,
            "predicted_seconds": c.prediction.seconds,
            "roofline_fraction": c.prediction.roofline_fraction,
            "memory_bound": c.prediction.memory_bound,
            "grid_steps": c.work.steps,
            "generated_code_bytes": c.code_bytes,
            "memory": c.memory,
            "work": work_json(&c.work),
        })
    };
    let points: Vec<serde_json::Value> = r
        .points
        .iter()
        .map(|p| {
            let params: std::collections::BTreeMap<_, _> =
                r.space.params(&p.config).into_iter().collect();
            match &p.status {
                PointStatus::Ranked(s) => {
                    serde_json::json!({"params": params, "status": "ranked", "seconds": s})
                }
                PointStatus::Pruned(code) => {
                    serde_json::json!({"params": params, "status": "pruned", "code": code})
                }
                PointStatus::Refused(m) => {
                    serde_json::json!({"params": params, "status": "refused", "message": m})
                }
                PointStatus::Unranked => {
                    serde_json::json!({"params": params, "status": "unranked"})
                }
            }
        })
        .collect();
    let default = default_of(r);
    serde_json::json!({
        "type": "tune",
        "kernel": kernel,
        "target": r.target.name(),
        "evaluator": eval.name(),
        "space": r.space_size,
        "tried": r.tried,
        "pruned": r.pruned,
        "aot": r.aot,
        "ray": r.ray.as_ref().map(|u| u.json()),
        "refused": r.refused.iter().map(|(c, m)| serde_json::json!({"config": c, "message": m})).collect::<Vec<_>>(),
        "ranked": r.ranked.len(),
        "best": r.ranked.iter().take(SHOWN).map(cand).collect::<Vec<_>>(),
        "default": default.map(|(pos, c)| {
            let mut v = cand(c);
            v["rank"] = (pos + 1).into();
            if pos > 0 {
                v["why_slower"] = why_lost(c, &r.ranked[0], eval).into();
            }
            v
        }),
        "cache": r.cache_path.as_ref().map(|p| p.display().to_string()),
        "points": points,
    })
}

/// The work the model saw, per call: counted on the `--in` inputs
/// (`counted`) or from the IR.
fn work_json(w: &pk_runtime::tune::work::Work) -> serde_json::Value {
    let (dots, vector_ops, transcendentals) = w.per_call();
    serde_json::json!({
        "counted": w.counted,
        "approximate": w.approximate,
        "grid_steps": w.steps,
        "dots": dots.iter().map(|d| serde_json::json!({
            "dtype": d.dtype.name(), "m": d.m, "n": d.n, "k": d.k, "count": d.count,
        })).collect::<Vec<_>>(),
        "vector_ops": vector_ops,
        "transcendentals": transcendentals,
        "bytes_in": w.bytes_in,
        "bytes_out": w.bytes_out,
        "dma_bytes": w.dma_bytes,
    })
}

/// A configuration ready to be timed on the CPU reference.
pub struct CpuRun {
    kernel: CpuKernel,
    inputs: Vec<Arc<HostArray>>,
}

impl CpuRun {
    /// `None` when the configuration has no CPU reference or its inputs
    /// cannot be made.
    pub fn prepare(c: &Candidate, given: &[(String, PathBuf)]) -> Option<CpuRun> {
        let (wasm, manifest) = c.built.package.cpu_reference.clone()?;
        let kernel = CpuKernel::new(&wasm, manifest, false).ok()?;
        let (arrays, _) = super::bench::inputs(&kernel, given).ok()?;
        Some(CpuRun {
            kernel,
            inputs: arrays.into_iter().map(Arc::new).collect(),
        })
    }

    /// The median time of `repeats` runs after one warm-up, seconds.
    pub fn median(&self, repeats: u32) -> Option<f64> {
        let opts = RunOptions::default();
        self.kernel.run_measured(&self.inputs, &opts).ok()?;
        let mut times = Vec::new();
        for _ in 0..repeats {
            let t = Instant::now();
            self.kernel.run_measured(&self.inputs, &opts).ok()?;
            times.push(t.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        Some(times[times.len() / 2])
    }
}

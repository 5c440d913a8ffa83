//! What one target's tuning found, as data: the report `pkc tune` prints
//! (as a table or as `--json`), draws (`--plot`) and stores whole in the
//! tuning cache, so that a cache hit prints the same text and JSON as the
//! run that wrote it.
//!
//! The JSON form of a [`Report`] is `pkc tune --json`'s output, field for
//! field (docs/tuning.md, "Report").
//!
//! invariant: a report holds only what was found (counts, times, reasons,
//! the model's account of the default's loss); nothing in it depends on how
//! it will be shown, so a stored report renders as it did when it was made.
//! invariant: parameter values keep their types: tuned values (always
//! integers) are JSON integers, and the fixed values are integers, floats,
//! booleans, dtype names or `null` (an optional parameter left `none`).

use crate::pjrt::MemoryStats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Values of the tuned parameters of one configuration, by name.
pub type Params = BTreeMap<String, i64>;

/// One target's tuning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always `"tune"`: tells these lines from diagnostics in a JSON stream.
    #[serde(rename = "type")]
    pub kind: String,
    pub kernel: String,
    pub target: String,
    pub evaluator: String,
    /// The parameters tuned, in declaration order.
    pub axes: Vec<Axis>,
    /// The values of every parameter not tuned, as resolved (given with
    /// `-p`, or the declared defaults).
    pub fixed: BTreeMap<String, serde_json::Value>,
    /// Configurations in the space.
    pub space: u64,
    /// Configurations tried (the space, or a sample of `--budget`).
    pub tried: usize,
    /// Configurations the checker (or the `--in` arrays) rejected, per code.
    pub pruned: BTreeMap<String, usize>,
    /// Whether libtpu compiled the survivors.
    pub aot: bool,
    /// Where the compiles ran, under `--ray`.
    pub ray: Option<Ray>,
    /// Configurations libtpu refused, with its reason.
    pub refused: Vec<Unranked>,
    /// Configurations whose timed run did not finish within `--timeout`.
    #[serde(default)]
    pub timed_out: Vec<Unranked>,
    /// Configurations the evaluator could not run or time (no CPU
    /// reference, a run that failed), with the reason.
    #[serde(default)]
    pub failed: Vec<Unranked>,
    /// How many configurations were ranked.
    pub ranked: usize,
    /// The best ranked configurations, best first (at most [`SHOWN`]).
    pub best: Vec<Row>,
    /// The default configuration, when it was ranked, with its rank.
    pub default: Option<Row>,
    /// The cache file the result went to (or came from).
    pub cache: Option<String>,
    /// Every configuration tried, in the order tried.
    pub points: Vec<Point>,
    /// How the target's devices are modelled: one TensorCore, a megacore,
    /// or one device per TensorCore.
    #[serde(default)]
    pub device: String,
    /// `--eval schedule`: configurations ranked by the roofline model
    /// because libtpu's schedule of them could not be read (PK2013), with
    /// why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule_fallbacks: Vec<Unranked>,
    /// `--eval schedule` with `--screen`: the margin over the roofline
    /// model's best beyond which a configuration was not compiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen: Option<f64>,
    /// How many configurations the screen left uncompiled (each a point
    /// of status `screened`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub screened: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Rows of the table and of `best`.
pub const SHOWN: usize = 5;

/// A tuned parameter and its candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub name: String,
    pub candidates: Vec<i64>,
    /// The value used when nothing is tuned, when it is a candidate.
    pub default: Option<i64>,
}

/// A configuration that was not ranked, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unranked {
    /// `bm=256 bn=512`.
    pub config: String,
    pub message: String,
}

/// One ranked configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub params: Params,
    /// The evaluator's time, seconds.
    pub seconds: f64,
    /// The roofline model's time, seconds (the same as `seconds` under
    /// `--eval model`).
    pub predicted_seconds: f64,
    /// What libtpu's schedule of the configuration says (`--eval
    /// schedule`, and whenever the schedule was captured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleSeen>,
    pub roofline_fraction: f64,
    pub memory_bound: bool,
    /// What bounds the configuration in the evaluator's model: `compute`,
    /// `HBM` or `interconnect` (its remote copies).
    #[serde(default)]
    pub bound: String,
    pub grid_steps: u64,
    pub generated_code_bytes: Option<u64>,
    pub memory: Option<MemoryStats>,
    pub work: WorkSeen,
    /// For the default: its place in the ranking, 1 for the best.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<usize>,
    /// For a default that is not the best: why, in the model's terms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_slower: Option<String>,
}

/// The schedule model's account of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleSeen {
    /// The schedule model's time, seconds.
    pub seconds: f64,
    /// Bundles (cycles) of one grid step, and of the program outside the
    /// grid's loop.
    pub step_bundles: u64,
    pub outside_bundles: u64,
    /// The unit a step keeps busiest (`MATMUL`, `VALU`, `VLOAD`, ...) and
    /// the share of its slots used.
    pub critical_unit: String,
    pub critical_share: f64,
    /// Whether the step's copies outlast its compute.
    pub memory_bound: bool,
    /// `compute`, `HBM` or `interconnect`, in the schedule model.
    #[serde(default)]
    pub bound: String,
}

impl ScheduleSeen {
    pub fn of(e: &super::schedule::ScheduleEstimate) -> ScheduleSeen {
        ScheduleSeen {
            seconds: e.prediction.seconds,
            step_bundles: e.step_bundles,
            outside_bundles: e.outside_bundles,
            critical_unit: e.critical_unit.clone(),
            critical_share: e.critical_share,
            memory_bound: e.prediction.memory_bound,
            bound: e.prediction.bound.name().to_string(),
        }
    }
}

/// The work the model saw for one configuration, per call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkSeen {
    /// Counted on the `--in` inputs (or on the grid indices), not static.
    pub counted: bool,
    pub approximate: u64,
    pub grid_steps: u64,
    pub dots: Vec<DotSeen>,
    pub vector_ops: f64,
    pub transcendentals: f64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub dma_bytes: u64,
    /// Counted mode: the rounds of the body's own DMA pipeline (runs of
    /// DMA waits that tile work follows), each charged a grid step's
    /// overhead.
    #[serde(default)]
    pub dma_rounds: u64,
    /// Bytes sent to other devices by remote copies, and the part of them
    /// the busiest link of the interconnect carries.
    #[serde(default)]
    pub remote_bytes: u64,
    #[serde(default)]
    pub remote_link_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DotSeen {
    pub dtype: String,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub count: u64,
}

impl WorkSeen {
    pub fn of(w: &super::work::Work) -> WorkSeen {
        let (dots, vector_ops, transcendentals) = w.per_call();
        WorkSeen {
            counted: w.counted,
            approximate: w.approximate,
            grid_steps: w.steps,
            dots: dots
                .iter()
                .map(|d| DotSeen {
                    dtype: d.dtype.name().to_string(),
                    m: d.m,
                    n: d.n,
                    k: d.k,
                    count: d.count,
                })
                .collect(),
            vector_ops,
            transcendentals,
            bytes_in: w.bytes_in,
            bytes_out: w.bytes_out,
            dma_bytes: w.dma_bytes,
            dma_rounds: w.classes.iter().map(|c| c.count * c.dma_rounds).sum(),
            remote_bytes: w.remote_bytes,
            remote_link_bytes: w.remote_link_bytes,
        }
    }

    /// Bytes copied and moved by DMA per call.
    pub fn moved(&self) -> u64 {
        self.bytes_in + self.bytes_out + self.dma_bytes
    }
}

/// Where a sweep's compiles ran on a Ray cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ray {
    pub address: String,
    /// Alive nodes in the cluster, and its CPUs.
    pub cluster_nodes: usize,
    pub cluster_cpus: f64,
    /// Distinct nodes and worker processes that ran the sweep's tasks.
    pub nodes: usize,
    pub workers: usize,
    pub jobs: usize,
}

/// One configuration tried and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub params: Params,
    #[serde(flatten)]
    pub status: Status,
}

/// What became of a configuration; `status` in the JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Status {
    /// Ranked with this time, seconds, and what bounds it in the
    /// evaluator's model (`compute`, `HBM` or `interconnect`; empty for a
    /// measured time).
    Ranked {
        seconds: f64,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        bound: String,
    },
    /// Rejected by the checker (or its inputs): the code.
    Pruned { code: String },
    /// Refused by libtpu: its message.
    Refused { message: String },
    /// Its timed run did not finish within `--timeout`.
    TimedOut { message: String },
    /// Built, but the evaluator could not run or time it.
    Failed { message: String },
    /// Checked and predicted by the roofline model, but not compiled: its
    /// prediction (seconds) is more than the screen's margin over the
    /// best's, so libtpu's schedule of it was not read (`--screen`).
    Screened { predicted_seconds: f64 },
}

impl Report {
    /// `bm=256 bn=512` for `params`, in the order the axes are declared.
    pub fn describe(&self, params: &Params) -> String {
        self.axes
            .iter()
            .filter_map(|a| params.get(&a.name).map(|v| format!("{}={v}", a.name)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The default configuration, when every tuned parameter has a default
    /// among its candidates.
    pub fn default_params(&self) -> Option<Params> {
        self.axes
            .iter()
            .map(|a| a.default.map(|d| (a.name.clone(), d)))
            .collect()
    }

    /// A configuration's values in axis order (`None` when one is missing).
    pub fn config(&self, params: &Params) -> Option<Vec<i64>> {
        self.axes
            .iter()
            .map(|a| params.get(&a.name).copied())
            .collect()
    }
}

/// A parameter's value as JSON of its own type.
pub fn param_json(v: &pk_lang::ir::ParamValue) -> serde_json::Value {
    use pk_lang::ir::ParamValue as V;
    match v {
        V::Int(i) => (*i).into(),
        V::Float(f) => serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, Into::into),
        V::Bool(b) => (*b).into(),
        V::Dtype(d) => d.name().into(),
        V::None | V::Unbound => serde_json::Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pk_lang::ir::{DType, ParamValue};

    #[test]
    fn values_keep_their_types_in_json() {
        assert_eq!(param_json(&ParamValue::Int(4096)), serde_json::json!(4096));
        assert_eq!(param_json(&ParamValue::Float(0.5)), serde_json::json!(0.5));
        assert_eq!(param_json(&ParamValue::Bool(true)), serde_json::json!(true));
        assert_eq!(
            param_json(&ParamValue::Dtype(DType::BF16)),
            serde_json::json!("bf16")
        );
        assert_eq!(param_json(&ParamValue::None), serde_json::Value::Null);
    }

    #[test]
    fn a_point_is_flat_with_its_status() {
        let p = Point {
            params: [("bm".to_string(), 128)].into_iter().collect(),
            status: Status::TimedOut {
                message: "too slow".into(),
            },
        };
        let v = serde_json::to_value(&p).expect("serialises");
        assert_eq!(
            v,
            serde_json::json!({"params": {"bm": 128}, "status": "timed_out", "message": "too slow"})
        );
        assert_eq!(serde_json::from_value::<Point>(v).expect("reads back"), p);
    }
}

//! The roofline-style performance model `pkc tune --eval model` ranks
//! configurations with: per-generation constants from public
//! specifications ([`Generation`]) applied to the work of one kernel
//! specialisation counted from its Tile IR ([`super::work::Work`]).
//!
//! Per grid step, the matrix unit, the vector unit and the transcendental
//! unit work in parallel (they issue from one VLIW bundle), so compute time
//! is the largest of the three; the block copies of the next step overlap
//! with it (the pipeline double-buffers every blocked operand), so a step
//! takes the larger of compute and copy time, plus a fixed per-step
//! overhead. The copies of single-buffered blocks (`buffered(1)`) do not
//! overlap: they add to the step. The first step's copies in and the last step's copies out are
//! not overlapped. Steps of `parallel` axes are shared between the
//! TensorCores of a megacore chip, which share its HBM bandwidth. Work
//! counted on inputs ([`super::count`]) is predicted the same way per
//! class of equal steps, each step with its own copies and compute.
//!
//! Remote copies (a kernel on a mesh) travel over the inter-chip
//! interconnect while the step computes: a step's interconnect time is the
//! bytes its busiest link carries over one link's bandwidth, and the step
//! takes the largest of compute, HBM copies and interconnect. Each round
//! of remote copies (copies to distinct neighbours start side by side)
//! costs the per-step overhead again, as a round of the body's own local
//! DMA pipeline does. Every prediction says which of the three bounds it.
//!
//! docs/tuning.md gives the source of every constant.

use super::work::{Dot, Work};
use crate::pjrt::TpuTarget;
use pk_lang::ir::DType;

/// How JAX presents a chip's TensorCores, and so what one kernel call
/// runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceModel {
    /// One TensorCore per chip, one device (v5e, v6e).
    SingleCore,
    /// One device of two TensorCores that share the chip's HBM; a kernel's
    /// `parallel` grid steps are split between them (v4, v5p).
    Megacore,
    /// One device per TensorCore (TPU7x): a kernel runs on one core, with
    /// that core's half of the chip's HBM and bandwidth; JAX and vLLM run
    /// one device per core.
    CorePerDevice,
}

impl DeviceModel {
    /// A sentence for reports.
    pub fn describe(self) -> &'static str {
        match self {
            DeviceModel::SingleCore => "one TensorCore per chip and device",
            DeviceModel::Megacore => {
                "megacore: one device of 2 TensorCores; parallel grid steps are split between them"
            }
            DeviceModel::CorePerDevice => {
                "one device per TensorCore (2 per chip); a kernel runs on one core with half the chip's HBM bandwidth"
            }
        }
    }
}

/// Public figures of one TPU generation, per device (what one kernel call
/// runs on: the chip, or one of its TensorCores; see [`DeviceModel`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Generation {
    pub target: TpuTarget,
    pub device: DeviceModel,
    /// TensorCores per device that one kernel's `parallel` steps are split
    /// across (2 on a megacore device).
    pub cores: u32,
    /// MXUs per TensorCore: 4 on every generation (the `MATMUL` slots per
    /// bundle of libtpu's v4, v5e and v5p programs; v6e and TPU7x issue 2
    /// matmul slots a bundle, and 4 is what their published peaks give at
    /// their clocks).
    pub mxus: u32,
    /// MXU systolic array side (128 x 128 or 256 x 256).
    pub mxu_dim: u64,
    /// Peak dense matmul throughput per device, operations per second.
    pub bf16_flops: f64,
    pub int8_ops: f64,
    pub fp8_flops: f64,
    /// HBM bandwidth per device, bytes per second.
    pub hbm_bytes_per_s: f64,
    /// HBM capacity per device, bytes.
    pub hbm_bytes: u64,
    /// Inter-chip interconnect: bytes per second one link carries in one
    /// direction, per device (the published bidirectional bandwidth per
    /// chip over its links and the two directions; TPU7x's two devices of
    /// a chip share its links; see docs/tuning.md for each figure's
    /// derivation from the published ones).
    pub ici_link_bytes_per_s: f64,
}

const G: f64 = 1e9;
const T: f64 = 1e12;
const GIB: u64 = 1 << 30;

/// The five generations pk targets. Where a generation publishes no int8
/// or fp8 rate, the bf16 rate stands (no faster path is assumed). TPU7x's
/// figures are the published per-chip ones halved: a device is one of its
/// two TensorCores.
pub const GENERATIONS: [Generation; 5] = [
    Generation {
        target: TpuTarget::V4,
        device: DeviceModel::Megacore,
        mxus: 4,
        cores: 2,
        mxu_dim: 128,
        bf16_flops: 275.0 * T,
        int8_ops: 275.0 * T,
        fp8_flops: 275.0 * T,
        hbm_bytes_per_s: 1200.0 * G,
        hbm_bytes: 32 * GIB,
        ici_link_bytes_per_s: 46.875 * G,
    },
    Generation {
        target: TpuTarget::V5e,
        device: DeviceModel::SingleCore,
        mxus: 4,
        cores: 1,
        mxu_dim: 128,
        bf16_flops: 197.0 * T,
        int8_ops: 394.0 * T,
        fp8_flops: 197.0 * T,
        hbm_bytes_per_s: 819.0 * G,
        hbm_bytes: 16 * GIB,
        ici_link_bytes_per_s: 50.0 * G,
    },
    Generation {
        target: TpuTarget::V5p,
        device: DeviceModel::Megacore,
        mxus: 4,
        cores: 2,
        mxu_dim: 128,
        bf16_flops: 459.0 * T,
        int8_ops: 918.0 * T,
        fp8_flops: 459.0 * T,
        hbm_bytes_per_s: 2765.0 * G,
        hbm_bytes: 95 * GIB,
        ici_link_bytes_per_s: 100.0 * G,
    },
    Generation {
        target: TpuTarget::V6e,
        device: DeviceModel::SingleCore,
        mxus: 4,
        cores: 1,
        mxu_dim: 256,
        bf16_flops: 918.0 * T,
        int8_ops: 1836.0 * T,
        fp8_flops: 918.0 * T,
        hbm_bytes_per_s: 1640.0 * G,
        hbm_bytes: 32 * GIB,
        ici_link_bytes_per_s: 100.0 * G,
    },
    Generation {
        target: TpuTarget::Tpu7x,
        device: DeviceModel::CorePerDevice,
        mxus: 4,
        cores: 1,
        mxu_dim: 256,
        bf16_flops: 2307.0 / 2.0 * T,
        int8_ops: 2307.0 / 2.0 * T,
        fp8_flops: 4614.0 / 2.0 * T,
        hbm_bytes_per_s: 7370.0 / 2.0 * G,
        hbm_bytes: 96 * GIB,
        ici_link_bytes_per_s: 100.0 / 2.0 * G,
    },
];

/// Fixed cost of one grid step (pipeline bookkeeping, DMA issue and wait),
/// seconds. A round of the body's own DMAs, local or remote, is charged
/// it too.
pub const STEP_OVERHEAD_S: f64 = 0.35e-6;

/// Vector-unit elementwise operations per second per TensorCore, as a
/// fraction of its bf16 MXU rate: 8 x 128 lanes per cycle against
/// `2 * 128 * 128` flops per cycle per MXU on a 4-MXU, 128-wide core.
const VPU_PER_MXU_FLOP: f64 = 1024.0 / (4.0 * 2.0 * 128.0 * 128.0);

/// Transcendental evaluations per second as a fraction of the vector rate.
const EUP_PER_VPU_OP: f64 = 0.25;

impl Generation {
    pub fn of(t: TpuTarget) -> &'static Generation {
        GENERATIONS
            .iter()
            .find(|g| g.target == t)
            .expect("every target has a generation")
    }

    /// The TensorCore clock, derived from the published bf16 peak: each of
    /// a core's `mxus` MXUs does `mxu_dim^2` multiply-adds per cycle
    /// (1.05 GHz on v4, 1.50 on v5e, 1.75 on v5p and v6e, 2.20 on TPU7x).
    pub fn clock_hz(&self) -> f64 {
        let per_cycle = 2.0 * (self.mxu_dim * self.mxu_dim) as f64 * self.mxus as f64;
        self.bf16_flops / self.cores as f64 / per_cycle
    }

    /// Peak matmul rate per device for operands of `d`.
    pub fn mxu_rate(&self, d: DType) -> f64 {
        match d {
            DType::I8 => self.int8_ops,
            DType::F8E4M3FN | DType::F8E5M2 => self.fp8_flops,
            // f32 matmuls run as several bf16 passes on the MXU.
            DType::F32 => self.bf16_flops / 3.0,
            _ => self.bf16_flops,
        }
    }
}

/// What bounds a configuration's time: the units' compute, the HBM
/// copies, or the interconnect's remote copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Compute,
    Hbm,
    Interconnect,
}

impl Bound {
    /// `compute`, `HBM` or `interconnect`.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Hbm => "HBM",
            Bound::Interconnect => "interconnect",
        }
    }

    /// The bound of a call whose compute, HBM copies and remote copies
    /// take these times (summed over its steps): the largest; compute on
    /// a tie, then HBM.
    pub fn of(compute_s: f64, hbm_s: f64, ici_s: f64) -> Bound {
        if ici_s > compute_s && ici_s > hbm_s {
            Bound::Interconnect
        } else if hbm_s > compute_s {
            Bound::Hbm
        } else {
            Bound::Compute
        }
    }
}

/// A prediction for one configuration on one generation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub seconds: f64,
    /// The time the chip's peak compute and bandwidth allow for the same
    /// flops and the minimum traffic (each operand moved once), over
    /// `seconds`: 1.0 is at the roofline.
    pub roofline_fraction: f64,
    /// Whether copies, not compute, bound the steady state.
    pub memory_bound: bool,
    /// What bounds it: compute, HBM copies or the interconnect.
    pub bound: Bound,
    pub steps: u64,
}

impl Generation {
    /// Seconds the interconnect takes for `link_bytes` on the busiest link.
    pub fn ici_seconds(&self, link_bytes: u64) -> f64 {
        link_bytes as f64 / self.ici_link_bytes_per_s
    }
}

/// One step's compute time on one core: the MXU, the VPU and the EUP
/// work in parallel, so the largest of the three. Also the ideal time of
/// its dots at the chip's peak (for the roofline).
pub(crate) fn compute_seconds(
    g: &Generation,
    dots: &[Dot],
    vector_ops: f64,
    transcendentals: f64,
) -> (f64, f64) {
    let per_core = |chip_rate: f64| chip_rate / g.cores as f64;
    // The MXU works on whole `mxu_dim` tiles: a 128-wide dot on a 256-wide
    // MXU uses half of it.
    let mut mxu_s = 0.0;
    let mut ideal_s = 0.0;
    for d in dots {
        let pad = |x: u64| x.div_ceil(g.mxu_dim) * g.mxu_dim;
        let padded = 2.0 * pad(d.m) as f64 * pad(d.n) as f64 * pad(d.k) as f64;
        let exact = 2.0 * d.m as f64 * d.n as f64 * d.k as f64;
        mxu_s += d.count as f64 * padded / per_core(g.mxu_rate(d.dtype));
        ideal_s += d.count as f64 * exact / g.mxu_rate(d.dtype);
    }
    let vpu_rate = per_core(g.bf16_flops) * VPU_PER_MXU_FLOP;
    let vpu_s = vector_ops / vpu_rate;
    let eup_s = transcendentals / (vpu_rate * EUP_PER_VPU_OP);
    (mxu_s.max(vpu_s).max(eup_s), ideal_s)
}

/// Predicts the time of one call of the kernel whose work is `w`: from
/// its step classes when it was counted on inputs (each class's steps
/// take their own time), else from its one static step.
pub fn predict(g: &Generation, w: &Work) -> Prediction {
    let cores_used = if w.parallel_steps >= g.cores as u64 {
        g.cores as f64
    } else {
        1.0
    };
    // Both cores draw on one HBM, and send on one chip's links.
    let bw = g.hbm_bytes_per_s / cores_used;
    let ici_bw = g.ici_link_bytes_per_s / cores_used;
    let steps = w.steps.max(1) as f64;
    let fill_s = (w.first_in_bytes + w.last_out_bytes) as f64 / bw;
    let (seconds, ideal_flops_s, bound) = if w.counted {
        // Steps are shared by the cores as the static case shares them:
        // ceil(steps / cores) of the average step.
        let (mut sum_s, mut ideal) = (0.0, 0.0);
        let (mut compute_total, mut copy_total, mut ici_total) = (0.0, 0.0, 0.0);
        for c in &w.classes {
            let (compute_s, ideal_s) = compute_seconds(g, &c.dots, c.vector_ops, c.transcendentals);
            let exposed_s = c.exposed as f64 / bw;
            let copy_s = c.bytes.saturating_sub(c.exposed) as f64 / bw;
            let ici_s = c.remote_link_bytes as f64 / ici_bw;
            // A round of the body's own DMA pipeline (issue the next
            // block's copies, wait for this one's), local or remote, is
            // the bookkeeping of a grid step again. Single-buffered blocks'
            // copies are not overlapped with anything.
            let rounds_s = (c.dma_rounds + c.remote_rounds) as f64 * STEP_OVERHEAD_S;
            sum_s += c.count as f64
                * (compute_s.max(copy_s).max(ici_s) + exposed_s + STEP_OVERHEAD_S + rounds_s);
            ideal += c.count as f64 * ideal_s;
            compute_total += c.count as f64 * compute_s;
            copy_total += c.count as f64 * (copy_s + exposed_s);
            ici_total += c.count as f64 * ici_s;
        }
        let share = core_share(w.steps, cores_used);
        (
            sum_s * share + fill_s,
            ideal,
            Bound::of(compute_total, copy_total, ici_total),
        )
    } else {
        let (compute_s, ideal_s) = compute_seconds(g, &w.dots, w.vector_ops, w.transcendentals);
        let moved = w.bytes_in + w.bytes_out + w.dma_bytes;
        let exposed_s = w.exposed_bytes as f64 / steps / bw;
        let copy_s = moved.saturating_sub(w.exposed_bytes) as f64 / steps / bw;
        let ici_s = w.remote_link_bytes as f64 / steps / ici_bw;
        let rounds_s = w.remote_rounds as f64 / steps * STEP_OVERHEAD_S;
        let step_s = compute_s.max(copy_s).max(ici_s) + exposed_s + STEP_OVERHEAD_S + rounds_s;
        (
            (steps / cores_used).ceil() * step_s + fill_s,
            ideal_s * w.steps as f64,
            Bound::of(compute_s, copy_s + exposed_s, ici_s),
        )
    };
    let ideal_s = ideal_flops_s
        .max(w.min_bytes as f64 / g.hbm_bytes_per_s)
        .max(g.ici_seconds(w.remote_link_bytes));
    Prediction {
        seconds,
        roofline_fraction: if seconds > 0.0 {
            ideal_s / seconds
        } else {
            0.0
        },
        memory_bound: bound == Bound::Hbm,
        bound,
        steps: w.steps,
    }
}

/// The part of a kernel's `steps` grid steps that the busiest of
/// `cores_used` cores runs, as a fraction of all of them (the cores split
/// the parallel steps, the last core's share rounded up).
pub(crate) fn core_share(steps: u64, cores_used: f64) -> f64 {
    if steps == 0 {
        return 0.0;
    }
    let steps = steps as f64;
    (steps / cores_used).ceil() / steps
}

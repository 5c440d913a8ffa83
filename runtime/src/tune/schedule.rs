//! The schedule-based model `pkc tune --eval schedule` ranks with: the
//! cycles of a grid step read from libtpu's own final program of the kernel
//! ([`crate::schedule`]), overlapped with the DMA time of the step's copies,
//! plus a per-step cost the static program does not show.
//!
//! Per call:
//!
//! - The grid runs as one software-pipelined loop (the outermost loop with
//!   the most bundles). One bundle issues per cycle, so a step's compute is
//!   the loop's bundles, plus, for each loop nested in it, its bundles times
//!   its further trips: the trips the program states, else the count's
//!   (`--in`, or the grid indices): the part of the step inside loops
//!   whose trips are not stated is scaled by the counted work of each class
//!   of steps over the static step's (see [`super::count`]).
//! - A step takes `max(compute, copy) + overhead`: the pipeline
//!   double-buffers every blocked operand, so the next step's copies
//!   (bytes / the device's HBM bandwidth) overlap this step's compute.
//!   Counted on inputs, each round of the body's own DMA pipeline (a
//!   double-buffered loop over key blocks waits once per block) adds the
//!   same overhead again: it is a grid step's bookkeeping, by hand.
//! - Remote copies (a kernel on a mesh) overlap the step too: the bytes
//!   the step sends on its busiest link over one link's bandwidth
//!   ([`Generation::ici_link_bytes_per_s`]), each round of them (copies
//!   to distinct neighbours start side by side) one more overhead, as a
//!   round of local DMAs.
//! - The bundles outside the grid's loop run once, with the first blocks'
//!   copies in and the last blocks' copies out; so do the loop's further
//!   trips beyond the grid's steps that its exit test states (the
//!   pipeline's fill and drain stages).
//! - Steps of `parallel` axes are shared by the TensorCores of a megacore
//!   device, as in the roofline model, unless the grid's loop states that
//!   one core runs them all (trips at least the grid's steps).
//!
//! Cycles become seconds at the clock of [`Generation::clock_hz`].

use super::model::{compute_seconds, core_share, Bound, Generation, Prediction};
use super::work::Work;
use crate::schedule::KernelSchedule;

/// Fixed cost of one grid step beyond its scheduled bundles and its copies
/// (DMA latency and completion, the waits the static program shows as one
/// bundle), seconds. Calibrated on one published measurement
/// (docs/tuning.md): the Pallas TPU matmul guide's 350 ns per grid step of
/// an 8192^3 bf16 matmul with 128 x 128 x 128 blocks on a v5e (262,144
/// steps in 91.8 ms), less the 167 bundles (111 ns at 1.50 GHz) libtpu
/// 0.0.51 schedules for that step of kernels/matmul.pk, which outlast its
/// 80 ns of copies.
pub const SCHEDULE_STEP_OVERHEAD_S: f64 = 0.24e-6;

/// What the schedule says of one configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleEstimate {
    pub prediction: Prediction,
    /// Bundles of one (static) grid step, and of the program outside it.
    pub step_bundles: u64,
    pub outside_bundles: u64,
    /// The unit whose slots a step fills the most, and that share.
    pub critical_unit: String,
    pub critical_share: f64,
}

/// The unit of `s` busiest inside the grid loop (else the whole program):
/// its name and slots used over slots available.
pub fn critical_unit(s: &KernelSchedule) -> (String, f64) {
    let l = s.main_loop();
    s.units
        .iter()
        .filter_map(|u| Some((u.unit.clone(), s.utilization(&u.unit, l)?)))
        .fold(
            (String::new(), 0.0),
            |best, (u, x)| {
                if x > best.1 {
                    (u, x)
                } else {
                    best
                }
            },
        )
}

/// Predicts the time of one call of the kernel whose work is `w` and whose
/// final program is `s`.
pub fn predict(g: &Generation, s: &KernelSchedule, w: &Work) -> ScheduleEstimate {
    let clock = g.clock_hz();
    // A call of one grid step has no grid loop: a loop in its program is
    // the kernel's own (a ring's steps), run as the program states.
    let main = s.main_loop().filter(|_| w.steps > 1);
    let index = main.and_then(|m| s.loops.iter().position(|l| l == m));
    // Bundles of one step, split into what runs once per step and what
    // runs inside nested loops whose trips the program does not state.
    let mut variable = 0.0;
    let mut fixed;
    let step_bundles = main.map_or(s.bundles, |m| m.bundles);
    if let (Some(m), Some(mi)) = (main, index) {
        fixed = m.bundles as f64;
        for (i, l) in s.loops.iter().enumerate() {
            if i == mi || !descends(s, i, mi) {
                continue;
            }
            // The loop's own bundles are in its parent's count once.
            let outer_trips = enclosing_trips(s, i, mi);
            match l.trips {
                Some(t) => fixed += l.bundles as f64 * (t.saturating_sub(1)) as f64 * outer_trips,
                None if l.parent == Some(mi) => {
                    fixed -= l.bundles as f64;
                    variable += l.bundles as f64;
                }
                None => {}
            }
        }
    } else {
        fixed = s.bundles as f64;
    }
    let outside_bundles = s
        .bundles
        .saturating_sub(main.map_or(s.bundles, |m| m.bundles));
    // The grid's loop states the steps one core runs: a megacore program
    // whose loop runs every step (libtpu 0.0.51's v4 matmul: 34 trips for
    // 32 steps, where v5p's runs 18) is not split between the cores.
    let one_core_runs_all = main
        .and_then(|m| m.trips)
        .is_some_and(|t| t >= w.steps.max(1));
    let cores_used = if w.parallel_steps >= g.cores as u64 && !one_core_runs_all {
        g.cores as f64
    } else {
        1.0
    };
    let bw = g.hbm_bytes_per_s / cores_used;
    let ici_bw = g.ici_link_bytes_per_s / cores_used;
    let steps = w.steps.max(1) as f64;
    let once_s = outside_bundles as f64 / clock + (w.first_in_bytes + w.last_out_bytes) as f64 / bw;
    let static_compute = compute_seconds(g, &w.dots, w.vector_ops, w.transcendentals).0;
    // One step: (its time, compute, HBM copies, interconnect). Copies of
    // single-buffered blocks (`exposed_s`) add to the step rather than
    // overlap with it.
    let step_s = |scale: f64, copy_s: f64, exposed_s: f64, ici_s: f64, rounds: f64| {
        let compute_s = (fixed + variable * scale) / clock;
        (
            compute_s.max(copy_s).max(ici_s)
                + exposed_s
                + SCHEDULE_STEP_OVERHEAD_S * (1.0 + rounds),
            compute_s,
            copy_s + exposed_s,
            ici_s,
        )
    };
    let (total, compute_total, copy_total, ici_total) = if w.counted && main.is_some() {
        let (mut sum, mut comp, mut copy, mut ici) = (0.0, 0.0, 0.0, 0.0);
        for c in &w.classes {
            let cc = compute_seconds(g, &c.dots, c.vector_ops, c.transcendentals).0;
            let scale = if static_compute > 0.0 {
                cc / static_compute
            } else {
                1.0
            };
            let (t, cs, ps, is) = step_s(
                scale,
                c.bytes.saturating_sub(c.exposed) as f64 / bw,
                c.exposed as f64 / bw,
                c.remote_link_bytes as f64 / ici_bw,
                (c.dma_rounds + c.remote_rounds) as f64,
            );
            sum += c.count as f64 * t;
            comp += c.count as f64 * cs;
            copy += c.count as f64 * ps;
            ici += c.count as f64 * is;
        }
        let share = core_share(w.steps, cores_used);
        (sum * share, comp, copy, ici)
    } else if main.is_some() {
        let moved = w.bytes_in + w.bytes_out + w.dma_bytes;
        let copy_s = moved.saturating_sub(w.exposed_bytes) as f64 / steps / bw;
        let exposed_s = w.exposed_bytes as f64 / steps / bw;
        let ici_s = w.remote_link_bytes as f64 / steps / ici_bw;
        let (t, cs, ps, is) = step_s(
            1.0,
            copy_s,
            exposed_s,
            ici_s,
            w.remote_rounds as f64 / steps,
        );
        (
            (steps / cores_used).ceil() * t,
            cs * steps,
            ps * steps,
            is * steps,
        )
    } else {
        // No grid loop: the whole grid was unrolled into one straight
        // program, or has one step; its bundles, each loop's as often as
        // its stated trips, are the compute of every step (at least the
        // units' peak allows), which the copies and remote copies overlap.
        let copy_s = (w.bytes_in + w.bytes_out + w.dma_bytes) as f64 / bw;
        let ici_s = w.remote_link_bytes as f64 / ici_bw;
        // A loop whose trips the program does not state counts once, so
        // the units' peak bounds the compute from below (the roofline's
        // compute of the call).
        let (dots, vector, trans) = w.per_call();
        let peak = compute_seconds(g, &dots, vector, trans).0;
        let cs = (program_cycles(s) / clock).max(peak);
        (
            cs.max(copy_s).max(ici_s) + SCHEDULE_STEP_OVERHEAD_S * (steps + w.remote_rounds as f64),
            cs,
            copy_s,
            ici_s,
        )
    };
    // The software pipeline's fill and drain: a grid loop that states more
    // trips than the core's steps runs its body that many more times (at
    // most a few stages; more would not be the pipeline's).
    let fill_drain_s = match main {
        Some(m) => {
            let per_core = (steps / cores_used).ceil() as u64;
            let extra = m.trips.map_or(0, |t| t.saturating_sub(per_core).min(4));
            extra as f64 * m.bundles as f64 / clock
        }
        None => 0.0,
    };
    let seconds = total
        + if main.is_some() {
            once_s + fill_drain_s
        } else {
            0.0
        };
    let (dots, _, _) = w.per_call();
    let flops_s: f64 = dots
        .iter()
        .map(|d| d.count as f64 * 2.0 * d.m as f64 * d.n as f64 * d.k as f64 / g.mxu_rate(d.dtype))
        .sum();
    let ideal = flops_s
        .max(w.min_bytes as f64 / g.hbm_bytes_per_s)
        .max(g.ici_seconds(w.remote_link_bytes));
    let bound = Bound::of(compute_total, copy_total, ici_total);
    let (critical_unit, critical_share) = critical_unit(s);
    ScheduleEstimate {
        prediction: Prediction {
            seconds,
            roofline_fraction: if seconds > 0.0 { ideal / seconds } else { 0.0 },
            memory_bound: bound == Bound::Hbm,
            bound,
            steps: w.steps,
        },
        step_bundles,
        outside_bundles,
        critical_unit,
        critical_share,
    }
}

/// The cycles of the whole program run once: its bundles, and each loop's
/// bundles again for every further trip it states (times the stated trips
/// of the loops around it).
pub fn program_cycles(s: &KernelSchedule) -> f64 {
    let mut cycles = s.bundles as f64;
    for l in &s.loops {
        let Some(t) = l.trips else { continue };
        let mut around = 1.0;
        let mut p = l.parent;
        while let Some(x) = p {
            around *= s.loops[x].trips.unwrap_or(1) as f64;
            p = s.loops[x].parent;
        }
        cycles += l.bundles as f64 * t.saturating_sub(1) as f64 * around;
    }
    cycles
}

/// Whether loop `i` is nested (at any depth) in loop `ancestor`.
fn descends(s: &KernelSchedule, i: usize, ancestor: usize) -> bool {
    let mut p = s.loops[i].parent;
    while let Some(x) = p {
        if x == ancestor {
            return true;
        }
        p = s.loops[x].parent;
    }
    false
}

/// The product of the stated trips of the loops between `i` and `ancestor`
/// (1 for those not stated).
fn enclosing_trips(s: &KernelSchedule, i: usize, ancestor: usize) -> f64 {
    let mut t = 1.0;
    let mut p = s.loops[i].parent;
    while let Some(x) = p {
        if x == ancestor {
            break;
        }
        t *= s.loops[x].trips.unwrap_or(1) as f64;
        p = s.loops[x].parent;
    }
    t
}

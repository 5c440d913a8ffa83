//! The schedule model (`pkc tune --eval schedule`) and the device model per
//! generation, against values worked out by hand from the formulas of
//! docs/tuning.md and the published figures (libtpu's real schedules are
//! in tests/schedule.rs).

use pk_lang::ir::DType;
use pk_runtime::pjrt::TpuTarget;
use pk_runtime::schedule::{KernelSchedule, Loop, UnitUse};
use pk_runtime::tune::model::{predict, Bound, DeviceModel, Generation};
use pk_runtime::tune::schedule::{self, SCHEDULE_STEP_OVERHEAD_S};
use pk_runtime::tune::work::{Dot, StepClass, Work};

fn unit(name: &str, capacity: u32, slots: u64) -> UnitUse {
    UnitUse {
        unit: name.into(),
        capacity,
        slots,
        busy_bundles: slots.min(1),
    }
}

/// A program of 1,000 bundles: 100 before the grid's loop, the loop of 800
/// (bundles 100..900), and in it a loop of 200 bundles whose trips are
/// stated (`trips`); 100 after.
fn program(trips: Option<u64>) -> KernelSchedule {
    KernelSchedule {
        name: "k".into(),
        bundles: 1000,
        empty_bundles: 0,
        predicated_bundles: 0,
        loops: vec![
            Loop {
                start: 100,
                end: 899,
                bundles: 800,
                depth: 0,
                parent: None,
                trips: None,
                slots: vec![1600, 400],
            },
            Loop {
                start: 300,
                end: 499,
                bundles: 200,
                depth: 1,
                parent: Some(0),
                trips,
                slots: vec![800, 0],
            },
        ],
        units: vec![unit("MATMUL", 4, 1700), unit("VALU", 4, 500)],
        windows: vec![],
        source: None,
    }
}

fn work(steps: u64) -> Work {
    Work {
        steps,
        parallel_steps: steps,
        dots: vec![Dot {
            dtype: DType::BF16,
            m: 256,
            n: 256,
            k: 256,
            count: 1,
        }],
        bytes_in: steps * 100_000,
        first_in_bytes: 100_000,
        last_out_bytes: 50_000,
        min_bytes: steps * 100_000,
        ..Work::default()
    }
}

#[test]
fn clocks_follow_from_the_published_peaks() {
    // bf16 peak / (cores x 4 MXUs x mxu_dim^2 x 2 flops).
    let ghz = |t| Generation::of(t).clock_hz() / 1e9;
    assert!((ghz(TpuTarget::V4) - 275e12 / (2.0 * 4.0 * 128.0 * 128.0 * 2.0) / 1e9).abs() < 1e-9);
    assert!(
        (ghz(TpuTarget::V5e) - 1.503).abs() < 1e-3,
        "{}",
        ghz(TpuTarget::V5e)
    );
    assert!((ghz(TpuTarget::V5p) - 1.751).abs() < 1e-3);
    assert!((ghz(TpuTarget::V6e) - 1.751).abs() < 1e-3);
    assert!((ghz(TpuTarget::Tpu7x) - 2.200).abs() < 1e-3);
}

#[test]
fn a_step_is_its_loop_plus_the_further_trips_of_a_stated_inner_loop() {
    let g = Generation::of(TpuTarget::V5e);
    let clock = 197e12 / (4.0 * 128.0 * 128.0 * 2.0);
    // 8 steps of 800 + 200 x 3 = 1,400 cycles; 100,000 bytes a step at
    // 819 GB/s = 122 ns, less than 933 ns of compute.
    let e = schedule::predict(g, &program(Some(4)), &work(8));
    let step = 1400.0 / clock + SCHEDULE_STEP_OVERHEAD_S;
    let once = 200.0 / clock + 150_000.0 / 819e9;
    let expected = 8.0 * step + once;
    assert!(
        (e.prediction.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        e.prediction.seconds
    );
    assert!(!e.prediction.memory_bound);
    assert_eq!((e.step_bundles, e.outside_bundles), (800, 200));
    // MATMUL fills 1,600 of 4 x 800 slots in the loop; VALU 400 of 3,200.
    assert_eq!(e.critical_unit, "MATMUL");
    assert!((e.critical_share - 0.5).abs() < 1e-12);
}

#[test]
fn copies_bound_a_step_when_they_outlast_its_cycles() {
    let g = Generation::of(TpuTarget::V5e);
    let mut w = work(8);
    w.bytes_in = 8 * 2_000_000; // 2.44 us a step at 819 GB/s
    let e = schedule::predict(g, &program(Some(4)), &w);
    let step = 2_000_000.0 / 819e9 + SCHEDULE_STEP_OVERHEAD_S;
    let once = 200.0 / g.clock_hz() + 150_000.0 / 819e9;
    assert!((e.prediction.seconds - (8.0 * step + once)).abs() < 1e-12);
    assert!(e.prediction.memory_bound);
}

#[test]
fn an_inner_loop_without_stated_trips_takes_the_counted_work_of_each_step() {
    let g = Generation::of(TpuTarget::V5e);
    let clock = g.clock_hz();
    // Counted: 4 steps run the dot three times (three trips of the inner
    // loop), 4 steps not at all. The static step charged it once.
    let mut w = work(8);
    w.counted = true;
    let dot = w.dots[0];
    w.classes = vec![
        StepClass {
            count: 4,
            dots: vec![Dot { count: 3, ..dot }],
            bytes: 100_000,
            ..StepClass::default()
        },
        StepClass {
            count: 4,
            dots: vec![],
            bytes: 100_000,
            ..StepClass::default()
        },
    ];
    let e = schedule::predict(g, &program(None), &w);
    // The loop's 600 bundles outside the inner loop run every step; the
    // inner loop's 200 scale with the counted dots: x3, x0.
    let busy = (600.0 + 3.0 * 200.0) / clock + SCHEDULE_STEP_OVERHEAD_S;
    let idle = (600.0 / clock).max(100_000.0 / 819e9) + SCHEDULE_STEP_OVERHEAD_S;
    let once = 200.0 / clock + 150_000.0 / 819e9;
    let expected = 4.0 * busy + 4.0 * idle + once;
    assert!(
        (e.prediction.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        e.prediction.seconds
    );
}

#[test]
fn tpu7x_runs_a_kernel_on_one_core_of_its_device_and_megacores_split_parallel_steps() {
    assert_eq!(
        Generation::of(TpuTarget::Tpu7x).device,
        DeviceModel::CorePerDevice
    );
    assert_eq!(Generation::of(TpuTarget::V4).device, DeviceModel::Megacore);
    assert_eq!(Generation::of(TpuTarget::V5p).device, DeviceModel::Megacore);
    assert_eq!(
        Generation::of(TpuTarget::V5e).device,
        DeviceModel::SingleCore
    );
    assert_eq!(
        Generation::of(TpuTarget::V6e).device,
        DeviceModel::SingleCore
    );
    // 64 parallel steps of a 512 x 512 x 1024 bf16 dot, no copies.
    let w = Work {
        steps: 64,
        parallel_steps: 64,
        dots: vec![Dot {
            dtype: DType::BF16,
            m: 512,
            n: 512,
            k: 1024,
            count: 1,
        }],
        ..Work::default()
    };
    let flops = 2.0 * 512.0 * 512.0 * 1024.0;
    // TPU7x: one core of 2,307 / 2 TFLOP/s runs all 64 steps.
    let t7 = predict(Generation::of(TpuTarget::Tpu7x), &w).seconds;
    let e7 = 64.0 * (flops / (2307e12 / 2.0) + 0.35e-6);
    assert!((t7 - e7).abs() < 1e-12, "{t7} vs {e7}");
    // v5p: each of the 2 cores runs 32 steps at 459 / 2 TFLOP/s.
    let t5 = predict(Generation::of(TpuTarget::V5p), &w).seconds;
    let e5 = 32.0 * (flops / (459e12 / 2.0) + 0.35e-6);
    assert!((t5 - e5).abs() < 1e-12, "{t5} vs {e5}");
}

#[test]
fn a_megacore_program_whose_loop_runs_every_step_is_not_split() {
    let g = Generation::of(TpuTarget::V5p);
    let clock = g.clock_hz();
    let w = Work {
        bytes_in: 0,
        first_in_bytes: 0,
        last_out_bytes: 0,
        ..work(8)
    };
    // The loop states 10 trips for 8 steps: one core runs all 8, then the
    // 2 trips of fill and drain.
    let mut p = program(Some(1));
    p.loops[0].trips = Some(10);
    let e = schedule::predict(g, &p, &w);
    let step = 800.0 / clock + SCHEDULE_STEP_OVERHEAD_S;
    let expected = 8.0 * step + 200.0 / clock + 2.0 * 800.0 / clock;
    assert!(
        (e.prediction.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        e.prediction.seconds
    );
    // Stating 6 trips (4 steps a core): the steps are split.
    p.loops[0].trips = Some(6);
    let e = schedule::predict(g, &p, &w);
    let expected = 4.0 * step + 200.0 / clock + 2.0 * 800.0 / clock;
    assert!(
        (e.prediction.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        e.prediction.seconds
    );
}

#[test]
fn each_round_of_a_bodys_own_dma_pipeline_costs_a_steps_overhead() {
    let g = Generation::of(TpuTarget::V5e);
    let clock = g.clock_hz();
    // Counted: 2 steps whose body walks 3 key blocks each (3 rounds of
    // start-next, wait, compute), 2 steps with none; no inner-loop work
    // differs from the static step's.
    let mut w = work(4);
    w.counted = true;
    let dot = w.dots[0];
    w.classes = vec![
        StepClass {
            count: 2,
            dots: vec![dot],
            bytes: 100_000,
            dma_rounds: 3,
            ..StepClass::default()
        },
        StepClass {
            count: 2,
            dots: vec![dot],
            bytes: 100_000,
            ..StepClass::default()
        },
    ];
    let e = schedule::predict(g, &program(None), &w);
    // By hand: the loop's 800 bundles a step (the inner loop's 200 at the
    // static step's work), at least the copies, and the overhead once per
    // step plus once per round.
    let step = (800.0 / clock).max(100_000.0 / 819e9);
    let once = 200.0 / clock + 150_000.0 / 819e9;
    let expected = 2.0 * (step + 4.0 * 0.24e-6) + 2.0 * (step + 0.24e-6) + once;
    assert!(
        (e.prediction.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        e.prediction.seconds
    );
}

#[test]
fn the_kernels_program_is_not_one_of_xlas_layout_copies() {
    // libtpu 0.0.51 schedules, for ragged attention with 5 query heads, the
    // runtime's `TLP`, two of XLA's copies re-tiling operands (one of 1813
    // bundles) and the kernel, `name.1`, of 833 bundles with the grid's loop.
    let mut kernel = program(None);
    kernel.name = "name.1".into();
    let mut copy = program(None);
    copy.name = "copy.1".into();
    copy.bundles = 1813;
    copy.loops.clear();
    let mut tlp = copy.clone();
    tlp.name = "TLP".into();
    tlp.bundles = 5000;
    let mut plain = copy.clone();
    plain.name = "copy".into();
    let s = pk_runtime::schedule::Schedule {
        version: pk_runtime::schedule::SUMMARY_VERSION,
        kernels: vec![tlp, copy, plain, kernel],
    };
    assert_eq!(s.kernel().map(|k| k.name.as_str()), Some("name.1"));
}

#[test]
fn a_one_step_call_runs_its_own_loops_under_its_remote_copies() {
    // One grid step (a ring kernel: no grid loop); its program of 1,000
    // bundles has a loop of 800 whose trips are not stated (once) and, in
    // it, one of 200 stated at 4 trips: 1,000 + 200 x 3 = 1,600 cycles
    // (1.06 us on v5e). Remote copies: 3 rounds, 1 MiB on the busiest
    // link, 21.0 us at 50 GB/s, which the compute overlaps.
    let g = Generation::of(TpuTarget::V5e);
    let mut w = work(1);
    w.parallel_steps = 1;
    w.bytes_in = 0;
    w.bytes_out = 0;
    w.first_in_bytes = 0;
    w.last_out_bytes = 0;
    w.remote_bytes = 2 << 20;
    w.remote_link_bytes = 1 << 20;
    w.remote_rounds = 3;
    let e = schedule::predict(g, &program(Some(4)), &w);
    let ici = (1u64 << 20) as f64 / 50e9;
    let expected = ici + SCHEDULE_STEP_OVERHEAD_S * 4.0;
    assert!(
        (e.prediction.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        e.prediction.seconds
    );
    assert_eq!(e.prediction.bound, Bound::Interconnect);
    assert_eq!(e.step_bundles, 1000);
    // Without remote copies the program's cycles are the time.
    w.remote_bytes = 0;
    w.remote_link_bytes = 0;
    w.remote_rounds = 0;
    let e = schedule::predict(g, &program(Some(4)), &w);
    let expected = 1600.0 / g.clock_hz() + SCHEDULE_STEP_OVERHEAD_S;
    assert!(
        (e.prediction.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        e.prediction.seconds
    );
    assert_eq!(e.prediction.bound, Bound::Compute);
}

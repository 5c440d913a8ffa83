//! The tuner's parts against hand-derived values: the work counted from
//! kernels/matmul.pk's IR, the model's monotonicity where physics fixes the
//! order, the enumeration and sampling of spaces, and successive halving
//! (the cache's keys and files are in tune_cache.rs).

use pk_lang::ir::{DType, Kernel};
use pk_lang::{Options, Target};
use pk_runtime::pjrt::TpuTarget;
use pk_runtime::tune::model::{predict, Bound, Generation};
use pk_runtime::tune::search::successive_halving;
use pk_runtime::tune::space::{Axis, Space};
use pk_runtime::tune::work::{count, Dot, StepClass, Work};
use std::path::{Path, PathBuf};

fn matmul_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/matmul.pk")
}

/// matmul specialised with `params` for `target`, or `None` when the
/// checker rejects the configuration.
fn matmul(target: Target, params: &[(&str, i64)], dtype: &str) -> Option<Kernel> {
    let mut p: Vec<(String, String)> = params
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    p.push(("T".into(), dtype.into()));
    let opts = Options {
        target,
        params: p,
        specialise: true,
        ..Options::default()
    };
    pk_lang::Session::open(&matmul_path())
        .and_then(|s| s.check(&opts))
        .ok()
        .map(|m| m.kernels.into_iter().next().expect("one kernel"))
}

#[test]
fn candidates_are_evaluated_into_the_ir_sorted_and_whole() {
    let src = "\
kernel k<K = 1024, bm = 256 in [512, 128, 256, 128], bn = 512 in 128..=1024 step 384,
    bk = 512 in pow2(100, K), M = 64>(
    x: f32[1024, 1024] block [bm, bn] at (i, j),
) -> y: f32[1024, 1024] block [bm, bn] at (i, j)
grid (i in 1024 / bm parallel, j in 1024 / bn parallel)
where bk % bn == 0 || bn % bk == 0
{
    y[..] = x[..];
}
";
    let m = pk_lang::compile_source("k.pk", src, &Options::default()).expect("checks");
    let c: Vec<Option<Vec<i64>>> = m.kernels[0]
        .params
        .iter()
        .map(|p| p.candidates.clone())
        .collect();
    assert_eq!(
        c,
        vec![
            None,
            Some(vec![128, 256, 512]),
            Some(vec![128, 512, 896]),
            Some(vec![128, 256, 512, 1024]),
            None
        ]
    );
}

#[test]
fn matmul_work_is_counted_as_the_pipeline_moves_it() {
    // Grid (4, 4, 2), k fastest: a's block (i, k) and b's block (k, j)
    // change every step; c's block (i, j) every second step.
    let k = matmul(
        Target::V5e,
        &[
            ("M", 1024),
            ("N", 1024),
            ("K", 1024),
            ("bm", 256),
            ("bn", 256),
            ("bk", 512),
        ],
        "bf16",
    )
    .expect("the default configuration checks");
    let w = count(&k);
    assert_eq!(w.steps, 32);
    assert_eq!(w.parallel_steps, 16);
    assert_eq!(
        w.dots,
        vec![Dot {
            dtype: DType::BF16,
            m: 256,
            n: 256,
            k: 512,
            count: 1
        }]
    );
    let block_a = 256 * 512 * 2;
    let block_b = 512 * 256 * 2;
    let block_c = 256 * 256 * 4;
    assert_eq!(w.bytes_in, 32 * block_a + 32 * block_b);
    assert_eq!(w.bytes_out, 16 * block_c);
    assert_eq!(w.first_in_bytes, block_a + block_b);
    assert_eq!(w.last_out_bytes, block_c);
    assert_eq!(w.min_bytes, 1024 * 1024 * 2 * 2 + 1024 * 1024 * 4);
    assert_eq!(w.dma_bytes, 0);
}

#[test]
fn one_step_prediction_matches_the_hand_computed_roofline() {
    // One 1024^3 bf16 dot per step on v5e, one step: compute
    // 2 * 1024^3 / 197e12 s = 10.90 us; the step's copies, 8 MiB at
    // 819 GB/s = 10.24 us, overlap it, and the first input blocks (4 MiB)
    // and last output block (4 MiB) do not.
    let w = Work {
        steps: 1,
        parallel_steps: 1,
        dots: vec![Dot {
            dtype: DType::BF16,
            m: 1024,
            n: 1024,
            k: 1024,
            count: 1,
        }],
        bytes_in: 4 << 20,
        bytes_out: 4 << 20,
        first_in_bytes: 4 << 20,
        last_out_bytes: 4 << 20,
        min_bytes: 8 << 20,
        ..Work::default()
    };
    let g = Generation::of(TpuTarget::V5e);
    let compute = 2.0 * 1024f64.powi(3) / 197e12;
    let copy = (8u64 << 20) as f64 / 819e9;
    let expected = compute.max(copy) + 0.35e-6 + (8u64 << 20) as f64 / 819e9;
    let p = predict(g, &w);
    assert!(
        (p.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        p.seconds
    );
    assert!(
        !p.memory_bound,
        "10.90 us of compute outlasts 10.24 us of copies"
    );
}

#[test]
fn bigger_matmul_blocks_are_never_predicted_slower_than_128_cubed_on_v5e() {
    let shape = [("M", 8192), ("N", 8192), ("K", 8192)];
    let g = Generation::of(TpuTarget::V5e);
    let time = |bm: i64, bn: i64, bk: i64| {
        let mut p = shape.to_vec();
        p.extend([("bm", bm), ("bn", bn), ("bk", bk)]);
        matmul(Target::V5e, &p, "bf16").map(|k| predict(g, &count(&k)).seconds)
    };
    let base = time(128, 128, 128).expect("128^3 blocks check");
    let sizes = [128, 256, 512, 1024];
    let mut compared = 0;
    for bm in sizes {
        for bn in sizes {
            for bk in sizes {
                if let Some(t) = time(bm, bn, bk) {
                    assert!(
                        t <= base,
                        "bm={bm} bn={bn} bk={bk}: {t} s > {base} s for 128^3"
                    );
                    compared += 1;
                }
            }
        }
    }
    assert_eq!(
        compared, 64,
        "every configuration fits v5e's VMEM at 8192^3"
    );
}

#[test]
fn int8_is_predicted_faster_than_bf16_exactly_where_the_mxu_has_an_int8_path() {
    // The same matmul steps without copies, so that only the MXU's rate
    // for the operand dtype differs.
    let work = |dtype| Work {
        steps: 64,
        parallel_steps: 64,
        dots: vec![Dot {
            dtype,
            m: 512,
            n: 512,
            k: 1024,
            count: 1,
        }],
        ..Work::default()
    };
    for g in &pk_runtime::tune::model::GENERATIONS {
        let (i8t, bf) = (
            predict(g, &work(DType::I8)).seconds,
            predict(g, &work(DType::BF16)).seconds,
        );
        let int8_path = g.int8_ops > g.bf16_flops;
        assert_eq!(
            int8_path,
            matches!(g.target, TpuTarget::V5e | TpuTarget::V5p | TpuTarget::V6e),
            "{}: published int8 rates",
            g.target
        );
        if int8_path {
            assert!(
                i8t < bf,
                "{}: int8 {i8t} s is not faster than bf16 {bf} s",
                g.target
            );
        } else {
            assert_eq!(i8t, bf, "{}: no int8 path, no difference", g.target);
        }
    }
}

#[test]
fn spaces_enumerate_in_row_major_order_and_sample_deterministically() {
    let space = Space {
        axes: vec![
            Axis {
                name: "bm".into(),
                candidates: vec![128, 256, 512],
                default: Some(256),
            },
            Axis {
                name: "bk".into(),
                candidates: vec![128, 256],
                default: Some(128),
            },
        ],
    };
    assert_eq!(space.size(), 6);
    assert_eq!(space.config(0), vec![128, 128]);
    assert_eq!(space.config(1), vec![128, 256]);
    assert_eq!(space.config(5), vec![512, 256]);
    assert_eq!(space.choose(6, 0).len(), 6);
    let a = space.choose(3, 42);
    assert_eq!(
        a,
        space.choose(3, 42),
        "the same seed draws the same sample"
    );
    assert_eq!(a.len(), 3);
    assert_eq!(a[0], vec![256, 128], "the default is always in the sample");
    let mut dedup = a.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), 3, "no configuration twice");
    assert_eq!(space.describe(&[512, 256]), "bm=512 bk=256");
}

/// A space of `bm` and `bn` in {1, 2, 4, 8}, default (2, 2).
fn square_space() -> Space {
    let axis = |name: &str| Axis {
        name: name.into(),
        candidates: vec![1, 2, 4, 8],
        default: Some(2),
    };
    Space {
        axes: vec![axis("bm"), axis("bn")],
    }
}

#[test]
fn constraints_filter_the_space_before_a_sample_is_drawn() {
    let space = square_space();
    // bm * bn <= 8 holds for 10 of the 16, counted by hand: bm = 1 with
    // any bn (4), bm = 2 with 1, 2, 4 (3), bm = 4 with 1, 2 (2), bm = 8
    // with 1 (1).
    let small = |cs: &[Vec<i64>]| cs.iter().map(|c| c[0] * c[1] <= 8).collect::<Vec<_>>();
    let want: Vec<Vec<i64>> = vec![
        vec![1, 1],
        vec![1, 2],
        vec![1, 4],
        vec![1, 8],
        vec![2, 1],
        vec![2, 2],
        vec![2, 4],
        vec![4, 1],
        vec![4, 2],
        vec![8, 1],
    ];
    // A budget at or over the legal count: every legal one, in order.
    assert_eq!(space.choose_legal(10, 7, small), want);
    assert_eq!(space.choose_legal(16, 7, small), want);
    // A smaller budget: that many legal ones, distinct, the default first,
    // for every seed (unfiltered, a sample of 4 from 16 with 6 illegal
    // ones would often hold fewer than 4 legal ones).
    for seed in 0..200 {
        let got = space.choose_legal(4, seed, small);
        assert_eq!(got.len(), 4, "seed {seed}: {got:?}");
        assert_eq!(got[0], vec![2, 2], "seed {seed}: the default first");
        for c in &got {
            assert!(want.contains(c), "seed {seed}: {c:?} is illegal");
        }
        let mut d = got.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), 4, "seed {seed}: {got:?}");
    }
    // An illegal default is not drawn; the diagonal bm == bn holds 4.
    let diagonal_not_2 = |cs: &[Vec<i64>]| {
        cs.iter()
            .map(|c| c[0] == c[1] && c[0] != 2)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        space.choose_legal(8, 1, diagonal_not_2),
        vec![vec![1, 1], vec![4, 4], vec![8, 8]]
    );
    let two = space.choose_legal(2, 1, diagonal_not_2);
    assert_eq!(two.len(), 2);
    assert!(two.iter().all(|c| c[0] == c[1] && c[0] != 2), "{two:?}");
    // Nothing legal: nothing to try.
    assert!(space
        .choose_legal(4, 0, |cs| vec![false; cs.len()])
        .is_empty());
    // Everything legal: the sample `choose` draws.
    for seed in 0..20 {
        assert_eq!(
            space.choose_legal(5, seed, |cs| vec![true; cs.len()]),
            space.choose(5, seed)
        );
    }
}

#[test]
fn constraints_filter_a_space_too_large_to_enumerate_by_drawing() {
    // 4096 * 4096 configurations, over the enumeration limit; a quarter
    // are legal (both values even), and the default (2, 2) is one.
    let axis = |name: &str| Axis {
        name: name.into(),
        candidates: (1..=4096).collect(),
        default: Some(2),
    };
    let space = Space {
        axes: vec![axis("a"), axis("b")],
    };
    assert!(space.size() > pk_runtime::tune::space::ENUMERATED);
    let even = |cs: &[Vec<i64>]| {
        cs.iter()
            .map(|c| c[0] % 2 == 0 && c[1] % 2 == 0)
            .collect::<Vec<_>>()
    };
    let got = space.choose_legal(50, 3, even);
    assert_eq!(got.len(), 50);
    assert_eq!(got[0], vec![2, 2]);
    assert!(
        got.iter().all(|c| c[0] % 2 == 0 && c[1] % 2 == 0),
        "{got:?}"
    );
    let mut d = got.clone();
    d.sort();
    d.dedup();
    assert_eq!(d.len(), 50);
    assert_eq!(
        got,
        space.choose_legal(50, 3, even),
        "the same seed, the same sample"
    );
}

#[test]
fn successive_halving_keeps_the_true_best_under_noise_and_spends_less() {
    // Configuration i takes (1 + i/10) s; a single timing is off by up to
    // 5% (a fixed pattern), a median over more repeats by less.
    let mut calls = 0u32;
    let order = successive_halving(16, false, 8, |i, repeats| {
        calls += repeats;
        let noise = [0.05, -0.04, 0.03, -0.05][i % 4] / repeats as f64;
        Ok::<f64, ()>((1.0 + i as f64 / 10.0) * (1.0 + noise))
    })
    .ranked;
    assert_eq!(order[0].0, 0);
    assert_eq!(order.len(), 16, "every configuration keeps its last time");
    // 16 x 1 + 8 x 2 + 4 x 4 + 2 x 8 repeats, against 16 x 8 for timing
    // everything at full effort.
    assert_eq!(calls, 64);
    let failed = successive_halving(3, true, 8, |i, _| {
        if i == 0 {
            Err("timed out")
        } else {
            Ok(i as f64)
        }
    });
    assert_eq!(
        failed.ranked,
        vec![(1, 1.0), (2, 2.0)],
        "failures are not ranked"
    );
    assert_eq!(failed.failed, vec![(0, "timed out")], "but kept with why");
    // A configuration that fails in a later round is failed, not ranked on
    // its earlier time.
    let later = successive_halving(4, false, 8, |i, repeats| {
        if i == 1 && repeats > 1 {
            Err("timed out")
        } else {
            Ok(i as f64)
        }
    });
    assert_eq!(later.failed, vec![(1, "timed out")]);
    assert_eq!(
        later.ranked.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![0, 2, 3]
    );
}

#[test]
fn counted_steps_are_predicted_class_by_class() {
    // Two steps on v5e (one core): one runs a 1024^3 bf16 dot and copies
    // 8 MiB, the other (a sequence with nothing to do) neither. By hand:
    // step 1 takes max(2 * 1024^3 / 197e12, 8 MiB / 819 GB/s) = 10.90 us
    // plus the 0.35 us overhead, step 2 the overhead alone, and the first
    // and last blocks (4 + 4 MiB) are not overlapped.
    let w = Work {
        counted: true,
        steps: 2,
        parallel_steps: 2,
        classes: vec![
            StepClass {
                count: 1,
                dots: vec![Dot {
                    dtype: DType::BF16,
                    m: 1024,
                    n: 1024,
                    k: 1024,
                    count: 1,
                }],
                bytes: 8 << 20,
                ..StepClass::default()
            },
            StepClass {
                count: 1,
                ..StepClass::default()
            },
        ],
        first_in_bytes: 4 << 20,
        last_out_bytes: 4 << 20,
        min_bytes: 8 << 20,
        ..Work::default()
    };
    let g = Generation::of(TpuTarget::V5e);
    let compute = 2.0 * 1024f64.powi(3) / 197e12;
    let copy = (8u64 << 20) as f64 / 819e9;
    let expected = compute.max(copy) + 0.35e-6 + 0.35e-6 + (8u64 << 20) as f64 / 819e9;
    let p = predict(g, &w);
    assert!(
        (p.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        p.seconds
    );
    assert!(!p.memory_bound);
}

#[test]
fn each_round_of_a_bodys_own_dma_pipeline_costs_a_steps_overhead() {
    // One counted step on v5e that walks 5 key blocks of its own double
    // buffer (copies 1 MiB, no compute): by hand, the copies, the step's
    // 0.35 us and 5 more of it, and no blocks in or out.
    let w = Work {
        counted: true,
        steps: 1,
        parallel_steps: 1,
        classes: vec![StepClass {
            count: 1,
            bytes: 1 << 20,
            dma_rounds: 5,
            ..StepClass::default()
        }],
        min_bytes: 1 << 20,
        ..Work::default()
    };
    let g = Generation::of(TpuTarget::V5e);
    let expected = (1u64 << 20) as f64 / 819e9 + 6.0 * 0.35e-6;
    let p = predict(g, &w);
    assert!(
        (p.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        p.seconds
    );
    assert!(p.memory_bound);
}

/// `y = x @ w`: 4 row blocks of 128 x 512 bf16 stream through two buffers
/// while the weight's block, `[512, 256]` bf16 at `(0, j)`, changes with the
/// outer axis `j` (2 column blocks) and has `nw` buffers.
fn resident_weight(nw: i64) -> Kernel {
    let src = "\
kernel k<nw = 2>(
    x: bf16[512, 512] block [128, 512] at (i, 0),
    w: bf16[512, 512] block [512, 256] at (0, j) buffered(nw),
) -> y: f32[512, 512] block [128, 256] at (i, j)
grid (j in 2 arbitrary, i in 4 arbitrary)
{
    y[..] = dot(x[..], w[..]);
}
";
    let opts = Options {
        target: Target::V5e,
        params: vec![("nw".into(), nw.to_string())],
        specialise: true,
        ..Options::default()
    };
    let m = pk_lang::compile_source("k.pk", src, &opts).expect("checks");
    m.kernels.into_iter().next().expect("one kernel")
}

/// kernels/all_gather_matmul.pk specialised with `params` (bf16, a ring
/// of 4 devices by default).
fn all_gather_matmul(params: &[(&str, i64)]) -> Kernel {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/all_gather_matmul.pk");
    let opts = Options {
        params: params
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        specialise: true,
        ..Options::default()
    };
    let m = pk_lang::Session::open(&path)
        .and_then(|s| s.check(&opts))
        .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
    m.kernels.into_iter().next().expect("one kernel")
}

#[test]
fn a_single_buffered_blocks_later_copies_are_not_overlapped() {
    // The weight's block (512 x 256 bf16 = 256 KiB) is fetched at steps 0
    // and 4. With one buffer the second fetch waits for step 3 to end and
    // step 4 waits for it: 256 KiB of copy time added to the call, which
    // two buffers hide behind compute. The first fetch is the fill either
    // way.
    let (one, two) = (count(&resident_weight(1)), count(&resident_weight(2)));
    let block = 512 * 256 * 2;
    assert_eq!(one.exposed_bytes, block);
    assert_eq!(two.exposed_bytes, 0);
    assert_eq!(one.bytes_in, two.bytes_in);
    assert_eq!(one.bytes_in, 8 * 128 * 512 * 2 + 2 * block);
    let g = Generation::of(TpuTarget::V5e);
    // Static model: 8 steps; the exposed bytes are spread over them and
    // added to each, and the overlapped copies shrink by as much. Each
    // step's compute (a 128 x 256 x 512 bf16 dot, 0.17 us) is below its
    // copies (x: 128 KiB, y: 128 KiB, w: 64 KiB on average: 0.40 us), so
    // the exposed part moves from under compute to after it: the call
    // takes exactly the same time when copies dominate.
    let (p1, p2) = (predict(g, &one).seconds, predict(g, &two).seconds);
    let bw = 819e9;
    let steps = 8.0;
    let moved = (two.bytes_in + two.bytes_out) as f64;
    let compute = 2.0 * 128.0 * 256.0 * 512.0 / 197e12;
    let fill = (two.first_in_bytes + two.last_out_bytes) as f64 / bw;
    let exp2 = steps * ((moved / steps / bw).max(compute) + 0.35e-6) + fill;
    let exp1 = steps
        * (((moved - block as f64) / steps / bw).max(compute)
            + block as f64 / steps / bw
            + 0.35e-6)
        + fill;
    assert!((p2 - exp2).abs() < 1e-12, "{p2} vs {exp2}");
    assert!((p1 - exp1).abs() < 1e-12, "{p1} vs {exp1}");
    // Compute-bound steps: one buffer is slower by the exposed copy.
    let heavy = |mut w: Work| {
        w.dots[0].count = 64;
        predict(g, &w).seconds
    };
    let exposed = block as f64 / bw;
    let d = heavy(one.clone()) - heavy(two.clone());
    assert!((d - exposed).abs() < 1e-12, "{d} vs {exposed}");
}

#[test]
fn remote_copies_are_charged_to_the_busiest_link_of_each_generation() {
    // One step that sends 1 MiB to each of two neighbours (4 copies of
    // 512 KiB, so 2 rounds) around a 128^3 bf16 dot. By hand: the link to
    // either neighbour carries 1 MiB, at the published bidirectional ICI
    // bandwidth per chip over its links and two directions (v5e 400 GB/s
    // over 4 links: 50 GB/s; v6e 800 / 4: 100 GB/s; v5p 1,200 / 6: 100
    // GB/s; TPU7x 1,200 / 6, halved for one of its two devices: 50 GB/s;
    // v4 from its pod's 24 TB/s bisection over the 512 links a bisection
    // of a 16^3 torus cuts: 46.875 GB/s); the step's overhead once and
    // once more per round of copies.
    let w = Work {
        steps: 1,
        parallel_steps: 1,
        dots: vec![Dot {
            dtype: DType::BF16,
            m: 128,
            n: 128,
            k: 128,
            count: 1,
        }],
        remote_bytes: 2 << 20,
        remote_link_bytes: 1 << 20,
        remote_rounds: 2,
        ..Work::default()
    };
    for (t, link) in [
        (TpuTarget::V4, 46.875e9),
        (TpuTarget::V5e, 50e9),
        (TpuTarget::V5p, 100e9),
        (TpuTarget::V6e, 100e9),
        (TpuTarget::Tpu7x, 50e9),
    ] {
        let g = Generation::of(t);
        let ici = (1u64 << 20) as f64 / link;
        let expected = ici + 3.0 * 0.35e-6;
        let p = predict(g, &w);
        assert!(
            (p.seconds - expected).abs() < 1e-12,
            "{t:?}: {} vs {expected}",
            p.seconds
        );
        assert_eq!(p.bound, Bound::Interconnect, "{t:?}");
        assert!(!p.memory_bound, "{t:?}");
        // At the roofline: the link's time is the least any schedule takes.
        assert!((p.roofline_fraction - ici / expected).abs() < 1e-9, "{t:?}");
    }
}

#[test]
fn the_collective_matmul_sends_half_a_shard_per_link_per_ring_step() {
    // Ring of 4, shards of x [256, 512] bf16: 3 steps, each sending the
    // upper half [128, 512] right and the lower half left (128 KiB each).
    let k = all_gather_matmul(&[]);
    let w = count(&k);
    let half = 128 * 512 * 2;
    assert_eq!(w.remote_bytes, 3 * 2 * half);
    assert_eq!(w.remote_link_bytes, 3 * half);
    assert_eq!(w.remote_rounds, 3);
    // Counting mode (no arrays to read) walks the same copies.
    let c = pk_runtime::tune::count::count(&k, &Default::default()).expect("counts");
    assert_eq!(c.remote_bytes, w.remote_bytes);
    assert_eq!(c.remote_link_bytes, w.remote_link_bytes);
    assert_eq!(c.remote_rounds, 3);
    assert_eq!(c.classes.len(), 1);
    assert_eq!(c.classes[0].remote_link_bytes, 3 * half);
}

#[test]
fn the_collective_matmul_is_interconnect_or_compute_bound_by_shape_and_generation() {
    let g5 = Generation::of(TpuTarget::V5e);
    let g6 = Generation::of(TpuTarget::V6e);
    // The default shapes on v5e: 4 products [256, 512] x [512, 512]
    // (2.72 us at 197 TFLOP/s) against 3 x 128 KiB on a 50 GB/s link
    // (7.86 us), plus the step's overhead and 3 rounds of copies.
    let p = predict(g5, &count(&all_gather_matmul(&[])));
    let expected = 3.0 * 131_072.0 / 50e9 + 4.0 * 0.35e-6;
    assert!(
        (p.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        p.seconds
    );
    assert_eq!(p.bound, Bound::Interconnect);
    // Shards [512, 2048] and w [2048, 2048]: 4 products of 4.29 GFLOP
    // (87.2 us on v5e) outlast 3 MiB on the link (62.9 us) ...
    let shape = [("M", 512), ("K", 2048), ("N", 2048)];
    let flops = 4.0 * 2.0 * 512.0 * 2048.0 * 2048.0;
    let link = 3.0 * 256.0 * 2048.0 * 2.0;
    let p = predict(g5, &count(&all_gather_matmul(&shape)));
    assert_eq!(p.bound, Bound::Compute);
    let expected = flops / 197e12 + 4.0 * 0.35e-6;
    assert!(
        (p.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        p.seconds
    );
    // ... while v6e's MXUs (18.7 us) wait for its 100 GB/s link (31.5 us).
    let best = predict(g6, &count(&all_gather_matmul(&shape)));
    assert_eq!(best.bound, Bound::Interconnect);
    let expected = link / 100e9 + 4.0 * 0.35e-6;
    assert!(
        (best.seconds - expected).abs() < 1e-12,
        "{} vs {expected}",
        best.seconds
    );
    // Column blocks of 128 use half of v6e's 256-wide MXU: 37.4 us of
    // compute, now the bound, and slower than every block of 256 or more;
    // on v5e's 128-wide MXU the same block costs nothing more.
    let narrow = [("M", 512), ("K", 2048), ("N", 2048), ("bn", 128)];
    let p = predict(g6, &count(&all_gather_matmul(&narrow)));
    assert_eq!(p.bound, Bound::Compute);
    assert!(
        p.seconds > 1.15 * best.seconds,
        "{} vs {}",
        p.seconds,
        best.seconds
    );
    let p5 = predict(g5, &count(&all_gather_matmul(&narrow)));
    let wide5 = predict(g5, &count(&all_gather_matmul(&shape)));
    assert!(
        p5.seconds <= wide5.seconds * 1.01,
        "{} vs {}",
        p5.seconds,
        wide5.seconds
    );
}

//! Pallas grid semantics on the CPU reference, one small kernel each
//! (tests/cpu/*.pk), with results derived by hand in the test.

mod cpu_support;

use cpu_support::{assert_close, build, threads};
use pk_lang::ir::DType;
use pk_runtime::cpu::{DmaMode, HostArray, RunOptions};

fn ints_f32(shape: &[usize], f: impl Fn(usize) -> f32) -> (Vec<f32>, HostArray) {
    let n = shape.iter().product();
    let v: Vec<f32> = (0..n).map(f).collect();
    let a = HostArray::from_f32(shape, &v);
    (v, a)
}

/// `2 * identity` of size n: `a @ b = 2a`, exact in f32.
fn twice_identity(n: usize) -> HostArray {
    ints_f32(&[n, n], |i| if i / n == i % n { 2.0 } else { 0.0 }).1
}

/// Runs a kernel of `a: f32[8, 128]` and `b = 2 * identity(128)` (so that
/// `a @ b = 2a` exactly) on one thread: `a`, and the two outputs.
fn run_on_twice_identity(file: &str) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let k = build(file, &[]);
    let (a, aa) = ints_f32(&[8, 128], |i| (i % 5) as f32);
    let out = k
        .run(vec![aa, twice_identity(128)], &threads(1))
        .expect("runs");
    (a, out[0].to_f32(), out[1].to_f32())
}

/// Revisits of an output block over an `arbitrary` axis accumulate.
#[test]
fn revisit_accumulates_over_arbitrary_axis() {
    let k = build("tests/cpu/revisit_accumulate.pk", &[]);
    let (x, xa) = ints_f32(&[16, 512], |i| ((i * 7) % 11) as f32 - 5.0);
    let s = k.run(vec![xa], &threads(2)).expect("runs")[0].to_f32();
    for r in 0..16 {
        let want: f32 = x[r * 512..(r + 1) * 512].iter().sum();
        for c in 0..128 {
            assert_eq!(s[r * 128 + c], want, "row {r}");
        }
    }
}

/// Scratch keeps its contents from one grid step to the next.
#[test]
fn scratch_persists_across_steps() {
    let k = build("tests/cpu/scratch_persist.pk", &[]);
    let (x, xa) = ints_f32(&[32, 128], |i| (i % 13) as f32);
    let y = k.run(vec![xa], &threads(1)).expect("runs")[0].to_f32();
    for i in 0..8 * 128 {
        let mut acc = 0.0;
        for blk in 0..4 {
            acc += x[blk * 1024 + i];
            assert_eq!(y[blk * 1024 + i], acc, "block {blk} element {i}");
        }
    }
}

/// A scalar-prefetch operand chooses the input block of each step.
#[test]
fn scalar_prefetch_drives_the_index_map() {
    let k = build("tests/cpu/prefetch_gather.pk", &[]);
    let ids = [5i64, 0, 7, 5];
    let (table, ta) = ints_f32(&[64, 128], |i| i as f32);
    let inputs = vec![HostArray::from_ints(DType::I32, &[4], &ids), ta];
    let y = k.run(inputs, &threads(1)).expect("runs")[0].to_f32();
    for (g, &id) in ids.iter().enumerate() {
        for e in 0..8 * 128 {
            let want = table[id as usize * 1024 + e] * id as f32;
            assert_eq!(y[g * 1024 + e], want, "step {g}");
        }
    }
}

/// Runs `file` on `x` with copies completing at start and at wait; each
/// output element must be `want(x[i])`. Returns the two outputs' bytes.
fn under_both_dma_modes(
    file: &str,
    x: (Vec<f32>, HostArray),
    want: impl Fn(f32) -> f32,
) -> Vec<Vec<u8>> {
    let k = build(file, &[]);
    let (x, xa) = x;
    let mut results = Vec::new();
    for dma in [DmaMode::AtStart, DmaMode::AtWait] {
        let opts = RunOptions {
            dma,
            ..RunOptions::default()
        };
        let y = k.run(vec![xa.clone()], &opts).expect("runs").remove(0);
        for (i, v) in y.to_f32().iter().enumerate() {
            assert_eq!(*v, want(x[i]), "{dma:?} element {i}");
        }
        results.push(y.data);
    }
    results
}

/// Async copies from and to ANY (HBM) with DMA semaphores; the result is
/// the same whether copies complete at start or at wait.
#[test]
fn async_copies_with_semaphores() {
    let x = ints_f32(&[1024, 128], |i| (i % 1000) as f32 * 0.5);
    let results = under_both_dma_modes("tests/cpu/dma_double_buffer.pk", x, |v| 2.0 * v);
    assert_eq!(results[0], results[1]);
}

/// A wait names any windows of the copy's byte count (the TPU's DMA wait
/// counts bytes on its semaphore): the data lands where each copy was
/// started, whether copies complete at start or at wait.
#[test]
fn copy_wait_counts_bytes_not_windows() {
    let x = ints_f32(&[1024, 128], |i| (i % 997) as f32);
    under_both_dma_modes("tests/cpu/dma_wait_bytes.pk", x, |v| v + 1.0);
}

/// Parallel units on 1 and 2 threads give identical bits.
#[test]
fn parallel_units_bit_identical_across_threads() {
    let k = build("tests/cpu/parallel_scratch.pk", &[]);
    let (_, xa) = ints_f32(&[64, 512], |i| ((i * 31) % 97) as f32 / 97.0 - 0.5);
    let one = k.run(vec![xa.clone()], &threads(1)).expect("runs");
    let two = k.run(vec![xa.clone()], &threads(2)).expect("runs");
    let eight = k.run(vec![xa], &threads(8)).expect("runs");
    assert_eq!(one[0].data, two[0].data);
    assert_eq!(one[0].data, eight[0].data);
    assert!(one[0].to_f32().iter().all(|v| v.is_finite()));
    let bf = build(
        "kernels/matmul.pk",
        &[
            ("M", "64"),
            ("N", "256"),
            ("K", "256"),
            ("bm", "16"),
            ("bn", "128"),
            ("bk", "128"),
        ],
    );
    let a = HostArray::bf16_from_f32(
        &[64, 256],
        &(0..64 * 256)
            .map(|i| (i % 17) as f32 / 17.0)
            .collect::<Vec<_>>(),
    );
    let b = HostArray::bf16_from_f32(
        &[256, 256],
        &(0..256 * 256)
            .map(|i| (i % 19) as f32 / 19.0 - 0.5)
            .collect::<Vec<_>>(),
    );
    let r1 = bf
        .run(vec![a.clone(), b.clone()], &threads(1))
        .expect("runs");
    let r2 = bf.run(vec![a, b], &threads(2)).expect("runs");
    assert_eq!(r1[0].data, r2[0].data);
}

/// `while` with a carried scalar and `for` with a carried tile.
#[test]
fn loops_carry_values() {
    let k = build("tests/cpu/loops.pk", &[]);
    let x: Vec<i64> = (0..1024).map(|i| i * 3 - 500).collect();
    let y = k
        .run(
            vec![HostArray::from_ints(DType::I32, &[8, 128], &x)],
            &threads(1),
        )
        .expect("runs")[0]
        .to_f64();
    // The last step (g = 3): k goes 3, 7, 15, 31, 63, 127; t = 0, 4, ..., 124.
    let t = (0..127).step_by(4).fold(0i64, |a, t| a ^ t);
    for (i, v) in y.iter().enumerate() {
        assert_eq!(*v as i64, x[i] ^ t, "element {i}");
    }
}

/// `acc[..] += dot(a, b)` accumulates inside the MXU call, and an update
/// that `acc` is rewritten in the middle of keeps program order.
#[test]
fn dot_accumulates_in_place_and_keeps_program_order() {
    // The two plain updates accumulate in the GEMM; the interrupted one
    // does not.
    let w = cpu_support::lower("tests/cpu/dot_accumulate.pk");
    let fused: Vec<bool> = w.manifest.dots.iter().map(|d| d.accumulate).collect();
    assert_eq!(fused, [true, true, false]);

    let (a, y, z) = run_on_twice_identity("tests/cpu/dot_accumulate.pk");
    for i in 0..8 * 128 {
        assert_eq!(y[i], 1.0 + 4.0 * a[i], "y[{i}]");
        assert_eq!(z[i], 3.0 + 2.0 * a[i], "z[{i}]");
    }
}

/// A unit starts from a fresh copy of an input block the kernel rewrote,
/// even when the previous unit on the same instance had the same block;
/// an input block nothing writes carries over (same results either way).
#[test]
fn rewritten_input_blocks_are_copied_again() {
    let k = build("tests/cpu/input_rewrite.pk", &[]);
    let (x, xa) = ints_f32(&[8, 128], |i| (i % 7) as f32);
    let (w, wa) = ints_f32(&[8, 128], |i| (i % 5) as f32 - 2.0);
    for t in [1, 2] {
        let out = k
            .run(vec![xa.clone(), wa.clone()], &threads(t))
            .expect("runs");
        let (y, z) = (out[0].to_f32(), out[1].to_f32());
        for i in 0..32 * 128 {
            assert_eq!(y[i], x[i % 1024] + 1.0, "y[{i}] on {t} threads");
            assert_eq!(z[i], 2.0 * w[i % 1024], "z[{i}] on {t} threads");
        }
    }
    let refs = &k.manifest().refs;
    let written: Vec<bool> = refs.iter().map(|r| r.written).collect();
    assert_eq!(written, [true, false, true, true]);
}

/// `y[..] = dot(a, b)` goes straight into `y`; with `o` read between the
/// product and its store, the old `o` is what that read sees.
#[test]
fn dot_stores_in_place_and_keeps_program_order() {
    // The first product is written at `y`'s address; the second, whose
    // store `o` is read before, into a temporary (not at `o`).
    let w = cpu_support::lower("tests/cpu/dot_store.pk");
    let wat = pk_lowering::wasm::to_wat(&w.bytes).expect("prints");
    let outs: Vec<Option<u32>> = wat
        .lines()
        .zip(wat.lines().skip(1))
        .filter(|(_, next)| next.trim() == "call $dot")
        .map(|(arg, _)| arg.trim().strip_prefix("i32.const ")?.parse().ok())
        .collect();
    let at = |name: &str| w.manifest.refs.iter().find(|r| r.name == name)?.offset;
    assert_eq!(outs.len(), 2);
    assert_eq!(outs[0], at("y"));
    assert_ne!(outs[1], at("o"));

    let (a, y, z) = run_on_twice_identity("tests/cpu/dot_store.pk");
    for i in 0..8 * 128 {
        assert_eq!(y[i], 2.0 * a[i], "y[{i}]");
        assert_eq!(z[i], 2.0 * a[i] + 1.0, "z[{i}]");
    }
}

/// Row reductions with partial accumulator groups and partial vectors:
/// small integers, so every order of summation gives the exact sums.
#[test]
fn row_reductions_with_tails() {
    let k = build("tests/cpu/reduce_tails.pk", &[]);
    let (a, aa) = ints_f32(&[3, 36], |i| ((i * 7) % 23) as f32 - 11.0);
    let (b, ba) = ints_f32(&[2, 7], |i| ((i * 5) % 13) as f32 - 6.0);
    let c: Vec<i64> = (0..200).map(|i| (i * 37) % 101 - 50).collect();
    let ca = HostArray::from_ints(DType::I32, &[2, 100], &c);
    let out = k.run(vec![aa, ba, ca], &threads(1)).expect("runs");
    let rows = |v: &[f32], n: usize| -> Vec<Vec<f32>> { v.chunks(n).map(|r| r.to_vec()).collect() };
    let fold = |r: &[f32], f: fn(f32, f32) -> f32, init: f32| r.iter().copied().fold(init, f);
    let want_sa: Vec<f32> = rows(&a, 36).iter().map(|r| r.iter().sum()).collect();
    let want_ma: Vec<f32> = rows(&a, 36)
        .iter()
        .map(|r| fold(r, f32::max, f32::NEG_INFINITY))
        .collect();
    let want_sb: Vec<f32> = rows(&b, 7).iter().map(|r| r.iter().sum()).collect();
    let want_nb: Vec<f32> = rows(&b, 7)
        .iter()
        .map(|r| fold(r, f32::min, f32::INFINITY))
        .collect();
    assert_eq!(out[0].to_f32(), want_sa);
    assert_eq!(out[1].to_f32(), want_ma);
    assert_eq!(out[2].to_f32(), want_sb);
    assert_eq!(out[3].to_f32(), want_nb);
    let sc: Vec<f64> = c
        .chunks(100)
        .map(|r| r.iter().sum::<i64>() as f64)
        .collect();
    let mc: Vec<f64> = c
        .chunks(100)
        .map(|r| *r.iter().max().unwrap() as f64)
        .collect();
    assert_eq!(out[4].to_f64(), sc);
    assert_eq!(out[5].to_f64(), mc);
}

/// What the lowering tells the runtime about matmul's refs: inputs are
/// never written; with one block over K the product goes straight to `c`
/// (filled first, no poison needed); over several, `c` accumulates in place.
#[test]
fn matmul_ref_facts() {
    let facts = |bk: &str| {
        let k = build(
            "kernels/matmul.pk",
            &[
                ("M", "64"),
                ("N", "128"),
                ("K", "256"),
                ("bm", "32"),
                ("bn", "128"),
                ("bk", bk),
            ],
        );
        k.manifest()
            .refs
            .iter()
            .map(|r| (r.name.clone(), r.written, r.filled_first))
            .collect::<Vec<_>>()
    };
    let f = |n: &str, w, ff| (n.to_string(), w, ff);
    assert_eq!(
        facts("256"),
        [
            f("a", false, false),
            f("b", false, false),
            f("c", true, true),
        ]
    );
    assert_eq!(
        facts("128"),
        [
            f("a", false, false),
            f("b", false, false),
            f("c", true, false),
        ]
    );
    // bf16 operands are read by the MXU where they are stored, and at the
    // default blocks (bk < K) the product is added into `c` by the GEMM.
    let w = cpu_support::lower("kernels/matmul.pk");
    assert!(w.manifest.dots.iter().all(|d| d.lhs_bf16 && d.rhs_bf16));
    let acc: Vec<bool> = w.manifest.dots.iter().map(|d| d.accumulate).collect();
    assert_eq!(acc, [true]);
}

/// Operands that only the MXU reads are read where they lie in the input
/// arrays: full blocks at row and column offsets, transposed, bf16; the
/// partial last block is copied in (its padding rows never reach `c`).
/// Small integers, so the products are exact.
#[test]
fn mxu_reads_full_blocks_from_the_arrays() {
    let k = build("tests/cpu/dot_from_array.pk", &[]);
    let only: Vec<(String, bool)> = k
        .manifest()
        .refs
        .iter()
        .map(|r| (r.name.clone(), r.mxu_only))
        .collect();
    let f = |n: &str, v| (n.to_string(), v);
    assert_eq!(
        only,
        [
            f("a", true),
            f("b", true),
            f("ah", true),
            f("bt", true),
            f("c", false),
            f("d", false)
        ]
    );

    let (a, aa) = ints_f32(&[40, 128], |i| ((i * 7) % 9) as f32 - 4.0);
    let (b, ba) = ints_f32(&[128, 256], |i| ((i * 5) % 7) as f32 - 3.0);
    let bt: Vec<f32> = (0..256 * 128)
        .map(|i| ((i * 3) % 11) as f32 - 5.0)
        .collect();
    let aha = HostArray::bf16_from_f32(&[40, 128], &a);
    let bta = HostArray::bf16_from_f32(&[256, 128], &bt);
    let mut want_c = vec![0f32; 40 * 256];
    let mut want_d = vec![0f32; 40 * 256];
    for r in 0..40 {
        for n in 0..256 {
            for x in 0..128 {
                want_c[r * 256 + n] += a[r * 128 + x] * b[x * 256 + n];
                want_d[r * 256 + n] += a[r * 128 + x] * bt[n * 128 + x];
            }
        }
    }
    for t in [1, 2] {
        let out = k
            .run(
                vec![aa.clone(), ba.clone(), aha.clone(), bta.clone()],
                &threads(t),
            )
            .expect("runs");
        let first_diff =
            |got: Vec<f32>, want: &[f32]| got.iter().zip(want).position(|(g, w)| g != w);
        assert_eq!(
            first_diff(out[0].to_f32(), &want_c),
            None,
            "c on {t} threads"
        );
        assert_eq!(
            first_diff(out[1].to_f32(), &want_d),
            None,
            "d on {t} threads"
        );
    }
}

/// Outputs that only the MXU and constant fills write are marked so (the
/// host may write their full blocks in the output array itself), and the
/// dots name the ref they write; outputs the kernel's code stores to are
/// not. The results are those of blocks in VMEM: a zeroed block
/// accumulating a product per step, a product stored, a product added to
/// a block nothing wrote (poison: NaN), a constant fill, and a block left
/// unwritten (NaN), on one and two threads. `b = 2 * identity`, so every
/// product is exact.
#[test]
fn mxu_writes_output_blocks_in_the_arrays() {
    let facts = |file: &str| -> Vec<(String, bool)> {
        build(file, &[])
            .manifest()
            .refs
            .iter()
            .map(|r| (r.name.clone(), r.mxu_out))
            .collect()
    };
    let f = |n: &str, v| (n.to_string(), v);
    assert_eq!(
        facts("tests/cpu/dot_into_output.pk"),
        [f("a", false), f("b", false), f("c", true), f("d", true)]
    );
    assert_eq!(
        facts("kernels/matmul.pk"),
        [f("a", false), f("b", false), f("c", true)]
    );
    // `y` is stored from a scratch buffer by the kernel's code.
    assert_eq!(
        facts("tests/cpu/dot_accumulate.pk"),
        [
            f("a", false),
            f("b", false),
            f("y", false),
            f("z", false),
            f("acc", false),
            f("acc2", false)
        ]
    );
    let w = cpu_support::lower("kernels/matmul.pk");
    let c = w.manifest.refs.iter().position(|r| r.name == "c");
    let out: Vec<Option<usize>> = w
        .manifest
        .dots
        .iter()
        .map(|d| d.out_ref.map(|r| r as usize))
        .collect();
    assert_eq!(out, [c]);

    let k = build("tests/cpu/dot_into_output.pk", &[]);
    let (a, aa) = ints_f32(&[32, 128], |i| ((i * 7) % 9) as f32 - 4.0);
    for t in [1, 2] {
        let out = k
            .run(vec![aa.clone(), twice_identity(128)], &threads(t))
            .expect("runs");
        let (c, d) = (out[0].to_f32(), out[1].to_f32());
        for i in 0..32 * 128 {
            assert_eq!(c[i], 4.0 * a[i], "c[{i}] on {t} threads");
            let want = match i / (8 * 128) {
                0 => 2.0 * a[i],
                2 => 3.0,
                _ => f32::NAN,
            };
            assert!(
                d[i] == want || want.is_nan() && d[i].is_nan(),
                "d[{i}] = {} on {t} threads, want {want}",
                d[i]
            );
        }
    }
}

/// Pinned and free-moving workers give the same bits.
#[test]
fn pinning_workers_changes_no_result() {
    let k = build("tests/cpu/parallel_scratch.pk", &[]);
    let (_, xa) = ints_f32(&[64, 512], |i| ((i * 13) % 89) as f32 / 89.0 - 0.5);
    let pinned = k.run(vec![xa.clone()], &threads(2)).expect("runs");
    let free = RunOptions {
        pin: false,
        ..threads(2)
    };
    let moved = k.run(vec![xa], &free).expect("runs");
    assert_eq!(pinned[0].data, moved[0].data);
}

/// bf16 operands read as stored (widened by the host, 256 of K at a time)
/// give the bits of the f32 matmul of the same values, block for block:
/// with one block over K (two chunks of K per product; `a` reused across
/// units) and with K split (new blocks every step).
#[test]
fn bf16_operands_match_f32_operands_of_the_same_values() {
    let vals = |n: usize, m: usize| -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 7919 + m) % 251) as f32 / 64.0 - 2.0)
            .collect()
    };
    let (a, b) = (vals(64 * 512, 1), vals(512 * 384, 2));
    for bk in ["512", "128"] {
        let p = |t: &'static str| {
            [
                ("M", "64"),
                ("N", "384"),
                ("K", "512"),
                ("bm", "32"),
                ("bn", "128"),
                ("bk", bk),
                ("T", t),
            ]
        };
        let half = build("kernels/matmul.pk", &p("bf16"));
        let full = build("kernels/matmul.pk", &p("f32"));
        let ha = HostArray::bf16_from_f32(&[64, 512], &a);
        let hb = HostArray::bf16_from_f32(&[512, 384], &b);
        // The same values as f32 (every value here is exact in bf16).
        let fa = HostArray::from_f32(&[64, 512], &ha.to_f32());
        let fb = HostArray::from_f32(&[512, 384], &hb.to_f32());
        assert_eq!(fa.to_f32(), a);
        for t in [1, 2] {
            let x = half
                .run(vec![ha.clone(), hb.clone()], &threads(t))
                .expect("runs");
            let y = full
                .run(vec![fa.clone(), fb.clone()], &threads(t))
                .expect("runs");
            assert_eq!(x[0].data, y[0].data, "bk = {bk}, {t} threads");
        }
    }
}

/// Float and bool parameters: `scale` multiplies (and, without `causal`, is
/// added), `causal` keeps the elements on and below each block's diagonal.
/// Powers of two keep every product exact.
#[test]
fn float_and_bool_parameters_specialise_the_body() {
    let (x, xa) = ints_f32(&[256, 128], |i| (i % 17) as f32 - 8.0);
    let k = build("tests/in/params_float_bool.pk", &[]);
    let y = k.run(vec![xa.clone()], &threads(1)).expect("runs")[0].to_f32();
    for (i, &got) in y.iter().enumerate() {
        let (r, c) = ((i / 128) % 128, i % 128);
        let want = if c <= r { x[i] * 0.125 } else { 0.0 };
        assert_eq!(got, want, "default: element {i}");
    }
    let k = build(
        "tests/in/params_float_bool.pk",
        &[("scale", "-1.5"), ("causal", "false")],
    );
    let y = k.run(vec![xa.clone()], &threads(1)).expect("runs")[0].to_f32();
    for (i, &got) in y.iter().enumerate() {
        assert_eq!(
            got,
            x[i] * -1.5 - 1.5,
            "scale=-1.5 causal=false: element {i}"
        );
    }
    // An integer is accepted for a float parameter.
    let k = build(
        "tests/in/params_float_bool.pk",
        &[("scale", "2"), ("causal", "false")],
    );
    let y = k.run(vec![xa], &threads(1)).expect("runs")[0].to_f32();
    for (i, &got) in y.iter().enumerate() {
        assert_eq!(got, x[i] * 2.0 + 2.0, "scale=2: element {i}");
    }
}

/// Dtype queries: each dtype takes its own branch (`T == bf16`, `T != f32`)
/// and `bits(T)` is its width: bf16 doubles, i8 adds 8, i16 adds 16, f32
/// multiplies by 32; small integers keep every result exact.
#[test]
fn dtype_queries_choose_the_branch_of_each_dtype() {
    let x: Vec<f32> = (0..256 * 128).map(|i| (i % 9) as f32 - 4.0).collect();
    let ints: Vec<i64> = x.iter().map(|v| *v as i64).collect();
    type Case = (&'static str, HostArray, fn(f32) -> f32);
    let cases: [Case; 4] = [
        ("bf16", HostArray::bf16_from_f32(&[256, 128], &x), |v| {
            v * 2.0
        }),
        (
            "i8",
            HostArray::from_ints(DType::I8, &[256, 128], &ints),
            |v| v + 8.0,
        ),
        (
            "i16",
            HostArray::from_ints(DType::I16, &[256, 128], &ints),
            |v| v + 16.0,
        ),
        ("f32", HostArray::from_f32(&[256, 128], &x), |v| v * 32.0),
    ];
    for (t, input, f) in cases {
        let k = build("tests/in/dtype_queries.pk", &[("T", t)]);
        let y = k.run(vec![input], &threads(1)).expect("runs")[0].to_f32();
        for (i, &got) in y.iter().enumerate() {
            assert_eq!(got, f(x[i]), "T={t}: element {i}");
        }
    }
}

/// Kernels whose assertions hold run as if the assertions were absent:
/// `y = x + 1` at the defaults and at another configuration.
#[test]
fn passing_static_assertions_leave_the_kernel_unchanged() {
    let (x, xa) = ints_f32(&[1024, 128], |i| (i % 23) as f32);
    let k = build("tests/in/static_assert.pk", &[]);
    let y = k.run(vec![xa], &threads(1)).expect("runs")[0].to_f32();
    for (i, &got) in y.iter().enumerate() {
        assert_eq!(got, x[i] + 1.0, "element {i}");
    }
    let (x, xa) = ints_f32(&[512, 128], |i| (i % 23) as f32);
    let xa = HostArray::bf16_from_f32(&[512, 128], &xa.to_f32());
    let k = build(
        "tests/in/static_assert.pk",
        &[("M", "512"), ("bm", "64"), ("T", "bf16")],
    );
    let y = k.run(vec![xa], &threads(1)).expect("runs")[0].to_f32();
    for (i, &got) in y.iter().enumerate() {
        assert_eq!(got, x[i] + 1.0, "bf16: element {i}");
    }
}

/// Tuples, a nested helper with keyword arguments and defaults: per row,
/// chunk `c` of the row is `x * scale + (c > 0 ? 1 : 0)`; the loop carries
/// (sum, max) over the chunks; even row blocks store (sum, max), odd ones
/// (max, sum). Small integers and halves keep every sum exact.
#[test]
fn tuples_and_nested_helpers_carry_and_yield_pairs() {
    let (m, n, bm) = (32usize, 512usize, 8usize);
    let (x, xa) = ints_f32(&[m, n], |i| ((i * 7) % 11) as f32 - 5.0);
    for (scale, params) in [(0.5f32, vec![]), (-2.0, vec![("scale", "-2.0")])] {
        let k = build("tests/in/tuples_helpers.pk", &params);
        let out = k.run(vec![xa.clone()], &threads(1)).expect("runs");
        let (s, mx) = (out[0].to_f32(), out[1].to_f32());
        for r in 0..m {
            let mut total = 0.0f32;
            let mut top = f32::NEG_INFINITY;
            for c in 0..n / 128 {
                let extra = if c == 0 { 0.0 } else { 1.0 };
                for col in 0..128 {
                    let v = x[r * n + c * 128 + col] * scale + extra;
                    total += v;
                    top = top.max(v);
                }
            }
            let (a, b) = if (r / bm) % 2 == 0 {
                (total, top)
            } else {
                (top, total)
            };
            for col in 0..128 {
                assert_eq!(s[r * 128 + col], a, "scale={scale}: s[{r}, {col}]");
                assert_eq!(mx[r * 128 + col], b, "scale={scale}: m[{r}, {col}]");
            }
        }
    }
}

/// `dot(f32, bf16)` computes in f32 like `jnp.dot`: integer inputs whose
/// products and sums are exact give the exact matrix product.
#[test]
fn dot_of_f32_and_bf16_promotes_to_f32() {
    let (m, kk, n) = (128usize, 256usize, 128usize);
    let (a, aa) = ints_f32(&[m, kk], |i| ((i * 3) % 7) as f32 - 3.0);
    let b: Vec<f32> = (0..kk * n).map(|i| ((i * 5) % 9) as f32 - 4.0).collect();
    let ba = HostArray::bf16_from_f32(&[kk, n], &b);
    let k = build("tests/in/mixed_dot.pk", &[]);
    let c = k.run(vec![aa, ba], &threads(1)).expect("runs")[0].to_f32();
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..kk).map(|p| a[i * kk + p] * b[p * n + j]).sum();
            assert_eq!(c[i * n + j], want, "c[{i}, {j}]");
        }
    }
}

/// Static slices of values, per block of 16 rows: `y = 2x[:, 128..256] +
/// h[:, 0..128] + h[:, 128..256] + 2x[:, 64..192]` and `z = 2x[0..8] +
/// 2x[8..16] + 2x[5..13] + h[3..11]`.
#[test]
fn value_slices_take_static_windows() {
    let (m, bm) = (64usize, 16usize);
    let (x, xa) = ints_f32(&[m, 256], |i| ((i * 5) % 13) as f32 - 6.0);
    let h: Vec<f32> = (0..m * 256).map(|i| ((i * 3) % 10) as f32 - 5.0).collect();
    let ha = HostArray::bf16_from_f32(&[m, 256], &h);
    let k = build("tests/in/value_slices.pk", &[]);
    let out = k.run(vec![xa, ha], &threads(1)).expect("runs");
    let (y, z) = (out[0].to_f32(), out[1].to_f32());
    for r in 0..m {
        for c in 0..128 {
            let want = 2.0 * x[r * 256 + 128 + c]
                + h[r * 256 + c]
                + h[r * 256 + 128 + c]
                + 2.0 * x[r * 256 + 64 + c];
            assert_eq!(y[r * 128 + c], want, "y[{r}, {c}]");
        }
    }
    for b in 0..m / bm {
        for r in 0..8 {
            for c in 0..256 {
                let (top, low, mid, hr) =
                    (b * bm + r, b * bm + 8 + r, b * bm + 5 + r, b * bm + 3 + r);
                let want = 2.0 * x[top * 256 + c]
                    + 2.0 * x[low * 256 + c]
                    + 2.0 * x[mid * 256 + c]
                    + h[hr * 256 + c];
                assert_eq!(z[(b * 8 + r) * 256 + c], want, "z[{}, {c}]", b * 8 + r);
            }
        }
    }
}

/// `concatenate` and `tile`, per block of 8 rows `v`: `y` is `v` with its
/// lane halves swapped; `z` (16 rows) is `v[:, 0..128]` tiled 2 x 2 plus
/// `v` stacked on `2v`.
#[test]
fn concatenate_and_tile_join_values() {
    let m = 32usize;
    let (x, xa) = ints_f32(&[m, 256], |i| ((i * 7) % 19) as f32 - 9.0);
    let k = build("tests/in/concat_tile.pk", &[]);
    let out = k.run(vec![xa], &threads(1)).expect("runs");
    let (y, z) = (out[0].to_f32(), out[1].to_f32());
    for r in 0..m {
        for c in 0..256 {
            assert_eq!(y[r * 256 + c], x[r * 256 + (c + 128) % 256], "y[{r}, {c}]");
        }
    }
    for b in 0..m / 8 {
        for r in 0..16 {
            let src = b * 8 + r % 8;
            let scale = if r < 8 { 1.0 } else { 2.0 };
            for c in 0..256 {
                let want = x[src * 256 + c % 128] + scale * x[src * 256 + c];
                assert_eq!(z[(b * 16 + r) * 256 + c], want, "z[{}, {c}]", b * 16 + r);
            }
        }
    }
}

/// kernels/attention.pk (a tuple-carried online softmax in a nested
/// helper) against softmax(q k^T / sqrt(D)) v computed directly in f64.
/// The tolerance covers the MXU's bf16 passes on f32 inputs.
#[test]
fn flash_attention_with_a_tuple_carry_matches_direct_softmax() {
    let (s, d) = (256usize, 128usize);
    let (q, qa) = ints_f32(&[s, d], |i| (((i * 37) % 17) as f32 - 8.0) / 8.0);
    let (k, ka) = ints_f32(&[s, d], |i| (((i * 53) % 13) as f32 - 6.0) / 6.0);
    let (v, va) = ints_f32(&[s, d], |i| (((i * 29) % 11) as f32 - 5.0) / 5.0);
    let kern = build("kernels/attention.pk", &[("S", "256")]);
    let o = kern.run(vec![qa, ka, va], &threads(1)).expect("runs")[0].to_f32();
    let scale = 1.0 / (d as f64).sqrt();
    let mut want = vec![0.0f64; s * d];
    for r in 0..s {
        let logits: Vec<f64> = (0..s)
            .map(|c| {
                (0..d)
                    .map(|x| q[r * d + x] as f64 * k[c * d + x] as f64)
                    .sum::<f64>()
                    * scale
            })
            .collect();
        let top = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let p: Vec<f64> = logits.iter().map(|l| (l - top).exp()).collect();
        let total: f64 = p.iter().sum();
        for x in 0..d {
            want[r * d + x] = (0..s).map(|c| p[c] * v[c * d + x] as f64).sum::<f64>() / total;
        }
    }
    let got: Vec<f64> = o.iter().map(|x| *x as f64).collect();
    assert_close("attention", &got, &want, 2e-2, 2e-2);
}

/// A block larger than its array (opted in per axis with `cdiv`, as Pallas
/// pads it): the array's elements arrive where they lie in the block, the
/// padding rows read as NaN (so a sum over the block's rows is NaN), and
/// writes to the padding are dropped rather than reaching past the array.
#[test]
fn block_larger_than_array_is_padded() {
    let k = build("tests/cpu/padded_block.pk", &[]);
    let (x, xa) = ints_f32(&[5, 100], |i| (i % 17) as f32 - 8.0);
    let out = k.run(vec![xa], &threads(1)).expect("runs");
    let (y, s) = (out[0].to_f32(), out[1].to_f32());
    assert_eq!(y.len(), 5 * 100);
    for (i, (&yv, &xv)) in y.iter().zip(&x).enumerate() {
        assert_eq!(yv, xv * 2.0 + 1.0, "element {i}");
    }
    assert_eq!(s.len(), 8 * 100);
    assert!(s.iter().all(|v| v.is_nan()), "padding rows are summed");
}

/// Declarations written `if COND` exist only where the bool parameter holds:
/// the absent scale is not an input, the absent sum is not an output, and
/// the kernel computes what each of its four specialisations says.
#[test]
fn conditional_operands_and_scratch_follow_their_parameters() {
    let (x, xa) = ints_f32(&[16, 128], |i| (i % 13) as f32 - 6.0);
    let (sc, sca) = ints_f32(&[16, 128], |i| ((i * 3) % 5) as f32 - 2.0);
    for quant in [false, true] {
        for with_sum in [false, true] {
            let params = [
                ("QUANT", if quant { "true" } else { "false" }),
                ("SUM", if with_sum { "true" } else { "false" }),
            ];
            let k = build("tests/cpu/conditional_operands.pk", &params);
            let inputs = if quant {
                vec![xa.clone(), sca.clone()]
            } else {
                vec![xa.clone()]
            };
            let out = k.run(inputs, &threads(1)).expect("runs");
            assert_eq!(out.len(), if with_sum { 2 } else { 1 }, "{params:?}");
            let v: Vec<f32> = (0..16 * 128)
                .map(|e| if quant { x[e] * sc[e] } else { x[e] })
                .collect();
            assert_eq!(out[0].to_f32(), v, "{params:?}");
            if with_sum {
                let s = out[1].to_f32();
                for c in 0..128 {
                    let want: f32 = (0..16).map(|r| v[r * 128 + c]).sum();
                    for r in 0..8 {
                        assert_eq!(s[r * 128 + c], want, "{params:?} column {c}");
                    }
                }
            }
        }
    }
}

/// An optional parameter: `none` (the default) keeps every score; a window
/// set with `-p` masks the keys more than `window` positions behind each
/// query, decided at compile time by `is not none`.
#[test]
fn optional_parameter_selects_its_code_at_compile_time() {
    let (s, sa) = ints_f32(&[256, 256], |i| (i % 19) as f32);
    let k = build("tests/cpu/optional_params.pk", &[]);
    let y = k.run(vec![sa.clone()], &threads(1)).expect("runs")[0].to_f32();
    assert_eq!(y, s);
    let k = build("tests/cpu/optional_params.pk", &[("window", "3")]);
    let y = k.run(vec![sa], &threads(2)).expect("runs")[0].to_f32();
    for q in 0..256 {
        for key in 0..256 {
            let e = q * 256 + key;
            let want = if q as i64 - key as i64 > 3 {
                f32::NEG_INFINITY
            } else {
                s[e]
            };
            assert_eq!(y[e], want, "query {q} key {key}");
        }
    }
}

/// Shapes computed from parameters, `if` included: with `-p WIDE=true
/// -p S=300` the input rows are padded up to 384 lanes and `w` is 256 wide,
/// and each output row adds the sum of the matching row of `w`.
#[test]
fn shapes_follow_the_parameters_they_are_computed_from() {
    let k = build(
        "tests/in/computed_shapes.pk",
        &[("WIDE", "true"), ("S", "300")],
    );
    let (x, xa) = ints_f32(&[4, 8, 384], |i| (i % 11) as f32);
    let (w, wa) = ints_f32(&[8, 256], |i| ((i * 3) % 7) as f32 - 3.0);
    let y = k.run(vec![xa, wa], &threads(1)).expect("runs")[0].to_f32();
    for e in 0..4 * 8 * 384 {
        let row = (e / 384) % 8;
        let rowsum: f32 = w[row * 256..(row + 1) * 256].iter().sum();
        assert_eq!(y[e], x[e] + rowsum, "element {e}");
    }
}

/// `multiple_of` returns its operand unchanged when the promise holds: the
/// windows start at the rows read from SMEM.
#[test]
fn multiple_of_keeps_a_kept_promise() {
    let k = build("tests/in/multiple_of.pk", &[]);
    let starts = [8i64, 0, 56, 16];
    let (x, xa) = ints_f32(&[64, 128], |i| (i % 97) as f32);
    let inputs = vec![xa, HostArray::from_ints(DType::I32, &[4], &starts)];
    let y = k.run(inputs, &threads(2)).expect("runs")[0].to_f32();
    for (g, &s) in starts.iter().enumerate() {
        for r in 0..8 {
            for c in 0..128 {
                let want = x[(s as usize + r) * 128 + c] + x[(g * 8 + r) * 128 + c];
                assert_eq!(y[(g * 8 + r) * 128 + c], want, "step {g} row {r}");
            }
        }
    }
}

/// `for h in 0..H unroll`: each copy of the body reads head `h` and weighs
/// it by `h + 1`, a compile-time value.
#[test]
fn unrolled_loop_runs_each_index_once() {
    let k = build("tests/in/unroll.pk", &[("T", "f32")]);
    let f = |i: usize| ((i * 7) % 23) as f32 - 11.0;
    let (kv, kva) = ints_f32(&[2, 16, 8, 128], f);
    let y = k.run(vec![kva], &threads(1)).expect("runs")[0].to_f32();
    for i in 0..2 {
        for r in 0..16 {
            for c in 0..128 {
                let want: f32 = (0..8)
                    .map(|h| kv[((i * 16 + r) * 8 + h) * 128 + c] * (h + 1) as f32)
                    .sum();
                assert_eq!(y[(i * 16 + r) * 128 + c], want, "i {i} row {r} lane {c}");
            }
        }
    }
}

/// The unrolled index sizes windows: block `h` of a row is the sum of its
/// first `(h + 1) * 128` elements.
#[test]
fn unrolled_index_sizes_windows() {
    let k = build("tests/cpu/unroll_prefix.pk", &[]);
    let (x, xa) = ints_f32(&[8, 512], |i| (i % 9) as f32);
    let y = k.run(vec![xa], &threads(1)).expect("runs")[0].to_f32();
    for r in 0..8 {
        for h in 0..4 {
            let want: f32 = x[r * 512..r * 512 + (h + 1) * 128].iter().sum();
            for c in 0..128 {
                assert_eq!(y[r * 512 + h * 128 + c], want, "row {r} block {h}");
            }
        }
    }
}

/// fp8 casts round to nearest, ties to even, and stores and loads encode
/// and decode exactly; values and bytes derived by hand from the formats
/// (e4m3fn: bias 7, 3 mantissa bits, max 448, no infinities, NaN
/// S.1111.111; e5m2: bias 15, 2 mantissa bits, max 57344, infinities).
#[test]
fn fp8_casts_round_to_nearest_even_and_round_trip() {
    let nan = f32::NAN;
    // (x, e4m3fn value, e4m3fn byte, e5m2 value, e5m2 byte)
    let cases: [(f32, f32, u8, f32, u8); 16] = [
        (0.0, 0.0, 0x00, 0.0, 0x00),
        (-0.0, -0.0, 0x80, -0.0, 0x80),
        (1.0, 1.0, 0x38, 1.0, 0x3C),
        // 1 + 1/16: halfway between 1 and 1.125 (e4m3fn), ties to 1.0;
        // below e5m2's halfway (1.125) to 1.25, so 1.0 there too.
        (1.0625, 1.0, 0x38, 1.0, 0x3C),
        // 1.1875: halfway between 1.125 and 1.25 (e4m3fn): to 1.25 (even);
        // e5m2 (spacing 0.25) rounds it to 1.25.
        (1.1875, 1.25, 0x3A, 1.25, 0x3D),
        (-3.3, -3.25, 0xC5, -3.5, 0xC3),
        (448.0, 448.0, 0x7E, 448.0, 0x5F),
        // 464: halfway between 448 and 480 (e4m3fn's NaN slot): to 448.
        (464.0, 448.0, 0x7E, 448.0, 0x5F),
        // Past it: NaN in e4m3fn; e5m2 (spacing 64 from 256) has 448.
        (470.0, nan, 0x7F, 448.0, 0x5F),
        (57344.0, nan, 0x7F, 57344.0, 0x7B),
        (1e6, nan, 0x7F, f32::INFINITY, 0x7C),
        // e4m3fn's smallest subnormal 2^-9; half of it ties to 0, three
        // quarters of it rounds up. In e5m2 (normals down to 2^-14) all
        // three are normal and exact.
        (2f32.powi(-9), 2f32.powi(-9), 0x01, 2f32.powi(-9), 0x18),
        (2f32.powi(-10), 0.0, 0x00, 2f32.powi(-10), 0x14),
        (
            3.0 * 2f32.powi(-11),
            2f32.powi(-9),
            0x01,
            3.0 * 2f32.powi(-11),
            0x16,
        ),
        // 7.5 * 2^-9: halfway between e4m3fn subnormals 7 and 8 (2^-6),
        // to 8; in e5m2 1.875 * 2^-7 ties between 1.75 and 2 -> 2^-6.
        (
            7.5 * 2f32.powi(-9),
            2f32.powi(-6),
            0x08,
            2f32.powi(-6),
            0x24,
        ),
        // e5m2's smallest subnormal 2^-16 and below: 2^-17 ties to 0.
        (2f32.powi(-17), 0.0, 0x00, 0.0, 0x00),
    ];
    let mut x = vec![0.0f32; 8 * 128];
    for (i, c) in cases.iter().enumerate() {
        x[i] = c.0;
    }
    let xa = HostArray::from_f32(&[8, 128], &x);
    for (t, e4m3) in [("f8e4m3fn", true), ("f8e5m2", false)] {
        let k = build("tests/cpu/fp8_cast.pk", &[("T", t)]);
        let out = k.run(vec![xa.clone()], &threads(1)).expect("runs");
        let (z, y) = (&out[0], out[1].to_f32());
        for (i, c) in cases.iter().enumerate() {
            let (want, want_byte) = if e4m3 { (c.1, c.2) } else { (c.3, c.4) };
            assert_eq!(z.data[i], want_byte, "{t}: byte of {}", c.0);
            if want.is_nan() {
                assert!(y[i].is_nan(), "{t}: {} -> {}", c.0, y[i]);
            } else {
                assert_eq!(y[i].to_bits(), want.to_bits(), "{t}: {} -> {}", c.0, y[i]);
            }
        }
    }
}

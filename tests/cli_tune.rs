//! `pkc tune` end to end: the space, pruning and libtpu's agreement with
//! the checker on five targets, the JSON report, `--seed` sampling, the
//! cache (a hit, a miss after the source changes) and `--tuned` in `pkc
//! build` and `pkc run`, and the errors of the command.
//!
//! Tests that compile with libtpu print a notice and pass when it is not
//! installed, unless `CI=true`.

mod common;

use common::{code, pkc, root, stderr, stdout, TempDir};
use std::path::Path;
use std::process::{Command, Output};

fn have_libtpu() -> bool {
    if pk_runtime::pjrt::locate_libtpu(None).is_ok() || std::env::var("CI").as_deref() == Ok("true")
    {
        return true;
    }
    eprintln!(
        "notice: libtpu is not installed; skipping (install it with `bash .ci/setup-libtpu`)"
    );
    false
}

/// `pkc` with `PK_TUNE_CACHE` set to `cache`.
fn pkc_cached(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pkc"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env("TPU_SKIP_MDS_QUERY", "1")
        .env("PK_TUNE_CACHE", cache)
        .env_remove("PK_LIBTPU")
        .output()
        .expect("pkc runs")
}

fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

/// A copy whose block shape is tuned; 16x256 like tests/data/add_16x256.
const COPY: &str = "\
kernel copy<
    M = 16,
    N = 256,
    bm = 8 in [8, 16],
    bn = 128 in [128, 256],
>(
    x: f32[M, N] block [bm, bn] at (i, j),
) -> y: f32[M, N] block [bm, bn] at (i, j)
grid (i in M / bm parallel, j in N / bn parallel)
where bm * bn <= 2048
{
    y[..] = x[..];
}
";

#[test]
fn every_configuration_the_checker_keeps_compiles_with_libtpu_on_five_targets() {
    if !have_libtpu() {
        return;
    }
    // bm, bn, bk in pow2(128, 1024) over a 512^3 matmul: 64 configurations
    // per target, of which the checker rejects the blocks larger than the
    // arrays; libtpu must accept every one it keeps.
    let cache = TempDir::new("tune-agree");
    let o = pkc_cached(
        cache.path(),
        &[
            "tune",
            "kernels/matmul.pk",
            "-p",
            "M=512",
            "-p",
            "N=512",
            "-p",
            "K=512",
            "--target",
            "all",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let reports = json_lines(&o);
    assert_eq!(reports.len(), 5, "one report per target");
    for r in &reports {
        let t = r["target"].as_str().expect("a target");
        assert_eq!(r["space"], 64, "{t}");
        assert_eq!(r["aot"], true, "{t}");
        assert_eq!(r["tried"], 64, "{t}: the space is below the budget");
        let pruned: u64 = r["pruned"]
            .as_object()
            .expect("counts per code")
            .values()
            .map(|n| n.as_u64().expect("a count"))
            .sum();
        // 3 of 4 block sizes fit 512 per axis: 27 configurations remain.
        assert_eq!(pruned, 64 - 27, "{t}: {}", r["pruned"]);
        assert_eq!(
            r["refused"].as_array().map(Vec::len),
            Some(0),
            "{t}: {}",
            r["refused"]
        );
        assert_eq!(r["ranked"], 27, "{t}");
        let best = &r["best"][0];
        assert!(
            best["generated_code_bytes"].as_u64().unwrap_or(0) > 0,
            "{t}: {best}"
        );
    }
}

#[test]
fn tune_caches_the_best_and_build_and_run_use_it_until_the_source_changes() {
    if !have_libtpu() {
        return;
    }
    let dir = TempDir::new("tune-cache");
    let cache = dir.path().join("cache");
    let src = dir.file("copy.pk", COPY.as_bytes());
    let src_arg = src.to_str().expect("UTF-8 path");
    let o = pkc_cached(&cache, &["tune", src_arg, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = &json_lines(&o)[0];
    // bm=16 bn=256 breaks the `where` (4096 > 2048): PK0262, not tried
    // further; three configurations are ranked.
    assert_eq!(r["pruned"]["PK0262"], 1, "{r}");
    assert_eq!(r["ranked"], 3);
    let best = r["best"][0]["params"].clone();
    let cached = r["cache"].as_str().expect("the cache file");
    assert!(Path::new(cached).starts_with(&cache), "{cached}");
    let entry: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cached).expect("readable")).expect("JSON");
    assert_eq!(entry["evaluator"], "model");
    let want = format!(
        "bm={} bn={}",
        best["bm"].as_str().unwrap(),
        best["bn"].as_str().unwrap()
    );

    // A hit: build names the package after the tuned values and says so.
    let out = dir.path().join("out");
    let o = pkc_cached(
        &cache,
        &["build", "--tuned", src_arg, "-o", out.to_str().unwrap()],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("(model): {want}")),
        "{}",
        stderr(&o)
    );
    let pkg = format!(
        "copy-bm{}-bn{}",
        best["bm"].as_str().unwrap(),
        best["bn"].as_str().unwrap()
    );
    assert!(
        out.join(&pkg).is_dir(),
        "{pkg} in {:?}",
        std::fs::read_dir(&out).map(|d| d.count())
    );

    // run --tuned computes the copy with the tuned blocks.
    let y = dir.path().join("y.npy");
    let o = pkc_cached(
        &cache,
        &[
            "run",
            "--tuned",
            src_arg,
            "--in",
            "x=tests/data/add_16x256/x.npy",
            "--out",
            &format!("y={}", y.display()),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    let x = pk_runtime::cpu::npy::read(&root().join("tests/data/add_16x256/x.npy")).expect("x");
    let got = pk_runtime::cpu::npy::read(&y).expect("y");
    assert_eq!(
        pk_runtime::cpu::npy::values(&got, pk_lang::ir::DType::F32),
        pk_runtime::cpu::npy::values(&x, pk_lang::ir::DType::F32)
    );

    // Another shape is another entry: a miss, said so, defaults used.
    let o = pkc_cached(
        &cache,
        &[
            "build",
            "--tuned",
            src_arg,
            "-p",
            "M=32",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no tuning cache entry for `copy`"),
        "{}",
        stderr(&o)
    );
    assert!(out.join("copy-M32").is_dir());

    // Changing the source invalidates the entry.
    std::fs::write(&src, format!("// edited\n{COPY}")).expect("rewrite");
    let o = pkc_cached(
        &cache,
        &["build", "--tuned", src_arg, "-o", out.to_str().unwrap()],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no tuning cache entry"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_sampled_search_is_repeatable_with_its_seed_and_cpu_timing_ranks() {
    let dir = TempDir::new("tune-seed");
    let src = dir.file("copy.pk", COPY.as_bytes());
    let src_arg = src.to_str().expect("UTF-8 path");
    let run = |seed: &str| {
        let o = pkc_cached(
            &dir.path().join("cache"),
            &[
                "tune", src_arg, "--budget", "2", "--seed", seed, "--no-aot", "--eval", "cpu",
                "--json",
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        json_lines(&o).remove(0)
    };
    let a = run("7");
    assert_eq!(a["evaluator"], "cpu");
    assert_eq!(a["aot"], false, "--no-aot skips libtpu");
    assert_eq!(a["tried"], 2, "the budget caps the configurations tried");
    let configs = |r: &serde_json::Value| {
        let mut v: Vec<String> = r["best"]
            .as_array()
            .expect("ranked")
            .iter()
            .map(|c| c["params"].to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        configs(&a),
        configs(&run("7")),
        "the same seed samples the same configurations"
    );
    // The default (bm=8 bn=128) is always among those sampled.
    assert!(configs(&a)
        .iter()
        .any(|c| c.contains("\"bm\":\"8\"") && c.contains("\"bn\":\"128\"")));
}

#[test]
fn a_default_that_breaks_a_rule_for_the_shapes_does_not_stop_tuning() {
    // At 128^3 the default blocks (256, 256, 512) are larger than the
    // arrays; the one configuration of 128-blocks is still found.
    let cache = TempDir::new("tune-small");
    let o = pkc_cached(
        cache.path(),
        &[
            "tune",
            "kernels/matmul.pk",
            "-p",
            "M=128",
            "-p",
            "N=128",
            "-p",
            "K=128",
            "--no-aot",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = &json_lines(&o)[0];
    assert_eq!(r["ranked"], 1, "{r}");
    assert_eq!(
        r["best"][0]["params"],
        serde_json::json!({"bm": "128", "bn": "128", "bk": "128"})
    );
    assert!(r["default"].is_null(), "the default was pruned: {r}");
}

#[test]
fn tune_reports_its_errors_with_codes_and_exit_codes() {
    let cache = TempDir::new("tune-errors");
    // Nothing to tune: add.pk declares no candidates.
    let o = pkc_cached(cache.path(), &["tune", "kernels/add.pk", "--no-aot"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK6001"), "{}", stderr(&o));
    // Every configuration pruned: every candidate block is larger than 96.
    let o = pkc_cached(
        cache.path(),
        &[
            "tune",
            "kernels/matmul.pk",
            "-p",
            "M=96",
            "-p",
            "N=96",
            "-p",
            "K=96",
            "--no-aot",
        ],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK6002"), "{}", stderr(&o));
    // --eval tpu on a host without a TPU: a coded toolchain error.
    if pk_runtime::pjrt::locate_libtpu(None).is_ok() {
        let o = pkc_cached(
            cache.path(),
            &["tune", "kernels/matmul.pk", "--eval", "tpu"],
        );
        assert_eq!(code(&o), 5, "{}", stderr(&o));
        assert!(stderr(&o).contains("PK2"), "{}", stderr(&o));
    }
    // An unwritable cache directory.
    let o = pkc(&[
        "tune",
        "kernels/matmul.pk",
        "--no-aot",
        "--tuned-cache",
        "/proc/pk-tune",
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK6003"), "{}", stderr(&o));
    // --tuned applies to sources: a package holds one specialisation.
    let o = pkc(&["run", "--tuned", "tests/data"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK4002"), "{}", stderr(&o));
    let o = pkc(&["explain", "PK6002"]);
    assert_eq!(code(&o), 0);
}

/// `pkc tune tests/tune/paged.pk --no-aot --json` with `--in` arrays (the
/// one target's report).
fn tune_paged(cache: &Path, inputs: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut args = vec!["tune", "tests/tune/paged.pk", "--no-aot", "--json"];
    let given: Vec<String> = inputs
        .iter()
        .map(|(n, f)| format!("{n}=tests/tune/{f}"))
        .collect();
    for g in &given {
        args.extend(["--in", g.as_str()]);
    }
    args.extend(extra);
    pkc_cached(cache, &args)
}

/// Each ranked configuration's value of `ppb` with its JSON entry.
fn by_ppb(r: &serde_json::Value) -> std::collections::BTreeMap<u64, serde_json::Value> {
    r["best"]
        .as_array()
        .expect("ranked configurations")
        .iter()
        .map(|c| {
            let ppb = c["params"]["ppb"]
                .as_str()
                .expect("ppb")
                .parse()
                .expect("a number");
            (ppb, c.clone())
        })
        .collect()
}

#[test]
fn the_model_counts_the_work_paged_attention_does_on_the_given_lengths() {
    let cache = TempDir::new("tune-count");
    let pages = ("page_indices", "page_indices.npy");
    let o = tune_paged(
        cache.path(),
        &[("lengths", "lengths_short.npy"), pages],
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let short = by_ppb(&json_lines(&o)[0]);
    assert_eq!(short.len(), 3, "ppb in [1, 2, 4]");
    // Lengths [20, 0, 37], pages of 8 tokens: the pages holding tokens are
    // ceil(20/8) + 0 + ceil(37/8) = 3 + 0 + 5 = 8, each copied twice (keys
    // and values) as one f32[8, 128] window of 4096 bytes: 8 * 2 * 4096 =
    // 65536 DMA bytes, whatever ppb. A block holds 8 * ppb tokens; the
    // blocks are ceil(20/bk) + 0 + ceil(37/bk): 3 + 5 = 8 for ppb 1 (bk 8),
    // 2 + 3 = 5 for ppb 2 (bk 16), 1 + 2 = 3 for ppb 4 (bk 32); each runs
    // the scores q @ k^T (m = H / KH = 2, n = bk, k = D = 128) and p @ v
    // (m = 2, n = 128, k = bk), and exp over the [2, bk] scores and the
    // [2, 1] rescale: blocks * (2 bk + 2) transcendentals. The query and
    // output blocks, f32[2, 128] = 1024 bytes, move once per grid step
    // (3 steps: B = 3, KH = 1).
    for (ppb, blocks) in [(1u64, 8u64), (2, 5), (4, 3)] {
        let w = &short[&ppb]["work"];
        let bk = 8 * ppb;
        assert_eq!(w["counted"], true, "ppb={ppb}: {w}");
        assert_eq!(w["approximate"], 0, "ppb={ppb}: every branch decided: {w}");
        assert_eq!(w["grid_steps"], 3, "ppb={ppb}");
        assert_eq!(w["dma_bytes"], 65536, "ppb={ppb}: {w}");
        assert_eq!(w["bytes_in"], 3 * 1024, "ppb={ppb}");
        assert_eq!(w["bytes_out"], 3 * 1024, "ppb={ppb}");
        assert_eq!(
            w["dots"],
            serde_json::json!([
                {"dtype": "f32", "m": 2, "n": bk, "k": 128, "count": blocks},
                {"dtype": "f32", "m": 2, "n": 128, "k": bk, "count": blocks},
            ]),
            "ppb={ppb}"
        );
        assert_eq!(
            w["transcendentals"],
            (blocks * (2 * bk + 2)) as f64,
            "ppb={ppb}"
        );
        // The least traffic counts the pages read, not the whole cache, so
        // the prediction stays above the roofline.
        let roof = short[&ppb]["roofline_fraction"]
            .as_f64()
            .expect("a fraction");
        assert!(roof > 0.0 && roof <= 1.0, "ppb={ppb}: {roof}");
    }

    // Lengths [64, 64, 64]: 8 pages each, 24 * 2 * 4096 = 196608 bytes;
    // 64 / bk blocks per sequence. More work, a longer prediction.
    let o = tune_paged(cache.path(), &[("lengths", "lengths_long.npy"), pages], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let long = by_ppb(&json_lines(&o)[0]);
    for ppb in [1u64, 2, 4] {
        let w = &long[&ppb]["work"];
        assert_eq!(w["dma_bytes"], 196608, "ppb={ppb}: {w}");
        assert_eq!(w["dots"][0]["count"], 3 * 64 / (8 * ppb), "ppb={ppb}: {w}");
        let (s, l) = (
            short[&ppb]["predicted_seconds"].as_f64().expect("a time"),
            long[&ppb]["predicted_seconds"].as_f64().expect("a time"),
        );
        assert!(
            l > s,
            "ppb={ppb}: {l} s for the long sequences, {s} s for the short"
        );
    }

    // The CPU reference, run on the same inputs, moves the same bytes:
    // `pkc bench` counts them as its executor copies (it also copies the
    // 108 bytes of prefetch arrays, i32[3] and i32[3, 8], into SMEM once
    // per unit, 3 units, which the model does not charge).
    for ppb in [1u64, 2, 4] {
        let o = pkc(&[
            "bench",
            "tests/tune/paged.pk",
            "-p",
            &format!("ppb={ppb}"),
            "--in",
            "lengths=tests/tune/lengths_short.npy",
            "--in",
            "page_indices=tests/tune/page_indices.npy",
            "--iters",
            "1",
            "--json",
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let bench: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
        let w = &short[&ppb]["work"];
        assert_eq!(bench["dma_bytes"], w["dma_bytes"], "ppb={ppb}");
        assert_eq!(bench["bytes_out"], w["bytes_out"], "ppb={ppb}");
        assert_eq!(
            bench["bytes_in"].as_u64(),
            w["bytes_in"].as_u64().map(|b| b + 3 * 108),
            "ppb={ppb}"
        );
    }

    // Without --in the count is static: the same three steps whatever the
    // lengths, one loop trip each.
    let o = tune_paged(cache.path(), &[], &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let fixed = by_ppb(&json_lines(&o)[0]);
    assert_eq!(fixed[&2]["work"]["counted"], false);
    assert_eq!(
        fixed[&2]["work"]["dots"][0]["count"], 3,
        "one trip per step"
    );
}

#[test]
fn the_model_counts_the_visits_grouped_matmul_metadata_asks_for() {
    // tests/data/gmm_bf16_sizes_16_0_32's metadata: groups of 16, 0 and 32
    // rows, tm = 16, so num_tiles = 3 visits (of a bound M / tm + G - 1 =
    // 5): group_ids [0, 2, 2], m_tile_ids [0, 1, 2]. With K = N = 256 and
    // tk = tn = 128 the grid (n, t, k) runs 2 * 3 * 2 = 12 steps, k
    // fastest. lhs's block (m_tile_ids[t], k), bf16[16, 128] = 4096 bytes,
    // changes every step: 12 * 4096 = 49152. rhs's block (group_ids[t], k,
    // n), bf16[128, 128] = 32768 bytes, changes every step too (k
    // alternates): 12 * 32768 = 393216. out's block (m_tile_ids[t], n),
    // f32[16, 128] = 8192 bytes, runs over (0,0) (0,0) (1,0) (1,0) (2,0)
    // (2,0) per n: 6 write-backs = 49152. One bf16 16x128x128 dot a step.
    let d = "tests/data/gmm_bf16_sizes_16_0_32";
    let meta: Vec<String> = ["group_offsets", "group_ids", "m_tile_ids", "num_tiles"]
        .iter()
        .map(|n| format!("{n}={d}/{n}.npy"))
        .collect();
    let shape = [
        "-k", "gmm", "-p", "M=48", "-p", "K=256", "-p", "N=256", "-p", "G=3", "-p", "tm=16", "-p",
        "tn=128",
    ];
    let cache = TempDir::new("tune-count-gmm");
    let mut args = vec!["tune", "kernels/gmm.pk", "--no-aot", "--json"];
    args.extend(shape);
    for m in &meta {
        args.extend(["--in", m.as_str()]);
    }
    let o = pkc_cached(cache.path(), &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = &json_lines(&o)[0];
    let best = r["best"].as_array().expect("ranked");
    let c = best
        .iter()
        .find(|c| c["params"]["tk"] == "128")
        .unwrap_or_else(|| panic!("tk=128 is ranked: {r}"));
    let w = &c["work"];
    assert_eq!(w["counted"], true, "{w}");
    assert_eq!(w["grid_steps"], 12, "{w}");
    assert_eq!(w["bytes_in"], 49152 + 393216, "{w}");
    assert_eq!(w["bytes_out"], 49152, "{w}");
    assert_eq!(
        w["dots"],
        serde_json::json!([{"dtype": "bf16", "m": 16, "n": 128, "k": 128, "count": 12}])
    );
    // The CPU reference copies the same blocks, and the 60 bytes of
    // metadata (i32[4], i32[5], i32[5], i32[1]) once per unit (2 units, n).
    let mut bench = vec![
        "bench",
        "kernels/gmm.pk",
        "-p",
        "tk=128",
        "--iters",
        "1",
        "--json",
    ];
    bench.extend(shape);
    for m in &meta {
        bench.extend(["--in", m.as_str()]);
    }
    let o = pkc(&bench);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let b: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
    assert_eq!(b["bytes_in"], 49152 + 393216 + 2 * 60, "{b}");
    assert_eq!(b["bytes_out"], w["bytes_out"]);
    // The static count runs the visit axis to its bound: 2 * 5 * 2 steps.
    let mut args = vec!["tune", "kernels/gmm.pk", "--no-aot", "--json"];
    args.extend(shape);
    let o = pkc_cached(cache.path(), &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = &json_lines(&o)[0];
    let c = r["best"]
        .as_array()
        .expect("ranked")
        .iter()
        .find(|c| c["params"]["tk"] == "128")
        .expect("tk=128 is ranked");
    assert_eq!(c["work"]["counted"], false);
    assert_eq!(c["work"]["grid_steps"], 20);
}

#[test]
fn the_model_counts_the_pages_ragged_paged_attention_copies_for_its_tables() {
    // tests/data/ragged_f32_mixed_gqa_tq20_bq16: 4 sequences, query rows
    // cu_q_lens [0, 5, 6, 6, 18] of kv_lens [21, 9, 0, 12], blocks of
    // bq = 16 query rows, pages of 8 tokens of f32[8, 32] = 1024 bytes, KH
    // = 2 heads. Block 0 (rows 0-15) holds sequence 0 (positions 16-20,
    // which see pages 0-2: 3 pages), 1 (position 8: pages 0-1, 2) and 3
    // (positions 0-9: pages 0-1, 2); block 1 (rows 16-19) sequence 3
    // (positions 10-11: pages 0-1, 2). 9 pages per head, keys and values:
    // 9 * 2 * 2 * 1024 = 36864 bytes, for any ppb (only pages a query
    // sees are copied).
    let d = "tests/data/ragged_f32_mixed_gqa_tq20_bq16";
    let tables: Vec<String> = ["cu_q_lens", "kv_lens", "page_indices", "num_seqs"]
        .iter()
        .map(|n| format!("{n}={d}/{n}.npy"))
        .collect();
    let shape = [
        "-p",
        "TQ=20",
        "-p",
        "S=6",
        "-p",
        "H=4",
        "-p",
        "KH=2",
        "-p",
        "D=32",
        "-p",
        "P=12",
        "-p",
        "page_size=8",
        "-p",
        "pages_per_seq=3",
        "-p",
        "bq=16",
        "-p",
        "T=f32",
    ];
    let cache = TempDir::new("tune-count-ragged");
    let mut args = vec![
        "tune",
        "kernels/ragged_paged_attention.pk",
        "--no-aot",
        "--json",
    ];
    args.extend(shape);
    for t in &tables {
        args.extend(["--in", t.as_str()]);
    }
    let o = pkc_cached(cache.path(), &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let ranked = by_ppb(&json_lines(&o)[0]);
    assert!(ranked.len() >= 2, "{ranked:?}");
    for (ppb, c) in &ranked {
        let w = &c["work"];
        assert_eq!(w["counted"], true, "ppb={ppb}");
        assert_eq!(w["approximate"], 0, "ppb={ppb}: {w}");
        assert_eq!(w["grid_steps"], 4, "ppb={ppb}: KH = 2 by 2 query blocks");
        assert_eq!(w["dma_bytes"], 36864, "ppb={ppb}: {w}");
    }
    // The CPU reference starts the same copies.
    for ppb in ["1", "2"] {
        let p = format!("ppb={ppb}");
        let mut bench = vec![
            "bench",
            "kernels/ragged_paged_attention.pk",
            "-p",
            &p,
            "--iters",
            "1",
            "--json",
        ];
        bench.extend(shape);
        for t in &tables {
            bench.extend(["--in", t.as_str()]);
        }
        let o = pkc(&bench);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let b: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
        assert_eq!(b["dma_bytes"], 36864, "{p}: {b}");
    }
}

#[test]
fn counting_needs_every_prefetch_array_in_the_shape_of_the_configuration() {
    let cache = TempDir::new("tune-count-errors");
    let lengths = ("lengths", "lengths_short.npy");
    // page_indices missing: the count cannot follow the page table.
    let o = tune_paged(cache.path(), &[lengths], &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        common::codes_in(&stderr(&o)),
        vec!["PK1005", "PK6002"],
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("--in page_indices="), "{}", stderr(&o));
    // A page table of [3, 4] where the kernel has [3, 8].
    let o = tune_paged(
        cache.path(),
        &[lengths, ("page_indices", "page_indices_wrong.npy")],
        &[],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        common::codes_in(&stderr(&o)).contains(&"PK1004".to_string()),
        "{}",
        stderr(&o)
    );
    // A name that is no input of the kernel.
    let o = tune_paged(
        cache.path(),
        &[
            lengths,
            ("page_indices", "page_indices.npy"),
            ("lens", "lengths_short.npy"),
        ],
        &[],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        common::codes_in(&stderr(&o)).contains(&"PK1006".to_string()),
        "{}",
        stderr(&o)
    );
    // An unreadable file is reported before anything is tuned.
    let o = tune_paged(cache.path(), &[("lengths", "missing.npy")], &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        common::codes_in(&stderr(&o)),
        vec!["PK1001"],
        "{}",
        stderr(&o)
    );
}

/// Checks that `text` is well-formed XML as far as the plot needs: every
/// start tag closed in order, and one root element. Returns the count of
/// each element name.
fn xml_elements(text: &str) -> Result<std::collections::BTreeMap<String, usize>, String> {
    let mut open: Vec<String> = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    let mut roots = 0;
    let mut rest = text;
    while let Some(lt) = rest.find('<') {
        let gt = rest[lt..].find('>').ok_or("a tag is not closed")? + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            match open.pop() {
                Some(o) if o == name.trim() => continue,
                other => return Err(format!("</{name}> closes {other:?}")),
            }
        }
        let name: String = tag
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '/')
            .collect();
        if name.is_empty() {
            return Err(format!("a tag without a name: <{tag}>"));
        }
        if open.is_empty() {
            roots += 1;
        }
        *counts.entry(name.clone()).or_insert(0) += 1;
        if !tag.ends_with('/') {
            open.push(name);
        }
    }
    if !open.is_empty() || roots != 1 {
        return Err(format!("unclosed {open:?}, {roots} root elements"));
    }
    Ok(counts)
}

#[test]
fn plot_draws_one_mark_per_configuration_of_every_target() {
    let dir = TempDir::new("tune-plot");
    let src = dir.file("copy.pk", COPY.as_bytes());
    let plot = dir.path().join("space.svg");
    let o = pkc_cached(
        &dir.path().join("cache"),
        &[
            "tune",
            src.to_str().expect("UTF-8 path"),
            "--no-aot",
            "--target",
            "v5e,v6e",
            "--plot",
            plot.to_str().expect("UTF-8 path"),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let svg = std::fs::read_to_string(&plot).expect("the plot is written");
    assert!(svg.contains("<svg"), "{svg}");
    let elements = xml_elements(&svg).unwrap_or_else(|e| panic!("{e}:\n{svg}"));
    // 4 configurations per target (bm in [8, 16] x bn in [128, 256]), one
    // pruned by the `where`: a circle each, on two panels.
    assert_eq!(elements.get("circle"), Some(&8), "{elements:?}");
    // The best configuration of each target is marked with a triangle.
    assert_eq!(elements.get("polygon"), Some(&2), "{elements:?}");
    assert!(svg.contains("copy on v5e") && svg.contains("copy on v6e"));
    // Written by renaming a finished temporary file: nothing else is left.
    let mut left = dir.entries();
    left.sort();
    assert_eq!(left, vec!["cache", "copy.pk", "space.svg"]);

    // A destination that cannot be written fails before any tuning.
    let o = pkc_cached(
        &dir.path().join("cache"),
        &[
            "tune",
            src.to_str().expect("UTF-8 path"),
            "--no-aot",
            "--plot",
            dir.path()
                .join("no/such/dir.svg")
                .to_str()
                .expect("UTF-8 path"),
        ],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        common::codes_in(&stderr(&o)),
        vec!["PK1007"],
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "nothing tuned: {}", stdout(&o));
}

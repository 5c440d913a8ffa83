//! `pkc tune --in`: counting mode. The work the model sees for kernels
//! driven by scalar prefetch (a paged-attention fixture, the library's
//! grouped matmul and ragged paged attention) against hand-computed counts
//! and against the bytes the CPU reference moves on the same inputs
//! (`pkc bench`), and the coded errors of inputs that do not fit.

mod common;

use common::{code, have_libtpu, pkc, stderr, stdout, TempDir};
use std::path::Path;
use std::process::{Command, Output};

/// `pkc` with `PK_TUNE_CACHE` set to `cache`.
fn pkc_cached(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pkc"))
        .args(args)
        .current_dir(common::root())
        .env("NO_COLOR", "1")
        .env("TPU_SKIP_MDS_QUERY", "1")
        .env("PK_TUNE_CACHE", cache)
        .env_remove("PK_LIBTPU")
        .output()
        .expect("pkc runs")
}

/// The configuration of a report (among the best shown, or the default)
/// with these parameter values.
fn reported<'r>(r: &'r serde_json::Value, params: &[(&str, i64)]) -> &'r serde_json::Value {
    r["best"]
        .as_array()
        .expect("ranked")
        .iter()
        .chain(std::iter::once(&r["default"]))
        .find(|c| params.iter().all(|(n, v)| c["params"][*n] == *v))
        .unwrap_or_else(|| panic!("{params:?} is reported: {r}"))
}

fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
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
            let ppb = c["params"]["ppb"].as_u64().expect("ppb, a number");
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
        // Each block is one round of the body's double buffer: its pages
        // waited for, then its dots.
        assert_eq!(w["dma_rounds"], blocks, "ppb={ppb}: {w}");
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
        .find(|c| c["params"]["tk"] == 128)
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
    let c = reported(r, &[("tk", 128)]);
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

#[test]
fn the_model_counts_the_key_blocks_causal_flash_attention_skips() {
    // kernels/flash.pk at its defaults (B1 H8 S=SK=2048, causal) with bq
    // = bk = 512: 4 x 4 blocks per head, of which the 10 at or below the
    // diagonal are computed (1 + 2 + 3 + 4), so each of the two dots runs
    // 8 * 10 = 80 times in the grid's 8 * 16 = 128 steps. The kernel's
    // control reads no array, so the count needs no --in. Not causal, all
    // 128 steps compute.
    let cache = TempDir::new("tune-count-flash");
    for (causal, dots) in [("true", 80), ("false", 128)] {
        let causal_p = format!("causal={causal}");
        let o = pkc_cached(
            cache.path(),
            &[
                "tune",
                "kernels/flash.pk",
                "-k",
                "flash_attention",
                "-p",
                causal_p.as_str(),
                "--no-aot",
                "--json",
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let r = &json_lines(&o)[0];
        let c = reported(r, &[("bq", 512), ("bk", 512)]);
        let w = &c["work"];
        assert_eq!(w["counted"], true, "{w}");
        assert_eq!(w["grid_steps"], 128, "{w}");
        assert_eq!(
            w["dots"],
            serde_json::json!([
                {"dtype": "bf16", "m": 512, "n": 512, "k": 128, "count": dots},
                {"dtype": "bf16", "m": 512, "n": 128, "k": 512, "count": dots},
            ]),
            "causal={causal}"
        );
    }
}

#[test]
fn the_model_counts_the_key_blocks_and_rounds_of_jax_ragged_attention() {
    // bench/ragged_paged_attention_jax.pk on tests/data/jax_ragged_bf16_gqa_
    // ppb2_bq16: query rows cu_q_lens [0, 5, 6, 18, 32] of kv_lens
    // [21, 9, 40, 14], blocks of bq = 16 rows, key blocks of ppb = 2 pages
    // of 16 tokens (32 tokens). Every sequence walks all its key blocks
    // from the first: block 0 (rows 0-15) holds sequences 0 (1 key block),
    // 1 (1) and 2 (2), block 1 (rows 16-31) sequences 2 (2) and 3 (1): 7
    // key blocks, each one round of the body's double buffer (start the
    // next block's pages, wait for this one's, compute) and 2 page copies
    // of [16 * 2 * KH, 128] bf16 = 16384 bytes: 229376 DMA bytes.
    let d = "tests/data/jax_ragged_bf16_gqa_ppb2_bq16";
    let tables: Vec<String> = ["cu_q_lens", "kv_lens", "page_indices", "num_seqs"]
        .iter()
        .map(|n| format!("{n}={d}/{n}.npy"))
        .collect();
    let shape = [
        "-p",
        "TQ=32",
        "-p",
        "S=5",
        "-p",
        "H=4",
        "-p",
        "KH=2",
        "-p",
        "P=16",
        "-p",
        "page_size=16",
        "-p",
        "pages_per_seq=4",
        "-p",
        "bq=16",
    ];
    let cache = TempDir::new("tune-count-jax-ragged");
    let mut args = vec![
        "tune",
        "bench/ragged_paged_attention_jax.pk",
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
    let w = &ranked[&2]["work"];
    assert_eq!(w["counted"], true);
    assert_eq!(w["approximate"], 0, "{w}");
    assert_eq!(w["grid_steps"], 2);
    assert_eq!(w["dma_rounds"], 7, "{w}");
    assert_eq!(w["dma_bytes"], 229376, "{w}");
    // Per key block and kv head, the whole query block's G = 2 heads:
    // scores [32, 128] x [128, 32] in bf16, probabilities times values
    // [32, 32] x [32, 128] in f32.
    assert_eq!(
        w["dots"],
        serde_json::json!([
            {"dtype": "bf16", "m": 32, "n": 32, "k": 128, "count": 14},
            {"dtype": "f32", "m": 32, "n": 128, "k": 32, "count": 14},
        ]),
    );
    // With one page a block (ppb = 1, 16 tokens) the sequences have 2, 1,
    // 3 and 1 blocks: block 0 walks 2 + 1 + 3, block 1 3 + 1: 10 rounds.
    assert_eq!(ranked[&1]["work"]["dma_rounds"], 10);
    // The schedule model counts on the same inputs (it read none before).
    if have_libtpu() {
        let mut args = vec![
            "tune",
            "bench/ragged_paged_attention_jax.pk",
            "--eval",
            "schedule",
            "--screen",
            "none",
            "--json",
        ];
        args.extend(shape);
        for t in &tables {
            args.extend(["--in", t.as_str()]);
        }
        let o = pkc_cached(cache.path(), &args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let r = &json_lines(&o)[0];
        assert_eq!(r["evaluator"], "schedule", "{r}");
        let scheduled = by_ppb(r);
        let w = &scheduled[&2]["work"];
        assert_eq!(w["counted"], true, "{w}");
        assert_eq!(w["dma_rounds"], 7, "{w}");
        assert_eq!(scheduled[&1]["work"]["dma_rounds"], 10);
    }
    // The CPU reference starts the same copies.
    let mut bench = vec![
        "bench",
        "bench/ragged_paged_attention_jax.pk",
        "-p",
        "ppb=2",
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
    assert_eq!(b["dma_bytes"], 229376, "{b}");
}

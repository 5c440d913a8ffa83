//! The tuning spaces the library declares hold the configurations people
//! run: block sizes up to the whole dimension (quantized matmuls, grouped
//! matmuls), the query block of ragged paged attention, and candidate lists
//! that join powers of two with a dimension that is not one
//! (`[pow2(128, K), K]`). Every expected space below is derived by hand
//! from the declarations and the shapes given.

mod common;

use common::{code, root, stderr, stdout, TempDir};
use serde_json::Value;
use std::process::Command;

/// The JSON report of `pkc tune --no-aot` on `target` (the checker, the
/// lowering and the static count only), with its own cache folder.
fn space(file: &str, args: &[&str]) -> Value {
    let cache = TempDir::new("tune-spaces");
    let o = Command::new(env!("CARGO_BIN_EXE_pkc"))
        .args(["tune", file, "--no-aot", "--json", "-t", "v6e"])
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env("PK_TUNE_CACHE", cache.path())
        .output()
        .expect("pkc runs");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    serde_json::from_str(stdout(&o).lines().next().expect("a report")).expect("JSON")
}

/// The candidates of each tuned parameter, by name.
fn axes(r: &Value) -> Vec<(String, Vec<i64>, i64)> {
    r["axes"]
        .as_array()
        .expect("axes")
        .iter()
        .map(|a| {
            let c = a["candidates"].as_array().expect("candidates");
            (
                a["name"].as_str().expect("name").to_string(),
                c.iter().map(|v| v.as_i64().expect("int")).collect(),
                a["default"].as_i64().expect("default"),
            )
        })
        .collect()
}

fn axis(name: &str, candidates: &[i64], default: i64) -> (String, Vec<i64>, i64) {
    (name.to_string(), candidates.to_vec(), default)
}

#[test]
fn a_candidate_list_joins_powers_of_two_and_the_whole_dimension() {
    let dir = TempDir::new("tune-spaces-list");
    let src = "kernel tiled<K = 384, bk = min(256, K) in [pow2(128, K), K]>(\n    \
               x: f32[8, K] block [8, bk] at (0, k),\n) -> y: f32[8, K] block [8, bk] at (0, k)\n\
               grid (k in cdiv(K, bk) parallel)\n{\n    y[..] = x[..];\n}\n";
    let file = dir.file("tiled.pk", src.as_bytes());
    let file = file.to_str().expect("UTF-8 path");
    // 128 and 256 are the powers of two up to 384; 384 is K itself.
    let r = space(file, &[]);
    assert_eq!(axes(&r), [axis("bk", &[128, 256, 384], 256)], "{r}");
    // No power of two lies in 128..=64: the list still holds K, and the
    // default follows it.
    let r = space(file, &["-p", "K=64"]);
    assert_eq!(axes(&r), [axis("bk", &[64], 64)], "{r}");
    // A power-of-two K is not listed twice.
    let r = space(file, &["-p", "K=512"]);
    assert_eq!(axes(&r), [axis("bk", &[128, 256, 512], 256)], "{r}");
}

#[test]
fn the_quantized_matmuls_tune_their_blocks_up_to_the_whole_dimensions() {
    // M = 1024, K = N = 4096: bm in {128 .. 1024} (4 values), bn and bk in
    // {128 .. 4096} (6 each), every combination a kernel: 4 * 6 * 6 = 144.
    for kernel in ["qmatmul_w8a8", "qmatmul_fp8"] {
        // Two sampled configurations are enough to read the space.
        let r = space("kernels/qmatmul.pk", &["-k", kernel, "--budget", "2"]);
        let pow2_to_4096 = [128, 256, 512, 1024, 2048, 4096];
        let bk_default = if kernel == "qmatmul_w8a8" { 1024 } else { 512 };
        assert_eq!(
            axes(&r),
            [
                axis("bm", &[128, 256, 512, 1024], 256),
                axis("bn", &pow2_to_4096, 512),
                axis("bk", &pow2_to_4096, bk_default),
            ],
            "{kernel}: {r}"
        );
        assert_eq!(r["space"], 144, "{kernel}: {r}");
    }
    // A decode batch of 16 rows: the row block is the whole of M.
    let r = space(
        "kernels/qmatmul.pk",
        &[
            "-k",
            "qmatmul_w8a8",
            "-p",
            "M=16",
            "-p",
            "N=1024",
            "-p",
            "K=1024",
        ],
    );
    let pow2_to_1024 = [128, 256, 512, 1024];
    assert_eq!(
        axes(&r),
        [
            axis("bm", &[16], 16),
            axis("bn", &pow2_to_1024, 512),
            axis("bk", &pow2_to_1024, 1024),
        ],
        "{r}"
    );
}

#[test]
fn the_grouped_matmuls_tune_rows_and_blocks_up_to_the_whole_dimensions() {
    // An MoE projection with K = 3000 (not a power of two) and N = 256.
    for kernel in ["gmm", "tgmm"] {
        let r = space(
            "kernels/gmm.pk",
            &["-k", kernel, "-p", "M=512", "-p", "K=3000", "-p", "N=256"],
        );
        assert_eq!(
            axes(&r),
            [
                axis("tm", &[128, 256, 512], 512),
                axis("tk", &[128, 256, 512, 1024, 2048, 3000], 512),
                axis("tn", &[128, 256], 256),
            ],
            "{kernel}: {r}"
        );
    }
}

#[test]
fn ragged_paged_attention_tunes_its_query_block_with_its_pages_per_block() {
    // TQ = 512 query tokens: bq in the powers of two 8 .. 512, ppb in
    // {1, 2, 4, 8, 16}. bf16 queries are read in chunks of 16 rows, so bq
    // of 8 breaks the kernel's `bq % bc == 0` and is pruned: 6 * 5 ranked.
    let r = space("kernels/ragged_paged_attention.pk", &[]);
    assert_eq!(
        axes(&r),
        [
            axis("bq", &[8, 16, 32, 64, 128, 256, 512], 32),
            axis("ppb", &[1, 2, 4, 8, 16], 8),
        ],
        "{r}"
    );
    assert_eq!(r["space"], 35, "{r}");
    assert_eq!(r["ranked"], 30, "{r}");
}

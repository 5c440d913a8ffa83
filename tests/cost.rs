//! The IR cost model against hand-derived counts for the starter kernels.

mod common;

use pk_lang::ir::cost::{estimate, Cost};
use pk_lang::Options;

fn cost_of(file: &str, params: &[(&str, &str)]) -> Cost {
    let opts = Options {
        specialise: true,
        params: params
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        ..Options::default()
    };
    let m = pk_lang::compile_file(&common::root().join(file), &opts)
        .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
    estimate(&m.kernels[0])
}

#[test]
fn add_moves_every_block_once() {
    // 1024 x 1024 f32 in 256 x 512 blocks: 8 steps, one add per element,
    // x, y and z each cross HBM once (4 MiB each).
    let c = cost_of("kernels/add.pk", &[]);
    assert_eq!(
        c,
        Cost {
            flops: 1024 * 1024,
            transcendentals: 0,
            bytes_accessed: 3 * 4 * 1024 * 1024,
            remote_bytes: 0,
        }
    );
}

#[test]
fn matmul_counts_mxu_flops_and_revisits() {
    // Grid (4, 4, 2). Per step: dot 2*256*256*512 flops + the accumulator add
    // (256*256). a's and b's block indices change every step (32 fetches of
    // 256 KiB bf16 blocks each); c's block (i, j) changes every 2 steps
    // (16 write-backs of 256 KiB f32 blocks).
    let c = cost_of("kernels/matmul.pk", &[]);
    let per_step = 2 * 256 * 256 * 512 + 256 * 256;
    assert_eq!(c.flops, 32 * per_step);
    assert_eq!(
        c.bytes_accessed,
        32 * 256 * 512 * 2 + 32 * 512 * 256 * 2 + 16 * 256 * 256 * 4
    );
    assert_eq!(c.transcendentals, 0);
}

#[test]
fn softmax_counts_one_exp_per_element() {
    // 8 steps of 128 x 1024: max, subtract, exp, sum, divide per element.
    let c = cost_of("kernels/softmax.pk", &[]);
    assert_eq!(c.flops, 5 * 1024 * 1024);
    assert_eq!(c.transcendentals, 1024 * 1024);
    assert_eq!(c.bytes_accessed, 2 * 4 * 1024 * 1024);
}

#[test]
fn specialisation_changes_the_counts() {
    let c = cost_of(
        "kernels/matmul.pk",
        &[
            ("M", "512"),
            ("N", "256"),
            ("K", "2048"),
            ("T", "f32"),
            ("bn", "256"),
        ],
    );
    // Grid (2, 1, 4); f32 inputs are 4 bytes.
    let per_step = 2 * 256 * 256 * 512 + 256 * 256;
    assert_eq!(c.flops, 8 * per_step);
    assert_eq!(
        c.bytes_accessed,
        8 * 256 * 512 * 4 + 8 * 512 * 256 * 4 + 2 * 256 * 256 * 4
    );
}

fn cost_of_text(text: &str, params: &[(&str, &str)]) -> Cost {
    let opts = Options {
        specialise: true,
        params: params
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        ..Options::default()
    };
    let m = pk_lang::compile_source("cost.pk", text, &opts)
        .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
    estimate(&m.kernels[0])
}

const WIDEN: &str = "
kernel widen<M = 1024, N = 1024, bm = 256, bn = 512, plain: bool = true>(
    x: bf16[M, N] block [bm, bn] at (i, j),
) -> y: f32[M, N] block [bm, bn] at (i, j)
grid (i in M / bm parallel, j in N / bn parallel)
{
    if plain {
        y[..] = x[..] as f32;
    } else {
        y[..] = exp(x[..] as f32);
    }
}
";

#[test]
fn a_cast_is_one_flop_per_element_and_a_fixed_branch_is_the_one_run() {
    // XLA counts a convert as an elementwise op: one flop per element.
    // `plain` is fixed when the kernel is specialised, so only its branch
    // runs: the cast alone, no exp.
    let c = cost_of_text(WIDEN, &[]);
    assert_eq!(c.flops, 1024 * 1024);
    assert_eq!(c.transcendentals, 0);
    // x is bf16 (2 bytes), y f32 (4 bytes), each block moved once.
    assert_eq!(c.bytes_accessed, 1024 * 1024 * (2 + 4));
    // The other branch: a cast and an exp per element.
    let c = cost_of_text(WIDEN, &[("plain", "false")]);
    assert_eq!(c.flops, 2 * 1024 * 1024);
    assert_eq!(c.transcendentals, 1024 * 1024);
}

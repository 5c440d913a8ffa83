//! The CPU reference at the sizes `bench/compare.py` uses: matmul f32 and
//! bf16 -> f32 at 1024^3 and row softmax f32 at 4096 x 4096. Each
//! iteration is one full run (block copies in and out, the grid,
//! write-back) on all cores.
//!
//! `cargo bench --bench cpu`; `python3 bench/compare.py` sets the numbers
//! against numpy.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pk_runtime::cpu::{CpuKernel, HostArray, RunOptions};
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn kernel(file: &str, params: &[(&str, &str)]) -> CpuKernel {
    let opts = pk_lang::Options {
        params: params
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        specialise: true,
        ..Default::default()
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let m = match pk_lang::Session::open(&path).and_then(|s| s.check(&opts)) {
        Ok(m) => m,
        Err(f) => panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)),
    };
    let w =
        pk_lowering::wasm::lower(&m.kernels[0], &m.sources, &Default::default()).expect("lowers");
    CpuKernel::from_lowered(&w, false).expect("compiles")
}

fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32
                / (1 << 24) as f32
                - 0.5
        })
        .collect()
}

fn run(c: &mut Criterion, name: &str, k: &CpuKernel, inputs: Vec<HostArray>, t: Throughput) {
    let inputs: Vec<Arc<HostArray>> = inputs.into_iter().map(Arc::new).collect();
    let opts = RunOptions::default();
    let mut g = c.benchmark_group("cpu");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(5))
        .throughput(t);
    g.bench_function(name, |b| {
        b.iter(|| black_box(k.run_shared(&inputs, &opts).expect("runs")))
    });
    g.finish();
}

fn matmul(c: &mut Criterion) {
    let n = 1024;
    for t in ["f32", "bf16"] {
        let k = kernel("kernels/matmul.pk", &[("T", t)]);
        let (a, b) = (values(n * n, 1), values(n * n, 2));
        let mk = |v: &[f32]| {
            if t == "f32" {
                HostArray::from_f32(&[n, n], v)
            } else {
                HostArray::bf16_from_f32(&[n, n], v)
            }
        };
        run(
            c,
            &format!("matmul_{t}_1024"),
            &k,
            vec![mk(&a), mk(&b)],
            Throughput::Elements(2 * (n as u64).pow(3)),
        );
    }
}

fn softmax(c: &mut Criterion) {
    let k = kernel(
        "kernels/softmax.pk",
        &[("R", "4096"), ("C", "4096"), ("br", "8")],
    );
    let x = HostArray::from_f32(&[4096, 4096], &values(4096 * 4096, 3));
    run(
        c,
        "softmax_f32_4096",
        &k,
        vec![x],
        Throughput::Bytes(2 * 4 * 4096 * 4096),
    );
}

criterion_group!(benches, matmul, softmax);
criterion_main!(benches);

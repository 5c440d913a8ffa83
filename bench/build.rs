//! How long `pkc build` takes: source to StableHLO text (check, Mosaic
//! lowering, wrapping), the same plus the WebAssembly reference, the whole
//! package without `--aot` (all of that and the atomic, flushed write), and
//! libtpu's ahead-of-time compile of each starter kernel for each TPU
//! generation.
//!
//! `cargo bench --bench build`; medians are in
//! `target/criterion/<group>/<bench>/new/estimates.json`. The libtpu group
//! is skipped, with a notice, when libtpu is not installed.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use pk_runtime::package::build::{build_file, compile_aot, BuildOptions, BuiltKernel};
use pk_runtime::pjrt::{Plugin, TpuTarget};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

const KERNELS: [&str; 3] = ["add", "matmul", "softmax"];

fn kernel_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("kernels")
        .join(format!("{name}.pk"))
}

fn build(name: &str, cpu_reference: bool) -> BuiltKernel {
    let opts = BuildOptions {
        cpu_reference,
        ..BuildOptions::default()
    };
    match build_file(&kernel_path(name), &opts) {
        Ok(mut b) if !b.kernels.is_empty() => b.kernels.remove(0),
        Ok(_) => panic!("{name}.pk has no kernel"),
        Err(f) => panic!(
            "{name}.pk does not build:\n{}",
            f.render(pk_lang::diag::RenderStyle::Plain)
        ),
    }
}

fn source_to_stablehlo(c: &mut Criterion) {
    let mut g = c.benchmark_group("stablehlo");
    for name in KERNELS {
        g.bench_function(name, |b| {
            b.iter(|| black_box(build(name, false).package.stablehlo().len()))
        });
    }
    g.finish();
}

fn with_cpu_reference(c: &mut Criterion) {
    let mut g = c.benchmark_group("with_wasm");
    for name in KERNELS {
        g.bench_function(name, |b| {
            b.iter(|| black_box(build(name, true).package.cpu_reference.is_some()))
        });
    }
    g.finish();
}

fn whole_package(c: &mut Criterion) {
    let out = tempfile::tempdir().expect("a temp dir");
    let mut g = c.benchmark_group("package");
    for name in KERNELS {
        let dest = out.path().join(name);
        g.bench_function(name, |b| {
            b.iter(|| {
                let k = build(name, true);
                black_box(k.package.write(&dest).expect("write the package"));
            })
        });
    }
    g.finish();
}

fn libtpu_compile(c: &mut Criterion) {
    let plugin = match Plugin::load(None) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("notice: skipping the libtpu benchmarks: {e}");
            return;
        }
    };
    let mut g = c.benchmark_group("libtpu");
    // Each compile takes tens of milliseconds; ten samples over two seconds
    // give a stable median without making the run take minutes.
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for name in KERNELS {
        let k = build(name, false);
        for &t in TpuTarget::all() {
            g.bench_with_input(BenchmarkId::new(name, t.name()), &t, |b, &t| {
                b.iter(|| {
                    black_box(
                        compile_aot(plugin, &k, t, false).expect("libtpu compiles the kernel"),
                    )
                })
            });
        }
    }
    g.finish();
}

criterion_group!(
    benches,
    source_to_stablehlo,
    with_cpu_reference,
    whole_package,
    libtpu_compile
);
criterion_main!(benches);

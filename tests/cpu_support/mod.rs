//! Helpers of the CPU reference tests: compiling a `.pk` kernel with
//! parameters, reading arrays, comparing like numpy's `assert_allclose`.

#![allow(dead_code)]

use pk_runtime::cpu::{CpuKernel, Error, HostArray, RunOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `pkc` arguments naming the add kernel of the `add_16x256` fixture.
pub const ADD: [&str; 9] = [
    "kernels/add.pk",
    "-p",
    "M=16",
    "-p",
    "N=256",
    "-p",
    "bm=8",
    "-p",
    "bn=128",
];

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Lowers the first kernel of a file (default parameters) to Wasm.
pub fn lower(file: &str) -> pk_lowering::wasm::WasmKernel {
    let opts = pk_lang::Options {
        specialise: true,
        ..Default::default()
    };
    let m = pk_lang::Session::open(&root().join(file))
        .and_then(|s| s.check(&opts))
        .expect("compiles");
    pk_lowering::wasm::lower(&m.kernels[0], &m.sources, &Default::default()).expect("lowers")
}

/// Compiles the (only or named) kernel of a file for the CPU reference.
pub fn try_build(
    file: &Path,
    params: &[(&str, &str)],
    check_uninit: bool,
) -> Result<CpuKernel, Error> {
    try_build_kernel(file, None, params, check_uninit)
}

/// Compiles kernel `kernel` of a file (the first one when `None`) for the
/// CPU reference.
pub fn try_build_kernel(
    file: &Path,
    kernel: Option<&str>,
    params: &[(&str, &str)],
    check_uninit: bool,
) -> Result<CpuKernel, Error> {
    let opts = pk_lang::Options {
        kernel: kernel.map(str::to_string),
        params: params
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        specialise: true,
        ..Default::default()
    };
    let m = pk_lang::Session::open(file)
        .and_then(|s| s.check(&opts))
        .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
    let w = pk_lowering::wasm::lower(
        &m.kernels[0],
        &m.sources,
        &pk_lowering::wasm::Options {
            check_uninit,
            ..Default::default()
        },
    )
    .map_err(|e| Error::from_lowering(&e, &m.sources))?;
    CpuKernel::from_lowered(&w, false)
}

pub fn build(file: &str, params: &[(&str, &str)]) -> CpuKernel {
    try_build(&root().join(file), params, false).unwrap_or_else(|e| panic!("{e}"))
}

pub fn threads(n: usize) -> RunOptions {
    RunOptions {
        threads: n,
        ..RunOptions::default()
    }
}

pub fn read(k: &CpuKernel, name: &str, path: &Path) -> HostArray {
    let (i, _) = k
        .inputs()
        .find(|(_, o)| o.name == name)
        .unwrap_or_else(|| panic!("no input {name}"));
    k.read_input(i, path).unwrap_or_else(|e| panic!("{e}"))
}

/// Asserts `|a - e| <= atol + rtol |e|` elementwise (NaN equals NaN).
pub fn assert_close(what: &str, got: &[f64], want: &[f64], rtol: f64, atol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let mut bad = 0;
    let mut worst = (0.0f64, 0usize);
    for (i, (&a, &e)) in got.iter().zip(want).enumerate() {
        let ok = (a.is_nan() && e.is_nan()) || a == e || (a - e).abs() <= atol + rtol * e.abs();
        if !ok {
            bad += 1;
            let d = (a - e).abs();
            if d.is_nan() || d > worst.0 {
                worst = (d, i);
            }
        }
    }
    assert!(
        bad == 0,
        "{what}: {bad}/{} elements differ; worst at {}: got {}, expected {}",
        got.len(),
        worst.1,
        got[worst.1],
        want[worst.1]
    );
}

/// Runs `pkc` (this build's) from the repository root, with plain output.
pub fn pkc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pkc"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("pkc runs")
}

/// What a `pkc` run printed, stdout then stderr.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

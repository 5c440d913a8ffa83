//! `pkc run --device tpu` and `pkc test --device tpu`.
//!
//! On a host without a TPU (CI, developers' machines) a TPU run builds the
//! kernel's StableHLO and checks the input files exactly as a CPU run does,
//! then fails with `PK2009` (or `PK2001` where libtpu is not installed)
//! without writing anything. On a TPU host the same tests check that the
//! kernel runs and matches the numpy fixture.

mod common;
mod cpu_support;

use common::{code, pkc, stderr, TempDir};
use cpu_support::ADD;
use pk_runtime::cpu::npy;
use pk_runtime::pjrt::locate_libtpu;
use std::process::Output;
use std::sync::{Mutex, PoisonError};

const X: &str = "x=tests/data/add_16x256/x.npy";
const Y: &str = "y=tests/data/add_16x256/y.npy";
const Z: &str = "tests/data/add_16x256/z_expected.npy";

fn has_tpu() -> bool {
    std::path::Path::new("/dev/accel0").exists() || std::path::Path::new("/dev/vfio/0").exists()
}

/// On a TPU host libtpu lets one process at a time open the TPU, so the
/// tests that start a `pkc` which may load libtpu take turns.
static LIBTPU: Mutex<()> = Mutex::new(());

/// Runs `pkc` with `args`, alone among the tests that may load libtpu.
fn pkc_alone(args: &[&str]) -> Output {
    let _turn = LIBTPU.lock().unwrap_or_else(PoisonError::into_inner);
    pkc(args)
}

/// `pkc run kernels/add.pk ... --device tpu` with `extra` arguments.
fn run_add_on_tpu(extra: &[&str]) -> Output {
    let mut args = vec!["run"];
    args.extend(ADD);
    args.extend(["--device", "tpu"]);
    args.extend(extra);
    pkc_alone(&args)
}

/// The diagnostic of a TPU run on this host: `PK2009` where libtpu is
/// installed (always in CI), `PK2001` where it is not.
fn assert_no_tpu_error(o: &Output) {
    let err = stderr(o);
    // Exit 5: the TPU toolchain (libtpu, or a TPU) is not there.
    assert_eq!(code(o), 5, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    if locate_libtpu(None).is_ok() || std::env::var("CI").as_deref() == Ok("true") {
        assert!(err.contains("PK2009"), "{err}");
        assert!(
            err.contains("no TPU device attached; AOT compile works, execution needs a TPU host"),
            "{err}"
        );
        assert!(err.contains("--device cpu"), "{err}");
    } else {
        assert!(err.contains("PK2001"), "{err}");
    }
}

#[test]
fn run_on_tpu_without_one_fails_clearly_and_writes_nothing() {
    let dir = TempDir::new("device-run");
    let out = format!("z={}/z.npy", dir.arg());
    let o = run_add_on_tpu(&["--in", X, "--in", Y, "--out", &out]);
    if has_tpu() {
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let got = npy::read(&dir.path().join("z.npy")).expect("written");
        let want = npy::read(&common::root().join(Z)).expect("fixture");
        assert_eq!(got.data, want.data);
        return;
    }
    assert_no_tpu_error(&o);
    assert!(dir.entries().is_empty(), "{:?}", dir.entries());
}

#[test]
fn test_on_tpu_without_one_fails_clearly() {
    let mut args = vec!["test"];
    args.extend(ADD);
    let expect = format!("z={Z}");
    args.extend(["--device", "tpu", "--in", X, "--in", Y, "--expect", &expect]);
    let o = pkc_alone(&args);
    if has_tpu() {
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        return;
    }
    assert_no_tpu_error(&o);
}

/// The kernel is built and every file is checked before libtpu is asked
/// for a TPU, with the same diagnostics as on the CPU reference.
#[test]
fn tpu_runs_check_the_kernel_and_files_first() {
    let dir = TempDir::new("device-check");
    let out = format!("z={}/z.npy", dir.arg());
    let cases: [(&[&str], &str); 4] = [
        // The input of another kernel, shaped differently.
        (
            &[
                "--in",
                "x=tests/data/matmul_f32_64x128x256/a.npy",
                "--in",
                Y,
            ],
            "PK1004",
        ),
        (&["--in", X], "PK1005"),
        (&["--in", X, "--in", Y, "--in", "w=w.npy"], "PK1006"),
        (&["--in", X, "--in", Y, "--out", "w=w.npy"], "PK1006"),
    ];
    // A block that breaks the TPU's tiling rules.
    let mut bad_block = vec!["run", "kernels/add.pk", "-p", "M=16", "-p", "N=256"];
    bad_block.extend([
        "-p", "bm=8", "-p", "bn=100", "--device", "tpu", "--in", X, "--in", Y,
    ]);
    let runs = cases
        .iter()
        .map(|&(extra, want)| {
            let mut args = extra.to_vec();
            args.extend(["--out", &out]);
            (format!("{extra:?}"), run_add_on_tpu(&args), want)
        })
        .chain([("bn=100".to_string(), pkc_alone(&bad_block), "PK0301")]);
    for (extra, o, want) in runs {
        let err = stderr(&o);
        assert_eq!(code(&o), 1, "{extra}: {err}");
        assert!(err.contains(want), "{extra}: {err}");
        assert!(!err.contains("PK2009"), "{extra}: {err}");
        assert!(dir.entries().is_empty(), "{extra}");
    }
}

#[test]
fn cpu_reference_options_are_refused_on_tpu() {
    for flag in [
        &["--threads", "2"][..],
        &["--fuel", "100"],
        &["--check-uninit"],
    ] {
        let o = run_add_on_tpu(flag);
        assert_eq!(code(&o), 2, "{flag:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("PK4002") && stderr(&o).contains("does not apply to --device tpu"),
            "{}",
            stderr(&o)
        );
    }
    let mut args = vec!["run"];
    args.extend(ADD);
    args.extend(["--libtpu", "/nonexistent/libtpu.so", "--in", X, "--in", Y]);
    let o = pkc_alone(&args);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--libtpu does not apply without --device tpu"));
}

#[test]
fn a_package_directory_runs_on_the_cpu_only() {
    let dir = TempDir::new("device-package");
    let o = pkc(&["run", dir.arg(), "--device", "tpu", "--in", X]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("PK4002") && stderr(&o).contains("runs on the CPU reference"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_explicit_missing_libtpu_is_reported() {
    let o = run_add_on_tpu(&["--libtpu", "/nonexistent/libtpu.so", "--in", X, "--in", Y]);
    let err = stderr(&o);
    assert_eq!(code(&o), 5, "{err}");
    assert!(err.contains("PK2001"), "{err}");
    assert!(err.contains("/nonexistent/libtpu.so"), "{err}");
}

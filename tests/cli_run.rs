//! `pkc run` and `pkc bench` on the CPU reference, end to end: the wall-clock
//! limit, the host memory check, `--check-uninit` on MXU-only blocks, and
//! what `pkc bench` measures.

mod cpu_support;

use cpu_support::{assert_close, root};
use pk_lang::ir::DType;
use pk_runtime::cpu::{npy, HostArray};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn pkc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pkc"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("pkc runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn timed(args: &[&str]) -> (Output, Duration) {
    let t = Instant::now();
    let o = pkc(args);
    (o, t.elapsed())
}

/// A kernel that loops forever on every unit of a parallel grid, with two
/// pinned workers keeping both CPUs busy, stops at the one-second limit:
/// within 10% + 100 ms of it, on top of what compiling the kernel takes
/// (measured by the same command failing right after that).
#[test]
fn timeout_is_wall_clock_under_load() {
    let dir = tempfile::tempdir().expect("temp dir");
    let x = dir.path().join("x.npy");
    npy::write(&x, &HostArray::zeros(DType::I32, &[64, 128])).expect("write x");
    let x_arg = format!("x={}", x.display());
    let kernel = "tests/cpu/spin_parallel.pk";
    // The same compile, stopped by an unknown output name before the
    // kernel runs.
    let (base, setup) = timed(&[
        "run", kernel, "--in", &x_arg, "--threads", "2", "--out", "nope=n.npy",
    ]);
    assert_eq!(code(&base), 1, "{}", text(&base));
    let (o, took) = timed(&[
        "run", kernel, "--in", &x_arg, "--threads", "2", "--timeout", "1",
    ]);
    let t = text(&o);
    assert_eq!(code(&o), 4, "{t}");
    assert!(t.contains("PK1015"), "{t}");
    assert!(t.contains("did not finish within the time limit"), "{t}");
    let run = took.saturating_sub(setup);
    assert!(
        took >= Duration::from_secs(1) && run <= Duration::from_millis(1200),
        "stopped after {took:?} ({setup:?} of it before the run)"
    );
}

/// Limits that are not a positive, finite number of seconds are usage
/// errors with a hint, before anything is compiled; `none` is no limit.
#[test]
fn invalid_timeouts_are_usage_errors() {
    for bad in ["0", "-1", "nan", "inf", "1e300", "abc", ""] {
        let flag = format!("--timeout={bad}");
        let o = pkc(&["run", "kernels/add.pk", &flag]);
        assert_eq!(code(&o), 2, "{bad}: {}", text(&o));
        assert!(text(&o).contains("--timeout"), "{bad}: {}", text(&o));
    }
    let o = pkc(&["run", "kernels/add.pk", "--timeout", "0"]);
    assert!(text(&o).contains("say `none`"), "{}", text(&o));
    // With `none`, and with a fractional limit, the run goes on to the
    // next check: the missing input.
    for ok in ["none", "2.5"] {
        let o = pkc(&["run", "kernels/add.pk", "--timeout", ok]);
        assert_eq!(code(&o), 1, "{ok}: {}", text(&o));
        assert!(text(&o).contains("PK1005"), "{ok}: {}", text(&o));
    }
}

/// `kernels/matmul.pk` reads its input blocks in place for the MXU; with
/// `--check-uninit` those blocks count as written, and the product matches
/// numpy's (tests/gen_expected.py), for f32 and bf16 inputs.
#[test]
fn check_uninit_runs_matmul_with_blocks_read_in_place() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = [
        ("matmul_f32_96x384x384_grid3x3x3", "96", "384", "384", "f32"),
        ("matmul_bf16_96x384x256_grid3x3x2", "96", "384", "256", "bf16"),
    ];
    for (case, m, n, k, t) in cases {
        let data = Path::new("tests/data").join(case);
        let a = format!("a={}", data.join("a.npy").display());
        let b = format!("b={}", data.join("b.npy").display());
        let out = dir.path().join(format!("{case}.npy"));
        let c = format!("c={}", out.display());
        let p = |name: &str, v: &str| format!("{name}={v}");
        let (pm, pn, pk, pt) = (p("M", m), p("N", n), p("K", k), p("T", t));
        let o = pkc(&[
            "run",
            "kernels/matmul.pk",
            "-p",
            &pm,
            "-p",
            &pn,
            "-p",
            &pk,
            "-p",
            "bm=32",
            "-p",
            "bn=128",
            "-p",
            "bk=128",
            "-p",
            &pt,
            "--in",
            &a,
            "--in",
            &b,
            "--out",
            &c,
            "--check-uninit",
        ]);
        assert_eq!(code(&o), 0, "{case}: {}", text(&o));
        let got = npy::values(&npy::read(&out).expect("output"), DType::F32);
        let want = npy::values(
            &npy::read(&root().join(data.join("c_expected.npy"))).expect("expected"),
            DType::F32,
        );
        assert_close(case, &got, &want, 1e-5, 1e-4);
    }
}

//! `pkc run`, `pkc test`, `pkc bench` and `pkc emit wat` end to end, with
//! the numpy fixtures of tests/data/ (see tests/gen_expected.py).

mod cpu_support;

use cpu_support::{pkc, root, text, ADD};
use pk_lang::ir::DType;
use pk_runtime::cpu::{npy, HostArray};

#[test]
fn run_writes_outputs_atomically() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("z.npy");
    let out_arg = format!("z={}", out.display());
    let mut args = vec!["run"];
    args.extend(ADD);
    args.extend([
        "--in",
        "x=tests/data/add_16x256/x.npy",
        "--in",
        "y=tests/data/add_16x256/y.npy",
        "--out",
        &out_arg,
    ]);
    let o = pkc(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let got = npy::read(&out).expect("written");
    let want = npy::read(&root().join("tests/data/add_16x256/z_expected.npy")).expect("fixture");
    assert_eq!(got.data, want.data);
    // Only the output itself is left in the directory (no temporary file).
    assert_eq!(
        std::fs::read_dir(dir.path())
            .map(|d| d.count())
            .unwrap_or(0),
        1
    );
}

#[test]
fn test_compares_with_tolerances() {
    let case = "tests/data/matmul_bf16_64x256x512";
    let mut args = vec!["test", "kernels/matmul.pk"];
    for p in [
        "M=64", "N=256", "K=512", "bm=32", "bn=128", "bk=256", "T=bf16",
    ] {
        args.extend(["-p", p]);
    }
    let a = format!("a={case}/a.npy");
    let b = format!("b={case}/b.npy");
    let c = format!("c={case}/c_expected.npy");
    let mut ok = args.clone();
    ok.extend([
        "--in", &a, "--in", &b, "--expect", &c, "--rtol", "1e-5", "--atol", "1e-4",
    ]);
    let o = pkc(&ok);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("c: ok"), "{}", text(&o));
    // With no tolerance, f32 summation order shows: exit 3 (a mismatch),
    // with the error statistics and the worst index.
    let mut exact = args.clone();
    exact.extend([
        "--in", &a, "--in", &b, "--expect", &c, "--rtol", "0", "--atol", "0",
    ]);
    let o = pkc(&exact);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("c: MISMATCH") && text(&o).contains("worst at ("));
    let mut wrong = args;
    let other = "c=tests/data/matmul_bf16_96x384x256_grid3x3x2/c_expected.npy".to_string();
    wrong.extend(["--in", &a, "--in", &b, "--expect", &other]);
    let o = pkc(&wrong);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("PK1004"), "{}", text(&o));
}

#[test]
fn test_reports_a_mismatch() {
    let mut args = vec!["test"];
    args.extend(ADD);
    args.extend([
        "--in",
        "x=tests/data/add_16x256/x.npy",
        "--in",
        "y=tests/data/add_16x256/x.npy",
        "--expect",
        "z=tests/data/add_16x256/z_expected.npy",
    ]);
    let o = pkc(&args);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("MISMATCH") && t.contains("max abs error") && t.contains("worst at ("),
        "{t}"
    );
}

#[test]
fn operand_errors_are_coded() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A float64 file: numpy's default dtype.
    let f64_path = dir.path().join("x64.npy");
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    let h = "{'descr': '<f8', 'fortran_order': False, 'shape': (16, 256), }";
    bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
    bytes.extend_from_slice(h.as_bytes());
    bytes.extend(std::iter::repeat_n(0u8, 16 * 256 * 8));
    std::fs::write(&f64_path, bytes).expect("written");
    let small = dir.path().join("small.npy");
    std::fs::write(
        &small,
        npy::to_bytes(&HostArray::zeros(DType::F32, &[8, 256])),
    )
    .expect("written");
    let f64_arg = format!("x={}", f64_path.display());
    let small_arg = format!("x={}", small.display());
    let y = "y=tests/data/add_16x256/y.npy";
    let cases: [(&[&str], &str, &str); 5] = [
        (&["--in", &f64_arg, "--in", y], "PK1003", "operand `x`"),
        (&["--in", &small_arg, "--in", y], "PK1004", "[16, 256]"),
        (&["--in", y], "PK1005", "missing input `x`"),
        (
            &["--in", "w=tests/data/add_16x256/x.npy", "--in", y],
            "PK1006",
            "no input `w`",
        ),
        (&["--in", "x=kernels/add.pk", "--in", y], "PK1002", "add.pk"),
    ];
    for (extra, code, needle) in cases {
        let mut args = vec!["run"];
        args.extend(ADD);
        args.extend(extra);
        let o = pkc(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{t}");
        assert!(t.contains(code) && t.contains(needle), "{code}: {t}");
        assert!(!t.contains("panicked"), "{t}");
    }
}

#[test]
fn violations_point_at_the_source_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let x = dir.path().join("x.npy");
    std::fs::write(&x, npy::to_bytes(&HostArray::zeros(DType::F32, &[16, 128]))).expect("written");
    let arg = format!("x={}", x.display());
    let o = pkc(&["run", "tests/cpu/strict/oob.pk", "--in", &arg]);
    let t = text(&o);
    // A strictness violation is a failure of the run: exit 4.
    assert_eq!(o.status.code(), Some(4), "{t}");
    assert!(t.contains("PK1010") && t.contains("oob.pk:9:"), "{t}");
}

/// A broken `multiple_of` promise is a failure of the run (exit 4), named
/// at the hint, and `pkc explain` knows its code.
#[test]
fn broken_multiple_of_exits_with_run_failure() {
    let dir = tempfile::tempdir().expect("temp dir");
    let x = dir.path().join("x.npy");
    let starts = dir.path().join("starts.npy");
    std::fs::write(&x, npy::to_bytes(&HostArray::zeros(DType::F32, &[64, 128]))).expect("written");
    let s = HostArray::from_ints(DType::I32, &[4], &[0, 8, 12, 16]);
    std::fs::write(&starts, npy::to_bytes(&s)).expect("written");
    let (xa, sa) = (
        format!("x={}", x.display()),
        format!("starts={}", starts.display()),
    );
    let o = pkc(&[
        "run",
        "tests/cpu/strict/multiple_of.pk",
        "--in",
        &xa,
        "--in",
        &sa,
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(4), "{t}");
    assert!(
        t.contains("PK1031") && t.contains("12 is not a multiple of 8"),
        "{t}"
    );
    let o = pkc(&["explain", "PK1031"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("broken-multiple-of"));
}

#[test]
fn emit_wat_and_bench_and_explain() {
    let mut args = vec!["emit", "wat"];
    args.extend(ADD);
    let o = pkc(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.starts_with("(module") && t.contains("(export \"kernel\""),
        "{t}"
    );
    let mut args = vec!["bench"];
    args.extend(ADD);
    args.extend(["--iters", "2"]);
    let o = pkc(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("median"), "{}", text(&o));
    let o = pkc(&["explain", "PK1013"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("non-consecutive-revisit"));
}

/// A violation at column 70,013 of a line (past what the renderer can
/// draw) is still reported with its code, location and help, as plain
/// text, and the run fails as a run (exit 4), not with a panic.
#[test]
fn a_violation_on_a_very_long_line_is_reported_plainly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let x = dir.path().join("x.npy");
    std::fs::write(&x, npy::to_bytes(&HostArray::zeros(DType::F32, &[16, 128]))).expect("written");
    let src = std::fs::read_to_string(root().join("tests/cpu/strict/oob.pk")).expect("oob.pk");
    let long = src.replace(
        "    y[..] = x[ds",
        &format!("    {}y[..] = x[ds", " ".repeat(70_000)),
    );
    let k = dir.path().join("oob_long.pk");
    std::fs::write(&k, long).expect("written");
    let arg = format!("x={}", x.display());
    let o = pkc(&["run", k.to_str().expect("utf-8"), "--in", &arg]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(4), "{t}");
    assert!(
        t.contains("error[PK1010]") && t.contains("oob_long.pk:9:70013"),
        "{t}"
    );
    assert!(t.contains("help: a dynamic index"), "{t}");
    assert!(!t.contains("panicked"), "{t}");
}

/// `print` writes each grid step's line to standard error, with the
/// kernel and the step, scalars in place of `{}` and the tile as numpy
/// lays out an array (the first and last three rows and columns of its
/// 1024 elements); the values are the input's, doubled, worked out here.
#[test]
fn print_writes_each_step_with_its_values() {
    let dir = tempfile::tempdir().expect("temp dir");
    let x = dir.path().join("x.npy");
    let v: Vec<f32> = (0..16 * 128).map(|i| i as f32 / 4.0).collect();
    npy::write(&x, &HostArray::from_f32(&[16, 128], &v)).expect("written");
    let x_arg = format!("x={}", x.display());
    let o = pkc(&["run", "tests/cpu/print.pk", "--in", &x_arg]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    for step in 0..2 {
        assert!(
            err.contains(&format!("[show ({step})] step {step} of 2\n")),
            "{err}"
        );
        assert!(
            err.contains(&format!("[show ({step})] no arguments, {{braces}}\n")),
            "{err}"
        );
        // Row r, column c of step s's block holds (1024 s + 128 r + c) / 4,
        // doubled: (1024 s + 128 r + c) / 2.
        let at = |r: usize, c: usize| format!("{}", (1024 * step + 128 * r + c) as f32 / 2.0);
        let first = format!("[show ({step})] 2 x = [[");
        let line = err
            .lines()
            .find(|l| l.starts_with(&first))
            .unwrap_or_else(|| panic!("no tile line for step {step}:\n{err}"));
        let cells: Vec<&str> = line[first.len()..]
            .trim_end_matches(']')
            .split_whitespace()
            .collect();
        assert_eq!(
            cells,
            [
                at(0, 0),
                at(0, 1),
                at(0, 2),
                "...".into(),
                at(0, 125),
                at(0, 126),
                at(0, 127)
            ]
        );
    }
    // The three lines of each of the two steps, the tile's 7 lines.
    assert_eq!(
        err.lines().filter(|l| l.starts_with("[show (")).count(),
        6,
        "{err}"
    );
}

/// A tile reduced to a scalar is a scalar: its sum, max, min and the
/// argmax of its row sums, worked out here from the input.
#[test]
fn scalar_reductions_of_a_tile() {
    let dir = tempfile::tempdir().expect("temp dir");
    let x = dir.path().join("x.npy");
    // Row r holds r - 3 + c / 128, except 1000 in row 5, whose sum (1317.4)
    // then passes row 7's (575.5).
    let mut v: Vec<f32> = (0..8 * 128)
        .map(|i| (i / 128) as f32 - 3.0 + (i % 128) as f32 / 128.0)
        .collect();
    v[5 * 128 + 7] = 1000.0;
    npy::write(&x, &HostArray::from_f32(&[8, 128], &v)).expect("written");
    let x_arg = format!("x={}", x.display());
    let outs: Vec<_> = ["s", "hi", "lo", "best"]
        .iter()
        .map(|n| (n, dir.path().join(format!("{n}.npy"))))
        .collect();
    let mut args = vec![
        "run".to_string(),
        "tests/cpu/scalar_reductions.pk".into(),
        "--in".into(),
        x_arg,
    ];
    for (n, p) in &outs {
        args.extend(["--out".into(), format!("{n}={}", p.display())]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = pkc(&refs);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let read = |i: usize| npy::read(&outs[i].1).expect("output").data;
    let f32s = |b: Vec<u8>| -> Vec<f32> {
        b.chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    let sum: f64 = v.iter().map(|&x| f64::from(x)).sum();
    let s = f32s(read(0));
    assert!(
        s.iter().all(|&y| (f64::from(y) - sum).abs() < 1e-3),
        "{} vs {sum}",
        s[0]
    );
    assert!(f32s(read(1)).iter().all(|&y| y == 1000.0));
    assert!(f32s(read(2)).iter().all(|&y| y == -3.0));
    let best = read(3);
    assert!(best
        .chunks(4)
        .all(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) == 5));
}

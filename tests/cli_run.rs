//! `pkc run` and `pkc bench` on the CPU reference, end to end: the wall-clock
//! limit, the host memory check, `--check-uninit` on MXU-only blocks, and
//! what `pkc bench` measures.

mod cpu_support;

use cpu_support::{assert_close, pkc, root, text};
use pk_lang::ir::DType;
use pk_runtime::cpu::{npy, HostArray};
use std::path::Path;
use std::process::Output;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The text with miette's wrapped message lines joined again.
fn flat(o: &Output) -> String {
    text(o).replace("\n  │ ", " ")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn timed(args: &[&str]) -> (Output, Duration) {
    let t = Instant::now();
    let o = pkc(args);
    (o, t.elapsed())
}

/// Runs `tests/cpu/spin_parallel.pk` (which loops forever on each of its
/// `rows / 8` units) on `threads` workers under a limit of `secs` seconds,
/// and asserts that it stops with PK1015 within 10% + 100 ms of the limit,
/// on top of what compiling the kernel takes (measured by the same
/// command failing right after that, at an unknown output name).
fn stops_in_time(rows: usize, threads: &str, secs: u64) {
    // The two timing tests load every CPU; run one at a time, so that
    // neither measures the other's load in its setup time.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("temp dir");
    let x = dir.path().join("x.npy");
    npy::write(&x, &HostArray::zeros(DType::I32, &[rows, 128])).expect("write x");
    let x_arg = format!("x={}", x.display());
    let m = format!("M={rows}");
    let kernel = "tests/cpu/spin_parallel.pk";
    let common = [
        "run",
        kernel,
        "-p",
        &m,
        "--in",
        &x_arg,
        "--threads",
        threads,
    ];
    let (base, setup) = timed(&[&common[..], &["--out", "nope=n.npy"]].concat());
    assert_eq!(code(&base), 1, "{}", text(&base));
    let limit = secs.to_string();
    let (o, took) = timed(&[&common[..], &["--timeout", &limit]].concat());
    let t = text(&o);
    assert_eq!(code(&o), 4, "{t}");
    assert!(t.contains("PK1015"), "{t}");
    assert!(t.contains("did not finish within the time limit"), "{t}");
    let limit = Duration::from_secs(secs);
    let bound = limit + limit / 10 + Duration::from_millis(100);
    assert!(
        took >= limit && took.saturating_sub(setup) <= bound,
        "{threads} workers, limit {limit:?}: stopped after {took:?} ({setup:?} of it before the run)"
    );
}

/// Two pinned workers keep both CPUs of a small host busy; a one-second
/// limit still stops the run in time.
#[test]
fn timeout_is_wall_clock_under_load() {
    stops_in_time(64, "2", 1);
}

/// Sixteen workers on however few CPUs: the ticker thread waits for a CPU
/// after every sleep, which made a tick-counting limit late by a share of
/// the limit (2.45 to 2.57 s for 2 s on 2 CPUs); the clock is not late.
#[test]
fn timeout_is_wall_clock_with_more_workers_than_cpus() {
    stops_in_time(128, "16", 2);
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
        (
            "matmul_bf16_96x384x256_grid3x3x2",
            "96",
            "384",
            "256",
            "bf16",
        ),
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

/// A specialisation whose arrays cannot fit in this host's memory is
/// refused before anything is allocated or read (the input file does not
/// even exist), naming the sizes and the largest operand: `add` with
/// M = 2^24 and N = 1024 has three f32 arrays of 64 GiB each.
#[test]
fn host_memory_is_checked_before_inputs_are_read() {
    for cmd in ["run", "bench"] {
        let (o, took) = timed(&[
            cmd,
            "kernels/add.pk",
            "-p",
            "M=16777216",
            "--in",
            "x=no/such/x.npy",
        ]);
        let t = flat(&o);
        assert_eq!(code(&o), 4, "{cmd}: {t}");
        assert!(t.contains("PK1024"), "{cmd}: {t}");
        assert!(
            t.contains("needs 192.0 GiB of host memory (inputs 128.0 GiB")
                && t.contains("outputs 64.0 GiB")
                && t.contains("the largest operand is `x` (f32[16777216, 1024], 64.0 GiB)")
                && t.contains("is available ("),
            "{cmd}: {t}"
        );
        assert!(!t.contains("PK1001"), "{cmd}: {t}");
        assert!(took < Duration::from_secs(10), "{cmd}: {took:?}");
    }
    let o = pkc(&["explain", "PK1024"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(text(&o).contains("host-memory-exceeded"), "{}", text(&o));
}

/// M = 2^62 makes `x` 2^74 bytes: a coded error (not a panic or PK1099)
/// for every command that runs on the CPU reference.
#[test]
fn operand_sizes_that_overflow_are_coded_errors() {
    for cmd in ["run", "bench", "test"] {
        let mut args = vec![cmd, "kernels/add.pk", "-p", "M=4611686018427387904"];
        if cmd == "test" {
            args.extend(["--expect", "z=z.npy"]);
        }
        let o = pkc(&args);
        let t = flat(&o);
        assert_eq!(code(&o), 4, "{cmd}: {t}");
        assert!(t.contains("PK1024"), "{cmd}: {t}");
        assert!(
            t.contains("operand `x` (f32[4611686018427387904, 1024]) has more bytes than a 64-bit count holds"),
            "{cmd}: {t}"
        );
        assert!(
            !t.contains("PK1099") && !t.contains("panicked"),
            "{cmd}: {t}"
        );
    }
}

/// The page table of `tests/cpu/paged_sum.pk` (G = 4 sequences, W = 4
/// slots each): sequence g reads its first g + 1 slots, 10 pages in all.
const LENS: [i64; 4] = [1, 2, 3, 4];
const PAGES: [i64; 16] = [3, 0, 0, 0, 5, 1, 0, 0, 15, 2, 7, 0, 0, 4, 9, 12];

fn page_table(dir: &Path) -> (String, String) {
    let lens = dir.join("lens.npy");
    let pages = dir.join("pages.npy");
    npy::write(&lens, &HostArray::from_ints(DType::I32, &[4], &LENS)).expect("lens");
    npy::write(&pages, &HostArray::from_ints(DType::I32, &[16], &PAGES)).expect("pages");
    (
        format!("lens={}", lens.display()),
        format!("pages={}", pages.display()),
    )
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

/// The prefetch-driven kernel computes the sums of the pages its table
/// names (checked against sums done here, in f32 like the kernel's
/// accumulator, page by page in table order).
#[test]
fn paged_sum_reads_the_pages_its_table_names() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (lens, pages) = page_table(dir.path());
    let pool: Vec<f32> = (0..16 * 8 * 128).map(|v| (v % 977) as f32 * 0.25).collect();
    let pool_path = dir.path().join("pool.npy");
    npy::write(&pool_path, &HostArray::from_f32(&[128, 128], &pool)).expect("pool");
    let out = dir.path().join("y.npy");
    let o = pkc(&[
        "run",
        "tests/cpu/paged_sum.pk",
        "--in",
        &lens,
        "--in",
        &pages,
        "--in",
        &format!("pool={}", pool_path.display()),
        "--out",
        &format!("y={}", out.display()),
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let got = npy::values(&npy::read(&out).expect("y"), DType::F32);
    let mut want = vec![0f64; 4 * 8 * 128];
    for g in 0..4 {
        for e in 0..8 * 128 {
            let mut acc = 0f32;
            for p in 0..LENS[g] as usize {
                acc += pool[PAGES[g * 4 + p] as usize * 8 * 128 + e];
            }
            want[g * 8 * 128 + e] = f64::from(acc);
        }
    }
    assert_close("paged_sum", &got, &want, 0.0, 0.0);
}

/// `pkc bench` with the page table from files reports the bytes the run
/// moved, counted by hand: the two prefetch tables into SMEM (16 + 64
/// bytes), ten DMA'd pages of 8 x 128 f32 (10 x 4096 = 40960 bytes) and
/// four output blocks of 8 x 128 f32 written back (16384 bytes): 57424.
/// Without `--in` the tables are zeros, no page moves, and it still runs.
#[test]
fn bench_counts_the_bytes_a_prefetch_driven_run_moves() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (lens, pages) = page_table(dir.path());
    let kernel = "tests/cpu/paged_sum.pk";
    let o = pkc(&[
        "bench", kernel, "--in", &lens, "--in", &pages, "--iters", "2", "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let j = json(&o);
    assert_eq!(j["bytes"], 57424, "{j}");
    assert_eq!(j["bytes_in"], 80, "{j}");
    assert_eq!(j["bytes_out"], 16384, "{j}");
    assert_eq!(j["dma_bytes"], 40960, "{j}");
    assert_eq!(j["inputs_from_files"], serde_json::json!(["lens", "pages"]));

    // The global `--message-format json` asks for the same object, typed
    // like every other JSON line pkc prints.
    let o = pkc(&[
        "bench",
        kernel,
        "--in",
        &lens,
        "--in",
        &pages,
        "--iters",
        "2",
        "--message-format",
        "json",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(out.lines().count(), 1, "{out}");
    let j = json(&o);
    assert_eq!(j["type"], "bench", "{j}");
    assert_eq!(j["bytes"], 57424, "{j}");
    assert_eq!(j["dma_bytes"], 40960, "{j}");

    let o = pkc(&[
        "bench", kernel, "--in", &lens, "--in", &pages, "--iters", "2",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(
        text(&o).contains("57424 bytes moved: blocks in 80, blocks out 16384, DMA 40960"),
        "{}",
        text(&o)
    );

    let o = pkc(&["bench", kernel, "--iters", "2", "--json"]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let j = json(&o);
    assert_eq!(j["bytes"], 80 + 16384, "{j}");
    assert_eq!(j["dma_bytes"], 0, "{j}");
}

/// `--in` files of `pkc bench` are checked like those of `pkc run`: an
/// unknown name and a wrong shape are coded input errors, a name given
/// twice is a usage error.
#[test]
fn bench_checks_its_input_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (lens, pages) = page_table(dir.path());
    let kernel = "tests/cpu/paged_sum.pk";
    let o = pkc(&["bench", kernel, "--in", &lens, "--in", &lens]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert!(text(&o).contains("`--in lens=...` is given more than once"));
    let o = pkc(&["bench", kernel, "--in", &lens.replace("lens=", "len=")]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert!(text(&o).contains("PK1006") && text(&o).contains("lens, pages, pool"));
    let o = pkc(&["bench", kernel, "--in", &pages.replace("pages=", "lens=")]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert!(text(&o).contains("PK1004"), "{}", text(&o));
}

/// An operand declared `if QUANT` is not an input where `QUANT` is false:
/// `pkc run` takes the kernel without it, and refuses a file given for it
/// with the list of the inputs that exist.
#[test]
fn run_takes_only_the_operands_present() {
    let dir = tempfile::tempdir().expect("temp dir");
    let x = dir.path().join("x.npy");
    let xs: Vec<f32> = (0..16 * 128).map(|i| (i % 7) as f32).collect();
    npy::write(&x, &HostArray::from_f32(&[16, 128], &xs)).expect("write x");
    let y = dir.path().join("y.npy");
    let (xin, yout) = (format!("x={}", x.display()), format!("y={}", y.display()));
    let kernel = "tests/cpu/conditional_operands.pk";
    let off = ["-p", "QUANT=false", "-p", "SUM=false"];
    let mut args = vec!["run", kernel];
    args.extend(off);
    args.extend(["--in", &xin, "--out", &yout]);
    let o = pkc(&args);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let got = npy::values(&npy::read(&y).expect("y"), DType::F32);
    assert_eq!(got, xs.iter().map(|&v| f64::from(v)).collect::<Vec<_>>());
    let scale = format!("x_scale={}", x.display());
    args.extend(["--in", &scale]);
    let o = pkc(&args);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert!(flat(&o).contains("PK1006") && flat(&o).contains("has no input `x_scale`"));
}

/// A dynamic grid axis whose prefetch element is above its declared bound
/// fails the run with PK1035 (exit 4) and writes no output; within the
/// bound the run succeeds.
#[test]
fn a_dynamic_extent_above_its_bound_is_a_run_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let x = dir.path().join("x.npy");
    npy::write(&x, &HostArray::from_f32(&[48, 128], &[1.0; 48 * 128])).expect("x");
    let out = dir.path().join("y.npy");
    for (count, want) in [(7, 4), (6, 0)] {
        let n = dir.path().join("n.npy");
        npy::write(&n, &HostArray::from_ints(DType::I32, &[1], &[count])).expect("n");
        let o = pkc(&[
            "run",
            "tests/cpu/dynamic_grid.pk",
            "--kernel",
            "rows",
            "--in",
            &format!("n={}", n.display()),
            "--in",
            &format!("x={}", x.display()),
            "--out",
            &format!("y={}", out.display()),
        ]);
        assert_eq!(code(&o), want, "n={count}: {}", text(&o));
        if want == 4 {
            let t = flat(&o);
            assert!(t.contains("PK1035") && t.contains("reads 7 steps"), "{t}");
            assert!(!out.exists());
        } else {
            let y = npy::values(&npy::read(&out).expect("y"), DType::F32);
            assert!(y.iter().all(|&v| v == 2.0), "every block is visited");
        }
    }
}

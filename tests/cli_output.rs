//! What `pkc run --out` and `pkc test --expect` do with the files they are
//! given: destinations that are not regular files are never replaced,
//! outputs are prepared before the run and committed together, expected
//! files are checked like inputs, and flags that cannot apply are usage
//! errors.

mod common;
mod cpu_support;

use common::{code, pkc, root, stderr};
use pk_lang::ir::DType;
use pk_runtime::cpu::{npy, HostArray};
use std::fs;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const X: &str = "x=tests/data/add_16x256/x.npy";
const Y: &str = "y=tests/data/add_16x256/y.npy";
const Z: &str = "tests/data/add_16x256/z_expected.npy";

/// `pkc run` of the add fixture with extra arguments.
fn run_add(extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run"];
    args.extend(cpu_support::ADD);
    args.extend(["--in", X, "--in", Y]);
    args.extend(extra);
    pkc(&args)
}

/// The numpy-computed sum, as the values of a `.npy` image.
fn expected_sum() -> Vec<f64> {
    let a = npy::read(&root().join(Z)).expect("fixture");
    npy::to_host(a, DType::F32).expect("f32").to_f64()
}

fn values_of(bytes: &[u8]) -> Vec<f64> {
    let a = npy::parse(bytes).expect("a .npy image");
    npy::to_host(a, DType::F32).expect("f32").to_f64()
}

fn out_arg(name: &str, p: &Path) -> String {
    format!("{name}={}", p.display())
}

#[test]
fn a_fifo_is_written_in_place_and_stays_a_fifo() {
    let d = tempfile::tempdir().expect("temp dir");
    let fifo = d.path().join("z.fifo");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("no NUL");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let fifo = fifo.clone();
        std::thread::spawn(move || tx.send(fs::read(fifo).expect("read the FIFO")));
    }
    let o = run_add(&["--out", &out_arg("z", &fifo)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got = rx.recv_timeout(Duration::from_secs(30));
    if got.is_err() {
        // Nothing wrote to the FIFO: open it once so the reader ends.
        let _ = fs::OpenOptions::new().write(true).open(&fifo);
    }
    let got = got.expect("pkc wrote the array into the FIFO");
    assert_eq!(values_of(&got), expected_sum());
    assert!(fs::metadata(&fifo).expect("meta").file_type().is_fifo());
}

#[test]
fn dev_null_stays_a_character_device() {
    let o = run_add(&["--out", "z=/dev/null"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let m = fs::metadata("/dev/null").expect("meta");
    assert!(m.file_type().is_char_device(), "/dev/null was replaced");
}

#[test]
fn a_symlink_is_followed_and_kept() {
    let d = tempfile::tempdir().expect("temp dir");
    let target = d.path().join("real.npy");
    fs::write(&target, b"old").expect("written");
    let link = d.path().join("z.npy");
    std::os::unix::fs::symlink(&target, &link).expect("link");
    let o = run_add(&["--out", &out_arg("z", &link)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(fs::symlink_metadata(&link)
        .expect("meta")
        .file_type()
        .is_symlink());
    assert_eq!(values_of(&fs::read(&target).expect("read")), expected_sum());
}

#[test]
fn dash_writes_the_array_to_stdout() {
    let o = run_add(&["--out", "z=-"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(values_of(&o.stdout), expected_sum());
}

/// `pkc run` of the add fixture through `sh`, with `redirect` applied to
/// its descriptors (`>&-` closes standard output).
fn run_add_redirected(extra: &[&str], redirect: &str) -> std::process::Output {
    let mut args = vec!["run"];
    args.extend(cpu_support::ADD);
    args.extend(["--in", X, "--in", Y]);
    args.extend(extra);
    Command::new("sh")
        .arg("-c")
        .arg(format!("exec \"$0\" \"$@\" {redirect}"))
        .arg(env!("CARGO_BIN_EXE_pkc"))
        .args(&args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("sh runs")
}

#[test]
fn dash_with_stdout_closed_fails_before_the_run() {
    let o = run_add_redirected(&["--out", "z=-"], ">&-");
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(
        err.contains("PK1007") && err.contains("standard output was closed"),
        "{err}"
    );
    // The same for /dev/stdout and for standard error.
    let o = run_add_redirected(&["--out", "z=/dev/stdout"], ">&-");
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let o = run_add_redirected(&["--out", "z=/dev/stderr"], "2>&-");
    assert_eq!(code(&o), 1);
    // Standard output sent to /dev/null on purpose is written (and lost)
    // as asked.
    let o = run_add_redirected(&["--out", "z=-"], ">/dev/null");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn new_files_get_0666_less_the_umask() {
    let d = tempfile::tempdir().expect("temp dir");
    let z = d.path().join("z.npy");
    let mut args: Vec<String> = vec!["run".into()];
    args.extend(cpu_support::ADD.iter().map(|s| s.to_string()));
    args.extend(["--in", X, "--in", Y, "--out"].map(String::from));
    args.push(out_arg("z", &z));
    let script = format!(
        "umask 027; exec \"$0\" {}",
        args.iter()
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let o = Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_pkc")])
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("sh runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mode = fs::metadata(&z).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
}

/// A missing output directory is found before the kernel runs: the
/// runaway kernel would otherwise spin until its time limit.
#[test]
fn outputs_are_checked_before_the_work() {
    let d = tempfile::tempdir().expect("temp dir");
    let x = d.path().join("x.npy");
    fs::write(&x, npy::to_bytes(&HostArray::zeros(DType::I32, &[8, 128]))).expect("written");
    let missing = d.path().join("no/such/dir/y.npy");
    let t = Instant::now();
    let o = pkc(&[
        "run",
        "tests/cpu/strict/runaway.pk",
        "--in",
        &out_arg("x", &x),
        "--out",
        &out_arg("y", &missing),
    ]);
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(
        err.contains("PK1007") && err.contains("does not exist"),
        "{err}"
    );
    assert!(!err.contains("PK1015"), "the kernel ran: {err}");
    assert!(t.elapsed() < Duration::from_secs(60));
}

/// With several outputs, one that cannot be written leaves every other
/// destination as it was.
#[test]
fn outputs_are_committed_together_or_not_at_all() {
    let d = tempfile::tempdir().expect("temp dir");
    let inputs: [(&str, DType, [usize; 2]); 3] = [
        ("a", DType::F32, [3, 36]),
        ("b", DType::F32, [2, 7]),
        ("c", DType::I32, [2, 100]),
    ];
    let mut args: Vec<String> = vec!["run".into(), "tests/cpu/reduce_tails.pk".into()];
    for (name, dt, shape) in inputs {
        let p = d.path().join(format!("{name}.npy"));
        fs::write(&p, npy::to_bytes(&HostArray::zeros(dt, &shape))).expect("written");
        args.extend(["--in".into(), out_arg(name, &p)]);
    }
    let sa = d.path().join("sa.npy");
    fs::write(&sa, b"previous").expect("written");
    let blocked = d.path().join("ma.npy");
    fs::create_dir(&blocked).expect("a directory where a file should go");
    args.extend([
        "--out".into(),
        out_arg("sa", &sa),
        "--out".into(),
        out_arg("ma", &blocked),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = pkc(&args);
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(err.contains("PK1007") && err.contains("directory"), "{err}");
    assert_eq!(fs::read(&sa).expect("read"), b"previous");
    let left: Vec<PathBuf> = fs::read_dir(d.path())
        .expect("listed")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".pk-"))
        })
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

fn test_add(extra: &[&str]) -> std::process::Output {
    let mut args = vec!["test"];
    args.extend(cpu_support::ADD);
    args.extend(["--in", X, "--in", Y]);
    args.extend(extra);
    pkc(&args)
}

#[test]
fn expected_files_are_checked_like_inputs() {
    let d = tempfile::tempdir().expect("temp dir");
    // numpy's default float64 for an f32 output.
    let f64_file = d.path().join("z64.npy");
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    let h = "{'descr': '<f8', 'fortran_order': False, 'shape': (16, 256), }";
    bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
    bytes.extend_from_slice(h.as_bytes());
    bytes.extend(std::iter::repeat_n(0u8, 16 * 256 * 8));
    fs::write(&f64_file, bytes).expect("written");
    let o = test_add(&["--expect", &out_arg("z", &f64_file)]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK1003"), "{}", stderr(&o));
    let small = d.path().join("small.npy");
    fs::write(
        &small,
        npy::to_bytes(&HostArray::zeros(DType::F32, &[8, 256])),
    )
    .expect("w");
    let o = test_add(&["--expect", &out_arg("z", &small)]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK1004"), "{}", stderr(&o));
}

#[test]
fn a_match_shows_no_worst_element_and_a_mismatch_exits_3() {
    let z = format!("z={Z}");
    let o = test_add(&["--expect", &z]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(code(&o), 0, "{out}{}", stderr(&o));
    assert!(out.contains("z: ok") && !out.contains("worst at"), "{out}");
    // The line ends with its last figure, not with a separator.
    let line = out
        .lines()
        .find(|l| l.starts_with("z: ok"))
        .expect("z's line");
    assert!(
        line.starts_with("z: ok: 0/4096 elements outside rtol=")
            && line.ends_with("max rel error 0.000e0"),
        "{line}"
    );
    // x + x is not x + y.
    let mut args = vec!["test"];
    args.extend(cpu_support::ADD);
    args.extend(["--in", X, "--in", "y=tests/data/add_16x256/x.npy"]);
    args.extend(["--expect", &z]);
    let o = pkc(&args);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(code(&o), 3, "{out}{}", stderr(&o));
    assert!(
        out.contains("MISMATCH") && out.contains("; worst at (") && !out.contains(";;"),
        "{out}"
    );
}

#[test]
fn bad_tolerances_are_usage_errors() {
    let z = format!("z={Z}");
    for bad in [["--rtol", "nan"], ["--atol", "-1"], ["--rtol", "inf"]] {
        let mut extra = vec!["--expect", &z];
        extra.extend(bad);
        let o = test_add(&extra);
        assert_eq!(code(&o), 2, "{bad:?}: {}", stderr(&o));
    }
}

#[test]
fn repeated_and_inapplicable_flags_are_usage_errors() {
    let z = format!("z={Z}");
    // A parameter given twice.
    let o = pkc(&["check", "kernels/add.pk", "-p", "M=16", "-p", "M=32"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("-p M=..."), "{}", stderr(&o));
    // An input given twice.
    let o = test_add(&["--in", "x=tests/data/add_16x256/y.npy", "--expect", &z]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--in x=..."), "{}", stderr(&o));
    // Two outputs into one file.
    let d = tempfile::tempdir().expect("temp dir");
    let p = d.path().join("z.npy");
    let o = run_add(&["--out", &out_arg("z", &p), "--out", &out_arg("z", &p)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    // -t with --all-targets.
    let o = pkc(&["check", "kernels/add.pk", "--all-targets", "-t", "v4"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn source_flags_do_not_apply_to_a_package() {
    let d = tempfile::tempdir().expect("temp dir");
    let out = d.path().to_str().expect("utf-8");
    let mut args = vec!["build"];
    args.extend(cpu_support::ADD);
    args.extend(["-o", out]);
    let o = pkc(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let pkg = fs::read_dir(d.path())
        .expect("listed")
        .map(|e| e.expect("entry").path())
        .find(|p| p.is_dir())
        .expect("a package");
    let pkg = pkg.to_str().expect("utf-8");
    for flag in [["-p", "M=32"], ["-t", "v4"], ["-k", "add"]] {
        let mut args = vec!["run", pkg, "--in", X, "--in", Y];
        args.extend(flag);
        let o = pkc(&args);
        assert_eq!(code(&o), 2, "{flag:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("does not apply"), "{}", stderr(&o));
    }
    let o = pkc(&["run", pkg, "--in", X, "--in", Y]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// The temporary output files in `dir`.
fn temporaries(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .expect("listed")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".pk-out-") || n.starts_with(".pk-old-"))
        .collect()
}

/// Starts `pkc run` of a kernel that never ends (one unit, one thread),
/// writing `y` into `dir`, and waits until its temporary file exists.
fn start_endless_run(dir: &Path) -> std::process::Child {
    let x = dir.join("x.npy");
    if !x.exists() {
        npy::write(&x, &HostArray::zeros(DType::I32, &[8, 128])).expect("x written");
    }
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pkc"));
    // The signals start at their default actions, as in a terminal, even
    // where the tests run in the background of a shell that ignores them.
    // SAFETY: only signal(2) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    let child = cmd
        .args(["run", "tests/cpu/spin_parallel.pk", "-p", "M=8"])
        .args(["--threads", "1", "--timeout", "120"])
        .arg("--in")
        .arg(format!("x={}", x.display()))
        .arg("--out")
        .arg(format!("y={}", dir.join("y.npy").display()))
        .current_dir(root())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("pkc starts");
    let t = Instant::now();
    while temporaries(dir).is_empty() {
        assert!(t.elapsed() < Duration::from_secs(60), "no temporary file");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Ctrl-C, SIGTERM and SIGHUP during `run --out` remove the temporary
/// file, and pkc dies of the signal as before (the shell's 128 + N); what
/// `kill -9` leaves behind is removed by the next `--out` into the same
/// directory, once it is a second old and unlocked.
#[test]
fn interrupted_runs_leave_no_temporary_files() {
    use std::os::unix::process::ExitStatusExt;
    let d = tempfile::tempdir().expect("temp dir");
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let mut child = start_endless_run(d.path());
        // SAFETY: a signal to the child started above.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        let status = child.wait().expect("pkc ends");
        assert_eq!(status.signal(), Some(sig), "{status:?}");
        assert_eq!(temporaries(d.path()), Vec::<String>::new(), "signal {sig}");
        assert!(!d.path().join("y.npy").exists());
    }
    let mut child = start_endless_run(d.path());
    child.kill().expect("SIGKILL");
    child.wait().expect("pkc ends");
    assert_eq!(temporaries(d.path()).len(), 1, "kill -9 leaves its file");
    // A run of another pkc in the same directory now is not stale yet
    // (the grace second), so the file stays; a second later it goes.
    std::thread::sleep(Duration::from_millis(1100));
    let z = d.path().join("z.npy");
    let o = run_add(&["--out", &out_arg("z", &z)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(values_of(&fs::read(&z).expect("z")), expected_sum());
    assert_eq!(temporaries(d.path()), Vec::<String>::new());
    // A live run's file is never swept, however old it is.
    let mut child = start_endless_run(d.path());
    std::thread::sleep(Duration::from_millis(1100));
    let o = run_add(&["--out", &out_arg("z", &z)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(temporaries(d.path()).len(), 1);
    child.kill().expect("SIGKILL");
    child.wait().expect("pkc ends");
}

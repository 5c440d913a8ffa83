//! The README's tour, run as a newcomer runs it: every `sh` block of "A
//! five-minute tour" and of "The command line", command by command and
//! exactly as written, in a fresh temporary directory that holds what a
//! clone holds (`kernels/`, `std/`, `tests/cpu/`), with a fresh `HOME`.
//! `cargo build --release` stands for the build that made the `pkc` under
//! test, which is also `target/release/pkc` and `pkc` on `PATH`.
//!
//! A command whose comment names a code (`# PK0301: ...`) shows an error:
//! it must exit 1 with that code. Every other command must succeed.
//!
//! The AOT commands need libtpu (`bash .ci/setup-libtpu`); without it the
//! test prints a notice and passes, unless `CI=true`.

mod common;

use common::root;
use std::path::Path;
use std::process::Command;

/// The `sh` blocks of the README between the headings `from` and `to`.
fn blocks(readme: &str, from: &str, to: &str) -> Vec<String> {
    let start = readme
        .find(from)
        .unwrap_or_else(|| panic!("`{from}` in README"));
    let end = start
        + readme[start..]
            .find(to)
            .unwrap_or_else(|| panic!("`{to}` in README"));
    let mut out = Vec::new();
    let mut rest = &readme[start..end];
    while let Some(i) = rest.find("```sh\n") {
        let body = &rest[i + 6..];
        let close = body.find("```").expect("a closed block");
        out.push(body[..close].to_string());
        rest = &body[close..][3..];
    }
    out
}

/// The commands of a block: its lines, a line that opens a quote joined
/// with the lines up to the one that closes it.
fn commands(block: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in block.lines() {
        if !cur.is_empty() {
            cur.push('\n');
        }
        cur.push_str(line);
        if cur.matches('"').count().is_multiple_of(2) {
            if !cur.trim().is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            cur.clear();
        }
    }
    assert!(cur.is_empty(), "an unclosed quote in:\n{block}");
    out
}

/// The code a command's comment says it shows (`# PK0301: ...`).
fn expected_code(cmd: &str) -> Option<&str> {
    let comment = &cmd[cmd.rfind("# ")?..];
    let at = comment.find("PK")?;
    let code = comment.get(at..at + 6)?;
    code[2..]
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then_some(code)
}

/// Copies the directory `from` into `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("dir");
    for e in std::fs::read_dir(from).expect("listed") {
        let e = e.expect("entry");
        let dest = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).expect("copied");
        }
    }
}

/// What each command printed, for the checks after the tour.
struct Ran {
    command: String,
    stdout: String,
}

#[test]
fn the_readme_tour_runs_as_written() {
    let libtpu = pk_runtime::pjrt::locate_libtpu(None).ok();
    if libtpu.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "libtpu is missing (bash .ci/setup-libtpu)"
        );
        eprintln!("note: libtpu not installed; the README tour (which builds with --aot) not run");
        return;
    }
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let mut tour = blocks(&readme, "## A five-minute tour", "## The kernel library");
    tour.extend(blocks(
        &readme,
        "## The command line",
        "## Calling pk kernels",
    ));
    assert!(tour.len() >= 5, "{tour:?}");

    let d = tempfile::tempdir().expect("temp dir");
    let dir = d.path();
    for sub in ["kernels", "std", "tests/cpu"] {
        copy_dir(&root().join(sub), &dir.join(sub));
    }
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::fs::create_dir_all(dir.join("target/release")).expect("target");
    let pkc = Path::new(env!("CARGO_BIN_EXE_pkc"));
    std::os::unix::fs::symlink(pkc, dir.join("target/release/pkc")).expect("link");
    std::os::unix::fs::symlink(pkc, bin.join("pkc")).expect("link");
    // `cargo build --release` has been done: it made the pkc under test.
    std::fs::write(bin.join("cargo"), "#!/bin/sh\nexit 0\n").expect("cargo");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("cargo"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    // Shell variables set by one command (`pkc=target/release/pkc`) hold
    // for the next ones, as in the reader's shell.
    let mut vars = String::new();
    let mut ran = Vec::new();
    for cmd in tour.iter().flat_map(|b| commands(b)) {
        let script = format!("{vars}\n{cmd}");
        let o = Command::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(dir)
            .env("HOME", &home)
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .env("TPU_SKIP_MDS_QUERY", "1")
            .env("PK_LIBTPU", libtpu.as_deref().expect("located"))
            .env_remove("PK_CACHE_DIR")
            .env_remove("PK_TUNE_CACHE")
            .env_remove("XDG_CACHE_HOME")
            .output()
            .expect("bash runs");
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        match expected_code(&cmd) {
            Some(code) => {
                assert_eq!(o.status.code(), Some(1), "`{cmd}`:\n{out}{err}");
                assert!(err.contains(code), "`{cmd}` does not show {code}:\n{err}");
            }
            None => assert!(o.status.success(), "`{cmd}` failed:\n{out}{err}"),
        }
        let first = cmd.split_whitespace().next().unwrap_or("");
        if first.contains('=') && !first.starts_with('-') && cmd.split_whitespace().count() == 1 {
            vars.push_str(&cmd);
            vars.push('\n');
        }
        ran.push(Ran {
            command: cmd,
            stdout: out,
        });
    }

    // The paged bench read both tables: 1 + 4 + 0 + 2 pages of 8 x 128 f32
    // (4096 bytes each) moved by DMA.
    let bench = ran
        .iter()
        .find(|r| r.command.contains("bench tests/cpu/paged_sum.pk"))
        .expect("the paged bench is in the tour");
    assert!(bench.stdout.contains("DMA 28672"), "{}", bench.stdout);
    assert!(
        bench.stdout.contains("inputs from files: lens, pages"),
        "{}",
        bench.stdout
    );
    // The completion script is where bash-completion looks for it.
    let completion = home.join(".local/share/bash-completion/completions/pkc");
    let script = std::fs::read_to_string(&completion).expect("completion script written");
    assert!(script.contains("_pkc"), "{script}");
    // The tuned paged attention drew its plot.
    assert!(dir.join("space.svg").is_file());
}

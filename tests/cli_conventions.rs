//! The conventions of `pkc` that cargo and ruff users expect: `--color`,
//! `-q`, `--message-format json`, completions, `--version`, documented
//! exit codes, and usage errors with codes.

mod common;
mod cpu_support;

use common::{code, pkc, root, stderr, stdout};
use serde_json::Value;
use std::process::Command;

use cpu_support::ADD;

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[test]
fn check_diagnostics_as_json() {
    let d = tempfile::tempdir().expect("temp dir");
    let f = d.path().join("bad.pk");
    // `float` is not a dtype: line 2, column 8.
    std::fs::write(
        &f,
        "kernel copy<M = 256>(\n    x: float[M, 128],\n) -> y: f32[M, 128]\n{\n    y[..] = x[..];\n}\n",
    )
    .expect("written");
    let o = pkc(&[
        "check",
        f.to_str().expect("utf-8"),
        "--message-format",
        "json",
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let lines = json_lines(&stdout(&o));
    assert_eq!(lines.len(), 1, "{}", stdout(&o));
    let d = &lines[0];
    assert_eq!(d["type"], "diagnostic");
    assert_eq!(d["code"], "PK0105");
    assert_eq!(d["severity"], "error");
    assert_eq!(d["line"], 2);
    assert_eq!(d["column"], 8);
    assert!(d["file"].as_str().is_some_and(|f| f.ends_with("bad.pk")));
    assert!(d["message"].as_str().is_some_and(|m| m.contains("float")));
    assert!(d["help"].is_string());
    let labels = d["labels"].as_array().expect("labels");
    assert_eq!(labels[0]["primary"], true);
    assert_eq!(labels[0]["line"], 2);
    // Nothing but JSON on stdout, and no rendered report on stderr.
    assert!(!stderr(&o).contains("PK0105"), "{}", stderr(&o));
}

#[test]
fn test_results_as_json() {
    let mut args = vec!["test"];
    args.extend(ADD);
    args.extend([
        "--in",
        "x=tests/data/add_16x256/x.npy",
        "--in",
        "y=tests/data/add_16x256/y.npy",
        "--expect",
        "z=tests/data/add_16x256/z_expected.npy",
        "--message-format",
        "json",
    ]);
    let o = pkc(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let lines = json_lines(&stdout(&o));
    assert_eq!(lines.len(), 1);
    let c = &lines[0];
    assert_eq!(c["type"], "comparison");
    assert_eq!(c["output"], "z");
    assert_eq!(c["ok"], true);
    assert_eq!(c["mismatched"], 0);
    assert_eq!(c["total"], 16 * 256);
    assert!(c["worst"].is_null());
}

#[test]
fn quiet_prints_errors_only() {
    let o = pkc(&["check", "-q", "kernels/add.pk"]);
    assert_eq!(code(&o), 0);
    assert_eq!(stderr(&o), "");
    let o = pkc(&["check", "kernels/add.pk"]);
    assert!(stderr(&o).contains("ok for v5e"), "{}", stderr(&o));
    let o = pkc(&["-q", "check", "kernels/add.pk", "-p", "M=100"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("PK0216"), "{}", stderr(&o));
}

fn pkc_env(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pkc"));
    c.args(args).current_dir(root()).env_remove("NO_COLOR");
    c.env_remove("CLICOLOR_FORCE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("pkc runs")
}

#[test]
fn color_follows_the_flag_and_the_environment() {
    let bad = ["check", "kernels/add.pk", "-p", "M=100"];
    let esc = |o: &std::process::Output| stderr(o).contains('\u{1b}');
    // Not a terminal: plain by default.
    assert!(!esc(&pkc_env(&bad, &[])));
    let mut always = bad.to_vec();
    always.extend(["--color", "always"]);
    assert!(esc(&pkc_env(&always, &[("NO_COLOR", "1")])));
    assert!(esc(&pkc_env(&bad, &[("CLICOLOR_FORCE", "1")])));
    // NO_COLOR wins over CLICOLOR_FORCE, as no-color.org asks.
    assert!(!esc(&pkc_env(
        &bad,
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]
    )));
    let mut never = bad.to_vec();
    never.extend(["--color", "never"]);
    assert!(!esc(&pkc_env(&never, &[("CLICOLOR_FORCE", "1")])));
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = pkc(&["completions", shell]);
        assert_eq!(code(&o), 0, "{shell}: {}", stderr(&o));
        let s = stdout(&o);
        for sub in [
            "build", "check", "run", "test", "bench", "explain", "profile",
        ] {
            assert!(s.contains(sub), "{shell} completions lack `{sub}`");
        }
    }
    assert_eq!(code(&pkc(&["completions", "tcsh"])), 2);
}

#[test]
fn version_names_the_commit_and_libtpu() {
    let o = pkc(&["--version"]);
    assert_eq!(code(&o), 0);
    let s = stdout(&o);
    assert!(
        s.starts_with(&format!("pkc {}", env!("CARGO_PKG_VERSION"))),
        "{s}"
    );
    assert!(s.contains("commit "), "{s}");
    assert!(s.contains("libtpu 0.0.51"), "{s}");
}

#[test]
fn help_documents_the_exit_codes() {
    let s = stdout(&pkc(&["--help"]));
    for line in [
        "0  success",
        "2  usage errors",
        "3  pkc test",
        "4  the kernel failed",
        "5  the TPU toolchain",
    ] {
        assert!(s.contains(line), "`{line}` missing from --help:\n{s}");
    }
}

#[test]
fn explain_lists_codes_in_order_with_the_cli_ones() {
    let s = stdout(&pkc(&["explain", "--list"]));
    let codes: Vec<&str> = s
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let mut sorted = codes.clone();
    sorted.sort();
    assert_eq!(codes, sorted);
    assert!(codes.contains(&"PK4001") && codes.contains(&"PK1010"));
    let o = pkc(&["explain", "PK4002"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("flag-does-not-apply"));
}

#[test]
fn usage_errors_carry_codes() {
    let o = pkc(&["check", "kernels/add.pk", "-p", "M=16", "-p", "M=32"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("PK4001"), "{}", stderr(&o));
    let o = pkc(&["run", "std/math.pk"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("PK4004"), "{}", stderr(&o));
}

/// A kernel whose body has `lines` copies of `line`.
fn kernel_with(lines: usize, line: &str) -> String {
    let mut s = String::from("kernel k<M = 8>(x: f32[M, 128]) -> y: f32[M, 128]\n{\n");
    for _ in 0..lines {
        s.push_str(line);
        s.push('\n');
    }
    s.push_str("}\n");
    s
}

/// A diagnostic on a line of 100,000 characters is drawn (no panic): the
/// line is cut to a window around the span, marked with `…`, and the
/// location is still the file's line and column.
#[test]
fn a_diagnostic_on_a_very_long_line_is_drawn_around_its_span() {
    let d = tempfile::tempdir().expect("temp dir");
    let f = d.path().join("long.pk");
    // `zz` starts after 4 + 100,000 spaces and `y[..] = `: column 100013.
    let line = format!("    {}y[..] = zz[..];", " ".repeat(100_000));
    std::fs::write(&f, kernel_with(1, &line)).expect("written");
    let o = pkc(&["check", f.to_str().expect("utf-8")]);
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(
        err.contains("PK0101") && err.contains("unknown name `zz`"),
        "{err}"
    );
    assert!(err.contains("long.pk:3:100013]"), "{err}");
    let shown = err
        .lines()
        .find(|l| l.contains("y[..] = zz[..];"))
        .expect("the line is drawn");
    assert!(shown.contains('…'), "{shown}");
    assert!(
        shown.chars().count() < 200,
        "{} chars",
        shown.chars().count()
    );
    // The same with the span past a long run of multi-byte characters, and
    // on a long line that goes on after the span.
    let line = format!(
        "    y[..] = {}zz[..] + {};",
        "é".repeat(60_000),
        "x[..] + ".repeat(9_000)
    );
    std::fs::write(&f, kernel_with(1, &line)).expect("written");
    let o = pkc(&["check", f.to_str().expect("utf-8")]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).lines().all(|l| l.chars().count() < 300),
        "{}",
        stderr(&o)
    );
}

/// Thousands of errors are counted, not all drawn: the first 50, then how
/// many more there are; `--max-errors` and `--all-errors` change the cap,
/// and JSON output ends with the count of those left out. Ten thousand
/// errors take about a second (half a minute when every one was drawn
/// against the whole file).
#[test]
fn many_errors_are_capped_with_a_count_of_the_rest() {
    let d = tempfile::tempdir().expect("temp dir");
    let f = d.path().join("many.pk");
    std::fs::write(&f, kernel_with(10_000, "    y[..] = = x[..];")).expect("written");
    let path = f.to_str().expect("utf-8");
    let t = std::time::Instant::now();
    let o = pkc(&["check", path]);
    let took = t.elapsed();
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert_eq!(err.matches("PK0003").count(), 50, "{err}");
    assert!(err.contains("... 9950 more errors not shown (--all-errors shows every one)"));
    assert!(err.len() < 64 * 1024, "{} bytes", err.len());
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");

    std::fs::write(&f, kernel_with(200, "    y[..] = = x[..];")).expect("written");
    let o = pkc(&["check", path, "--max-errors", "5"]);
    assert_eq!(stderr(&o).matches("PK0003").count(), 5);
    assert!(stderr(&o).contains("... 195 more errors not shown"));
    for all in [&["--all-errors"][..], &["--max-errors", "0"][..]] {
        let mut args = vec!["check", path];
        args.extend(all);
        let o = pkc(&args);
        assert_eq!(stderr(&o).matches("PK0003").count(), 200, "{all:?}");
        assert!(!stderr(&o).contains("not shown"));
    }
    let o = pkc(&["check", path, "--message-format", "json"]);
    let lines = json_lines(&stdout(&o));
    assert_eq!(lines.len(), 51);
    assert!(lines[..50].iter().all(|l| l["code"] == "PK0003"));
    assert_eq!(lines[50]["type"], "omitted");
    assert_eq!(lines[50]["errors"], 150);
    assert_eq!(lines[50]["warnings"], 0);
}

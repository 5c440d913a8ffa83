//! `pkc verify DIR...`: checks kernel packages against their manifests and
//! prints one line per package, `DIR: ok (...)` or what is wrong with it.
//!
//! A package is checked whole: its format, the manifest's consistency, the
//! exact set of files and every file's SHA-256 and size (AOT executables
//! included), that the CPU reference's side tables and the AOT compile
//! reports describe the manifest's kernel and executables, and that the
//! CPU reference compiles. An executable can only be loaded on a TPU, so
//! beyond its hash and report it is not looked into.
//!
//! Exit 0 when every package is sound, 1 when any is not.

use super::common::{EXIT_ERRORS, EXIT_OK};
use super::cpu::outln;
use super::ui::{json_line, ui};
use clap::Args as ClapArgs;
use miette::Diagnostic as _;
use pk_runtime::package::{LoadError, Package};
use std::path::{Path, PathBuf};

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The package directories (written by `pkc build`).
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,
}

pub fn run(a: Args) -> u8 {
    let mut failed = 0usize;
    let json = ui().json;
    for dir in &a.dirs {
        match verify(dir) {
            Ok(summary) if json => json_line(&serde_json::json!({
                "type": "verified", "dir": dir.display().to_string(), "ok": true, "summary": summary,
            })),
            Ok(summary) => outln(&format!("{}: ok ({summary})", dir.display())),
            Err(e) => {
                failed += 1;
                let code = e.code().map(|c| c.to_string()).unwrap_or_default();
                if json {
                    json_line(&serde_json::json!({
                        "type": "verified", "dir": dir.display().to_string(), "ok": false,
                        "code": code, "message": e.to_string(),
                    }));
                } else {
                    outln(&format!("{}: error[{code}]: {e}", dir.display()));
                }
            }
        }
    }
    if failed == 0 {
        EXIT_OK
    } else if json {
        EXIT_ERRORS
    } else {
        eprintln!(
            "error: {failed} of {} package{} failed verification; `pkc explain CODE` says what each code means",
            a.dirs.len(),
            if a.dirs.len() == 1 { "" } else { "s" }
        );
        EXIT_ERRORS
    }
}

/// Verifies one package; on success, what it holds in a few words.
fn verify(dir: &Path) -> Result<String, LoadError> {
    let p = Package::open(dir)?;
    p.verify()?;
    let m = p.manifest();
    let mut parts = vec![
        format!("kernel `{}`", m.kernel),
        format!("{} files", m.files.len()),
    ];
    if m.cpu_reference.is_some() {
        parts.push("CPU reference".to_string());
    }
    if !m.aot.is_empty() {
        let targets: Vec<&str> = m.aot.iter().map(|a| a.target.as_str()).collect();
        parts.push(format!("AOT {}", targets.join(", ")));
    }
    Ok(parts.join(", "))
}

//! `pkc check FILE...`: parse, resolve and type-check every kernel.

use super::common::{report, KernelArgs, EXIT_ERRORS, EXIT_OK};
use super::ui::{status, ui};
use clap::Args as ClapArgs;
use std::path::PathBuf;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The .pk files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub kernel: KernelArgs,
    /// Check for every TPU generation instead of one `--target`.
    #[arg(long, conflicts_with = "target")]
    pub all_targets: bool,
}

pub fn run(a: Args) -> u8 {
    if let Err(code) = a.kernel.validate() {
        return code;
    }
    let targets = if a.all_targets {
        pk_lang::Target::ALL.to_vec()
    } else {
        vec![a.kernel.target()]
    };
    // Without --target, --all-targets or -p, the workspace file decides.
    let from_workspace = !a.all_targets && a.kernel.target.is_none() && a.kernel.params.is_empty();
    let mut code = EXIT_OK;
    for file in &a.files {
        // One session per file: read, parsed and resolved once, checked
        // per target and parameter set.
        let session = match pk_lang::Session::open(file) {
            Ok(s) => s,
            Err(f) => {
                if !ui().json {
                    eprintln!("{}: errors", file.display());
                }
                report(&f);
                code = EXIT_ERRORS;
                continue;
            }
        };
        let mut checks: Vec<(pk_lang::Target, Vec<(String, String)>)> = targets
            .iter()
            .map(|t| (*t, a.kernel.params.clone()))
            .collect();
        if from_workspace {
            match workspace_checks(file, &session) {
                Ok(Some(c)) => checks = c,
                Ok(None) => {}
                Err(d) => {
                    // The diagnostic names the file in its message.
                    let mut sources = pk_lang::span::SourceMap::new();
                    sources.add(pk_lang::analysis::workspace::FILE_NAME, "");
                    report(&pk_lang::Failure {
                        diags: vec![*d],
                        sources: std::sync::Arc::new(sources),
                    });
                    code = EXIT_ERRORS;
                    continue;
                }
            }
        }
        for (t, params) in &checks {
            let mut opts = a.kernel.options(false);
            opts.target = *t;
            opts.params = params.clone();
            let t = context(*t, params);
            match session.check(&opts) {
                Ok(m) => {
                    if !m.warnings.is_empty() {
                        report(&pk_lang::Failure {
                            diags: m.warnings.clone(),
                            sources: m.sources.clone(),
                        });
                    }
                    let n = m.kernels.len();
                    status(&format!(
                        "{}: ok for {t} ({n} kernel{})",
                        file.display(),
                        if n == 1 { "" } else { "s" }
                    ));
                }
                Err(f) => {
                    if !ui().json {
                        eprintln!("{}: errors for {t}", file.display());
                    }
                    if report(&f) != EXIT_OK {
                        code = EXIT_ERRORS;
                    }
                }
            }
        }
    }
    code
}

/// The checks `pk.toml` asks for (docs/editor.md): each target with each
/// parameter set, a set keeping the parameters some kernel of `file`
/// declares. `None` without a `pk.toml`.
#[allow(clippy::type_complexity)]
fn workspace_checks(
    file: &std::path::Path,
    session: &pk_lang::Session,
) -> Result<Option<Vec<(pk_lang::Target, Vec<(String, String)>)>>, Box<pk_lang::diag::Diag>> {
    let dir = std::fs::canonicalize(file)
        .ok()
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    let ws = pk_lang::analysis::Workspace::find(&dir)?;
    if ws.path.is_none() {
        return Ok(None);
    }
    let declared: Vec<String> = if session.program().modules.is_empty() {
        Vec::new()
    } else {
        session
            .program()
            .root_kernels()
            .iter()
            .flat_map(|(_, k)| k.params.iter().map(|p| p.name.name.clone()))
            .collect()
    };
    let mut out = Vec::new();
    for t in &ws.targets {
        for set in &ws.params {
            let mine: Vec<(String, String)> = set
                .iter()
                .filter(|(n, _)| declared.contains(n))
                .cloned()
                .collect();
            if !out.contains(&(*t, mine.clone())) {
                out.push((*t, mine));
            }
        }
    }
    Ok(Some(out))
}

/// A check as the status line names it: `v5e` or `v5e M=1024`.
fn context(t: pk_lang::Target, params: &[(String, String)]) -> String {
    let mut s = t.to_string();
    for (n, v) in params {
        s.push_str(&format!(" {n}={v}"));
    }
    s
}

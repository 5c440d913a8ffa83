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
    let mut code = EXIT_OK;
    for file in &a.files {
        for t in &targets {
            let mut opts = a.kernel.options(false);
            opts.target = *t;
            match pk_lang::compile_file(file, &opts) {
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

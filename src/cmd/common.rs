//! Options shared by subcommands and how diagnostics are printed.

use clap::Args as ClapArgs;
use pk_lang::diag::RenderStyle;
use pk_lang::{Failure, Options, Target};
use std::io::IsTerminal;

/// Exit codes scripts can rely on.
pub const EXIT_OK: u8 = 0;
pub const EXIT_ERRORS: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

/// Kernel selection and specialisation flags.
#[derive(ClapArgs, Debug, Clone)]
pub struct KernelArgs {
    /// The kernel to use when the file defines several.
    #[arg(long, short = 'k', value_name = "NAME")]
    pub kernel: Option<String>,
    /// Set a kernel parameter: `-p M=1024`, `-p T=bf16`. Repeatable.
    #[arg(short = 'p', long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    /// TPU generation: v4, v5e, v5p, v6e or tpu7x.
    #[arg(long, short = 't', default_value = "v5e", value_parser = parse_target)]
    pub target: Target,
}

impl KernelArgs {
    pub fn options(&self, specialise: bool) -> Options {
        Options {
            target: self.target,
            params: self.params.clone(),
            kernel: self.kernel.clone(),
            specialise,
            ..Options::default()
        }
    }
}

pub fn parse_param(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() && !v.trim().is_empty() => {
            Ok((n.trim().to_string(), v.trim().to_string()))
        }
        _ => Err(format!("expected NAME=VALUE, found `{s}`")),
    }
}

pub fn parse_target(s: &str) -> Result<Target, String> {
    s.parse()
}

/// Plain text when stderr is not a terminal or NO_COLOR is set.
pub fn style() -> RenderStyle {
    if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
        RenderStyle::Color
    } else {
        RenderStyle::Plain
    }
}

/// Prints a failure's diagnostics to stderr and returns the exit code.
pub fn report(f: &Failure) -> u8 {
    eprint!("{}", f.render(style()));
    let n = f.diags.iter().filter(|d| d.is_error()).count();
    if n > 0 {
        eprintln!("error: {n} error{} found", if n == 1 { "" } else { "s" });
        EXIT_ERRORS
    } else {
        EXIT_OK
    }
}

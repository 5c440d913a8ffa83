//! `pkc`: the pk kernel compiler.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cmd;

/// pk: write TPU kernels in a small tile language, check them against the
/// TPU's rules, build them for TPU generations, and run them on CPU.
#[derive(Parser)]
#[command(name = "pkc", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check .pk files for errors (syntax, types, TPU rules).
    Check(cmd::check::Args),
    /// Print an intermediate form of a kernel.
    Emit(cmd::emit::Args),
    /// Explain a diagnostic code, e.g. `pkc explain PK0301`.
    Explain(cmd::explain::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Check(a) => cmd::check::run(a),
        Command::Emit(a) => cmd::emit::run(a),
        Command::Explain(a) => cmd::explain::run(a),
    };
    ExitCode::from(code)
}

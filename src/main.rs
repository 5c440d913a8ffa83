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
    /// Build kernel packages (StableHLO, Mosaic, CPU reference, and with
    /// --aot executables for each TPU generation).
    Build(cmd::build::Args),
    /// Check .pk files for errors (syntax, types, TPU rules).
    Check(cmd::check::Args),
    /// Print an intermediate form of a kernel.
    Emit(cmd::emit::Args),
    /// Explain a diagnostic code, e.g. `pkc explain PK0301`.
    Explain(cmd::explain::Args),
    /// Run a kernel on the CPU reference, or on this host's TPU with
    /// --device tpu: inputs and outputs as .npy files.
    Run(cmd::run::Args),
    /// Run a kernel on the CPU reference (or the TPU, with --device tpu) and
    /// compare its outputs with expected .npy files.
    Test(cmd::test::Args),
    /// Time a kernel on the CPU reference with random inputs.
    Bench(cmd::bench::Args),
    /// Check packages against their manifests: every file's sha256, the CPU
    /// reference and the AOT executables.
    Verify(cmd::verify::Args),
}

fn main() -> ExitCode {
    // Output piped into `head` ends when the reader goes away, quietly, as
    // for other Unix tools (Rust ignores SIGPIPE, so writes would panic).
    #[cfg(unix)]
    // SAFETY: restoring the default action of one signal before any thread
    // starts; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Build(a) => cmd::build::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Emit(a) => cmd::emit::run(a),
        Command::Explain(a) => cmd::explain::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Test(a) => cmd::test::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Verify(a) => cmd::verify::run(a),
    };
    ExitCode::from(code)
}

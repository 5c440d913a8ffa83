//! `pkc`: the pk kernel compiler.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

mod cmd;

/// Exit codes, as `pkc --help` prints them (the constants are in
/// `cmd::common`).
const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  errors in the input: source diagnostics, .npy files, packages that
     fail verification, outputs that cannot be written
  2  usage errors: unknown, repeated or conflicting flags, bad values
  3  pkc test: the kernel ran and an output differs from its expected file
  4  the kernel failed while running: a strictness check, a trap, the time
     or fuel limit, or a run the host cannot hold in memory
  5  the TPU toolchain is unavailable: libtpu missing or unloadable, no TPU,
     no Ray (or no reachable cluster) for `pkc tune --ray`";

/// pk: write TPU kernels in a small tile language, check them against the
/// TPU's rules, build them for TPU generations, and run them on CPU.
#[derive(Parser)]
#[command(name = "pkc", version, about, long_about = None, propagate_version = true)]
#[command(after_help = EXIT_CODES)]
struct Cli {
    #[command(flatten)]
    global: cmd::ui::GlobalArgs,
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
    /// Lay .pk files out in pk's canonical layout (in place), or check that
    /// they are with --check.
    Fmt(cmd::fmt::Args),
    /// The language server, over stdin/stdout: diagnostics, hover, go to
    /// definition and more for editors (README, "Editor").
    Lsp(cmd::lsp::Args),
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
    /// Compile any StableHLO module (e.g. a JAX model exported for TPU)
    /// ahead of time with libtpu and report code size and memory per target.
    Aot(cmd::aot::Args),
    /// Compute the metadata library kernels take as scalar prefetch (`pkc meta
    /// gmm`, `pkc meta splash`), as .npy files.
    #[command(subcommand_required = true, subcommand_value_name = "KIND")]
    Meta(cmd::meta::Args),
    /// Choose a kernel's tunable parameters per TPU generation (checker
    /// pruning, libtpu AOT, a performance model or CPU timing) and cache
    /// the best for `build --tuned` and `run --tuned`.
    Tune(cmd::tune::Args),
    /// What libtpu's schedule of one configuration says: the predicted
    /// time, a grid step's critical unit, each .pk line's bundles and units
    /// (text, --json, --html, --trace for Perfetto).
    Profile(cmd::profile::Args),
    /// Compile StableHLO modules given as JSON on stdin with libtpu (what
    /// a Ray task of `pkc tune --ray` runs).
    #[command(hide = true)]
    TuneWorker(cmd::tune_ray::WorkerArgs),
    /// Print a shell completion script: `pkc completions bash > ...`.
    Completions(cmd::completions::Args),
}

/// `pkc --version`: pk's version, the commit it was built from, and the
/// libtpu `pkc build --aot` would load.
fn long_version() -> String {
    let libtpu = match pk_runtime::pjrt::locate_libtpu(None) {
        Ok(p) => p.display().to_string(),
        Err(e) => format!("not found ({e})"),
    };
    format!(
        "{} (commit {})\nlibtpu {} at {libtpu}",
        env!("CARGO_PKG_VERSION"),
        env!("PK_GIT_COMMIT"),
        pk_runtime::pjrt::LIBTPU_VERSION
    )
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
    // Computed at run time (the libtpu found depends on the environment);
    // clap keeps a `'static` string, and this one lives as long as the
    // process anyway.
    let version: &'static str = Box::leak(long_version().into_boxed_str());
    let matches = Cli::command().long_version(version).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    cmd::ui::init(&cli.global);
    let code = match cli.command {
        Command::Build(a) => cmd::build::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Emit(a) => cmd::emit::run(a),
        Command::Explain(a) => cmd::explain::run(a),
        Command::Fmt(a) => cmd::fmt::run(a),
        Command::Lsp(a) => cmd::lsp::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Test(a) => cmd::test::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Aot(a) => cmd::aot::run(a),
        Command::Tune(a) => cmd::tune::run(a),
        Command::Profile(a) => cmd::profile::run(a),
        Command::TuneWorker(a) => cmd::tune_ray::worker(a),
        Command::Completions(a) => cmd::completions::run(a, &mut Cli::command()),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Meta(a) => cmd::meta::run(a),
    };
    ExitCode::from(code)
}

//! Options shared by subcommands and how diagnostics are printed.

use clap::Args as ClapArgs;
use pk_lang::{Failure, Options, Target};

/// Exit codes scripts can rely on (documented in the README and in
/// `pkc --help`).
pub const EXIT_OK: u8 = 0;
/// Errors in the input: source diagnostics, unreadable or mismatched
/// `.npy` files, packages that fail verification, outputs that cannot be
/// written.
pub const EXIT_ERRORS: u8 = 1;
/// Usage errors: unknown or conflicting flags, bad flag values.
pub const EXIT_USAGE: u8 = 2;
/// `pkc test`: the kernel ran, and an output differs from its expected file.
pub const EXIT_MISMATCH: u8 = 3;
/// The kernel failed while running: a strictness check (out-of-bounds
/// access, uninitialised read, race, revisit, DMA misuse), a trap, the time
/// or fuel limit, or a run the host cannot hold in memory.
pub const EXIT_RUN: u8 = 4;
/// The TPU toolchain is unavailable: libtpu cannot be found or loaded, or
/// `--device tpu` on a host without a TPU.
pub const EXIT_TOOLCHAIN: u8 = 5;

/// Kernel selection and specialisation flags.
#[derive(ClapArgs, Debug, Clone)]
pub struct KernelArgs {
    /// The kernel to use when the file defines several.
    #[arg(long, short = 'k', value_name = "NAME")]
    pub kernel: Option<String>,
    /// Set a kernel parameter: `-p M=1024`, `-p T=bf16`. Repeatable.
    #[arg(short = 'p', long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    /// TPU generation: v4, v5e, v5p, v6e or tpu7x [default: v5e].
    #[arg(long, short = 't', value_parser = parse_target)]
    pub target: Option<Target>,
}

impl KernelArgs {
    /// The `--target`, or the default generation.
    pub fn target(&self) -> Target {
        self.target.unwrap_or(Options::default().target)
    }

    pub fn options(&self, specialise: bool) -> Options {
        Options {
            target: self.target(),
            params: self.params.clone(),
            kernel: self.kernel.clone(),
            specialise,
            ..Options::default()
        }
    }

    /// Checks what clap cannot: no parameter set twice.
    pub fn validate(&self) -> Result<(), u8> {
        reject_repeats("-p", &self.params)
    }

    /// The first flag given that selects or specialises a kernel from
    /// source, which a built package (one fixed specialisation) ignores.
    pub fn source_only_flag(&self) -> Option<&'static str> {
        if !self.params.is_empty() {
            Some("-p/--param")
        } else if self.kernel.is_some() {
            Some("-k/--kernel")
        } else if self.target.is_some() {
            Some("-t/--target")
        } else {
            None
        }
    }
}

/// A usage error for a `NAME=...` flag given twice for the same name
/// (which one should win is anyone's guess).
pub fn reject_repeats<T>(flag: &str, items: &[(String, T)]) -> Result<(), u8> {
    for (i, (name, _)) in items.iter().enumerate() {
        if items[..i].iter().any(|(n, _)| n == name) {
            return Err(super::usage::UsageError::Repeated {
                flag: flag.to_string(),
                name: name.clone(),
            }
            .report());
        }
    }
    Ok(())
}

/// `--in NAME=-` reads standard input, which holds one file: at most one
/// of the `(flag, arguments)` lists may name it.
pub fn one_stdin(flags: &[(&str, &[(String, std::path::PathBuf)])]) -> Result<(), u8> {
    let mut from_stdin = flags.iter().flat_map(|(flag, args)| {
        args.iter()
            .filter(|(_, p)| pk_runtime::cpu::npy::is_stdin(p))
            .map(move |(n, _)| format!("{flag} {n}"))
    });
    if let (Some(first), Some(second)) = (from_stdin.next(), from_stdin.next()) {
        return Err(super::usage::UsageError::StdinTwice { first, second }.report());
    }
    Ok(())
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

/// Prints a failure's diagnostics and returns the exit code.
pub fn report(f: &Failure) -> u8 {
    super::ui::print_diags(&f.diags, &f.sources);
    let n = f.diags.iter().filter(|d| d.is_error()).count();
    if n > 0 {
        if !super::ui::ui().json {
            eprintln!("error: {n} error{} found", if n == 1 { "" } else { "s" });
        }
        EXIT_ERRORS
    } else {
        EXIT_OK
    }
}

/// The exit code of a CPU reference error: [`EXIT_RUN`] when the kernel
/// failed while running, [`EXIT_ERRORS`] for bad input files or packages.
pub fn cpu_exit_code(e: &pk_runtime::cpu::Error) -> u8 {
    use pk_runtime::cpu::Error as E;
    match e {
        E::OutOfBounds { .. }
        | E::DivideByZero { .. }
        | E::NotMultiple { .. }
        | E::DynamicExtent { .. }
        | E::Uninitialized { .. }
        | E::Revisit { .. }
        | E::Race { .. }
        | E::Runaway { .. }
        | E::Dma { .. }
        | E::BlockIndex { .. }
        | E::Memory { .. }
        | E::HostMemory { .. }
        | E::Deadlock { .. }
        | E::SemaphoreLeft { .. }
        | E::WindowInFlight { .. }
        | E::UnorderedWrites { .. }
        | E::DeviceOutOfRange { .. }
        | E::Barrier { .. } => EXIT_RUN,
        _ => EXIT_ERRORS,
    }
}

/// The exit code of a libtpu error: [`EXIT_TOOLCHAIN`] when libtpu or a TPU
/// is not there to use, [`EXIT_ERRORS`] when it rejected the kernel.
pub fn pjrt_exit_code(e: &pk_runtime::pjrt::PjrtError) -> u8 {
    use pk_runtime::pjrt::PjrtError as E;
    match e {
        E::LibtpuNotFound { .. }
        | E::LibtpuLoad { .. }
        | E::LibtpuDamaged { .. }
        | E::PluginAlreadyLoaded { .. }
        | E::PluginInit { .. }
        | E::MissingFunction { .. }
        | E::NoTpuDevice { .. }
        | E::ClientCreate { .. } => EXIT_TOOLCHAIN,
        E::Execute { .. } => EXIT_RUN,
        _ => EXIT_ERRORS,
    }
}

/// Whether a FILE argument names a kernel package rather than a `.pk`
/// source: a directory, or a symbolic link that cannot be followed (a loop,
/// or a link to nothing) and does not end in `.pk`, which then fails as a
/// package does (PK3001) rather than as an unreadable source.
pub fn is_package_arg(path: &std::path::Path) -> bool {
    if path.is_dir() {
        return true;
    }
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    is_link && std::fs::metadata(path).is_err() && path.extension().is_none_or(|e| e != "pk")
}

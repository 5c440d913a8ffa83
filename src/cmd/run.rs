//! `pkc run FILE --in NAME=PATH.npy... --out NAME=PATH.npy... [--device
//! cpu|tpu]`: runs a kernel on the CPU reference (the default; FILE is a
//! `.pk` file or a package directory built by `pkc build`), or on this
//! host's TPU (FILE is a `.pk` file).

use super::common::{one_stdin, reject_repeats, EXIT_OK};
use super::cpu::{self, parse_named, report_cpu, CpuArgs};
use super::device::{DeviceArgs, Kernel};
use super::output::{self, Output};
use super::ui;
use super::usage::UsageError;
use clap::Args as ClapArgs;
use pk_runtime::cpu::npy;
use pk_runtime::pjrt::TpuTarget;
use std::path::PathBuf;
use std::time::Instant;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The .pk file, or a package directory built by `pkc build`.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// An input array: `--in x=x.npy`. One per input operand.
    #[arg(long = "in", value_name = "NAME=PATH", value_parser = parse_named)]
    pub inputs: Vec<(String, PathBuf)>,
    /// Where to write an output: `--out z=z.npy`. Files are replaced
    /// atomically, all outputs together, once the run succeeds; a FIFO or
    /// device is written in place; `-` is standard output.
    #[arg(long = "out", value_name = "NAME=PATH", value_parser = parse_named)]
    pub outputs: Vec<(String, PathBuf)>,
    #[command(flatten)]
    pub device: DeviceArgs,
    #[command(flatten)]
    pub cpu: CpuArgs,
    /// Use the best configuration `pkc tune` cached for this kernel, shapes
    /// and target (for parameters not given with -p).
    #[arg(long)]
    pub tuned: bool,
    /// The tuning cache `--tuned` reads (default: $PK_TUNE_CACHE, else
    /// `tune` under $PK_CACHE_DIR, else $XDG_CACHE_HOME/pk, else
    /// ~/.cache/pk).
    #[arg(long, value_name = "DIR", requires = "tuned")]
    pub tuned_cache: Option<PathBuf>,
}

pub fn run(mut a: Args) -> u8 {
    if let Err(code) = reject_repeats("--in", &a.inputs)
        .and_then(|()| one_stdin(&[("--in", &a.inputs)]))
        .and_then(|()| reject_repeats("--out", &a.outputs))
        .and_then(|()| distinct_destinations(&a.outputs))
    {
        return code;
    }
    // With --tuned, the file is read and parsed once for the tuning cache's
    // key and the kernel's check.
    let mut session = None;
    if a.tuned {
        if super::common::is_package_arg(&a.file) {
            return UsageError::NotApplicable {
                flag: "--tuned".into(),
                context: format!("to the package `{}`, which holds one built specialisation", a.file.display()),
                hint: "run the .pk source with --tuned, or build a tuned package with `pkc build --tuned`".into(),
            }
            .report();
        }
        let k = &a.cpu.kernel;
        let target: TpuTarget = k.target();
        let session_opened = match pk_lang::Session::open(&a.file) {
            Ok(s) => s,
            Err(f) => return super::common::report(&f).max(super::common::EXIT_ERRORS),
        };
        let session = session.insert(session_opened);
        match super::tune_cache::tuned_params(
            session,
            k.kernel.as_deref(),
            &k.params,
            target,
            a.tuned_cache.as_deref(),
        ) {
            Ok(p) => a.cpu.kernel.params = p,
            Err(code) => return code,
        }
    }
    let kernel = match Kernel::load_from(&a.file, session.as_ref(), &a.cpu, &a.device) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let ops = kernel.operands();
    let outs = match cpu::output_indices(&ops, &a.outputs) {
        Ok(o) => o,
        Err(e) => return report_cpu(&e),
    };
    // Every destination is checked and opened before the work, so that a
    // long run is never thrown away for want of a directory.
    let mut sinks = Vec::with_capacity(a.outputs.len());
    for (_, path) in &a.outputs {
        match Output::prepare(path) {
            Ok(s) => sinks.push(s),
            Err(e) => return report_cpu(&e),
        }
    }
    let inputs = match cpu::read_inputs(&ops, &a.inputs) {
        Ok(i) => i,
        Err(e) => return report_cpu(&e),
    };
    let t = Instant::now();
    let spin = ui::spinner(format!("running `{}`", ops.kernel));
    let results = kernel.run(inputs);
    drop(spin);
    let results = match results {
        Ok(r) => r,
        Err(code) => return code,
    };
    let elapsed = t.elapsed();
    // The images borrow the outputs' data: no second copy is made.
    let images: Vec<npy::Image> = outs.iter().map(|&i| npy::image(&results[i])).collect();
    if let Err(e) = output::commit(sinks, &images) {
        return report_cpu(&e);
    }
    ui::status(&format!(
        "ran `{}` in {:.3} ms; wrote {} output{}",
        ops.kernel,
        elapsed.as_secs_f64() * 1e3,
        outs.len(),
        if outs.len() == 1 { "" } else { "s" }
    ));
    EXIT_OK
}

/// Two outputs written to one file would leave only the last: a usage
/// error (paths compared as written, and through links where they exist).
fn distinct_destinations(outputs: &[(String, PathBuf)]) -> Result<(), u8> {
    let key = |p: &PathBuf| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
    for (i, (name, path)) in outputs.iter().enumerate() {
        if let Some((other, _)) = outputs[..i].iter().find(|(_, p)| key(p) == key(path)) {
            if output::is_stream_path(path) {
                continue;
            }
            return Err(UsageError::SameDestination {
                first: other.clone(),
                second: name.clone(),
                path: path.display().to_string(),
            }
            .report());
        }
    }
    Ok(())
}

//! `pkc tune --eval cpu`: the candidates timed on the CPU reference.
//!
//! Each candidate's CPU reference is compiled and its inputs made once (the
//! `--in` arrays, the others random, as `pkc bench` makes them); a timing
//! is the median of `repeats` runs after one warm-up, as the successive
//! halving of the ranking asks. Every run is stopped at `--timeout`, so a
//! configuration that never finishes costs one limit, not the sweep.

use super::tune_sweep::NotTimed;
use pk_runtime::cpu::{CpuKernel, Error, HostArray, RunOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A configuration ready to be timed on the CPU reference.
pub struct CpuRun {
    kernel: CpuKernel,
    inputs: Vec<Arc<HostArray>>,
    opts: RunOptions,
}

/// A CPU reference error as one line: `PK1015: message`.
fn line(e: &Error) -> String {
    let code = miette::Diagnostic::code(e).map_or(String::new(), |c| format!("{c}: "));
    format!("{code}{e}")
}

impl CpuRun {
    /// Compiles the candidate's CPU reference and makes its inputs; why
    /// not, when it has no CPU reference or its inputs cannot be made.
    pub fn prepare(
        package: &pk_runtime::package::NewPackage,
        given: &[(String, PathBuf)],
        timeout: Option<Duration>,
    ) -> Result<CpuRun, NotTimed> {
        let (wasm, manifest) = package.cpu_reference.clone().ok_or_else(|| {
            NotTimed::Failed("it has no CPU reference to time (PK3012)".to_string())
        })?;
        let kernel =
            CpuKernel::new(&wasm, manifest, false).map_err(|e| NotTimed::Failed(line(&e)))?;
        let (arrays, _) =
            super::bench::inputs(&kernel, given).map_err(|e| NotTimed::Failed(line(&e)))?;
        let opts = RunOptions {
            timeout,
            ..RunOptions::default()
        };
        Ok(CpuRun {
            kernel,
            inputs: arrays.into_iter().map(Arc::new).collect(),
            opts,
        })
    }

    /// The median time of `repeats` runs after one warm-up, seconds; why
    /// not, when a run fails or does not finish within the limit.
    pub fn median(&self, repeats: u32) -> Result<f64, NotTimed> {
        let run = || {
            self.kernel
                .run_measured(&self.inputs, &self.opts)
                .map_err(|e| match (&e, self.opts.timeout) {
                    (Error::Runaway { .. }, Some(limit)) => NotTimed::TimedOut(format!(
                        "a run took longer than the --timeout of {} s ({})",
                        limit.as_secs_f64(),
                        line(&e)
                    )),
                    _ => NotTimed::Failed(line(&e)),
                })
        };
        run()?;
        let mut times = Vec::with_capacity(repeats.max(1) as usize);
        for _ in 0..repeats.max(1) {
            let t = Instant::now();
            run()?;
            times.push(t.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }
}

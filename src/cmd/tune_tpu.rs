//! `pkc tune --eval tpu`: the candidates timed on this host's TPU through
//! libtpu (PJRT).
//!
//! The TPU is opened once and must be the generation being tuned. Each
//! candidate's StableHLO module is compiled for the device and loaded once;
//! its inputs (the `--in` arrays, the others random, made as `pkc bench`
//! makes them) are made and copied to the device once for every candidate
//! with the same input operands. A timing is the wall time from the execute call
//! to the device's completion event, so it includes the launch (a few
//! microseconds), not the copies; [`Loaded::median`] takes the median of
//! `repeats` executions after one warm-up, as the successive halving of the
//! ranking asks.

use super::build::print_diagnostic;
use super::common::{pjrt_exit_code, EXIT_USAGE};
use super::tune::TuneError;
use super::tune_sweep::{module_of, Candidate, NotTimed};
use super::ui::ui;
use pk_lowering::wasm::abi::Role;
use pk_runtime::cpu::CpuKernel;
use pk_runtime::pjrt::{Client, DeviceBuffer, LoadedExecutable, Plugin, TpuTarget};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// This host's TPU, opened for timing.
pub struct Device {
    client: Client,
    target: TpuTarget,
}

impl Device {
    /// Opens the TPU and checks that every target tuned is its generation.
    /// On failure, prints the diagnostic and returns the exit code: a host
    /// without a TPU gets libtpu's own coded error (exit 5).
    pub fn open(libtpu: Option<&Path>, targets: &[TpuTarget]) -> Result<Device, u8> {
        let opened = Plugin::load_logged(libtpu, ui().verbose)
            .and_then(Client::new)
            .and_then(|client| client.target().map(|t| (client, t)));
        let (client, host) = match opened {
            Ok(x) => x,
            Err(e) => {
                print_diagnostic(&e);
                return Err(pjrt_exit_code(&e));
            }
        };
        if let Some(other) = targets.iter().find(|&&t| t != host) {
            print_diagnostic(&TuneError::TpuTargetMismatch {
                host: host.to_string(),
                asked: other.to_string(),
            });
            return Err(EXIT_USAGE);
        }
        Ok(Device {
            client,
            target: host,
        })
    }

    /// Compiles and loads every candidate, and copies its inputs to the
    /// device; a candidate that fails either is left out of the ranking
    /// with the reason, as one the CPU reference cannot run is under
    /// `--eval cpu`.
    pub fn prepare<'d>(&'d self, built: &[Candidate], given: &[(String, PathBuf)]) -> Loaded<'d> {
        let mut loaded = Loaded {
            sets: Vec::new(),
            runs: Vec::with_capacity(built.len()),
        };
        let bar = super::ui::progress(
            built.len() as u64,
            &format!("load on this host's {}", self.target),
        );
        for c in built {
            let run = self.load(c, given, &mut loaded.sets);
            loaded.runs.push(run);
            bar.inc(1);
        }
        bar.finish_and_clear();
        loaded
    }

    /// One candidate loaded, and the index of its input set.
    fn load<'d>(
        &'d self,
        c: &Candidate,
        given: &[(String, PathBuf)],
        sets: &mut Vec<InputSet<'d>>,
    ) -> Result<(LoadedExecutable<'d>, usize), String> {
        let stablehlo = module_of(c, self.target)?;
        let exe = self
            .client
            .compile(self.target, stablehlo)
            .map_err(|e| e.to_string())?;
        // The inputs are made as `pkc bench` makes them, from the operand
        // table of the candidate's CPU reference: the same table (names,
        // roles, dtypes, shapes) makes the same arrays, so a set is made,
        // read and copied once for all candidates that share it.
        let (wasm, manifest) = c.built.package.cpu_reference.as_ref().ok_or_else(|| {
            c.no_cpu_reference
                .clone()
                .unwrap_or_else(|| "PK3012: no CPU reference to make inputs from".into())
        })?;
        let signature: Vec<Operand> = manifest
            .operands
            .iter()
            .filter(|o| o.role != Role::Output)
            .map(|o| (o.name.clone(), o.role, o.dtype.clone(), o.shape.clone()))
            .collect();
        if let Some(i) = sets.iter().position(|s| s.signature == signature) {
            return Ok((exe, i));
        }
        let kernel = CpuKernel::new(wasm, manifest.clone(), false).map_err(|e| e.to_string())?;
        let (arrays, _) = super::bench::inputs(&kernel, given).map_err(|e| e.to_string())?;
        let buffers = kernel
            .inputs()
            .zip(&arrays)
            .map(|((_, o), a)| exe.upload(&o.name, a))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        sets.push(InputSet { signature, buffers });
        Ok((exe, sets.len() - 1))
    }
}

/// An input operand as the CPU reference's table has it: name, role, dtype
/// and shape.
type Operand = (String, Role, String, Vec<u64>);

/// The inputs of one operand table, copied to the device.
struct InputSet<'d> {
    signature: Vec<Operand>,
    buffers: Vec<DeviceBuffer<'d>>,
}

/// The candidates loaded on the TPU, with their inputs there.
pub struct Loaded<'d> {
    sets: Vec<InputSet<'d>>,
    /// Per candidate, its executable and input set, or why not.
    runs: Vec<Result<(LoadedExecutable<'d>, usize), String>>,
}

impl Loaded<'_> {
    /// Candidate `i`'s median of `repeats` timed executions after one
    /// warm-up, seconds; why not, when it was not loaded or an execution
    /// fails.
    pub fn median(&self, i: usize, repeats: u32) -> Result<f64, NotTimed> {
        let failed = |m: String| NotTimed::Failed(m);
        let (exe, set) = match self.runs.get(i) {
            Some(Ok(r)) => r,
            Some(Err(why)) => return Err(failed(why.clone())),
            None => return Err(failed("not loaded".into())),
        };
        let args: Vec<&DeviceBuffer<'_>> = self.sets[*set].buffers.iter().collect();
        exe.execute(&args).map_err(|e| failed(e.to_string()))?;
        let mut times = Vec::with_capacity(repeats.max(1) as usize);
        for _ in 0..repeats.max(1) {
            let t = Instant::now();
            let outputs = exe.execute(&args).map_err(|e| failed(e.to_string()))?;
            times.push(t.elapsed().as_secs_f64());
            // Freed on the device after the clock has stopped.
            drop(outputs);
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }
}

//! `pkc run FILE --in NAME=PATH.npy... --out NAME=PATH.npy... [--device
//! cpu|tpu]`: runs a kernel on the CPU reference (the default; FILE is a
//! `.pk` file or a package directory built by `pkc build`), or on this
//! host's TPU (FILE is a `.pk` file).

use super::common::EXIT_OK;
use super::cpu::{self, parse_named, report_cpu, CpuArgs};
use super::device::{DeviceArgs, Kernel};
use clap::Args as ClapArgs;
use pk_runtime::cpu::npy;
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
    /// Where to write an output: `--out z=z.npy` (written atomically).
    #[arg(long = "out", value_name = "NAME=PATH", value_parser = parse_named)]
    pub outputs: Vec<(String, PathBuf)>,
    #[command(flatten)]
    pub device: DeviceArgs,
    #[command(flatten)]
    pub cpu: CpuArgs,
}

pub fn run(a: Args) -> u8 {
    let kernel = match Kernel::load(&a.file, &a.cpu, &a.device) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let ops = kernel.operands();
    let outs = match cpu::output_indices(&ops, &a.outputs) {
        Ok(o) => o,
        Err(e) => return report_cpu(&e),
    };
    let inputs = match cpu::read_inputs(&ops, &a.inputs) {
        Ok(i) => i,
        Err(e) => return report_cpu(&e),
    };
    let t = Instant::now();
    let results = match kernel.run(inputs) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let elapsed = t.elapsed();
    for ((_, path), &i) in a.outputs.iter().zip(&outs) {
        if let Err(e) = npy::write(path, &results[i]) {
            return report_cpu(&e);
        }
    }
    eprintln!(
        "ran `{}` in {:.3} ms; wrote {} output{}",
        ops.kernel,
        elapsed.as_secs_f64() * 1e3,
        outs.len(),
        if outs.len() == 1 { "" } else { "s" }
    );
    EXIT_OK
}

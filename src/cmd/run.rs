//! `pkc run FILE --in NAME=PATH.npy... --out NAME=PATH.npy...`: runs a
//! kernel on the CPU reference. FILE is a `.pk` file or a package
//! directory built by `pkc build`.

use super::common::EXIT_OK;
use super::cpu::{self, parse_named, report_cpu, CpuArgs};
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
    pub cpu: CpuArgs,
}

pub fn run(a: Args) -> u8 {
    let loaded = match cpu::load(&a.file, &a.cpu) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let k = &loaded.kernel;
    let outs = match cpu::output_indices(k, &a.outputs) {
        Ok(o) => o,
        Err(e) => return report_cpu(&e),
    };
    let inputs = match cpu::read_inputs(k, &a.inputs) {
        Ok(i) => i,
        Err(e) => return report_cpu(&e),
    };
    let t = Instant::now();
    let results = match k.run(inputs, &cpu::run_options(&a.cpu)) {
        Ok(r) => r,
        Err(e) => return report_cpu(&e),
    };
    let elapsed = t.elapsed();
    for ((_, path), &i) in a.outputs.iter().zip(&outs) {
        if let Err(e) = npy::write(path, &results[i]) {
            return report_cpu(&e);
        }
    }
    eprintln!(
        "ran `{}` in {:.3} ms; wrote {} output{}",
        k.manifest().kernel,
        elapsed.as_secs_f64() * 1e3,
        outs.len(),
        if outs.len() == 1 { "" } else { "s" }
    );
    EXIT_OK
}

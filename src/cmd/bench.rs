//! `pkc bench FILE [-p NAME=VALUE]... [--iters N]`: times a kernel on the
//! CPU reference with random inputs of its declared shapes and dtypes. The
//! kernel is compiled once; each timed call is one full run (block copies,
//! grid, write-back), and the median is reported with the throughput the
//! IR's cost model gives (flops and HBM bytes of one call).

use super::common::EXIT_OK;
use super::cpu::{self, outln, report_cpu, CpuArgs};
use clap::Args as ClapArgs;
use pk_lang::ir::DType;
use pk_runtime::cpu::{CpuKernel, HostArray};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The .pk file, or a package directory built by `pkc build`.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Timed calls (after one warm-up call).
    #[arg(long, default_value_t = 10)]
    pub iters: usize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub cpu: CpuArgs,
}

/// A small deterministic generator (xorshift64*), so runs are repeatable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// Random inputs: floats uniform in [-1, 1), integers in [-8, 8), bools
/// random. Scalar-prefetch operands are zeros, so that index maps reading
/// them pick valid blocks.
fn random_inputs(k: &CpuKernel) -> Vec<HostArray> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    k.inputs()
        .map(|(i, o)| {
            let shape: Vec<usize> = o.shape.iter().map(|&d| d as usize).collect();
            let n: usize = shape.iter().product();
            let d = k.dtype(i);
            if o.role == pk_lowering::wasm::abi::Role::Prefetch {
                return HostArray::zeros(d, &shape);
            }
            match d {
                DType::F32 => {
                    HostArray::from_f32(&shape, &(0..n).map(|_| rng.unit()).collect::<Vec<_>>())
                }
                DType::BF16 => HostArray::bf16_from_f32(
                    &shape,
                    &(0..n).map(|_| rng.unit()).collect::<Vec<_>>(),
                ),
                _ => HostArray::from_ints(
                    d,
                    &shape,
                    &(0..n)
                        .map(|_| (rng.next() % 16) as i64 - 8)
                        .collect::<Vec<_>>(),
                ),
            }
        })
        .collect()
}

pub fn run(a: Args) -> u8 {
    let loaded = match cpu::load(&a.file, &a.cpu) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let k = &loaded.kernel;
    let inputs: Vec<Arc<HostArray>> = random_inputs(k).into_iter().map(Arc::new).collect();
    let opts = cpu::run_options(&a.cpu);
    let mut times = Vec::with_capacity(a.iters);
    for it in 0..=a.iters {
        let t = Instant::now();
        if let Err(e) = k.run_shared(&inputs, &opts) {
            return report_cpu(&e);
        }
        if it > 0 {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    times.sort_by(f64::total_cmp);
    let median = if times.is_empty() {
        0.0
    } else if times.len() % 2 == 1 {
        times[times.len() / 2]
    } else {
        (times[times.len() / 2 - 1] + times[times.len() / 2]) / 2.0
    };
    let cost = loaded.ir.as_ref().map(pk_lang::ir::cost::estimate);
    let (flops, bytes) = cost.map_or((0, 0), |c| (c.flops, c.bytes_accessed));
    let name = &k.manifest().kernel;
    if a.json {
        outln(&format!(
            "{{\"kernel\": \"{name}\", \"median_s\": {median}, \"min_s\": {}, \"max_s\": {}, \"iters\": {}, \"flops\": {flops}, \"bytes\": {bytes}}}",
            times.first().unwrap_or(&0.0),
            times.last().unwrap_or(&0.0),
            times.len()
        ));
        return EXIT_OK;
    }
    let rate = |x: u64| {
        if median > 0.0 {
            x as f64 / median / 1e9
        } else {
            0.0
        }
    };
    outln(&format!(
        "{name}: median {:.3} ms over {} calls (min {:.3} ms, max {:.3} ms)",
        median * 1e3,
        times.len(),
        times.first().unwrap_or(&0.0) * 1e3,
        times.last().unwrap_or(&0.0) * 1e3
    ));
    if cost.is_some() {
        outln(&format!(
            "  {:.1} GFLOP/s ({flops} flops), {:.2} GB/s ({bytes} bytes of HBM traffic)",
            rate(flops),
            rate(bytes)
        ));
    }
    EXIT_OK
}

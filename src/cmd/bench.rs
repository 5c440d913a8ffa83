//! `pkc bench FILE [-p NAME=VALUE]... [--in NAME=PATH]... [--iters N]`:
//! times a kernel on the CPU reference. Inputs given with `--in` are read
//! (and checked) from `.npy` files, so that a kernel driven by scalar
//! prefetch (a page table, group sizes) does its real work; the others are
//! random arrays of their declared shapes and dtypes. The kernel is
//! compiled once; each timed call is one full run (block copies, grid,
//! write-back), and the median is reported with the flops of the IR's cost
//! model and the bytes the executor counted moving during the run (block
//! copies in and out, DMA copies). With `--mesh`, each timed call runs
//! the kernel on every device of the mesh.

use super::common::{one_stdin, reject_repeats, EXIT_OK};
use super::cpu::{self, outln, parse_named, report_cpu, CpuArgs};
use super::ui::{json_line, ui};
use clap::Args as ClapArgs;
use pk_lang::ir::DType;
use pk_runtime::cpu::{CpuKernel, Error, HostArray, Traffic};
use serde_json::json;
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
    /// Print one JSON object on stdout instead of text (as
    /// `--message-format json` does).
    #[arg(long)]
    pub json: bool,
    /// An input array from a file: `--in ids=ids.npy`. Any subset of the
    /// inputs; the others are random (scalar-prefetch operands: zeros).
    #[arg(long = "in", value_name = "NAME=PATH", value_parser = parse_named)]
    pub inputs: Vec<(String, PathBuf)>,
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

/// A random array for input `i`: floats uniform in [-1, 1), integers in
/// [-8, 8), bools random. Scalar-prefetch operands are zeros, so that index
/// maps reading them pick valid blocks.
fn random_input(k: &CpuKernel, i: usize, rng: &mut Rng) -> HostArray {
    let o = &k.manifest().operands[i];
    let shape: Vec<usize> = o.shape.iter().map(|&d| d as usize).collect();
    let n: usize = shape.iter().product();
    let d = k.dtype(i);
    if o.role == pk_lowering::wasm::abi::Role::Prefetch {
        return HostArray::zeros(d, &shape);
    }
    match d {
        DType::F32 => HostArray::from_f32(&shape, &(0..n).map(|_| rng.unit()).collect::<Vec<_>>()),
        DType::BF16 => {
            HostArray::bf16_from_f32(&shape, &(0..n).map(|_| rng.unit()).collect::<Vec<_>>())
        }
        _ => HostArray::from_ints(
            d,
            &shape,
            &(0..n)
                .map(|_| (rng.next() % 16) as i64 - 8)
                .collect::<Vec<_>>(),
        ),
    }
}

/// The inputs of a run, in input order: each one named by `--in` read from
/// its file and checked against its operand, the others random. Returns
/// the names read from files.
pub(super) fn inputs(
    k: &CpuKernel,
    given: &[(String, PathBuf)],
) -> Result<(Vec<HostArray>, Vec<String>), Error> {
    for (name, _) in given {
        if !k.inputs().any(|(_, o)| &o.name == name) {
            let known: Vec<&str> = k.inputs().map(|(_, o)| o.name.as_str()).collect();
            return Err(Error::UnknownOperand {
                kernel: k.manifest().kernel.clone(),
                role: "input".into(),
                name: name.clone(),
                known: known.join(", "),
            });
        }
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut arrays = Vec::new();
    let mut from_files = Vec::new();
    for (i, o) in k.inputs() {
        match given.iter().find(|(n, _)| *n == o.name) {
            Some((_, path)) => {
                arrays.push(k.read_input(i, path)?);
                from_files.push(o.name.clone());
            }
            None => arrays.push(random_input(k, i, &mut rng)),
        }
    }
    Ok((arrays, from_files))
}

pub fn run(a: Args) -> u8 {
    if let Err(code) =
        reject_repeats("--in", &a.inputs).and_then(|()| one_stdin(&[("--in", &a.inputs)]))
    {
        return code;
    }
    let loaded = match cpu::load(&a.file, &a.cpu) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let k = &loaded.kernel;
    match cpu::mesh_run(k, &a.cpu) {
        Ok(Some(mesh)) => return run_mesh(&a, &loaded, &mesh),
        Ok(None) => {}
        Err(e) => return report_cpu(&e),
    }
    let (arrays, from_files) = match inputs(k, &a.inputs) {
        Ok(x) => x,
        Err(e) => return report_cpu(&e),
    };
    let inputs: Vec<Arc<HostArray>> = arrays.into_iter().map(Arc::new).collect();
    let opts = cpu::run_options(&a.cpu);
    let mut times = Vec::with_capacity(a.iters);
    // Every call moves the same bytes (the grid and the inputs do not
    // change); the last call's count is reported.
    let mut moved = Traffic::default();
    for it in 0..=a.iters {
        let t = Instant::now();
        match k.run_measured(&inputs, &opts) {
            Ok((_, traffic)) => moved = traffic,
            Err(e) => return report_cpu(&e),
        }
        if it > 0 {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    let median = median(&mut times);
    let flops = loaded
        .ir
        .as_ref()
        .map(|ir| pk_lang::ir::cost::estimate(ir).flops);
    let bytes = moved.total();
    let name = &k.manifest().kernel;
    if a.json || ui().json {
        json_line(&json!({
            "type": "bench",
            "kernel": name,
            "median_s": median,
            "min_s": times.first().unwrap_or(&0.0),
            "max_s": times.last().unwrap_or(&0.0),
            "iters": times.len(),
            "flops": flops.unwrap_or(0),
            "bytes": bytes,
            "bytes_in": moved.blocks_in,
            "bytes_out": moved.blocks_out,
            "dma_bytes": moved.dma,
            "inputs_from_files": from_files,
        }));
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
    if let Some(flops) = flops {
        outln(&format!("  {:.1} GFLOP/s ({flops} flops)", rate(flops)));
    }
    outln(&format!(
        "  {:.2} GB/s ({bytes} bytes moved: blocks in {}, blocks out {}, DMA {})",
        rate(bytes),
        moved.blocks_in,
        moved.blocks_out,
        moved.dma
    ));
    if !from_files.is_empty() {
        outln(&format!("  inputs from files: {}", from_files.join(", ")));
    }
    EXIT_OK
}

/// Sorts `times` and returns their median (0 for none).
fn median(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    if times.is_empty() {
        0.0
    } else if times.len() % 2 == 1 {
        times[times.len() / 2]
    } else {
        (times[times.len() / 2 - 1] + times[times.len() / 2]) / 2.0
    }
}

/// `pkc bench --mesh`: each timed call runs the kernel once on every
/// device of the mesh (under the fixed schedule, or each of `--schedules`
/// random ones), from the devices' inputs to their outputs. Inputs given
/// with `--in` stack the devices' arrays; the others are random, each
/// device's its own. The flops are the cost model's for one device times
/// the devices.
fn run_mesh(a: &Args, loaded: &cpu::Loaded, mesh: &cpu::MeshRun) -> u8 {
    let k = &loaded.kernel;
    let devices: u64 = mesh.shape.iter().product();
    let mut ops = cpu::Operands::of_cpu(k);
    for o in &mut ops.list {
        o.shape = mesh.shape.iter().chain(&o.shape).copied().collect();
    }
    for (name, _) in &a.inputs {
        if !ops.inputs().any(|o| &o.name == name) {
            return report_cpu(&Error::UnknownOperand {
                kernel: k.manifest().kernel.clone(),
                role: "input".into(),
                name: name.clone(),
                known: ops.names(false),
            });
        }
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut arrays = Vec::new();
    let mut from_files = Vec::new();
    for ((i, _), o) in k.inputs().zip(ops.inputs()) {
        match a.inputs.iter().rev().find(|(n, _)| *n == o.name) {
            Some((_, path)) => {
                match pk_runtime::cpu::read_operand(&o.name, o.dtype, &o.shape, path) {
                    Ok(x) => {
                        arrays.push(x);
                        from_files.push(o.name.clone());
                    }
                    Err(e) => return report_cpu(&e),
                }
            }
            None => {
                let each: Vec<HostArray> =
                    (0..devices).map(|_| random_input(k, i, &mut rng)).collect();
                let mut shape: Vec<usize> = mesh.shape.iter().map(|&d| d as usize).collect();
                shape.extend(&each[0].shape);
                let data = each.iter().flat_map(|x| x.data.iter().copied()).collect();
                arrays.push(HostArray::new(each[0].dtype, shape, data));
            }
        }
    }
    let opts = cpu::run_options(&a.cpu);
    let mut times = Vec::with_capacity(a.iters);
    for it in 0..=a.iters {
        let call = arrays.clone();
        let t = Instant::now();
        if let Err(code) = cpu::run_on_mesh(k, mesh, call, &opts) {
            return code;
        }
        if it > 0 {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    let median = median(&mut times);
    let flops = loaded.ir.as_ref().map(|ir| {
        pk_lang::ir::cost::estimate(ir)
            .flops
            .saturating_mul(devices)
    });
    let name = &k.manifest().kernel;
    if a.json || ui().json {
        json_line(&json!({
            "type": "bench",
            "kernel": name,
            "devices": devices,
            "median_s": median,
            "min_s": times.first().unwrap_or(&0.0),
            "max_s": times.last().unwrap_or(&0.0),
            "iters": times.len(),
            "flops": flops.unwrap_or(0),
            "inputs_from_files": from_files,
        }));
        return EXIT_OK;
    }
    outln(&format!(
        "{name} on a mesh of {devices} devices: median {:.3} ms over {} calls (min {:.3} ms, max {:.3} ms)",
        median * 1e3,
        times.len(),
        times.first().unwrap_or(&0.0) * 1e3,
        times.last().unwrap_or(&0.0) * 1e3
    ));
    if let Some(flops) = flops.filter(|_| median > 0.0) {
        outln(&format!(
            "  {:.1} GFLOP/s ({flops} flops over all devices)",
            flops as f64 / median / 1e9
        ));
    }
    if !from_files.is_empty() {
        outln(&format!("  inputs from files: {}", from_files.join(", ")));
    }
    EXIT_OK
}

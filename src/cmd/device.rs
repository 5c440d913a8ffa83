//! `--device cpu|tpu` of `pkc run` and `pkc test`: where a kernel runs.
//!
//! Both devices check the `--in`, `--out` and `--expect` files against the
//! same operand table (see [`Operands`]) and hand back the outputs in the
//! same form, so the commands differ only in how the kernel is prepared and
//! run: the CPU reference compiles the kernel to WebAssembly; the TPU builds
//! its StableHLO module for `--target`, checks the inputs, and only then
//! opens the TPU through libtpu, compiles the module there and runs it.

use super::build::print_diagnostic;
use super::common::{pjrt_exit_code, EXIT_ERRORS};
use super::cpu::{self, report_cpu, CpuArgs, DmaArg, Operands};
use super::usage::UsageError;
use clap::{Args as ClapArgs, ValueEnum};
use pk_lang::ir;
use pk_lang::span::SourceMap;
use pk_runtime::cpu::{HostArray, RunOptions};
use pk_runtime::package::build;
use pk_runtime::pjrt::{Client, PjrtError, Plugin, TpuTarget};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// The CPU reference (WebAssembly), on any machine.
    Cpu,
    /// The TPU of this host, through libtpu (PJRT).
    Tpu,
}

#[derive(ClapArgs, Debug, Clone)]
pub struct DeviceArgs {
    /// Where to run the kernel.
    #[arg(long, value_enum, default_value = "cpu")]
    pub device: Device,
    /// The libtpu to load with `--device tpu` (default: $PK_LIBTPU, else
    /// pk's cache).
    #[arg(long, value_name = "PATH")]
    pub libtpu: Option<PathBuf>,
}

/// A kernel ready to run on the chosen device.
pub enum Kernel {
    Cpu {
        loaded: Box<cpu::Loaded>,
        options: RunOptions,
        /// On a mesh: every array stacks the devices' on leading
        /// dimensions.
        mesh: Option<cpu::MeshRun>,
    },
    Tpu(Box<TpuKernel>),
}

/// A kernel built for a TPU generation, not yet compiled by libtpu.
pub struct TpuKernel {
    kernel: ir::Kernel,
    stablehlo: String,
    target: TpuTarget,
    sources: Arc<SourceMap>,
    libtpu: Option<PathBuf>,
}

impl Kernel {
    /// Prepares the kernel of `file` for the device of `d`; on failure,
    /// prints the diagnostics and returns the exit code.
    pub fn load(file: &Path, c: &CpuArgs, d: &DeviceArgs) -> Result<Kernel, u8> {
        Kernel::load_from(file, None, c, d)
    }

    /// [`Kernel::load`] of a file the caller has open already as `session`.
    pub fn load_from(
        file: &Path,
        session: Option<&pk_lang::Session>,
        c: &CpuArgs,
        d: &DeviceArgs,
    ) -> Result<Kernel, u8> {
        match d.device {
            Device::Cpu => {
                if d.libtpu.is_some() {
                    return Err(UsageError::NotApplicable {
                        flag: "--libtpu".into(),
                        context: "without --device tpu".into(),
                        hint: "--libtpu chooses the libtpu that runs the kernel on this host's TPU"
                            .into(),
                    }
                    .report());
                }
                let loaded = cpu::load_from(file, session, c)?;
                let mesh = cpu::mesh_run(&loaded.kernel, c).map_err(|e| report_cpu(&e))?;
                Ok(Kernel::Cpu {
                    loaded: Box::new(loaded),
                    options: cpu::run_options(c),
                    mesh,
                })
            }
            Device::Tpu => TpuKernel::load(file, session, c, d.libtpu.clone())
                .map(|k| Kernel::Tpu(Box::new(k))),
        }
    }

    /// The operands the command-line files are checked against.
    pub fn operands(&self) -> Operands {
        match self {
            Kernel::Cpu { loaded, mesh, .. } => {
                let mut ops = Operands::of_cpu(&loaded.kernel);
                if let Some(mesh) = mesh {
                    for o in &mut ops.list {
                        o.shape = mesh.shape.iter().chain(&o.shape).copied().collect();
                    }
                }
                ops
            }
            Kernel::Tpu(k) => Operands::of_ir(&k.kernel),
        }
    }

    /// Runs the kernel on `inputs` (in input order, as `cpu::read_inputs`
    /// returns them) and returns its outputs in output order; on failure,
    /// prints the diagnostic and returns the exit code.
    pub fn run(&self, inputs: Vec<HostArray>) -> Result<Vec<HostArray>, u8> {
        match self {
            Kernel::Cpu {
                loaded,
                options,
                mesh: None,
            } => loaded
                .kernel
                .run(inputs, options)
                .map_err(|e| report_cpu(&e)),
            Kernel::Cpu {
                loaded,
                options,
                mesh: Some(mesh),
            } => cpu::run_on_mesh(&loaded.kernel, mesh, inputs, options),
            Kernel::Tpu(k) => k.run(&inputs),
        }
    }
}

impl TpuKernel {
    fn load(
        file: &Path,
        session: Option<&pk_lang::Session>,
        c: &CpuArgs,
        libtpu: Option<PathBuf>,
    ) -> Result<TpuKernel, u8> {
        c.kernel.validate()?;
        if let Some(flag) = cpu_only_flag(c) {
            return Err(UsageError::NotApplicable {
                flag: flag.into(),
                context: "to --device tpu".into(),
                hint: "it is an option of the CPU reference (--device cpu, the default)".into(),
            }
            .report());
        }
        if super::common::is_package_arg(file) {
            return Err(UsageError::NotApplicable {
                flag: "--device tpu".into(),
                context: format!("to the package `{}`", file.display()),
                hint: "a package runs on the CPU reference (--device cpu); run the .pk source with --device tpu".into(),
            }
            .report());
        }
        let (target, built) = match session {
            Some(s) => super::emit::build_stablehlo_of(s, &c.kernel)?,
            None => super::emit::build_stablehlo(file, &c.kernel)?,
        };
        let names: Vec<&str> = built
            .kernels
            .iter()
            .map(|k| k.kernel.name.as_str())
            .collect();
        let i = cpu::only_kernel(file, &names)?;
        let Some(k) = built.kernels.into_iter().nth(i) else {
            return Err(EXIT_ERRORS);
        };
        Ok(TpuKernel {
            kernel: k.kernel,
            stablehlo: k.package.stablehlo().to_string(),
            target,
            sources: built.sources,
            libtpu,
        })
    }

    /// Opens the TPU (which fails with `PK2009` on a host without one),
    /// compiles the kernel there, and runs it once.
    fn run(&self, inputs: &[HostArray]) -> Result<Vec<HostArray>, u8> {
        let ops = Operands::of_ir(&self.kernel);
        let named: Vec<(&str, &HostArray)> =
            ops.inputs().map(|o| o.name.as_str()).zip(inputs).collect();
        let shapes: Vec<Vec<usize>> = ops
            .outputs()
            .map(|o| o.shape.iter().map(|&d| d as usize).collect())
            .collect();
        let outputs: Vec<(&str, ir::DType, &[usize])> = ops
            .outputs()
            .zip(&shapes)
            .map(|(o, s)| (o.name.as_str(), o.dtype, s.as_slice()))
            .collect();
        let run = || -> Result<Vec<HostArray>, PjrtError> {
            let plugin = Plugin::load_logged(self.libtpu.as_deref(), super::ui::ui().verbose)?;
            let client = Client::new(plugin)?;
            client.run(self.target, &self.stablehlo, &named, &outputs)
        };
        run().map_err(|e| self.report(&e))
    }

    /// Prints a libtpu error: at the `.pk` source when the TPU compiler's
    /// message locates it, else as it is.
    fn report(&self, e: &PjrtError) -> u8 {
        match build::libtpu_diagnostic(e, &self.kernel, &self.sources) {
            Some(d) => super::ui::print_diags(std::slice::from_ref(&d), &self.sources),
            None => print_diagnostic(e),
        }
        pjrt_exit_code(e)
    }
}

/// The first CPU reference option given, which a TPU run cannot honour.
/// (`--timeout` has a default, so it cannot be told apart and is ignored.)
fn cpu_only_flag(c: &CpuArgs) -> Option<&'static str> {
    if c.threads.is_some() {
        Some("--threads")
    } else if c.fuel.is_some() {
        Some("--fuel")
    } else if c.dma != DmaArg::Start {
        Some("--dma")
    } else if c.check_uninit {
        Some("--check-uninit")
    } else if c.mesh.is_some() {
        Some("--mesh")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::common::KernelArgs;

    fn cpu_args(params: &[(&str, &str)]) -> CpuArgs {
        CpuArgs {
            kernel: KernelArgs {
                kernel: None,
                params: params
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .collect(),
                target: None,
            },
            threads: None,
            no_pin: false,
            timeout: super::cpu::Timeout(None),
            fuel: None,
            dma: DmaArg::Start,
            check_uninit: false,
            mesh: None,
            schedules: None,
            seed: 0,
        }
    }

    /// A TPU run checks its files against the same operands as the CPU
    /// reference: names, roles, dtypes and shapes agree.
    #[test]
    fn both_devices_see_the_same_operands() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let cases: [(&str, &[(&str, &str)]); 3] = [
            (
                "kernels/add.pk",
                &[("M", "16"), ("N", "256"), ("bm", "8"), ("bn", "128")],
            ),
            ("kernels/matmul.pk", &[("T", "f32")]),
            ("kernels/softmax.pk", &[]),
        ];
        for (file, params) in cases {
            let c = cpu_args(params);
            let path = root.join(file);
            let Ok(Kernel::Cpu { loaded, .. }) = Kernel::load(&path, &c, &cpu_device()) else {
                panic!("{file} loads on the CPU");
            };
            let Ok(tpu) = TpuKernel::load(&path, None, &c, None) else {
                panic!("{file} builds for the TPU");
            };
            let ops = Operands::of_cpu(&loaded.kernel);
            assert_eq!(ops, Operands::of_ir(&tpu.kernel), "{file}");
            assert!(ops.inputs().count() > 0 && ops.outputs().count() > 0);
            assert!(tpu.stablehlo.contains("tpu_custom_call"), "{file}");
            assert_eq!(tpu.target, TpuTarget::V5e);
        }
    }

    fn cpu_device() -> DeviceArgs {
        DeviceArgs {
            device: Device::Cpu,
            libtpu: None,
        }
    }

    #[test]
    fn cpu_only_options_are_named() {
        assert_eq!(cpu_only_flag(&cpu_args(&[])), None);
        let mut c = cpu_args(&[]);
        c.dma = DmaArg::Wait;
        assert_eq!(cpu_only_flag(&c), Some("--dma"));
    }
}

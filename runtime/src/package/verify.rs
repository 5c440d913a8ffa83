//! What a package's files must agree on beyond their hashes, and loading a
//! verified package's CPU reference.
//!
//! The manifest is the root of trust: its hash table covers every other
//! file, so a file changed after the build is caught by its hash. An edit
//! with its hash updated is not; what is checked here is that the files
//! describe the same kernel, so that such a package is refused with a code
//! instead of running with one description and being called with another,
//! and with a message that says which. `rebuild.rs` then checks the rest
//! of a package with a CPU reference by building it again.
//!
//! invariant: a package that opens has a CPU reference whose kernel, ABI,
//! target, parameters, operands and grid are the manifest's, and AOT reports whose
//! target, topology, size and libtpu are those of their entries.

use pk_lowering::wasm::abi::{self, CpuManifest};

use super::{AotReport, Manifest, OperandRole, Package, PackageError};
use crate::cpu::CpuKernel;
use crate::pjrt::{TpuTarget, MAX_MESH_DEVICES};

/// Why a package's CPU reference cannot be loaded: the package itself, or
/// the CPU reference refusing its module (`PK1022`, `PK1023`).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum LoadError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Package(#[from] PackageError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Cpu(#[from] crate::cpu::Error),
}

impl Package {
    /// Opens the package in `dir` (verifying it whole, see
    /// [`Package::open`]) and compiles its CPU reference. `fuel` enables
    /// fuel metering, as in [`CpuKernel::new`].
    pub fn load_cpu(
        dir: impl AsRef<std::path::Path>,
        fuel: bool,
    ) -> Result<(Package, CpuKernel), LoadError> {
        let package = Package::open(dir)?;
        let kernel = package.cpu_kernel(fuel)?;
        Ok((package, kernel))
    }

    /// Compiles the package's CPU reference; a package built without one
    /// (`PK3012`) cannot run on the CPU.
    pub fn cpu_kernel(&self, fuel: bool) -> Result<CpuKernel, LoadError> {
        let Some((wasm, m)) = self.cpu_reference() else {
            return Err(PackageError::NoCpuReference {
                dir: self.dir().display().to_string(),
                kernel: self.manifest().kernel.clone(),
            }
            .into());
        };
        Ok(CpuKernel::new(wasm, m.clone(), fuel)?)
    }

    /// Everything `pkc verify` checks beyond [`Package::open`]: the CPU
    /// reference compiles. The AOT executables are covered by their hashes
    /// and reports when the package opens; loading them needs a TPU.
    pub fn verify(&self) -> Result<(), LoadError> {
        if self.cpu_reference().is_some() {
            self.cpu_kernel(false)?;
        }
        Ok(())
    }
}

/// Checks that the CPU reference's side tables describe the manifest's
/// kernel; the message says what differs.
pub(super) fn check_cpu(m: &Manifest, cpu: &CpuManifest) -> Result<(), String> {
    let Some(r) = &m.cpu_reference else {
        return Ok(());
    };
    let differ = |what: &str, manifest: &dyn std::fmt::Display, found: &dyn std::fmt::Display| {
        Err(format!(
            "the CPU reference's {what} is `{found}`, the manifest's `{manifest}`"
        ))
    };
    if cpu.kernel != m.kernel {
        return differ("kernel", &m.kernel, &cpu.kernel);
    }
    if cpu.abi_version != r.abi_version {
        return differ("ABI version", &r.abi_version, &cpu.abi_version);
    }
    if cpu.target != r.target {
        return differ("target", &r.target, &cpu.target);
    }
    if !m.targets.contains(&r.target) {
        return Err(format!(
            "the CPU reference models {}, which is not among the targets",
            r.target
        ));
    }
    let params: Vec<(String, String)> = m
        .params
        .iter()
        .map(|p| (p.name.clone(), p.value.to_string()))
        .collect();
    if params != cpu.params {
        let show = |v: &[(String, String)]| {
            v.iter()
                .map(|(n, x)| format!("{n}={x}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        return differ("specialisation", &show(&params), &show(&cpu.params));
    }
    if cpu.operands.len() != m.operands.len() {
        return differ("operand count", &m.operands.len(), &cpu.operands.len());
    }
    for (o, c) in m.operands.iter().zip(&cpu.operands) {
        let role = match c.role {
            abi::Role::Prefetch => OperandRole::Prefetch,
            abi::Role::Input => OperandRole::Input,
            abi::Role::Output => OperandRole::Output,
        };
        if o.name != c.name || o.role != role || o.dtype != c.dtype || o.shape != c.shape {
            return Err(format!(
                "the CPU reference's operand `{}` ({:?} {}{:?}) is not the manifest's `{}` ({:?} {}{:?})",
                c.name, role, c.dtype, c.shape, o.name, o.role, o.dtype, o.shape
            ));
        }
    }
    if cpu.grid.len() != m.grid.len() {
        return differ("grid rank", &m.grid.len(), &cpu.grid.len());
    }
    for (a, c) in m.grid.iter().zip(&cpu.grid) {
        let semantics = match c.semantics {
            abi::Semantics::Parallel => "parallel",
            abi::Semantics::Arbitrary => "arbitrary",
        };
        if a.name != c.name
            || a.extent != c.extent
            || a.semantics != semantics
            || a.dynamic.is_some() != c.dynamic.is_some()
        {
            // A dynamic axis shows its bound after `<=`, as it is written.
            let cpu_extent = match &c.dynamic {
                Some(d) => format!(
                    "(element {} of operand {}) <= {}",
                    d.element, d.operand, c.extent
                ),
                None => c.extent.to_string(),
            };
            let extent = match &a.dynamic {
                Some(src) => format!("{src} <= {}", a.extent),
                None => a.extent.to_string(),
            };
            return Err(format!(
                "the CPU reference's grid axis `{} in {cpu_extent} {semantics}` is not the manifest's `{} in {extent} {}`",
                c.name, a.name, a.semantics
            ));
        }
    }
    Ok(())
}

/// Checks an AOT report against its entry, its executable's size and the
/// manifest's libtpu version.
pub(super) fn check_report(
    m: &Manifest,
    target: TpuTarget,
    report: &AotReport,
    executable_bytes: u64,
) -> Result<(), String> {
    let name = target.name();
    if report.target != name {
        return Err(format!(
            "the compile report of {name} is for `{}`",
            report.target
        ));
    }
    if !target.knows_topology(&report.topology) {
        return Err(format!(
            "the compile report of {name} names topology `{}`, not `{}` or `{}`",
            report.topology,
            target.topology_name(),
            target.topology_for(MAX_MESH_DEVICES).unwrap_or_default()
        ));
    }
    if report.executable_bytes != executable_bytes {
        return Err(format!(
            "the compile report of {name} records a {}-byte executable; the package's has {executable_bytes} bytes",
            report.executable_bytes
        ));
    }
    if m.toolchain.libtpu.as_deref() != Some(report.libtpu.as_str()) {
        return Err(format!(
            "the executable of {name} was compiled by libtpu {}, the manifest says {}",
            report.libtpu,
            m.toolchain.libtpu.as_deref().unwrap_or("none")
        ));
    }
    Ok(())
}

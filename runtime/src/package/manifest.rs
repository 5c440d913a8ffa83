//! `manifest.json`: what a kernel package holds, described well enough that a
//! host can call the kernel without the compiler (operands, grid, cost,
//! VMEM), and the SHA-256 of every other file so that it can trust them.
//!
//! invariant: a manifest that [`Manifest::check`] accepts names only files
//! inside its package (relative paths of plain segments), lists every file
//! it refers to in `files`, and names only known targets and dtypes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use pk_lang::ir::{self, BlockDim, ParamValue, Role};

use crate::pjrt::TpuTarget;

/// The package format this pk writes and reads. It changes whenever the
/// layout or the meaning of a package changes.
pub const FORMAT: &str = "pk-package/2";

/// The package's description, stored as `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: String,
    /// The kernel's name in its `.pk` source.
    pub kernel: String,
    /// The `.pk` file it was built from (file name only: packages move).
    pub source: String,
    /// Every parameter with its value in this specialisation.
    pub params: Vec<Param>,
    /// In call order: scalar prefetch, inputs, outputs.
    pub operands: Vec<Operand>,
    pub grid: Vec<GridAxis>,
    /// The TPU generations the kernel was checked for.
    pub targets: Vec<String>,
    /// The StableHLO module of each target, in the order of `targets`.
    /// The first target's is `kernel.stablehlo.mlir`; a target whose
    /// module differs from it (another scoped VMEM limit) has its own
    /// `stablehlo/<target>.mlir`.
    pub stablehlo: Vec<TargetModule>,
    /// Pk's estimate for one call, as passed to XLA.
    pub cost: Cost,
    pub vmem: Vmem,
    /// The WebAssembly reference, when the package has one.
    pub cpu_reference: Option<CpuReference>,
    /// Executables compiled ahead of time, one per target.
    pub aot: Vec<AotEntry>,
    /// SHA-256 and size of every file of the package except `manifest.json`,
    /// by path relative to the package.
    pub files: BTreeMap<String, FileEntry>,
    pub toolchain: Toolchain,
}

/// A parameter value: an integer, a float, a bool, a dtype name or `null`
/// for an optional parameter that is `none`. (Untagged: JSON `3` reads as an
/// integer before it could read as a float.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValueEntry {
    Int(i64),
    Float(f64),
    Bool(bool),
    Dtype(String),
    None,
}

impl std::fmt::Display for ParamValueEntry {
    /// A value as `-p` takes it and the CPU reference's side table spells
    /// it (`1024`, `bf16`, `0.5`, `true`, `none`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValueEntry::Int(v) => write!(f, "{v}"),
            ParamValueEntry::Float(x) => write!(f, "{x:?}"),
            ParamValueEntry::Bool(b) => write!(f, "{b}"),
            ParamValueEntry::Dtype(d) => f.write_str(d),
            ParamValueEntry::None => f.write_str("none"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    pub value: ParamValueEntry,
}

/// The role of an operand in the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OperandRole {
    Prefetch,
    Input,
    Output,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operand {
    pub name: String,
    pub role: OperandRole,
    /// The `.pk` dtype name (`f32`, `bf16`, ...).
    pub dtype: String,
    /// The whole array's shape.
    pub shape: Vec<u64>,
    /// Where the kernel sees it: `vmem`, `smem` or `any` (HBM, reached by
    /// DMA).
    pub memory_space: String,
    /// The block each grid step sees, one entry per array dimension, `null`
    /// for a squeezed dimension (as in Pallas's `BlockSpec`); `null` as a
    /// whole when the kernel sees the whole array.
    pub block: Option<Vec<Option<u64>>>,
    /// For an output, the input whose buffer it reuses.
    pub alias: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridAxis {
    pub name: String,
    /// The number of steps, or for a dynamic axis its upper bound.
    pub extent: u64,
    /// `parallel` or `arbitrary`.
    pub semantics: String,
    /// For a dynamic axis, the scalar-prefetch element that holds its
    /// number of steps, as written (`n[0]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cost {
    pub flops: u64,
    pub transcendentals: u64,
    pub bytes_accessed: u64,
    /// Bytes one device sends to others per call (remote copies over the
    /// interconnect; 0 for a kernel that does not communicate).
    #[serde(default)]
    pub remote_bytes: u64,
}

/// The StableHLO module one target compiles, and the scoped VMEM limit
/// it passes to the TPU compiler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetModule {
    pub target: String,
    /// The module's path in the package.
    pub module: String,
    /// The kernel's own `vmem_limit`, else the target's whole VMEM.
    pub vmem_limit_bytes: u64,
}

/// VMEM use, as pk's type checker accounts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vmem {
    /// The kernel's own `vmem_limit`, when it declares one.
    pub kernel_limit_bytes: Option<u64>,
    /// Bytes per VMEM operand (double-buffered when blocked) and scratch
    /// buffer, with the tiled layout's padding.
    pub buffers: Vec<VmemBuffer>,
    pub total_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmemBuffer {
    pub name: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuReference {
    /// The `.wasm` module.
    pub module: String,
    /// Its side tables (`CpuManifest` as JSON).
    pub manifest: String,
    /// The target whose VMEM the module's memory models.
    pub target: String,
    /// The host interface version the module was built for.
    pub abi_version: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AotEntry {
    pub target: String,
    /// libtpu's serialized executable.
    pub executable: String,
    /// The compile report (`AotReport` as JSON).
    pub report: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Lower-case hex.
    pub sha256: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Toolchain {
    /// The pk version that built the package.
    pub pk: String,
    /// The stable Mosaic serialization version of the kernel body.
    pub mosaic_version: i64,
    /// The libtpu that compiled the AOT executables; `null` without them.
    pub libtpu: Option<String>,
}

impl Manifest {
    /// Describes `kernel` (specialised) with everything but the file
    /// table, the StableHLO modules, the CPU reference and the AOT
    /// entries, which the writer fills in from the files it writes.
    pub fn describe(
        kernel: &ir::Kernel,
        source: &str,
        targets: &[TpuTarget],
        mosaic_version: i64,
    ) -> Manifest {
        let cost = ir::cost::estimate(kernel);
        let buffers: Vec<VmemBuffer> = pk_lang::check::rules::vmem_report(kernel)
            .into_iter()
            .map(|(name, bytes)| VmemBuffer { name, bytes })
            .collect();
        Manifest {
            format: FORMAT.to_string(),
            kernel: kernel.name.clone(),
            source: source.to_string(),
            params: kernel
                .params
                .iter()
                .map(|p| Param {
                    name: p.name.clone(),
                    value: match &p.value {
                        ParamValue::Int(v) => ParamValueEntry::Int(*v),
                        ParamValue::Dtype(d) => ParamValueEntry::Dtype(d.name().to_string()),
                        ParamValue::Float(x) => ParamValueEntry::Float(*x),
                        ParamValue::Bool(b) => ParamValueEntry::Bool(*b),
                        ParamValue::None => ParamValueEntry::None,
                        // A built kernel is specialised; this keeps the
                        // description total rather than panicking.
                        ParamValue::Unbound => ParamValueEntry::Dtype("unbound".to_string()),
                    },
                })
                .collect(),
            operands: kernel.operands.iter().map(|o| operand(kernel, o)).collect(),
            grid: kernel
                .grid
                .iter()
                .map(|a| GridAxis {
                    name: a.name.clone(),
                    extent: a.extent.get(),
                    semantics: a.semantics.name().to_string(),
                    dynamic: a.dynamic.as_ref().map(|d| {
                        let index: Vec<String> = d.index.iter().map(|i| i.to_string()).collect();
                        format!("{}[{}]", kernel.operands[d.operand].name, index.join(", "))
                    }),
                })
                .collect(),
            targets: targets.iter().map(|t| t.name().to_string()).collect(),
            stablehlo: Vec::new(),
            cost: Cost {
                flops: cost.flops,
                transcendentals: cost.transcendentals,
                bytes_accessed: cost.bytes_accessed,
                remote_bytes: cost.remote_bytes,
            },
            vmem: Vmem {
                kernel_limit_bytes: kernel.vmem_limit,
                total_bytes: buffers.iter().map(|b| b.bytes).sum(),
                buffers,
            },
            cpu_reference: None,
            aot: Vec::new(),
            files: BTreeMap::new(),
            toolchain: Toolchain {
                pk: env!("CARGO_PKG_VERSION").to_string(),
                mosaic_version,
                libtpu: None,
            },
        }
    }

    /// The manifest as written to disk: pretty JSON, keys in declaration
    /// order, ending with a newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The StableHLO module entry of `target`, if the package is for it.
    pub fn module_entry(&self, target: TpuTarget) -> Option<&TargetModule> {
        self.stablehlo.iter().find(|m| m.target == target.name())
    }

    /// The AOT entry of `target`, if compiled.
    pub fn aot_entry(&self, target: TpuTarget) -> Option<&AotEntry> {
        self.aot.iter().find(|a| a.target == target.name())
    }

    /// Checks the manifest's internal consistency (see the module's
    /// invariant); the message says what is wrong.
    pub fn check(&self) -> Result<(), String> {
        for name in self.files.keys() {
            if !is_safe_path(name) {
                return Err(format!(
                    "file name `{name}` is not a plain path inside the package"
                ));
            }
            if name == super::MANIFEST {
                return Err("manifest.json lists itself".to_string());
            }
        }
        for (name, entry) in &self.files {
            if entry.sha256.len() != 64 || !entry.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!(
                    "`{name}` has no SHA-256 (found `{}`)",
                    entry.sha256
                ));
            }
        }
        let listed = |file: &str, what: &str| {
            if self.files.contains_key(file) {
                Ok(())
            } else {
                Err(format!("{what} `{file}` is not in the file table"))
            }
        };
        listed(super::STABLEHLO, "the StableHLO module")?;
        listed(super::MOSAIC, "the Mosaic module")?;
        if let Some(cpu) = &self.cpu_reference {
            listed(&cpu.module, "the CPU reference")?;
            listed(&cpu.manifest, "the CPU reference's manifest")?;
            known_target(&cpu.target)?;
        }
        for t in &self.targets {
            known_target(t)?;
        }
        self.check_modules()?;
        let mut seen = Vec::new();
        for a in &self.aot {
            known_target(&a.target)?;
            if !self.targets.contains(&a.target) {
                return Err(format!(
                    "target {} is compiled but not among the targets",
                    a.target
                ));
            }
            if seen.contains(&a.target) {
                return Err(format!("target {} is compiled twice", a.target));
            }
            seen.push(a.target.clone());
            listed(&a.executable, "the executable")?;
            listed(&a.report, "the compile report")?;
        }
        if !self.aot.is_empty() && self.toolchain.libtpu.is_none() {
            return Err("AOT executables without a libtpu version".to_string());
        }
        let names: Vec<&str> = self.operands.iter().map(|o| o.name.as_str()).collect();
        for o in &self.operands {
            if pk_lang::ir::DType::from_name(&o.dtype).is_none() {
                return Err(format!(
                    "operand `{}` has unknown dtype `{}`",
                    o.name, o.dtype
                ));
            }
            if !SPACES.contains(&o.memory_space.as_str()) {
                return Err(format!(
                    "operand `{}` has unknown memory space `{}`",
                    o.name, o.memory_space
                ));
            }
            if let Some(b) = &o.block {
                if b.len() != o.shape.len() {
                    return Err(format!("operand `{}` has a block of another rank", o.name));
                }
            }
            if let Some(a) = &o.alias {
                if o.role != OperandRole::Output || !names.contains(&a.as_str()) {
                    return Err(format!(
                        "operand `{}` aliases `{a}`, which is not an input",
                        o.name
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Manifest {
    /// The module table names one module per target, in the order of
    /// `targets`, each listed in `files`; the first target's is
    /// `kernel.stablehlo.mlir`.
    fn check_modules(&self) -> Result<(), String> {
        let Some(first) = self.targets.first() else {
            return Err("the package is for no target".to_string());
        };
        let order: Vec<&String> = self.stablehlo.iter().map(|m| &m.target).collect();
        if order != self.targets.iter().collect::<Vec<_>>() {
            return Err(format!(
                "the StableHLO modules are for [{}], the targets are [{}]",
                join(&order),
                join(&self.targets.iter().collect::<Vec<_>>())
            ));
        }
        for m in &self.stablehlo {
            if !self.files.contains_key(&m.module) {
                return Err(format!(
                    "the StableHLO module `{}` of {} is not in the file table",
                    m.module, m.target
                ));
            }
            if m.target == *first && m.module != super::STABLEHLO {
                return Err(format!(
                    "the first target's module is `{}`, not `{}`",
                    m.module,
                    super::STABLEHLO
                ));
            }
        }
        Ok(())
    }
}

fn join(names: &[&String]) -> String {
    names
        .iter()
        .map(|n| n.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The memory-space names of `ir::Space::name`.
const SPACES: [&str; 4] = ["vmem", "smem", "any", "dma_sem"];

fn known_target(name: &str) -> Result<(), String> {
    crate::pjrt::parse_target(name)
        .map(|_| ())
        .map_err(|_| format!("unknown target `{name}`"))
}

/// A relative path of plain segments (`aot/v5e.pjrt`): no `.`/`..`, no
/// leading `/`, no backslashes, nothing but letters, digits, `_`, `-`, `.`.
pub(crate) fn is_safe_path(path: &str) -> bool {
    !path.is_empty()
        && path.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        })
}

fn operand(kernel: &ir::Kernel, o: &ir::Operand) -> Operand {
    Operand {
        name: o.name.clone(),
        role: match o.role {
            Role::Prefetch => OperandRole::Prefetch,
            Role::Input => OperandRole::Input,
            Role::Output => OperandRole::Output,
        },
        dtype: o.dtype.name().to_string(),
        shape: o.shape.iter().map(|d| d.get()).collect(),
        memory_space: o.space.name().to_string(),
        block: o.block.as_ref().map(|b| {
            b.dims
                .iter()
                .map(|d| match d {
                    BlockDim::Squeezed => None,
                    BlockDim::Size(s) => Some(s.get()),
                })
                .collect()
        }),
        alias: o
            .aliases
            .and_then(|i| kernel.operands.get(i))
            .map(|a| a.name.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_paths_stay_inside_the_package() {
        for ok in ["kernel.wasm", "aot/v5e.pjrt", "a-b_c.d"] {
            assert!(is_safe_path(ok), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "aot/../../x",
            "a//b",
            "./a",
            "a\\b",
            "a b",
            "aot/",
        ] {
            assert!(!is_safe_path(bad), "{bad}");
        }
    }

    /// Float and bool parameter values read back as what they are: JSON
    /// `0.5` and `false`, not strings, and `256` still an integer.
    #[test]
    fn param_values_of_every_kind_round_trip() {
        let params = vec![
            Param {
                name: "M".into(),
                value: ParamValueEntry::Int(256),
            },
            Param {
                name: "scale".into(),
                value: ParamValueEntry::Float(0.5),
            },
            Param {
                name: "causal".into(),
                value: ParamValueEntry::Bool(false),
            },
            Param {
                name: "T".into(),
                value: ParamValueEntry::Dtype("bf16".into()),
            },
        ];
        let json = serde_json::to_string(&params).expect("serializes");
        assert_eq!(
            json,
            r#"[{"name":"M","value":256},{"name":"scale","value":0.5},{"name":"causal","value":false},{"name":"T","value":"bf16"}]"#
        );
        let back: Vec<Param> = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, params);
    }
}

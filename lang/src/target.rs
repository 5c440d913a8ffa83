//! What the type checker knows about each TPU generation.

use crate::ir::DType;
use std::fmt;
use std::str::FromStr;

/// The largest mesh pk compiles ahead of time: the devices of the 8-chip
/// slices of [`Target::topology_for`].
pub const MAX_MESH_DEVICES: u64 = 8;

/// A TPU generation pk compiles for: the one type of the front end's
/// checks, the backends and libtpu's ahead-of-time compiles
/// (`pk_runtime::pjrt::TpuTarget` is this type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Target {
    V4,
    #[default]
    V5e,
    V5p,
    V6e,
    Tpu7x,
}

const MIB: u64 = 1024 * 1024;

impl Target {
    pub const ALL: [Target; 5] = [
        Target::V4,
        Target::V5e,
        Target::V5p,
        Target::V6e,
        Target::Tpu7x,
    ];

    /// Every target, oldest first.
    pub fn all() -> &'static [Target] {
        &Target::ALL
    }

    /// The libtpu topology compiled against: the smallest slice that libtpu
    /// accepts by name alone. A kernel runs on one TensorCore, so the slice
    /// size does not change its code; single-chip names such as `v5e:1x1`
    /// would need the extra create option `chips_per_host_bounds`.
    pub fn topology_name(self) -> &'static str {
        match self {
            Target::V4 => "v4:2x2x1",
            Target::V5e => "v5e:2x2",
            Target::V5p => "v5p:2x2x1",
            Target::V6e => "v6e:2x2",
            Target::Tpu7x => "tpu7x:2x2x1",
        }
    }

    /// The topology a program of `devices` SPMD partitions (one per device
    /// of a kernel's mesh, a device as JAX counts them) is compiled
    /// against: the 4-chip slice of [`Target::topology_name`] up to 4
    /// devices; up to [`MAX_MESH_DEVICES`], the generation's slice of 8
    /// devices: 8 chips (`2x4`, or `2x2x2` where slices are 3-D), but the
    /// same 4 chips for TPU7x, whose two TensorCores per chip are a device
    /// each; none beyond.
    pub fn topology_for(self, devices: u64) -> Option<&'static str> {
        match devices {
            0..=4 => Some(self.topology_name()),
            5..=MAX_MESH_DEVICES => Some(match self {
                Target::V4 => "v4:2x2x2",
                Target::V5e => "v5e:2x4",
                Target::V5p => "v5p:2x2x2",
                Target::V6e => "v6e:2x4",
                Target::Tpu7x => "tpu7x:2x2x1",
            }),
            _ => None,
        }
    }

    /// Whether `name` is a topology pk compiles this target against.
    pub fn knows_topology(self, name: &str) -> bool {
        [self.topology_for(4), self.topology_for(MAX_MESH_DEVICES)].contains(&Some(name))
    }

    /// The `--target` spelling.
    pub fn name(self) -> &'static str {
        match self {
            Target::V4 => "v4",
            Target::V5e => "v5e",
            Target::V5p => "v5p",
            Target::V6e => "v6e",
            Target::Tpu7x => "tpu7x",
        }
    }

    /// VMEM per TensorCore, in bytes.
    pub fn vmem_bytes(self) -> u64 {
        match self {
            Target::V4 => 16 * MIB,
            Target::V5e => 128 * MIB,
            Target::V5p => 64 * MIB,
            Target::V6e => 128 * MIB,
            Target::Tpu7x => 64 * MIB,
        }
    }

    /// SMEM per TensorCore, in bytes.
    pub fn smem_bytes(self) -> u64 {
        MIB
    }

    /// The MXU's width (the natural matmul tile edge).
    pub fn mxu_width(self) -> u64 {
        match self {
            Target::V4 | Target::V5e | Target::V5p => 128,
            Target::V6e | Target::Tpu7x => 256,
        }
    }

    /// Whether `dot` accepts this input dtype on this generation.
    pub fn matmul_input(self, d: DType) -> bool {
        match d {
            DType::F32 | DType::BF16 => true,
            // libtpu's Mosaic has no integer matmul on v4 (measured:
            // "Unsupported matmul RHS type vector<..xi8>") nor on TPU7x.
            DType::I8 | DType::U8 => matches!(self, Target::V5e | Target::V5p | Target::V6e),
            DType::F8E4M3FN | DType::F8E5M2 => self != Target::V4,
            DType::I32 | DType::I16 | DType::Bool => false,
        }
    }

    /// Whether the dtype exists at all on this generation.
    pub fn supports(self, d: DType) -> bool {
        match d {
            DType::F8E4M3FN | DType::F8E5M2 => self != Target::V4,
            _ => true,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Target, String> {
        Target::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!("unknown target `{s}` (expected one of v4, v5e, v5p, v6e, tpu7x)")
            })
    }
}

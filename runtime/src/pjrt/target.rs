//! The TPU generations pk compiles for, and the topology each is compiled
//! against.

use std::fmt;
use std::str::FromStr;

use super::PjrtError;

/// A TPU generation that libtpu can compile for ahead of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TpuTarget {
    V4,
    V5e,
    V5p,
    V6e,
    Tpu7x,
}

impl TpuTarget {
    /// Every target, oldest first.
    pub fn all() -> &'static [TpuTarget] {
        &[
            TpuTarget::V4,
            TpuTarget::V5e,
            TpuTarget::V5p,
            TpuTarget::V6e,
            TpuTarget::Tpu7x,
        ]
    }

    /// The name users write (`--target v5e`), also the [`fmt::Display`] form.
    pub fn name(self) -> &'static str {
        match self {
            TpuTarget::V4 => "v4",
            TpuTarget::V5e => "v5e",
            TpuTarget::V5p => "v5p",
            TpuTarget::V6e => "v6e",
            TpuTarget::Tpu7x => "tpu7x",
        }
    }

    /// The libtpu topology compiled against: the smallest slice that libtpu
    /// accepts by name alone. A kernel runs on one TensorCore, so the slice
    /// size does not change its code; single-chip names such as `v5e:1x1`
    /// would need the extra create option `chips_per_host_bounds`.
    pub fn topology_name(self) -> &'static str {
        match self {
            TpuTarget::V4 => "v4:2x2x1",
            TpuTarget::V5e => "v5e:2x2",
            TpuTarget::V5p => "v5p:2x2x1",
            TpuTarget::V6e => "v6e:2x2",
            TpuTarget::Tpu7x => "tpu7x:2x2x1",
        }
    }

    /// The topology a program of `devices` SPMD partitions (one per device
    /// of a kernel's mesh, a device as JAX counts them) is compiled
    /// against: the 4-chip slice of [`TpuTarget::topology_name`] up to 4
    /// devices; up to [`MAX_MESH_DEVICES`], the generation's slice of 8
    /// devices: 8 chips (`2x4`, or `2x2x2` where slices are 3-D), but the
    /// same 4 chips for TPU7x, whose two TensorCores per chip are a device
    /// each; none beyond.
    pub fn topology_for(self, devices: u64) -> Option<&'static str> {
        match devices {
            0..=4 => Some(self.topology_name()),
            5..=MAX_MESH_DEVICES => Some(match self {
                TpuTarget::V4 => "v4:2x2x2",
                TpuTarget::V5e => "v5e:2x4",
                TpuTarget::V5p => "v5p:2x2x2",
                TpuTarget::V6e => "v6e:2x4",
                TpuTarget::Tpu7x => "tpu7x:2x2x1",
            }),
            _ => None,
        }
    }

    /// Whether `name` is a topology pk compiles this target against.
    pub fn knows_topology(self, name: &str) -> bool {
        [self.topology_for(4), self.topology_for(MAX_MESH_DEVICES)].contains(&Some(name))
    }
}

/// The largest mesh pk compiles ahead of time: the devices of the 8-chip
/// slices of [`TpuTarget::topology_for`].
pub const MAX_MESH_DEVICES: u64 = 8;

impl fmt::Display for TpuTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TpuTarget {
    type Err = PjrtError;

    /// Accepts the target names, case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TpuTarget::all()
            .iter()
            .copied()
            .find(|t| t.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| PjrtError::UnknownTarget {
                name: s.to_string(),
                known: known_names(),
            })
    }
}

fn known_names() -> String {
    let names: Vec<&str> = TpuTarget::all().iter().map(|t| t.name()).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_from_str() {
        for &t in TpuTarget::all() {
            assert_eq!(t.to_string().parse::<TpuTarget>().ok(), Some(t));
            assert_eq!(t.name().to_uppercase().parse::<TpuTarget>().ok(), Some(t));
        }
    }

    #[test]
    fn unknown_name_lists_the_known_ones() {
        let err = "v7x".parse::<TpuTarget>().err();
        let Some(PjrtError::UnknownTarget { name, known }) = err else {
            panic!("expected UnknownTarget, got {err:?}");
        };
        assert_eq!(name, "v7x");
        assert_eq!(known, "v4, v5e, v5p, v6e, tpu7x");
    }

    #[test]
    fn topology_names_are_the_accepted_ones() {
        let names: Vec<&str> = TpuTarget::all().iter().map(|t| t.topology_name()).collect();
        assert_eq!(
            names,
            ["v4:2x2x1", "v5e:2x2", "v5p:2x2x1", "v6e:2x2", "tpu7x:2x2x1"]
        );
    }

    #[test]
    fn a_mesh_of_eight_devices_is_compiled_on_an_eight_chip_slice() {
        let names: Vec<Option<&str>> = TpuTarget::all().iter().map(|t| t.topology_for(8)).collect();
        assert_eq!(
            names,
            [
                Some("v4:2x2x2"),
                Some("v5e:2x4"),
                Some("v5p:2x2x2"),
                Some("v6e:2x4"),
                Some("tpu7x:2x2x1")
            ]
        );
        assert_eq!(TpuTarget::V5e.topology_for(2), Some("v5e:2x2"));
        assert_eq!(TpuTarget::V5e.topology_for(5), Some("v5e:2x4"));
        assert_eq!(TpuTarget::V5e.topology_for(9), None);
        assert!(TpuTarget::V6e.knows_topology("v6e:2x4"));
        assert!(!TpuTarget::V6e.knows_topology("v5e:2x4"));
        assert!(TpuTarget::Tpu7x.knows_topology("tpu7x:2x2x1"));
        assert!(!TpuTarget::Tpu7x.knows_topology("tpu7x:2x2x2"));
    }
}

//! The TPU generations pk compiles for, and the topology each is compiled
//! against: the front end's [`pk_lang::Target`], by the name the runtime
//! has always used.

use super::PjrtError;

/// A TPU generation that libtpu can compile for ahead of time; the same
/// type as the front end's, so nothing converts between the two.
pub use pk_lang::Target as TpuTarget;

/// The largest mesh pk compiles ahead of time.
pub use pk_lang::target::MAX_MESH_DEVICES;

/// The target named `s` (case-insensitively), or `PK2011` listing the
/// known names.
pub fn parse_target(s: &str) -> Result<TpuTarget, PjrtError> {
    TpuTarget::all()
        .iter()
        .copied()
        .find(|t| t.name().eq_ignore_ascii_case(s.trim()))
        .ok_or_else(|| PjrtError::UnknownTarget {
            name: s.to_string(),
            known: known_names(),
        })
}

fn known_names() -> String {
    let names: Vec<&str> = TpuTarget::all().iter().map(|t| t.name()).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_parse_target() {
        for &t in TpuTarget::all() {
            assert_eq!(parse_target(&t.to_string()).ok(), Some(t));
            assert_eq!(parse_target(&t.name().to_uppercase()).ok(), Some(t));
        }
    }

    #[test]
    fn unknown_name_lists_the_known_ones() {
        let err = parse_target("v7x").err();
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

    #[test]
    fn the_runtime_and_the_front_end_share_one_target_type() {
        let t: pk_lang::Target = TpuTarget::V6e;
        assert_eq!(t.vmem_bytes(), 128 << 20);
        assert_eq!(t.topology_name(), "v6e:2x2");
    }
}

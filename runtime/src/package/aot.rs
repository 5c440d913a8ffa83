//! What an ahead-of-time compile leaves in a package: libtpu's serialized
//! executable (`aot/<target>.pjrt`) and the compiler's report on it
//! (`aot/<target>.json`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::pjrt::{Captured, CompiledKernel, MemoryStats, TpuTarget, LIBTPU_VERSION};
use crate::schedule::Schedule;

/// The compile report of one target, stored as `aot/<target>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AotReport {
    pub target: String,
    /// The libtpu topology compiled against, e.g. `v5e:2x2`.
    pub topology: String,
    /// The libtpu version that compiled it.
    pub libtpu: String,
    /// Size of the generated TPU machine code.
    pub generated_code_bytes: u64,
    /// Size of the serialized executable (`aot/<target>.pjrt`).
    pub executable_bytes: u64,
    /// Wall time of the compile itself, in milliseconds.
    pub compile_ms: f64,
    /// The compiler's memory accounting, when libtpu provides it.
    pub memory: Option<MemoryStats>,
    /// The compiler's cost analysis: numeric properties by name (for
    /// example `bytes accessed0{}` for operand 0, or `flops`).
    pub cost_analysis: BTreeMap<String, f64>,
    /// libtpu's schedule of the kernel (bundles per loop, unit slots,
    /// pipelined windows), when the compile kept it; see
    /// [`crate::schedule`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
    /// Why the schedule is missing when capture was asked for and its
    /// files could not be read (the PK2013 warning's text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_warning: Option<String>,
}

/// One target's executable with its report, ready to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct AotArtifact {
    pub target: TpuTarget,
    pub executable: Vec<u8>,
    pub report: AotReport,
}

impl AotArtifact {
    /// Takes what libtpu produced for one target.
    pub fn from_compiled(c: CompiledKernel) -> AotArtifact {
        let (schedule, schedule_warning) = match c.schedule {
            Captured::Off => (None, None),
            Captured::Read(s) => (Some(s), None),
            Captured::Unreadable(why) => (None, Some(why)),
        };
        let report = AotReport {
            target: c.target.name().to_string(),
            topology: c.topology.to_string(),
            libtpu: LIBTPU_VERSION.to_string(),
            generated_code_bytes: c.generated_code_bytes,
            executable_bytes: c.serialized_executable.len() as u64,
            compile_ms: c.compile_time.as_secs_f64() * 1e3,
            memory: c.memory_stats,
            // JSON has no NaN or infinity; such a property carries no
            // information a reader could use, so it is left out.
            cost_analysis: c
                .cost_analysis
                .into_iter()
                .filter(|(_, v)| v.is_finite())
                .collect(),
            schedule,
            schedule_warning,
        };
        AotArtifact {
            target: c.target,
            executable: c.serialized_executable,
            report,
        }
    }

    /// The executable's path inside a package.
    pub fn executable_path(target: TpuTarget) -> String {
        format!("aot/{}.pjrt", target.name())
    }

    /// The report's path inside a package.
    pub fn report_path(target: TpuTarget) -> String {
        format!("aot/{}.json", target.name())
    }
}

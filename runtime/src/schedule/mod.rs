//! libtpu's own schedule of a kernel, as pk keeps it: the final VLIW
//! program the TPU compiler writes when asked during an ordinary ahead-of-
//! time compile (no TPU needed), reduced to a small summary per kernel.
//!
//! The compiler is asked through `LIBTPU_INIT_ARGS` when pk loads libtpu
//! ([`crate::pjrt::Plugin::load_capturing`]); each compile's dump goes to a
//! private temporary directory that is parsed and deleted before the next
//! compile writes one ([`crate::pjrt::Capture`]). Three files per compiled
//! computation are read (`parse`):
//!
//! - `*-final_bundles.txt`: one bundle per line with its address and the
//!   loop and predication markers (`LH` loop header, `LB` loop body, `LE`
//!   loop exit, `PB`/`PF` predicated region body and fallthrough);
//! - `*-schedule-analysis_final_bundles.txt`: the totals;
//! - `*-final_hlo-static-per-bundle-utilization.txt`: per bundle, the slots
//!   used of each unit, under a header with each unit's capacity.
//!
//! invariant: a summary holds only what the files state (counts, addresses,
//! capacities) or what follows from them by counting; a file that does not
//! read as expected gives a [`FormatError`], never a partial summary, so a
//! libtpu whose dump format changed is reported (PK2013) and the roofline
//! model is used instead of a wrong number.
//! invariant: `bundles` of a loop counts every bundle from its header to its
//! exit, nested loops included; `trips` is set only when the program states
//! it (a pipelined window's `iteration_bounds`).

pub mod attrib;
pub mod cache;
mod parse;

pub use parse::{parse_dir, parse_dir_with, parse_kernel, FormatError};

use serde::{Deserialize, Serialize};

/// The version of this summary's layout, stored with it.
pub const SUMMARY_VERSION: u32 = 1;

/// The schedules of one compile: one per computation libtpu scheduled for
/// the kernel (the kernel itself, and the small programs around it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    pub version: u32,
    pub kernels: Vec<KernelSchedule>,
}

impl Schedule {
    /// The kernel's own program: the computation with the most bundles that
    /// is not one of the runtime's wrappers (`TLP`, the late
    /// initialisation and finalisation programs).
    pub fn kernel(&self) -> Option<&KernelSchedule> {
        self.kernels
            .iter()
            .filter(|k| !k.is_wrapper())
            .max_by_key(|k| k.bundles)
    }
}

/// The final program of one computation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSchedule {
    /// libtpu's name of the computation (the custom call for a kernel).
    pub name: String,
    /// Scheduled bundles, as the schedule analysis totals them.
    pub bundles: u64,
    pub empty_bundles: u64,
    /// Bundles inside predicated regions (`PB`).
    pub predicated_bundles: u64,
    /// Loops, outermost first within each nest, in program order.
    pub loops: Vec<Loop>,
    /// Slot use per unit over the whole program.
    pub units: Vec<UnitUse>,
    /// The windows of the operands libtpu pipelines (one per DMA with a
    /// window descriptor), in program order.
    pub windows: Vec<Window>,
    /// The program's operations by bundle with their `.pk` lines, when the
    /// compile dumped what maps them (`pkc profile`), or why not. Not
    /// stored: it is as large as the program.
    #[serde(skip)]
    pub source: Option<Result<attrib::Attribution, String>>,
}

impl KernelSchedule {
    fn is_wrapper(&self) -> bool {
        self.name == "TLP" || self.name.starts_with('<') || self.name.starts_with("late-")
    }

    /// The outermost loop with the most bundles: the grid's loop, when the
    /// program has one.
    pub fn main_loop(&self) -> Option<&Loop> {
        self.loops
            .iter()
            .filter(|l| l.depth == 0)
            .max_by_key(|l| l.bundles)
    }

    /// The slots of `unit` used per bundle on average inside `l` (or over
    /// the whole program), as a fraction of its capacity.
    pub fn utilization(&self, unit: &str, l: Option<&Loop>) -> Option<f64> {
        let i = self.units.iter().position(|u| u.unit == unit)?;
        let u = &self.units[i];
        let (slots, bundles) = match l {
            Some(l) => (*l.slots.get(i)?, l.bundles),
            None => (u.slots, self.bundles),
        };
        if bundles == 0 || u.capacity == 0 {
            return Some(0.0);
        }
        Some(slots as f64 / (bundles as f64 * u.capacity as f64))
    }
}

/// One loop of the final program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Loop {
    /// Address of its header's first bundle and of its exit's last.
    pub start: u64,
    pub end: u64,
    /// Bundles from header to exit, nested loops included.
    pub bundles: u64,
    /// 0 for an outermost loop.
    pub depth: u32,
    /// Index in `loops` of the enclosing loop.
    pub parent: Option<usize>,
    /// Iterations, when the program states them.
    pub trips: Option<u64>,
    /// Slots used per unit inside the loop (one trip), in the order of
    /// [`KernelSchedule::units`].
    pub slots: Vec<u64>,
}

/// One unit's use over a program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitUse {
    /// libtpu's name: `MATMUL`, `MATPUSH`, `XLU`, `VALU`, `VPOP`, `EUP`,
    /// `VLOAD`, `VLOAD:FILL`, `VSTORE`, `VSTORE:SPILL`, `SALU` (v5e).
    pub unit: String,
    /// Slots per bundle.
    pub capacity: u32,
    /// Slots used, summed over the bundles.
    pub slots: u64,
    /// Bundles that use the unit at all.
    pub busy_bundles: u64,
}

/// A pipelined operand's window, as its DMA's descriptor states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Address of the bundle that starts the DMA.
    pub at: u64,
    pub window_bounds: Vec<u64>,
    pub iteration_bounds: Vec<u64>,
    pub element_bytes: u64,
}

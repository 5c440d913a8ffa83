//! Where the devices' calls of a communicating kernel meet.
//!
//! Under `jax.shard_map` on XLA's CPU client, a kernel with a mesh is
//! called once per device, each call on an XLA thread of its own, with the
//! device's coordinates (its index on the kernel's mesh and the group of
//! devices it belongs to, see `pk/jax.py`) as a small extra operand. The
//! calls of one launch must run as one simulated mesh, each device with
//! its own memories, and two launches must never mix.
//!
//! A launch is named by the kernel, the call site in the traced program
//! (the `site` attribute, unique per lowering), XLA's run id (one per
//! logical execution, shared by its devices), the group, and the device's
//! count of earlier calls of the same site in the same run (a call site
//! inside a loop runs once per iteration on every device, in the same
//! order). The first device of a launch to arrive makes its mesh; the last
//! one takes the launch out of the table.
//!
//! Invariants:
//! 1. A device waits for its peers at most the join bound
//!    (`PK_MESH_JOIN_TIMEOUT` seconds, 60 by default), then fails with
//!    PK1047 naming the devices that never called: never a hang.
//! 2. When one device fails, every device of the launch that stopped
//!    because of it reports the same error (the failing device's, or the
//!    mesh's own such as a deadlock), so the message XLA raises is the
//!    cause whichever device's status it picks.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use crate::adapter::{self, Mesh, MeshFailure, Rendered};

/// What names one device's count of calls: kernel, site, group, device.
type Caller = (i64, i64, i64, usize);
/// What names a launch: kernel, site, run, group, count.
type LaunchKey = (i64, i64, i64, i64, u64);

/// One launch of a communicating kernel.
pub struct Launch {
    pub mesh: Arc<Mesh>,
    state: Mutex<Progress>,
    cv: Condvar,
}

struct Progress {
    /// Devices that have joined.
    arrived: usize,
    /// Devices that joined and have not finished.
    running: usize,
    /// The error every stopped device reports.
    first: Option<Rendered>,
}

#[derive(Default)]
struct Table {
    /// Per caller: the run of its last call and its calls in that run.
    counts: HashMap<Caller, (i64, u64)>,
    /// Launches some of whose devices have not arrived yet.
    open: HashMap<LaunchKey, Arc<Launch>>,
}

fn table() -> &'static Mutex<Table> {
    static T: OnceLock<Mutex<Table>> = OnceLock::new();
    T.get_or_init(|| Mutex::new(Table::default()))
}

/// The join bound: `PK_MESH_JOIN_TIMEOUT` seconds, 60 by default.
fn join_bound() -> Duration {
    let secs = std::env::var("PK_MESH_JOIN_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(60.0);
    Duration::from_secs_f64(secs)
}

/// Device `device` (of `devices`) of group `group` joins the launch of
/// kernel `kernel` at `site` in run `run`.
pub fn join(
    k: &pk_runtime::cpu::CpuKernel,
    kernel: i64,
    site: i64,
    run: i64,
    group: i64,
    device: usize,
    devices: usize,
) -> Arc<Launch> {
    let mut t = table().lock().unwrap_or_else(|p| p.into_inner());
    let c = t
        .counts
        .entry((kernel, site, group, device))
        .or_insert((run, 0));
    if c.0 != run {
        *c = (run, 0);
    }
    let count = c.1;
    c.1 += 1;
    let key = (kernel, site, run, group, count);
    let launch = t
        .open
        .entry(key)
        .or_insert_with(|| {
            Arc::new(Launch {
                mesh: adapter::joined_mesh(k, join_bound()),
                state: Mutex::new(Progress {
                    arrived: 0,
                    running: 0,
                    first: None,
                }),
                cv: Condvar::new(),
            })
        })
        .clone();
    let arrived = {
        let mut st = launch.state.lock().unwrap_or_else(|p| p.into_inner());
        st.running += 1;
        st.arrived += 1;
        st.arrived
    };
    if arrived >= devices {
        t.open.remove(&key);
    }
    launch
}

impl Launch {
    /// Runs this device's instance and reports how the launch went for it.
    pub fn run(
        &self,
        k: &pk_runtime::cpu::CpuKernel,
        device: usize,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> Result<(), Rendered> {
        let r = adapter::run_cpu_on_mesh(k, &self.mesh, device, inputs, outputs);
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(MeshFailure::Failed(e)) = &r {
            st.first.get_or_insert_with(|| e.clone());
        }
        st.running -= 1;
        self.cv.notify_all();
        match r {
            Ok(()) => Ok(()),
            Err(MeshFailure::Failed(e)) => Err(e),
            Err(MeshFailure::Stopped) => {
                // Every device that joined stops soon (at its next mesh
                // call); one of them, or the mesh, holds the reason.
                while st.running > 0 {
                    st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                if st.first.is_none() {
                    st.first = adapter::mesh_error(&self.mesh);
                }
                Err(st.first.clone().unwrap_or_else(|| {
                    Rendered::plain("error: the mesh stopped: another device failed")
                }))
            }
        }
    }
}

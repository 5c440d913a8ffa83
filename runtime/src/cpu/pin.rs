//! Where the workers of a run execute: each pinned to one CPU while the
//! grid still has units to hand out, and free to move once it runs dry.
//!
//! Pinning keeps a worker on its caches for the bulk of a run, as a
//! TensorCore stays one core. At the end of a run it is a hazard: when one
//! worker finds no unit left while another is still in its last ones, and
//! the CPU that other worker is pinned to is shared with some other process,
//! the pinned worker runs at a fraction of its speed while a CPU idles, and
//! the whole run waits for it. How long depends on where the background load
//! happened to fall, so the run time spreads (on a 2-vCPU Xeon the
//! two-thread median of the 1024^3 matmul was 1.65x its minimum). So the
//! first worker to run out of units releases every pin, and the scheduler
//! may move the workers still running onto the CPUs that fell idle.
//!
//! Invariants:
//! 1. A worker is pinned only while no worker has run out of units.
//! 2. A thread id is in the table only while its worker runs: a worker
//!    removes its own entry under the lock before it returns, and release
//!    works under the same lock, so it never touches a thread that has
//!    exited (whose id the system may have given to another thread).

use std::sync::Mutex;

/// The pins of one run's workers.
pub(crate) struct Pins {
    /// The CPUs the process may run on, in order; empty when the workers
    /// are not pinned (pinning off, more workers than CPUs, or not Linux).
    cpus: Vec<usize>,
    state: Mutex<State>,
}

struct State {
    /// The thread id of each pinned worker still running.
    tids: Vec<Option<i32>>,
    released: bool,
}

impl Pins {
    /// Pins for `threads` workers; `pin` false leaves every worker free.
    pub fn new(pin: bool, threads: usize) -> Pins {
        let mut cpus = if pin { allowed_cpus() } else { Vec::new() };
        if threads > cpus.len() {
            cpus.clear();
        }
        Pins {
            cpus,
            state: Mutex::new(State {
                tids: vec![None; threads],
                released: false,
            }),
        }
    }

    /// Pins the calling thread, worker `t`, to its CPU, unless the pins
    /// were released already (a late worker then starts free).
    pub fn enter(&self, t: usize) {
        let Some(&cpu) = self.cpus.get(t) else {
            return;
        };
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        if s.released {
            return;
        }
        if set_affinity(0, &[cpu]) {
            s.tids[t] = Some(thread_id());
        }
    }

    /// The calling worker has no unit left: every worker still running may
    /// now run on any CPU the process may use.
    pub fn release(&self) {
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        if s.released {
            return;
        }
        s.released = true;
        for tid in s.tids.iter().flatten() {
            set_affinity(*tid, &self.cpus);
        }
    }

    /// Worker `t` returns: its thread id leaves the table (invariant 2).
    pub fn leave(&self, t: usize) {
        if let Ok(mut s) = self.state.lock() {
            if let Some(slot) = s.tids.get_mut(t) {
                *slot = None;
            }
        }
    }
}

/// The CPUs this process may run on, in order (none where unknown).
fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `set` is a plain bitmask the call fills in.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
                return (0..libc::CPU_SETSIZE as usize)
                    .filter(|&c| libc::CPU_ISSET(c, &set))
                    .collect();
            }
        }
    }
    Vec::new()
}

/// The calling thread's id (Linux; 0 elsewhere, where nothing is pinned).
fn thread_id() -> i32 {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no arguments and cannot fail.
    return unsafe { libc::gettid() };
    #[cfg(not(target_os = "linux"))]
    0
}

/// Lets thread `tid` (0: the calling thread) run on `cpus` only. Best
/// effort: a refusal leaves the thread where it was; returns whether the
/// call succeeded.
fn set_affinity(tid: i32, cpus: &[usize]) -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: `set` is a plain bitmask built here; the call only changes
    // where the thread runs.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (tid, cpus);
        false
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    /// The CPUs thread `tid` may run on.
    fn affinity(tid: i32) -> Vec<usize> {
        // SAFETY: as in `allowed_cpus`.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
                0
            );
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    #[test]
    fn a_worker_is_pinned_until_another_releases_the_pins() {
        let all = allowed_cpus();
        let pins = Pins::new(true, 1);
        let (entered, wait_entered) = channel();
        let (released, wait_released) = channel::<()>();
        std::thread::scope(|s| {
            let pins = &pins;
            let worker = s.spawn(move || {
                pins.enter(0);
                entered.send(thread_id()).unwrap();
                wait_released.recv().unwrap();
                let free = affinity(0);
                pins.leave(0);
                free
            });
            let tid = wait_entered.recv().unwrap();
            // Pinned to the first allowed CPU while units remain.
            assert_eq!(affinity(tid), vec![all[0]]);
            // Another worker runs dry: this one may go anywhere.
            pins.release();
            released.send(()).unwrap();
            assert_eq!(worker.join().unwrap(), all);
        });
    }

    #[test]
    fn a_worker_entering_after_the_release_stays_free() {
        let all = allowed_cpus();
        let pins = Pins::new(true, 1);
        pins.release();
        let free = std::thread::scope(|s| {
            s.spawn(|| {
                pins.enter(0);
                let a = affinity(0);
                pins.leave(0);
                a
            })
            .join()
            .unwrap()
        });
        assert_eq!(free, all);
    }

    #[test]
    fn no_pins_without_pinning_or_with_more_workers_than_cpus() {
        let n = allowed_cpus().len();
        assert!(Pins::new(false, 1).cpus.is_empty());
        assert!(Pins::new(true, n + 1).cpus.is_empty());
        assert_eq!(Pins::new(true, n).cpus.len(), n);
    }
}

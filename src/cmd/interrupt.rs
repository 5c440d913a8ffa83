//! Files that must not outlive an interrupted `pkc`: the temporary files
//! of `run --out` (and the second names of the outputs they replace) are
//! removed when the process is stopped by Ctrl-C (SIGINT), SIGTERM,
//! SIGHUP or SIGQUIT, and the process then dies of that signal as it
//! would have, so the shell and scripts see the usual status (130 for
//! Ctrl-C).
//!
//! The handler may only do what is async-signal-safe: the paths live in a
//! fixed table of pointers to C strings that are never freed (a path is
//! leaked when registered, a few bytes per output), so the handler reads
//! them without locks or allocation and calls `unlink(2)`, `signal(2)` and
//! `raise(3)`.
//!
//! SIGKILL cannot be caught: what a `kill -9` leaves is removed by the next
//! write to the same directory (see `output::sweep_stale`).

use std::ffi::{c_char, CString};
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Once;

/// How many files can be registered at once; more are left to the sweep.
const SLOTS: usize = 64;

static PATHS: [AtomicPtr<c_char>; SLOTS] = [const { AtomicPtr::new(ptr::null_mut()) }; SLOTS];

static INSTALL: Once = Once::new();

/// The signals that stop a process and can be caught.
const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// A registered path; dropping it unregisters the path (the file is then
/// the caller's again: renamed into place, or removed by its owner).
pub struct Guard {
    slot: Option<usize>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            // The string is leaked on purpose: a handler running on another
            // thread may still hold the pointer.
            PATHS[i].store(ptr::null_mut(), Ordering::SeqCst);
        }
    }
}

/// Removes `path` if the process is stopped by a signal before the guard
/// is dropped.
pub fn remove_on_signal(path: &Path) -> Guard {
    use std::os::unix::ffi::OsStrExt;
    INSTALL.call_once(install);
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return Guard { slot: None };
    };
    let raw = c.into_raw();
    for (i, slot) in PATHS.iter().enumerate() {
        if slot
            .compare_exchange(ptr::null_mut(), raw, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Guard { slot: Some(i) };
        }
    }
    // No free slot: the sweep of the next write takes care of it.
    // SAFETY: `raw` came from `CString::into_raw` above and was not shared.
    drop(unsafe { CString::from_raw(raw) });
    Guard { slot: None }
}

extern "C" fn on_signal(sig: libc::c_int) {
    for slot in &PATHS {
        let p = slot.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: `p` is a NUL-terminated string that is never freed;
            // unlink is async-signal-safe.
            unsafe {
                libc::unlink(p);
            }
        }
    }
    // SAFETY: restoring the default action and re-raising are both
    // async-signal-safe; the process then ends as the signal asks.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

fn install() {
    for sig in SIGNALS {
        // SAFETY: a zeroed sigaction is a valid argument to read the
        // current one into; the handler set is async-signal-safe (above).
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, ptr::null(), &mut old) != 0 {
                continue;
            }
            // A signal the caller ignores (`nohup` ignores SIGHUP) or
            // handles in its own way stays as it is.
            if old.sa_sigaction != libc::SIG_DFL {
                continue;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut act.sa_mask);
            act.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &act, ptr::null_mut());
        }
    }
}

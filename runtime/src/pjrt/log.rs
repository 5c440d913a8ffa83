//! Capturing what libtpu writes to standard error.
//!
//! libtpu logs from C++ straight to file descriptor 2: on every start-up a
//! `Failed to find host bounds ... WARNING ...` line and an `E`-level
//! `hugepage_text.cc ... RAW: File offset incorrectly aligned` line that
//! reads like an error but is not one. pk runs libtpu's loading and
//! compiling with fd 2 pointed at an unnamed temporary file and hands the
//! text back, so that a caller prints it only when asked (`-v`) or when
//! libtpu fails.
//!
//! Rust's `eprintln!` would not see a redirection of its own handle alone:
//! the C++ code writes to the descriptor, so the descriptor is what is
//! redirected (`dup2`). The capture is safe by construction:
//! - fd 2 is restored by a guard's `Drop`, so a panic inside the captured
//!   call restores it too;
//! - a file, unlike a pipe, never fills up, so a chatty libtpu cannot
//!   block on a write that nobody reads;
//! - if the redirection cannot be set up, the call runs uncaptured;
//! - one capture at a time (fd 2 is the process's), under a lock.
//!
//! What other threads write to stderr during a capture is captured with it;
//! pk compiles on one thread, so in `pkc` that is nothing.

use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::fd::AsRawFd as _;
use std::sync::{Mutex, PoisonError};

/// The most of a capture that is kept; libtpu writes a few lines.
const MAX_LOG_BYTES: u64 = 1 << 20;

static LOCK: Mutex<()> = Mutex::new(());

/// Runs `f` with file descriptor 2 redirected; returns its result and what
/// was written to fd 2 meanwhile (empty when nothing was, or when the
/// redirection could not be set up and `f` ran uncaptured).
pub(crate) fn capture_stderr<T>(f: impl FnOnce() -> T) -> (T, String) {
    let _one_at_a_time = LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    let Ok(mut file) = tempfile::tempfile() else {
        return (f(), String::new());
    };
    let _ = std::io::stderr().flush();
    let Some(guard) = Redirect::to(file.as_raw_fd()) else {
        return (f(), String::new());
    };
    let value = f();
    drop(guard);
    let mut bytes = Vec::new();
    let read = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| (&mut file).take(MAX_LOG_BYTES).read_to_end(&mut bytes));
    if read.is_err() {
        bytes.clear();
    }
    (value, String::from_utf8_lossy(&bytes).into_owned())
}

/// fd 2 pointed elsewhere; dropping it points fd 2 back at what it was.
struct Redirect {
    saved: libc::c_int,
}

impl Redirect {
    fn to(fd: libc::c_int) -> Option<Redirect> {
        // SAFETY: `dup` of fd 2 has no memory-safety preconditions; a
        // failure returns -1, handled below.
        let saved = unsafe { libc::dup(2) };
        if saved < 0 {
            return None;
        }
        // SAFETY: `fd` is an open descriptor owned by the caller for the
        // guard's lifetime; `dup2` replaces fd 2 atomically.
        if unsafe { libc::dup2(fd, 2) } < 0 {
            // SAFETY: `saved` was returned by `dup` above and is ours.
            unsafe { libc::close(saved) };
            return None;
        }
        Some(Redirect { saved })
    }
}

impl Drop for Redirect {
    fn drop(&mut self) {
        // SAFETY: flushing C's streams (a null stream means all of them)
        // writes out anything libtpu's C code buffered for the captured
        // descriptor; `saved` is the descriptor `to` duplicated, restored
        // and closed exactly once, here.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::dup2(self.saved, 2);
            libc::close(self.saved);
        }
    }
}

/// Appends a captured log to a libtpu message, after a `=== ` line (where
/// the summary of a compiler message stops, see
/// `package::build::libtpu_diagnostic`).
pub(crate) fn with_log(message: String, log: &str) -> String {
    if log.trim().is_empty() {
        message
    } else {
        format!("{message}\n=== libtpu's log: ===\n{}", log.trim_end())
    }
}

/// Prints a captured log to the (restored) standard error.
pub(crate) fn print_log(log: &str) {
    if !log.trim().is_empty() {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(log.as_bytes());
        if !log.ends_with('\n') {
            let _ = err.write_all(b"\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pjrt::PjrtError;

    #[test]
    fn what_is_written_to_fd_2_is_captured_and_fd_2_restored() {
        let write_fd2 = |text: &str| {
            // SAFETY: writes `text`'s bytes to fd 2, as C++ code would.
            unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
        };
        let (value, log) = capture_stderr(|| {
            write_fd2("E1203 hugepage_text.cc:344] RAW: a line libtpu writes\n");
            42
        });
        assert_eq!(value, 42);
        assert_eq!(
            log,
            "E1203 hugepage_text.cc:344] RAW: a line libtpu writes\n"
        );
        // fd 2 is the original again: a second capture sees only its own.
        let ((), log) = capture_stderr(|| write_fd2("second\n"));
        assert_eq!(log, "second\n");
    }

    #[test]
    fn a_panic_inside_the_capture_restores_fd_2() {
        let before = fd2_identity();
        let caught = std::panic::catch_unwind(|| capture_stderr(|| panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(fd2_identity(), before);
    }

    #[test]
    fn more_than_a_pipe_holds_is_captured_without_blocking() {
        let line = "x".repeat(1023) + "\n";
        let ((), log) = capture_stderr(|| {
            for _ in 0..256 {
                // SAFETY: as above.
                unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
            }
        });
        assert_eq!(log.len(), 256 * 1024, "256 KiB, four times a pipe's buffer");
    }

    #[test]
    fn a_log_is_appended_to_a_libtpu_error_after_a_marker() {
        let e = PjrtError::Compile {
            target: "v5e".into(),
            status: "INTERNAL".into(),
            message: "the compiler's message".into(),
            locations: vec![],
        }
        .with_log("E1203 hugepage_text.cc:344] RAW: ...\n");
        let PjrtError::Compile { message, .. } = e else {
            panic!("still a compile error");
        };
        assert_eq!(
            message,
            "the compiler's message\n=== libtpu's log: ===\nE1203 hugepage_text.cc:344] RAW: ..."
        );
        assert_eq!(with_log("unchanged".into(), " \n"), "unchanged");
    }

    /// The device and inode fd 2 refers to, read while no other test's
    /// capture has it redirected.
    fn fd2_identity() -> (u64, u64) {
        let _no_capture = LOCK.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: `st` is written by fstat before being read.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            assert_eq!(libc::fstat(2, &mut st), 0);
            (st.st_dev, st.st_ino)
        }
    }
}

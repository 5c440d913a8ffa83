//! Facts about other processes, for sweeping what ended ones left behind.

/// Whether a process with this id exists (a process of another user
/// counts as alive, and so does any id that cannot be asked about).
#[cfg(unix)]
pub fn alive(pid: i32) -> bool {
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
pub fn alive(_: i32) -> bool {
    true
}

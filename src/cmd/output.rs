//! Where `pkc run --out` writes: every output is prepared before the kernel
//! runs, and all of them are committed together after it.
//!
//! What a path names decides how it is written:
//! - absent, or a regular file: a temporary file in the same directory,
//!   renamed onto the path once every output is complete (an existing
//!   file keeps its permission bits; a new one gets 0666 less the umask);
//! - a symbolic link: its target, resolved link by link, written the same
//!   way (the link stays a link);
//! - anything else that can be opened for writing (a FIFO, a character
//!   device such as `/dev/null`, a socket): written in place, as a stream;
//! - `-`, `/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/1`: standard output
//!   (and `/dev/stderr`, ...: standard error), never renamed over; an
//!   error before anything runs if that stream was closed when pkc started
//!   (Rust's runtime then points it at `/dev/null`, which would swallow
//!   the array and report success);
//! - a directory, or a path whose directory is missing: an error before
//!   anything runs.
//!
//! Temporary files are named `.pk-out-*.tmp` and held under an exclusive
//! `flock(2)` while their process lives. A signal that stops pkc (Ctrl-C,
//! SIGTERM, SIGHUP) removes them first; those a `kill -9` or a crash leaves
//! behind are unlocked, and the next `--out` into the same directory removes
//! them (after a second's grace, so that a file another pkc has just created
//! and not yet locked is never taken for one).
//!
//! Invariants:
//! 1. Nothing that is not a regular file is ever renamed over or removed.
//! 2. No destination changes until every output has been written in full:
//!    temporary files are complete (and flushed) before the first rename.
//! 3. If a rename fails, the destinations already replaced get their old
//!    contents back (kept as hard links until the commit ends), so outputs
//!    are committed all together or not at all. Streams cannot be taken
//!    back; they are written after every temporary file is complete and
//!    before any rename.

use pk_runtime::cpu::Error;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

/// One prepared output destination.
pub struct Output {
    /// The path as the user wrote it, for messages.
    shown: String,
    sink: Sink,
}

enum Sink {
    Stdout,
    Stderr,
    /// A FIFO, device or socket, already open for writing.
    Stream(File),
    /// A temporary file that replaces `dest` on commit.
    Replace {
        dest: PathBuf,
        tmp: Temp,
    },
}

/// A temporary output file: locked while this process lives (so that a
/// later sweep can tell it from the leftovers of a dead process) and
/// removed if a signal stops the process.
struct Temp {
    file: tempfile::NamedTempFile,
    #[cfg(unix)]
    _on_signal: super::interrupt::Guard,
}

/// Symbolic links followed before giving up, as the kernel's ELOOP limit.
const MAX_LINKS: usize = 40;

fn fail(shown: &str, reason: impl ToString) -> Error {
    Error::WriteFailed {
        path: shown.to_string(),
        reason: reason.to_string(),
    }
}

/// The standard streams (bit `1 << fd`) that were closed when the process
/// started, recorded before Rust's runtime reopens them on `/dev/null`.
static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);

/// Runs from `.init_array`, before `main` and before Rust's runtime
/// replaces closed standard descriptors with `/dev/null`: afterwards a
/// closed stdout cannot be told from `>/dev/null`.
#[cfg(target_os = "linux")]
extern "C" fn record_closed_streams() {
    for fd in [1, 2] {
        // SAFETY: F_GETFD on a descriptor number reads its flags and
        // touches no memory; an unopened number fails with EBADF.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            CLOSED_AT_START.fetch_or(1 << fd, Ordering::Relaxed);
        }
    }
}

#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static RECORD_CLOSED_STREAMS: extern "C" fn() = record_closed_streams;

/// Whether descriptor `fd` (1 or 2) was closed when the process started.
fn closed_at_start(fd: u8) -> bool {
    CLOSED_AT_START.load(Ordering::Relaxed) & (1 << fd) != 0
}

/// The standard stream a path names, if it names one.
fn standard_stream(path: &Path) -> Option<Sink> {
    match path.to_str()? {
        "-" | "/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1" => Some(Sink::Stdout),
        "/dev/stderr" | "/dev/fd/2" | "/proc/self/fd/2" => Some(Sink::Stderr),
        _ => None,
    }
}

/// Whether `path` names a standard stream (`-`, `/dev/stdout`, ...), where
/// several outputs may go one after another.
pub fn is_stream_path(path: &Path) -> bool {
    standard_stream(path).is_some()
}

/// Follows `path` through symbolic links to what it finally names (which
/// may not exist yet: a dangling link is written through to its target).
fn resolve(path: &Path, shown: &str) -> Result<PathBuf, Error> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = fs::read_link(&p).map_err(|e| fail(shown, e))?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(fail(shown, "too many levels of symbolic links"))
}

impl Output {
    /// Checks and opens the destination `path` (or creates its temporary
    /// file) before anything runs.
    pub fn prepare(path: &Path) -> Result<Output, Error> {
        let shown = path.display().to_string();
        if let Some(sink) = standard_stream(path) {
            let (fd, stream) = match sink {
                Sink::Stderr => (2, "standard error"),
                _ => (1, "standard output"),
            };
            if closed_at_start(fd) {
                return Err(Error::StreamClosed {
                    path: shown,
                    stream: stream.into(),
                });
            }
            return Ok(Output { shown, sink });
        }
        let dest = resolve(path, &shown)?;
        let sink = match fs::metadata(&dest) {
            Ok(m) if m.is_dir() => return Err(fail(&shown, "it is a directory")),
            Ok(m) if m.is_file() => Sink::Replace {
                tmp: temp_beside(&dest, &shown, Some(m.permissions()))?,
                dest,
            },
            Ok(_) => Sink::Stream(
                OpenOptions::new()
                    .write(true)
                    .open(&dest)
                    .map_err(|e| fail(&shown, e))?,
            ),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Sink::Replace {
                tmp: temp_beside(&dest, &shown, None)?,
                dest,
            },
            Err(e) => return Err(fail(&shown, e)),
        };
        Ok(Output { shown, sink })
    }
}

/// A temporary file in the directory of `dest`, so that the final rename
/// stays on one file system and is atomic.
fn temp_beside(dest: &Path, shown: &str, keep: Option<fs::Permissions>) -> Result<Temp, Error> {
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(fail(
            shown,
            format!("the directory `{}` does not exist", dir.display()),
        ));
    }
    let mut b = tempfile::Builder::new();
    b.prefix(".pk-out-").suffix(".tmp");
    // A new file gets the mode any other tool would give it: 0666 less the
    // umask (the open(2) call applies the umask to this mode).
    #[cfg(unix)]
    let new_mode = {
        use std::os::unix::fs::PermissionsExt;
        fs::Permissions::from_mode(0o666)
    };
    #[cfg(unix)]
    b.permissions(new_mode);
    sweep_stale(&dir);
    let file = b.tempfile_in(&dir).map_err(|e| fail(shown, e))?;
    #[cfg(unix)]
    let tmp = {
        use std::os::fd::AsRawFd;
        let _on_signal = super::interrupt::remove_on_signal(file.path());
        // SAFETY: flock on a descriptor this process owns and keeps open;
        // the lock lasts until the file is closed or the process ends.
        unsafe { libc::flock(file.as_file().as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        Temp { file, _on_signal }
    };
    #[cfg(not(unix))]
    let tmp = Temp { file };
    if let Some(p) = keep {
        tmp.file
            .as_file()
            .set_permissions(p)
            .map_err(|e| fail(shown, e))?;
    }
    Ok(tmp)
}

/// What an output is written from: one buffer, or a `.npy` image in two
/// parts (written without joining them).
pub trait Image {
    fn parts(&self) -> Vec<&[u8]>;
}

impl Image for Vec<u8> {
    fn parts(&self) -> Vec<&[u8]> {
        vec![self.as_slice()]
    }
}

impl Image for pk_runtime::cpu::npy::Image<'_> {
    fn parts(&self) -> Vec<&[u8]> {
        vec![self.head.as_slice(), &self.body]
    }
}

fn write_parts(w: &mut impl Write, img: &impl Image) -> io::Result<()> {
    img.parts().into_iter().try_for_each(|p| w.write_all(p))
}

/// How old an unlocked temporary file must be to count as a leftover.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Removes from `dir` the temporary output files (`.pk-out-*.tmp`) and the
/// kept old outputs (`.pk-old-PID-N`) that processes which have ended left
/// behind: a temporary file nobody holds locked, older than a second; an
/// old output whose process is gone. Never fails: what cannot be removed
/// stays.
fn sweep_stale(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let path = e.path();
        let stale = if name.starts_with(".pk-out-") && name.ends_with(".tmp") {
            unlocked_and_old(&path)
        } else if let Some(rest) = name.strip_prefix(".pk-old-") {
            rest.split('-')
                .next()
                .and_then(|p| p.parse::<i32>().ok())
                .is_some_and(|pid| !pk_runtime::process::alive(pid))
        } else {
            false
        };
        if stale {
            let _ = fs::remove_file(&path);
        }
    }
}

/// Whether the regular file at `path` is older than [`STALE_AFTER`] and no
/// process holds its lock.
#[cfg(unix)]
fn unlocked_and_old(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(m) = fs::symlink_metadata(path) else {
        return false;
    };
    let old = m
        .modified()
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age >= STALE_AFTER);
    if !m.is_file() || !old {
        return false;
    }
    let Ok(f) = File::open(path) else {
        return false;
    };
    // SAFETY: flock on a descriptor opened here; it is released when `f`
    // is closed at the end of this function.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

#[cfg(not(unix))]
fn unlocked_and_old(_: &Path) -> bool {
    false
}

/// Writes `outputs` with `images` (one each, in the same order) and
/// commits them together (see the module's invariants).
pub fn commit(outputs: Vec<Output>, images: &[impl Image]) -> Result<(), Error> {
    // 1. Temporary files, complete and flushed.
    for (o, b) in outputs.iter().zip(images) {
        if let Sink::Replace { tmp, .. } = &o.sink {
            let mut f = tmp.file.as_file();
            write_parts(&mut f, b)
                .and_then(|()| f.sync_all())
                .map_err(|e| fail(&o.shown, e))?;
        }
    }
    // 2. Streams.
    for (o, b) in outputs.iter().zip(images) {
        let written = match &o.sink {
            Sink::Stdout => {
                let mut out = io::stdout().lock();
                write_parts(&mut out, b).and_then(|()| out.flush())
            }
            Sink::Stderr => write_parts(&mut io::stderr().lock(), b),
            Sink::Stream(f) => {
                let mut f = f;
                write_parts(&mut f, b).and_then(|()| f.flush())
            }
            Sink::Replace { .. } => Ok(()),
        };
        written.map_err(|e| fail(&o.shown, e))?;
    }
    // 3. Renames, undone on failure.
    let mut done: Vec<(PathBuf, Old)> = Vec::new();
    #[cfg(unix)]
    let mut kept_guards = Vec::new();
    let mut result = Ok(());
    for o in outputs {
        let Sink::Replace { dest, tmp } = o.sink else {
            continue;
        };
        let old = keep_old(&dest);
        // The second name goes if a signal stops the commit; the guards
        // last until the commit ends.
        #[cfg(unix)]
        if let Old::Kept(b) = &old {
            kept_guards.push(super::interrupt::remove_on_signal(b));
        }
        match tmp.file.persist(&dest) {
            Ok(_) => done.push((dest, old)),
            Err(e) => {
                if let Old::Kept(b) = old {
                    let _ = fs::remove_file(b);
                }
                result = Err(fail(&o.shown, e.error));
                break;
            }
        }
    }
    for (dest, old) in done {
        match (result.is_err(), old) {
            // Put the old file back where it was.
            (true, Old::Kept(b)) => {
                let _ = fs::rename(&b, &dest);
            }
            // The destination did not exist before: remove the new one.
            (true, Old::Absent) => {
                let _ = fs::remove_file(&dest);
            }
            (false, Old::Kept(b)) => {
                let _ = fs::remove_file(b);
            }
            // Nothing to put back, or nothing that can be.
            (_, Old::Absent | Old::Lost) => {}
        }
    }
    result
}

/// What was at a destination before its rename.
enum Old {
    /// Nothing.
    Absent,
    /// A file, kept under this second name (a hard link) until the commit
    /// ends.
    Kept(PathBuf),
    /// A file that could not be kept (a file system without hard links):
    /// a failed commit cannot restore it.
    Lost,
}

/// A hard link to the file at `dest` (if one is there) under a fresh name
/// in its directory, so that its contents can be put back.
fn keep_old(dest: &Path) -> Old {
    if fs::symlink_metadata(dest).is_err() {
        return Old::Absent;
    }
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    for n in 0..64 {
        let name = dir.join(format!(".pk-old-{}-{n}", std::process::id()));
        match fs::hard_link(dest, &name) {
            Ok(()) => return Old::Kept(name),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(_) => return Old::Lost,
        }
    }
    Old::Lost
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

    fn out(dir: &Path, name: &str) -> PathBuf {
        dir.join(name)
    }

    #[test]
    fn new_and_existing_files_are_replaced_with_the_usual_modes() {
        let d = tempfile::tempdir().expect("temp dir");
        let new = out(d.path(), "new.npy");
        let old = out(d.path(), "old.npy");
        fs::write(&old, b"old").expect("written");
        fs::set_permissions(&old, fs::Permissions::from_mode(0o640)).expect("chmod");
        let outs = vec![
            Output::prepare(&new).expect("prepared"),
            Output::prepare(&old).expect("prepared"),
        ];
        // Nothing changes before the commit.
        assert!(!new.exists());
        assert_eq!(fs::read(&old).expect("read"), b"old");
        commit(outs, &[b"a".to_vec(), b"b".to_vec()]).expect("committed");
        assert_eq!(fs::read(&new).expect("read"), b"a");
        assert_eq!(fs::read(&old).expect("read"), b"b");
        let mode = |p: &Path| fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&old), 0o640);
        // The process's umask, as Linux reports it (reading it through
        // umask(2) would mean changing it under the other tests).
        let status = fs::read_to_string("/proc/self/status").expect("status");
        let umask = status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            .expect("a Umask line");
        assert_eq!(mode(&new), 0o666 & !umask);
        // No temporary or backup file is left behind.
        let left: Vec<_> = fs::read_dir(d.path())
            .expect("listed")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
    }

    #[test]
    fn a_symlink_is_written_through() {
        let d = tempfile::tempdir().expect("temp dir");
        let target = out(d.path(), "target.npy");
        let link = out(d.path(), "link.npy");
        std::os::unix::fs::symlink("target.npy", &link).expect("link");
        // A dangling link: its target is created.
        commit(vec![Output::prepare(&link).expect("ok")], &[b"x".to_vec()]).expect("ok");
        assert!(fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&target).expect("read"), b"x");
        commit(vec![Output::prepare(&link).expect("ok")], &[b"y".to_vec()]).expect("ok");
        assert_eq!(fs::read(&target).expect("read"), b"y");
    }

    #[test]
    fn a_character_device_stays_a_device() {
        let null = Path::new("/dev/null");
        commit(vec![Output::prepare(null).expect("ok")], &[vec![0u8; 4096]]).expect("ok");
        assert!(fs::metadata(null)
            .expect("meta")
            .file_type()
            .is_char_device());
    }

    #[test]
    fn missing_directories_and_directories_fail_before_the_run() {
        let d = tempfile::tempdir().expect("temp dir");
        let e = Output::prepare(&d.path().join("no/such/dir/z.npy"))
            .err()
            .expect("refused");
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = Output::prepare(d.path()).err().expect("refused");
        assert!(e.to_string().contains("directory"), "{e}");
    }

    #[test]
    fn a_failed_rename_puts_back_what_was_replaced() {
        let d = tempfile::tempdir().expect("temp dir");
        let first = out(d.path(), "first.npy");
        let fresh = out(d.path(), "fresh.npy");
        fs::write(&first, b"old").expect("written");
        let sub = d.path().join("sub");
        fs::create_dir(&sub).expect("dir");
        let second = sub.join("second.npy");
        let outs = vec![
            Output::prepare(&first).expect("ok"),
            Output::prepare(&fresh).expect("ok"),
            Output::prepare(&second).expect("ok"),
        ];
        // The third rename fails: its directory is replaced by a file.
        fs::remove_dir_all(&sub).expect("removed");
        fs::write(&sub, b"").expect("written");
        let e = commit(outs, &[b"1".to_vec(), b"2".to_vec(), b"3".to_vec()]);
        assert!(e.is_err());
        assert_eq!(fs::read(&first).expect("read"), b"old");
        assert!(!fresh.exists());
    }
}

//! Keeping libtpu's schedule of each compile (see [`crate::schedule`]).
//!
//! libtpu reads its dump flags once, when it initialises, from
//! `LIBTPU_INIT_ARGS`; they cannot be set per compile (the compile options'
//! overrides refuse `xla_jf_*`: "No such compile option"). So a plugin
//! loaded with capture ([`Plugin::load_capturing`]) is told to dump the
//! final program of every computation it compiles into one folder of this
//! process, and each compile owns that folder alone:
//!
//! invariant: while a compile runs with capture, no other compile of the
//! process runs (one lock); the folder does not exist before the compile
//! (pk creates it, mode 0700, in the temporary directory, and fails the
//! capture rather than reuse one), libtpu writes under it, pk parses it and
//! deletes it before the lock is released. Nothing is left between
//! compiles, and no two compiles' files mix.
//!
//! The dump is restricted to the three files pk reads
//! (`--xla_jf_dump_llo_pass_label_regex`), a few hundred kilobytes per
//! kernel, where the full dump is ~300 files and megabytes.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::schedule::{self, Schedule};

use super::plugin::Plugin;

/// What became of one compile's schedule.
#[derive(Debug, Clone, PartialEq)]
pub enum Captured {
    /// The plugin was not loaded with capture.
    Off,
    Read(Schedule),
    /// It could not be read; why (for the PK2013 warning).
    Unreadable(String),
}

impl Captured {
    pub fn schedule(&self) -> Option<&Schedule> {
        match self {
            Captured::Read(s) => Some(s),
            _ => None,
        }
    }
}

/// The process's dump folder and the lock that gives it to one compile.
#[derive(Debug)]
pub(crate) struct CaptureDir {
    /// Created before and deleted after each compile.
    root: PathBuf,
    lock: Mutex<()>,
    /// Whether libtpu also dumps what maps the program back to `.pk` lines
    /// (see [`crate::schedule::attrib`]).
    source: bool,
    /// Where the next compile's dump is moved instead of being deleted.
    keep: Mutex<Option<PathBuf>>,
}

/// The `LIBTPU_INIT_ARGS` flags that make libtpu dump the final program of
/// every computation into `root/dump`, one folder per module and
/// computation; with `source`, each operation annotated with the `.pk`
/// location of the Mosaic operation it comes from.
fn flags(root: &Path, source: bool) -> String {
    let mut f = format!(
        "--xla_jf_dump_to={} --xla_jf_dump_llo_text=true \
         --xla_jf_dump_llo_pass_label_regex=final_bundles|final_hlo-static \
         --xla_jf_dump_use_subdirectories=true",
        root.join("dump").display()
    );
    if source {
        f.push_str(" --xla_mosaic_enable_llo_source_annotations=true");
    }
    f
}

impl CaptureDir {
    /// Chooses this process's folder and adds the dump flags to
    /// `LIBTPU_INIT_ARGS`; called before libtpu is loaded, under the plugin
    /// lock. `Err` (why) when the user's own `LIBTPU_INIT_ARGS` dumps
    /// already: their dump is left alone and nothing is captured.
    pub(crate) fn arm(source: bool) -> Result<CaptureDir, String> {
        let given = std::env::var("LIBTPU_INIT_ARGS").unwrap_or_default();
        if given.contains("xla_jf_dump_to") {
            return Err(
                "LIBTPU_INIT_ARGS sets its own --xla_jf_dump_to; pk leaves that dump alone".into(),
            );
        }
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let root =
            std::env::temp_dir().join(format!("pk-schedule-{}-{nonce:x}", std::process::id()));
        let args = if given.trim().is_empty() {
            flags(&root, source)
        } else {
            format!("{given} {}", flags(&root, source))
        };
        std::env::set_var("LIBTPU_INIT_ARGS", args);
        Ok(CaptureDir {
            root,
            lock: Mutex::new(()),
            source,
            keep: Mutex::new(None),
        })
    }

    /// Runs `compile` with the folder to itself, then reads and deletes
    /// what libtpu wrote.
    pub(crate) fn around<T>(&self, compile: impl FnOnce() -> T) -> (T, Captured) {
        let _only = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = make_private(&self.root) {
            let out = compile();
            return (
                out,
                Captured::Unreadable(format!(
                    "cannot create the dump folder {}: {e}",
                    self.root.display()
                )),
            );
        }
        let out = compile();
        let read = schedule::parse_dir_with(&self.root.join("dump"), self.source);
        let keep = self
            .keep
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        // A dump asked to be kept is moved whole (the folder is created
        // by pk, private, and not yet there: rename fails otherwise).
        let removed = match keep {
            Some(to) => std::fs::rename(&self.root, &to).inspect_err(|_| {
                let _ = std::fs::remove_dir_all(&self.root);
            }),
            None => std::fs::remove_dir_all(&self.root),
        };
        let captured = match (read, removed) {
            (Ok(s), Ok(())) => Captured::Read(s),
            (Ok(_), Err(e)) => Captured::Unreadable(format!(
                "cannot delete the dump folder {}: {e}",
                self.root.display()
            )),
            (Err(e), _) => Captured::Unreadable(e.to_string()),
        };
        (out, captured)
    }
}

/// Creates `dir` for this process alone (0700 on Unix); fails when it
/// exists.
fn make_private(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

impl Plugin {
    /// Whether compiles keep libtpu's schedule ([`Plugin::load_capturing`]).
    pub fn capturing(&self) -> bool {
        self.capture.as_ref().is_some_and(|c| c.is_ok())
    }

    /// Why compiles do not keep libtpu's schedule, when they do not.
    pub fn capture_off_reason(&self) -> Option<String> {
        match &self.capture {
            None => Some(
                "libtpu was loaded in this process before schedule capture was asked for".into(),
            ),
            Some(Err(why)) => Some(why.clone()),
            Some(Ok(_)) => None,
        }
    }

    /// Whether compiles also keep what maps the schedule to `.pk` lines
    /// ([`Plugin::load_profiling`]).
    pub fn capturing_source(&self) -> bool {
        matches!(&self.capture, Some(Ok(c)) if c.source)
    }

    /// Moves the next captured compile's raw dump to `to` (a path that does
    /// not exist yet, on the temporary directory's file system) instead of
    /// deleting it. Does nothing without capture.
    pub fn keep_next_dump(&self, to: PathBuf) {
        if let Some(Ok(c)) = &self.capture {
            *c.keep.lock().unwrap_or_else(PoisonError::into_inner) = Some(to);
        }
    }

    /// Runs one compile, capturing its schedule when the plugin does.
    pub(crate) fn capture<T>(&self, compile: impl FnOnce() -> T) -> (T, Captured) {
        match &self.capture {
            Some(Ok(c)) => c.around(compile),
            _ => (compile(), Captured::Off),
        }
    }
}

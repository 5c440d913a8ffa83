//! Keeping libtpu's schedule of each compile (see [`crate::schedule`]).
//!
//! libtpu reads its dump flags once, when it initialises, from
//! `LIBTPU_INIT_ARGS`; they cannot be set per compile (the compile options'
//! overrides refuse `xla_jf_*`: "No such compile option"). So a plugin
//! loaded with capture ([`Plugin::load_capturing`]) is told to dump the
//! final program of every computation it compiles into one folder of this
//! process, `ROOT/dump`, where libtpu writes one folder per module (and
//! `MODULE.COMPUTATION.deduplicated` beside it for a deduplicated one).
//!
//! Two kinds of compile share it:
//! - A *named* compile ([`Plugin::capture_named`], what `pkc tune` runs on
//!   every thread) renames its StableHLO module to a name no other compile
//!   of the process has (`pkcap_N`), so its files are exactly the entries
//!   of the dump named `pkcap_N` or `pkcap_N.*`. Named compiles run at the
//!   same time; after its compile each moves its own entries into a folder
//!   of its own, parses and deletes them.
//! - An *exclusive* compile ([`Plugin::capture`]: a package's executable,
//!   whose module keeps its name, or a whole program given as bytecode)
//!   runs alone and owns everything in the dump.
//!
//! invariant: `ROOT` exists exactly while a capturing compile runs: the
//! first to start creates it (mode 0700, in the temporary directory,
//! failing the capture rather than reusing one), the last to end deletes
//! it. An exclusive compile runs with no other capturing compile (a
//! read-write lock, named compiles being readers); a named compile reads
//! only its own module's entries. Nothing is left between compiles, and no
//! two compiles' files mix.
//!
//! The dump is restricted to the three files pk reads
//! (`--xla_jf_dump_llo_pass_label_regex`), a few hundred kilobytes per
//! kernel, where the full dump is ~300 files and megabytes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

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

/// The process's dump folder and the locks that share it between compiles.
#[derive(Debug)]
pub(crate) struct CaptureDir {
    /// Exists while a capturing compile runs.
    root: PathBuf,
    /// Named compiles hold it shared, exclusive ones alone.
    lock: RwLock<()>,
    /// Capturing compiles running; `root` exists when it is above zero.
    running: Mutex<usize>,
    /// The number of the next named compile's module.
    next: AtomicU64,
    /// Whether libtpu also dumps what maps the program back to `.pk` lines
    /// (see [`crate::schedule::attrib`]).
    source: bool,
    /// Where the next exclusive compile's dump is moved instead of being
    /// deleted.
    keep: Mutex<Option<PathBuf>>,
}

/// The prefix of a named compile's module.
const NAMED: &str = "pkcap_";

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

/// Removes from `tmp` the capture folders (`pk-schedule-PID-NONCE`) of
/// processes that have ended, e.g. killed during a compile. Never fails:
/// what cannot be removed (another user's, say) stays.
fn sweep_dead(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let dead = name
            .to_str()
            .and_then(|n| n.strip_prefix("pk-schedule-"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
            .is_some_and(|pid| !crate::process::alive(pid));
        if dead && e.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
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
        sweep_dead(&std::env::temp_dir());
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
            lock: RwLock::new(()),
            running: Mutex::new(0),
            next: AtomicU64::new(0),
            source,
            keep: Mutex::new(None),
        })
    }

    /// Counts a capturing compile in, creating `root` for the first.
    fn enter(&self) -> std::io::Result<()> {
        let mut n = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if *n == 0 {
            make_private(&self.root)?;
        }
        *n += 1;
        Ok(())
    }

    /// Counts a capturing compile out, deleting `root` after the last (an
    /// exclusive compile may have moved it away whole).
    fn leave(&self) -> std::io::Result<()> {
        let mut n = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        *n -= 1;
        if *n > 0 {
            return Ok(());
        }
        match std::fs::remove_dir_all(&self.root) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }

    /// Runs `compile` with the folder to itself, then reads and deletes
    /// what libtpu wrote.
    pub(crate) fn around<T>(&self, compile: impl FnOnce() -> T) -> (T, Captured) {
        let _only = self.lock.write().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = self.enter() {
            return (compile(), self.cannot_create(e));
        }
        let out = compile();
        let read = schedule::parse_dir_with(&self.root.join("dump"), self.source);
        let keep = self
            .keep
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        // A dump asked to be kept is moved whole (the folder is created by
        // pk, private, and not yet there: rename fails otherwise); no other
        // capturing compile runs, so the whole folder is this compile's.
        let removed = match keep {
            Some(to) => std::fs::rename(&self.root, &to).inspect_err(|_| {
                let _ = std::fs::remove_dir_all(self.root.join("dump"));
            }),
            None => std::fs::remove_dir_all(self.root.join("dump")),
        };
        (out, self.conclude(read, removed))
    }

    /// Runs `compile` on `stablehlo` with its module renamed to one of its
    /// own, beside other named compiles, then reads and deletes what libtpu
    /// wrote for that module. `None` when the text does not start with a
    /// module whose name can be replaced.
    pub(crate) fn around_named<T>(
        &self,
        stablehlo: &str,
        compile: impl FnOnce(&str) -> T,
    ) -> Option<(T, Captured)> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let module = format!("{NAMED}{n}");
        let renamed = rename_module(stablehlo, &module)?;
        let _shared = self.lock.read().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = self.enter() {
            return Some((compile(&renamed), self.cannot_create(e)));
        }
        let out = compile(&renamed);
        // The module's entries move into a folder of their own, which is
        // then read as a dump by itself.
        let own = self.root.join(&module);
        let moved = move_module(&self.root.join("dump"), &module, &own);
        let read = match moved {
            Ok(()) => schedule::parse_dir_with(&own, self.source),
            Err(e) => Err(schedule::FormatError {
                file: own.display().to_string(),
                line: 0,
                expected: format!("the dump of module `{module}` to be movable ({e})"),
            }),
        };
        let removed = match std::fs::remove_dir_all(&own) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r,
        };
        Some((out, self.conclude(read, removed)))
    }

    fn cannot_create(&self, e: std::io::Error) -> Captured {
        Captured::Unreadable(format!(
            "cannot create the dump folder {}: {e}",
            self.root.display()
        ))
    }

    /// The capture of one compile from what was read and whether its files
    /// were deleted; counts the compile out.
    fn conclude(
        &self,
        read: Result<Schedule, schedule::FormatError>,
        removed: std::io::Result<()>,
    ) -> Captured {
        let left = self.leave();
        let gone = |e: std::io::Error| {
            Captured::Unreadable(format!(
                "cannot delete the dump folder {}: {e}",
                self.root.display()
            ))
        };
        match (read, removed, left) {
            (Err(e), _, _) => Captured::Unreadable(e.to_string()),
            (Ok(_), Err(e), _) | (Ok(_), Ok(()), Err(e)) => gone(e),
            (Ok(s), Ok(()), Ok(())) => Captured::Read(s),
        }
    }
}

/// `stablehlo` with its module named `name`: the text starts `module @SYM`,
/// SYM bare (letters, digits, `_`, `$`, `.`, `-`) or quoted.
fn rename_module(stablehlo: &str, name: &str) -> Option<String> {
    let rest = stablehlo.strip_prefix("module @")?;
    let end = if let Some(q) = rest.strip_prefix('"') {
        // A quoted symbol ends at the first unescaped quote.
        let mut escaped = false;
        let close = q.char_indices().find_map(|(i, c)| {
            let end = !escaped && c == '"';
            escaped = !escaped && c == '\\';
            end.then_some(i)
        })?;
        close + 2
    } else {
        rest.find(|c: char| !(c.is_ascii_alphanumeric() || "_$.-".contains(c)))?
    };
    (end > 0).then(|| format!("module @{name}{}", &rest[end..]))
}

/// Moves the entries of `dump` that libtpu wrote for module `module` (the
/// folder `module` and the folders `module.*`) into the new folder `to`.
fn move_module(dump: &Path, module: &str, to: &Path) -> std::io::Result<()> {
    make_private(to)?;
    let dotted = format!("{module}.");
    for e in std::fs::read_dir(dump)? {
        let e = e?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name == module || name.starts_with(&dotted) {
            std::fs::rename(e.path(), to.join(&*name))?;
        }
    }
    Ok(())
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
    /// deleting it. Does nothing without capture. Only a compile that
    /// captures alone ([`Plugin::capture`]) moves it.
    pub fn keep_next_dump(&self, to: PathBuf) {
        if let Some(Ok(c)) = &self.capture {
            *c.keep.lock().unwrap_or_else(PoisonError::into_inner) = Some(to);
        }
    }

    /// Runs one compile, capturing its schedule when the plugin does; no
    /// other capturing compile runs meanwhile.
    pub(crate) fn capture<T>(&self, compile: impl FnOnce() -> T) -> (T, Captured) {
        match &self.capture {
            Some(Ok(c)) => c.around(compile),
            _ => (compile(), Captured::Off),
        }
    }

    /// Runs one compile of `stablehlo` (passed to `compile`, renamed when
    /// the plugin captures), capturing its schedule when the plugin does,
    /// beside other compiles of this kind. A module whose name cannot be
    /// replaced is compiled as [`Plugin::capture`] compiles.
    pub(crate) fn capture_named<T>(
        &self,
        stablehlo: &str,
        compile: impl Fn(&str) -> T,
    ) -> (T, Captured) {
        match &self.capture {
            Some(Ok(c)) => match c.around_named(stablehlo, &compile) {
                Some(done) => done,
                None => c.around(|| compile(stablehlo)),
            },
            _ => (compile(stablehlo), Captured::Off),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capture_folders_of_ended_processes_are_swept() {
        let tmp = std::env::temp_dir().join(format!("pk-sweep-test-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        // A process that has ended: its id is free until reused.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let gone = tmp.join(format!("pk-schedule-{dead}-1f"));
        let ours = tmp.join(format!("pk-schedule-{}-2f", std::process::id()));
        let other = tmp.join("pk-schedule-cache");
        for d in [&gone, &ours, &other] {
            std::fs::create_dir_all(d.join("dump")).unwrap();
        }
        sweep_dead(&tmp);
        let left = (gone.exists(), ours.exists(), other.exists());
        std::fs::remove_dir_all(&tmp).unwrap();
        assert_eq!(left, (false, true, true));
    }

    #[test]
    fn a_module_is_renamed_whether_its_name_is_bare_or_quoted() {
        let bare = "module @jit_matmul attributes {mhlo.num_partitions = 1 : i32} {\n}";
        assert_eq!(
            rename_module(bare, "pkcap_3").as_deref(),
            Some("module @pkcap_3 attributes {mhlo.num_partitions = 1 : i32} {\n}")
        );
        let quoted = "module @\"jit_two \\\" outs\" attributes {} {\n}";
        assert_eq!(
            rename_module(quoted, "pkcap_0").as_deref(),
            Some("module @pkcap_0 attributes {} {\n}")
        );
        // Anything else is compiled under its own name, alone.
        assert_eq!(rename_module("// c\nmodule @m {}", "pkcap_1"), None);
        assert_eq!(rename_module("module @ {}", "pkcap_1"), None);
        assert_eq!(rename_module("module @\"open", "pkcap_1"), None);
    }

    #[test]
    fn a_module_s_entries_and_only_they_move_to_its_folder() {
        let tmp = std::env::temp_dir().join(format!("pk-capture-test-{}", std::process::id()));
        let dump = tmp.join("dump");
        for d in [
            "pkcap_1/TLP",
            "pkcap_1.name.1.deduplicated",
            "pkcap_10/TLP",
            "pkcap_10.name.1.deduplicated",
            "pkcap_2",
        ] {
            std::fs::create_dir_all(dump.join(d)).unwrap();
        }
        let own = tmp.join("own");
        move_module(&dump, "pkcap_1", &own).unwrap();
        let names = |d: &Path| {
            let mut v: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&own), ["pkcap_1", "pkcap_1.name.1.deduplicated"]);
        assert_eq!(
            names(&dump),
            ["pkcap_10", "pkcap_10.name.1.deduplicated", "pkcap_2"]
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}

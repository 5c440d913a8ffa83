//! The tuning cache: one JSON file per tuned kernel specialisation, target
//! and evaluator, holding the best configuration and the whole report of
//! the run that chose it.
//!
//! Where it lives ([`dir`]): `--tuned-cache DIR`, else `$PK_TUNE_CACHE`,
//! else `tune` under pk's cache root
//! (`${PK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pk}`, the root that
//! holds libtpu's copy too).
//!
//! invariant: an entry's file name is the sha256 of everything its result
//! depends on ([`Key`]): the entry format, the kernel source, the kernel's
//! name, the resolved value of every parameter that is not tuned (given
//! with `-p` or defaulted), the target, the evaluator, the libtpu version
//! and pk's version. Changing any of them misses the cache instead of
//! returning a stale configuration.
//! invariant: an entry is used only when the key stored in it equals the
//! key of the request and its best configuration names exactly the
//! parameters the request tunes, each at one of its candidates; a file
//! that cannot be read, parsed or matched is reported as damaged
//! ([`Lookup::Damaged`]), never used and never taken for a miss.
//! invariant: entries are written to a temporary file in the cache
//! directory and renamed into place, so a reader never sees half a file;
//! a new entry gets the mode any other file gets (0666 less the umask).

use super::report::Report;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The version of the entry format; part of the key, so entries of another
/// format are never looked up.
pub const FORMAT: u32 = 2;

/// What a tuning result depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Key {
    pub format: u32,
    pub source_sha256: String,
    pub kernel: String,
    /// `name=value` of every parameter that is not tuned, as resolved (the
    /// `-p` values and the declared defaults), in declaration order. The
    /// operand shapes and dtypes are functions of these.
    pub fixed: Vec<(String, String)>,
    pub target: String,
    pub evaluator: String,
    pub libtpu: String,
    pub pk: String,
}

impl Key {
    /// The entry's file name.
    pub fn file_name(&self) -> String {
        let text = serde_json::to_string(self).expect("a key serialises");
        format!("{}.json", hex(&Sha256::digest(text.as_bytes())))
    }

    /// How `other` (an entry's key) differs from this one, in words, or
    /// `None`.
    pub fn difference(&self, other: &Key) -> Option<String> {
        let pairs = |v: &[(String, String)]| -> String {
            v.iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let fields = [
            (
                "entry format",
                self.format.to_string(),
                other.format.to_string(),
            ),
            ("kernel", self.kernel.clone(), other.kernel.clone()),
            ("fixed parameters", pairs(&self.fixed), pairs(&other.fixed)),
            ("target", self.target.clone(), other.target.clone()),
            ("evaluator", self.evaluator.clone(), other.evaluator.clone()),
            (
                "source sha256",
                self.source_sha256.clone(),
                other.source_sha256.clone(),
            ),
            ("libtpu", self.libtpu.clone(), other.libtpu.clone()),
            ("pk version", self.pk.clone(), other.pk.clone()),
        ];
        fields
            .into_iter()
            .find(|(_, mine, theirs)| mine != theirs)
            .map(|(what, mine, theirs)| {
                format!("it was written for the {what} `{theirs}`, not `{mine}`")
            })
    }
}

/// The sha256 of some bytes, as hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The sha256 of a file's contents, as hex, read a piece at a time;
/// `None` for a device or a file that cannot be read.
pub fn file_sha256_hex(path: &std::path::Path) -> Option<String> {
    let (mut f, _) = pk_lang::files::open(path).ok()?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).ok()?;
    Some(hex(&h.finalize()))
}

/// The sha256 of a source text, as hex.
pub fn source_hash(text: &str) -> String {
    sha256_hex(text.as_bytes())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How a tuning was run, beyond its key: a `pkc tune` whose settings and
/// tried configurations equal an entry's is answered from the entry.
/// (`pkc build --tuned` has none of these and uses any entry of its key.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Whether libtpu compiled the survivors (not under `--no-aot`).
    pub aot: bool,
    /// The `--in` arrays: name and the sha256 of the file's bytes (`None`
    /// for a file that could not be read).
    pub inputs: Vec<(String, Option<String>)>,
    /// The limit of each timed CPU run, seconds (`None`: no limit, or not
    /// timed on the CPU).
    pub timeout_seconds: Option<f64>,
    /// `--eval schedule`: the margin over the roofline model's best within
    /// which configurations were compiled (`None`: every one).
    #[serde(default)]
    pub screen: Option<f64>,
}

/// A cached result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The key the entry was written under.
    pub key: Key,
    pub settings: Settings,
    /// The tuned parameters of the best configuration, in declaration
    /// order.
    pub best: Vec<(String, i64)>,
    /// Its predicted or measured time, seconds.
    pub seconds: f64,
    /// The report the tuning printed.
    pub report: Report,
}

/// What the cache holds for a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// No entry.
    Miss,
    Hit(Box<Entry>),
    /// A file that is no usable entry for the key: why.
    Damaged(String),
}

/// The cache directory: `given` (`--tuned-cache`), else `$PK_TUNE_CACHE`,
/// else `tune` under [`crate::cache_root`]. `None` when none of them is set.
pub fn dir(given: Option<&Path>) -> Option<PathBuf> {
    if let Some(d) = given {
        return Some(d.to_path_buf());
    }
    if let Some(d) = std::env::var_os("PK_TUNE_CACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    crate::cache_root().map(|r| r.join("tune"))
}

/// The entry for `key` in `dir`, checked against `key` and against the
/// parameters the request tunes (`tuned`: name and candidates).
pub fn lookup(dir: &Path, key: &Key, tuned: &[(String, Vec<i64>)]) -> Lookup {
    let path = dir.join(key.file_name());
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
        Err(e) => return Lookup::Damaged(format!("it cannot be read: {e}")),
    };
    let entry: Entry = match serde_json::from_slice(&text) {
        Ok(e) => e,
        Err(e) => return Lookup::Damaged(format!("it is not a tuning cache entry: {e}")),
    };
    if let Some(d) = key.difference(&entry.key) {
        return Lookup::Damaged(d);
    }
    match check_best(&entry.best, tuned) {
        Ok(()) => Lookup::Hit(Box::new(entry)),
        Err(why) => Lookup::Damaged(why),
    }
}

/// The best configuration must give every tuned parameter, and nothing
/// else, one of its candidates.
fn check_best(best: &[(String, i64)], tuned: &[(String, Vec<i64>)]) -> Result<(), String> {
    for (name, v) in best {
        match tuned.iter().find(|(n, _)| n == name) {
            None => {
                return Err(format!(
                    "its best configuration sets `{name}`, which is not tuned"
                ))
            }
            Some((_, c)) if !c.contains(v) => {
                return Err(format!(
                    "its best configuration sets `{name}={v}`, which is not a candidate"
                ))
            }
            Some(_) => {}
        }
    }
    match tuned
        .iter()
        .find(|(n, _)| !best.iter().any(|(m, _)| m == n))
    {
        Some((n, _)) => Err(format!("its best configuration does not set `{n}`")),
        None => Ok(()),
    }
}

/// Checks, before any work, that entries can be written to `dir`: creates
/// it, and a temporary file in it that is removed again.
pub fn check_writable(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    temp_in(dir).map(drop)
}

/// A temporary file in `dir` that becomes an entry by a rename: `0666`
/// less the umask, as any tool's new file (open(2) applies the umask).
fn temp_in(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let mut b = tempfile::Builder::new();
    b.prefix(".pk-tune-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(0o666));
    }
    b.tempfile_in(dir)
}

/// Writes `entry` for its key into `dir` atomically; returns its path.
pub fn store(dir: &Path, entry: &Entry) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let dest = dir.join(entry.key.file_name());
    let mut tmp = temp_in(dir)?;
    serde_json::to_writer_pretty(&mut tmp, entry).map_err(std::io::Error::other)?;
    std::io::Write::write_all(&mut tmp, b"\n")?;
    tmp.as_file().sync_all()?;
    tmp.persist(&dest).map_err(|e| e.error)?;
    Ok(dest)
}

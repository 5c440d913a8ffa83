//! The tuning cache: one JSON file per tuned kernel specialisation, target
//! and evaluator, under `$PK_TUNE_CACHE` or `~/.cache/pk/tune`.
//!
//! invariant: an entry's file name is the sha256 of everything its result
//! depends on ([`Key`]): the kernel source, the kernel's name, the
//! parameters that were fixed, the operand shapes and dtypes, the target,
//! the evaluator, the libtpu version and pk's version. Changing any of them
//! misses the cache instead of returning a stale configuration.
//! invariant: entries are written to a temporary file in the cache
//! directory and renamed into place, so a reader never sees half a file.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What a tuning result depends on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Key {
    pub source_sha256: String,
    pub kernel: String,
    /// `-p` values that were not tuned, sorted by name.
    pub fixed: Vec<(String, String)>,
    /// `name: dtype[shape]` of every operand of the default configuration.
    pub shapes: Vec<String>,
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
}

/// The sha256 of a source text, as hex.
pub fn source_hash(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A cached result: the best configuration and what it was judged by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub kernel: String,
    pub target: String,
    pub evaluator: String,
    /// The tuned parameters of the best configuration, as `-p` pairs.
    pub best: Vec<(String, String)>,
    /// Its predicted or measured time, seconds.
    pub seconds: f64,
    /// The default configuration's time, when it was evaluated.
    pub default_seconds: Option<f64>,
    pub evaluated: u64,
    /// The key the entry was written under, for people reading the file.
    pub key: serde_json::Value,
}

/// The cache directory: `dir` when given, else `$PK_TUNE_CACHE`, else
/// `$HOME/.cache/pk/tune`.
pub fn dir(given: Option<&Path>) -> Option<PathBuf> {
    if let Some(d) = given {
        return Some(d.to_path_buf());
    }
    if let Some(d) = std::env::var_os("PK_TUNE_CACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/pk/tune"))
}

/// The entry for `key` in `dir`, if there is a readable one.
pub fn lookup(dir: &Path, key: &Key) -> Option<Entry> {
    let text = std::fs::read_to_string(dir.join(key.file_name())).ok()?;
    serde_json::from_str(&text).ok()
}

/// Writes `entry` for `key` into `dir` atomically; returns its path.
pub fn store(dir: &Path, key: &Key, entry: &Entry) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let dest = dir.join(key.file_name());
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer_pretty(&mut tmp, entry).map_err(std::io::Error::other)?;
    std::io::Write::write_all(&mut tmp, b"\n")?;
    tmp.as_file().sync_all()?;
    tmp.persist(&dest).map_err(|e| e.error)?;
    Ok(dest)
}

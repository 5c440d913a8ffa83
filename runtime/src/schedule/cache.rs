//! Captured schedules kept between runs, so that a configuration that
//! recurs (another `--in` for the same kernel, another tuning that tries
//! it again) is not compiled again to be ranked by its schedule.
//!
//! invariant: an entry is keyed by the sha256 of everything that decides
//! libtpu's program (the StableHLO module, the target, the libtpu and pk
//! versions and the summary's layout) and states that key inside; an entry
//! whose stated key differs, or that does not read, is ignored (and
//! replaced by the next compile). Entries are written whole: a temporary
//! file renamed into place.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Schedule, SUMMARY_VERSION};
use crate::pjrt::{MemoryStats, TpuTarget, LIBTPU_VERSION};

/// What one compile left that a ranking by schedule needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compiled {
    pub key: String,
    pub generated_code_bytes: u64,
    pub memory: Option<MemoryStats>,
    pub schedule: Schedule,
}

/// The key of `module` compiled for `target`.
pub fn key(module: &str, target: TpuTarget) -> String {
    let mut h = Sha256::new();
    for part in [
        "pk-schedule-cache",
        &SUMMARY_VERSION.to_string(),
        LIBTPU_VERSION,
        env!("CARGO_PKG_VERSION"),
        target.name(),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.update(module.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The entry for `key` in `dir`, when there is a whole one.
pub fn load(dir: &Path, key: &str) -> Option<Compiled> {
    let text = std::fs::read_to_string(dir.join(format!("{key}.json"))).ok()?;
    let c: Compiled = serde_json::from_str(&text).ok()?;
    (c.key == key && c.schedule.version == SUMMARY_VERSION).then_some(c)
}

/// Writes `c` under its key, atomically.
pub fn store(dir: &Path, c: &Compiled) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".pk-schedule-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    serde_json::to_writer(&mut tmp, c).map_err(std::io::Error::other)?;
    tmp.persist(dir.join(format!("{}.json", c.key)))
        .map_err(|e| e.error)?;
    Ok(())
}

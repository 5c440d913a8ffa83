//! pk runtime: runs and compiles kernels built by `pkc`.

pub mod bind;
pub mod cpu;
pub mod meta;
pub mod ops;
pub mod package;
pub mod pjrt;
pub mod process;
pub mod schedule;
pub mod tune;

use std::path::PathBuf;

/// The root of pk's cache, shared by libtpu's copy and the tuning cache:
/// `${PK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pk}`. An empty variable
/// counts as unset. `None` when neither variable nor a home directory is set.
pub fn cache_root() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty("PK_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    let cache = non_empty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(cache.join("pk"))
}

//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether golden files should be re-recorded (`PK_BLESS=1`).
pub fn bless() -> bool {
    std::env::var_os("PK_BLESS").is_some_and(|v| v != "0")
}

/// The `.pk` files of a directory, sorted.
pub fn pk_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "pk"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Compares `actual` with the golden file at `path` (or records it when
/// blessing). Returns a description of the mismatch.
pub fn golden(path: &Path, actual: &str) -> Result<(), String> {
    if bless() {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
        }
        std::fs::write(path, actual).map_err(|e| e.to_string())?;
        return Ok(());
    }
    let expected = std::fs::read_to_string(path).map_err(|_| {
        format!(
            "{}: golden file missing (run with PK_BLESS=1 to record it)",
            path.display()
        )
    })?;
    if expected == actual {
        return Ok(());
    }
    let first = expected
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(expected.lines().count().min(actual.lines().count()));
    Err(format!(
        "{}: differs from the golden file at line {}\n  expected: {}\n  actual:   {}\n(re-record with PK_BLESS=1 if the change is intended)",
        path.display(),
        first + 1,
        expected.lines().nth(first).unwrap_or("<end of file>"),
        actual.lines().nth(first).unwrap_or("<end of file>"),
    ))
}

/// Path relative to the repository root, with `/` separators, for stable
/// names in rendered diagnostics.
pub fn rel(p: &Path) -> String {
    p.strip_prefix(root())
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

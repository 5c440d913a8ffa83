//! Locating and loading libtpu, in a test process of its own: the first test
//! must reach the plugin before anything else has loaded it, and the other
//! one loads nothing.

mod common;

use std::path::Path;

use common::plugin;
use pk_runtime::pjrt::{locate_libtpu, LibtpuOrigin, PjrtError, Plugin};

/// A file the loader refuses is reported, and does not stop the real
/// libtpu from loading afterwards.
#[test]
fn a_file_that_is_not_libtpu_is_refused_without_consequence() {
    let bogus = std::env::temp_dir().join(format!("pk-bogus-{}.so", std::process::id()));
    std::fs::write(&bogus, b"not a shared library").expect("temp file");
    let err = Plugin::load(Some(&bogus)).err();
    let _ = std::fs::remove_file(&bogus);
    // Too short to be an ELF shared object: refused before it is mapped.
    let Some(PjrtError::LibtpuDamaged { path, reason, .. }) = err else {
        panic!("expected LibtpuDamaged, got {err:?}");
    };
    assert_eq!(path, bogus.display().to_string());
    assert!(!reason.is_empty());
    if let Some(plugin) = plugin() {
        assert!(plugin.api_version().minor >= 54);
    }
}

#[test]
fn a_missing_explicit_path_is_reported_as_such() {
    let err = locate_libtpu(Some(Path::new("/nonexistent/libtpu.so")));
    let Err(PjrtError::LibtpuNotFound { path, origin }) = err else {
        panic!("expected LibtpuNotFound, got {err:?}");
    };
    assert_eq!(path, "/nonexistent/libtpu.so");
    assert_eq!(origin, LibtpuOrigin::Explicit);
}

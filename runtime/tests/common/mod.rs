//! What the libtpu tests share.

use std::io::Write as _;
use std::sync::Once;

use pk_runtime::pjrt::{LibtpuOrigin, PjrtError, Plugin};

/// The plugin, or `None` (after a notice) when libtpu is simply not
/// installed on a developer machine.
pub fn plugin() -> Option<&'static Plugin> {
    match Plugin::load(None) {
        Ok(plugin) => Some(plugin),
        Err(PjrtError::LibtpuNotFound {
            path,
            origin: LibtpuOrigin::Cache,
        }) if std::env::var("CI").as_deref() != Ok("true") => {
            // Written to the process's stderr directly, not through the test
            // harness's captured output, so that the skip is always visible.
            static NOTICE: Once = Once::new();
            NOTICE.call_once(|| {
                let notice = format!(
                    "notice: libtpu not installed at {path}; skipping the libtpu tests \
                     (install it with `bash .ci/setup-libtpu`)\n"
                );
                let _ = std::io::stderr().write_all(notice.as_bytes());
            });
            None
        }
        Err(e) => panic!("libtpu is required here: {e}"),
    }
}

//! Finding, loading and initialising libtpu, and the plumbing every PJRT call
//! shares: looking a function up in the plugin's table and turning a
//! `PJRT_Error` into a message.

use std::ffi::{c_char, OsString};
use std::fmt;
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use pjrt_sys::{PJRT_Api, PJRT_Error};

use super::abi;
use super::error::{LibtpuOrigin, PjrtError};
use super::log::{capture_stderr, print_log};

/// Looks a function up in a [`Plugin`]'s table by its `PJRT_Api` field name,
/// checking that the plugin's table is long enough to have it.
macro_rules! api_fn {
    ($plugin:expr, $field:ident) => {
        $plugin.function(
            stringify!($field),
            std::mem::offset_of!(pjrt_sys::PJRT_Api, $field),
            |api| api.$field,
        )
    };
}
pub(crate) use api_fn;

/// The libtpu release pk is built and tested against.
pub const LIBTPU_VERSION: &str = "0.0.51";

/// The oldest PJRT C API minor version pk accepts: the one pjrt-sys binds.
const MIN_API_MINOR: i32 = pjrt_sys::PJRT_API_MINOR as i32;

/// A PJRT C API version, as a plugin reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ApiVersion {
    pub major: i32,
    pub minor: i32,
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The libtpu path pk's cache holds once `.ci/setup-libtpu` has run:
/// `${PK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pk}/libtpu/<version>/libtpu.so`.
/// `None` when neither variable nor a home directory is set.
pub fn cache_libtpu_path() -> Option<PathBuf> {
    Some(
        crate::cache_root()?
            .join("libtpu")
            .join(LIBTPU_VERSION)
            .join("libtpu.so"),
    )
}

/// Decides which libtpu to load: `explicit`, else `$PK_LIBTPU`, else the
/// cache. The first one that is set must exist; pk does not fall through to
/// the next, so a wrong setting is reported rather than silently ignored.
pub fn locate_libtpu(explicit: Option<&Path>) -> Result<PathBuf, PjrtError> {
    let (path, origin) = if let Some(p) = explicit {
        (p.to_path_buf(), LibtpuOrigin::Explicit)
    } else if let Some(p) = std::env::var_os("PK_LIBTPU").filter(|v| !v.is_empty()) {
        (PathBuf::from(p), LibtpuOrigin::EnvVar)
    } else {
        let p = cache_libtpu_path().unwrap_or_else(|| {
            PathBuf::from("~/.cache/pk/libtpu")
                .join(LIBTPU_VERSION)
                .join("libtpu.so")
        });
        (p, LibtpuOrigin::Cache)
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(PjrtError::LibtpuNotFound {
            path: path.display().to_string(),
            origin,
        })
    }
}

/// The loaded and initialised libtpu. There is one per process, shared by
/// every thread; see [`Plugin::load`].
pub struct Plugin {
    path: PathBuf,
    /// The plugin's function table; valid while `_library` stays loaded,
    /// which is for the rest of the process.
    api: *const PJRT_Api,
    version: ApiVersion,
    load_time: Duration,
    /// Schedule capture: `None` when not asked for at load, else the dump
    /// folder or why there is none (see `capture`).
    pub(super) capture: Option<Result<super::capture::CaptureDir, String>>,
    /// Never unloaded, even when initialisation fails: libtpu's static
    /// destructors are not meant to run while its threads may still be alive.
    _library: ManuallyDrop<libloading::Library>,
}

// SAFETY: the PJRT API table is immutable after `GetPjrtApi` returns, and the
// PJRT C API requires its functions to be callable from any thread.
unsafe impl Send for Plugin {}
// SAFETY: as above; `Plugin` has no interior mutability of its own.
unsafe impl Sync for Plugin {}

impl fmt::Debug for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plugin")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("load_time", &self.load_time)
            .finish_non_exhaustive()
    }
}

/// The process's plugin, or why it could not be initialised. Empty until a
/// load succeeds or fails after libtpu was mapped into the process.
static PLUGIN: Mutex<Option<Result<&'static Plugin, PjrtError>>> = Mutex::new(None);

impl Plugin {
    /// Loads libtpu (located by [`locate_libtpu`]) and initialises it, once
    /// per process; later calls return the same plugin.
    ///
    /// Sets `TPU_SKIP_MDS_QUERY=1` first unless the variable is already set:
    /// off Google Cloud, libtpu otherwise spends minutes retrying the cloud
    /// metadata server. On a multi-host TPU slice, set it to `0` beforehand.
    /// On a host without a TPU it also sets `TPU_WORKER_HOSTNAMES=localhost`
    /// (again unless set), which only quiets libtpu's start-up log, and
    /// `ALLOW_MULTIPLE_LIBTPU_LOAD=1`, so that several pk processes may load
    /// libtpu at once (on a TPU host only one may).
    ///
    /// A failed initialisation is remembered: libtpu cannot be initialised
    /// twice in a process, so retrying could not succeed. A file that the
    /// loader refuses leaves no trace, so another path may be tried after it.
    ///
    /// libtpu's start-up log (see `log`) is captured and dropped; use
    /// [`Plugin::load_logged`] to see it.
    pub fn load(explicit: Option<&Path>) -> Result<&'static Plugin, PjrtError> {
        Plugin::load_logged(explicit, false)
    }

    /// [`Plugin::load`], printing what libtpu writes to standard error while
    /// it starts when `verbose`. When loading fails, that text is part of
    /// the error's message either way.
    pub fn load_logged(
        explicit: Option<&Path>,
        verbose: bool,
    ) -> Result<&'static Plugin, PjrtError> {
        Plugin::load_with(explicit, verbose, None)
    }

    /// [`Plugin::load_logged`], with libtpu told to keep the schedule of
    /// every compile (see `capture` and [`crate::schedule`]) when this call
    /// is the one that loads it. A plugin already loaded without capture is
    /// returned as it is: [`Plugin::capturing`] says which.
    pub fn load_capturing(
        explicit: Option<&Path>,
        verbose: bool,
    ) -> Result<&'static Plugin, PjrtError> {
        Plugin::load_with(explicit, verbose, Some(false))
    }

    /// [`Plugin::load_capturing`], with libtpu also told to dump what maps
    /// the schedule back to `.pk` lines (`pkc profile`; slower compiles).
    pub fn load_profiling(
        explicit: Option<&Path>,
        verbose: bool,
    ) -> Result<&'static Plugin, PjrtError> {
        Plugin::load_with(explicit, verbose, Some(true))
    }

    /// `capture`: `None` for none, `Some(source)` for the schedule, with
    /// the source mapping when `source`.
    fn load_with(
        explicit: Option<&Path>,
        verbose: bool,
        capture: Option<bool>,
    ) -> Result<&'static Plugin, PjrtError> {
        let path = locate_libtpu(explicit)?;
        // One libtpu per process: a plugin already loaded answers first, so
        // that a second path is refused as such whatever that file holds.
        if let Some(Ok(loaded)) = &*PLUGIN.lock().unwrap_or_else(PoisonError::into_inner) {
            return if same_file(&loaded.path, &path) {
                Ok(*loaded)
            } else {
                Err(PjrtError::PluginAlreadyLoaded {
                    loaded: loaded.path.display().to_string(),
                    requested: path.display().to_string(),
                })
            };
        }
        // A truncated library would be mapped and then kill the process
        // with SIGBUS; the copy in pk's cache is the pinned release.
        let pinned = cache_libtpu_path().is_some_and(|c| same_file(&c, &path));
        super::libtpu_file::check(&path, pinned)?;
        // A panic while holding the lock cannot leave the slot half-written,
        // so a poisoned lock is still usable.
        let mut slot = PLUGIN.lock().unwrap_or_else(PoisonError::into_inner);
        let result = match &*slot {
            Some(done) => done.clone(),
            None => {
                let (opened, log) = capture_stderr(|| Plugin::open(&path, capture));
                if verbose {
                    print_log(&log);
                }
                let opened = opened
                    .map(|p| &*Box::leak(Box::new(p)))
                    .map_err(|e| e.with_log(&log));
                if !matches!(opened, Err(PjrtError::LibtpuLoad { .. })) {
                    *slot = Some(opened.clone());
                }
                opened
            }
        };
        let plugin = result?;
        if same_file(&plugin.path, &path) {
            Ok(plugin)
        } else {
            Err(PjrtError::PluginAlreadyLoaded {
                loaded: plugin.path.display().to_string(),
                requested: path.display().to_string(),
            })
        }
    }

    fn open(path: &Path, capture: Option<bool>) -> Result<Plugin, PjrtError> {
        // This runs before libtpu is loaded and under the plugin lock, so no
        // libtpu thread reads the environment yet.
        set_default_env("TPU_SKIP_MDS_QUERY", "1");
        if !tpu_device_present() {
            // Without a TPU there is no metadata server to name the workers,
            // and libtpu logs a multi-line INVALID_ARGUMENT trace at start-up
            // unless told it is alone. Compilation is the same either way.
            set_default_env("TPU_WORKER_HOSTNAMES", "localhost");
            // libtpu's lock file (/tmp/libtpu_lockfile) gives one process
            // the host's TPU; without a TPU it guards nothing, yet a second
            // pk process (a parallel build, or a run while one is going)
            // would fail to initialise instead of compiling or reporting
            // that there is no TPU.
            set_default_env("ALLOW_MULTIPLE_LIBTPU_LOAD", "1");
        }
        // libtpu reads its dump flags once, as it initialises.
        let capture = capture.map(super::capture::CaptureDir::arm);
        let started = Instant::now();
        let load_err = |reason: String| PjrtError::LibtpuLoad {
            path: path.display().to_string(),
            reason,
        };
        let (library, api) = load_library(path).map_err(|e| load_err(e.to_string()))?;
        if api.is_null() {
            return Err(load_err("GetPjrtApi returned no API table".into()));
        }
        let version = api_version(api);
        let init_err = |message: String| PjrtError::PluginInit {
            path: path.display().to_string(),
            message,
        };
        if version.major != pjrt_sys::PJRT_API_MAJOR as i32 || version.minor < MIN_API_MINOR {
            return Err(init_err(format!(
                "it implements PJRT C API {version}; pk needs {}.{} or a newer minor version",
                pjrt_sys::PJRT_API_MAJOR,
                MIN_API_MINOR
            )));
        }
        let plugin = Plugin {
            path: path.to_path_buf(),
            api,
            version,
            load_time: Duration::ZERO,
            capture,
            _library: library,
        };
        let initialize = api_fn!(plugin, PJRT_Plugin_Initialize)?;
        let mut args = pjrt_sys::PJRT_Plugin_Initialize_Args::new();
        // SAFETY: `args` is a valid, fully initialised 0.54 struct, unchanged
        // since; the plugin writes nothing into it.
        let err = unsafe { initialize(&mut args) };
        if let Some(e) = plugin.take_error(err) {
            return Err(init_err(e.message));
        }
        Ok(Plugin {
            load_time: started.elapsed(),
            ..plugin
        })
    }

    /// The file the plugin was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The PJRT C API version the plugin implements (0.116 for libtpu 0.0.51).
    pub fn api_version(&self) -> ApiVersion {
        self.version
    }

    /// Time spent loading and initialising the plugin. libtpu does more
    /// set-up lazily, on the first topology it creates.
    pub fn load_time(&self) -> Duration {
        self.load_time
    }

    /// The plugin's attributes (`xla_version`, `stablehlo_current_version`,
    /// ...), each rendered as text.
    pub fn attributes(&self) -> Result<Vec<(String, String)>, PjrtError> {
        let f = api_fn!(self, PJRT_Plugin_Attributes)?;
        let mut args = pjrt_sys::PJRT_Plugin_Attributes_Args {
            struct_size: abi::PLUGIN_ATTRIBUTES_SIZE,
            ..Default::default()
        };
        // SAFETY: `args` is initialised and sized as the plugin expects.
        let err = unsafe { f(&mut args) };
        if let Some(e) = self.take_error(err) {
            return Err(self.init_error(e.message));
        }
        // SAFETY: the plugin returned `num_attributes` values that live as
        // long as the process.
        let values = unsafe { raw_slice(args.attributes, args.num_attributes) };
        Ok(values.iter().map(named_value).collect())
    }

    fn init_error(&self, message: String) -> PjrtError {
        PjrtError::PluginInit {
            path: self.path.display().to_string(),
            message,
        }
    }

    /// Returns a function from the plugin's table, after checking that the
    /// table (whose length the plugin states in `struct_size`) reaches the
    /// field at `offset`. Called through [`api_fn!`].
    pub(crate) fn function<F>(
        &self,
        name: &'static str,
        offset: usize,
        get: impl FnOnce(&PJRT_Api) -> Option<F>,
    ) -> Result<F, PjrtError> {
        // SAFETY: `open` checked that the plugin implements at least API 0.54,
        // so its table is at least as long as pjrt-sys's `PJRT_Api`.
        let api = unsafe { &*self.api };
        let missing = || PjrtError::MissingFunction {
            function: name,
            version: self.version.to_string(),
        };
        // An entry past the table's stated end is not the plugin's, whatever
        // the bytes there hold; a null entry reads as `None`.
        if offset + std::mem::size_of::<usize>() > api.struct_size {
            return Err(missing());
        }
        get(api).ok_or_else(missing)
    }

    /// Turns a returned `PJRT_Error*` into its code and message and frees
    /// it; `None` when the call succeeded (null).
    pub(crate) fn take_error(&self, err: *mut PJRT_Error) -> Option<RawError> {
        if err.is_null() {
            return None;
        }
        // SAFETY: `self.api` is valid (see `function`).
        let api = unsafe { &*self.api };
        let mut message = String::from("(libtpu gave no message)");
        if let Some(f) = api.PJRT_Error_Message {
            let mut args = pjrt_sys::PJRT_Error_Message_Args::new();
            args.error = err;
            // SAFETY: `err` is a live error owned by us; the message it
            // points to lives until the error is destroyed below.
            unsafe {
                f(&mut args);
                message = String::from_utf8_lossy(raw_slice(
                    args.message.cast::<u8>(),
                    args.message_size,
                ))
                .into_owned();
            }
        }
        let mut code = 0;
        if let Some(f) = api.PJRT_Error_GetCode {
            let mut args = pjrt_sys::PJRT_Error_GetCode_Args::new();
            args.error = err;
            // SAFETY: as above; GetCode cannot fail for a live error, and a
            // failure would return another error that we do not own.
            let failed = unsafe { f(&mut args) };
            if failed.is_null() {
                code = args.code;
            }
        }
        if let Some(f) = api.PJRT_Error_Destroy {
            let mut args = pjrt_sys::PJRT_Error_Destroy_Args::new();
            args.error = err;
            // SAFETY: `err` is destroyed exactly once, here.
            unsafe { f(&mut args) };
        }
        Some(RawError { code, message })
    }
}

/// Sets an environment variable unless the user already set it.
fn set_default_env(name: &str, value: &str) {
    if std::env::var_os(name).is_none() {
        std::env::set_var(name, value);
    }
}

/// A PJRT error after it has been read and freed.
#[derive(Debug, Clone)]
pub(crate) struct RawError {
    pub code: u32,
    pub message: String,
}

impl RawError {
    /// The absl status name of the code, as PJRT uses them.
    pub(crate) fn status(&self) -> &'static str {
        const NAMES: [&str; 17] = [
            "OK",
            "CANCELLED",
            "UNKNOWN",
            "INVALID_ARGUMENT",
            "DEADLINE_EXCEEDED",
            "NOT_FOUND",
            "ALREADY_EXISTS",
            "PERMISSION_DENIED",
            "RESOURCE_EXHAUSTED",
            "FAILED_PRECONDITION",
            "ABORTED",
            "OUT_OF_RANGE",
            "UNIMPLEMENTED",
            "INTERNAL",
            "UNAVAILABLE",
            "DATA_LOSS",
            "UNAUTHENTICATED",
        ];
        usize::try_from(self.code)
            .ok()
            .and_then(|i| NAMES.get(i).copied())
            .unwrap_or("UNKNOWN")
    }
}

type GetPjrtApi = unsafe extern "C" fn() -> *const PJRT_Api;

/// dlopens `path` and calls its `GetPjrtApi`.
fn load_library(
    path: &Path,
) -> Result<(ManuallyDrop<libloading::Library>, *const PJRT_Api), libloading::Error> {
    // SAFETY: loading runs libtpu's static initialisers, which is what the
    // PJRT plugin contract expects; `GetPjrtApi` has the declared signature
    // in every PJRT plugin and only returns a pointer to a static table.
    unsafe {
        let library = ManuallyDrop::new(libloading::Library::new(path)?);
        let get_api: libloading::Symbol<GetPjrtApi> = library.get(b"GetPjrtApi\0")?;
        let api = get_api();
        Ok((library, api))
    }
}

/// Reads the version fields at the start of the table without assuming
/// anything about its length beyond them, which every PJRT version has.
fn api_version(api: *const PJRT_Api) -> ApiVersion {
    // SAFETY: `api` is non-null and points to the plugin's table, whose
    // first fields (struct_size, extension_start, pjrt_api_version) are the
    // same in every PJRT C API version.
    let v = unsafe { ptr::addr_of!((*api).pjrt_api_version).read() };
    ApiVersion {
        major: v.major_version,
        minor: v.minor_version,
    }
}

/// Views `len` values at `data` as a slice; empty when `data` is null.
///
/// # Safety
/// When non-null, `data` must point to `len` initialised values that outlive
/// the returned slice.
pub(crate) unsafe fn raw_slice<'a, T>(data: *const T, len: usize) -> &'a [T] {
    if data.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(data, len) }
    }
}

/// Copies a (pointer, length) string owned by the plugin.
///
/// # Safety
/// As for [`raw_slice`].
pub(crate) unsafe fn raw_string(data: *const c_char, len: usize) -> String {
    // SAFETY: guaranteed by the caller.
    String::from_utf8_lossy(unsafe { raw_slice(data.cast::<u8>(), len) }).into_owned()
}

/// Renders a `PJRT_NamedValue` as `(name, value)`.
pub(crate) fn named_value(v: &pjrt_sys::PJRT_NamedValue) -> (String, String) {
    // SAFETY: the plugin filled in `name`/`name_size` and the union member
    // selected by `type_`, each valid for the lifetime of `v`.
    unsafe {
        let name = raw_string(v.name, v.name_size);
        let value = match v.type_ {
            pjrt_sys::PJRT_NamedValue_Type_PJRT_NamedValue_kString => {
                raw_string(v.__bindgen_anon_1.string_value, v.value_size)
            }
            pjrt_sys::PJRT_NamedValue_Type_PJRT_NamedValue_kInt64 => {
                v.__bindgen_anon_1.int64_value.to_string()
            }
            pjrt_sys::PJRT_NamedValue_Type_PJRT_NamedValue_kInt64List => {
                format!(
                    "{:?}",
                    raw_slice(v.__bindgen_anon_1.int64_array_value, v.value_size)
                )
            }
            pjrt_sys::PJRT_NamedValue_Type_PJRT_NamedValue_kFloat => {
                v.__bindgen_anon_1.float_value.to_string()
            }
            pjrt_sys::PJRT_NamedValue_Type_PJRT_NamedValue_kBool => {
                v.__bindgen_anon_1.bool_value.to_string()
            }
            other => format!("(value of unknown type {other})"),
        };
        (name, value)
    }
}

/// The value of an integer or floating-point `PJRT_NamedValue`.
pub(crate) fn numeric_value(v: &pjrt_sys::PJRT_NamedValue) -> Option<f64> {
    // SAFETY: the union member read is the one `type_` selects.
    unsafe {
        match v.type_ {
            pjrt_sys::PJRT_NamedValue_Type_PJRT_NamedValue_kInt64 => {
                Some(v.__bindgen_anon_1.int64_value as f64)
            }
            pjrt_sys::PJRT_NamedValue_Type_PJRT_NamedValue_kFloat => {
                Some(f64::from(v.__bindgen_anon_1.float_value))
            }
            _ => None,
        }
    }
}

/// Compares two paths as files, so `./libtpu.so` and its absolute path are
/// the same plugin.
fn same_file(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).map(OsString::from);
    match (canon(a), canon(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Whether the host has a device node through which libtpu reaches a TPU:
/// `/dev/accel<N>` (v4, v5p, v5e, v6e) or `/dev/vfio/<N>` (newer hosts).
pub(crate) fn tpu_device_present() -> bool {
    let has_entry = |dir: &str, keep: &dyn Fn(&str) -> bool| {
        std::fs::read_dir(Path::new(dir))
            .map(|entries| {
                entries
                    .flatten()
                    .any(|e| e.file_name().to_str().is_some_and(keep))
            })
            .unwrap_or(false)
    };
    has_entry("/dev", &|name| name.starts_with("accel"))
        || has_entry("/dev/vfio", &|name| {
            name.bytes().all(|b| b.is_ascii_digit())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_follow_absl_codes() {
        let e = |code| RawError {
            code,
            message: String::new(),
        };
        assert_eq!(e(3).status(), "INVALID_ARGUMENT");
        assert_eq!(e(16).status(), "UNAUTHENTICATED");
        assert_eq!(e(99).status(), "UNKNOWN");
    }
}

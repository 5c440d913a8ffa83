//! Writing a package atomically.
//!
//! The package is written in full into a fresh temporary directory next to
//! its destination (same file system, so renames are atomic). Only then
//! does it trade places with an existing package at the destination in one
//! atomic exchange (Linux; elsewhere the old one is renamed away and the new
//! one renamed into place), and the old one is deleted. If anything fails
//! before the new package is in place, the old one is put back (or was never
//! moved) and the temporary directory is removed. A reader sees the old
//! package or the new one, never a mixture: [`Package::open`] reads every
//! file through one directory and starts again if the destination was
//! replaced meanwhile.
//!
//! Files are not flushed to disk (`fsync`) before the rename. A package is a
//! build output that can be rebuilt, and one damaged by an operating-system
//! crash fails verification in [`Package::open`] rather than being used.
//! Flushing, in exchange, cost ~45 ms per package on this project's
//! machines (`cargo bench --bench build`, `package/*`: ~50 ms with it, ~7 ms
//! without), several times the build itself.
//!
//! invariant: after `write` returns, the destination holds either the
//! complete new package (`Ok`) or exactly what it held before (`Err`), and
//! no temporary directory of this write remains.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use super::{
    sha256_hex, AotArtifact, AotEntry, CpuReference, FileEntry, Manifest, NewPackage, Package,
    PackageError, TargetModule, MANIFEST, MOSAIC, STABLEHLO, WASM, WASM_MANIFEST,
};
use crate::pjrt::TpuTarget;

/// The path of a target's own StableHLO module inside a package.
pub fn stablehlo_path(target: TpuTarget) -> String {
    format!("stablehlo/{}.mlir", target.name())
}

/// Points in a write at which tests make it fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage<'a> {
    /// A file was written into the temporary directory.
    Wrote(&'a str),
    /// Every file is written; nothing at the destination has changed yet.
    Complete,
    /// An older package is about to be replaced; it is still in place.
    Replacing,
}

impl NewPackage {
    /// Writes the package to `dest` atomically (see the module docs) and
    /// returns it as [`Package::open`] would read it back.
    ///
    /// `dest` may be absent, an empty directory, or an earlier package
    /// (recognised by its `manifest.json`); anything else is refused with
    /// [`PackageError::NotReplaceable`].
    pub fn write(&self, dest: impl AsRef<Path>) -> Result<Package, PackageError> {
        write_with(self, dest.as_ref(), &mut |_| Ok(()))
    }

    /// The final manifest (file table, CPU reference, AOT entries and
    /// libtpu version filled in) and every file's contents by path.
    pub fn seal(&self) -> Result<(Manifest, BTreeMap<String, Vec<u8>>), PackageError> {
        let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut manifest = self.manifest.clone();
        files.insert(MOSAIC.to_string(), self.mosaic.clone().into_bytes());
        // The first target's module is `kernel.stablehlo.mlir`; a target
        // whose module differs (another scoped VMEM limit) gets its own
        // file, so that one target's executable never depends on which
        // other targets were built with it.
        manifest.stablehlo = Vec::new();
        let first = self.stablehlo();
        for (i, m) in self.modules.iter().enumerate() {
            let file = if i == 0 || m.text == first {
                STABLEHLO.to_string()
            } else {
                stablehlo_path(m.target)
            };
            files.insert(file.clone(), m.text.clone().into_bytes());
            manifest.stablehlo.push(TargetModule {
                target: m.target.name().to_string(),
                module: file,
                vmem_limit_bytes: m.vmem_limit_bytes,
            });
        }
        manifest.cpu_reference = None;
        if let Some((wasm, cpu)) = &self.cpu_reference {
            files.insert(WASM.to_string(), wasm.clone());
            files.insert(WASM_MANIFEST.to_string(), cpu.to_json().into_bytes());
            manifest.cpu_reference = Some(CpuReference {
                module: WASM.to_string(),
                manifest: WASM_MANIFEST.to_string(),
                target: cpu.target.clone(),
                abi_version: cpu.abi_version,
            });
        }
        manifest.aot = Vec::new();
        manifest.toolchain.libtpu = None;
        for a in &self.aot {
            let executable = AotArtifact::executable_path(a.target);
            let report = AotArtifact::report_path(a.target);
            let json = serde_json::to_string_pretty(&a.report).unwrap_or_default() + "\n";
            files.insert(executable.clone(), a.executable.clone());
            files.insert(report.clone(), json.into_bytes());
            manifest.aot.push(AotEntry {
                target: a.target.name().to_string(),
                executable,
                report,
            });
            manifest.toolchain.libtpu = Some(a.report.libtpu.clone());
        }
        manifest.files = files
            .iter()
            .map(|(name, bytes)| {
                let entry = FileEntry {
                    sha256: sha256_hex(bytes),
                    bytes: bytes.len() as u64,
                };
                (name.clone(), entry)
            })
            .collect();
        manifest
            .check()
            .map_err(|message| PackageError::Inconsistent {
                dir: "the new package".to_string(),
                message,
            })?;
        Ok((manifest, files))
    }
}

/// [`NewPackage::write`] with a hook called at each [`Stage`]; an error
/// from the hook fails the write there, as an I/O error would.
pub(crate) fn write_with(
    pkg: &NewPackage,
    dest: &Path,
    hook: &mut dyn FnMut(Stage<'_>) -> io::Result<()>,
) -> Result<Package, PackageError> {
    let (manifest, files) = pkg.seal()?;
    let write_err = |path: &Path, e: io::Error| PackageError::Write {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let Some(name) = dest.file_name().map(|n| n.to_string_lossy().to_string()) else {
        return Err(write_err(
            dest,
            io::Error::new(io::ErrorKind::InvalidInput, "the path has no final name"),
        ));
    };
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if let Some(package) = enclosing_package(&parent) {
        return Err(PackageError::InsideAPackage {
            dest: dest.display().to_string(),
            package: package.display().to_string(),
        });
    }
    fs::create_dir_all(&parent).map_err(|e| write_err(dest, e))?;
    let replacing = replaceable(dest)?;

    let tmp = TempDir::create(&parent, &name).map_err(|e| write_err(dest, e))?;
    let manifest_json = manifest.to_json().into_bytes();
    let all = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .chain([(MANIFEST, manifest_json.as_slice())]);
    for (file, bytes) in all {
        write_file(&tmp.path, file, bytes)
            .and_then(|()| hook(Stage::Wrote(file)))
            .map_err(|e| write_err(dest, e))?;
    }
    hook(Stage::Complete).map_err(|e| write_err(dest, e))?;

    if replacing {
        replace(tmp, dest, &parent, &name, hook).map_err(|e| write_err(dest, e))?;
    } else {
        fs::rename(&tmp.path, dest).map_err(|e| write_err(dest, e))?;
        tmp.disarm();
    }
    Package::from_verified(dest.to_path_buf(), manifest, files)
}

/// Puts the complete package in `tmp` at `dest`, which holds an older one.
///
/// Where the system can (Linux's `renameat2` with `RENAME_EXCHANGE`), the
/// two directories trade places in one step, so that `dest` names the old
/// package or the new one at every instant and a reader that opens it
/// while it is rebuilt sees one of them whole (see [`Package::open`]). The
/// old one, now at the temporary name, is then removed. Elsewhere the old
/// package is renamed away first, and for an instant `dest` does not exist.
fn replace(
    tmp: TempDir,
    dest: &Path,
    parent: &Path,
    name: &str,
    hook: &mut dyn FnMut(Stage<'_>) -> io::Result<()>,
) -> io::Result<()> {
    hook(Stage::Replacing)?;
    match exchange(&tmp.path, dest) {
        // `tmp` holds the old package now; dropping it removes it. Failing
        // to remove it loses nothing, so it is not an error of the write.
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(e) => return Err(e),
    }
    let old = unique_sibling(parent, name, "old");
    fs::rename(dest, &old)?;
    if let Err(e) = fs::rename(&tmp.path, dest) {
        // Put the old package back; if even that fails, say where it is.
        return Err(match fs::rename(&old, dest) {
            Ok(()) => e,
            Err(back) => io::Error::new(
                e.kind(),
                format!(
                    "{e}; the previous package could not be moved back from {} ({back})",
                    old.display()
                ),
            ),
        });
    }
    tmp.disarm();
    let _ = fs::remove_dir_all(&old);
    Ok(())
}

/// Exchanges two directories atomically: `Ok(false)` when the system or
/// the file system cannot.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> io::Result<bool> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt as _;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
    };
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both arguments are NUL-terminated paths that outlive the call.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => Ok(false),
        _ => Err(e),
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> io::Result<bool> {
    Ok(false)
}

/// The kernel package that `dir` is, or lies inside, if any: a package
/// written there would be a file its manifest does not list. Looks at
/// `dir` and its ancestors as written, then at those of the deepest one
/// that exists with links resolved (`-o .` inside a package, or a link to
/// one).
pub fn enclosing_package(dir: &Path) -> Option<PathBuf> {
    let is_package = |d: &Path| is_pk_manifest(&d.join(MANIFEST));
    if let Some(found) = dir
        .ancestors()
        .filter(|d| !d.as_os_str().is_empty())
        .find(|d| is_package(d))
    {
        return Some(found.to_path_buf());
    }
    let existing = dir.ancestors().find_map(|d| {
        let d = if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        };
        fs::canonicalize(d).ok()
    })?;
    existing
        .ancestors()
        .find(|d| is_package(d))
        .map(Path::to_path_buf)
}

/// Whether `dest` holds something to replace: `false` when absent, `true`
/// for an empty directory or an earlier package, an error otherwise.
fn replaceable(dest: &Path) -> Result<bool, PackageError> {
    let refuse = |reason: &str| PackageError::NotReplaceable {
        dest: dest.display().to_string(),
        reason: reason.to_string(),
    };
    let meta = match fs::symlink_metadata(dest) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(PackageError::Write {
                path: dest.display().to_string(),
                message: e.to_string(),
            })
        }
    };
    if meta.file_type().is_symlink() {
        return Err(refuse("it is a symbolic link"));
    }
    if !meta.is_dir() {
        return Err(refuse("it is a file"));
    }
    if is_pk_manifest(&dest.join(MANIFEST)) {
        return Ok(true);
    }
    let empty = fs::read_dir(dest)
        .map(|mut entries| entries.next().is_none())
        .unwrap_or(false);
    if empty {
        Ok(true)
    } else {
        Err(refuse("it holds files but no pk manifest.json"))
    }
}

/// A `manifest.json` written by some version of pk: a JSON object whose
/// `format` starts with `pk-package/`. It need not be valid otherwise, so
/// that a damaged package can be rebuilt in place.
fn is_pk_manifest(path: &Path) -> bool {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.is_file() || meta.len() > super::MAX_MANIFEST_BYTES {
        return false;
    }
    fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| {
            v.get("format")?
                .as_str()
                .map(|f| f.starts_with("pk-package/"))
        })
        .unwrap_or(false)
}

/// A temporary directory removed on drop unless disarmed.
struct TempDir {
    path: PathBuf,
    armed: bool,
}

impl TempDir {
    fn create(parent: &Path, name: &str) -> io::Result<TempDir> {
        loop {
            let path = unique_sibling(parent, name, "tmp");
            match fs::create_dir(&path) {
                Ok(()) => return Ok(TempDir { path, armed: true }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.armed {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// How much of the destination's name a temporary name keeps: with the
/// rest (`.`, `.pk-KIND-`, a process id and a counter, at most 40 bytes)
/// it stays within the 255 bytes file systems allow a name, whatever the
/// length of the destination's own.
const NAME_IN_TEMP: usize = 200;

/// A hidden path next to the destination that does not exist yet:
/// `.NAME.pk-KIND-PID-N`, NAME cut to [`NAME_IN_TEMP`] bytes.
fn unique_sibling(parent: &Path, name: &str, kind: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut cut = name.len().min(NAME_IN_TEMP);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let name = &name[..cut];
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = parent.join(format!(".{name}.pk-{kind}-{}-{n}", std::process::id()));
        if fs::symlink_metadata(&path).is_err() {
            return path;
        }
    }
}

/// Writes one file, creating its subdirectory.
fn write_file(root: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let path = root.join(name);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    f.write_all(bytes)
}

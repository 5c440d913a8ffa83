//! Writing a package atomically.
//!
//! The package is written in full into a fresh temporary directory next to
//! its destination (same file system, so renames are atomic). Only then is
//! an existing package at the destination renamed away, the new one renamed
//! into place, and the old one deleted. If anything fails before the new
//! package is in place, the old one is put back (or was never moved) and the
//! temporary directory is removed. For the instant between the two renames
//! the destination does not exist; a reader then sees "not a package", never
//! a mixture of two.
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
    /// The old package was renamed away; the new one is not in place yet.
    MovedOld,
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
        let old = unique_sibling(&parent, &name, "old");
        fs::rename(dest, &old).map_err(|e| write_err(dest, e))?;
        let moved = hook(Stage::MovedOld).and_then(|()| fs::rename(&tmp.path, dest));
        if let Err(e) = moved {
            // Put the old package back; if even that fails, say where it is.
            return Err(match fs::rename(&old, dest) {
                Ok(()) => write_err(dest, e),
                Err(back) => write_err(
                    dest,
                    io::Error::new(
                        e.kind(),
                        format!(
                            "{e}; the previous package could not be moved back from {} ({back})",
                            old.display()
                        ),
                    ),
                ),
            });
        }
        tmp.disarm();
        // The new package is in place; failing to delete the old copy loses
        // nothing, so it is not an error of the write.
        let _ = fs::remove_dir_all(&old);
    } else {
        fs::rename(&tmp.path, dest).map_err(|e| write_err(dest, e))?;
        tmp.disarm();
    }
    Package::from_verified(dest.to_path_buf(), manifest, files)
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

/// A hidden path next to the destination that does not exist yet:
/// `.NAME.pk-KIND-PID-N`.
fn unique_sibling(parent: &Path, name: &str, kind: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
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

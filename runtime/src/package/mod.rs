//! Kernel packages: one directory per kernel specialisation, written by
//! `pkc build` and loaded by hosts that compile or run the kernel.
//!
//! ```text
//! add/
//!   manifest.json           format, kernel, parameters, operands, grid, targets, the
//!                           module of each target, cost, VMEM, toolchain versions,
//!                           SHA-256 of every file below
//!   kernel.stablehlo.mlir   the tpu_custom_call module PJRT / JAX load (the first target's)
//!   stablehlo/v5p.mlir      the module of a target whose scoped VMEM limit differs
//!   kernel.mosaic.mlir      its body, stable Mosaic (serialization version 11)
//!   kernel.wasm             the CPU reference, when the Wasm back end supports the kernel
//!   kernel.wasm.json        the reference's side tables (memory layout, .pk locations)
//!   aot/v5e.pjrt            with --aot: libtpu's serialized executable per target
//!   aot/v5e.json            and its compile report (code size, memory, cost, time)
//! ```
//!
//! [`NewPackage::write`] writes a package atomically (see `write.rs`);
//! [`Package::open`] reads one back and verifies it whole: the format
//! version, the manifest's consistency, the set of files, every hash, that
//! the files describe the manifest's kernel (see `verify.rs`), and that a
//! package with a CPU reference is what its carried source builds to (see
//! `rebuild.rs`).
//! [`Package::load_cpu`] opens a package and compiles its CPU reference, as
//! `pkc run DIR` does.
//! A package that opens is exactly the one that was written, held in
//! memory, so nothing is read again after it was verified.

mod aot;
pub mod build;
mod error;
mod manifest;
mod rebuild;
mod verify;
mod write;

pub use aot::{AotArtifact, AotReport};
pub use error::{PackageError, EXPLANATIONS};
pub use manifest::{
    AotEntry, Cost, CpuReference, FileEntry, GridAxis, Manifest, Operand, OperandRole, Param,
    ParamValueEntry, TargetModule, Toolchain, Vmem, VmemBuffer, FORMAT,
};
pub use verify::LoadError;
pub use write::{enclosing_package, stablehlo_path};

use std::collections::BTreeMap;
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::pjrt::TpuTarget;
use pk_lowering::wasm::abi::CpuManifest;

/// The manifest's file name.
pub const MANIFEST: &str = "manifest.json";
/// The file name of the first target's StableHLO module.
pub const STABLEHLO: &str = "kernel.stablehlo.mlir";
/// The stable Mosaic module's file name.
pub const MOSAIC: &str = "kernel.mosaic.mlir";
/// The WebAssembly reference's file name.
pub const WASM: &str = "kernel.wasm";
/// The file name of the WebAssembly reference's side tables.
pub const WASM_MANIFEST: &str = "kernel.wasm.json";

/// The largest `manifest.json` pk reads.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;
/// The largest other package file pk reads.
pub const MAX_FILE_BYTES: u64 = 256 << 20;
/// How many directory entries a package may hold, counted while looking for
/// unlisted files, so that a wrong path cannot start a walk of a large tree.
const MAX_ENTRIES: usize = 4096;

/// A package about to be written: the manifest's description of the kernel
/// and the contents of every file.
#[derive(Debug, Clone)]
pub struct NewPackage {
    /// The description ([`Manifest::describe`]); its file table, module
    /// table, CPU reference, AOT entries and libtpu version are filled in
    /// on writing.
    pub manifest: Manifest,
    /// The StableHLO module of each target, in the order of the
    /// manifest's `targets`.
    pub modules: Vec<StablehloModule>,
    pub mosaic: String,
    /// The `.wasm` module and its side tables.
    pub cpu_reference: Option<(Vec<u8>, CpuManifest)>,
    /// One entry per target compiled ahead of time.
    pub aot: Vec<AotArtifact>,
}

/// The StableHLO module of one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StablehloModule {
    pub target: TpuTarget,
    /// The scoped VMEM limit the module passes to the TPU compiler.
    pub vmem_limit_bytes: u64,
    pub text: String,
}

impl NewPackage {
    /// The first target's module (`kernel.stablehlo.mlir`).
    pub fn stablehlo(&self) -> &str {
        self.modules.first().map_or("", |m| m.text.as_str())
    }

    /// The module `target` compiles, if the package is for it.
    pub fn stablehlo_for(&self, target: TpuTarget) -> Option<&str> {
        self.modules
            .iter()
            .find(|m| m.target == target)
            .map(|m| m.text.as_str())
    }
}

/// A verified package, held in memory.
#[derive(Debug, Clone)]
pub struct Package {
    dir: PathBuf,
    manifest: Manifest,
    files: BTreeMap<String, Vec<u8>>,
    cpu: Option<CpuManifest>,
    reports: Vec<(TpuTarget, AotReport)>,
}

impl Package {
    /// Reads the package in `dir` and verifies it: `manifest.json` parses,
    /// has this pk's [`FORMAT`] and is consistent; the directory holds
    /// exactly the files the manifest lists, each a regular file within the
    /// size limits and with the recorded SHA-256; the files describe the
    /// manifest's kernel; and a package with a CPU reference is what its
    /// carried source builds to (`PK3013`). A package replaced by a rebuild
    /// while it is read is read again, so the result is the old package or
    /// the new one, whole.
    pub fn open(dir: impl AsRef<Path>) -> Result<Package, PackageError> {
        let dir = dir.as_ref();
        let shown = dir.display().to_string();
        let (manifest, files) = read_whole(dir)?;
        let package = Package::from_verified(dir.to_path_buf(), manifest, files)?;
        if let Some(cpu) = &package.cpu {
            rebuild::check(&package.manifest, &package.files, cpu).map_err(|message| {
                PackageError::NotItsBuild {
                    dir: shown.clone(),
                    message,
                }
            })?;
        }
        Ok(package)
    }

    /// Builds a package from a checked manifest and files whose hashes
    /// match it, parsing the text and JSON files it hands out.
    fn from_verified(
        dir: PathBuf,
        manifest: Manifest,
        files: BTreeMap<String, Vec<u8>>,
    ) -> Result<Package, PackageError> {
        let shown = dir.display().to_string();
        // `Manifest::check` made sure every file named below is listed, and
        // the caller read every listed file; this stays total regardless.
        let get = |name: &str| {
            files
                .get(name)
                .map(Vec::as_slice)
                .ok_or_else(|| PackageError::MissingFile {
                    dir: shown.clone(),
                    file: name.to_string(),
                })
        };
        let inconsistent = |message: String| PackageError::Inconsistent {
            dir: shown.clone(),
            message,
        };
        let texts = manifest.stablehlo.iter().map(|m| m.module.as_str());
        for name in texts.chain([MOSAIC]) {
            if std::str::from_utf8(get(name)?).is_err() {
                return Err(inconsistent(format!("`{name}` is not UTF-8 text")));
            }
        }
        let json_err = |name: &str, e: serde_json::Error| PackageError::InvalidManifest {
            path: dir.join(name).display().to_string(),
            message: e.to_string(),
        };
        let cpu = match &manifest.cpu_reference {
            Some(r) => {
                let cpu = serde_json::from_slice::<CpuManifest>(get(&r.manifest)?)
                    .map_err(|e| json_err(&r.manifest, e))?;
                verify::check_cpu(&manifest, &cpu).map_err(inconsistent)?;
                Some(cpu)
            }
            None => None,
        };
        let mut reports = Vec::new();
        for a in &manifest.aot {
            let report: AotReport =
                serde_json::from_slice(get(&a.report)?).map_err(|e| json_err(&a.report, e))?;
            // `Manifest::check` accepted the name, so it parses.
            if let Ok(t) = crate::pjrt::parse_target(&a.target) {
                let bytes = get(&a.executable)?.len() as u64;
                verify::check_report(&manifest, t, &report, bytes).map_err(inconsistent)?;
                reports.push((t, report));
            }
        }
        Ok(Package {
            dir,
            manifest,
            files,
            cpu,
            reports,
        })
    }

    /// The directory the package was opened from or written to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The first target's StableHLO module text (`kernel.stablehlo.mlir`).
    pub fn stablehlo(&self) -> &str {
        self.text(STABLEHLO)
    }

    /// The StableHLO module text `target` compiles, if the package is for
    /// it (see [`Manifest::stablehlo`]).
    pub fn stablehlo_for(&self, target: TpuTarget) -> Option<&str> {
        let entry = self.manifest.module_entry(target)?;
        Some(self.text(&entry.module))
    }

    /// The stable Mosaic module text (`kernel.mosaic.mlir`).
    pub fn mosaic(&self) -> &str {
        self.text(MOSAIC)
    }

    fn text(&self, name: &str) -> &str {
        // `from_verified` checked that these files are UTF-8.
        self.files
            .get(name)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or_default()
    }

    /// The WebAssembly reference and its side tables, when the package has
    /// them.
    pub fn cpu_reference(&self) -> Option<(&[u8], &CpuManifest)> {
        let r = self.manifest.cpu_reference.as_ref()?;
        Some((self.files.get(&r.module)?.as_slice(), self.cpu.as_ref()?))
    }

    /// The targets the package has executables for, in manifest order.
    pub fn aot_targets(&self) -> Vec<TpuTarget> {
        self.reports.iter().map(|(t, _)| *t).collect()
    }

    /// libtpu's serialized executable for `target`.
    pub fn executable(&self, target: TpuTarget) -> Option<&[u8]> {
        let entry = self.manifest.aot_entry(target)?;
        self.files.get(&entry.executable).map(Vec::as_slice)
    }

    /// The compile report for `target`.
    pub fn aot_report(&self, target: TpuTarget) -> Option<&AotReport> {
        self.reports
            .iter()
            .find(|(t, _)| *t == target)
            .map(|(_, r)| r)
    }

    /// Any listed file's verified contents, by its path in the package.
    pub fn file(&self, name: &str) -> Option<&[u8]> {
        self.files.get(name).map(Vec::as_slice)
    }
}

/// How often [`Package::open`] reads a package that was replaced while it
/// read it before it reports what it found.
const REREADS: usize = 100;

/// Reads and checks the manifest and every listed file of the package in
/// `dir`. A package rebuilt meanwhile (`pkc build` replaces the directory
/// whole, see `write.rs`) is read again, so that the result comes from one
/// directory: the directory is held open while it is read, so that its
/// identity (device and inode) cannot pass to another, and compared with
/// the one `dir` names afterwards.
fn read_whole(dir: &Path) -> Result<(Manifest, BTreeMap<String, Vec<u8>>), PackageError> {
    let mut attempt = 0;
    loop {
        let pin = fs::File::open(dir).ok();
        let before = pin
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .or_else(|| fs::metadata(dir).ok())
            .and_then(|m| identity(&m));
        let result = read_once(dir);
        let after = fs::metadata(dir).ok().and_then(|m| identity(&m));
        drop(pin);
        attempt += 1;
        if before == after || attempt >= REREADS {
            return result;
        }
    }
}

/// The device and inode of a directory.
#[cfg(unix)]
fn identity(m: &fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(_: &fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// One reading of [`read_whole`].
fn read_once(dir: &Path) -> Result<(Manifest, BTreeMap<String, Vec<u8>>), PackageError> {
    let shown = dir.display().to_string();
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(not_a_package(&shown, "it is not a directory")),
        Err(e) => return Err(not_a_package(&shown, &e.to_string())),
    }
    let manifest_path = dir.join(MANIFEST);
    let text = match read_limited(dir, MANIFEST, MAX_MANIFEST_BYTES) {
        Err(PackageError::MissingFile { .. }) => {
            return Err(not_a_package(&shown, "it has no manifest.json"))
        }
        other => other?,
    };
    let invalid = |message: String| PackageError::InvalidManifest {
        path: manifest_path.display().to_string(),
        message,
    };
    let value: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| invalid(e.to_string()))?;
    match value.get("format").and_then(|f| f.as_str()) {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(PackageError::UnsupportedFormat {
                dir: shown,
                found: other.to_string(),
                expected: FORMAT.to_string(),
            })
        }
        None => return Err(invalid("it has no `format` string".to_string())),
    }
    let manifest: Manifest = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
    manifest
        .check()
        .map_err(|message| PackageError::Inconsistent {
            dir: shown.clone(),
            message,
        })?;
    for found in list_files(dir)? {
        if found != MANIFEST && !manifest.files.contains_key(&found) {
            return Err(PackageError::UnexpectedFile {
                dir: shown,
                file: found,
                reason: "its manifest does not list".to_string(),
            });
        }
    }
    let mut files = BTreeMap::new();
    for (name, entry) in &manifest.files {
        if entry.bytes > MAX_FILE_BYTES {
            return Err(too_large(dir, name, entry.bytes, MAX_FILE_BYTES));
        }
        let bytes = read_limited(dir, name, MAX_FILE_BYTES)?;
        let found = sha256_hex(&bytes);
        if found != entry.sha256.to_ascii_lowercase() || bytes.len() as u64 != entry.bytes {
            return Err(PackageError::HashMismatch {
                dir: shown,
                file: name.clone(),
                expected: entry.sha256.clone(),
                expected_bytes: entry.bytes,
                found,
                found_bytes: bytes.len() as u64,
            });
        }
        files.insert(name.clone(), bytes);
    }
    Ok((manifest, files))
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('0'));
    }
    out
}

fn not_a_package(dir: &str, reason: &str) -> PackageError {
    PackageError::NotAPackage {
        dir: dir.to_string(),
        reason: reason.to_string(),
    }
}

fn too_large(dir: &Path, name: &str, bytes: u64, limit: u64) -> PackageError {
    PackageError::FileTooLarge {
        dir: dir.display().to_string(),
        file: name.to_string(),
        bytes,
        limit,
    }
}

/// Reads `dir/name`, which must be a regular file (not a link) of at most
/// `limit` bytes. The limit is enforced on the bytes read as well as on the
/// size the file system reports, in case the file grows meanwhile.
fn read_limited(dir: &Path, name: &str, limit: u64) -> Result<Vec<u8>, PackageError> {
    let path = dir.join(name);
    let read_err = |e: std::io::Error| PackageError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(PackageError::MissingFile {
                dir: dir.display().to_string(),
                file: name.to_string(),
            })
        }
        Err(e) => return Err(read_err(e)),
    };
    if !meta.file_type().is_file() {
        return Err(PackageError::UnexpectedFile {
            dir: dir.display().to_string(),
            file: name.to_string(),
            reason: "is not a regular file".to_string(),
        });
    }
    if meta.len() > limit {
        return Err(too_large(dir, name, meta.len(), limit));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    fs::File::open(&path)
        .and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
        .map_err(read_err)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(dir, name, bytes.len() as u64, limit));
    }
    Ok(bytes)
}

/// Every entry under `dir` as a `/`-separated relative path; directories
/// are descended into, anything else is listed (links and special files
/// included, so that `open` can refuse them by name).
fn list_files(dir: &Path) -> Result<Vec<String>, PackageError> {
    let mut out = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    let mut seen = 0usize;
    while let Some((path, prefix)) = pending.pop() {
        let read_err = |e: std::io::Error| PackageError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        for entry in fs::read_dir(&path).map_err(read_err)? {
            let entry = entry.map_err(read_err)?;
            seen += 1;
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if seen > MAX_ENTRIES {
                return Err(PackageError::UnexpectedFile {
                    dir: dir.display().to_string(),
                    file: name,
                    reason: format!("is past the {MAX_ENTRIES}-entry limit of a package"),
                });
            }
            if entry.file_type().map_err(read_err)?.is_dir() {
                pending.push((entry.path(), format!("{name}/")));
            } else {
                out.push(name);
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests;

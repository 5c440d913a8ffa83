//! A package's CPU reference checked by building it again.
//!
//! The side table (`kernel.wasm.json`) tells the host where every buffer
//! lives in the module's memory, how large each block is and what each
//! MXU and DMA call means; the module trusts it. Its hash cannot vouch for
//! it: whoever edits the file can update the hash too. Most of its fields
//! (memory offsets, call tables, flags such as a dot's transposes) cannot be
//! checked against the module without redoing the compiler's work, so pk
//! redoes it: the side table carries the kernel's source files, and the
//! manifest its parameters and targets, which is everything `pkc build`
//! read. Building them again must give the same files, byte for byte, and
//! the same manifest.
//!
//! invariant: a package with a CPU reference opens only if every file but
//! the AOT executables and reports (which `verify::check_report` checks
//! against their entries) is what this pk builds from the sources the side
//! table carries, with the manifest's kernel, parameters and targets, and
//! the manifest is the one that build writes.

use std::collections::BTreeMap;

use pk_lowering::wasm::abi::CpuManifest;
use serde_json::Value;

use super::build::{build_embedded, BuildOptions};
use super::{Manifest, WASM_MANIFEST};

/// The prefix of the source file that holds a `-p NAME=VALUE` value.
const PARAM_FILE: &str = "-p ";

/// Builds the kernel of `m` again from the sources in `cpu` and compares
/// the result with the package's manifest and files; the message says what
/// differs first.
pub(super) fn check(
    m: &Manifest,
    files: &BTreeMap<String, Vec<u8>>,
    cpu: &CpuManifest,
) -> Result<(), String> {
    let this = env!("CARGO_PKG_VERSION");
    if m.toolchain.pk != this {
        return Err(format!(
            "it was built by pk {}, and this pk ({this}) builds it differently",
            m.toolchain.pk
        ));
    }
    // The build's source map: the root file, the modules it used (the
    // standard library's included, which this pk supplies itself), and one
    // file per `-p` value, in the order given.
    let mut params = Vec::new();
    let mut sources = Vec::new();
    for (i, s) in cpu.sources.iter().enumerate() {
        match s.name.strip_prefix(PARAM_FILE) {
            Some(name) if i > 0 => params.push((name.to_string(), s.text.clone())),
            _ if i > 0 && s.name.starts_with("std/") => {}
            _ => sources.push((s.name.clone(), s.text.clone())),
        }
    }
    if sources.is_empty() {
        return Err(format!("`{WASM_MANIFEST}` carries no source file"));
    }
    let mut targets = Vec::new();
    for t in &m.targets {
        // `Manifest::check` accepted every name.
        targets.push(crate::pjrt::parse_target(t).map_err(|e| e.to_string())?);
    }
    let opts = BuildOptions {
        targets,
        params,
        param_origins: Vec::new(),
        kernel: Some(m.kernel.clone()),
        cpu_reference: true,
    };
    // The manifest's `source` is the root file's name, as `build_file`
    // writes it.
    let source = std::path::Path::new(&sources[0].0)
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    // The build chose this kernel with `--kernel`, or built every kernel of
    // the file; a `-p` value then needs only some kernel to take it, so a
    // build of this kernel alone can refuse a value meant for another.
    let built = match build_embedded(&sources, &source, &opts) {
        Ok(b) => b,
        Err(alone) => {
            let every = BuildOptions {
                kernel: None,
                ..opts.clone()
            };
            build_embedded(&sources, &source, &every).map_err(|_| {
                let first = alone
                    .diags
                    .first()
                    .map_or("no diagnostic", |d| d.message.as_str());
                format!("its source does not build ({first})")
            })?
        }
    };
    let mut named = built.kernels.iter().filter(|k| k.kernel.name == m.kernel);
    let (Some(kernel), None) = (named.next(), named.next()) else {
        return Err(format!(
            "its source does not have one kernel named `{}`",
            m.kernel
        ));
    };
    let (mut expected, rebuilt) = kernel.package.seal().map_err(|e| e.to_string())?;

    // What a build cannot redo: the AOT executables and reports, checked
    // against their entries when the package opens.
    expected.aot = m.aot.clone();
    expected.toolchain.libtpu = m.toolchain.libtpu.clone();
    for a in &m.aot {
        for name in [&a.executable, &a.report] {
            if let Some(entry) = m.files.get(name) {
                expected.files.insert(name.clone(), entry.clone());
            }
        }
    }

    for (name, bytes) in &rebuilt {
        let Some(found) = files.get(name) else {
            return Err(format!("the build writes `{name}`, which it lacks"));
        };
        if found != bytes {
            return Err(file_difference(name, found, bytes));
        }
    }
    let aot_file = |name: &str| {
        m.aot
            .iter()
            .any(|a| a.executable == name || a.report == name)
    };
    if let Some(extra) = files
        .keys()
        .find(|n| !rebuilt.contains_key(*n) && !aot_file(n))
    {
        return Err(format!(
            "it holds `{extra}`, which the build does not write"
        ));
    }
    let found = serde_json::to_value(m).map_err(|e| e.to_string())?;
    let want = serde_json::to_value(&expected).map_err(|e| e.to_string())?;
    if let Some(d) = first_difference(&found, &want, String::new()) {
        return Err(format!("in `manifest.json`, {d}"));
    }
    Ok(())
}

/// What differs between a package file and the build's: the first field
/// of a JSON file, else the first differing line of a text file, else the
/// first differing byte.
fn file_difference(name: &str, found: &[u8], want: &[u8]) -> String {
    let parsed = |b: &[u8]| serde_json::from_slice::<Value>(b).ok();
    if name.ends_with(".json") {
        if let (Some(f), Some(w)) = (parsed(found), parsed(want)) {
            if let Some(d) = first_difference(&f, &w, String::new()) {
                return format!("in `{name}`, {d}");
            }
        }
    }
    if let (Ok(f), Ok(w)) = (std::str::from_utf8(found), std::str::from_utf8(want)) {
        let line = f
            .lines()
            .zip(w.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| f.lines().count().min(w.lines().count()));
        return format!("`{name}` differs from the build's at line {}", line + 1);
    }
    let at = found
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| found.len().min(want.len()));
    format!(
        "`{name}` ({} bytes) differs from the build's ({} bytes) at byte {at}",
        found.len(),
        want.len()
    )
}

/// The first place where `found` differs from `want`, as
/// "`path` is X, the build has Y".
fn first_difference(found: &Value, want: &Value, path: String) -> Option<String> {
    let at = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else if key.starts_with('[') {
            format!("{path}{key}")
        } else {
            format!("{path}.{key}")
        }
    };
    match (found, want) {
        (Value::Object(f), Value::Object(w)) => {
            for (k, wv) in w {
                match f.get(k) {
                    Some(fv) => {
                        if let Some(d) = first_difference(fv, wv, at(k)) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("`{}` is missing", at(k))),
                }
            }
            // Fields pk does not know are ignored when the package is read.
            None
        }
        (Value::Array(f), Value::Array(w)) if f.len() == w.len() => f
            .iter()
            .zip(w)
            .enumerate()
            .find_map(|(i, (fv, wv))| first_difference(fv, wv, at(&format!("[{i}]")))),
        (Value::Array(f), Value::Array(w)) => Some(format!(
            "`{path}` has {} entries, the build has {}",
            f.len(),
            w.len()
        )),
        _ if found == want => None,
        _ => Some(format!(
            "`{path}` is {}, the build has {}",
            short(found),
            short(want)
        )),
    }
}

/// A JSON value in a message: at most 80 characters of it.
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!("{}...", s.chars().take(80).collect::<String>())
    } else {
        s
    }
}

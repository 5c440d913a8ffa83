//! Damaged packages never run: every flipped byte of the CPU reference is
//! refused by its hash, a damaged manifest gives a coded error or a package
//! that still computes the right result, and files that describe another
//! kernel than the manifest are refused even when their hashes are updated
//! to match. These open and load packages the way `pkc run DIR` does
//! (`Package::load_cpu`), thousands of times, so they stay at the library
//! level.

use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use miette::Diagnostic as _;
use pk_lang::ir::DType;
use pk_runtime::cpu::{HostArray, RunOptions};
use pk_runtime::package::build::{build_file, BuildOptions};
use pk_runtime::package::{
    sha256_hex, LoadError, NewPackage, Package, PackageError, MANIFEST, MOSAIC, STABLEHLO, WASM,
    WASM_MANIFEST,
};
use pk_runtime::pjrt::TpuTarget;

const ROWS: usize = 16;
const COLS: usize = 256;

/// add.pk at 16x256 in 8x128 blocks (a 2x2 grid): small enough that every
/// byte of its files can be flipped.
fn small_add(targets: &[TpuTarget]) -> NewPackage {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/add.pk");
    let opts = BuildOptions {
        targets: targets.to_vec(),
        params: [("M", "16"), ("N", "256"), ("bm", "8"), ("bn", "128")]
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        ..BuildOptions::default()
    };
    match build_file(&path, &opts) {
        Ok(mut b) => b.kernels.remove(0).package,
        Err(f) => panic!(
            "add.pk does not build:\n{}",
            f.render(pk_lang::diag::RenderStyle::Plain)
        ),
    }
}

fn written(pkg: &NewPackage) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::Builder::new()
        .prefix("pk-package-fuzz-")
        .tempdir()
        .expect("create a temp dir");
    let dir = root.path().join("add");
    pkg.write(&dir).expect("write the package");
    (root, dir)
}

fn code(e: &LoadError) -> String {
    e.code().map(|c| c.to_string()).unwrap_or_default()
}

/// Inputs with distinct values, and their sum computed here.
fn inputs() -> (Vec<HostArray>, Vec<f32>) {
    let x: Vec<f32> = (0..ROWS * COLS).map(|i| i as f32 * 0.5).collect();
    let y: Vec<f32> = (0..ROWS * COLS).map(|i| 1000.0 - i as f32).collect();
    let sum = x.iter().zip(&y).map(|(a, b)| a + b).collect();
    let array = |v: &[f32]| {
        let bytes = v.iter().flat_map(|f| f.to_le_bytes()).collect();
        HostArray::new(DType::F32, vec![ROWS, COLS], bytes)
    };
    (vec![array(&x), array(&y)], sum)
}

/// Loads the package as `pkc run DIR` does and runs it: `Ok(true)` when
/// the output is the sum, `Ok(false)` when it is not, or the load error.
fn load_and_run(dir: &Path) -> Result<bool, LoadError> {
    let (_, kernel) = Package::load_cpu(dir, false)?;
    let opts = RunOptions {
        threads: 1,
        pin: false,
        ..RunOptions::default()
    };
    let (ins, expected) = inputs();
    let out = kernel.run(ins, &opts)?;
    let z: Vec<f32> = out[0]
        .data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok(z == expected)
}

#[test]
fn the_undamaged_small_package_runs_and_adds() {
    let (_root, dir) = written(&small_add(&[TpuTarget::V5e]));
    assert!(matches!(load_and_run(&dir), Ok(true)));
}

/// Every byte of `kernel.wasm` and `kernel.wasm.json`, each changed in one
/// bit (a different bit from byte to byte), is refused by its hash before
/// anything runs: never a wrong result, never an internal error.
#[test]
fn every_flipped_byte_of_the_cpu_reference_is_refused_by_its_hash() {
    let (_root, dir) = written(&small_add(&[TpuTarget::V5e]));
    let mut cases = 0;
    for name in [WASM, WASM_MANIFEST] {
        let path = dir.join(name);
        let original = fs::read(&path).expect("read");
        assert!(original.len() > 300, "{name} is {} bytes", original.len());
        for i in 0..original.len() {
            let mut bytes = original.clone();
            bytes[i] ^= 1 << (i % 8);
            fs::write(&path, &bytes).expect("write");
            match Package::load_cpu(&dir, false) {
                Ok(_) => panic!("{name}: byte {i} flipped, and the package loaded"),
                Err(LoadError::Package(PackageError::HashMismatch { file, .. })) => {
                    assert_eq!(file, name, "byte {i}");
                }
                Err(e) => panic!("{name}: byte {i}: {} {e}", code(&e)),
            }
            cases += 1;
        }
        fs::write(&path, &original).expect("restore");
    }
    eprintln!("{cases} flipped bytes, each refused by its hash");
    assert!(cases > 1000, "{cases} cases");
    assert!(matches!(load_and_run(&dir), Ok(true)), "restored");
}

/// The codes a damaged package may be refused with: the package's own, and
/// the CPU reference's for a module it cannot compile.
fn is_package_code(code: &str) -> bool {
    let n: u32 = code.trim_start_matches("PK").parse().unwrap_or(0);
    (3001..=3099).contains(&n) || code == "PK1022" || code == "PK1023"
}

/// Flipped bits and truncations of `manifest.json` give a coded package
/// error or a package that still computes the right sum; never a panic, an
/// internal error or a wrong result.
#[test]
fn a_damaged_manifest_is_refused_with_a_code_or_still_adds() {
    let (_root, dir) = written(&small_add(&[TpuTarget::V5e, TpuTarget::V5p]));
    let path = dir.join(MANIFEST);
    let original = fs::read(&path).expect("read");
    let mut variants: Vec<(String, Vec<u8>)> = Vec::new();
    for i in 0..original.len() {
        let mut bytes = original.clone();
        bytes[i] ^= 1 << (i % 8);
        variants.push((format!("bit {} of byte {i} flipped", i % 8), bytes));
    }
    for len in (0..original.len()).step_by(13) {
        variants.push((format!("cut at {len}"), original[..len].to_vec()));
    }
    let (mut refused, mut ran) = (0, 0);
    for (what, bytes) in &variants {
        fs::write(&path, bytes).expect("write");
        let outcome = catch_unwind(AssertUnwindSafe(|| load_and_run(&dir)));
        match outcome {
            Err(_) => panic!("{what}: panicked"),
            Ok(Ok(true)) => ran += 1,
            Ok(Ok(false)) => panic!("{what}: ran with a wrong result"),
            Ok(Err(e)) => {
                assert!(is_package_code(&code(&e)), "{what}: {} {e}", code(&e));
                refused += 1;
            }
        }
    }
    fs::write(&path, &original).expect("restore");
    eprintln!(
        "{} damaged manifests: {refused} refused with a code, {ran} still added correctly",
        variants.len()
    );
    assert_eq!(refused + ran, variants.len());
    assert!(refused > ran, "{refused} refused, {ran} ran");
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value =
        serde_json::from_slice(&fs::read(path).expect("read")).expect("JSON");
    edit(&mut v);
    fs::write(path, serde_json::to_vec_pretty(&v).expect("serialize")).expect("write");
}

/// Edits `name` and records its new hash in the manifest, as a consistent
/// edit of the package would.
fn edit_listed(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    edit_json(&dir.join(name), edit);
    let bytes = fs::read(dir.join(name)).expect("read");
    edit_json(&dir.join(MANIFEST), |m| {
        m["files"][name] = serde_json::json!({"sha256": sha256_hex(&bytes), "bytes": bytes.len()});
    });
}

/// Files that describe another kernel than the manifest are refused with
/// `PK3011` even when their hashes were updated to match.
#[test]
fn a_cpu_reference_describing_another_kernel_is_inconsistent() {
    type Edit = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "manifest ABI version",
            Box::new(|d: &Path| {
                edit_json(&d.join(MANIFEST), |m| {
                    m["cpu_reference"]["abi_version"] =
                        (pk_lowering::wasm::abi::ABI_VERSION + 1).into()
                })
            }),
        ),
        (
            "manifest CPU target",
            Box::new(|d: &Path| {
                edit_json(&d.join(MANIFEST), |m| {
                    m["cpu_reference"]["target"] = "v4".into()
                })
            }),
        ),
        (
            "manifest operand shape",
            Box::new(|d: &Path| {
                edit_json(&d.join(MANIFEST), |m| {
                    m["operands"][0]["shape"][0] = 32.into()
                })
            }),
        ),
        (
            "manifest parameter",
            Box::new(|d: &Path| {
                edit_json(&d.join(MANIFEST), |m| m["params"][0]["value"] = 17.into())
            }),
        ),
        (
            "manifest grid extent",
            Box::new(|d: &Path| {
                edit_json(&d.join(MANIFEST), |m| m["grid"][1]["extent"] = 4.into())
            }),
        ),
        (
            "CPU operand role",
            Box::new(|d: &Path| {
                edit_listed(d, WASM_MANIFEST, |c| {
                    c["operands"][2]["role"] = "Input".into()
                })
            }),
        ),
        (
            "CPU operand dtype",
            Box::new(|d: &Path| {
                edit_listed(d, WASM_MANIFEST, |c| {
                    c["operands"][1]["dtype"] = "bf16".into()
                })
            }),
        ),
        (
            "CPU grid semantics",
            Box::new(|d: &Path| {
                edit_listed(d, WASM_MANIFEST, |c| {
                    c["grid"][0]["semantics"] = "Arbitrary".into()
                })
            }),
        ),
        (
            "CPU kernel name",
            Box::new(|d: &Path| edit_listed(d, WASM_MANIFEST, |c| c["kernel"] = "sub".into())),
        ),
        (
            "module table",
            Box::new(|d: &Path| {
                edit_json(&d.join(MANIFEST), |m| {
                    m["stablehlo"][1]["module"] = "kernel.mosaic.mlir".into();
                    m["stablehlo"][0]["module"] = "kernel.mosaic.mlir".into();
                })
            }),
        ),
        (
            "module table order",
            Box::new(|d: &Path| {
                edit_json(&d.join(MANIFEST), |m| {
                    let t = m["stablehlo"].as_array_mut().expect("a list");
                    t.swap(0, 1);
                })
            }),
        ),
    ];
    for (what, edit) in cases {
        let (_root, dir) = written(&small_add(&[TpuTarget::V5e, TpuTarget::V5p]));
        edit(&dir);
        match Package::load_cpu(&dir, false) {
            Err(LoadError::Package(e @ PackageError::Inconsistent { .. })) => {
                assert_eq!(e.code().map(|c| c.to_string()).as_deref(), Some("PK3011"));
            }
            Err(e) => panic!("{what}: {} {e}", code(&e)),
            Ok(_) => panic!("{what}: loaded"),
        }
    }
}

/// A package whose CPU reference could not be built cannot run on the CPU:
/// `PK3012`, the code of `pkc build`'s warning.
#[test]
fn a_package_without_a_cpu_reference_does_not_load_for_the_cpu() {
    let mut pkg = small_add(&[TpuTarget::V5e]);
    pkg.cpu_reference = None;
    let (_root, dir) = written(&pkg);
    let p = Package::open(&dir).expect("a TPU-only package is a package");
    p.verify().expect("and it verifies");
    let e = Package::load_cpu(&dir, false)
        .err()
        .expect("no CPU reference");
    assert!(
        matches!(&e, LoadError::Package(PackageError::NoCpuReference { kernel, .. }) if kernel == "add"),
        "{e}"
    );
    assert_eq!(code(&e), "PK3012");
}

/// A file the operating system cannot open is `PK3008`: here a name longer
/// than any file system allows, listed (with a hash) in the manifest.
#[test]
fn a_file_the_system_refuses_to_read_is_pk3008() {
    let (_root, dir) = written(&small_add(&[TpuTarget::V5e]));
    let long = "a".repeat(300);
    edit_json(&dir.join(MANIFEST), |m| {
        m["files"][long.as_str()] = serde_json::json!({"sha256": "0".repeat(64), "bytes": 1});
    });
    let e = Package::load_cpu(&dir, false).err().expect("refused");
    assert!(
        matches!(&e, LoadError::Package(PackageError::Read { path, .. }) if path.ends_with(&long)),
        "{e}"
    );
    assert_eq!(code(&e), "PK3008");
}

/// Built for every target, a package holds for each target the module a
/// build for that target alone gives, with its own VMEM as the scoped limit;
/// targets whose module is the first one's share `kernel.stablehlo.mlir`.
#[test]
fn each_target_gets_the_module_built_for_it_alone() {
    let all = small_add(TpuTarget::all());
    let (_root, dir) = written(&all);
    let p = Package::open(&dir).expect("open");
    let table: Vec<(&str, &str, u64)> = p
        .manifest()
        .stablehlo
        .iter()
        .map(|m| (m.target.as_str(), m.module.as_str(), m.vmem_limit_bytes))
        .collect();
    assert_eq!(
        table,
        [
            ("v4", STABLEHLO, 16 << 20),
            ("v5e", "stablehlo/v5e.mlir", 128 << 20),
            ("v5p", "stablehlo/v5p.mlir", 64 << 20),
            ("v6e", "stablehlo/v6e.mlir", 128 << 20),
            ("tpu7x", "stablehlo/tpu7x.mlir", 64 << 20),
        ]
    );
    for &t in TpuTarget::all() {
        let alone = small_add(&[t]);
        let module = p.stablehlo_for(t).expect("a module");
        assert_eq!(module, alone.stablehlo(), "{t}");
        assert_eq!(all.stablehlo_for(t), Some(module), "{t}");
        let limit = t.vmem_bytes();
        assert!(module.contains(&format!("\\22size\\22: {limit}")), "{t}");
    }
    assert_eq!(p.stablehlo(), p.stablehlo_for(TpuTarget::V4).unwrap_or(""));

    // Targets with the same VMEM share one file: a package for v5e and
    // v6e holds a single module.
    let (_root, dir) = written(&small_add(&[TpuTarget::V5e, TpuTarget::V6e]));
    let p = Package::open(&dir).expect("open");
    let modules: Vec<&str> = p
        .manifest()
        .files
        .keys()
        .map(String::as_str)
        .filter(|f| f.contains("stablehlo"))
        .collect();
    assert_eq!(modules, [STABLEHLO]);
    assert_eq!(p.stablehlo_for(TpuTarget::V6e), Some(p.stablehlo()));
}

/// Every leaf of a JSON value, by its path of keys and indices.
fn leaves(
    v: &serde_json::Value,
    path: &mut Vec<serde_json::Value>,
    out: &mut Vec<Vec<serde_json::Value>>,
) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                path.push(k.as_str().into());
                leaves(x, path, out);
                path.pop();
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(i.into());
                leaves(x, path, out);
                path.pop();
            }
        }
        _ => out.push(path.clone()),
    }
}

fn leaf_mut<'a>(
    v: &'a mut serde_json::Value,
    path: &[serde_json::Value],
) -> &'a mut serde_json::Value {
    path.iter().fold(v, |v, k| match k {
        serde_json::Value::String(s) => &mut v[s.as_str()],
        _ => &mut v[k.as_u64().unwrap_or(0) as usize],
    })
}

/// The edits of one leaf: other numbers (one more, one less, zero, double,
/// past 32 bits), the other bool, a longer string, a number for null.
fn edits(v: &serde_json::Value) -> Vec<serde_json::Value> {
    use serde_json::Value as V;
    match v {
        V::Number(n) => {
            let x = n.as_i64().unwrap_or(0);
            let mut out: Vec<V> = vec![(x + 1).into(), (x * 2 + 3).into(), (1i64 << 33).into()];
            if x != 0 {
                out.push(0.into());
                out.push((x - 1).into());
            }
            if n.is_f64() {
                out.push((n.as_f64().unwrap_or(0.0) * 1.5 + 0.25).into());
            }
            out
        }
        V::Bool(b) => vec![(!b).into()],
        V::String(s) => vec![format!("{s}x").into()],
        V::Null => vec![0.into()],
        _ => vec![],
    }
}

/// Loads and runs the package; panics unless it is refused with a package
/// code (PK3001..PK3099), which it returns.
fn assert_refused(dir: &Path, what: &str) -> String {
    match catch_unwind(AssertUnwindSafe(|| load_and_run(dir))) {
        Err(_) => panic!("{what}: panicked"),
        Ok(Ok(right)) => panic!("{what}: loaded and ran (right result: {right})"),
        Ok(Err(e)) => {
            let c = code(&e);
            let n: u32 = c.trim_start_matches("PK").parse().unwrap_or(0);
            assert!((3001..=3099).contains(&n), "{what}: {c} {e}");
            c
        }
    }
}

/// Every field of `kernel.wasm.json` (block sizes, memory offsets, call
/// tables, flags, locations, the carried source) edited, with the file's
/// hash recomputed in the manifest: the package is no longer what its
/// source builds to and is refused with a package code, never run.
#[test]
fn every_field_of_the_side_table_edited_and_rehashed_is_refused() {
    let (_root, dir) = written(&small_add(&[TpuTarget::V5e]));
    let path = dir.join(WASM_MANIFEST);
    let manifest_path = dir.join(MANIFEST);
    let (original, original_manifest) = (
        fs::read(&path).expect("read"),
        fs::read(&manifest_path).expect("read"),
    );
    let value: serde_json::Value = serde_json::from_slice(&original).expect("JSON");
    let mut paths = Vec::new();
    leaves(&value, &mut Vec::new(), &mut paths);
    let mut cases = 0;
    let mut refused_by: std::collections::BTreeMap<String, usize> = Default::default();
    for p in &paths {
        for new in edits(leaf_mut(&mut value.clone(), p)) {
            let what = format!("{p:?} = {new}");
            edit_listed(&dir, WASM_MANIFEST, |c| *leaf_mut(c, p) = new.clone());
            *refused_by.entry(assert_refused(&dir, &what)).or_default() += 1;
            fs::write(&path, &original).expect("restore");
            fs::write(&manifest_path, &original_manifest).expect("restore");
            cases += 1;
        }
    }
    eprintln!(
        "{cases} edits of {} fields, refused with {refused_by:?}",
        paths.len()
    );
    assert!(cases > 300, "{cases} cases");
    assert!(matches!(load_and_run(&dir), Ok(true)), "restored");
}

/// Records `name`'s current hash and size in the manifest.
fn rehash(dir: &Path, name: &str) {
    let bytes = fs::read(dir.join(name)).expect("read");
    edit_json(&dir.join(MANIFEST), |m| {
        m["files"][name] = serde_json::json!({"sha256": sha256_hex(&bytes), "bytes": bytes.len()});
    });
}

/// Every field of `manifest.json` edited (operands' blocks, grid, cost,
/// VMEM, targets, the module table, toolchain...): refused with a package
/// code, never run. Hashes are left as written (a manifest has none of its
/// own), so an edited hash is refused as a mismatch.
#[test]
fn every_field_of_the_manifest_edited_is_refused() {
    let (_root, dir) = written(&small_add(&[TpuTarget::V5e, TpuTarget::V5p]));
    let path = dir.join(MANIFEST);
    let original = fs::read(&path).expect("read");
    let value: serde_json::Value = serde_json::from_slice(&original).expect("JSON");
    let mut paths = Vec::new();
    leaves(&value, &mut Vec::new(), &mut paths);
    let mut cases = 0;
    let mut refused_by: std::collections::BTreeMap<String, usize> = Default::default();
    for p in &paths {
        for new in edits(leaf_mut(&mut value.clone(), p)) {
            edit_json(&path, |m| *leaf_mut(m, p) = new.clone());
            *refused_by
                .entry(assert_refused(&dir, &format!("{p:?} = {new}")))
                .or_default() += 1;
            fs::write(&path, &original).expect("restore");
            cases += 1;
        }
    }
    eprintln!(
        "{cases} edits of {} fields, refused with {refused_by:?}",
        paths.len()
    );
    assert!(cases > 150, "{cases} cases");
    assert!(refused_by.contains_key("PK3013"), "{refused_by:?}");
    assert!(matches!(load_and_run(&dir), Ok(true)), "restored");
}

/// Bytes of `kernel.wasm` flipped, and lines of the Mosaic and StableHLO
/// modules changed, each with its hash recomputed: refused as not what
/// the source builds to (PK3013), never compiled or run.
#[test]
fn modules_edited_and_rehashed_are_not_the_build() {
    let (_root, dir) = written(&small_add(&[TpuTarget::V5e]));
    let wasm = dir.join(WASM);
    let original = fs::read(&wasm).expect("read");
    let manifest = fs::read(dir.join(MANIFEST)).expect("read");
    let mut cases = 0;
    for i in 0..original.len() {
        let mut bytes = original.clone();
        bytes[i] ^= 1 << (i % 8);
        fs::write(&wasm, &bytes).expect("write");
        rehash(&dir, WASM);
        let what = format!("byte {i} of kernel.wasm");
        assert_eq!(assert_refused(&dir, &what), "PK3013", "{what}");
        cases += 1;
    }
    fs::write(&wasm, &original).expect("restore");
    fs::write(dir.join(MANIFEST), &manifest).expect("restore");
    // A block size, and an array size, changed.
    for (name, from, to) in [(MOSAIC, "8x128", "8x256"), (STABLEHLO, "16x256", "32x256")] {
        let path = dir.join(name);
        let text = fs::read_to_string(&path).expect("read");
        let edited = text.replacen(from, to, 1);
        assert_ne!(edited, text, "{name} names {from}");
        fs::write(&path, edited).expect("write");
        rehash(&dir, name);
        let e = Package::load_cpu(&dir, false).err().expect("refused");
        assert_eq!(code(&e), "PK3013", "{name}: {e}");
        assert!(e.to_string().contains(name), "{e}");
        fs::write(&path, &text).expect("restore");
        fs::write(dir.join(MANIFEST), &manifest).expect("restore");
        cases += 1;
    }
    eprintln!("{cases} edited modules, each refused");
    assert!(matches!(load_and_run(&dir), Ok(true)), "restored");
}

/// A kernel that uses a module next to it builds into a package that opens
/// (the module travels in the side table and is used again, not read from
/// the disk), and runs; the carried module edited is refused.
#[test]
fn a_kernel_with_a_sibling_module_opens_from_what_it_carries() {
    let src = tempfile::tempdir().expect("temp dir");
    fs::write(
        src.path().join("helper.pk"),
        "fn plus(a, b) {\n    a + b\n}\n",
    )
    .expect("write");
    let add = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/add.pk"))
        .expect("read add.pk");
    let with_use = format!(
        "use helper;\n{}",
        add.replace("x[..] + y[..]", "helper::plus(x[..], y[..])")
    );
    fs::write(src.path().join("add.pk"), with_use).expect("write");
    let opts = BuildOptions {
        params: [("M", "16"), ("N", "256"), ("bm", "8"), ("bn", "128")]
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        ..BuildOptions::default()
    };
    let pkg = match build_file(&src.path().join("add.pk"), &opts) {
        Ok(mut b) => b.kernels.remove(0).package,
        Err(f) => panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)),
    };
    let (_root, dir) = written(&pkg);
    // The module on disk is gone: what the package carries is used.
    drop(src);
    assert!(matches!(load_and_run(&dir), Ok(true)));
    edit_listed(&dir, WASM_MANIFEST, |c| {
        let sources = c["sources"].as_array_mut().expect("a list");
        let helper = sources
            .iter_mut()
            .find(|s| s["name"].as_str().is_some_and(|n| n.ends_with("helper.pk")))
            .expect("the helper is carried");
        helper["text"] = "fn plus(a, b) {\n    a - b\n}\n".into();
    });
    let e = Package::load_cpu(&dir, false).err().expect("refused");
    assert_eq!(code(&e), "PK3013", "{e}");
}

//! Kernel packages: build -> write -> open round trips, and every way a
//! package on disk can be damaged is refused with its code.

use std::fs;
use std::path::{Path, PathBuf};

use miette::Diagnostic as _;
use pk_runtime::package::build::{build_file, libtpu_diagnostic, BuildOptions, BuiltKernel};
use pk_runtime::package::{
    sha256_hex, AotArtifact, AotReport, NewPackage, OperandRole, Package, PackageError,
    TargetModule, EXPLANATIONS, FORMAT, MANIFEST, MOSAIC, STABLEHLO, WASM, WASM_MANIFEST,
};
use pk_runtime::pjrt::{PjrtError, TpuTarget};

fn add_pk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/add.pk")
}

fn build(params: &[(&str, &str)]) -> (BuiltKernel, pk_runtime::package::build::Built) {
    let opts = BuildOptions {
        params: params
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        ..BuildOptions::default()
    };
    match build_file(&add_pk(), &opts) {
        Ok(mut b) => (b.kernels.remove(0), b),
        Err(f) => panic!(
            "add.pk does not build:\n{}",
            f.render(pk_lang::diag::RenderStyle::Plain)
        ),
    }
}

/// A package of add.pk with a stand-in AOT entry for v5e, so that the
/// `aot/` files are covered too. The bytes are not an executable; the
/// package layer stores and hashes them without looking inside (real
/// executables are in `package_libtpu.rs`).
fn package() -> NewPackage {
    let mut pkg = build(&[]).0.package;
    pkg.aot.push(AotArtifact {
        target: TpuTarget::V5e,
        executable: b"serialized executable stand-in".to_vec(),
        report: AotReport {
            target: "v5e".into(),
            topology: "v5e:2x2".into(),
            libtpu: "0.0.51".into(),
            generated_code_bytes: 46592,
            executable_bytes: 30,
            compile_ms: 50.0,
            memory: None,
            cost_analysis: [("flops".to_string(), 1048576.0)].into_iter().collect(),
            schedule: None,
            schedule_warning: None,
        },
    });
    pkg
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("pk-package-test-")
        .tempdir()
        .expect("create a temp dir")
}

/// A freshly written package in its own temp dir.
fn written() -> (tempfile::TempDir, PathBuf) {
    let root = scratch();
    let dir = root.path().join("add");
    package().write(&dir).expect("write the package");
    (root, dir)
}

fn open_err(dir: &Path) -> PackageError {
    match Package::open(dir) {
        Ok(_) => panic!("{} opened", dir.display()),
        Err(e) => e,
    }
}

fn code(e: &PackageError) -> String {
    e.code().map(|c| c.to_string()).unwrap_or_default()
}

fn remove(v: &mut serde_json::Value, key: &str) {
    if let Some(o) = v.as_object_mut() {
        o.remove(key);
    }
}

fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join(MANIFEST);
    let mut v: serde_json::Value =
        serde_json::from_slice(&fs::read(&path).expect("read manifest")).expect("manifest is JSON");
    edit(&mut v);
    fs::write(&path, serde_json::to_vec_pretty(&v).expect("serialize")).expect("write manifest");
}

#[test]
fn a_written_package_opens_with_everything_it_was_given() {
    let pkg = package();
    let (_root, dir) = written();
    let p = Package::open(&dir).expect("the package opens");
    let m = p.manifest();
    assert_eq!(m.format, FORMAT);
    assert_eq!(m.kernel, "add");
    assert_eq!(m.source, "add.pk");
    assert_eq!(m.targets, ["v5e"]);
    let names: Vec<(&str, OperandRole)> = m
        .operands
        .iter()
        .map(|o| (o.name.as_str(), o.role))
        .collect();
    assert_eq!(
        names,
        [
            ("x", OperandRole::Input),
            ("y", OperandRole::Input),
            ("z", OperandRole::Output)
        ]
    );
    assert_eq!(m.operands[0].shape, [1024, 1024]);
    assert_eq!(m.operands[0].block, Some(vec![Some(256), Some(512)]));
    assert_eq!(m.operands[0].memory_space, "vmem");
    let grid: Vec<(&str, u64, &str)> = m
        .grid
        .iter()
        .map(|a| (a.name.as_str(), a.extent, a.semantics.as_str()))
        .collect();
    assert_eq!(grid, [("i", 4, "parallel"), ("j", 2, "parallel")]);
    assert_eq!(m.cost.flops, 1024 * 1024);
    assert_eq!(m.cost.bytes_accessed, 3 * 1024 * 1024 * 4);
    // Three double-buffered 256x512 f32 blocks.
    assert_eq!(m.vmem.total_bytes, 3 * 2 * 256 * 512 * 4);
    assert_eq!(
        m.stablehlo,
        [TargetModule {
            target: "v5e".into(),
            module: STABLEHLO.into(),
            vmem_limit_bytes: 128 << 20,
        }],
        "one module, with v5e's whole VMEM as its scoped limit"
    );
    assert_eq!(m.toolchain.mosaic_version, 11);
    assert_eq!(m.toolchain.pk, env!("CARGO_PKG_VERSION"));
    assert_eq!(m.toolchain.libtpu.as_deref(), Some("0.0.51"));
    assert_eq!(p.stablehlo(), pkg.stablehlo());
    assert_eq!(p.stablehlo_for(TpuTarget::V5e), Some(pkg.stablehlo()));
    assert_eq!(p.stablehlo_for(TpuTarget::V4), None);
    assert_eq!(p.mosaic(), pkg.mosaic);
    assert!(p.stablehlo().contains("tpu_custom_call"));
    let (wasm, cpu) = p.cpu_reference().expect("add.pk has a CPU reference");
    assert_eq!(
        Some(wasm),
        pkg.cpu_reference.as_ref().map(|c| c.0.as_slice())
    );
    assert_eq!(cpu.kernel, "add");
    assert_eq!(p.aot_targets(), [TpuTarget::V5e]);
    assert_eq!(
        p.executable(TpuTarget::V5e),
        Some(&b"serialized executable stand-in"[..])
    );
    assert_eq!(p.aot_report(TpuTarget::V5e), Some(&pkg.aot[0].report));
    assert_eq!(p.executable(TpuTarget::V4), None);
    let files: Vec<&str> = m.files.keys().map(String::as_str).collect();
    assert_eq!(
        files,
        [
            "aot/v5e.json",
            "aot/v5e.pjrt",
            MOSAIC,
            STABLEHLO,
            WASM,
            WASM_MANIFEST
        ]
    );
    for (name, entry) in &m.files {
        let bytes = fs::read(dir.join(name)).expect("listed file exists");
        assert_eq!(entry.sha256, sha256_hex(&bytes), "{name}");
        assert_eq!(entry.bytes, bytes.len() as u64, "{name}");
    }
}

#[test]
fn building_twice_writes_the_same_manifest() {
    let (_a, first) = written();
    let (_b, second) = written();
    let read = |d: &Path| fs::read(d.join(MANIFEST)).expect("read manifest");
    assert_eq!(read(&first), read(&second));
}

#[test]
fn the_directory_name_carries_the_parameters_given() {
    assert_eq!(build(&[]).0.dir_name, "add");
    assert_eq!(
        build(&[("bn", "2 * 128"), ("M", "2048")]).0.dir_name,
        "add-M2048-bn256"
    );
}

#[test]
fn a_changed_byte_in_any_file_is_a_hash_mismatch() {
    let files: Vec<String> = package()
        .seal()
        .expect("seal")
        .0
        .files
        .into_keys()
        .collect();
    for name in files {
        let (_root, dir) = written();
        let path = dir.join(&name);
        let mut bytes = fs::read(&path).expect("read");
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x01;
        fs::write(&path, &bytes).expect("write");
        let e = open_err(&dir);
        assert_eq!(code(&e), "PK3005", "{name}: {e}");
        assert!(
            matches!(&e, PackageError::HashMismatch { file, .. } if *file == name),
            "{e}"
        );
    }
}

#[test]
fn a_missing_file_or_manifest_is_reported() {
    for name in [
        STABLEHLO,
        MOSAIC,
        WASM,
        WASM_MANIFEST,
        "aot/v5e.pjrt",
        "aot/v5e.json",
    ] {
        let (_root, dir) = written();
        fs::remove_file(dir.join(name)).expect("remove");
        let e = open_err(&dir);
        assert!(
            matches!(&e, PackageError::MissingFile { file, .. } if file == name),
            "{e}"
        );
        assert_eq!(code(&e), "PK3004");
    }
    let (root, dir) = written();
    fs::remove_file(dir.join(MANIFEST)).expect("remove");
    assert_eq!(code(&open_err(&dir)), "PK3001");
    assert_eq!(code(&open_err(&root.path().join("absent"))), "PK3001");
    fs::write(root.path().join("file"), b"x").expect("write");
    assert_eq!(code(&open_err(&root.path().join("file"))), "PK3001");
}

/// A way to damage a written package.
type Damage = Box<dyn Fn(&Path)>;

#[test]
fn a_bad_manifest_is_reported_by_kind() {
    let cases: Vec<(&str, Damage)> = vec![
        (
            "PK3002",
            Box::new(|d: &Path| {
                let text = fs::read(d.join(MANIFEST)).expect("read");
                fs::write(d.join(MANIFEST), &text[..text.len() / 2]).expect("truncate");
            }),
        ),
        (
            "PK3002",
            Box::new(|d: &Path| edit_manifest(d, |v| remove(v, "operands"))),
        ),
        (
            "PK3002",
            Box::new(|d: &Path| edit_manifest(d, |v| remove(v, "format"))),
        ),
        (
            "PK3003",
            Box::new(|d: &Path| edit_manifest(d, |v| v["format"] = "pk-package/0".into())),
        ),
        (
            "PK3011",
            Box::new(|d: &Path| edit_manifest(d, |v| v["targets"][0] = "v7x".into())),
        ),
        (
            "PK3011",
            Box::new(|d: &Path| edit_manifest(d, |v| v["operands"][0]["dtype"] = "f64".into())),
        ),
        (
            "PK3011",
            Box::new(|d: &Path| {
                edit_manifest(d, |v| {
                    let files = v["files"].as_object_mut().expect("files");
                    let entry = files.remove(WASM).expect("wasm entry");
                    files.insert("../kernel.wasm".into(), entry);
                })
            }),
        ),
        (
            "PK3011",
            Box::new(|d: &Path| edit_manifest(d, |v| remove(&mut v["files"], MOSAIC))),
        ),
        (
            "PK3005",
            Box::new(|d: &Path| {
                edit_manifest(d, |v| {
                    v["files"][STABLEHLO]["sha256"] = "0".repeat(64).into()
                })
            }),
        ),
    ];
    for (i, (expected, damage)) in cases.iter().enumerate() {
        let (_root, dir) = written();
        damage(&dir);
        let e = open_err(&dir);
        assert_eq!(code(&e), *expected, "case {i}: {e}");
    }
}

#[test]
fn a_listed_json_file_that_does_not_parse_is_reported() {
    let (_root, dir) = written();
    fs::write(dir.join(WASM_MANIFEST), b"{}").expect("write");
    // Its hash no longer matches; with the manifest updated to the new hash,
    // the contents themselves are refused.
    assert_eq!(code(&open_err(&dir)), "PK3005");
    edit_manifest(&dir, |v| {
        v["files"][WASM_MANIFEST] = serde_json::json!({"sha256": sha256_hex(b"{}"), "bytes": 2});
    });
    let e = open_err(&dir);
    assert!(
        matches!(&e, PackageError::InvalidManifest { path, .. } if path.ends_with(WASM_MANIFEST)),
        "{e}"
    );
}

#[test]
fn unlisted_files_and_links_are_refused() {
    let (_root, dir) = written();
    fs::write(dir.join("aot/v4.pjrt"), b"an executable from elsewhere").expect("write");
    let e = open_err(&dir);
    assert!(
        matches!(&e, PackageError::UnexpectedFile { file, .. } if file == "aot/v4.pjrt"),
        "{e}"
    );
    assert_eq!(code(&e), "PK3007");

    let (_root, dir) = written();
    fs::create_dir_all(dir.join("extra/deeper")).expect("mkdir");
    fs::write(dir.join("extra/deeper/x"), b"x").expect("write");
    assert!(
        matches!(open_err(&dir), PackageError::UnexpectedFile { file, .. } if file == "extra/deeper/x")
    );

    #[cfg(unix)]
    {
        let (root, dir) = written();
        let elsewhere = root.path().join("mosaic-elsewhere");
        fs::copy(dir.join(MOSAIC), &elsewhere).expect("copy");
        fs::remove_file(dir.join(MOSAIC)).expect("remove");
        std::os::unix::fs::symlink(&elsewhere, dir.join(MOSAIC)).expect("symlink");
        let e = open_err(&dir);
        assert!(
            matches!(&e, PackageError::UnexpectedFile { file, .. } if file == MOSAIC),
            "{e}"
        );
    }
}

#[test]
fn oversized_files_are_refused_before_reading() {
    let (_root, dir) = written();
    // A sparse file: 300 MiB long, no disk blocks.
    let f = fs::OpenOptions::new()
        .write(true)
        .open(dir.join(WASM))
        .expect("open");
    f.set_len(300 << 20).expect("extend");
    let e = open_err(&dir);
    assert!(
        matches!(&e, PackageError::FileTooLarge { file, .. } if file == WASM),
        "{e}"
    );
    assert_eq!(code(&e), "PK3006");

    let (_root, dir) = written();
    let f = fs::OpenOptions::new()
        .write(true)
        .open(dir.join(MANIFEST))
        .expect("open");
    f.set_len(5 << 20).expect("extend");
    assert_eq!(code(&open_err(&dir)), "PK3006");
}

#[test]
fn only_packages_and_empty_directories_are_replaced() {
    let root = scratch();
    let dest = root.path().join("add");
    fs::create_dir_all(&dest).expect("mkdir");
    fs::write(dest.join("notes.txt"), b"mine").expect("write");
    let e = package()
        .write(&dest)
        .expect_err("a foreign directory is not replaced");
    assert_eq!(code(&e), "PK3010", "{e}");
    assert_eq!(
        fs::read(dest.join("notes.txt")).expect("still there"),
        b"mine"
    );

    let file = root.path().join("plain");
    fs::write(&file, b"x").expect("write");
    assert_eq!(code(&package().write(&file).expect_err("a file")), "PK3010");

    // A damaged package is still a package: rebuilding replaces it.
    let (_r, dir) = written();
    fs::write(dir.join(STABLEHLO), b"damaged").expect("write");
    package().write(&dir).expect("replace a damaged package");
    Package::open(&dir).expect("the rebuilt package opens");
}

#[test]
fn every_code_is_in_range_unique_explained_and_helped() {
    let s = String::new;
    let one_of_each = vec![
        PackageError::NotAPackage {
            dir: s(),
            reason: s(),
        },
        PackageError::InvalidManifest {
            path: s(),
            message: s(),
        },
        PackageError::UnsupportedFormat {
            dir: s(),
            found: s(),
            expected: s(),
        },
        PackageError::MissingFile {
            dir: s(),
            file: s(),
        },
        PackageError::HashMismatch {
            dir: s(),
            file: s(),
            expected: s(),
            expected_bytes: 0,
            found: s(),
            found_bytes: 0,
        },
        PackageError::FileTooLarge {
            dir: s(),
            file: s(),
            bytes: 0,
            limit: 0,
        },
        PackageError::UnexpectedFile {
            dir: s(),
            file: s(),
            reason: s(),
        },
        PackageError::Read {
            path: s(),
            message: s(),
        },
        PackageError::Write {
            path: s(),
            message: s(),
        },
        PackageError::NotReplaceable {
            dest: s(),
            reason: s(),
        },
        PackageError::Inconsistent {
            dir: s(),
            message: s(),
        },
        PackageError::NotItsBuild {
            dir: s(),
            message: s(),
        },
        PackageError::InsideAPackage {
            dest: s(),
            package: s(),
        },
        PackageError::DuplicatePackage {
            name: s(),
            first: s(),
            second: s(),
        },
    ];
    let mut codes: Vec<String> = one_of_each.iter().map(code).collect();
    for (e, c) in one_of_each.iter().zip(&codes) {
        assert!(e.help().is_some(), "{c} has no help");
        assert!(
            EXPLANATIONS.iter().any(|x| x.code == c),
            "{c} has no explanation"
        );
    }
    codes.sort();
    codes.dedup();
    assert_eq!(codes.len(), one_of_each.len(), "duplicate codes");
    let mut explained: Vec<&str> = EXPLANATIONS.iter().map(|x| x.code).collect();
    for c in &explained {
        let n: u32 = c.trim_start_matches("PK").parse().unwrap_or(0);
        assert!((3001..=3099).contains(&n), "{c} out of range");
    }
    explained.sort();
    explained.dedup();
    assert_eq!(
        explained.len(),
        EXPLANATIONS.len(),
        "duplicate explanations"
    );
}

/// libtpu's message when it rejects a Mosaic operation, as libtpu 0.0.51
/// words it (the operation was made invalid on purpose).
fn rejected_op_message(file: &str) -> String {
    format!(
        "Failed to deserialize the Mosaic module: INTERNAL: operand #0 must be \
         signless-non-zero-bitwidth-integer-like, but got 'vector<256x512xf32>'\n\n\
         at location: loc(\"{file}\":19:13)\n\nThe MLIR operation involved:\n  \
         %6 = \"arith.addi\"(%2, %5) <{{overflowFlags = #arith.overflow<none>}}> : \
         (vector<256x512xf32>, vector<256x512xf32>) -> vector<256x512xf32>\n\n\
         Please report a bug at: https://github.com/jax-ml/jax/issues/new/choose\n\n\
         === Source Location Trace: ===\nplatforms/xla/mosaic/python/mosaic_emitter_base.cc:409\n"
    )
}

#[test]
fn a_libtpu_rejection_points_at_the_pk_line() {
    let (k, built) = build(&[]);
    let file = add_pk().display().to_string();
    let message = rejected_op_message(&file);
    let e = PjrtError::Compile {
        target: "v5e".into(),
        status: "INTERNAL".into(),
        locations: pk_runtime::pjrt::source_locations(&message),
        message,
    };
    let d = libtpu_diagnostic(&e, &k.kernel, &built.sources).expect("a compile error");
    assert_eq!(d.code.code, "PK2007");
    let text = pk_lang::diag::render(&d, &built.sources, pk_lang::diag::RenderStyle::Plain);
    assert!(text.contains("add.pk:19:13"), "{text}");
    assert!(
        text.contains("libtpu rejected `add` for v5e: Failed to deserialize the Mosaic module"),
        "{text}"
    );
    assert!(text.contains("z[..] = x[..] + y[..];"), "{text}");
    for noise in [
        "%6 =",
        "arith.addi",
        "Please report a bug",
        "mosaic_emitter_base",
    ] {
        assert!(!text.contains(noise), "{noise} in:\n{text}");
    }
}

#[test]
fn a_libtpu_vmem_error_keeps_its_substance_and_drops_hlo() {
    let (k, built) = build(&[]);
    let message = "E1001: CompileTimeScopedVmemOom:\nRan out of memory in memory space vmem while \
        allocating on stack for %name.1 = f32[4096,4096]{1,0:T(8,128)} custom-call(%Arg_0.1, %Arg_1.1), \
        custom_call_target=\"tpu_custom_call\", metadata={source_file=\"-\" source_line=3}. Scoped \
        allocation with size 96.00M and limit 16.00M exceeded scoped vmem limit by 80.00M. It should \
        not be possible to run out of scoped vmem - \nSee https://openxla.org/xla/errors/error_1001 for more details.\n";
    let e = PjrtError::Compile {
        target: "v5e".into(),
        status: "RESOURCE_EXHAUSTED".into(),
        locations: vec![],
        message: message.into(),
    };
    let d = libtpu_diagnostic(&e, &k.kernel, &built.sources).expect("a compile error");
    assert!(
        d.message
            .contains("E1001: CompileTimeScopedVmemOom: Ran out of memory in memory space vmem"),
        "{}",
        d.message
    );
    assert!(
        d.message
            .contains("Scoped allocation with size 96.00M and limit 16.00M"),
        "{}",
        d.message
    );
    assert!(!d.message.contains("%name"), "{}", d.message);
    assert_eq!(d.span, k.kernel.span, "no location: the kernel itself");
    assert!(
        d.notes.iter().any(|n| n.contains("error_1001")),
        "{:?}",
        d.notes
    );
}

/// A package opened while it is rebuilt over and over is the old one or
/// the new one, whole: never missing, incomplete or mixed. One thread
/// replaces the package with one of two specialisations in turn; this one
/// opens it meanwhile (`PK_REBUILD_READS` opens, 300 by default).
#[test]
fn a_package_read_while_it_is_rebuilt_is_one_build_whole() {
    let reads: usize = std::env::var("PK_REBUILD_READS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let small = build(&[("M", "16"), ("N", "256"), ("bm", "8"), ("bn", "128")])
        .0
        .package;
    let large = build(&[("M", "32"), ("N", "256"), ("bm", "8"), ("bn", "128")])
        .0
        .package;
    let root = scratch();
    let dir = root.path().join("add");
    small.write(&dir).expect("write");
    let done = std::sync::atomic::AtomicBool::new(false);
    let (mut failures, mut seen) = (Vec::new(), [0usize; 2]);
    let writes = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let mut n = 0usize;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let p = if n.is_multiple_of(2) { &large } else { &small };
                p.write(&dir).expect("rebuild");
                n += 1;
            }
            n
        });
        for _ in 0..reads {
            match Package::open(&dir) {
                Ok(p) => {
                    let rows = p.manifest().operands[0].shape[0];
                    assert!(rows == 16 || rows == 32, "{rows}");
                    seen[usize::from(rows == 32)] += 1;
                }
                Err(e) => failures.push(format!("{}: {e}", code(&e))),
            }
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().expect("the writer")
    });
    eprintln!(
        "{reads} opens during {writes} rebuilds: {} of M=16, {} of M=32, {} failed",
        seen[0],
        seen[1],
        failures.len()
    );
    assert_eq!(failures, Vec::<String>::new());
    assert!(writes > 10, "{writes} rebuilds");
    assert!(seen[0] > 0 && seen[1] > 0, "{seen:?}");
    assert_eq!(
        fs::read_dir(root.path()).expect("list").count(),
        1,
        "no temporary directory remains"
    );
}

/// A file of two kernels built together with a `-p` value only one of them
/// takes: both packages open, each built again as the build built it (all
/// of the file's kernels, the value applying where it is taken).
#[test]
fn a_value_for_one_kernel_of_a_file_does_not_stop_the_other_opening() {
    let src = scratch();
    let add = fs::read_to_string(add_pk()).expect("read add.pk");
    let file = src.path().join("two.pk");
    fs::write(
        &file,
        format!(
            "{add}\nkernel twice<M = 16, N = 256, bm = 8, bn = 128, Q = 2>(\n    \
             x: f32[M, N] block [bm, bn] at (i, j),\n) -> z: f32[M, N] block [bm, bn] at (i, j)\n\
             grid (i in M / bm parallel, j in N / bn parallel)\n{{\n    z[..] = x[..] + x[..];\n}}\n"
        ),
    )
    .expect("write");
    let opts = BuildOptions {
        params: [
            ("Q", "3"),
            ("M", "32"),
            ("N", "256"),
            ("bm", "8"),
            ("bn", "128"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect(),
        ..BuildOptions::default()
    };
    let built = match build_file(&file, &opts) {
        Ok(b) => b,
        Err(f) => panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)),
    };
    assert_eq!(built.kernels.len(), 2);
    let out = scratch();
    for k in &built.kernels {
        let dir = out.path().join(&k.dir_name);
        k.package.write(&dir).expect("write");
        let p = Package::open(&dir).expect("opens");
        assert_eq!(p.manifest().operands[0].shape, [32, 256]);
    }
    // The kernel that takes `Q` was built with 3.
    let twice = Package::open(out.path().join("twice-M32-N256-bm8-bn128-Q3")).expect("opens");
    let q = twice
        .manifest()
        .params
        .iter()
        .find(|p| p.name == "Q")
        .expect("Q");
    assert_eq!(q.value.to_string(), "3");
}

#[test]
fn the_manifest_records_the_bytes_a_device_sends() {
    // A ring of 4, shards [256, 512] bf16: 3 steps, each sending both
    // halves (two 128 x 512 bf16 windows) to the neighbours.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/all_gather_matmul.pk");
    let b = build_file(&path, &BuildOptions::default())
        .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
    let cost = b.kernels[0].package.manifest.cost;
    assert_eq!(cost.remote_bytes, 3 * 2 * 128 * 512 * 2);
    // A kernel on one device sends nothing, and a manifest written
    // without the field reads it as 0.
    let (k, _) = build(&[]);
    assert_eq!(k.package.manifest.cost.remote_bytes, 0);
    let mut v = serde_json::to_value(k.package.manifest.cost).expect("serialises");
    remove(&mut v, "remote_bytes");
    let read: pk_runtime::package::Cost = serde_json::from_value(v).expect("reads");
    assert_eq!(read, k.package.manifest.cost);
}

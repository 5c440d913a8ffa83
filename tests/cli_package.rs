//! Packages on the command line: `pkc run DIR` runs only a package that
//! verifies against its manifest, `pkc verify DIR...` reports one line per
//! package, every package code reaches the user, and `pkc build --aot`
//! keeps libtpu's start-up log to itself unless asked with `-v`.
//!
//! The `--aot` test needs libtpu (`bash .ci/setup-libtpu`); without it, it
//! prints a notice and passes, unless `CI=true`, where a missing libtpu
//! fails it.

mod common;

use common::{code, pkc, stderr, stdout, TempDir};
use std::fs;
use std::path::{Path, PathBuf};

/// add.pk at 16x256, the shape of `tests/data/add_16x256`.
const SMALL_ADD: &[&str] = &["-p", "M=16", "-p", "N=256", "-p", "bm=8", "-p", "bn=128"];

fn s(p: &Path) -> &str {
    p.to_str().expect("temp paths are UTF-8")
}

/// Builds the small add package into `out`; returns its directory.
fn build_add(out: &TempDir) -> PathBuf {
    let mut args = vec!["build", "kernels/add.pk", "-o", out.arg()];
    args.extend_from_slice(SMALL_ADD);
    let o = pkc(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    out.path().join("add-M16-N256-bm8-bn128")
}

/// `pkc run DIR` on the add_16x256 inputs, writing `z` to `out`.
fn run_add(dir: &Path, out: &Path) -> std::process::Output {
    pkc(&[
        "run",
        s(dir),
        "--in",
        "x=tests/data/add_16x256/x.npy",
        "--in",
        "y=tests/data/add_16x256/y.npy",
        "--out",
        &format!("z={}", s(out)),
    ])
}

#[test]
fn run_refuses_a_package_with_a_flipped_byte_and_writes_nothing() {
    let out = TempDir::new("pkg-flip");
    let dir = build_add(&out);
    let z = out.path().join("z.npy");
    let o = run_add(&dir, &z);
    assert_eq!(code(&o), 0, "the package as built runs: {}", stderr(&o));
    let o = pkc(&[
        "test",
        s(&dir),
        "--in",
        "x=tests/data/add_16x256/x.npy",
        "--in",
        "y=tests/data/add_16x256/y.npy",
        "--expect",
        "z=tests/data/add_16x256/z_expected.npy",
    ]);
    assert_eq!(code(&o), 0, "numpy's sum: {}", stderr(&o));
    fs::remove_file(&z).expect("remove z");

    let wasm = dir.join("kernel.wasm");
    let mut bytes = fs::read(&wasm).expect("read");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    fs::write(&wasm, &bytes).expect("write");
    let o = run_add(&dir, &z);
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(err.contains("PK3005"), "{err}");
    assert!(err.contains("`kernel.wasm`"), "{err}");
    assert!(!z.exists(), "nothing ran, nothing was written");
}

#[test]
fn a_directory_without_a_manifest_is_not_a_package() {
    let out = TempDir::new("pkg-none");
    out.file("x.npy", b"not used");
    for cmd in ["run", "test", "bench"] {
        let mut args = vec![cmd, out.arg()];
        if cmd == "test" {
            args.extend(["--expect", "z=z.npy"]);
        }
        let o = pkc(&args);
        let err = stderr(&o);
        assert_eq!(code(&o), 1, "{cmd}: {err}");
        assert!(err.contains("PK3001"), "{cmd}: {err}");
        assert!(err.contains("has no manifest.json"), "{cmd}: {err}");
        assert!(!err.contains(".npy"), "{cmd}: {err}");
    }
}

#[test]
fn verify_reports_one_line_per_package() {
    let out = TempDir::new("pkg-verify");
    let good = build_add(&out);
    let o = pkc(&["verify", s(&good)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "{}: ok (kernel `add`, 4 files, CPU reference)\n",
            good.display()
        )
    );

    // A second package, then damaged: an extra file, then a missing one.
    let other = TempDir::new("pkg-verify-2");
    let bad = build_add(&other);
    fs::write(bad.join("notes.txt"), "mine").expect("write");
    let o = pkc(&["verify", s(&good), s(&bad)]);
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].ends_with("ok (kernel `add`, 4 files, CPU reference)"));
    assert!(
        lines[1].starts_with(&format!("{}: error[PK3007]: ", bad.display())),
        "{lines:?}"
    );
    assert!(lines[1].contains("`notes.txt`"), "{lines:?}");
    assert!(stderr(&o).contains("1 of 2 packages failed verification"));
    let o = run_add(&bad, &other.path().join("z.npy"));
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("PK3007"), "{}", stderr(&o));

    fs::remove_file(bad.join("notes.txt")).expect("remove");
    fs::remove_file(bad.join("kernel.mosaic.mlir")).expect("remove");
    let o = pkc(&["verify", s(&bad)]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("error[PK3004]"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("`kernel.mosaic.mlir`"),
        "{}",
        stdout(&o)
    );
    let o = run_add(&bad, &other.path().join("z.npy"));
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("PK3004"), "{}", stderr(&o));
}

fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("manifest.json");
    let mut v: serde_json::Value =
        serde_json::from_slice(&fs::read(&path).expect("read")).expect("JSON");
    edit(&mut v);
    fs::write(&path, serde_json::to_vec_pretty(&v).expect("serialize")).expect("write");
}

/// Every code of a package that cannot be used reaches `pkc verify`'s
/// line and `pkc run`'s diagnostic.
#[test]
fn each_package_code_is_reported_by_verify_and_run() {
    type Damage = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Damage)> = vec![
        (
            "PK3002",
            Box::new(|d: &Path| fs::write(d.join("manifest.json"), "{\"format\":").expect("write")),
        ),
        (
            "PK3003",
            Box::new(|d: &Path| edit_manifest(d, |m| m["format"] = "pk-package/1".into())),
        ),
        (
            "PK3006",
            Box::new(|d: &Path| {
                let f = fs::OpenOptions::new()
                    .write(true)
                    .open(d.join("kernel.wasm"))
                    .expect("open");
                f.set_len(300 << 20).expect("a sparse 300 MiB file");
            }),
        ),
        (
            "PK3008",
            Box::new(|d: &Path| {
                let long = "a".repeat(300);
                edit_manifest(d, |m| {
                    m["files"][long.as_str()] =
                        serde_json::json!({"sha256": "0".repeat(64), "bytes": 1});
                })
            }),
        ),
        (
            "PK3011",
            Box::new(|d: &Path| edit_manifest(d, |m| m["operands"][0]["shape"][0] = 32.into())),
        ),
        (
            // A block size of the side table edited, its hash recomputed.
            "PK3013",
            Box::new(|d: &Path| {
                let path = d.join("kernel.wasm.json");
                let mut c: serde_json::Value =
                    serde_json::from_slice(&fs::read(&path).expect("read")).expect("JSON");
                c["operands"][0]["block"][0] = 16.into();
                let bytes = serde_json::to_vec_pretty(&c).expect("serialize");
                fs::write(&path, &bytes).expect("write");
                let sha = pk_runtime::package::sha256_hex(&bytes);
                edit_manifest(d, |m| {
                    m["files"]["kernel.wasm.json"] =
                        serde_json::json!({"sha256": sha, "bytes": bytes.len()});
                });
            }),
        ),
    ];
    for (expected, damage) in cases {
        let out = TempDir::new("pkg-codes");
        let dir = build_add(&out);
        damage(&dir);
        let o = pkc(&["verify", s(&dir)]);
        assert_eq!(code(&o), 1, "{expected}");
        assert!(
            stdout(&o).contains(&format!("error[{expected}]")),
            "{expected}: {}",
            stdout(&o)
        );
        let o = run_add(&dir, &out.path().join("z.npy"));
        assert_eq!(code(&o), 1, "{expected}");
        assert!(stderr(&o).contains(expected), "{expected}: {}", stderr(&o));
    }
}

/// A kernel the CPU reference cannot run: `pkc build` warns with PK3012,
/// and `pkc run` refuses its package with the same code.
#[test]
fn a_package_without_a_cpu_reference_is_pk3012_at_build_and_run() {
    let out = TempDir::new("pkg-nocpu");
    let src = out.file(
        "mul8.pk",
        b"kernel mul8<M = 16, N = 256>(
    x: f8e4m3fn[M, N] block [M, N] at (0, 0),
) -> z: f8e4m3fn[M, N] block [M, N] at (0, 0)
grid (i in 1 parallel)
{
    z[..] = x[..] * x[..];
}
",
    );
    let o = pkc(&["build", s(&src), "-o", out.arg()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK3012"), "{}", stderr(&o));
    let dir = out.path().join("mul8");
    let o = pkc(&["verify", s(&dir)]);
    assert_eq!(code(&o), 0, "a TPU-only package verifies: {}", stdout(&o));
    assert!(stdout(&o).contains("ok (kernel `mul8`, 2 files)"));
    let o = pkc(&["run", s(&dir)]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("PK3012"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("was built without kernel.wasm"),
        "{}",
        stderr(&o)
    );
}

/// What libtpu 0.0.51 writes to stderr whenever it starts.
const LIBTPU_NOISE: [&str; 2] = ["hugepage_text.cc", "Failed to find host bounds"];

#[test]
fn build_aot_keeps_libtpu_quiet_unless_verbose() {
    if pk_runtime::pjrt::locate_libtpu(None).is_err()
        && std::env::var("CI").as_deref() != Ok("true")
    {
        eprintln!(
            "notice: libtpu is not installed; skipping (install it with `bash .ci/setup-libtpu`)"
        );
        return;
    }
    let out = TempDir::new("pkg-quiet");
    let mut args = vec!["build", "kernels/add.pk", "--aot", "-o", out.arg()];
    args.extend_from_slice(SMALL_ADD);
    let o = pkc(&args);
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{err}");
    assert_eq!(err, "", "nothing on stderr without -v");
    assert!(stdout(&o).contains("bytes of TPU code"), "{}", stdout(&o));

    args.push("-v");
    let o = pkc(&args);
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{err}");
    for line in LIBTPU_NOISE {
        assert!(err.contains(line), "-v shows libtpu's `{line}`:\n{err}");
    }
    let dir = out.path().join("add-M16-N256-bm8-bn128");
    let o = pkc(&["verify", s(&dir)]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(
        stdout(&o).contains("6 files, CPU reference, AOT v5e"),
        "{}",
        stdout(&o)
    );
}

/// `pkc emit stablehlo -t T` prints the module a package built for every
/// target holds for T: `kernel.stablehlo.mlir` for the first target,
/// `stablehlo/<T>.mlir` for a target whose scoped VMEM limit differs.
#[test]
fn emit_stablehlo_prints_the_module_the_package_holds_for_each_target() {
    let out = TempDir::new("pkg-emit");
    let mut args = vec!["build", "kernels/add.pk", "-t", "all", "-o", out.arg()];
    args.extend_from_slice(SMALL_ADD);
    let o = pkc(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let dir = out.path().join("add-M16-N256-bm8-bn128");
    for (target, file) in [
        ("v4", "kernel.stablehlo.mlir"),
        ("v5e", "stablehlo/v5e.mlir"),
        ("v5p", "stablehlo/v5p.mlir"),
        ("v6e", "stablehlo/v6e.mlir"),
        ("tpu7x", "stablehlo/tpu7x.mlir"),
    ] {
        let mut args = vec!["emit", "stablehlo", "kernels/add.pk", "-t", target];
        args.extend_from_slice(SMALL_ADD);
        let o = pkc(&args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let module = fs::read_to_string(dir.join(file)).expect("the target's module");
        assert_eq!(stdout(&o), module, "{target}");
    }
}

/// A package of a kernel with float and bool parameters verifies and runs:
/// the manifest and the CPU reference's side table spell the values alike.
#[test]
fn float_and_bool_parameters_survive_the_package() {
    let out = TempDir::new("float-params");
    let o = pkc(&[
        "build",
        "tests/in/params_float_bool.pk",
        "-p",
        "scale=0.5",
        "-p",
        "causal=false",
        "-p",
        "M=128",
        "-o",
        out.arg(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let dir = fs::read_dir(out.path())
        .expect("listed")
        .map(|e| e.expect("entry").path())
        .find(|p| p.is_dir())
        .expect("a package");
    let o = pkc(&["verify", s(&dir)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    // y = x * 0.5 + 0.5 on ones: 1.0 everywhere.
    let x = out.path().join("x.npy");
    let ones = pk_runtime::cpu::HostArray::from_f32(&[128, 128], &[1.0; 128 * 128]);
    fs::write(&x, pk_runtime::cpu::npy::to_bytes(&ones)).expect("written");
    let y = out.path().join("y.npy");
    let o = pkc(&[
        "run",
        s(&dir),
        "--in",
        &format!("x={}", s(&x)),
        "--out",
        &format!("y={}", s(&y)),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got = pk_runtime::cpu::npy::read(&y).expect("read");
    let got = pk_runtime::cpu::npy::to_host(got, pk_lang::ir::DType::F32).expect("f32");
    assert!(got.to_f64().iter().all(|&v| v == 1.0));
}

/// A package of a kernel with a dynamic grid axis records where its extent
/// comes from, verifies, and runs exactly the prefetched number of steps
/// (blocks past them are never written: NaN); the verifier refuses a
/// manifest that drops the dynamic source.
#[test]
fn a_dynamic_grid_axis_survives_the_package() {
    let out = TempDir::new("dynamic-grid");
    let o = pkc(&[
        "build",
        "tests/cpu/dynamic_grid.pk",
        "-k",
        "rows",
        "-o",
        out.arg(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let dir = out.path().join("rows");
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("manifest.json")).expect("manifest"))
            .expect("JSON");
    assert_eq!(manifest["grid"][0]["dynamic"], "n[0]");
    assert_eq!(manifest["grid"][0]["extent"], 6);
    let o = pkc(&["verify", s(&dir)]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let write = |name: &str, a: &pk_runtime::cpu::HostArray| {
        let p = out.path().join(name);
        fs::write(&p, pk_runtime::cpu::npy::to_bytes(a)).expect("written");
        p
    };
    let n = write(
        "n.npy",
        &pk_runtime::cpu::HostArray::from_ints(pk_lang::ir::DType::I32, &[1], &[2]),
    );
    let x = write(
        "x.npy",
        &pk_runtime::cpu::HostArray::from_f32(&[48, 128], &[1.0; 48 * 128]),
    );
    let y = out.path().join("y.npy");
    let o = pkc(&[
        "run",
        s(&dir),
        "--in",
        &format!("n={}", s(&n)),
        "--in",
        &format!("x={}", s(&x)),
        "--out",
        &format!("y={}", s(&y)),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got = pk_runtime::cpu::npy::read(&y).expect("read");
    let got = pk_runtime::cpu::npy::to_host(got, pk_lang::ir::DType::F32)
        .expect("f32")
        .to_f64();
    assert!(got[..2 * 8 * 128].iter().all(|&v| v == 2.0));
    assert!(got[2 * 8 * 128..].iter().all(|v| v.is_nan()));
    edit_manifest(&dir, |m| {
        m["grid"][0]
            .as_object_mut()
            .expect("axis")
            .remove("dynamic");
    });
    let o = pkc(&["verify", s(&dir)]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let text = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        text.contains("PK3011") && text.contains("`t in (element 0 of operand 0) <= 6 parallel`"),
        "{text}"
    );
}

/// `-o` naming a package, or a directory inside one, would nest a package
/// in it (which then fails verification): refused with PK3014, the outer
/// package left as it was.
#[test]
fn build_into_a_package_is_refused_and_the_package_stays_whole() {
    let out = TempDir::new("pkg-nest");
    let dir = build_add(&out);
    let before: Vec<String> = fs::read_dir(&dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .collect();
    for inner in [dir.clone(), dir.join("sub"), dir.join("aot")] {
        let mut args = vec!["build", "kernels/add.pk", "-o", s(&inner)];
        args.extend_from_slice(SMALL_ADD);
        let o = pkc(&args);
        let err = stderr(&o);
        assert_eq!(code(&o), 1, "{}: {err}", inner.display());
        assert!(err.contains("PK3014"), "{err}");
        assert!(err.contains("inside the kernel package"), "{err}");
    }
    let after: Vec<String> = fs::read_dir(&dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(after, before);
    let o = pkc(&["verify", s(&dir)]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
}

/// Two kernels with one package name in one build: PK3015, and nothing is
/// written, the first package included.
#[test]
fn duplicate_packages_are_refused_before_anything_is_written() {
    let src = TempDir::new("pkg-dup-src");
    let add = fs::read(common::root().join("kernels/add.pk")).expect("read");
    fs::create_dir_all(src.path().join("a")).expect("mkdir");
    fs::create_dir_all(src.path().join("b")).expect("mkdir");
    fs::write(src.path().join("a/add.pk"), &add).expect("write");
    fs::write(src.path().join("b/add.pk"), &add).expect("write");
    let out = TempDir::new("pkg-dup");
    let (a, b) = (src.path().join("a/add.pk"), src.path().join("b/add.pk"));
    let mut args = vec!["build", s(&a), s(&b), "-o", out.arg()];
    args.extend_from_slice(SMALL_ADD);
    let o = pkc(&args);
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(err.contains("PK3015"), "{err}");
    assert!(err.contains("add-M16-N256-bm8-bn128"), "{err}");
    assert!(err.contains("nothing was"), "{err}");
    assert_eq!(out.entries(), Vec::<String>::new());
    // The same file twice is the same clash.
    let mut args = vec!["build", s(&a), s(&a), "-o", out.arg()];
    args.extend_from_slice(SMALL_ADD);
    let o = pkc(&args);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK3015"), "{}", stderr(&o));
    assert_eq!(out.entries(), Vec::<String>::new());
}

/// A package path that is a symbolic link loop is not a package (PK3001)
/// for every command that takes one, not an unreadable source (PK0009).
#[cfg(unix)]
#[test]
fn a_package_path_that_is_a_link_loop_is_not_a_package() {
    let out = TempDir::new("pkg-loop");
    let a = out.path().join("a");
    let b = out.path().join("b");
    std::os::unix::fs::symlink(&b, &a).expect("link");
    std::os::unix::fs::symlink(&a, &b).expect("link");
    for cmd in ["run", "test", "bench", "verify"] {
        let mut args = vec![cmd, s(&a)];
        if cmd == "test" {
            args.extend(["--expect", "z=z.npy"]);
        }
        let o = pkc(&args);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert_eq!(code(&o), 1, "{cmd}: {all}");
        assert!(all.contains("PK3001"), "{cmd}: {all}");
        assert!(!all.contains("PK0009"), "{cmd}: {all}");
    }
}

/// A kernel whose name is 240 characters builds: the temporary directory a
/// package is written in has a name within the 255-byte limit too.
#[test]
fn a_kernel_with_a_240_character_name_builds() {
    let src = TempDir::new("pkg-long");
    let name = format!("add_{}", "k".repeat(236));
    assert_eq!(name.len(), 240);
    let add = fs::read_to_string(common::root().join("kernels/add.pk")).expect("read");
    let file = src.file(
        "long.pk",
        add.replace("kernel add<", &format!("kernel {name}<"))
            .as_bytes(),
    );
    let out = TempDir::new("pkg-long-out");
    let o = pkc(&["build", s(&file), "-o", out.arg()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(out.entries(), vec![name.clone()]);
    let o = pkc(&["verify", s(&out.path().join(&name))]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    // Built again, it replaces itself.
    let o = pkc(&["build", s(&file), "-o", out.arg()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(out.entries(), vec![name]);
}

//! `pkc build` and `pkc emit mosaic|stablehlo`: packages on disk, exit
//! codes, atomic replacement, and ahead-of-time compiles for every target.
//!
//! The AOT test needs libtpu (`bash .ci/setup-libtpu`); without it, it prints
//! a notice and passes, unless `CI=true`, where a missing libtpu fails it.

mod common;

use common::{code, pkc, root, stderr, stdout, TempDir};
use pk_runtime::package::Package;
use pk_runtime::pjrt::{locate_libtpu, TpuTarget};

#[test]
fn build_writes_one_package_per_kernel() {
    let out = TempDir::new("plain");
    let o = pkc(&[
        "build",
        "kernels/add.pk",
        "kernels/softmax.pk",
        "-o",
        out.arg(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(out.entries(), ["add", "softmax"]);
    assert!(
        stdout(&o).contains("kernel `add` for v5e, CPU reference"),
        "{}",
        stdout(&o)
    );
    for name in ["add", "softmax"] {
        let p = Package::open(out.path().join(name)).expect("the package opens");
        assert_eq!(p.manifest().kernel, name);
        assert!(p.manifest().aot.is_empty());
        assert!(p.cpu_reference().is_some(), "{name} has a CPU reference");
    }
}

#[test]
fn parameters_name_the_package_and_reach_the_module() {
    let out = TempDir::new("params");
    let o = pkc(&["build", "kernels/add.pk", "-p", "M=2048", "-o", out.arg()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let p = Package::open(out.path().join("add-M2048")).expect("the package opens");
    assert!(p.stablehlo().contains("tensor<2048x1024xf32>"));
}

#[test]
fn a_failed_build_leaves_the_old_package_as_it_was() {
    let out = TempDir::new("keep");
    assert_eq!(code(&pkc(&["build", "kernels/add.pk", "-o", out.arg()])), 0);
    let manifest = std::fs::read(out.path().join("add/manifest.json")).expect("manifest");

    // libtpu cannot be loaded: nothing is written, and the exit code says
    // the toolchain is missing (5).
    let o = pkc(&[
        "build",
        "kernels/add.pk",
        "--aot",
        "--libtpu",
        "/nonexistent/libtpu.so",
        "-o",
        out.arg(),
    ]);
    assert_eq!(code(&o), 5, "EXIT_TOOLCHAIN: {}", stderr(&o));
    assert!(stderr(&o).contains("PK2001"), "{}", stderr(&o));

    // The same kernel name from a source with an error.
    let src = TempDir::new("src");
    let bad = src.path().join("add.pk");
    let text = std::fs::read_to_string(root().join("kernels/add.pk")).expect("read add.pk");
    std::fs::write(&bad, text.replace("x[..] + y[..]", "x[..] + w[..]")).expect("write");
    let o = pkc(&["build", bad.to_str().expect("UTF-8"), "-o", out.arg()]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("unknown name `w`"), "{}", stderr(&o));

    assert_eq!(out.entries(), ["add"], "no temporary directory is left");
    assert_eq!(
        std::fs::read(out.path().join("add/manifest.json")).expect("manifest"),
        manifest
    );
    Package::open(out.path().join("add")).expect("the old package still opens");
}

#[test]
fn a_directory_that_is_not_a_package_is_not_replaced() {
    let out = TempDir::new("foreign");
    std::fs::create_dir_all(out.path().join("add")).expect("mkdir");
    std::fs::write(out.path().join("add/notes.txt"), "mine").expect("write");
    let o = pkc(&["build", "kernels/add.pk", "-o", out.arg()]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("PK3010"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(out.path().join("add/notes.txt")).expect("kept"),
        "mine"
    );
    assert_eq!(out.entries(), ["add"]);
}

#[test]
fn bad_flags_are_usage_errors() {
    for args in [
        &["build", "kernels/add.pk", "--target", "v7x"][..],
        &["build", "kernels/add.pk", "--table"],
        &["build"],
    ] {
        let o = pkc(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn emit_prints_the_mosaic_and_stablehlo_modules() {
    let o = pkc(&["emit", "mosaic", "kernels/add.pk"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("func.func @add("), "{}", stdout(&o));
    assert!(stdout(&o).contains("tpu.vector_store"), "{}", stdout(&o));
    // The add of `z[..] = x[..] + y[..]`, at its line and column in add.pk.
    let add = stdout(&o)
        .lines()
        .find(|l| l.contains("arith.addf"))
        .map(str::to_string)
        .unwrap_or_default();
    assert!(add.ends_with(" loc(\"kernels/add.pk\":19:13)"), "{add}");

    let o = pkc(&["emit", "stablehlo", "kernels/matmul.pk", "-t", "v6e"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("stablehlo.custom_call @tpu_custom_call"),
        "{text}"
    );
    // v6e's whole VMEM as the scoped limit (see `package::build::vmem_limit`).
    assert!(text.contains("\\22size\\22: 134217728"), "{text}");

    let o = pkc(&["emit", "stablehlo", "kernels/add.pk", "-p", "bm=100"]);
    assert_eq!(code(&o), 1, "a kernel with errors: {}", stderr(&o));
}

#[test]
fn aot_compiles_add_for_every_target() {
    if locate_libtpu(None).is_err() && std::env::var("CI").as_deref() != Ok("true") {
        eprintln!(
            "notice: libtpu is not installed; skipping (install it with `bash .ci/setup-libtpu`)"
        );
        return;
    }
    let out = TempDir::new("aot");
    let o = pkc(&[
        "build",
        "kernels/add.pk",
        "--target",
        "all",
        "--aot",
        "--table",
        "-o",
        out.arg(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    for t in TpuTarget::all() {
        let line = err
            .lines()
            .find(|l| l.split_whitespace().take(2).eq(["add", t.name()]))
            .unwrap_or_else(|| panic!("no summary for {t}:\n{err}"));
        assert!(line.contains("bytes of TPU code, compiled in"), "{line}");
    }
    let table = stdout(&o);
    assert!(
        table.contains("| kernel | v4 | v5e | v5p | v6e | tpu7x |"),
        "{table}"
    );
    let row = table
        .lines()
        .find(|l| l.starts_with("| add |"))
        .unwrap_or_else(|| panic!("no row for add:\n{table}"));
    assert!(!row.contains(" - "), "every target has a size: {row}");

    let p = Package::open(out.path().join("add")).expect("the package opens");
    assert_eq!(p.aot_targets(), TpuTarget::all());
    for &t in TpuTarget::all() {
        let report = p.aot_report(t).expect("a report");
        assert!(report.generated_code_bytes > 0);
        assert!(
            row.contains(&format!("{:03} |", report.generated_code_bytes % 1000)),
            "{row}"
        );
        assert!(!p.executable(t).expect("an executable").is_empty());
    }
}

/// `pkc` with `env` set (and `PK_LIBTPU` unset), from the repository root.
fn pkc_env(args: &[&str], env: &[(&str, &std::path::Path)]) -> std::process::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_pkc"));
    c.args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env("TPU_SKIP_MDS_QUERY", "1")
        .env_remove("PK_LIBTPU");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("pkc runs")
}

/// A 4096-byte ELF64 shared object for x86-64 whose one loadable segment
/// and section headers lie inside the file: well formed, and not libtpu.
fn small_shared_object() -> Vec<u8> {
    let mut b = vec![0u8; 4096];
    b[..6].copy_from_slice(b"\x7fELF\x02\x01");
    b[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    b[18..20].copy_from_slice(&62u16.to_le_bytes()); // x86-64
    b[32..40].copy_from_slice(&64u64.to_le_bytes()); // program headers
    b[40..48].copy_from_slice(&3968u64.to_le_bytes()); // section headers
    b[54..56].copy_from_slice(&56u16.to_le_bytes());
    b[56..58].copy_from_slice(&1u16.to_le_bytes());
    b[58..60].copy_from_slice(&64u16.to_le_bytes());
    b[60..62].copy_from_slice(&2u16.to_le_bytes());
    b[64..68].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    b[96..104].copy_from_slice(&3968u64.to_le_bytes()); // its file size
    b
}

/// A truncated libtpu, given with `--libtpu` or left in pk's cache, is a
/// coded error (exit 5) before it is mapped, never SIGBUS; so is a copy in
/// the cache whose sha256 is not the pinned one.
#[test]
fn a_damaged_libtpu_is_refused_before_it_is_loaded() {
    let d = TempDir::new("libtpu");
    let cache_so = d.path().join("cache/libtpu/0.0.51/libtpu.so");
    std::fs::create_dir_all(cache_so.parent().expect("dir")).expect("dirs");
    // The start of the real library where it is installed (the case users
    // meet), else the synthetic one cut short.
    let head: Vec<u8> = match locate_libtpu(None) {
        Ok(real) => {
            use std::io::Read;
            let mut b = vec![0u8; 8 << 20];
            let mut f = std::fs::File::open(real).expect("libtpu opens");
            f.read_exact(&mut b).expect("8 MiB read");
            b
        }
        Err(_) => small_shared_object()[..2048].to_vec(),
    };
    let cut = d.path().join("cut.so");
    std::fs::write(&cut, &head).expect("written");
    let cut_arg = cut.to_str().expect("UTF-8");
    let out = d.path().join("out");
    let out_arg = out.to_str().expect("UTF-8");

    let o = pkc_env(
        &[
            "build",
            "kernels/add.pk",
            "--aot",
            "--libtpu",
            cut_arg,
            "-o",
            out_arg,
        ],
        &[],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(5), "{err}");
    assert!(
        err.contains("PK2002") && err.contains("truncated") && err.contains(cut_arg),
        "{err}"
    );
    assert!(!out.join("add").exists());

    // The same file in pk's cache (found through PK_CACHE_DIR).
    std::fs::write(&cache_so, &head).expect("written");
    let cache = d.path().join("cache");
    let o = pkc_env(
        &["build", "kernels/add.pk", "--aot", "-o", out_arg],
        &[("PK_CACHE_DIR", &cache)],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(5), "{err}");
    assert!(
        err.contains("PK2002") && err.contains("truncated") && err.contains("setup-libtpu"),
        "{err}"
    );

    // A complete shared object in the cache that is not the pinned libtpu.
    std::fs::write(&cache_so, small_shared_object()).expect("written");
    let o = pkc_env(
        &["build", "kernels/add.pk", "--aot", "-o", out_arg],
        &[("PK_CACHE_DIR", &cache)],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(5), "{err}");
    assert!(
        err.contains("PK2002")
            && err.contains("sha256")
            && err.contains(pk_runtime::pjrt::LIBTPU_SHA256),
        "{err}"
    );
}

/// The LLVM 22 `mlir-opt` that `.ci/setup` installs, if it is there.
fn mlir_opt() -> Option<std::path::PathBuf> {
    let p = std::path::PathBuf::from("/usr/lib/llvm-22/bin/mlir-opt");
    if p.is_file() {
        return Some(p);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "mlir-opt 22 is missing (bash .ci/setup installs it)"
    );
    eprintln!("note: mlir-opt 22 not found; `emit mosaic` parsing not checked");
    None
}

/// What `pkc emit mosaic` prints is MLIR that MLIR's own tools parse (the
/// tpu dialect is not registered there, hence
/// `--allow-unregistered-dialect`), on kernels with every memory space,
/// semaphores, loops and several kernels in one file, with each
/// operation's .pk location kept through the round trip.
#[test]
fn emit_mosaic_parses_with_mlir_opt() {
    let Some(opt) = mlir_opt() else {
        return;
    };
    for file in [
        "kernels/add.pk",
        "kernels/matmul.pk",
        "kernels/paged_attention.pk",
        "kernels/flash.pk",
        "kernels/gmm.pk",
        "tests/cpu/paged_sum.pk",
    ] {
        let args = ["emit", "mosaic", file];
        let o = pkc(&args);
        assert_eq!(code(&o), 0, "{file}: {}", stderr(&o));
        let d = TempDir::new("mosaic");
        let text = d.path().join("m.mlir");
        std::fs::write(&text, &o.stdout).expect("written");
        let parsed = std::process::Command::new(&opt)
            .arg("--allow-unregistered-dialect")
            .arg("--mlir-print-debuginfo")
            .arg(&text)
            .output()
            .expect("mlir-opt runs");
        let err = String::from_utf8_lossy(&parsed.stderr);
        assert!(
            parsed.status.success(),
            "{file}: mlir-opt rejects it:\n{err}"
        );
        // The locations survive: mlir-opt prints them back, and the first
        // operation's is a line and column of the file.
        let back = String::from_utf8_lossy(&parsed.stdout);
        assert!(back.contains(&format!("loc(\"{file}\":")), "{file}: {back}");
    }
}

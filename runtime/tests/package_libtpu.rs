//! Packages with real executables: every target compiled by libtpu, a kernel
//! that needs more VMEM than libtpu's default scoped limit, and a libtpu
//! rejection reported at the `.pk` line.
//!
//! These need libtpu (`bash .ci/setup-libtpu`). Without it they print a
//! notice and pass, unless `CI=true`, where a missing libtpu fails them.

use std::path::{Path, PathBuf};

use pk_lowering::{mosaic, stablehlo};
use pk_runtime::package::build::{
    build_file, compile_aot, libtpu_diagnostic, BuildOptions, BuiltKernel,
};
use pk_runtime::package::{Package, STABLEHLO};
use pk_runtime::pjrt::{LibtpuOrigin, PjrtError, Plugin, TpuTarget, LIBTPU_VERSION};

fn plugin() -> Option<&'static Plugin> {
    match Plugin::load(None) {
        Ok(p) => Some(p),
        Err(PjrtError::LibtpuNotFound {
            path,
            origin: LibtpuOrigin::Cache,
        }) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("notice: libtpu not installed at {path}; skipping (install it with `bash .ci/setup-libtpu`)");
            None
        }
        Err(e) => panic!("libtpu is required here: {e}"),
    }
}

fn kernels_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels")
}

fn build_one(
    path: &Path,
    targets: &[TpuTarget],
) -> (BuiltKernel, pk_runtime::package::build::Built) {
    let opts = BuildOptions {
        targets: targets.to_vec(),
        ..BuildOptions::default()
    };
    match build_file(path, &opts) {
        Ok(mut b) => (b.kernels.remove(0), b),
        Err(f) => panic!(
            "{} does not build:\n{}",
            path.display(),
            f.render(pk_lang::diag::RenderStyle::Plain)
        ),
    }
}

#[test]
fn every_target_compiles_into_a_package_that_opens() {
    let Some(plugin) = plugin() else { return };
    let (mut k, _) = build_one(&kernels_dir().join("add.pk"), TpuTarget::all());
    for &t in TpuTarget::all() {
        let art = compile_aot(plugin, &k, t, false).unwrap_or_else(|e| panic!("{t}: {e}"));
        k.package.aot.push(art);
    }
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("add");
    k.package.write(&dir).expect("write");
    let p = Package::open(&dir).expect("open");
    assert_eq!(p.aot_targets(), TpuTarget::all());
    assert_eq!(
        p.manifest().toolchain.libtpu.as_deref(),
        Some(LIBTPU_VERSION)
    );
    // Each target's module carries its own VMEM as the scoped limit.
    let limits: Vec<(&str, u64)> = p
        .manifest()
        .stablehlo
        .iter()
        .map(|m| (m.target.as_str(), m.vmem_limit_bytes))
        .collect();
    assert_eq!(
        limits,
        [
            ("v4", 16 << 20),
            ("v5e", 128 << 20),
            ("v5p", 64 << 20),
            ("v6e", 128 << 20),
            ("tpu7x", 64 << 20)
        ]
    );
    for &t in TpuTarget::all() {
        let report = p.aot_report(t).expect("report");
        let exe = p.executable(t).expect("executable");
        assert_eq!(report.target, t.name());
        assert_eq!(report.topology, t.topology_name());
        assert!(report.generated_code_bytes > 0, "{t}");
        assert_eq!(report.executable_bytes, exe.len() as u64, "{t}");
        assert!(report.compile_ms > 0.0, "{t}");
        assert!(
            !report.cost_analysis.is_empty(),
            "{t}: libtpu's cost analysis"
        );
        let memory = report.memory.expect("libtpu 0.0.51 reports memory stats");
        // x and y (4 MiB each) are arguments, z is the output.
        assert_eq!(memory.argument_bytes, 2 * (4 << 20), "{t}");
        assert_eq!(memory.output_bytes, 4 << 20, "{t}");
    }
}

/// Four double-buffered 5 MiB blocks: 40 MiB of VMEM, more than libtpu's
/// default scoped limit (16 MiB on v5e), and no `vmem_limit` clause.
const VMEM_40_MIB: &str = "
kernel vmem40<M = 2048, N = 2560, bm = 1024, bn = 1280>(
    x: f32[M, N] block [bm, bn] at (i, j),
    y: f32[M, N] block [bm, bn] at (i, j),
    w: f32[M, N] block [bm, bn] at (i, j),
) -> z: f32[M, N] block [bm, bn] at (i, j)
grid (i in M / bm parallel, j in N / bn parallel)
{
    z[..] = x[..] + y[..] + w[..];
}
";

#[test]
fn a_kernel_using_40_mib_of_vmem_compiles_without_a_vmem_limit() {
    let Some(plugin) = plugin() else { return };
    let root = tempfile::tempdir().expect("temp dir");
    let path = root.path().join("vmem40.pk");
    std::fs::write(&path, VMEM_40_MIB).expect("write the kernel");
    let targets = [
        TpuTarget::V5e,
        TpuTarget::V5p,
        TpuTarget::V6e,
        TpuTarget::Tpu7x,
    ];
    let (k, _) = build_one(&path, &targets);
    assert_eq!(k.kernel.vmem_limit, None);
    assert_eq!(k.package.manifest.vmem.total_bytes, 40 << 20);
    for t in targets {
        if let Err(e) = compile_aot(plugin, &k, t, false) {
            panic!("{t}: pk accepted the kernel but libtpu did not: {e}");
        }
    }
    // libtpu's default limit is what the explicit one avoids: without it
    // the same module runs out of scoped VMEM.
    let module = pk_lang::compile_file(
        &path,
        &pk_lang::Options {
            specialise: true,
            ..Default::default()
        },
    )
    .expect("compile");
    let lowered =
        mosaic::lower(&module, &module.kernels[0], &mosaic::Options::default()).expect("lower");
    let mut call = mosaic::custom_call(&module.kernels[0], &lowered);
    call.vmem_limit_bytes = None;
    let hlo = stablehlo::custom_call_module(&call).expect("wrap");
    match plugin.compile(TpuTarget::V5e, &hlo) {
        Err(PjrtError::Compile { status, .. }) => assert_eq!(status, "RESOURCE_EXHAUSTED"),
        Err(e) => panic!("expected libtpu's default limit to be too small, got {e}"),
        Ok(c) => panic!(
            "expected libtpu's default limit to be too small, but it compiled ({} bytes)",
            c.generated_code_bytes
        ),
    }
}

#[test]
fn a_libtpu_rejection_is_a_diagnostic_at_the_pk_line() {
    let Some(plugin) = plugin() else { return };
    let (k, built) = build_one(&kernels_dir().join("add.pk"), &[TpuTarget::V5e]);
    let module = pk_lang::compile_file(
        &kernels_dir().join("add.pk"),
        &pk_lang::Options {
            specialise: true,
            ..Default::default()
        },
    )
    .expect("compile");
    let mut lowered =
        mosaic::lower(&module, &module.kernels[0], &mosaic::Options::default()).expect("lower");
    // An integer add of float vectors: valid MLIR syntax that Mosaic's
    // verifier refuses, at the location of the `+` it came from.
    lowered.text = lowered
        .text
        .replace("stable_mosaic.arith.addf", "stable_mosaic.arith.addi");
    let hlo = stablehlo::custom_call_module(&mosaic::custom_call(&module.kernels[0], &lowered))
        .expect("wrap");
    let err = plugin
        .compile(TpuTarget::V5e, &hlo)
        .expect_err("libtpu refuses addi on floats");
    let d = libtpu_diagnostic(&err, &k.kernel, &built.sources).expect("a compile error");
    let text = pk_lang::diag::render(&d, &built.sources, pk_lang::diag::RenderStyle::Plain);
    assert!(text.contains("PK2007"), "{text}");
    assert!(text.contains("add.pk:19:"), "{text}");
    assert!(text.contains("z[..] = x[..] + y[..];"), "{text}");
    assert!(!text.contains("stable_mosaic"), "{text}");
}

/// Built for several targets, a package holds for each target the module
/// and the executable that building for that target alone gives, and
/// writes each module that differs from the first target's once.
fn check_per_target_package(plugin: &'static Plugin, path: &Path, targets: &[TpuTarget]) {
    let (mut several, _) = build_one(path, targets);
    let code_bytes = |k: &BuiltKernel, t: TpuTarget| {
        compile_aot(plugin, k, t, false)
            .unwrap_or_else(|e| panic!("{t}: {e}"))
            .report
            .generated_code_bytes
    };
    let mut alone_bytes = Vec::new();
    for &t in targets {
        let (alone, _) = build_one(path, &[t]);
        let module = several.package.stablehlo_for(t).expect("a module");
        assert_eq!(module, alone.package.stablehlo(), "{t}");
        assert!(
            module.contains(&format!("\\22size\\22: {}", vmem(t))),
            "{t}: the module carries the target's own VMEM as its limit"
        );
        alone_bytes.push(code_bytes(&alone, t));
        let art = compile_aot(plugin, &several, t, false).expect("compiles");
        several.package.aot.push(art);
    }
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("k");
    several.package.write(&dir).expect("write");
    let p = Package::open(&dir).expect("open");
    let first = vmem(targets[0]);
    for (m, &t) in p.manifest().stablehlo.iter().zip(targets) {
        assert_eq!(m.target, t.name());
        let expected = if vmem(t) == first {
            STABLEHLO.to_string()
        } else {
            format!("stablehlo/{t}.mlir")
        };
        assert_eq!(m.module, expected, "{t}");
        assert_eq!(m.vmem_limit_bytes, vmem(t), "{t}");
    }
    for (&t, bytes) in targets.iter().zip(alone_bytes) {
        assert_eq!(
            p.aot_report(t).expect("report").generated_code_bytes,
            bytes,
            "{t}: the package's executable is the one built alone"
        );
    }
}

/// The VMEM of a target, as the front end knows it.
fn vmem(t: TpuTarget) -> u64 {
    t.vmem_bytes()
}

/// add.pk for every target: TPU7x's code depends on the scoped limit, so
/// the module with v4's 16 MiB (what every target compiled when one module
/// served all) gives TPU7x other code than its own 64 MiB module.
#[test]
fn each_target_of_an_all_target_package_compiles_as_if_built_alone() {
    let Some(plugin) = plugin() else { return };
    let path = kernels_dir().join("add.pk");
    check_per_target_package(plugin, &path, TpuTarget::all());
    let (all, _) = build_one(&path, TpuTarget::all());
    let own = |t: TpuTarget| {
        plugin
            .compile(t, all.package.stablehlo_for(t).expect("a module"))
            .expect("compiles")
            .generated_code_bytes
    };
    let with_v4_limit = plugin
        .compile(TpuTarget::Tpu7x, all.package.stablehlo())
        .expect("compiles")
        .generated_code_bytes;
    assert_ne!(with_v4_limit, own(TpuTarget::Tpu7x));
}

/// A kernel that needs a scoped limit above libtpu's default (40 MiB of
/// VMEM), built for the four targets that hold it: v6e shares v5e's module.
#[test]
fn each_target_of_a_large_block_package_compiles_as_if_built_alone() {
    let Some(plugin) = plugin() else { return };
    let root = tempfile::tempdir().expect("temp dir");
    let path = root.path().join("vmem40.pk");
    std::fs::write(&path, VMEM_40_MIB).expect("write the kernel");
    let targets = [
        TpuTarget::V5e,
        TpuTarget::V5p,
        TpuTarget::V6e,
        TpuTarget::Tpu7x,
    ];
    check_per_target_package(plugin, &path, &targets);
}

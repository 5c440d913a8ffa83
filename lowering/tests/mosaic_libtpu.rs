//! Acceptance by the real TPU compiler: every kernel of `kernels/`,
//! `tests/in/` and the operation fixtures `lowering/tests/mosaic_ops/`, at
//! its defaults and at other configurations, is checked for each TPU
//! generation, lowered to Mosaic, wrapped into StableHLO and compiled ahead
//! of time by libtpu for that generation (v4, v5e, v5p, v6e, TPU7x).
//!
//! A kernel that pk's checker accepts for a target and libtpu rejects is a pk
//! bug. The few known cases, each a checker rule still to be written, are
//! listed in [`CHECKER_GAPS`] with the message libtpu gives; the test fails
//! when one of them is accepted by libtpu or rejected by the checker, so that
//! the list stays exact.
//!
//! These need libtpu (`bash .ci/setup-libtpu`). Without it they print a
//! notice and pass, unless `CI=true`, where a missing libtpu fails them.
//! `PK_LIBTPU_REPORT=1` prints the generated code size of every compile.

mod mosaic_support;

use mosaic_support::{inputs, stem};
use pk_lang::{Options, Target};
use pk_lowering::{mosaic, stablehlo};
use pk_runtime::pjrt::{LibtpuOrigin, PjrtError, Plugin, TpuTarget};
use std::path::Path;

/// `(fixture, target, part of libtpu's message)`: kernels the checker accepts
/// for a target although libtpu rejects them there.
const CHECKER_GAPS: &[(&str, &str, &str)] = &[
    // None known for libtpu 0.0.51. An entry reads, for example:
    // ("int8_dot", "v4", "Unsupported matmul RHS type on target: vector<128x128xi8>"),
];

fn plugin() -> Option<&'static Plugin> {
    match Plugin::load(None) {
        Ok(p) => Some(p),
        Err(PjrtError::LibtpuNotFound {
            path,
            origin: LibtpuOrigin::Cache,
        }) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!(
                "notice: libtpu not installed at {path}; skipping \
                 (install it with `bash .ci/setup-libtpu`)"
            );
            None
        }
        Err(e) => panic!("libtpu is required here: {e}"),
    }
}

/// Configurations besides the defaults, per file: other tiles and dtypes,
/// so that more than one shape of each kernel is compiled, and blocks that
/// need more VMEM than libtpu's default scoped limit.
fn other_configs(stem: &str) -> Vec<&'static [(&'static str, &'static str)]> {
    match stem {
        "add" => vec![
            &[("M", "512"), ("N", "2048"), ("bm", "128"), ("bn", "1024")],
            // 48 MiB of double-buffered blocks: beyond v4's VMEM, within
            // every other chip's once the scoped limit is raised.
            &[("M", "4096"), ("N", "4096"), ("bm", "1024"), ("bn", "2048")],
        ],
        "matmul" => vec![&[("bm", "128"), ("bn", "512"), ("bk", "256"), ("T", "f32")]],
        "softmax" => vec![&[("R", "512"), ("C", "256"), ("br", "64")]],
        "control_flow" => vec![&[("M", "128"), ("N", "512"), ("bm", "32")]],
        "flash_attention" => vec![&[("S", "1024"), ("bq", "256"), ("bk", "256")]],
        "prefetch_dma" => vec![&[("C", "256")]],
        "reductions" => vec![&[("M", "64"), ("T", "f32")]],
        "unary" => vec![&[("T", "bf16"), ("br", "16")]],
        "ints" => vec![&[("T", "i8"), ("M", "64"), ("br", "32")]],
        "shapes" => vec![&[("M", "32")]],
        "int8_dot" => vec![&[("M", "256"), ("N", "256")]],
        "argmax" => vec![&[("T", "f32")]],
        "edges" => vec![&[("T", "i8")]],
        _ => Vec::new(),
    }
}

fn tpu_target(t: Target) -> TpuTarget {
    match t {
        Target::V4 => TpuTarget::V4,
        Target::V5e => TpuTarget::V5e,
        Target::V5p => TpuTarget::V5p,
        Target::V6e => TpuTarget::V6e,
        Target::Tpu7x => TpuTarget::Tpu7x,
    }
}

/// The StableHLO modules of every kernel of `path` for `target`, or `None`
/// when the checker rejects the file for that target.
fn build(path: &Path, params: &[(&str, &str)], target: Target) -> Option<Vec<(String, String)>> {
    let opts = Options {
        target,
        specialise: true,
        params: params
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        ..Options::default()
    };
    let module = pk_lang::compile_file(path, &opts).ok()?;
    let built = module
        .kernels
        .iter()
        .map(|k| {
            let lowered = mosaic::lower(&module, k, &mosaic::Options::default())
                .unwrap_or_else(|e| panic!("{}/{}: does not lower: {e}", path.display(), k.name));
            let mut call = mosaic::custom_call(k, &lowered);
            // The budget the checker verified for this target (see
            // `mosaic::custom_call`).
            call.vmem_limit_bytes = Some(k.vmem_limit.unwrap_or(target.vmem_bytes()));
            let hlo = stablehlo::custom_call_module(&call)
                .unwrap_or_else(|e| panic!("{}/{}: cannot wrap: {e}", path.display(), k.name));
            (k.name.clone(), hlo)
        })
        .collect();
    Some(built)
}

#[test]
fn libtpu_accepts_every_kernel_the_checker_accepts() {
    let Some(plugin) = plugin() else { return };
    std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
    let report = std::env::var_os("PK_LIBTPU_REPORT").is_some();
    let mut failures = Vec::new();
    let mut compiled = 0;
    for path in inputs() {
        let name = stem(&path);
        let mut configs: Vec<&[(&str, &str)]> = vec![&[]];
        configs.extend(other_configs(&name));
        for params in configs {
            let mut checked = 0;
            for target in Target::ALL {
                let gap = CHECKER_GAPS
                    .iter()
                    .find(|(f, t, _)| *f == name && *t == target.name());
                let Some(kernels) = build(&path, params, target) else {
                    if let Some((f, t, _)) = gap {
                        failures.push(format!(
                            "{f} on {t}: the checker now rejects it; remove it from CHECKER_GAPS"
                        ));
                    }
                    continue;
                };
                checked += 1;
                for (kernel, hlo) in kernels {
                    let what = format!("{name}/{kernel} {params:?} on {target:?}");
                    match (plugin.compile(tpu_target(target), &hlo), gap) {
                        (Ok(c), None) => {
                            compiled += 1;
                            if report {
                                eprintln!("{what}: {} bytes of code", c.generated_code_bytes);
                            }
                        }
                        (Ok(_), Some(_)) => failures.push(format!(
                            "{what}: libtpu now accepts it; remove it from CHECKER_GAPS"
                        )),
                        (Err(e), Some((_, _, msg))) if e.to_string().contains(msg) => {}
                        (Err(e), _) => failures.push(format!("{what}: {e}")),
                    }
                }
            }
            if checked == 0 {
                failures.push(format!(
                    "{name} {params:?}: the checker rejects it for every target"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures ({compiled} compiles accepted):\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(compiled > 100, "only {compiled} compiles ran");
}

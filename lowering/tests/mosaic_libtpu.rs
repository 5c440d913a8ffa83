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
        "dtype_queries" => vec![&[("T", "f32")], &[("T", "i8")], &[("T", "i16")]],
        "static_assert" => vec![&[("M", "512"), ("bm", "64"), ("T", "bf16")]],
        "params_float_bool" => vec![&[("scale", "-1.5"), ("causal", "false")]],
        "conditional_operands" => vec![
            &[("QUANT", "false")],
            &[("SUM", "false")],
            &[("QUANT", "false"), ("SUM", "false")],
        ],
        "ragged_axes" => vec![&[("M", "1000"), ("T", "f32")]],
        "optional_params" => vec![&[("window", "64")], &[("window", "none")]],
        "computed_shapes" => vec![&[("WIDE", "true"), ("S", "300")]],
        "masked_store" => vec![&[("T", "i32"), ("n", "7")]],
        "ref_views" => vec![&[("T", "f32")], &[("T", "i8")]],
        "repeat" => vec![&[("T", "bf16")], &[("T", "i8")]],
        "gmm" => vec![&[
            ("M", "48"),
            ("K", "128"),
            ("N", "128"),
            ("G", "3"),
            ("tm", "16"),
            ("T", "bf16"),
        ]],
        "dynamic_grid" => vec![&[("M", "64"), ("bm", "8"), ("bn", "128")]],
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
    let module = pk_lang::Session::open(path)
        .and_then(|s| s.check(&opts))
        .ok()?;
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

/// `(rule, code, target, kernel, part of libtpu's message)`: a kernel
/// breaking one TPU rule of the checker on a target, and how libtpu refuses
/// the same kernel.
const RULES: &[(&str, &str, Target, &str, &str)] = &[
    (
        "(8, 128) tiling of a (4, 100) block",
        "PK0301",
        Target::V5e,
        "kernel k(x: f32[16, 200] block [4, 100] at (i, j)) -> y: f32[16, 200] block [4, 100] at (i, j)
grid (i in 4 parallel, j in 2 parallel)
{ y[..] = x[..] + 1.0; }",
        "E2002: CompileTimeMosaicMisalignedBlockAndTiling",
    ),
    (
        "rank-1 block of 64 f32",
        "PK0302",
        Target::V5e,
        "kernel k(x: f32[4096] block [64] at (i)) -> y: f32[4096] block [64] at (i)
grid (i in 64 parallel)
{ y[..] = x[..] + 1.0; }",
        "E2002: CompileTimeMosaicMisalignedBlockAndTiling",
    ),
    (
        "rank-1 block of 256 i8",
        "PK0302",
        Target::V5e,
        "kernel k(x: i8[8192] block [256] at (i)) -> y: i8[8192] block [256] at (i)
grid (i in 32 parallel)
{ y[..] = x[..] + x[..]; }",
        "E2002: CompileTimeMosaicMisalignedBlockAndTiling",
    ),
    (
        "int8 matmul on v4",
        "PK0305",
        Target::V4,
        "kernel k(a: i8[128, 128], b: i8[128, 128]) -> c: i32[128, 128]
{ c[..] = dot(a[..], b[..]); }",
        "E2001: CompileTimeMosaicUnsupportedRhsType",
    ),
    (
        "32 MiB of blocks on v4's 16 MiB of VMEM",
        "PK0306",
        Target::V4,
        "kernel k(x: f32[8192, 512] block [4096, 512] at (i, 0)) -> y: f32[8192, 512] block [4096, 512] at (i, 0)
grid (i in 2 parallel)
{ y[..] = x[..] + 1.0; }",
        "Ran out of memory in memory space vmem",
    ),
    (
        "16 MiB of bf16 matmul blocks and scratch on v4, with the operand copies",
        "PK0306",
        Target::V4,
        "kernel k(a: bf16[4096, 4096] block [1024, 512] at (i, k), b: bf16[4096, 4096] block [512, 1024] at (k, j))
    -> c: f32[4096, 4096] block [1024, 1024] at (i, j)
grid (i in 4 parallel, j in 4 parallel, k in 8 arbitrary)
scratch (acc: vmem f32[1024, 1024])
{ if k == 0 { acc[..] = 0.0; } acc[..] += dot(a[..], b[..]); c[..] = acc[..]; }",
        "Ran out of memory in memory space vmem",
    ),
    (
        "a DMA of 64 of 256 lanes",
        "PK0354",
        Target::V6e,
        "kernel k(x: bf16[16, 256] in any) -> y: f32[8, 256]
scratch (buf: vmem bf16[8, 256], sem: dma_sem[1])
{ buf[..] = zeros(bf16, [8, 256]); copy_start(x.at[0..8, 0..64], buf.at[:, 0..64], sem.at[0]); copy_wait(x.at[0..8, 0..64], buf.at[:, 0..64], sem.at[0]); y[..] = buf[..] as f32; }",
        "must be divisible by 512 bytes",
    ),
    (
        "scalar read of a bf16 VMEM element",
        "PK0317",
        Target::V5e,
        "kernel k(x: bf16[16, 128] block [16, 128] at (0, 0)) -> y: f32[16, 128] block [16, 128] at (0, 0)
grid (i in 1 arbitrary)
{ y[..] = (x[..] as f32) + (x[3, 5] as f32); }",
        "Only 32-bit scalar vector.extracts supported",
    ),
    (
        "run-time head index into the second-to-last dimension of a bf16 ref",
        "PK0325",
        Target::V5e,
        "kernel k(kv: bf16[2, 16, 8, 128]) -> y: f32[16, 128]
grid (i in 2 arbitrary)
{
    y[..] = 0.0;
    for h in 0..8 { y[..] += kv[i, :, h, :] as f32; }
}",
        "E2003: CompileTimeMosaicUnprovenMemoryAccessAlignment",
    ),
    (
        "column of an f32 VMEM ref read as a vector on v4",
        "PK0326",
        Target::V4,
        "kernel k(x: f32[128, 128]) -> y: f32[128]
{ y[..] = x[.., 3]; }",
        "Sublane gather not supported by this TPU generation",
    ),
    (
        "masked store of bf16",
        "PK0350",
        Target::V6e,
        "kernel k(x: bf16[16, 128]) -> y: bf16[16, 128]
{ y[..] = x[..]; store(y[..], x[..] * 2.0, mask=iota(i32, [16, 128], 1) < 64); }",
        "masked store with non-32-bit element type",
    ),
    (
        "repeat of a rank-1 value",
        "PK0351",
        Target::V5e,
        "kernel k(x: f32[128]) -> y: f32[256]
{ y[..] = repeat(x[..], 2, axis=0); }",
        "unsupported shape cast",
    ),
    (
        "strided window with a lane stride",
        "PK0352",
        Target::V5e,
        "kernel k(x: f32[32, 128]) -> y: f32[8, 64]
{ y[..] = x[ds(0, 8, 2), ds(0, 64, 2)]; }",
        "Stride on last dim is not 1",
    ),
    (
        "strided store of bf16",
        "PK0352",
        Target::V6e,
        "kernel k(x: bf16[16, 128]) -> y: bf16[32, 128]
{ y[..] = zeros(bf16, [32, 128]); y[ds(0, 16, 2), :] = x[..]; }",
        "Strided store with non 32-bit data",
    ),
    (
        "strided window of a ref of 256 lanes",
        "PK0352",
        Target::V4,
        "kernel k(x: f32[32, 256]) -> y: f32[8, 256]
{ y[..] = x[ds(0, 8, 2), :]; }",
        "The last dim size is not 128",
    ),
    (
        "SMEM block of 8 i32",
        "PK0302",
        Target::V5e,
        "kernel k(s: i32[64] block [8] at (i) in smem, x: f32[64, 128] block [8, 128] at (i, 0))
    -> y: f32[64, 128] block [8, 128] at (i, 0)
grid (i in 8 arbitrary)
{ y[..] = x[..] + (s[0] as f32); }",
        "E2002: CompileTimeMosaicMisalignedBlockAndTiling",
    ),
];

#[test]
fn libtpu_rejects_what_each_tpu_rule_rejects() {
    let Some(plugin) = plugin() else {
        return;
    };
    let mut failures = Vec::new();
    for (rule, code, target, src, refusal) in RULES {
        let opts = Options {
            target: *target,
            specialise: true,
            ..Options::default()
        };
        // The checker names the rule ...
        match pk_lang::compile_source("k.pk", src, &opts) {
            Ok(_) => failures.push(format!("{rule}: the checker accepts it")),
            Err(f) => {
                let codes: Vec<&str> = f.diags.iter().map(|d| d.code.code).collect();
                if !codes.contains(code) {
                    failures.push(format!(
                        "{rule}: expected {code}, the checker gave {codes:?}"
                    ));
                }
            }
        }
        // ... and the same kernel, lowered without the TPU rules, is one
        // that libtpu refuses for that target.
        let unchecked = Options {
            skip_tpu_rules: true,
            ..opts
        };
        let module = pk_lang::compile_source("k.pk", src, &unchecked)
            .unwrap_or_else(|f| panic!("{rule}: {}", f.render(pk_lang::diag::RenderStyle::Plain)));
        let k = &module.kernels[0];
        let lowered = match mosaic::lower(&module, k, &mosaic::Options::default()) {
            Ok(l) => l,
            // The Mosaic back end refusing it is a rejection as well.
            Err(e) => {
                eprintln!("{rule} ({code}): the Mosaic back end refuses it: {e}");
                continue;
            }
        };
        let mut call = mosaic::custom_call(k, &lowered);
        call.vmem_limit_bytes = Some(target.vmem_bytes());
        let hlo = stablehlo::custom_call_module(&call).expect("wraps");
        match plugin.compile(tpu_target(*target), &hlo) {
            Ok(c) => failures.push(format!(
                "{rule}: libtpu accepts it for {target} ({} bytes of code); the rule is stricter than the TPU",
                c.generated_code_bytes
            )),
            Err(e) if e.to_string().contains(refusal) => {}
            Err(e) => failures.push(format!("{rule}: libtpu refuses it, but not with `{refusal}`: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Loop indices as positions: `(dtype, start of the loop, step, offset)`
/// for `for c in lo..n[0] step s { ... x[ds(c + off, 32), :] ... }`. The
/// end of the loop is read from SMEM so that the TPU compiler cannot unroll
/// the loop into constant positions (it does for constant trip counts).
const LOOP_INDICES: &[(&str, u32, u32, u32)] = &[
    ("f32", 0, 8, 0),
    ("f32", 0, 16, 8),
    ("f32", 4, 8, 0),
    ("f32", 0, 4, 0),
    ("bf16", 0, 8, 0),
    ("bf16", 8, 16, 0),
    ("bf16", 0, 4, 0),
    ("i8", 0, 8, 0),
    ("i8", 0, 32, 0),
    ("i8", 0, 16, 16),
];

fn loop_kernel(dtype: &str, lo: u32, step: u32, off: u32) -> String {
    format!(
        "kernel k(x: {dtype}[96, 128], n: i32[1] in smem) -> y: f32[32, 128]
{{
    let mut acc: f32[32, 128] = 0.0;
    for c in {lo}..n[0] step {step} {{ acc += x[ds(c + {off}, 32), :] as f32; }}
    y[..] = acc;
}}"
    )
}

/// Cases where the checker is stricter than libtpu 0.0.51: on v6e and
/// TPU7x, libtpu compiles 32-bit loads of a 2-D ref at rows a loop index
/// does not keep aligned (the same loads at an unaligned grid index of a
/// 4-D ref are refused there, E2003). pk refuses them on every target; it
/// never accepts what libtpu refuses.
const STRICTER: &[&str] = &[
    "f32 loop 4..n[0] step 8 at c + 0 on v6e",
    "f32 loop 0..n[0] step 4 at c + 0 on tpu7x",
    // A view at `i * 64 - 16` read 16 rows further in: the position is
    // `(i * 64 - 16) + 16`, which libtpu folds to `i * 64` (aligned) and
    // pk's alignment rule, which proves no sums, does not.
    "load of i8 R.at[0, 0, ds(S, 48)][ds(16, 32), 0..128] with S = i * 64 - 16 on v6e",
    "store of i8 R.at[0, 0, ds(S, 48)][ds(16, 32), 0..128] with S = i * 64 - 16 on tpu7x",
];

/// The dtypes of the run-time index corpus, with a value of each to store.
const INDEX_DTYPES: &[(&str, &str)] = &[("f32", "1.0"), ("bf16", "1.0"), ("i8", "1 as i8")];

/// Windows of a `[2, 4, 64, 256]` ref with one run-time position `S`, one
/// per dimension and kind of entry (a scalar index drops the dimension,
/// `ds` keeps it), with the shape of the window (empty for a scalar).
const INDEX_WINDOWS: &[(&str, &str)] = &[
    ("S, 0, 0..32, 0..128", "32, 128"),
    ("0, S, 0..32, 0..128", "32, 128"),
    ("0, 0..4, S, 0..128", "4, 128"),
    ("0, 0, ds(S, 32), 0..128", "32, 128"),
    ("0, 0, 0..32, ds(S, 128)", "32, 128"),
    ("0, 0, 0..32, S", "32"),
    ("0, 0, S, 5", ""),
    ("0, 0, 5, S", ""),
];

/// Run-time positions: grid indices, scaled, offset, read from SMEM and
/// hinted with `multiple_of`.
const INDEX_STARTS: &[&str] = &[
    "i",
    "i * 8",
    "i * 16",
    "i * 32",
    "i * 128",
    "(i * 4) * 2",
    "i * 64 + 32",
    "i * 64 - 16",
    "ids[i]",
    "ids[i] * 32",
    "multiple_of(ids[i], 8)",
    "multiple_of(ids[i], 32)",
    "multiple_of(ids[i], 128)",
];

/// One kernel of the corpus: a load (`store == false`) or a store through
/// `window` (of shape `shape`) with `start` in place of `S`.
fn index_kernel(
    dtype: &str,
    value: &str,
    (window, shape): (&str, &str),
    start: &str,
    store: bool,
) -> String {
    let w = window.replace('S', start);
    if store {
        format!(
            "kernel k(ids: i32[4] in smem) -> y: {dtype}[2, 4, 64, 256]
grid (i in 4 arbitrary)
{{ y[{w}] = {value}; }}"
        )
    } else if shape.is_empty() {
        format!(
            "kernel k(x: {dtype}[2, 4, 64, 256], ids: i32[4] in smem) -> y: f32[8, 128]
grid (i in 4 arbitrary)
{{ y[0, 0] = x[{w}] as f32; }}"
        )
    } else {
        format!(
            "kernel k(x: {dtype}[2, 4, 64, 256], ids: i32[4] in smem) -> y: f32[{shape}]
grid (i in 4 arbitrary)
{{ y[..] = x[{w}] as f32; }}"
        )
    }
}

/// Accesses through views of refs (`R.at[...]` then a window of the view,
/// `R` the ref) with one run-time position `S`, in the view or in the
/// window, with the shape accessed: the checker judges the summed position
/// in the underlying ref, as libtpu does.
const VIEW_WINDOWS: &[(&str, &str)] = &[
    ("R.at[0, 0][ds(S, 32), 0..128]", "32, 128"),
    ("R.at[0, 0, ds(S, 32)][.., 0..128]", "32, 128"),
    ("R.at[0, 0, ds(S, 48)][ds(16, 32), 0..128]", "32, 128"),
    ("R.at[S][0, 0..32, 0..128]", "32, 128"),
    ("R.at[0, 0, 0..32][.., ds(S, 128)]", "32, 128"),
    ("R.at[0, S][0..32, 0..128]", "32, 128"),
];

/// Strided windows of a `[2, 64, 128]` ref with a run-time start `S`:
/// every second and every third row.
const STRIDED_WINDOWS: &[(&str, &str)] = &[
    ("R[1, ds(S, 8, 2), :]", "8, 128"),
    ("R[1, ds(S, 8, 3), :]", "8, 128"),
];

/// One kernel of the view corpus: a load from `x` or a store to `y`.
fn view_kernel(
    dtype: &str,
    value: &str,
    (access, shape): (&str, &str),
    start: &str,
    store: bool,
) -> String {
    let a = access.replace('S', start);
    if store {
        let a = a.replace('R', "y");
        format!(
            "kernel k(ids: i32[4] in smem) -> y: {dtype}[2, 4, 64, 256]
grid (i in 4 arbitrary)
{{ {a} = {value}; }}"
        )
    } else {
        let a = a.replace('R', "x");
        format!(
            "kernel k(x: {dtype}[2, 4, 64, 256], ids: i32[4] in smem) -> y: f32[{shape}]
grid (i in 4 arbitrary)
{{ y[..] = {a} as f32; }}"
        )
    }
}

/// How libtpu takes `src` lowered without the checker's TPU rules: `None`
/// when it compiles, else the line of its message that names the error.
fn libtpu_refusal(plugin: &'static Plugin, src: &str, target: Target) -> Option<String> {
    let opts = Options {
        target,
        specialise: true,
        skip_tpu_rules: true,
        ..Options::default()
    };
    let module = match pk_lang::compile_source("k.pk", src, &opts) {
        Ok(m) => m,
        Err(f) => return Some(f.render(pk_lang::diag::RenderStyle::Plain)),
    };
    let k = &module.kernels[0];
    let lowered = match mosaic::lower(&module, k, &mosaic::Options::default()) {
        Ok(l) => l,
        Err(e) => return Some(format!("the Mosaic back end refuses it: {e}")),
    };
    let mut call = mosaic::custom_call(k, &lowered);
    call.vmem_limit_bytes = Some(target.vmem_bytes());
    let hlo = stablehlo::custom_call_module(&call).expect("wraps");
    match plugin.compile(tpu_target(target), &hlo) {
        Ok(_) => None,
        Err(e) => {
            let e = e.to_string();
            let line = e
                .lines()
                .find(|l| l.contains("Mosaic failed"))
                .unwrap_or(&e);
            Some(line.to_string())
        }
    }
}

/// How the checker and libtpu take each `(what, source)` case, each
/// compiled for one target taken in turn, so that every target sees every
/// kind of case while a corpus stays within a minute: how many both accept,
/// how many both refuse, and each disagreement. A case the checker refuses
/// and libtpu compiles is no disagreement when `stricter("{what} on
/// {target}")` holds (a known, listed case where pk is stricter).
fn agreement(
    plugin: &'static Plugin,
    cases: &[(String, String)],
    stricter: impl Fn(&str) -> bool,
) -> (usize, usize, Vec<String>) {
    let (mut accepted, mut refused, mut failures) = (0, 0, Vec::new());
    for (n, (what, src)) in cases.iter().enumerate() {
        let target = Target::ALL[(n + 1) % Target::ALL.len()];
        let opts = Options {
            target,
            specialise: true,
            ..Options::default()
        };
        let checker = pk_lang::compile_source("k.pk", src, &opts)
            .err()
            .map(|f| f.diags.iter().map(|d| d.code.code).collect::<Vec<_>>());
        let case = format!("{what} on {target}");
        match (checker, libtpu_refusal(plugin, src, target)) {
            (None, None) => accepted += 1,
            (Some(_), Some(_)) => refused += 1,
            (None, Some(e)) => failures.push(format!(
                "{case}: the checker accepts it, libtpu refuses it: {e}"
            )),
            (Some(_), None) if stricter(&case) => refused += 1,
            (Some(codes), None) => failures.push(format!(
                "{case}: the checker refuses it ({codes:?}), libtpu compiles it"
            )),
        }
    }
    (accepted, refused, failures)
}

/// The checker and libtpu agree on run-time positions in every dimension of
/// f32, bf16 and i8 VMEM refs, read and written: what the checker accepts
/// libtpu compiles, and what the checker refuses (PK0325 unproven
/// alignment, PK0317 narrow scalar reads) libtpu refuses too. Each case is
/// compiled for one target, taken in turn, so that every target sees every
/// dtype and window while the corpus stays within a minute.
#[test]
fn libtpu_agrees_on_run_time_indices() {
    let Some(plugin) = plugin() else { return };
    std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
    let mut cases: Vec<(String, String)> = Vec::new();
    for &(dtype, lo, step, off) in LOOP_INDICES {
        let what = format!("{dtype} loop {lo}..n[0] step {step} at c + {off}");
        cases.push((what, loop_kernel(dtype, lo, step, off)));
    }
    for (dtype, value) in INDEX_DTYPES {
        for window in INDEX_WINDOWS {
            for start in INDEX_STARTS {
                for store in [false, true] {
                    let what = format!(
                        "{} of {dtype} [{}] with S = {start}",
                        if store { "store" } else { "load" },
                        window.0
                    );
                    cases.push((what, index_kernel(dtype, value, *window, start, store)));
                }
            }
        }
    }
    for (dtype, value) in INDEX_DTYPES {
        for access in VIEW_WINDOWS {
            for start in INDEX_STARTS {
                for store in [false, true] {
                    let what = format!(
                        "{} of {dtype} {} with S = {start}",
                        if store { "store" } else { "load" },
                        access.0
                    );
                    cases.push((what, view_kernel(dtype, value, *access, start, store)));
                }
            }
        }
    }
    for (dtype, value) in INDEX_DTYPES {
        for access in STRIDED_WINDOWS {
            for start in ["i * 8", "i * 16", "i", "ids[i]", "multiple_of(ids[i], 8)"] {
                for store in [false, true] {
                    let what = format!(
                        "{} of {dtype} {} with S = {start}",
                        if store { "store" } else { "load" },
                        access.0
                    );
                    let src = view_kernel(dtype, value, *access, start, store)
                        .replace("[2, 4, 64, 256]", "[2, 64, 128]");
                    cases.push((what, src));
                }
            }
        }
    }
    let (accepted, refused, failures) = agreement(plugin, &cases, |c| STRICTER.contains(&c));
    assert!(
        failures.is_empty(),
        "{} of {} cases disagree:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // Both sides of the rule are exercised.
    assert!(
        accepted > 200 && refused > 200,
        "{accepted} accepted, {refused} refused"
    );
}

/// Dynamic grid bounds reach libtpu as Pallas passes them: one leading
/// `tensor<i32>` per dynamic axis, in grid order, before the prefetch
/// arrays, with the aliases shifted past them. The same module without the
/// leading operands, or with the alias unshifted, is refused on every
/// target, so what libtpu accepts is this layout and not any.
#[test]
fn libtpu_takes_dynamic_grid_bounds_ahead_of_the_operands() {
    let Some(plugin) = plugin() else { return };
    std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
    let src = "kernel bump<G = 8>(x: f32[2 * G * 8, 128] block [8, 128] at (u * G + t, 0))
    -> y: f32[2 * G * 8, 128] block [8, 128] at (u * G + t, 0) aliases x
prefetch (n: i32[2], m: i32[1])
grid (u in m[0] <= 2 parallel, t in n[1] <= G arbitrary)
{ y[..] = x[..] + (u as f32); }";
    let opts = Options {
        specialise: true,
        ..Options::default()
    };
    let module = pk_lang::compile_source("k.pk", src, &opts).expect("checks");
    let k = &module.kernels[0];
    let lowered = mosaic::lower(&module, k, &mosaic::Options::default()).expect("lowers");
    let call = mosaic::custom_call(k, &lowered);
    assert_eq!(call.dynamic_grid.len(), 2);
    let hlo = stablehlo::custom_call_module(&call).expect("wraps");
    assert!(hlo.contains("@tpu_custom_call(%bound0, %bound1, %arg0, %arg1, %arg2)"));
    let without = stablehlo::custom_call_module(&stablehlo::CustomCall {
        dynamic_grid: Vec::new(),
        has_communication: false,
        collective_id: None,
        spmd_partitions: None,
        ..call.clone()
    })
    .expect("wraps");
    let unshifted = hlo.replace("operand_index = 4", "operand_index = 2");
    assert_ne!(unshifted, hlo);
    for target in Target::ALL {
        let t = tpu_target(target);
        if let Err(e) = plugin.compile(t, &hlo) {
            panic!("{target:?}: libtpu refuses the dynamic grid: {e}");
        }
        let e = plugin.compile(t, &without).expect_err("no leading bounds");
        assert!(e.to_string().contains("window_params"), "{target:?}: {e}");
        assert!(
            plugin.compile(t, &unshifted).is_err(),
            "{target:?}: unshifted alias"
        );
    }
}

/// `(dtype, shape, view, view dtype, view shape)`: reshaped and bitcast
/// views of whole VMEM refs, the TPU's side of each rule (PK0353) and the
/// cases around it.
const REF_VIEWS: &[(&str, &str, &str, &str, &str)] = &[
    ("f32", "4, 32, 128", "reshape(128, 128)", "f32", "128, 128"),
    (
        "f32",
        "4, 32, 128",
        "reshape(2, 64, 128)",
        "f32",
        "2, 64, 128",
    ),
    (
        "f32",
        "4, 32, 128",
        "reshape(16, 8, 128)",
        "f32",
        "16, 8, 128",
    ),
    ("f32", "64, 128", "reshape(16, 4, 128)", "f32", "16, 4, 128"),
    ("f32", "32, 256", "reshape(64, 128)", "f32", "64, 128"),
    ("f32", "4, 4096", "reshape(4, 32, 128)", "f32", "4, 32, 128"),
    (
        "bf16",
        "4, 32, 128",
        "reshape(128, 128)",
        "bf16",
        "128, 128",
    ),
    (
        "bf16",
        "4, 32, 128",
        "reshape(8, 16, 128)",
        "bf16",
        "8, 16, 128",
    ),
    (
        "bf16",
        "4, 32, 128",
        "reshape(16, 8, 128)",
        "bf16",
        "16, 8, 128",
    ),
    ("bf16", "32, 256", "reshape(64, 128)", "bf16", "64, 128"),
    ("i8", "4, 64, 128", "reshape(256, 128)", "i8", "256, 128"),
    (
        "i8",
        "4, 64, 128",
        "reshape(8, 32, 128)",
        "i8",
        "8, 32, 128",
    ),
    (
        "i8",
        "4, 64, 128",
        "reshape(16, 16, 128)",
        "i8",
        "16, 16, 128",
    ),
    ("f32", "32, 128", "bitcast(i32)", "i32", "32, 128"),
    ("bf16", "32, 128", "bitcast(i16)", "i16", "32, 128"),
    ("bf16", "32, 128", "bitcast(i32)", "i32", "16, 128"),
    ("bf16", "16, 128", "bitcast(i32)", "i32", "8, 128"),
    ("bf16", "8, 128", "bitcast(i32)", "i32", "4, 128"),
    ("bf16", "2, 32, 256", "bitcast(f32)", "f32", "2, 16, 256"),
    ("i8", "64, 128", "bitcast(i32)", "i32", "16, 128"),
    ("i8", "32, 128", "bitcast(i32)", "i32", "8, 128"),
    ("i8", "64, 128", "bitcast(bf16)", "bf16", "32, 128"),
    ("i8", "16, 128", "bitcast(i32)", "i32", "4, 128"),
    ("i32", "16, 128", "bitcast(bf16)", "bf16", "32, 128"),
    ("i32", "8, 128", "bitcast(bf16)", "bf16", "16, 128"),
    ("i32", "8, 128", "bitcast(i8)", "i8", "32, 128"),
    ("i32", "4, 128", "bitcast(bf16)", "bf16", "8, 128"),
    ("f32", "24, 128", "bitcast(bf16)", "bf16", "48, 128"),
    ("f32", "8, 4, 128", "reshape(32, 128)", "f32", "32, 128"),
    ("f32", "6, 128", "reshape(2, 3, 128)", "f32", "2, 3, 128"),
    ("bf16", "24, 128", "reshape(3, 8, 128)", "bf16", "3, 8, 128"),
    ("bf16", "2, 12, 128", "reshape(24, 128)", "bf16", "24, 128"),
    ("f32", "12, 128", "bitcast(bf16)", "bf16", "24, 128"),
    ("i8", "8, 128", "bitcast(i32)", "i32", "2, 128"),
    ("bf16", "6, 128", "bitcast(i32)", "i32", "3, 128"),
    ("i8", "2, 24, 128", "bitcast(bf16)", "bf16", "2, 12, 128"),
];

/// Views the checker refuses (PK0353: the second-minor dimension changes
/// between sizes that are not whole tiles) although libtpu 0.0.51 compiles
/// them, on any target: splits of whole 32- and 16-bit refs into smaller
/// rows. Folds and splits of 8-bit refs, and of 16-bit refs between
/// partial tiles (`bf16[2, 12, 128]` as `[24, 128]`), are refused by both.
const REF_VIEW_STRICTER: &[&str] = &[
    "f32[64, 128].reshape(16, 4, 128)",
    "f32[8, 4, 128].reshape(32, 128)",
    "f32[6, 128].reshape(2, 3, 128)",
    "bf16[4, 32, 128].reshape(16, 8, 128)",
    "bf16[24, 128].reshape(3, 8, 128)",
];

/// A kernel that reads (or writes) all of `x` through the view, and one
/// that reads a run-time window of it.
fn ref_view_kernels(case: &(&str, &str, &str, &str, &str)) -> Vec<(String, String)> {
    let (dt, shape, view, vdt, vshape) = *case;
    let rank = vshape.split(',').count();
    let second = vshape.split(',').nth(rank - 2).unwrap().trim().to_string();
    let lead = ":, ".repeat(rank - 2);
    let rows = if vdt == "i8" { 32 } else { 8 };
    let mut out = vec![
        (
            format!("load of {dt}[{shape}].{view}"),
            format!("kernel k(x: {dt}[{shape}]) -> y: {vdt}[{vshape}] {{ y[..] = x.{view}[..]; }}"),
        ),
        (
            format!("store to {dt}[{shape}].{view}"),
            format!(
                "kernel k(x: {vdt}[{vshape}]) -> y: {dt}[{shape}] {{ let v = y.{view}; v[..] = x[..]; }}"
            ),
        ),
    ];
    if second.parse::<u64>().unwrap() >= 2 * rows {
        out.push((
            format!("run-time rows of {dt}[{shape}].{view}"),
            format!(
                "kernel k(x: {dt}[{shape}], n: i32[1] in smem) -> y: {vdt}[{vshape}]
{{ y[..] = x.{view}[..]; y[{lead}ds(multiple_of(n[0], {rows}), {rows}), :] = x.{view}[{lead}0..{rows}, :]; }}"
            ),
        ));
    }
    out
}

/// The checker and libtpu agree on reshaped and bitcast views of refs,
/// read, written and windowed at run time: what the checker accepts
/// libtpu compiles, and what it refuses (PK0353, or PK0253 where the view
/// itself is ill-formed) libtpu refuses too, each case on one target in
/// turn.
#[test]
fn libtpu_agrees_on_ref_reshapes_and_bitcasts() {
    let Some(plugin) = plugin() else { return };
    std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
    let cases: Vec<(String, String)> = REF_VIEWS.iter().flat_map(ref_view_kernels).collect();
    let (accepted, refused, failures) = agreement(plugin, &cases, |c| {
        let what = c.rsplit_once(" on ").map_or(c, |(w, _)| w);
        REF_VIEW_STRICTER.iter().any(|v| what.ends_with(v))
    });
    assert!(
        failures.is_empty(),
        "{} of {} cases disagree:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(
        accepted > 20 && refused > 10,
        "{accepted} accepted, {refused} refused"
    );
}

/// Lane windows of DMAs, `(HBM side, VMEM side)` over `[16, 256]` arrays
/// and a `[8, 256]` buffer: whole tile columns or not, constant or run-time.
const DMA_LANE_WINDOWS: &[(&str, &str)] = &[
    (":", ":"),
    ("0..128", "0..128"),
    ("128..256", "0..128"),
    ("0..256", "0..256"),
    ("0..64", "0..64"),
    ("64..192", "0..128"),
    ("0..128", "64..192"),
    ("ds(multiple_of(ids[i], 128), 128)", "128..256"),
    ("ds(ids[i], 128)", "0..128"),
    ("0..128", "ds(multiple_of(ids[i], 128), 128)"),
    ("ds(ids[i] * 128, 128)", "0..128"),
];

/// The checker and libtpu agree on the lane windows of DMAs (PK0354) for
/// f32, bf16 and i8, each case on one target in turn.
#[test]
fn libtpu_agrees_on_dma_lane_windows() {
    let Some(plugin) = plugin() else { return };
    std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
    let mut cases = Vec::new();
    for dtype in ["f32", "bf16", "i8"] {
        let rows = if dtype == "i8" { 32 } else { 16 };
        for (src, dst) in DMA_LANE_WINDOWS {
            let src_w = format!("x.at[0..{rows}, {src}]");
            let dst_w = format!("buf.at[:, {dst}]");
            let text = format!(
                "kernel k(x: {dtype}[{r2}, 256] in any, ids: i32[2] in smem) -> y: f32[{rows}, 256]
grid (i in 2 arbitrary)
scratch (buf: vmem {dtype}[{rows}, 256], sem: dma_sem[1])
{{
    buf[..] = zeros({dtype}, [{rows}, 256]);
    copy_start({src_w}, {dst_w}, sem.at[0]);
    copy_wait({src_w}, {dst_w}, sem.at[0]);
    y[..] = buf[..] as f32;
}}",
                r2 = 2 * rows
            );
            cases.push((format!("{dtype} DMA {src_w} -> {dst_w}"), text));
        }
    }
    let (accepted, refused, failures) = agreement(plugin, &cases, |_| false);
    assert!(
        failures.is_empty(),
        "{} of {} cases disagree:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(
        accepted >= 12 && refused >= 12,
        "{accepted} accepted, {refused} refused"
    );
}

/// `(file, kernel, fixed parameters, target, scoped VMEM limit in MiB)`.
type VmemKernel = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    Target,
    u64,
);

/// The VMEM corpus: library kernels whose tunable blocks reach a limit,
/// `(file, kernel, fixed parameters, target, scoped VMEM limit in MiB)`.
/// The limits are the ones people compile with: a chip's whole VMEM (what
/// `pkc build` passes; v4 and v5p here) and libtpu's default scoped limit
/// (16 MiB on v5e, 32 MiB on v6e and TPU7x: a kernel with a `vmem_limit`
/// of that size, or a Pallas kernel without `vmem_limit_bytes`).
const VMEM_CORPUS: &[VmemKernel] = &[
    ("matmul.pk", "matmul", &[("T", "bf16")], Target::V4, 16),
    ("matmul.pk", "matmul", &[("T", "f32")], Target::V5e, 16),
    ("flash.pk", "flash_attention", &[], Target::V5e, 16),
    (
        "qmatmul.pk",
        "qmatmul_w8a8",
        &[("M", "2048"), ("N", "4096"), ("K", "4096")],
        Target::V5p,
        64,
    ),
    (
        "qmatmul.pk",
        "qmatmul_w8a8",
        &[("M", "2048"), ("N", "4096"), ("K", "4096")],
        Target::V6e,
        32,
    ),
    ("gmm.pk", "gmm", &[], Target::Tpu7x, 32),
    ("gmm.pk", "tgmm", &[], Target::V4, 16),
];

/// Where the checker's VMEM estimate and libtpu disagree today, as
/// `(case, what libtpu does)`. Each entry is a known gap of the estimate
/// (see docs/language.md, VMEM and SMEM budgets), kept here so that the
/// corpus fails on any new disagreement and on a listed one that closes.
const VMEM_GAPS: &[(&str, &str)] = &[
    // Stricter than libtpu: an f32 output block that the matmul adds into
    // in place, and the operand copies, count more than libtpu keeps.
    // None is looser: pk accepts nothing in the corpus that libtpu refuses.
    (
        "matmul T=bf16 bk=1024 bn=1024 bm=1024 on v4 at 16 MiB",
        "compiles",
    ),
    (
        "matmul T=f32 bk=1024 bn=1024 bm=512 on v5e at 16 MiB",
        "compiles",
    ),
    (
        "flash_attention bk=1024 bq=2048 on v5e at 16 MiB",
        "compiles",
    ),
    ("gmm tn=2048 tk=2048 tm=256 on tpu7x at 32 MiB", "compiles"),
    // Stricter by design: pk counts an int8 matmul's whole i32 result,
    // which libtpu's register allocator spills only in part (1.7 MiB of
    // 16 here; all of it for a 1024 x 4096 result on v5p).
    (
        "qmatmul_w8a8 M=2048 N=4096 K=4096 bk=2048 bn=2048 bm=2048 on v5p at 64 MiB",
        "compiles",
    ),
    (
        "qmatmul_w8a8 M=2048 N=4096 K=4096 bk=1024 bn=1024 bm=2048 on v6e at 32 MiB",
        "compiles",
    ),
];

/// One configuration of the VMEM corpus: `-p` values and pk's estimate.
struct VmemCase {
    params: Vec<(String, String)>,
    estimate: u64,
}

fn kernel_options(
    kernel: &str,
    target: Target,
    params: &[(String, String)],
    skip: bool,
) -> Options {
    Options {
        target,
        specialise: true,
        kernel: Some(kernel.to_string()),
        params: params.to_vec(),
        skip_tpu_rules: skip,
        ..Options::default()
    }
}

/// Every configuration of `kernel`'s tuning space for `target`, with pk's
/// VMEM estimate (checked without the TPU rules, so that configurations
/// over budget are estimated too), on two threads.
fn vmem_cases(path: &Path, kernel: &str, fixed: &[(&str, &str)], target: Target) -> Vec<VmemCase> {
    let fixed: Vec<(String, String)> = fixed
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let m = pk_lang::Session::open(path)
        .and_then(|s| s.check(&kernel_options(kernel, target, &fixed, true)))
        .unwrap_or_else(|f| panic!("{kernel}: {}", f.render(pk_lang::diag::RenderStyle::Plain)));
    let axes: Vec<(String, Vec<i64>)> = m.kernels[0]
        .params
        .iter()
        .filter_map(|p| Some((p.name.clone(), p.candidates.clone()?)))
        .collect();
    let size: usize = axes.iter().map(|(_, c)| c.len()).product();
    let estimate = |i: usize| {
        let mut rest = i;
        let mut params = fixed.clone();
        for (name, c) in axes.iter().rev() {
            params.push((name.clone(), c[rest % c.len()].to_string()));
            rest /= c.len();
        }
        let module = pk_lang::Session::open(path)
            .and_then(|s| s.check(&kernel_options(kernel, target, &params, true)))
            .ok()?;
        let estimate = pk_lang::check::rules::vmem_estimate(&module.kernels[0], target);
        Some(VmemCase { params, estimate })
    };
    std::thread::scope(|s| {
        let odd = s.spawn(|| {
            (1..size)
                .step_by(2)
                .filter_map(estimate)
                .collect::<Vec<_>>()
        });
        let mut out: Vec<VmemCase> = (0..size).step_by(2).filter_map(estimate).collect();
        out.extend(odd.join().expect("estimates"));
        out
    })
}

/// The StableHLO module of a case under the scoped VMEM `limit`, when the
/// checker's only objection to it, if any, is the VMEM budget (with the
/// chip's whole VMEM, as `pkc build` checks).
fn vmem_case_module(
    path: &Path,
    kernel: &str,
    c: &VmemCase,
    target: Target,
    limit: u64,
) -> Option<String> {
    if let Err(f) = pk_lang::Session::open(path)
        .and_then(|s| s.check(&kernel_options(kernel, target, &c.params, false)))
    {
        if f.diags
            .iter()
            .any(|d| d.is_error() && d.code.code != "PK0306")
        {
            return None;
        }
    }
    let module = pk_lang::Session::open(path)
        .and_then(|s| s.check(&kernel_options(kernel, target, &c.params, true)))
        .ok()?;
    let k = &module.kernels[0];
    let lowered = mosaic::lower(&module, k, &mosaic::Options::default()).ok()?;
    let mut call = mosaic::custom_call(k, &lowered);
    call.vmem_limit_bytes = Some(limit);
    Some(stablehlo::custom_call_module(&call).expect("wraps"))
}

/// libtpu's VMEM use in a refusal ("Used 17.00M of 16.00M vmem"), in MiB.
fn libtpu_vmem_used(message: &str) -> Option<f64> {
    let at = message.find("Used ")? + 5;
    let rest = &message[at..];
    let end = rest.find(['M', 'K', 'G'])?;
    let v: f64 = rest[..end].parse().ok()?;
    Some(match &rest[end..end + 1] {
        "K" => v / 1024.0,
        "G" => v * 1024.0,
        _ => v,
    })
}

/// The checker's VMEM budget (PK0306) against libtpu's, on the library
/// kernels: for each case of the corpus, the configuration of the tuning
/// space that pk estimates nearest under the limit must compile, and the
/// nearest over it must be refused by libtpu for VMEM, except for the
/// listed gaps. A refusal prints libtpu's own count beside pk's.
#[test]
fn libtpu_agrees_with_the_vmem_budget_on_the_library_kernels() {
    let Some(plugin) = plugin() else { return };
    std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let mut found: Vec<(String, String)> = Vec::new();
    for &(file, kernel, fixed, target, limit_mib) in VMEM_CORPUS {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../kernels")
            .join(file);
        let limit = limit_mib << 20;
        let cases = vmem_cases(&path, kernel, fixed, target);
        let mut below: Vec<&VmemCase> = cases.iter().filter(|c| c.estimate <= limit).collect();
        below.sort_by_key(|c| std::cmp::Reverse(c.estimate));
        let mut above: Vec<&VmemCase> = cases.iter().filter(|c| c.estimate > limit).collect();
        above.sort_by_key(|c| c.estimate);
        for (fits, side) in [(true, below), (false, above)] {
            let Some((c, hlo)) = side
                .into_iter()
                .find_map(|c| Some((c, vmem_case_module(&path, kernel, c, target, limit)?)))
            else {
                panic!(
                    "{kernel} on {target}: no configuration {} {limit_mib} MiB",
                    if fits { "within" } else { "over" }
                );
            };
            let p: Vec<String> = c.params.iter().map(|(a, b)| format!("{a}={b}")).collect();
            let case = format!("{kernel} {} on {target} at {limit_mib} MiB", p.join(" "));
            let verdict = match plugin.compile(tpu_target(target), &hlo) {
                Ok(_) => "compiles".to_string(),
                Err(e) => {
                    let e = e.to_string();
                    match libtpu_vmem_used(&e) {
                        Some(used) => format!("refuses, using {used:.2} MiB"),
                        None if e.contains("vmem") => "refuses for VMEM".to_string(),
                        None => panic!("{case}: libtpu refuses it, but not for VMEM: {e}"),
                    }
                }
            };
            eprintln!(
                "{case}: pk counts {:.2} MiB; libtpu {verdict}",
                mib(c.estimate)
            );
            if fits != (verdict == "compiles") {
                found.push((case, verdict));
            }
        }
    }
    let listed: Vec<(String, String)> = VMEM_GAPS
        .iter()
        .map(|(c, v)| (c.to_string(), v.to_string()))
        .collect();
    let new: Vec<String> = found
        .iter()
        .filter(|f| !listed.contains(f))
        .map(|(c, v)| format!("    (\"{c}\", \"{v}\"),"))
        .collect();
    let closed: Vec<&(String, String)> = listed.iter().filter(|l| !found.contains(l)).collect();
    assert!(
        new.is_empty() && closed.is_empty(),
        "disagreements not in VMEM_GAPS:\n{}\nlisted gaps that no longer hold: {closed:?}",
        new.join("\n")
    );
}

/// The estimate of an int8 matmul, by hand: `qmatmul_w8a8` with blocks
/// bm = 1024, bk = 2048, bn = 4096 and bf16 output. Double-buffered
/// blocks: x i8 [1024, 2048] 2 MiB, x_scale f32 [1024, 1] padded to 128
/// lanes 512 KiB, w i8 [2048, 4096] 8 MiB, w_scale f32 [1, 4096] padded to
/// 8 rows 128 KiB, out bf16 [1024, 4096] 8 MiB: 2 x 18.625 MiB = 37.25 MiB;
/// the i32 accumulator 16 MiB; the matmul's i32 result 16 MiB (libtpu
/// spills 15.95 MiB of it on v5p) and no operand copies; 64 KiB more on
/// v5p for any matmul.
#[test]
fn the_vmem_estimate_of_an_int8_matmul_counts_its_result_and_no_copies() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/qmatmul.pk");
    let params: Vec<(String, String)> = [
        ("M", "2048"),
        ("N", "4096"),
        ("K", "4096"),
        ("bm", "1024"),
        ("bk", "2048"),
        ("bn", "4096"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    let mib = 1u64 << 20;
    let blocks = 2 * (2 * mib + mib / 2 + 8 * mib + mib / 8 + 8 * mib) + 16 * mib;
    for (target, fixed) in [(Target::V5p, 64 << 10), (Target::V6e, 0)] {
        let m = pk_lang::Session::open(&path)
            .and_then(|s| s.check(&kernel_options("qmatmul_w8a8", target, &params, true)))
            .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
        assert_eq!(
            pk_lang::check::rules::vmem_estimate(&m.kernels[0], target),
            blocks + 16 * mib + fixed,
            "{target}"
        );
    }
}

/// A linear layer whose f32 weight block (`[2048 s, 1024]`, 8 s MiB)
/// alternates between two halves of the weight while f32 rows stream
/// through: with `buffered(nw)` at 1 its blocks take (8 + 2 x 2 + 2 x 1) s
/// = 14 s MiB, at 2 they take 22 s MiB, against a scoped limit of 16 s MiB.
/// The weight's block index changes (`i % 2`): libtpu keeps a block whose
/// index never changes in one buffer by itself, whatever its pipeline mode.
fn resident_weight_kernel(nw: u32, s: u64) -> String {
    format!(
        "kernel resident<nw = {nw}>(
    x: f32[1024, {k}] block [256, {k}] at (i, 0),
    w: f32[{k2}, 1024] block [{k}, 1024] at (i % 2, 0) buffered(nw),
) -> y: f32[1024, 1024] block [256, 1024] at (i, 0)
grid (i in 4 parallel)
vmem_limit {s} * 16 * 1024 * 1024
{{
    y[..] = dot(x[..], w[..]);
}}
",
        k = 2048 * s,
        k2 = 4096 * s
    )
}

/// libtpu keeps one buffer for a block whose window params say
/// `#tpu.pipeline_mode<synchronous>`, on every generation: the kernel with
/// a single-buffered 8 MiB weight block compiles within 16 MiB of scoped
/// VMEM, and the same kernel with two buffers is refused for VMEM by
/// libtpu and by the checker (PK0306). TPU7x takes no scoped limit under
/// 32 MiB, so its case is twice the size. So the budget the checker counts
/// for `buffered(1)` is the one libtpu allocates.
#[test]
fn libtpu_single_buffers_a_block_marked_buffered_1_on_every_generation() {
    let Some(plugin) = plugin() else { return };
    std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
    let compile = |src: &str,
                   target: Target,
                   limit: u64|
     -> (Option<Vec<&'static str>>, Result<(), String>) {
        let checked = Options {
            target,
            specialise: true,
            ..Options::default()
        };
        let codes = pk_lang::compile_source("k.pk", src, &checked)
            .err()
            .map(|f| f.diags.iter().map(|d| d.code.code).collect());
        let opts = Options {
            skip_tpu_rules: true,
            ..checked
        };
        let module = pk_lang::compile_source("k.pk", src, &opts).expect("checks without TPU rules");
        let k = &module.kernels[0];
        let lowered = mosaic::lower(&module, k, &mosaic::Options::default()).expect("lowers");
        let mut call = mosaic::custom_call(k, &lowered);
        call.vmem_limit_bytes = Some(limit);
        let hlo = stablehlo::custom_call_module(&call).expect("wraps");
        (
            codes,
            plugin
                .compile(tpu_target(target), &hlo)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        )
    };
    let mut failures = Vec::new();
    for target in Target::ALL {
        let s = if target == Target::Tpu7x { 2 } else { 1 };
        let limit = s * (16 << 20);
        let one = resident_weight_kernel(1, s);
        let two = resident_weight_kernel(2, s);
        match compile(&one, target, limit) {
            (None, Ok(())) => {}
            (codes, r) => failures.push(format!(
                "{target}, one buffer: checker {codes:?}, libtpu {:?}",
                r.err()
            )),
        }
        match compile(&two, target, limit) {
            (Some(codes), Err(e))
                if codes == ["PK0306"]
                    && (libtpu_vmem_used(&e).is_some()
                        || e.contains("Ran out of memory in memory space vmem")) => {}
            (codes, r) => failures.push(format!(
                "{target}, two buffers: checker {codes:?}, libtpu {:?}",
                r.err()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Row windows of remote copies over `[4 * R, 256]` arrays, `R` the dtype's
/// rows per tile (8 for f32, 16 for bf16, 32 for i8): `(source rows,
/// destination rows, lanes)`, whole tiles or not, constant or run-time.
const REMOTE_WINDOWS: &[(&str, &str, &str)] = &[
    (":", ":", ":"),
    ("0..R", "0..R", ":"),
    ("R..3 * R", "0..2 * R", ":"),
    ("0..R / 2", "0..R / 2", ":"),
    ("R / 2..R", "R / 2..R", ":"),
    ("0..R", "R / 2..3 * R / 2", ":"),
    (":", ":", "0..128"),
    (":", ":", "128..256"),
    (":", ":", "0..64"),
    (":", ":", "64..192"),
    ("ds((d % 2) * R, R)", "ds((d % 2) * R, R)", ":"),
    ("ds(d % 2, R)", "0..R", ":"),
    ("ds(multiple_of(d * 2, R), R)", "0..R", ":"),
    ("0..R", "ds((d % 4) * (R / 2), R)", ":"),
];

/// The checker and libtpu agree on the windows of remote copies (PK0361:
/// whole tiles on both sides) in HBM and in VMEM, for f32, bf16 and i8, as
/// SPMD programs of a 4-device mesh, each case on one target in turn; pk is
/// stricter only on windows of half a tile of rows.
#[test]
fn libtpu_agrees_on_remote_copy_windows() {
    let Some(plugin) = plugin() else { return };
    std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
    let mut cases = Vec::new();
    for (dtype, rows) in [("f32", 8), ("bf16", 16), ("i8", 32)] {
        for space in ["any", "vmem"] {
            for (src, dst, lanes) in REMOTE_WINDOWS {
                let r = rows.to_string();
                let s = format!("x.at[{}, {lanes}]", src.replace('R', &r));
                let d = format!("y.at[{}, {lanes}]", dst.replace('R', &r));
                let text = format!(
                    "kernel k<n = 4>(x: {dtype}[{a}, 256] in {space}) -> y: {dtype}[{a}, 256] in {space}
mesh (d in n)
scratch (send: dma_sem, recv: dma_sem)
{{
    let peer = device_id((d + 1) % n);
    remote_copy_start({s}, {d}, send, recv, peer);
    remote_wait_send({s}, {d}, send, recv, peer);
    remote_wait_recv({s}, {d}, send, recv, peer);
}}",
                    a = 4 * rows
                );
                cases.push((format!("{dtype} {space} remote copy {s} -> {d}"), text));
            }
        }
    }
    // Windows of half a sublane tile of rows: libtpu compiles some of them
    // (constant starts among others); pk asks for whole tiles on both sides
    // of every remote copy (PK0361), so that a window means the same bytes
    // on every device whatever layout libtpu picks.
    let (accepted, refused, failures) = agreement(plugin, &cases, |c| c.contains(" / 2"));
    assert!(
        failures.is_empty(),
        "{} of {} cases disagree:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(
        accepted >= 20 && refused >= 20,
        "{accepted} accepted, {refused} refused"
    );
}

/// A kernel of the generated VMEM corpus: file, kernel, fixed `-p` values.
type GeneratedKernel = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// The generated VMEM corpus: `(file, kernel, fixed -p values)` over the
/// library's kernels that tune their blocks on one device, each taken on
/// every target at every scoped limit of [`corpus_limits`].
const VMEM_GENERATED: &[GeneratedKernel] = &[
    ("matmul.pk", "matmul", &[("T", "bf16")]),
    ("matmul.pk", "matmul", &[("T", "f32")]),
    ("flash.pk", "flash_attention", &[]),
    ("flash.pk", "flash_attention_bwd_dq", &[]),
    ("flash.pk", "flash_attention_bwd_dkv", &[]),
    (
        "qmatmul.pk",
        "qmatmul_w8a8",
        &[("M", "2048"), ("N", "4096"), ("K", "4096")],
    ),
    ("gmm.pk", "gmm", &[]),
    ("gmm.pk", "tgmm", &[]),
    ("paged_attention.pk", "paged_attention", &[]),
    ("ragged_paged_attention.pk", "ragged_paged_attention", &[]),
];

/// Configurations of the generated corpus taken on each side of a limit:
/// the nearest ones whose estimate lies within a factor of 2 of it.
const VMEM_PER_SIDE: usize = 4;

/// The scoped VMEM limits a target is taken at: libtpu's default scoped
/// limits (16 MiB, 32 MiB) and the chip's whole VMEM, those the chip has.
fn corpus_limits(target: Target) -> Vec<u64> {
    let mut l: Vec<u64> = [16u64 << 20, 32 << 20, target.vmem_bytes()]
        .into_iter()
        .filter(|&l| l <= target.vmem_bytes())
        .collect();
    l.dedup();
    l
}

/// One case of the generated corpus.
struct GeneratedCase<'a> {
    file: &'static str,
    kernel: &'static str,
    target: Target,
    limit: u64,
    case: &'a VmemCase,
    /// Blocks and scratch alone (the estimate less the matmul's copies and
    /// result), a block fetched once over the grid counted once.
    buffers: u64,
}

/// The checker's VMEM budget (PK0306) against libtpu's over a corpus
/// generated from the tuning spaces of the library's kernels: per kernel,
/// target and scoped limit, the [`VMEM_PER_SIDE`] configurations nearest
/// the limit on each side (within a factor of 2 of it). What pk accepts
/// must compile within the limit (never looser); what pk refuses must be
/// refused by libtpu for VMEM, unless pk is stricter only by what
/// docs/language.md §9.6 lists as deliberate: the matmul's operand copies
/// and result (the measured worst case), and the second buffer of a block
/// fetched once over the grid (one step, or an index that never changes);
/// i.e. the blocks (those fetched once, once) and scratch alone fit the
/// limit. `PK_VMEM_CORPUS=full` compiles every case,
/// `PK_VMEM_CORPUS=N` one in N (on each side of the limit); without it a
/// deterministic sample of one case in 30 is compiled (CI). Counts are
/// printed.
#[test]
fn libtpu_agrees_with_the_vmem_budget_on_a_generated_corpus() {
    let Some(plugin) = plugin() else { return };
    std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
    let stride: usize = match std::env::var("PK_VMEM_CORPUS").as_deref() {
        Ok("full") => 1,
        Ok(n) => n.parse().expect("PK_VMEM_CORPUS is `full` or a number"),
        Err(_) => 30,
    };
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let spaces: Vec<(&'static str, &'static str, Target, Vec<VmemCase>)> = VMEM_GENERATED
        .iter()
        .flat_map(|&(file, kernel, fixed)| {
            Target::ALL.iter().map(move |&t| (file, kernel, fixed, t))
        })
        .map(|(file, kernel, fixed, target)| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../kernels")
                .join(file);
            (
                file,
                kernel,
                target,
                vmem_cases(&path, kernel, fixed, target),
            )
        })
        .collect();
    let mut corpus: Vec<GeneratedCase> = Vec::new();
    for (file, kernel, target, cases) in &spaces {
        for limit in corpus_limits(*target) {
            let near = |c: &&VmemCase| c.estimate * 2 > limit && c.estimate <= 2 * limit;
            let mut below: Vec<&VmemCase> = cases
                .iter()
                .filter(near)
                .filter(|c| c.estimate <= limit)
                .collect();
            below.sort_by_key(|c| std::cmp::Reverse(c.estimate));
            let mut above: Vec<&VmemCase> = cases
                .iter()
                .filter(near)
                .filter(|c| c.estimate > limit)
                .collect();
            above.sort_by_key(|c| c.estimate);
            for c in below
                .into_iter()
                .take(VMEM_PER_SIDE)
                .chain(above.into_iter().take(VMEM_PER_SIDE))
            {
                let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../kernels")
                    .join(file);
                let m = pk_lang::Session::open(&path)
                    .and_then(|s| s.check(&kernel_options(kernel, *target, &c.params, true)))
                    .expect("estimated before");
                let k = &m.kernels[0];
                let steps = k.grid_steps().unwrap_or(1);
                // A block fetched once over the whole grid (one step, or an
                // index that never changes) needs no second buffer.
                let buffers = pk_lang::check::rules::vmem_report(k)
                    .iter()
                    .map(|(name, b)| {
                        let once = k.operands.iter().any(|o| {
                            &o.name == name
                                && o.block.as_ref().is_some_and(|blk| {
                                    pk_lang::ir::cost::fetches(k, &blk.index_map, steps) == 1
                                })
                        });
                        if once {
                            b / 2
                        } else {
                            *b
                        }
                    })
                    .sum();
                corpus.push(GeneratedCase {
                    file,
                    kernel,
                    target: *target,
                    limit,
                    case: c,
                    buffers,
                });
            }
        }
    }
    let total = corpus.len();
    let (mut agree_fit, mut agree_over, mut stricter, mut skipped) = (0, 0, 0, 0);
    let mut failures: Vec<String> = Vec::new();
    // The sample is taken on each side of the limit apart, so that both
    // are in it.
    let (mut nth_fit, mut nth_over) = (0, 0);
    for g in &corpus {
        let nth = if g.case.estimate <= g.limit {
            &mut nth_fit
        } else {
            &mut nth_over
        };
        *nth += 1;
        if *nth % stride != stride / 2 {
            continue;
        }
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../kernels")
            .join(g.file);
        let p: Vec<String> = g
            .case
            .params
            .iter()
            .map(|(a, b)| format!("{a}={b}"))
            .collect();
        let case = format!(
            "{} {} on {} at {} MiB",
            g.kernel,
            p.join(" "),
            g.target,
            mib(g.limit)
        );
        let Some(hlo) = vmem_case_module(&path, g.kernel, g.case, g.target, g.limit) else {
            // The checker refuses it for another reason than VMEM.
            skipped += 1;
            continue;
        };
        let fits = g.case.estimate <= g.limit;
        let verdict = match plugin.compile(tpu_target(g.target), &hlo) {
            Ok(_) => None,
            Err(e) => {
                let e = e.to_string();
                match libtpu_vmem_used(&e) {
                    Some(used) => Some(format!("refuses, using {used:.2} MiB")),
                    None if e.contains("vmem") => Some("refuses for VMEM".to_string()),
                    None => Some(format!(
                        "refuses, not for VMEM: {}",
                        e.lines().find(|l| l.contains("Mosaic")).unwrap_or(&e)
                    )),
                }
            }
        };
        eprintln!(
            "{case}: pk counts {:.2} MiB ({:.2} MiB of blocks and scratch); libtpu {}",
            mib(g.case.estimate),
            mib(g.buffers),
            verdict.as_deref().unwrap_or("compiles")
        );
        match (fits, verdict) {
            (true, None) => agree_fit += 1,
            (true, Some(v)) => {
                failures.push(format!("{case}: pk accepts it, libtpu {v}"));
            }
            (false, Some(v)) if v.starts_with("refuses, not for VMEM") => {
                failures.push(format!("{case}: pk refuses it for VMEM, libtpu {v}"));
            }
            (false, Some(_)) => agree_over += 1,
            (false, None) if g.buffers <= g.limit => stricter += 1,
            (false, None) => failures.push(format!(
                "{case}: pk refuses it and libtpu compiles it, and its blocks and scratch \
                 alone ({:.2} MiB, a block fetched once counted once) exceed the limit: not a \
                 listed stricter case",
                mib(g.buffers)
            )),
        }
    }
    let run = agree_fit + agree_over + stricter + failures.len();
    eprintln!(
        "generated VMEM corpus (one case in {stride}): {run} of {total} cases compiled, \
         {skipped} skipped (refused by another rule): {agree_fit} fit and compile, \
         {agree_over} over and refused, {stricter} stricter as listed, {} disagreements",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {run} cases disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        agree_fit > 0 && agree_over > 0,
        "both sides of the limit are exercised: {agree_fit} fit, {agree_over} over"
    );
}

//! Acceptance tests against the real TPU compiler: hand-written stable-Mosaic
//! kernels, wrapped into StableHLO by `pk_lowering::stablehlo`, compiled
//! ahead of time by libtpu for every TPU generation.
//!
//! These need libtpu (`bash .ci/setup-libtpu`). Without it they print a
//! notice and pass, unless `CI=true`, where a missing libtpu fails them.

mod common;

use std::time::Instant;

use common::plugin;
use pk_lowering::stablehlo::{self, CostEstimate, CustomCall, ElemType, TensorType};
use pk_runtime::pjrt::{Client, PjrtError, Plugin, TpuTarget};

const VMEM_F32_BLOCK: &str = "memref<128x256xf32, #tpu.memory_space<vmem>>";

/// `o = x + y` over f32[256, 512] in (128, 256) blocks on a 2x2 parallel
/// grid, the sum stored into each of `outputs` results: the shape of a Pallas
/// elementwise kernel, in serialized stable Mosaic (version 11).
fn add_kernel_mosaic(outputs: usize) -> String {
    let m = VMEM_F32_BLOCK;
    let v = "vector<128x256xf32>";
    let refs = 2 + outputs;
    let transform = |n: usize| {
        format!(
            r#"  "stable_mosaic.func.func"() ({{
  ^bb0(%arg0: i32, %arg1: i32):
    "stable_mosaic.func.return"(%arg0, %arg1) : (i32, i32) -> ()
  }}) {{function_type = (i32, i32) -> (i32, i32), sym_name = "transform_{n}"}} : () -> ()
"#
        )
    };
    let window = |n: usize| {
        format!("{{transform_indices = @transform_{n}, window_bounds = array<i64: 128, 256>}}")
    };
    let block_args: Vec<String> = (0..refs).map(|i| format!("%arg{}: {m}", i + 2)).collect();
    let stores: String = (0..outputs)
        .map(|k| {
            format!(
                "    \"stable_mosaic.tpu.vector_store\"(%3, %arg{}, %0, %0) {{add = false, \
                 operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}} : \
                 ({v}, {m}, index, index) -> ()\n",
                4 + k
            )
        })
        .collect();
    let block_types = vec![m; refs].join(", ");
    let windows: Vec<String> = (0..refs).map(window).collect();
    let transforms: String = (0..refs).map(transform).collect();
    format!(
        r#"module attributes {{stable_mosaic.version = 11 : i64}} {{
  "stable_mosaic.func.func"() ({{
  ^bb0(%arg0: i32, %arg1: i32, {args}):
    %0 = "stable_mosaic.arith.constant"() {{value = 0 : index}} : () -> index
    %1 = "stable_mosaic.vector.load"(%arg2, %0, %0) : ({m}, index, index) -> {v}
    %2 = "stable_mosaic.vector.load"(%arg3, %0, %0) : ({m}, index, index) -> {v}
    %3 = "stable_mosaic.arith.addf"(%1, %2) {{fastmath = #arith.fastmath<none>}} : ({v}, {v}) -> {v}
{stores}    "stable_mosaic.func.return"() : () -> ()
  }}) {{dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>], function_type = (i32, i32, {block_types}) -> (), iteration_bounds = array<i64: 2, 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "add_kernel", tpu.core_type = #tpu.core_type<tc>, window_params = [{windows}]}} : () -> ()
{transforms}}}
"#,
        args = block_args.join(", "),
        windows = windows.join(", "),
    )
}

/// A bf16 matmul whose accumulator is bf16, which the TPU's MXU cannot do;
/// the matmul carries a .pk source location.
fn bf16_accumulator_mosaic() -> String {
    let m = "memref<128x128xbf16, #tpu.memory_space<vmem>>";
    let v = "vector<128x128xbf16>";
    let transform = |n: usize| {
        format!(
            r#"  "stable_mosaic.func.func"() ({{
  ^bb0(%arg0: i32):
    %0 = "stable_mosaic.arith.constant"() {{value = 0 : i32}} : () -> i32
    "stable_mosaic.func.return"(%0, %0) : (i32, i32) -> ()
  }}) {{function_type = (i32) -> (i32, i32), sym_name = "transform_{n}"}} : () -> ()
"#
        )
    };
    let window = |n: usize| {
        format!("{{transform_indices = @transform_{n}, window_bounds = array<i64: 128, 128>}}")
    };
    format!(
        r#"module attributes {{stable_mosaic.version = 11 : i64}} {{
  "stable_mosaic.func.func"() ({{
  ^bb0(%arg0: i32, %arg1: {m}, %arg2: {m}, %arg3: {m}):
    %0 = "stable_mosaic.arith.constant"() {{value = 0 : index}} : () -> index
    %1 = "stable_mosaic.arith.constant"() {{value = dense<0.000000e+00> : {v}}} : () -> {v}
    %2 = "stable_mosaic.vector.load"(%arg1, %0, %0) : ({m}, index, index) -> {v}
    %3 = "stable_mosaic.vector.load"(%arg2, %0, %0) : ({m}, index, index) -> {v}
    %4 = "stable_mosaic.tpu.matmul"(%2, %3, %1) {{dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, transpose_lhs = false, transpose_rhs = false}} : ({v}, {v}, {v}) -> {v} loc("bad_matmul.pk":7:12)
    "stable_mosaic.tpu.vector_store"(%4, %arg3, %0, %0) {{add = false, operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}} : ({v}, {m}, index, index) -> ()
    "stable_mosaic.func.return"() : () -> ()
  }}) {{dimension_semantics = [#tpu.dimension_semantics<parallel>], function_type = (i32, {m}, {m}, {m}) -> (), iteration_bounds = array<i64: 1>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, sym_name = "bad_matmul", tpu.core_type = #tpu.core_type<tc>, window_params = [{}, {}, {}]}} : () -> ()
{}{}{}}}
"#,
        window(0),
        window(1),
        window(2),
        transform(0),
        transform(1),
        transform(2),
    )
}

fn add_call(outputs: usize) -> CustomCall {
    let t = TensorType::new([256, 512], ElemType::F32);
    CustomCall {
        kernel_name: "add_kernel".to_string(),
        mosaic_text: add_kernel_mosaic(outputs),
        operands: vec![t.clone(), t.clone()],
        results: vec![t; outputs],
        cost: None,
        vmem_limit_bytes: None,
        aliases: vec![],
        metadata_json: String::new(),
        has_side_effect: false,
        dynamic_grid: Vec::new(),
        has_communication: false,
        collective_id: None,
        spmd_partitions: None,
    }
}

fn module(call: &CustomCall) -> String {
    match stablehlo::custom_call_module(call) {
        Ok(text) => text,
        Err(e) => panic!("wrapping {}: {e}", call.kernel_name),
    }
}

#[test]
fn add_kernel_compiles_for_every_target() {
    let Some(plugin) = plugin() else { return };
    eprintln!(
        "libtpu {} (PJRT C API {}) loaded in {:?}",
        plugin.path().display(),
        plugin.api_version(),
        plugin.load_time()
    );
    assert_eq!(plugin.api_version().major, 0);
    assert!(plugin.api_version().minor >= 54, "{}", plugin.api_version());
    let attributes = plugin.attributes().unwrap_or_else(|e| panic!("{e}"));
    eprintln!("plugin attributes: {attributes:?}");
    assert!(
        attributes.iter().any(|(name, _)| name == "xla_version"),
        "{attributes:?}"
    );
    let module = module(&add_call(1));
    for &target in TpuTarget::all() {
        let started = Instant::now();
        let topology = match plugin.topology(target) {
            Ok(t) => t,
            Err(e) => panic!("{target}: {e}"),
        };
        let topology_time = started.elapsed();
        let kind = topology
            .device_kind()
            .unwrap_or_else(|e| panic!("{target}: {e}"));
        let expected_kind = match target {
            TpuTarget::V4 => "TPU v4",
            TpuTarget::V5e => "TPU v5 lite",
            TpuTarget::V5p => "TPU v5",
            TpuTarget::V6e => "TPU v6 lite",
            TpuTarget::Tpu7x => "TPU7x",
        };
        assert_eq!(kind, expected_kind);
        let kernel = match topology.compile(&module) {
            Ok(k) => k,
            Err(e) => panic!("{target}: {e}"),
        };
        eprintln!(
            "{target} ({kind}): topology {topology_time:?}, compile {:?}, {} code bytes, \
             {} serialized bytes, memory stats {:?}, cost analysis {:?}",
            kernel.compile_time,
            kernel.generated_code_bytes,
            kernel.serialized_executable.len(),
            kernel.memory_stats,
            kernel.cost_analysis,
        );
        assert_eq!(kernel.target, target);
        assert!(!kernel.serialized_executable.is_empty(), "{target}");
        // An elementwise add over four blocks is a few hundred instructions
        // to a few tens of KiB of TPU code, never nothing and never MiBs.
        assert!(
            (512..4 << 20).contains(&kernel.generated_code_bytes),
            "{target}: {} code bytes",
            kernel.generated_code_bytes
        );
    }
}

#[test]
fn bf16_matmul_accumulator_is_rejected_with_its_location() {
    let Some(plugin) = plugin() else { return };
    let t = TensorType::new([128, 128], ElemType::Bf16);
    let module = module(&CustomCall {
        kernel_name: "bad_matmul".to_string(),
        mosaic_text: bf16_accumulator_mosaic(),
        operands: vec![t.clone(), t.clone()],
        results: vec![t],
        ..add_call(1)
    });
    let err = plugin.compile(TpuTarget::V5e, &module).err();
    let Some(PjrtError::Compile {
        target,
        status,
        message,
        locations,
    }) = err
    else {
        panic!("expected a compile error, got {err:?}");
    };
    eprintln!("status {status}, locations {locations:?}, message:\n{message}");
    assert_eq!(target, "v5e");
    assert!(
        message.contains("Expected matmul acc to be 32-bit"),
        "{message}"
    );
    assert_eq!(locations, [("bad_matmul.pk".to_string(), 7, 12)]);
}

/// Everything the wrapper can add around a kernel (two results, an
/// operand updated in place, a cost estimate, a VMEM limit, metadata, a
/// side effect) is accepted by libtpu.
#[test]
fn custom_call_options_are_accepted_by_libtpu() {
    let Some(plugin) = plugin() else { return };
    let call = CustomCall {
        cost: Some(CostEstimate {
            flops: 256 * 512,
            transcendentals: 0,
            bytes_accessed: 4 * 256 * 512 * 4,
            remote_bytes_transferred: 0,
        }),
        vmem_limit_bytes: Some(32 << 20),
        aliases: vec![(0, 1)],
        metadata_json: r#"{"source": "add.pk", "note": "\"quoted\""}"#.to_string(),
        has_side_effect: true,
        dynamic_grid: Vec::new(),
        has_communication: false,
        collective_id: None,
        spmd_partitions: None,
        ..add_call(2)
    };
    let kernel = match plugin.compile(TpuTarget::V6e, &module(&call)) {
        Ok(k) => k,
        Err(e) => panic!("{e}"),
    };
    let stats = kernel
        .memory_stats
        .expect("libtpu 0.0.51 reports memory stats");
    eprintln!("two results, aliased: {stats:?}");
    // Two f32[256, 512] in and two out (plus the tuple's index table). The
    // alias is inside the module: `main` does not donate its argument, so XLA
    // keeps it and no bytes are aliased at the executable's boundary.
    let block = 256 * 512 * 4;
    assert_eq!(stats.argument_bytes, 2 * block);
    assert!(
        (2 * block..2 * block + 1024).contains(&stats.output_bytes),
        "{stats:?}"
    );
    assert_eq!(stats.alias_bytes, 0);
}

#[test]
fn a_second_libtpu_path_is_refused() {
    let Some(plugin) = plugin() else { return };
    let other = std::env::temp_dir().join("pk-not-libtpu.so");
    std::fs::write(&other, b"not a library").expect("temp file");
    let err = Plugin::load(Some(&other)).err();
    let _ = std::fs::remove_file(&other);
    let Some(PjrtError::PluginAlreadyLoaded { loaded, .. }) = err else {
        panic!("expected PluginAlreadyLoaded, got {err:?}");
    };
    assert_eq!(loaded, plugin.path().display().to_string());
    // The same file under the same path is the same plugin.
    assert!(Plugin::load(Some(plugin.path())).is_ok());
}

#[test]
fn client_without_a_tpu_is_a_clear_error() {
    let Some(plugin) = plugin() else { return };
    if std::path::Path::new("/dev/accel0").exists() || std::path::Path::new("/dev/vfio/0").exists()
    {
        eprintln!("notice: this host has a TPU; the no-TPU error cannot be observed");
        return;
    }
    let started = Instant::now();
    let err = Client::new(plugin).err();
    eprintln!("Client::new took {:?}: {err:?}", started.elapsed());
    let Some(e @ PjrtError::NoTpuDevice { .. }) = err else {
        panic!("expected NoTpuDevice, got {err:?}");
    };
    assert_eq!(
        e.to_string(),
        "no TPU device attached; AOT compile works, execution needs a TPU host"
    );
}

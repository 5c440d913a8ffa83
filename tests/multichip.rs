//! Kernels across devices: the mesh, device ids, remote copies and
//! semaphores, checked and lowered to Mosaic (values derived by hand from
//! the row-major numbering of mesh devices that JAX uses).

mod common;

use pk_lang::ir::{Literal, OpKind, RemotePhase};
use pk_lang::{compile_source, Options};

fn module(src: &str) -> pk_lang::ir::Module {
    let opts = Options {
        specialise: true,
        ..Options::default()
    };
    match compile_source("t.pk", src, &opts) {
        Ok(m) => m,
        Err(f) => panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)),
    }
}

fn kernel(src: &str) -> pk_lang::ir::Kernel {
    module(src).kernels.into_iter().next().expect("one kernel")
}

const GRID2X4: &str = "
kernel k(x: f32[8, 128] in any) -> y: f32[8, 128] in any
mesh (r in 2, c in 4)
scratch (s: sem[2], send: dma_sem, recv: dma_sem)
{
    sem_signal(s[0], 3, device_id(1, 2));
    sem_wait(s[1], mesh_size(1));
    remote_copy_start(x, y, send, recv, device_id((r + 1) % 2, c));
    remote_wait_send(x, y, send, recv, device_id((r + 1) % 2, c));
    remote_wait_recv(x, y, send, recv, device_id((r + 1) % 2, c));
}
";

/// The constant value `v` is defined as, if it is a constant.
fn constant(k: &pk_lang::ir::Kernel, v: pk_lang::ir::Value) -> Option<i64> {
    k.body.ops.iter().find_map(|(_, o)| match o.kind {
        OpKind::Const(Literal::Int(c)) if o.results.first() == Some(&v) => Some(c),
        _ => None,
    })
}

#[test]
fn device_ids_are_row_major_over_the_mesh_axes() {
    let k = kernel(GRID2X4);
    assert_eq!(k.mesh.len(), 2);
    assert_eq!(k.devices(), Some(8));
    // Device (1, 2) of a 2x4 mesh is 1 * 4 + 2.
    let signal = k
        .body
        .ops
        .iter()
        .find_map(|(_, o)| match &o.kind {
            OpKind::SemSignal { n, device, .. } => Some((*n, *device)),
            _ => None,
        })
        .expect("a signal");
    assert_eq!(constant(&k, signal.0), Some(3));
    assert_eq!(constant(&k, signal.1.expect("a remote signal")), Some(6));
    // `mesh_size(1)` is 4.
    let wait = k
        .body
        .ops
        .iter()
        .find_map(|(_, o)| match &o.kind {
            OpKind::SemWait { n, .. } => Some(*n),
            _ => None,
        })
        .expect("a wait");
    assert_eq!(constant(&k, wait), Some(4));
    let phases: Vec<RemotePhase> = k
        .body
        .ops
        .iter()
        .filter_map(|(_, o)| match &o.kind {
            OpKind::RemoteDma { phase, .. } => Some(*phase),
            _ => None,
        })
        .collect();
    assert_eq!(
        phases,
        [
            RemotePhase::Start,
            RemotePhase::WaitSend,
            RemotePhase::WaitRecv
        ]
    );
    assert!(k.communicates());
}

#[test]
fn coordinates_are_read_from_the_device_id() {
    let k = kernel(GRID2X4);
    let ir = pk_lang::ir::print::kernel(&k);
    assert!(ir.contains("  mesh (r: 2, c: 4)"), "{ir}");
    // r = (id / 4) % 2 and c = (id / 1) % 4.
    let lines: Vec<&str> = ir.lines().map(str::trim).collect();
    let id = lines
        .iter()
        .find_map(|l| l.strip_suffix(": i32 = device_id"))
        .expect("the device id is read once");
    let uses: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains(&format!("div {id}, ")))
        .collect();
    assert_eq!(uses.len(), 2, "{ir}");
}

#[test]
fn the_barrier_comes_from_the_collective_and_the_call_says_it_communicates() {
    let src = std::fs::read_to_string(common::root().join("kernels/all_gather.pk")).unwrap();
    let m = compile_source(
        "kernels/all_gather.pk",
        &src,
        &Options {
            specialise: true,
            params: vec![("cid".into(), "7".into())],
            ..Options::default()
        },
    )
    .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
    let k = &m.kernels[0];
    assert_eq!(k.collective_id, Some(7));
    let mosaic = pk_lowering::mosaic::lower(&m, k, &Default::default()).expect("lowers to Mosaic");
    // Three DMA semaphores are arguments; the barrier is `tpu.sem_barrier`.
    assert!(
        mosaic.text.contains("scratch_operands = 3"),
        "{}",
        mosaic.text
    );
    assert_eq!(mosaic.text.matches("tpu.sem_barrier").count(), 1);
    assert!(mosaic.text.contains("!tpu.semaphore"));
    let call = pk_lowering::mosaic::custom_call(k, &mosaic);
    let json = pk_lowering::stablehlo::backend_config_json(&call);
    assert!(
        json.contains("\"has_communication\": true, \"collective_id\": 7, "),
        "{json}"
    );
}

#[test]
fn a_kernel_that_does_not_communicate_says_nothing_of_it() {
    let m = module(
        "kernel k(x: f32[8, 128]) -> y: f32[8, 128] {
    y[..] = x[..];
}",
    );
    let k = &m.kernels[0];
    assert!(!k.communicates());
    let mosaic = pk_lowering::mosaic::lower(&m, k, &Default::default()).expect("lowers");
    let json =
        pk_lowering::stablehlo::backend_config_json(&pk_lowering::mosaic::custom_call(k, &mosaic));
    assert!(!json.contains("has_communication"), "{json}");
    assert!(!json.contains("collective_id"), "{json}");
}

/// The custom call's cost estimate counts the bytes each device sends over
/// the interconnect: every remote copy's window, once per start (values
/// derived by hand from each kernel's ring).
#[test]
fn the_cost_estimate_counts_the_bytes_sent_to_other_devices() {
    for (file, params, bytes) in [
        // One f32 [8, 128] array to one peer.
        ("kernels/ppermute.pk", vec![], 8 * 128 * 4),
        // n - 1 = 3 hops of one f32 [8, 128] shard.
        ("kernels/all_gather.pk", vec![], 3 * 8 * 128 * 4),
        // 3 hops, each two f32 [8, 128] halves (one each way).
        ("kernels/reduce_scatter.pk", vec![], 3 * 2 * 8 * 128 * 4),
        // M = 64 over 4 devices: 3 hops of two [8, 128] halves to reduce,
        // 3 more to gather.
        ("kernels/all_reduce.pk", vec![], 2 * 3 * 2 * 8 * 128 * 4),
        // 3 steps send the bf16 [256, 512] shard in two halves.
        ("kernels/all_gather_matmul.pk", vec![], 3 * 256 * 512 * 2),
        (
            "kernels/all_gather_matmul.pk",
            vec![("n", "8")],
            7 * 256 * 512 * 2,
        ),
        // 3 hops, each two bf16 [128, 512] halves of partial sums.
        (
            "kernels/matmul_reduce_scatter.pk",
            vec![],
            3 * 256 * 512 * 2,
        ),
    ] {
        let src = std::fs::read_to_string(common::root().join(file)).unwrap();
        let opts = Options {
            specialise: true,
            params: params
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            ..Options::default()
        };
        let m = compile_source(file, &src, &opts)
            .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
        let k = &m.kernels[0];
        assert_eq!(pk_lang::ir::cost::estimate(k).remote_bytes, bytes, "{file}");
        let mosaic = pk_lowering::mosaic::lower(&m, k, &Default::default()).expect("lowers");
        let json = pk_lowering::stablehlo::backend_config_json(&pk_lowering::mosaic::custom_call(
            k, &mosaic,
        ));
        assert!(
            json.contains(&format!("\"remote_bytes_transferred\": {bytes}")),
            "{file}: {json}"
        );
    }
    // A kernel on one device sends nothing.
    let m = module(
        "kernel k(x: f32[8, 128]) -> y: f32[8, 128] {
    y[..] = x[..];
}",
    );
    assert_eq!(pk_lang::ir::cost::estimate(&m.kernels[0]).remote_bytes, 0);
}

/// The library's collectives compile with libtpu, as one SPMD program of
/// the 4 devices of each generation's 2x2 (2x2x1) slice.
#[test]
fn collectives_compile_for_multi_chip_topologies_of_every_generation() {
    if !common::have_libtpu() {
        return;
    }
    std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
    let plugin = pk_runtime::pjrt::Plugin::load(None).expect("libtpu loads");
    for (file, params) in [
        ("kernels/ppermute.pk", vec![("n", "4"), ("shift", "1")]),
        ("kernels/all_gather.pk", vec![("n", "4"), ("M", "1024")]),
        ("kernels/reduce_scatter.pk", vec![("n", "4"), ("M", "256")]),
        (
            "kernels/reduce_scatter.pk",
            vec![("n", "4"), ("M", "256"), ("T", "bf16")],
        ),
        ("kernels/all_reduce.pk", vec![("n", "4"), ("M", "1024")]),
        (
            "kernels/all_reduce.pk",
            vec![("n", "4"), ("M", "1024"), ("T", "bf16")],
        ),
        ("kernels/all_gather_matmul.pk", vec![("n", "4")]),
        (
            "kernels/all_gather_matmul.pk",
            vec![("n", "4"), ("T", "f32"), ("M", "128")],
        ),
        ("kernels/matmul_reduce_scatter.pk", vec![("n", "4")]),
        (
            "kernels/matmul_reduce_scatter.pk",
            vec![("n", "4"), ("T", "f32"), ("M", "128")],
        ),
    ] {
        let src = std::fs::read_to_string(common::root().join(file)).unwrap();
        let opts = Options {
            specialise: true,
            params: params
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            ..Options::default()
        };
        let m = compile_source(file, &src, &opts)
            .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
        let k = &m.kernels[0];
        let mosaic = pk_lowering::mosaic::lower(&m, k, &Default::default()).expect("lowers");
        let call = pk_lowering::mosaic::custom_call(k, &mosaic);
        assert_eq!(call.spmd_partitions, Some(4));
        let text = pk_lowering::stablehlo::custom_call_module(&call).expect("wraps");
        assert!(text.starts_with(&format!(
            "module @jit_{} attributes {{mhlo.num_partitions = 4 : i32",
            k.name
        )));
        assert_eq!(pk_runtime::pjrt::module_partitions(&text), 4);
        // Each operand (inputs and the output) and the call.
        assert_eq!(
            text.matches("mhlo.sharding = \"{manual}\"").count(),
            k.operands.len() + 1
        );
        for &t in pk_runtime::pjrt::TpuTarget::all() {
            let c = plugin
                .compile(t, &text)
                .unwrap_or_else(|e| panic!("{file} on {t}: {e}"));
            assert!(c.generated_code_bytes > 0, "{file} on {t}");
            eprintln!("{file} {t}: {} bytes of TPU code", c.generated_code_bytes);
        }
    }
}

/// A mesh of 8 devices compiles on the slice of 8 devices of every
/// generation, and the package's compile report names that slice.
#[test]
fn a_mesh_of_eight_devices_compiles_on_each_generations_eight_chip_slice() {
    if !common::have_libtpu() {
        return;
    }
    let dir = common::TempDir::new("multichip-aot8");
    // all_reduce's halves of chunks are whole f32 tiles: M = 2 * 8 * 8.
    for (file, extra, name) in [
        ("kernels/all_gather.pk", "M=8", "all_gather-M8-n8"),
        ("kernels/all_reduce.pk", "M=128", "all_reduce-M128-n8"),
        ("kernels/reduce_scatter.pk", "M=16", "reduce_scatter-M16-n8"),
        (
            "kernels/all_gather_matmul.pk",
            "M=256",
            "all_gather_matmul-M256-n8",
        ),
        (
            "kernels/matmul_reduce_scatter.pk",
            "M=256",
            "matmul_reduce_scatter-M256-n8",
        ),
    ] {
        let out = dir.path().join(name);
        let o = common::pkc(&[
            "build",
            file,
            "-p",
            "n=8",
            "-p",
            extra,
            "--aot",
            "-t",
            "all",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(common::code(&o), 0, "{file}: {}", common::stderr(&o));
        for (t, topology) in [
            ("v4", "v4:2x2x2"),
            ("v5e", "v5e:2x4"),
            ("v5p", "v5p:2x2x2"),
            ("v6e", "v6e:2x4"),
            // Two devices (TensorCores) per chip: 8 devices are 4 chips.
            ("tpu7x", "tpu7x:2x2x1"),
        ] {
            let report = std::fs::read_to_string(out.join(name).join(format!("aot/{t}.json")))
                .unwrap_or_else(|e| panic!("{file} {t}: {e}"));
            let v: serde_json::Value = serde_json::from_str(&report).unwrap();
            assert_eq!(v["topology"], topology, "{file} {t}: {report}");
            assert!(v["generated_code_bytes"].as_u64().unwrap() > 0);
        }
    }
}

/// A mesh larger than the largest slice is refused before libtpu sees
/// it, with a code and what to do, and no package is written.
#[test]
fn a_mesh_larger_than_the_slice_is_refused_for_aot() {
    if !common::have_libtpu() {
        return;
    }
    let dir = common::TempDir::new("multichip-aot");
    let out = dir.path().join("pkg");
    let o = common::pkc(&[
        "build",
        "kernels/ppermute.pk",
        "-p",
        "n=16",
        "--aot",
        "-t",
        "v5e",
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = common::stderr(&o);
    assert_ne!(common::code(&o), 0, "{err}");
    assert!(
        common::codes_in(&err).contains(&"PK2007".to_string()),
        "{err}"
    );
    assert!(err.contains("the kernel's mesh has 16 devices"), "{err}");
    assert!(
        err.contains("pk cannot compile `ppermute` for v5e"),
        "{err}"
    );
    assert!(!err.contains("libtpu rejected"), "{err}");
    assert!(err.contains("(v5e:2x4) has 8"), "{err}");
    assert!(!out.join("ppermute-n16").exists());
}

/// The CPU reference runs a communicating kernel only on its mesh: without
/// `--mesh` it says how to run it, with a code, and writes no output.
#[test]
fn the_cpu_reference_runs_a_kernel_across_devices_only_on_its_mesh() {
    let dir = common::TempDir::new("multichip-run");
    let x = dir.path().join("x.npy");
    // An f32 [8, 128] .npy of ones, written by hand: header then data.
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (8, 128), }";
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
    bytes.extend_from_slice(h.as_bytes());
    for _ in 0..8 * 128 {
        bytes.extend_from_slice(&1.0f32.to_le_bytes());
    }
    std::fs::write(&x, bytes).unwrap();
    let y = dir.path().join("y.npy");
    let o = common::pkc(&[
        "run",
        "kernels/ppermute.pk",
        "--in",
        &format!("x={}", x.display()),
        "--out",
        &format!("y={}", y.display()),
    ]);
    let err = common::stderr(&o);
    assert_ne!(common::code(&o), 0, "{err}");
    assert_eq!(common::codes_in(&err), ["PK1046"], "{err}");
    assert!(err.contains("pkc run --mesh 4"), "{err}");
    assert!(!y.exists());
}

//! What a run needs from the host and what it moves: the host memory
//! figures and the refusal before allocating, and the bytes counted by
//! `CpuKernel::run_measured`, against values worked out by hand.

use pk_runtime::cpu::{CpuKernel, Error, HostArray, RunOptions, Traffic};
use std::sync::Arc;

fn build(file: &str, params: &[(&str, &str)]) -> CpuKernel {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(file);
    let opts = pk_lang::Options {
        params: params
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        specialise: true,
        ..Default::default()
    };
    let m = pk_lang::Session::open(&path)
        .and_then(|s| s.check(&opts))
        .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
    let w = pk_lowering::wasm::lower(&m.kernels[0], &m.sources, &Default::default())
        .unwrap_or_else(|e| panic!("{e}"));
    CpuKernel::from_lowered(&w, false).unwrap_or_else(|e| panic!("{e}"))
}

const ADD_16X256: [(&str, &str); 4] = [("M", "16"), ("N", "256"), ("bm", "8"), ("bn", "128")];

/// `add` at 16 x 256 f32: two inputs of 16 KiB, one output of 16 KiB, a
/// 2 x 2 parallel grid (4 units), so 2 workers on 2 threads and 4 on 64.
#[test]
fn host_need_adds_up_the_operands_and_instances() {
    let k = build("kernels/add.pk", &ADD_16X256);
    let mem = k.manifest().layout.memory_bytes;
    let n = k.host_need(2).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((n.inputs, n.copies, n.outputs), (32768, 0, 16384));
    assert_eq!((n.workers, n.instances), (2, 2 * mem));
    assert_eq!(n.total(), 49152 + 2 * mem);
    let n = k.host_need(64).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((n.workers, n.instances), (4, 4 * mem));
    assert!(k.check_host_memory(2).is_ok());
}

/// A run whose outputs cannot fit is refused before they are allocated
/// (the inputs here are not even of the right shape: nothing got that
/// far), naming the 64 GiB output.
#[test]
fn run_refuses_outputs_the_host_cannot_hold() {
    let k = build("kernels/add.pk", &[("M", "16777216")]);
    let small = HostArray::zeros(pk_lang::ir::DType::F32, &[8, 128]);
    match k.run(vec![small.clone(), small], &RunOptions::default()) {
        Err(e @ Error::HostMemory { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("outputs 64.0 GiB"), "{msg}");
        }
        Err(e) => panic!("expected PK1024, got {e}"),
        Ok(_) => panic!("a 64 GiB output was allocated"),
    }
}

fn measured(k: &CpuKernel, inputs: Vec<HostArray>, threads: usize) -> Traffic {
    let inputs: Vec<Arc<HostArray>> = inputs.into_iter().map(Arc::new).collect();
    let opts = RunOptions {
        threads,
        ..RunOptions::default()
    };
    k.run_measured(&inputs, &opts)
        .unwrap_or_else(|e| panic!("{e}"))
        .1
}

/// Block copies: every block of both inputs in once (the grid never maps
/// two consecutive steps to one block), every output block out once,
/// whatever the thread count.
#[test]
fn traffic_counts_block_copies() {
    let k = build("kernels/add.pk", &ADD_16X256);
    let x = HostArray::from_f32(&[16, 256], &vec![1.0; 16 * 256]);
    for threads in [1, 2] {
        let t = measured(&k, vec![x.clone(), x.clone()], threads);
        assert_eq!(
            t,
            Traffic {
                blocks_in: 32768,
                blocks_out: 16384,
                dma: 0
            }
        );
    }
}

/// DMA copies: `dma_double_buffer.pk` streams 1024 x 128 f32 through VMEM
/// in chunks of 128 rows, in and out: 2 x 8 x 65536 bytes, and no block.
#[test]
fn traffic_counts_dma_copies() {
    let k = build("tests/cpu/dma_double_buffer.pk", &[]);
    let x = HostArray::from_f32(&[1024, 128], &vec![0.5; 1024 * 128]);
    let t = measured(&k, vec![x], 1);
    assert_eq!(
        t,
        Traffic {
            blocks_in: 0,
            blocks_out: 0,
            dma: 1_048_576
        }
    );
}

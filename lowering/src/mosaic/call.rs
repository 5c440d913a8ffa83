//! The `tpu_custom_call` that runs a lowered kernel: its operand and result
//! tensors, aliases, cost and VMEM limit, for `stablehlo::custom_call_module`.

use super::MosaicModule;
use crate::stablehlo::{CostEstimate, CustomCall, DynamicBound, ElemType, TensorType};
use pk_lang::ir::{self, DType, Role};

/// The element type of an array at the kernel boundary. Booleans cross it as
/// `i32` (0 or 1), the memory form the kernel's memrefs use, as in Pallas.
fn elem(d: DType) -> ElemType {
    match d {
        DType::F32 => ElemType::F32,
        DType::BF16 => ElemType::Bf16,
        DType::I32 | DType::Bool => ElemType::I32,
        DType::I16 => ElemType::I16,
        DType::I8 => ElemType::I8,
        DType::U8 => ElemType::U8,
        DType::F8E4M3FN => ElemType::F8E4M3FN,
        DType::F8E5M2 => ElemType::F8E5M2,
    }
}

fn tensor(o: &ir::Operand) -> TensorType {
    let shape: Vec<i64> = o.shape.iter().map(|d| d.get() as i64).collect();
    TensorType::new(shape, elem(o.dtype))
}

/// The custom call of `kernel` (lowered to `mosaic`): operands are the
/// scalar-prefetch arrays and inputs in call order, results the outputs;
/// each dynamic grid axis adds a leading scalar read from its prefetch
/// element.
///
/// `vmem_limit_bytes` is the kernel's own `vmem_limit`, if any. A caller that
/// compiles for known targets should otherwise set it to the VMEM budget the
/// type checker verified (the smallest VMEM of those targets): without a
/// limit libtpu applies its own smaller default (16 MiB on v5e and v5p,
/// 32 MiB on v6e and TPU7x) and rejects kernels that fit the chip with
/// "E1001: CompileTimeScopedVmemOom".
pub fn custom_call(kernel: &ir::Kernel, mosaic: &MosaicModule) -> CustomCall {
    let inputs: Vec<usize> = (0..kernel.operands.len())
        .filter(|&i| kernel.operands[i].role != Role::Output)
        .collect();
    let outputs: Vec<&ir::Operand> = kernel.outputs().collect();
    let aliases = outputs
        .iter()
        .enumerate()
        .filter_map(|(r, o)| {
            let src = o.aliases?;
            inputs.iter().position(|&i| i == src).map(|p| (p, r))
        })
        .collect();
    // A dynamic grid axis reads its bound from a prefetch element, which
    // the call passes ahead of its operands.
    let dynamic_grid = kernel
        .grid
        .iter()
        .filter_map(|a| a.dynamic.as_ref())
        .filter_map(|d| {
            let operand = inputs.iter().position(|&i| i == d.operand)?;
            let index = d.index.iter().map(|&i| i as i64).collect();
            Some(DynamicBound { operand, index })
        })
        .collect();
    let cost = ir::cost::estimate(kernel);
    CustomCall {
        kernel_name: mosaic.kernel_name.clone(),
        mosaic_text: mosaic.text.clone(),
        operands: inputs
            .iter()
            .map(|&i| tensor(&kernel.operands[i]))
            .collect(),
        results: outputs.iter().map(|o| tensor(o)).collect(),
        cost: Some(CostEstimate {
            flops: cost.flops,
            transcendentals: cost.transcendentals,
            bytes_accessed: cost.bytes_accessed,
            remote_bytes_transferred: cost.remote_bytes,
        }),
        vmem_limit_bytes: kernel.vmem_limit,
        aliases,
        metadata_json: String::new(),
        has_side_effect: false,
        dynamic_grid,
        has_communication: kernel.communicates(),
        collective_id: kernel.collective_id,
        // A kernel on a mesh is one SPMD program of its devices.
        spmd_partitions: (!kernel.mesh.is_empty())
            .then(|| kernel.devices().map(|n| n.min(u64::from(u32::MAX)) as u32))
            .flatten(),
    }
}

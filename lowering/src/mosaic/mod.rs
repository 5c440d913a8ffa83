//! Tile IR to stable Mosaic: the body of a TPU `tpu_custom_call`.
//!
//! ```text
//! ir::Kernel --kernel::build--> MLIR module (func/arith/math/vector/memref/scf + tpu.*)
//!            --verify---------> MLIR's verifier
//!            --serialize------> "stable_mosaic.*" text, version 11
//! ```
//!
//! The module is laid out as JAX Pallas lays out a `pallas_call` on TPU (see
//! `kernel.rs`), and each Tile IR op is lowered by a short rule (`rules/`)
//! that follows Pallas's lowering of the matching `lax` primitive. Upstream
//! operations are created through MLIR's generic builder with typed operands
//! and attributes (`ops.rs`) and verified by MLIR before serialization; `tpu`
//! operations are unregistered here and written with the operands,
//! attributes and operand segments of the public Mosaic dialect at version 11.
//! Every operation carries `loc("file.pk":line:col)` of the Tile IR op it
//! came from, so the TPU compiler's messages point at `.pk` source.
//!
//! invariant: the input kernel is specialised and passes
//! `ir::verify::verify_kernel(kernel, true)`; `lower` checks both first.

mod body;
mod call;
mod error;
mod kernel;
mod mlir;
mod ops;
mod rules;
mod serialize;

pub use call::custom_call;
pub use error::{MosaicError, SourceLocation, EXPLANATIONS};
pub use serialize::VERSION;

use melior::ir::operation::OperationLike;
use melior::ir::{Location, Module};
use pk_lang::ir;

/// How to lower a kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Write `loc("file.pk":line:col)` after every operation of the
    /// serialized module, so that TPU compiler errors name `.pk` lines.
    pub locations: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { locations: true }
    }
}

/// One kernel specialisation in Mosaic form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MosaicModule {
    /// The kernel function's name (the `.pk` kernel's name).
    pub kernel_name: String,
    /// The stable Mosaic module (version [`VERSION`]) as MLIR text: the
    /// custom call's body.
    pub text: String,
    /// The same module in MLIR's readable form, with upstream operation
    /// syntax, for `pkc emit mosaic`.
    pub pretty: String,
    /// The stable Mosaic version of `text`.
    pub version: i64,
}

/// Lowers one specialised kernel of `module` to Mosaic.
pub fn lower(
    module: &ir::Module,
    kernel: &ir::Kernel,
    opts: &Options,
) -> Result<MosaicModule, MosaicError> {
    check_input(module, kernel)?;
    let (ctx, diags) = mlir::new_context();
    let m = mlir::Mlir {
        ctx: &ctx,
        diags: diags.clone(),
    };
    let (file, line, col) = module.location(kernel.span);
    let out = Module::new(Location::new(&ctx, &file, line as usize, col as usize));
    kernel::build(&m, module, kernel, &out)?;
    if !out.as_operation().verify() {
        return Err(MosaicError::Verify {
            kernel: kernel.name.clone(),
            message: mlir::take(&diags),
        });
    }
    let serialize_err = |message| MosaicError::Serialize {
        kernel: kernel.name.clone(),
        message,
    };
    Ok(MosaicModule {
        kernel_name: kernel.name.clone(),
        text: serialize::stable(&out, opts.locations).map_err(serialize_err)?,
        pretty: serialize::pretty(&out).map_err(serialize_err)?,
        version: VERSION,
    })
}

/// Refuses kernels that are not specialised or not valid Tile IR.
fn check_input(module: &ir::Module, kernel: &ir::Kernel) -> Result<(), MosaicError> {
    if let Some(p) = kernel
        .params
        .iter()
        .find(|p| p.value == ir::ParamValue::Unbound)
    {
        return Err(MosaicError::NotSpecialised {
            kernel: kernel.name.clone(),
            detail: format!("parameter `{}` has no value", p.name),
        });
    }
    ir::verify::verify_kernel(kernel, true).map_err(|e| {
        if e.message.contains("not specialised") {
            MosaicError::NotSpecialised {
                kernel: kernel.name.clone(),
                detail: e.message,
            }
        } else {
            MosaicError::InvalidIr {
                kernel: kernel.name.clone(),
                message: e.message,
                at: module.location(e.span),
            }
        }
    })
}

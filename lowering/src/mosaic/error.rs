//! Errors of the Mosaic back end, codes `PK2101..PK2199`.
//!
//! A kernel reaches this back end only after the type checker accepted it, so
//! most of these are pk bugs rather than user errors: they say which part of
//! the pipeline failed and carry the `.pk` location involved, so that a report
//! points at the source that triggered it.

use pk_lang::diag::Explanation;

/// A `.pk` source position: file, line and column (1-based).
pub type SourceLocation = (String, u32, u32);

/// Everything that can stop Tile IR from becoming stable Mosaic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum MosaicError {
    #[error("kernel `{kernel}` is not specialised: {detail}")]
    #[diagnostic(
        code(PK2101),
        help(
            "give every parameter a value (`-p NAME=VALUE` or a default) before building for a TPU"
        )
    )]
    NotSpecialised { kernel: String, detail: String },

    #[error("kernel `{kernel}` breaks a Tile IR invariant at {}:{}:{}: {message}", .at.0, .at.1, .at.2)]
    #[diagnostic(
        code(PK2102),
        help("this is a pk bug: the front end produced Tile IR that its own verifier rejects")
    )]
    InvalidIr {
        kernel: String,
        message: String,
        at: SourceLocation,
    },

    #[error("{what} has no Mosaic lowering (at {}:{}:{})", .at.0, .at.1, .at.2)]
    #[diagnostic(
        code(PK2103),
        help("rewrite the expression with supported types (for example cast to f32 or i32 first); the type checker should have reported this")
    )]
    Unsupported { what: String, at: SourceLocation },

    #[error("MLIR could not build `{op}` (at {}:{}:{}): {message}", .at.0, .at.1, .at.2)]
    #[diagnostic(
        code(PK2104),
        help("this is a pk bug in the Mosaic lowering; the message is MLIR's")
    )]
    Build {
        op: String,
        message: String,
        at: SourceLocation,
    },

    #[error("the Mosaic module of kernel `{kernel}` fails MLIR verification:\n{message}")]
    #[diagnostic(
        code(PK2105),
        help("this is a pk bug in the Mosaic lowering; the locations in the message point at the .pk code involved")
    )]
    Verify { kernel: String, message: String },

    #[error("cannot serialize the Mosaic module of kernel `{kernel}`: {message}")]
    #[diagnostic(code(PK2106), help("this is a pk bug in the stable Mosaic serializer"))]
    Serialize { kernel: String, message: String },
}

/// The long form of every `PK21xx` code, for `pkc explain`.
pub const EXPLANATIONS: &[Explanation] = &[
    Explanation {
        code: "PK2101",
        title: "mosaic-not-specialised",
        what: "A kernel was given to the Mosaic back end while some parameter had no value, so \
               a block shape, grid extent or array dimension is still symbolic.",
        why: "Mosaic kernels have static shapes: the TPU compiler lays out every block in VMEM \
              and every vector in registers when it compiles, so each size must be a number.",
        example: "$ pkc emit mosaic kernels/add.pk -p M=N    # error: N has no value\n\
                  $ pkc emit mosaic kernels/add.pk -p M=2048 -p N=1024",
    },
    Explanation {
        code: "PK2102",
        title: "mosaic-invalid-ir",
        what: "The Tile IR handed to the Mosaic back end failed the IR verifier.",
        why: "Back ends never re-infer types or repair their input; they rely on the verifier's \
              invariants (scoping, types, windows inside refs). A failure is a front-end bug.",
        example: "Report the kernel and the message; `pkc emit ir FILE` shows the IR involved.",
    },
    Explanation {
        code: "PK2103",
        title: "mosaic-unsupported",
        what: "A Tile IR operation, or a combination of dtypes, has no lowering to the Mosaic \
               dialect (for example an arg-max over bf16, or a boolean reduction).",
        why: "Mosaic, like JAX Pallas on TPU, implements a subset of operations per dtype; the \
              lowering refuses what the TPU compiler would reject rather than emit code that \
              fails later without a .pk location.",
        example: "let i = argmax(x_bf16, 1);            // error\n\
                  let i = argmax(x_bf16 as f32, 1);     // ok",
    },
    Explanation {
        code: "PK2104",
        title: "mosaic-build-failed",
        what: "MLIR refused to create an operation the lowering asked for.",
        why: "Each operation is created through MLIR's own builder, which checks operand and \
              attribute kinds; a refusal is a bug in pk's lowering rule for that operation.",
        example: "Report the kernel and the message; `pkc emit ir FILE` shows the IR involved.",
    },
    Explanation {
        code: "PK2105",
        title: "mosaic-verify-failed",
        what: "The Mosaic module built for a kernel failed MLIR's verifier (func, arith, math, \
               vector, memref and scf operations are verified by MLIR itself).",
        why: "pk verifies every module before serializing it, so that a malformed module is \
              caught with its .pk locations instead of inside the TPU compiler.",
        example: "Report the kernel and the message; the loc(...) entries name .pk lines.",
    },
    Explanation {
        code: "PK2106",
        title: "mosaic-serialize-failed",
        what: "The verified module could not be written in the stable Mosaic form \
               (`stable_mosaic.version = 11`).",
        why: "The TPU compiler accepts only the versioned, serialized form; a type or attribute \
              the serializer does not know how to map is a pk bug.",
        example: "Report the kernel and the message.",
    },
];

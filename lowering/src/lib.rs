//! pk back ends. Each back end is a plain function from a typed input to its
//! output text or bytes; none of them re-infers types or patches its input.

pub mod mosaic;
pub mod stablehlo;
pub mod wasm;

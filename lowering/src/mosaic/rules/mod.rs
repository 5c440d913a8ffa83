//! The per-op lowering rules, grouped by what they do. Each rule is a short
//! function from one Tile IR op (its operands already lowered) to the MLIR
//! values of its results; `body.rs` picks the rule for each op kind.

pub(crate) mod control;
pub(crate) mod debug;
pub(crate) mod elementwise;
pub(crate) mod memory;
pub(crate) mod shape;

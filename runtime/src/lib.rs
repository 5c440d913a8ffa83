//! pk runtime: runs and compiles kernels built by `pkc`.

pub mod bind;
pub mod cpu;
pub mod meta;
pub mod ops;
pub mod package;
pub mod pjrt;
pub mod tune;

//! pk runtime: runs and compiles kernels built by `pkc`.

pub mod pjrt;

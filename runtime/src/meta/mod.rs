//! Host-side builders of the metadata that library kernels take as scalar
//! prefetch: the tables a kernel's index maps read to find their blocks.

pub mod gmm;

//! Host-side metadata builders of library kernels: the arrays a kernel reads
//! as scalar prefetch, computed from a short description on the host (by
//! `pkc meta` and the Python package). Each builder has its own range of
//! codes: grouped matmul `PK5201..PK5299`.

pub mod gmm;

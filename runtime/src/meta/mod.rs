//! Host-side metadata builders of library kernels: the arrays a kernel reads
//! as scalar prefetch, computed from a short description on the host (by
//! `pkc meta` and the Python package). Codes `PK5001..PK5999`.

pub mod splash;

//! Host-side metadata builders of library kernels: the arrays a kernel reads
//! as scalar prefetch, computed from a short description on the host (by
//! `pkc meta` and the Python package). Each builder has its own range of
//! codes: splash attention `PK5101..PK5199`, grouped matmul `PK5201..PK5299`
//! (`PK50xx` are the call-binding codes of `bind`, `PK53xx` the library ops'
//! of `ops`).

pub mod gmm;
pub mod splash;

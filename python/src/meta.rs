//! The host-side metadata builders of library kernels, for `pk.meta`:
//! the same Rust code as `pkc meta`, on values numpy hands over.

use pyo3::prelude::*;

use crate::adapter::Rendered;
use pk_runtime::meta::gmm::{self, MetaError};

/// `(group_offsets, group_ids, m_tile_ids, num_tiles)`, as Python gets them.
type GmmTables = (Vec<i32>, Vec<i32>, Vec<i32>, i32);

/// The tables of `kernels/gmm.pk`: `(group_offsets, group_ids,
/// m_tile_ids, num_tiles)`. `dtype` and `ndim` describe the numpy array the
/// sizes came from, so that a float or 2-D array is refused with the same
/// code (`PK5201`) as a file of them is by `pkc meta gmm`.
#[pyfunction]
#[pyo3(signature = (dtype, ndim, sizes, m, tm, visit_empty_groups = false))]
pub fn gmm_metadata(
    py: Python<'_>,
    dtype: &str,
    ndim: usize,
    sizes: Vec<i64>,
    m: i64,
    tm: i64,
    visit_empty_groups: bool,
) -> PyResult<GmmTables> {
    let result = if !matches!(dtype, "int32" | "int64") || ndim != 1 {
        Err(MetaError::SizesDtype {
            found: format!("{dtype} of {ndim} dimensions"),
        })
    } else {
        gmm::gmm_metadata(&sizes, m, tm, visit_empty_groups)
    };
    match result {
        Ok(md) => Ok((md.group_offsets, md.group_ids, md.m_tile_ids, md.num_tiles)),
        Err(e) => Err(crate::raise(py, Rendered::diagnostic(&e))),
    }
}

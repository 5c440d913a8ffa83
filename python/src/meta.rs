//! The host-side metadata builders of library kernels, for `pk.meta`:
//! the same Rust code as `pkc meta`, on values numpy hands over.

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyBytes;

use crate::adapter::Rendered;
use crate::raise;
use pk_runtime::meta::gmm::{self, MetaError};
use pk_runtime::meta::splash::{mask_info, Mask};

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

/// One array of a mask info: `(name, numpy dtype, shape, little-endian bytes)`.
type Array<'py> = (String, String, Vec<usize>, Bound<'py, PyBytes>);

/// The mask info of a mask over `sq` queries and `skv` keys in `[bq, bkv]`
/// blocks. The mask is a description (`causal`, `full`, `local:L,R`,
/// `chunked:C`) when `spec` is given, else the dense `[sq, skv]` mask
/// `dense`, one byte per element (nonzero: the query sees the key). With
/// `shrink`, the grid is shrunk to the live blocks of each row and column.
// The arguments are the Python function's, one per keyword of
// `pk.meta.splash_mask_info`; a struct would only move them.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (spec, dense, sq, skv, bq, bkv, shrink=false))]
pub fn splash_mask_info<'py>(
    py: Python<'py>,
    spec: Option<&str>,
    dense: Option<PyBackedBytes>,
    sq: usize,
    skv: usize,
    bq: usize,
    bkv: usize,
    shrink: bool,
) -> PyResult<Vec<Array<'py>>> {
    let mask = match (spec, dense) {
        (Some(s), _) => Mask::parse(s).map_err(|e| raise(py, Rendered::diagnostic(&e)))?,
        (None, Some(bytes)) => {
            if bytes.len() != sq * skv {
                return Err(raise(
                    py,
                    Rendered::plain(format!(
                        "the dense mask has {} elements, not sq * skv = {}",
                        bytes.len(),
                        sq * skv
                    )),
                ));
            }
            Mask::Dense {
                rows: sq,
                cols: skv,
                keep: bytes.iter().map(|&b| b != 0).collect(),
            }
        }
        (None, None) => {
            return Err(raise(
                py,
                Rendered::plain("give a mask description or a dense mask"),
            ))
        }
    };
    let info = py
        .detach(|| mask_info(&mask, sq, skv, bq, bkv).map(|i| if shrink { i.shrunk() } else { i }))
        .map_err(|e| raise(py, Rendered::diagnostic(&e)))?;
    Ok(info
        .arrays()
        .into_iter()
        .map(|(name, a)| {
            let dtype = if a.dtype == pk_lang::ir::DType::I8 {
                "int8"
            } else {
                "int32"
            };
            (
                name.to_string(),
                dtype.to_string(),
                a.shape,
                PyBytes::new(py, &a.data),
            )
        })
        .collect())
}

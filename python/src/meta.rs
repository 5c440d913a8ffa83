//! `pk._pk.splash_mask_info`: the splash attention mask-info builder of
//! `pk_runtime::meta::splash`, for `pk.meta.splash_mask_info`. The arrays
//! cross as `(name, dtype, shape, bytes)`; python/pk/meta.py makes numpy
//! arrays of them.

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyBytes;

use crate::adapter::Rendered;
use crate::raise;
use pk_runtime::meta::splash::{mask_info, Mask};

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

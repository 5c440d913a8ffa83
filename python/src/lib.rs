//! `pk._pk`, the native half of the `pk` Python package: compiles `.pk`
//! kernels in process, opens packages, runs the CPU reference (from numpy,
//! or inside XLA through the FFI handler of `ffi`) and AOT-compiles
//! StableHLO with libtpu. The Python modules `pk` and `pk.jax` wrap it.
//!
//! Every pk error reaches Python as `pk.PkError`, whose message is the
//! rendered diagnostic and whose `code` is its `PKxxxx` code.

mod adapter;
mod ffi;
mod meta;
mod rendezvous;

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyDict};

use adapter::{Built, Rendered};
use pk_runtime::bind::ArgSig;

/// Raises `pk.PkError(message, code)`.
fn raise(py: Python<'_>, r: Rendered) -> PyErr {
    match py
        .import("pk.errors")
        .and_then(|m| m.getattr("PkError"))
        .and_then(|c| c.call1((r.message.clone(), r.code.clone())))
    {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// `(name, dtype, shape)` of an operand.
type Sig = (String, String, Vec<u64>);

/// A specialised kernel: its operands, its StableHLO (what `pkc build`
/// writes) and, when it has one, its CPU reference.
#[pyclass(frozen, module = "pk._pk")]
struct Kernel {
    built: Arc<Built>,
    /// The id of the kernel in the FFI handler's registry, once lowered.
    ffi_id: std::sync::OnceLock<i64>,
}

fn sigs(v: &[pk_runtime::bind::OperandSig]) -> Vec<Sig> {
    v.iter()
        .map(|o| (o.name.clone(), o.dtype.clone(), o.shape.clone()))
        .collect()
}

#[pymethods]
impl Kernel {
    /// The kernel's name.
    #[getter]
    fn name(&self) -> String {
        self.built.name.clone()
    }

    /// The kernel's mesh axes, `[(name, size)]` in order; empty for a
    /// kernel of one device.
    #[getter]
    fn mesh(&self) -> Vec<(String, u64)> {
        self.built.mesh.clone()
    }

    /// The parameters it was specialised with, `[(name, value)]`.
    #[getter]
    fn params(&self) -> Vec<(String, String)> {
        self.built.params.clone()
    }

    /// The inputs, `[(name, dtype, shape)]`, in call order.
    #[getter]
    fn inputs(&self) -> Vec<Sig> {
        sigs(&self.built.inputs)
    }

    /// The outputs, `[(name, dtype, shape)]`, in the order returned.
    #[getter]
    fn outputs(&self) -> Vec<Sig> {
        sigs(&self.built.outputs)
    }

    /// `(input, output)` index pairs that share a buffer.
    #[getter]
    fn aliases(&self) -> Vec<(usize, usize)> {
        self.built.aliases.clone()
    }

    /// The StableHLO module (one `tpu_custom_call`), as `pkc build` writes
    /// it.
    #[getter]
    fn stablehlo(&self) -> String {
        self.built.stablehlo.clone()
    }

    /// Whether the kernel has a CPU reference (WebAssembly).
    #[getter]
    fn has_cpu_reference(&self) -> bool {
        self.built.cpu.is_some()
    }

    /// Raises the error of running the kernel on CPU when it has no CPU
    /// reference: `pkc run`'s (`PK1021` at the operation the CPU
    /// reference lacks, `PK3012` for a package built without one).
    fn check_cpu(&self, py: Python<'_>) -> PyResult<()> {
        match self.built.cpu {
            Some(_) => Ok(()),
            None => Err(raise(py, adapter::no_cpu(&self.built))),
        }
    }

    /// The id the FFI handler knows this kernel by, in this process.
    #[getter]
    fn ffi_id(&self) -> i64 {
        *self
            .ffi_id
            .get_or_init(|| ffi::register(self.built.clone()))
    }

    /// This kernel over a leading batch dimension of `size`, on the inputs
    /// marked in `batched` and on every output, as one call with a leading
    /// `parallel` grid axis; `None` when it cannot be batched that way.
    fn batched(&self, py: Python<'_>, batched: Vec<bool>, size: u64) -> Option<Kernel> {
        let b = &self.built;
        py.detach(|| adapter::batch(b, &batched, size))
            .map(new_kernel)
    }

    /// Checks a call's arrays, `[(dtype, shape)]`, against the inputs.
    fn check_args(&self, py: Python<'_>, args: Vec<(String, Vec<u64>)>) -> PyResult<()> {
        adapter::check_args(&self.built, &arg_sigs(args)).map_err(|r| raise(py, r))
    }

    /// Runs the CPU reference on the inputs' raw bytes (row-major, in
    /// pk's memory layout) and returns the outputs' bytes.
    fn run_bytes<'py>(
        &self,
        py: Python<'py>,
        inputs: Vec<PyBackedBytes>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let Some(k) = self.built.cpu.clone() else {
            return Err(raise(py, adapter::no_cpu(&self.built)));
        };
        let mut arrays = Vec::new();
        for (data, o) in inputs.into_iter().zip(&self.built.inputs) {
            let d = adapter::dtype(&o.dtype)
                .ok_or_else(|| PyValueError::new_err(format!("dtype {}", o.dtype)))?;
            let shape = o.shape.iter().map(|&d| d as usize).collect();
            arrays.push(Arc::new(adapter::host_array(d, shape, data.to_vec())));
        }
        let mut outs: Vec<Vec<u8>> = self
            .built
            .outputs
            .iter()
            .map(|o| {
                let d = adapter::dtype(&o.dtype).map_or(4, adapter::elem_bytes);
                vec![0u8; o.shape.iter().product::<u64>() as usize * d]
            })
            .collect();
        let result = py.detach(|| {
            let mut views: Vec<&mut [u8]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
            adapter::run_cpu(&k, arrays, &mut views)
        });
        result.map_err(|r| raise(py, r))?;
        Ok(outs.iter().map(|o| PyBytes::new(py, o)).collect())
    }

    fn __repr__(&self) -> String {
        let ps: Vec<String> = self
            .built
            .params
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        format!("<pk kernel {} [{}]>", self.built.name, ps.join(", "))
    }
}

fn arg_sigs(args: Vec<(String, Vec<u64>)>) -> Vec<ArgSig> {
    args.into_iter()
        .map(|(dtype, shape)| ArgSig { dtype, shape })
        .collect()
}

fn targets(py: Python<'_>, names: Vec<String>) -> PyResult<Vec<pk_runtime::pjrt::TpuTarget>> {
    names
        .iter()
        .map(|n| adapter::target(n).map_err(|r| raise(py, r)))
        .collect()
}

fn new_kernel(built: Built) -> Kernel {
    Kernel {
        built: Arc::new(built),
        ffi_id: std::sync::OnceLock::new(),
    }
}

/// Compiles kernel `kernel` of the `.pk` file `path` (the file's only
/// kernel when `None`) with `params` (`[(name, value)]`, values as
/// `pkc build -p` takes them), checked for every target in `targets`.
/// `origins` (`[(name, words)]`) says where parameters came from, in the
/// words a failed assertion's note uses for them.
#[pyfunction]
#[pyo3(signature = (path, kernel=None, params=Vec::new(), targets=vec!["v5e".to_string()], origins=Vec::new()))]
fn compile(
    py: Python<'_>,
    path: PathBuf,
    kernel: Option<String>,
    params: Vec<(String, String)>,
    targets: Vec<String>,
    origins: Vec<(String, String)>,
) -> PyResult<Kernel> {
    let ts = self::targets(py, targets)?;
    let built = py
        .detach(|| adapter::build_source(&path, kernel.as_deref(), &params, &origins, &ts))
        .map_err(|r| raise(py, r))?;
    Ok(new_kernel(built))
}

/// Opens a package directory built by `pkc build`, verifying every file
/// against its manifest.
#[pyfunction]
fn open_package(py: Python<'_>, path: PathBuf) -> PyResult<Kernel> {
    let built = adapter::open_package(&path).map_err(|r| raise(py, r))?;
    Ok(new_kernel(built))
}

/// The parameters that the arrays `args` (`[(dtype, shape)]`) of a call
/// determine, added to `params`; a conflict raises `PkError`.
#[pyfunction]
#[pyo3(signature = (path, kernel, params, args))]
fn infer_params(
    py: Python<'_>,
    path: PathBuf,
    kernel: Option<String>,
    params: Vec<(String, String)>,
    args: Vec<(String, Vec<u64>)>,
) -> PyResult<Vec<(String, String)>> {
    adapter::infer_params(&path, kernel.as_deref(), &params, &arg_sigs(args))
        .map_err(|r| raise(py, r))
}

/// `(kernel, parameters, inputs, outputs)`: a header's names.
type HeaderNames = (String, Vec<String>, Vec<String>, Vec<String>);

/// The operands of a call of kernel `kernel` of `path` with the
/// parameters `params`, read from its header before any array is seen:
/// `(kernel, parameters, inputs, outputs)`, names in declaration order.
/// `None` when the header cannot say (the file does not parse or names no
/// such kernel): building the kernel reports why.
#[pyfunction]
#[pyo3(signature = (path, kernel, params))]
fn header(
    path: PathBuf,
    kernel: Option<String>,
    params: Vec<(String, String)>,
) -> Option<HeaderNames> {
    adapter::header(&path, kernel.as_deref(), &params)
        .map(|h| (h.kernel, h.params, h.inputs, h.outputs))
}

/// The `PkError` for parameters given to a package.
#[pyfunction]
fn package_params_error(py: Python<'_>, path: String, names: Vec<String>) -> PyErr {
    raise(py, adapter::package_params(&path, &names))
}

/// The FFI handler as a capsule for `jax.ffi.register_ffi_target`.
#[pyfunction]
fn ffi_handler(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let f: unsafe extern "C" fn(*mut ffi::CallFrame) -> *mut std::ffi::c_void = ffi::handler;
    // SAFETY: an unnamed capsule around a function pointer, with no
    // destructor; jaxlib reads the pointer back with the capsule's own name.
    unsafe {
        let c = pyo3::ffi::PyCapsule_New(f as *mut std::ffi::c_void, std::ptr::null(), None);
        Bound::from_owned_ptr_or_err(py, c).map(|b| b.unbind())
    }
}

/// Compiles a StableHLO module (MLIR text or bytecode) for one TPU target
/// with libtpu. Returns a dict: target, topology, generated_code_bytes,
/// executable_bytes, compile_ms, memory (dict) and executable (bytes).
#[pyfunction]
#[pyo3(signature = (code, target, replicas=1, partitions=1))]
fn aot_compile<'py>(
    py: Python<'py>,
    code: Vec<u8>,
    target: String,
    replicas: u32,
    partitions: u32,
) -> PyResult<Bound<'py, PyDict>> {
    let t = adapter::target(&target).map_err(|r| raise(py, r))?;
    adapter::clean_tpu_environment();
    let r = py
        .detach(|| adapter::aot_compile(&code, t, replicas, partitions))
        .map_err(|r| raise(py, r))?;
    let d = PyDict::new(py);
    d.set_item("target", r.target)?;
    d.set_item("topology", r.topology)?;
    d.set_item("generated_code_bytes", r.generated_code_bytes)?;
    d.set_item("executable_bytes", r.executable_bytes)?;
    d.set_item("compile_ms", r.compile_ms)?;
    let m = PyDict::new(py);
    for (k, v) in r.memory {
        m.set_item(k, v)?;
    }
    d.set_item("memory", m)?;
    d.set_item("executable", PyBytes::new(py, &r.executable))?;
    Ok(d)
}

/// The TPU generations pk compiles for.
#[pyfunction]
fn tpu_targets() -> Vec<String> {
    adapter::all_targets()
}

#[pymodule]
fn _pk(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Kernel>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(open_package, m)?)?;
    m.add_function(wrap_pyfunction!(infer_params, m)?)?;
    m.add_function(wrap_pyfunction!(header, m)?)?;
    m.add_function(wrap_pyfunction!(package_params_error, m)?)?;
    m.add_function(wrap_pyfunction!(ffi_handler, m)?)?;
    m.add_function(wrap_pyfunction!(aot_compile, m)?)?;
    m.add_function(wrap_pyfunction!(tpu_targets, m)?)?;
    m.add_function(wrap_pyfunction!(meta::gmm_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(meta::splash_mask_info, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

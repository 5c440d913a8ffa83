"""pk: a tile language and compiler for TPU kernels, from Python.

``pk.compile`` builds a kernel of a ``.pk`` file in this process (no
``pkc`` needed) and ``pk.open_package`` opens one built by ``pkc build``,
checking every file against its manifest. ``pk.run`` runs a kernel's CPU
reference on numpy arrays. ``pk.aot_compile`` compiles any StableHLO module
(for example a model exported with ``jax.export``) for a TPU generation with
libtpu, as ``pkc aot`` does.

``pk.jax.kernel`` turns a kernel into a JAX function: a Mosaic custom call
on TPU, the CPU reference on CPU (see ``help(pk.jax)``). ``pk.torch.op``
turns one into a PyTorch op through TorchTPU (``help(pk.torch)``; needs
``torch-tpu``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any, Union

import numpy as np

from . import _pk
from ._pk import Kernel, tpu_targets
from .errors import PkError
from . import meta  # noqa: F401  (pk.meta.splash_mask_info after `import pk`)

__all__ = [
    "Kernel",
    "PkError",
    "aot_compile",
    "compile",
    "open_package",
    "run",
    "tpu_targets",
]

__version__: str = _pk.__version__

PathLike = Union[str, "os.PathLike[str]"]


def param_value(v: Any) -> str:
    """A parameter value as ``pkc build -p`` takes it: integers and
    integer expressions as written, dtypes by pk's name (``f32``)."""
    if isinstance(v, bool):
        raise TypeError("kernel parameters are integers or dtypes, not bool")
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, str):
        return v
    try:
        return dtype_name(np.dtype(v))
    except TypeError:
        raise TypeError(f"cannot use {v!r} as a kernel parameter") from None


_PK_DTYPES = {
    "float32": "f32",
    "bfloat16": "bf16",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "bool",
    "float8_e4m3fn": "f8e4m3fn",
    "float8_e5m2": "f8e5m2",
}


def dtype_name(d: Any) -> str:
    """pk's name for a numpy/JAX dtype (``float32`` -> ``f32``); other
    dtypes keep numpy's name, which no operand accepts."""
    name = np.dtype(d).name
    return _PK_DTYPES.get(name, name)


def numpy_dtype(pk_name: str) -> np.dtype:
    """The numpy dtype of a pk dtype (bf16 and fp8 through ml_dtypes)."""
    inverse = {v: k for k, v in _PK_DTYPES.items()}
    name = inverse[pk_name]
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def compile(
    path: PathLike,
    *,
    kernel: str | None = None,
    targets: Sequence[str] = ("v5e",),
    **params: Any,
) -> Kernel:
    """Compiles a kernel of the ``.pk`` file ``path``, as ``pkc build``
    does: checked for every TPU generation in ``targets``, lowered to
    Mosaic/StableHLO and to WebAssembly (the CPU reference).

    ``params`` set the kernel's parameters (``bm=128``, ``T="f32"`` or
    ``T=jnp.float32``); the others keep their defaults. ``kernel`` picks
    one kernel of a file that defines several.

    Raises ``PkError`` with the rendered diagnostics when the source does
    not compile.
    """
    ps = [(k, param_value(v)) for k, v in params.items()]
    origins = [(k, "given to pk.compile") for k, _ in ps]
    return _pk.compile(os.fspath(path), kernel, ps, list(targets), origins)


def open_package(path: PathLike) -> Kernel:
    """Opens a kernel package built by ``pkc build``; every file is checked
    against the manifest's hashes (``PkError`` ``PK3xxx`` otherwise)."""
    return _pk.open_package(os.fspath(path))


def run(kernel: Kernel, *inputs: np.ndarray) -> list[np.ndarray]:
    """Runs ``kernel``'s CPU reference on numpy arrays and returns its
    outputs (what ``pkc run`` computes)."""
    args = [np.asarray(a) for a in inputs]
    kernel.check_args([(dtype_name(a.dtype), list(a.shape)) for a in args])
    raw = [_to_memory(a).tobytes() for a in args]
    outs = kernel.run_bytes(raw)
    result = []
    for data, (_, d, shape) in zip(outs, kernel.outputs):
        result.append(_from_memory(data, d, shape))
    return result


def _to_memory(a: np.ndarray) -> np.ndarray:
    """An array in pk's memory form: row-major; bool as 32-bit 0/1."""
    if a.dtype == np.bool_:
        a = a.astype(np.int32)
    return np.ascontiguousarray(a)


def _from_memory(data: bytes, d: str, shape: Sequence[int]) -> np.ndarray:
    if d == "bool":
        return np.frombuffer(data, np.int32).reshape(shape) != 0
    return np.frombuffer(data, numpy_dtype(d)).reshape(shape).copy()


AotReport = dict


def _module_bytes(module: Any) -> tuple[bytes, int, int]:
    """The bytes of a StableHLO module, and its replica and partition
    counts."""
    if hasattr(module, "mlir_module_serialized"):
        # A jax.export.Exported: its module is bytecode; its device count
        # is the number of SPMD partitions it was exported for.
        return bytes(module.mlir_module_serialized), 1, int(module.nr_devices)
    if hasattr(module, "as_text") and callable(module.as_text):
        # A jax.stages.Lowered.
        module = module.as_text()
    if isinstance(module, str):
        code = module.encode()
    else:
        code = bytes(module)
    text = code.decode("utf-8", "replace") if code[:4] != b"ML\xefR" else ""
    replicas = re.search(r"mhlo\.num_replicas\s*=\s*(\d+)", text)
    partitions = re.search(r"mhlo\.num_partitions\s*=\s*(\d+)", text)
    return (
        code,
        int(replicas.group(1)) if replicas else 1,
        int(partitions.group(1)) if partitions else 1,
    )


def aot_compile(
    module: Any,
    target: str | Sequence[str] | None = None,
) -> AotReport | list[AotReport]:
    """Compiles a StableHLO module for TPU with libtpu, ahead of time, as
    ``pkc aot`` and ``pkc build --aot`` do; no TPU is needed.

    ``module`` is a ``jax.export.Exported`` (its ``mlir_module_serialized``,
    what TorchTPU registers), a ``jax.stages.Lowered``, MLIR text, or MLIR
    bytecode. ``target`` is one of ``pk.tpu_targets()`` (a report is
    returned) or a list of them (a list of reports; ``None``: all five).

    A report is a dict: ``target``, ``topology``, ``generated_code_bytes``,
    ``executable_bytes``, ``compile_ms``, ``memory`` (libtpu's accounting:
    argument, output, alias, temp, peak bytes) and ``executable`` (the
    serialized executable). Raises ``PkError`` (``PK20xx``) when libtpu is
    missing or rejects the module.
    """
    code, replicas, partitions = _module_bytes(module)
    if isinstance(target, str):
        return _pk.aot_compile(code, target, replicas, partitions)
    targets = list(target) if target is not None else tpu_targets()
    return [_pk.aot_compile(code, t, replicas, partitions) for t in targets]

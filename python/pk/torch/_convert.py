"""Torch tensors to JAX arrays and back, for the CPU kernel of a
``pk.torch`` op, and torch dtypes to the numpy dtypes pk and JAX name.

The conversion goes through numpy on the host: bf16 and the fp8 types,
which numpy lacks and torch cannot export, travel as raw bits (``int16``,
``uint8``) and are viewed as the ``ml_dtypes`` type on the other side, so
no value is rounded on the way.
"""

from __future__ import annotations

from typing import Any

import jax
import ml_dtypes
import numpy as np
import torch

#: torch dtypes with the numpy dtype of the same bits: every dtype a pk
#: operand can have (pk.dtype_name), plus the ones a caller may pass that
#: pk then rejects with PK5004 rather than torch with a conversion error.
_NUMPY = {
    torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64),
    torch.float16: np.dtype(np.float16),
    torch.bfloat16: np.dtype(ml_dtypes.bfloat16),
    torch.float8_e4m3fn: np.dtype(ml_dtypes.float8_e4m3fn),
    torch.float8_e5m2: np.dtype(ml_dtypes.float8_e5m2),
    torch.int64: np.dtype(np.int64),
    torch.int32: np.dtype(np.int32),
    torch.int16: np.dtype(np.int16),
    torch.int8: np.dtype(np.int8),
    torch.uint8: np.dtype(np.uint8),
    torch.bool: np.dtype(np.bool_),
}
_TORCH = {v: k for k, v in _NUMPY.items()}

#: The dtypes numpy cannot take from torch directly, and the integer type of
#: the same width their bits travel as.
_BITS = {
    torch.bfloat16: torch.int16,
    torch.float8_e4m3fn: torch.uint8,
    torch.float8_e5m2: torch.uint8,
}


def numpy_dtype(d: torch.dtype) -> np.dtype:
    """The numpy (``ml_dtypes``) dtype of a torch dtype."""
    try:
        return _NUMPY[d]
    except KeyError:
        raise TypeError(f"pk kernels take no {d} arrays") from None


def torch_dtype(d: Any) -> torch.dtype:
    """The torch dtype of a numpy/JAX dtype."""
    try:
        return _TORCH[np.dtype(d)]
    except KeyError:
        raise TypeError(f"torch has no dtype for {np.dtype(d)}") from None


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A CPU tensor's values as a numpy array (a copy when the tensor is not
    contiguous)."""
    t = t.detach().contiguous()
    bits = _BITS.get(t.dtype)
    if bits is None:
        return t.numpy()
    return t.view(bits).numpy().view(numpy_dtype(t.dtype))


def to_torch(a: Any) -> torch.Tensor:
    """A JAX (or numpy) array as a CPU tensor of the same dtype."""
    n = np.asarray(a)
    d = torch_dtype(n.dtype)
    bits = _BITS.get(d)
    if bits is None:
        return torch.from_numpy(np.array(n, copy=True))
    raw = np.array(n, copy=True).view(numpy_dtype(bits))
    return torch.from_numpy(raw).view(d)


def to_jax(x: Any) -> Any:
    """A call's argument as the JAX function takes it: tensors as arrays on
    JAX's CPU device, torch dtypes as numpy dtypes, sequences element by
    element, anything else unchanged."""
    if isinstance(x, torch.Tensor):
        return jax.device_put(to_numpy(x), jax.devices("cpu")[0])
    if isinstance(x, torch.dtype):
        return numpy_dtype(x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_jax(e) for e in x)
    return x


def from_jax(x: Any) -> Any:
    """A JAX function's result as torch returns it: arrays as CPU tensors,
    lists and tuples element by element."""
    if isinstance(x, (list, tuple)):
        return type(x)(from_jax(e) for e in x)
    if x is None:
        return None
    return to_torch(x)

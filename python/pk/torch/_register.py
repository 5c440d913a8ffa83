"""Registering a JAX function as a PyTorch custom op, the way TorchTPU
does, plus the CPU kernel TorchTPU lacks.

``define(name, fn, signature)`` hands ``fn`` with the annotated
``signature`` to ``torch.tpu.pallas.jax_op``, which makes it a
``torch.library`` custom op: its default kernel exports ``fn`` for TPU
with ``jax.export`` and runs the module on the TPU runtime, and its fake
kernel (``meta`` tensors, ``torch.compile`` tracing) exports it too and
returns empty tensors of the exported outputs' shapes and dtypes. Then it
registers the op's CPU kernel: the arguments go to JAX's CPU device
(``_convert``), ``jax.jit(fn)`` runs there (a pk kernel through pk's FFI
handler, its CPU reference), and the results come back as CPU tensors.

Invariants:
1. ``signature`` annotates every tensor parameter ``jax.Array`` (or
   ``jax.Array | None``, ``list[jax.Array]``) and every other parameter
   with its Python type; tensors are positional (optional ones default to
   ``None``) and static parameters keyword-only: ``jax_op`` derives the
   torch schema and the static arguments from it.
2. The CPU kernel runs the same ``fn`` as the TPU kernel, with the static
   arguments as ``jax.jit`` static arguments: what differs between the
   two is only the lowering of pk's primitive (Mosaic custom call or FFI
   call).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import jax
import torch

from . import _convert

try:
    import torch_tpu  # noqa: F401  (installs torch.tpu)
    from torch.tpu.pallas import jax_op as _jax_op
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "pk.torch needs TorchTPU: pip install torch-tpu==0.2.0 (it brings torch 2.15 "
        f"and about 6 GB of CUDA wheels, and imports without a TPU) [{e}]"
    ) from e


#: The annotations of tensor parameters (invariant 1).
TENSORS = (jax.Array, jax.Array | None, list[jax.Array])


def _static_names(signature: inspect.Signature) -> list[str]:
    """The parameters that are not tensors: static for ``jax.jit``."""
    return [p.name for p in signature.parameters.values() if p.annotation not in TENSORS]


def define(name: str, fn: Callable[..., Any], signature: inspect.Signature) -> Any:
    """Registers ``fn``, whose arguments and result are ``signature``'s, as
    the custom op ``name`` (``"namespace::op"``) with a TPU kernel, a fake
    kernel and a CPU kernel, and returns it (a ``CustomOpDef``: call it,
    or reach it as ``torch.ops.namespace.op``)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    call.__signature__ = signature  # type: ignore[attr-defined]
    call.__name__ = call.__qualname__ = name.split("::")[-1]
    with warnings.catch_warnings():
        # jax_op warns that it is experimental on every registration; pk's
        # documentation says so once.
        warnings.filterwarnings("ignore", message=".*jax_op is experimental.*")
        op = _jax_op(name, call)
    jitted = jax.jit(call, static_argnames=_static_names(signature))

    def cpu(*args: Any, **kwargs: Any) -> Any:
        out = jitted(*_convert.to_jax(args), **{k: _convert.to_jax(v) for k, v in kwargs.items()})
        return _convert.from_jax(out)

    op.register_kernel("cpu")(cpu)
    return op


def returns(n: int) -> Any:
    """The return annotation of ``n`` arrays: one array, or a tuple."""
    if n == 1:
        return jax.Array
    return tuple.__class_getitem__((jax.Array,) * n)


def tensor(name: str, *, optional: bool = False) -> inspect.Parameter:
    """A tensor parameter, with ``None`` as default when optional (torch
    custom ops take no keyword-only tensors)."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    if optional:
        return inspect.Parameter(name, kind, default=None, annotation=jax.Array | None)
    return inspect.Parameter(name, kind, annotation=jax.Array)


__all__ = ["define", "returns", "tensor", "torch"]

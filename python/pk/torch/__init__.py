"""pk kernels as PyTorch ops, on TPU through TorchTPU and on the CPU
through pk's CPU reference.

``pk.torch.op(name, path, **params)`` registers a kernel (a ``.pk`` file
with parameters, or a package built by ``pkc build``) as the
``torch.library`` custom op ``name`` in one line::

    mm = pk.torch.op("mylib::matmul", "kernels/matmul.pk", bm=128, bn=128, bk=256)
    c = mm(a, b)                    # or torch.ops.mylib.matmul(a, b)

The op's arguments are the kernel's inputs, named and ordered as its
header declares them (``pk._pk.header``); it returns the kernel's output,
or a tuple of them. Sizes and dtypes not given are taken from the tensors,
as ``pk.jax.kernel`` takes them from arrays. ``pk.torch.ops`` holds the
kernel library (``pk.ops``) as ops of the ``pk`` namespace, differentiable
where the library is.

Registration goes through TorchTPU's ``torch.tpu.pallas.jax_op`` (see
``_register``): on a TPU the op runs the exported module, pk's
``tpu_custom_call``; on ``meta`` and fake tensors (``torch.compile``
tracing) it returns the exported outputs' shapes and dtypes; on CPU
tensors it runs the kernel's CPU reference through JAX and pk's FFI
handler. Importing ``pk.torch`` needs ``torch-tpu`` (it imports, and
registers ops, on a machine without a TPU).

The options after ``path`` are keyword-only, so that a mesh and partition
specs for distributed kernels (which ``jax_op`` takes) can join them
without changing a call.
"""

from __future__ import annotations

import inspect
import keyword
import os
from collections.abc import Sequence
from typing import Any

import pk.jax
from .. import _pk
from ..errors import PkError
from . import _convert, _register

__all__ = ["export", "op", "ops"]


def _param(v: Any) -> Any:
    """A kernel parameter as ``pk.jax.kernel`` takes it: bools and floats
    in pk's spelling (``true``, full precision), torch dtypes as numpy's."""
    import torch

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, torch.dtype):
        return _convert.numpy_dtype(v)
    return v


def _py_name(name: str) -> str:
    """An operand name usable as a Python parameter and in a torch schema
    (``self`` and ``out`` mean something there)."""
    if keyword.iskeyword(name) or name in ("self", "out"):
        return name + "_"
    return name


def _header(k: pk.jax.Kernel, kernel: str | None) -> tuple[list[str], list[str]]:
    """The input and output operand names of a call of ``k``."""
    if k._package is not None:
        pkg = k._package
        return [n for n, _, _ in pkg.inputs], [n for n, _, _ in pkg.outputs]
    params = list(k.params.items())
    h = _pk.header(k.path, kernel, params)
    unknown = [] if h is None else [n for n, _ in params if n not in h[1]]
    if h is None or unknown:
        # The header cannot say (a syntax error, no such kernel, an
        # unknown parameter): the compiler reports why, with its code.
        _pk.compile(k.path, kernel, params, list(k.targets))
        raise PkError(f"error: cannot read the header of `{k.path}`")
    return h[2], h[3]


def op(
    name: str,
    path: str | os.PathLike[str],
    *,
    kernel: str | None = None,
    targets: Sequence[str] = ("v5e",),
    **params: Any,
) -> Any:
    """Registers a pk kernel as the PyTorch custom op ``name``.

    Args:
        name: the op's name, ``"namespace::op"``; the op is then also
            ``torch.ops.namespace.op``.
        path: a ``.pk`` file, or a package directory built by ``pkc build``
            (its parameters are fixed).
        kernel: the kernel to use when the file defines several.
        targets: the TPU generations the kernel is checked for, as in
            ``pk.jax.kernel``.
        **params: kernel parameters (``bm=128``, ``T=torch.bfloat16``);
            sizes and dtypes not given come from the tensors.

    Returns:
        The custom op (a ``torch.library`` ``CustomOpDef``): call it with
        one tensor per kernel input, in declaration order; it returns the
        output, or a tuple of outputs. It works in eager mode and under
        ``torch.compile``, on TPU tensors (the exported ``tpu_custom_call``),
        CPU tensors (the CPU reference) and ``meta`` tensors. It has no
        gradient: a kernel file declares no backward (``pk.torch.ops`` wires
        the library's).

    Raises:
        pk.PkError: the file does not compile for these parameters, names
            no such kernel, or the package is not valid; at a call, the
            tensors conflict with the kernel (``PK5001``-``PK5004``).

    Example::

        mm = pk.torch.op("mylib::matmul", "kernels/matmul.pk", bm=128, bn=128, bk=256)
        c = mm(a.bfloat16(), b.bfloat16())      # f32 [M, N]
    """
    k = pk.jax.kernel(path, kernel=kernel, targets=targets, **{n: _param(v) for n, v in params.items()})
    inputs, outputs = _header(k, kernel)
    sig = inspect.Signature(
        [_register.tensor(_py_name(n)) for n in inputs],
        return_annotation=_register.returns(len(outputs)),
    )
    return _register.define(name, k, sig)


def export(op: Any, *args: Any, **kwargs: Any) -> Any:
    """The module TorchTPU registers for a call of ``op`` (an op of
    ``pk.torch.op`` or ``pk.torch.ops``) with these arguments: the
    ``jax.export.Exported`` of its JAX function for TPU, traced with
    placeholders of the tensors' shapes and dtypes (``meta`` tensors do),
    as the op's TPU and fake kernels trace it. ``pk.aot_compile`` compiles
    it with libtpu, without a TPU::

        reports = pk.aot_compile(pk.torch.export(mm, a, b))   # v4 ... tpu7x
    """
    import jax

    forward = getattr(op, "_pk_forward", None)
    if forward is not None:
        op, args, kwargs = forward(*args, **kwargs)
    # TorchTPU's callable behind the op (torch-tpu 0.2.0): the same
    # argument normalisation and placeholders as its fake kernel.
    callable_ = op._init_fn
    norm_args, norm_kwargs = callable_._normalize_invocation_args(args, kwargs)
    jax_args, jax_kwargs = callable_._get_jax_placeholders(norm_args, norm_kwargs)
    with jax._src.config.export_ignore_forward_compatibility(True):
        return callable_.exported(*jax_args, **jax_kwargs)


def __getattr__(name: str) -> Any:
    # `pk.torch.ops` registers the whole library when first used.
    if name == "ops":
        import importlib

        return importlib.import_module(".ops", __name__)
    raise AttributeError(f"module 'pk.torch' has no attribute {name!r}")

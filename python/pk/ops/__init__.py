"""The pk kernel library (``kernels/*.pk``) as JAX functions.

Each op takes arrays positionally and the kernel's parameters as keyword
arguments, with block sizes chosen from the shapes when not given; it runs
the pk kernel through :mod:`pk.jax` (a Mosaic custom call on TPU, the CPU
reference on CPU) and works under ``jax.jit``, ``jax.vmap`` and
``jax.export``. Every op of a training kernel is differentiable
(``jax.custom_vjp``): the flash and splash attention, norm and
cross-entropy gradients run pk's backward kernels, the matmul, grouped
matmul and rope gradients run forward kernels again, and the others use
the jnp derivative of the kernel's formula. The inference kernels (paged
attention, quantized matmuls) are forward only. Forward-mode
differentiation (``jax.jvp``, ``jax.jacfwd``) is not defined for a
``jax.custom_vjp``, so it fails on the training ops.

Arguments are checked in the caller's terms before any kernel is built
(``PK53xx``, see :mod:`pk.ops._check`): dtypes, layouts, keyword
arguments, and the values of labels, group sizes and page tables when
they are concrete. :func:`checks` also checks traced values, at run time.

One private module per kernel file (``_flash.py`` for ``flash.pk``);
adding a kernel is one module with an ``__all__`` and one line in
``_FAMILIES`` below (see docs/python.md, "Adding a kernel to pk.ops").
"""

from __future__ import annotations

import importlib

from ._base import kernels_dir
from ._check import checks

#: The family modules, one per kernel file.
_FAMILIES = (
    "_add",
    "_attention",
    "_collectives",
    "_flash",
    "_glu",
    "_gmm",
    "_matmul",
    "_norms",
    "_paged_attention",
    "_qmatmul",
    "_ragged_paged_attention",
    "_rope",
    "_softmax",
    "_splash",
    "_xent",
)

__all__ = ["checks", "kernels_dir"]
for _family in _FAMILIES:
    _module = importlib.import_module(f".{_family}", __name__)
    for _op in _module.__all__:
        globals()[_op] = getattr(_module, _op)
        __all__.append(_op)

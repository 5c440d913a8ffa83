"""``add``: kernels/add.pk."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax

from . import _base, _check

__all__ = ["add"]


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def _add(x: Any, y: Any, blocks: tuple[int, int, tuple[str, ...]]) -> Any:
    bm, bn, keywords = blocks
    return _base.kernel("add.pk", keywords=keywords, bm=bm, bn=bn)(x, y)


def _fwd(x: Any, y: Any, blocks: Any) -> tuple[Any, None]:
    return _add(x, y, blocks), None


def _bwd(blocks: Any, _: None, dz: Any) -> tuple[Any, Any]:
    # The gradient of a sum reaches both operands unchanged.
    return dz, dz


_add.defvjp(_fwd, _bwd)


def add(x: Any, y: Any, *, bm: int | None = None, bn: int | None = None) -> Any:
    """``x + y`` for two float32 ``[M, N]`` arrays, one ``(bm, bn)`` block
    per grid step (defaults: the largest aligned divisors of M and N up to
    256 and 512). Differentiable."""
    op = "add"
    x, y = (_check.dtype(op, n, a, ("float32",)) for n, a in (("x", x), ("y", y)))
    _check.layout(op, "x", x, "[M, N]")
    _check.layout(op, "y", y, "[M, N]", x.shape)
    m, n = x.shape
    bm, bn = _check.positive(op, "bm", bm), _check.positive(op, "bn", bn)
    keywords = ("bm",) * (bm is not None) + ("bn",) * (bn is not None)
    return _add(x, y, (bm or _base.block(m, 256), bn or _base.block(n, 512, align=128), keywords))

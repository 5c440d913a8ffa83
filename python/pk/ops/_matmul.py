"""``matmul``: kernels/matmul.pk."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from . import _base, _check

__all__ = ["matmul"]


def _blocks(m: int, n: int, k: int) -> tuple[int, int, int]:
    # The kernel's own defaults (256, 256, 512) where they divide the
    # shape; its grid is `M / bm` etc., so a block must divide its axis.
    return _base.block(m, 256), _base.block(n, 256, align=128), _base.block(k, 512, align=128)


def _call(a: Any, b: Any, blocks: tuple[int, int, int, tuple[str, ...]] | None) -> Any:
    # `blocks`: the blocks and the parameters the caller's keywords set.
    bm, bn, bk, keywords = blocks or (*_blocks(a.shape[0], b.shape[1], a.shape[1]), ())
    return _base.kernel("matmul.pk", keywords=keywords, bm=bm, bn=bn, bk=bk)(a, b)


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def _matmul(a: Any, b: Any, blocks: Any) -> Any:
    return _call(a, b, blocks)


def _fwd(a: Any, b: Any, blocks: Any) -> tuple[Any, tuple[Any, Any]]:
    return _matmul(a, b, blocks), (a, b)


def _bwd(blocks: Any, res: tuple[Any, Any], dc: Any) -> tuple[Any, Any]:
    # `da = dc b^T` and `db = a^T dc` are matmuls too, run by the same
    # kernel in the operands' dtype (accumulating in f32) with blocks
    # chosen for their own shapes.
    a, b = res
    dc = dc.astype(a.dtype)
    da = _call(dc, jnp.transpose(b), None).astype(a.dtype)
    db = _call(jnp.transpose(a), dc, None).astype(b.dtype)
    return da, db


_matmul.defvjp(_fwd, _bwd)


def matmul(
    a: Any, b: Any, *, bm: int | None = None, bn: int | None = None, bk: int | None = None
) -> Any:
    """``a @ b`` for ``a: T[M, K]``, ``b: T[K, N]`` (T float32 or
    bfloat16) with an f32 result, accumulated in f32 over ``K / bk``
    steps. Blocks default to the largest aligned divisors up to (256, 256,
    512). Differentiable: the gradients are two more calls of the
    kernel."""
    op = "matmul"
    a, b = _check.dtype(op, "a", a), _check.dtype(op, "b", b)
    _check.same_dtype(op, {"a": a, "b": b})
    _check.layout(op, "a", a, "[M, K]")
    _check.layout(op, "b", b, "[K, N]", (a.shape[1], None))
    given = _check.blocks(op, bm=bm, bn=bn, bk=bk)
    if all(v is None for v in given.values()):
        return _matmul(a, b, None)
    d = _blocks(a.shape[0], b.shape[1], a.shape[1])
    bm, bn, bk = (given[n] or d[i] for i, n in enumerate(given))
    return _matmul(a, b, (bm, bn, bk, tuple(n for n, v in given.items() if v is not None)))

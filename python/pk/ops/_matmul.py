"""``matmul``: kernels/matmul.pk."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from . import _base

__all__ = ["matmul"]


def _blocks(m: int, n: int, k: int) -> tuple[int, int, int]:
    # The kernel's own defaults (256, 256, 512) where they divide the
    # shape; its grid is `M / bm` etc., so a block must divide its axis.
    return _base.block(m, 256), _base.block(n, 256, align=128), _base.block(k, 512, align=128)


def _call(a: Any, b: Any, blocks: tuple[int, int, int] | None) -> Any:
    bm, bn, bk = blocks or _blocks(a.shape[0], b.shape[1], a.shape[1])
    return _base.kernel("matmul.pk", bm=bm, bn=bn, bk=bk)(a, b)


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def _matmul(a: Any, b: Any, blocks: tuple[int, int, int] | None) -> Any:
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
    """``a @ b`` for ``a: T[M, K]``, ``b: T[K, N]`` (T f32 or bf16) with an
    f32 result, accumulated in f32 over ``K / bk`` steps. Blocks default to
    the largest aligned divisors up to (256, 256, 512). Differentiable: the
    gradients are two more calls of the kernel."""
    if bm is None and bn is None and bk is None:
        return _matmul(a, b, None)
    d = _blocks(a.shape[0], b.shape[1], a.shape[1])
    return _matmul(a, b, (bm or d[0], bn or d[1], bk or d[2]))

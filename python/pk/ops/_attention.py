"""``attention``: kernels/attention.pk, single-head f32 attention whose
keys and values stay in VMEM. It has no backward kernel; the gradient is
the jnp derivative of the same formula (use :func:`flash_attention` for
pk's backward kernels)."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from . import _base

__all__ = ["attention"]


def _ref(q: Any, k: Any, v: Any, scale: float) -> Any:
    return jax.nn.softmax((q @ k.T) * scale, axis=-1) @ v


@partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _attention(q: Any, k: Any, v: Any, scale: float, blocks: tuple[int, int]) -> Any:
    bq, bk = blocks
    return _base.kernel("attention.pk", bq=bq, bk=bk, scale=scale)(q, k, v)


def _fwd(q: Any, k: Any, v: Any, scale: float, blocks: Any) -> tuple[Any, Any]:
    return _attention(q, k, v, scale, blocks), (q, k, v)


def _bwd(scale: float, blocks: Any, res: Any, do: Any) -> Any:
    _, vjp = jax.vjp(lambda q, k, v: _ref(q, k, v, scale), *res)
    return vjp(do)


_attention.defvjp(_fwd, _bwd)


def attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    scale: float | None = None,
    block_q: int | None = None,
    block_k: int | None = None,
) -> Any:
    """``softmax(q k^T * scale) v`` for f32 ``q, k, v: [S, D]`` (one head,
    no mask); ``scale`` defaults to ``1 / sqrt(D)``, blocks to the largest
    divisors of S up to 128. Differentiable."""
    s, d = q.shape
    blocks = (block_q or _base.block(s, 128), block_k or _base.block(s, 128))
    return _attention(q, k, v, float(scale if scale is not None else 1 / math.sqrt(d)), blocks)

"""``attention``: kernels/attention.pk, single-head f32 attention whose
keys and values stay in VMEM. It has no backward kernel; the gradient is
the jnp derivative of the same formula (use :func:`flash_attention` for
pk's backward kernels)."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax

from . import _base, _check

__all__ = ["attention"]


def _ref(q: Any, k: Any, v: Any, scale: float) -> Any:
    return jax.nn.softmax((q @ k.T) * scale, axis=-1) @ v


@partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _attention(q: Any, k: Any, v: Any, scale: float, blocks: tuple[int, int, tuple[str, ...]]) -> Any:
    # `blocks`: the blocks and the parameters the caller's keywords set.
    bq, bk, keywords = blocks
    return _base.kernel("attention.pk", keywords=keywords, bq=bq, bk=bk, scale=scale)(q, k, v)


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
    scale: Any = None,
    block_q: int | None = None,
    block_k: int | None = None,
) -> Any:
    """``softmax(q k^T * scale) v`` for float32 ``q, k, v: [S, D]`` (one
    head, no mask); ``scale`` defaults to ``1 / sqrt(D)`` (a traced scale
    multiplies ``q`` before the kernel), blocks to the largest divisors of
    S up to 128. Differentiable."""
    op = "attention"
    q, k, v = (_check.dtype(op, n, x, ("float32",)) for n, x in (("q", q), ("k", k), ("v", v)))
    _check.layout(op, "q", q, "[S, D]")
    _check.layout(op, "k", k, "[S, D]", q.shape)
    _check.layout(op, "v", v, "[S, D]", q.shape)
    s = q.shape[0]
    q, scale, scale_given = _check.scaled_queries(op, q, scale)
    bq, bk = _check.positive(op, "block_q", block_q), _check.positive(op, "block_k", block_k)
    keywords = ("bq",) * (bq is not None) + ("bk",) * (bk is not None) + ("scale",) * scale_given
    return _attention(q, k, v, scale, (bq or _base.block(s, 128), bk or _base.block(s, 128), keywords))

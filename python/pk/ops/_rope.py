"""``rope``: kernels/rope.pk."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from . import _base, _check

__all__ = ["rope"]


def _rotate_half(x: Any) -> Any:
    half = x.shape[-1] // 2
    return jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def _rope(x: Any, cos: Any, sin: Any, bs: tuple[int, tuple[str, ...]]) -> Any:
    # `bs`: the block and the parameters the caller's keywords set.
    return _base.kernel("rope.pk", keywords=bs[1], bs=bs[0])(x, cos, sin)


def _fwd(x: Any, cos: Any, sin: Any, bs: Any) -> tuple[Any, Any]:
    return _rope(x, cos, sin, bs), (x, cos, sin)


def _bwd(bs: Any, res: Any, dy: Any) -> tuple[Any, Any, Any]:
    x, cos, sin = res
    dy = dy.astype(x.dtype)
    # `rotate_half` is a rotation by half the lanes with the first half
    # negated, so its transpose is `-rotate_half`, and with tables that
    # repeat their angles (the kernel's layout) `rotate_half(dy * sin)`
    # equals `rotate_half(dy) * sin`: the gradient of `x` is the same
    # kernel with `sin` negated.
    dx = _rope(dy, cos, -sin, bs)
    xf = x.astype(jnp.float32)
    dyf = dy.astype(jnp.float32)
    dcos = jnp.sum(dyf * xf, axis=(0, 1))
    dsin = jnp.sum(dyf * _rotate_half(xf), axis=(0, 1))
    return dx, dcos.astype(cos.dtype), dsin.astype(sin.dtype)


_rope.defvjp(_fwd, _bwd)


def rope(x: Any, cos: Any, sin: Any, *, block_seq: int | None = None) -> Any:
    """Rotary position embedding, rotate-half form: ``x * cos +
    rotate_half(x) * sin`` for ``x: T[B, H, S, D]`` (T float32 or
    bfloat16) and tables ``cos, sin: [L, D]`` with ``L >= S`` that hold
    each position's angles twice (``concat(f, f) * s``, as Hugging Face
    Llama builds them). Tables longer than ``S`` (a cache built for the
    longest sequence) are cut to their first ``S`` rows; tables of another
    floating dtype (bfloat16, float64) are converted to float32, the
    kernel's (it computes in f32). ``block_seq`` positions per step
    (default up to 512). Differentiable (``dx`` is the kernel again with
    ``-sin``; the tables' gradients are returned in their dtype and
    shape)."""
    op = "rope"
    x = _check.dtype(op, "x", x)
    _check.layout(op, "x", x, "[B, H, S, D]")
    s, d = x.shape[2], x.shape[3]
    tables = []
    for name, t in (("cos", cos), ("sin", sin)):
        t = _check.floating(op, name, t)
        _check.layout(op, name, t, "[L, D]", (None, d))
        if t.shape[0] < s:
            raise _check.error(
                "PK5302",
                f"pk.ops.rope takes `{name}` as [L, D] with L >= S = {s} (the positions of `x`), "
                f"but it has {t.shape[0]} rows",
                "build the tables for at least as many positions as the sequence has",
            )
        tables.append(t[:s].astype(jnp.float32))
    bs = _check.positive(op, "block_seq", block_seq)
    return _rope(x, *tables, (bs or _base.block(s, 512, divides=False), ("bs",) * (bs is not None)))

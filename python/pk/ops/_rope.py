"""``rope``: kernels/rope.pk."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from . import _base

__all__ = ["rope"]


def _rotate_half(x: Any) -> Any:
    half = x.shape[-1] // 2
    return jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def _rope(x: Any, cos: Any, sin: Any, bs: int) -> Any:
    return _base.kernel("rope.pk", bs=bs)(x, cos, sin)


def _fwd(x: Any, cos: Any, sin: Any, bs: int) -> tuple[Any, Any]:
    return _rope(x, cos, sin, bs), (x, cos, sin)


def _bwd(bs: int, res: Any, dy: Any) -> tuple[Any, Any, Any]:
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
    rotate_half(x) * sin`` for ``x: T[B, H, S, D]`` and f32 tables ``cos,
    sin: [S, D]`` that hold each position's angles twice (``concat(f, f) *
    s``, as Hugging Face Llama builds them). ``block_seq`` positions per
    step (default up to 512). Differentiable (``dx`` is the kernel again
    with ``-sin``)."""
    s = x.shape[2]
    return _rope(x, cos, sin, block_seq or _base.block(s, 512, divides=False))

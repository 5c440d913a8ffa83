"""``softmax``: kernels/softmax.pk."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from . import _base

__all__ = ["softmax"]


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def _softmax(x: Any, br: int) -> Any:
    return _base.kernel("softmax.pk", br=br)(x)


def _fwd(x: Any, br: int) -> tuple[Any, Any]:
    y = _softmax(x, br)
    return y, y


def _bwd(br: int, y: Any, dy: Any) -> tuple[Any]:
    # The softmax Jacobian applied to `dy` needs only the output.
    return (y * (dy - jnp.sum(dy * y, axis=-1, keepdims=True)),)


_softmax.defvjp(_fwd, _bwd)


def softmax(x: Any, *, br: int | None = None) -> Any:
    """Softmax over the last axis of an f32 array (any leading axes are
    flattened into rows), ``br`` whole rows per grid step (default: the
    largest divisor of the row count up to 128). Differentiable."""
    shape = x.shape
    rows = x.reshape(-1, shape[-1])
    return _softmax(rows, br or _base.block(rows.shape[0], 128)).reshape(shape)

"""``softmax``: kernels/softmax.pk."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from . import _base, _check

__all__ = ["softmax"]


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def _softmax(x: Any, br: tuple[int, tuple[str, ...]]) -> Any:
    # `br`: the block and the parameters the caller's keywords set.
    return _base.kernel("softmax.pk", keywords=br[1], br=br[0])(x)


def _fwd(x: Any, br: Any) -> tuple[Any, Any]:
    y = _softmax(x, br)
    return y, y


def _bwd(br: Any, y: Any, dy: Any) -> tuple[Any]:
    # The softmax Jacobian applied to `dy` needs only the output.
    return (y * (dy - jnp.sum(dy * y, axis=-1, keepdims=True)),)


_softmax.defvjp(_fwd, _bwd)


def softmax(x: Any, *, br: int | None = None) -> Any:
    """Softmax over the last axis of a float32 array (any leading axes are
    flattened into rows), ``br`` whole rows per grid step (default: the
    largest divisor of the row count up to 128). Differentiable."""
    x = _check.dtype("softmax", "x", x, ("float32",))
    _check.rows("softmax", x)
    shape = x.shape
    rows = x.reshape(-1, shape[-1])
    br = _check.positive("softmax", "br", br)
    return _softmax(rows, (br or _base.block(rows.shape[0], 128), ("br",) * (br is not None))).reshape(shape)

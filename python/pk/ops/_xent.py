"""``xent``: kernels/xent.pk, the fused softmax cross-entropy, forward and
backward."""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from . import _base

__all__ = ["xent"]


class _Config(NamedTuple):
    bn: int
    bv: int
    soft_cap: float


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _xent(cfg: _Config, logits: Any, labels: Any) -> Any:
    return _base.kernel("xent.pk", "xent", **cfg._asdict())(logits, labels)[0]


def _fwd(cfg: _Config, logits: Any, labels: Any) -> tuple[Any, Any]:
    loss, lse = _base.kernel("xent.pk", "xent", **cfg._asdict())(logits, labels)
    return loss, (logits, labels, lse)


def _bwd(cfg: _Config, res: Any, dloss: Any) -> tuple[Any, None]:
    logits, labels, lse = res
    k = _base.kernel("xent.pk", "xent_bwd", **cfg._asdict())
    dlogits = k(logits, labels, lse, dloss.astype(jnp.float32))
    # Labels are integers: no gradient.
    return dlogits, None


_xent.defvjp(_fwd, _bwd)


def xent(
    logits: Any,
    labels: Any,
    *,
    soft_cap: float = 0.0,
    block_rows: int | None = None,
    block_vocab: int | None = None,
) -> Any:
    """Per-row softmax cross-entropy ``logsumexp(z) - z[label]`` of
    ``logits: T[N, V]`` (T f32 or bf16) against int ``labels: [N]``,
    streaming over the vocabulary in blocks so the probabilities never
    exist; returns f32 ``[N]``. Rows with a negative label (padding) get
    zero loss and zero gradient; ``soft_cap > 0`` caps the logits first
    (Gemma 2). Blocks default to up to 256 rows and 2048 columns (ragged
    ends are masked). Differentiable through pk's ``xent_bwd`` kernel."""
    n, v = logits.shape
    cfg = _Config(
        bn=block_rows or _base.block(n, 256, divides=False),
        bv=block_vocab or _base.block(v, 2048, divides=False, align=128),
        soft_cap=float(soft_cap),
    )
    lab = jnp.asarray(labels, jnp.int32).reshape(n, 1)
    return _xent(cfg, logits, lab).reshape(n)

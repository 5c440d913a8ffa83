"""``xent``: kernels/xent.pk, the fused softmax cross-entropy, forward and
backward."""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _base, _check

__all__ = ["xent"]


class _Config(NamedTuple):
    bn: int
    bv: int
    soft_cap: float
    #: The parameters set by the caller's keyword arguments.
    keywords: tuple[str, ...]

    def kernel(self, entry: str) -> Any:
        params = {k: v for k, v in self._asdict().items() if k != "keywords"}
        return _base.kernel("xent.pk", entry, keywords=self.keywords, **params)


def _loss(logits: Any, labels: Any, loss: Any) -> Any:
    # A label past the vocabulary names no logit: its row's loss is NaN,
    # as `jnp.take_along_axis` fills an out-of-range gather. Inside the
    # custom_vjp, so that its gradient is the logsumexp's alone, as jnp's
    # derivative of the same formula.
    return jnp.where(labels >= logits.shape[1], jnp.nan, loss)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _xent(cfg: _Config, logits: Any, labels: Any) -> Any:
    return _loss(logits, labels, cfg.kernel("xent")(logits, labels)[0])


def _fwd(cfg: _Config, logits: Any, labels: Any) -> tuple[Any, Any]:
    loss, lse = cfg.kernel("xent")(logits, labels)
    # The backward kernel is compiled now, so that a block it does not
    # take is reported where the loss is computed.
    cfg.kernel("xent_bwd").specialise(logits, labels, lse, lse)
    return _loss(logits, labels, loss), (logits, labels, lse)


def _bwd(cfg: _Config, res: Any, dloss: Any) -> tuple[Any, None]:
    logits, labels, lse = res
    dlogits = cfg.kernel("xent_bwd")(logits, labels, lse, dloss.astype(jnp.float32))
    # Labels are integers: no gradient.
    return dlogits, None


_xent.defvjp(_fwd, _bwd)


def xent(
    logits: Any,
    labels: Any,
    *,
    soft_cap: float = 0.0,
    ignore_index: int | None = None,
    block_rows: int | None = None,
    block_vocab: int | None = None,
) -> Any:
    """Softmax cross-entropy ``logsumexp(z) - z[label]`` over the last
    axis of ``logits: T[..., V]`` (T float32 or bfloat16) against integer
    ``labels`` of the leading shape ``[...]``, streaming over the
    vocabulary in blocks so the probabilities never exist; returns float32
    of the leading shape (leading axes are flattened into rows).

    Labels: a negative label marks a padding row, which gets zero loss and
    zero gradient; so does a label equal to ``ignore_index`` (PyTorch's
    option, for a padding id that is not negative). A label ``>= V`` names
    no logit: concrete labels (an eager call) are refused with ``PK5303``;
    traced ones give that row a NaN loss and the logsumexp's gradient
    alone, as ``jnp.take_along_axis`` (and so optax's integer-label
    cross-entropy) computes; under :func:`pk.ops.checks` they fail at run
    time with ``PK5303``.

    ``soft_cap > 0`` caps the logits first (Gemma 2). Blocks default to up
    to 256 rows and 2048 columns (ragged ends are masked). Differentiable
    through pk's ``xent_bwd`` kernel."""
    op = "xent"
    logits = _check.dtype(op, "logits", logits)
    labels = _check.integers(op, "labels", labels)
    if logits.ndim < 1 or labels.shape != logits.shape[:-1]:
        raise _check.error(
            "PK5302",
            f"pk.ops.xent takes `logits` as [..., V] and `labels` of its leading shape; "
            f"`logits` is {list(logits.shape)} and `labels` {list(labels.shape)}",
            f"pass one label per row of logits: labels of shape {list(logits.shape[:-1])}",
        )
    lead, v = logits.shape[:-1], logits.shape[-1]
    n = math.prod(lead)
    soft_cap = _check.soft_cap(op, soft_cap)
    lab = labels.reshape(n)
    if ignore_index is not None:
        lab = jnp.where(lab == _check.static(op, "ignore_index", ignore_index, int), -1, lab)

    def past_vocabulary(lab: np.ndarray) -> str | None:
        bad = np.flatnonzero(lab >= v)
        if bad.size == 0:
            return None
        at = ", ".join(str(int(i)) for i in np.unravel_index(bad[0], lead)) if lead else ""
        many = "" if bad.size == 1 else f"; {bad.size} labels are"
        first = int(lab[bad[0]])
        return f"labels[{at}] = {first} is past the vocabulary (V = {v}, the logits' last axis){many}"

    (lab,) = _check.values(
        op, "PK5303", f"labels run from 0 to {v - 1}; a negative label (or ignore_index) ignores a row",
        past_vocabulary, lab,
    )
    keywords = tuple(p for p, given in (("bn", block_rows), ("bv", block_vocab)) if given is not None)
    cfg = _Config(
        bn=_check.positive(op, "block_rows", block_rows) or _base.block(n, 256, divides=False),
        bv=_check.positive(op, "block_vocab", block_vocab) or _base.block(v, 2048, divides=False, align=128),
        soft_cap=soft_cap,
        keywords=keywords + ("soft_cap",),
    )
    return _xent(cfg, logits.reshape(n, v), lab.reshape(n, 1)).reshape(lead)

"""``flash_attention``: kernels/flash.pk, forward and backward (``dq`` and
``dkv`` kernels), in the layouts of JAX's Pallas TPU flash attention."""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax

from . import _base, _check

__all__ = ["flash_attention"]


class _Config(NamedTuple):
    """The static parameters of one call (hashable, for custom_vjp)."""

    bq: int
    bk: int
    sm_scale: float
    causal: bool
    soft_cap: float
    segments: bool
    #: The parameters set by the caller's keyword arguments.
    keywords: tuple[str, ...] = ()

    def params(self) -> dict[str, Any]:
        return {k: v for k, v in self._asdict().items() if k != "keywords"}


def _kernel(cfg: _Config, entry: str, **extra: Any) -> Any:
    return _base.kernel("flash.pk", entry, keywords=cfg.keywords, **cfg.params(), **extra)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _flash(cfg: _Config, q: Any, k: Any, v: Any, seg: tuple[Any, ...]) -> Any:
    # Without a gradient to take, the forward kernel skips the logsumexp.
    return _kernel(cfg, "flash_attention", residuals=False)(q, k, v, *seg)


def _fwd(cfg: _Config, q: Any, k: Any, v: Any, seg: tuple[Any, ...]) -> tuple[Any, Any]:
    o, lse = _kernel(cfg, "flash_attention", residuals=True)(q, k, v, *seg)
    # The backward kernels are compiled now, for the shapes they will be
    # called with: a block they do not take (they need divisors of S and
    # SK, the forward does not) is reported where the forward is traced.
    for entry in ("flash_attention_bwd_dq", "flash_attention_bwd_dkv"):
        _kernel(cfg, entry).specialise(q, k, v, o, o, lse, *seg)
    return o, (q, k, v, o, lse, seg)


def _bwd(cfg: _Config, res: Any, do: Any) -> tuple[Any, ...]:
    q, k, v, o, lse, seg = res
    do = do.astype(o.dtype)
    args = (q, k, v, o, do, lse, *seg)
    dq = _kernel(cfg, "flash_attention_bwd_dq")(*args)
    dk, dv = _kernel(cfg, "flash_attention_bwd_dkv")(*args)
    # Segment ids are integers: they have no gradient.
    return dq, dk, dv, tuple(None for _ in seg)


_flash.defvjp(_fwd, _bwd)


def flash_attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: bool = True,
    sm_scale: Any = None,
    soft_cap: float = 0.0,
    q_segment_ids: Any = None,
    kv_segment_ids: Any = None,
    block_q: int | None = None,
    block_k: int | None = None,
) -> Any:
    """``softmax(sm_scale * q k^T + mask) v`` without materialising the
    scores, in Pallas's layout: ``q: T[B, H, S, D]``, ``k, v: T[B, KH, SK,
    D]`` with ``H % KH == 0`` (grouped-query / multi-query attention), T
    float32 or bfloat16; returns ``T[B, H, S, D]``.

    Defaults differ from Pallas's ``flash_attention``: ``causal=True``
    (Pallas: ``False``) and ``sm_scale = 1 / sqrt(D)`` (Pallas: ``1.0``).
    Pass ``causal=False, sm_scale=1.0`` for Pallas's numbers.

    ``sm_scale`` is compiled into the kernel; a traced scale (computed
    inside ``jit``) multiplies ``q`` before the kernel instead, rounded
    once to ``q``'s dtype (and is differentiable). ``soft_cap > 0`` caps
    the scores at ``soft_cap * tanh(s / soft_cap)``. ``q_segment_ids: [B,
    S]`` and ``kv_segment_ids: [B, SK]`` (integers, both or neither) mask
    scores between different segments. Blocks default to the largest
    divisors of S and SK up to 512; the forward takes any block, the
    backward kernels need divisors, which a differentiated call checks
    when its forward is traced.

    Differentiable: ``jax.grad`` runs pk's ``flash_attention_bwd_dq`` and
    ``flash_attention_bwd_dkv`` kernels on the saved logsumexp. Forward-mode
    (``jax.jvp``) is not defined (a ``jax.custom_vjp``).
    """
    op = "flash_attention"
    q, k, v = _check.attention(op, q, k, v)
    if (q_segment_ids is None) != (kv_segment_ids is None):
        raise _check.error(
            "PK5307",
            "pk.ops.flash_attention takes both q_segment_ids and kv_segment_ids, or neither",
            "pass kv_segment_ids too (the same array, for self-attention)",
        )
    b, _, s, _ = q.shape
    sk = k.shape[2]
    seg: tuple[Any, ...] = ()
    if q_segment_ids is not None:
        q_ids = _check.integers(op, "q_segment_ids", q_segment_ids)
        kv_ids = _check.integers(op, "kv_segment_ids", kv_segment_ids)
        _check.layout(op, "q_segment_ids", q_ids, "[B, S]", (b, s))
        _check.layout(op, "kv_segment_ids", kv_ids, "[B, SK]", (b, sk))
        seg = (q_ids.reshape(b, s, 1), kv_ids.reshape(b, 1, sk))
    q, scale, scale_given = _check.scaled_queries(op, q, sm_scale)
    block_q = _check.positive(op, "block_q", block_q)
    block_k = _check.positive(op, "block_k", block_k)
    cfg = _Config(
        bq=block_q or _base.block(s, 512),
        bk=block_k or _base.block(sk, 512, align=128),
        sm_scale=scale,
        causal=_check.static(op, "causal", causal, bool),
        soft_cap=_check.soft_cap(op, soft_cap),
        segments=bool(seg),
        keywords=("causal", "soft_cap")
        + ("bq",) * (block_q is not None)
        + ("bk",) * (block_k is not None)
        + ("sm_scale",) * scale_given,
    )
    return _flash(cfg, q, k, v, seg)

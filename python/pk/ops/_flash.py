"""``flash_attention``: kernels/flash.pk, forward and backward (``dq`` and
``dkv`` kernels), in the layouts of JAX's Pallas TPU flash attention."""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from . import _base

__all__ = ["flash_attention"]


class _Config(NamedTuple):
    """The static parameters of one call (hashable, for custom_vjp)."""

    bq: int
    bk: int
    sm_scale: float
    causal: bool
    soft_cap: float
    segments: bool

    def params(self) -> dict[str, Any]:
        return dict(self._asdict())


def _segments(cfg: _Config, q: Any, k: Any, q_ids: Any, kv_ids: Any) -> tuple[Any, ...]:
    """The kernel's `q_seg` `[B, S, 1]` and `kv_seg` `[B, 1, SK]`, or no
    operands at all when segments are off."""
    if not cfg.segments:
        return ()
    b, _, s, _ = q.shape
    sk = k.shape[2]
    q_seg = jnp.asarray(q_ids, jnp.int32).reshape(b, s, 1)
    kv_seg = jnp.asarray(kv_ids, jnp.int32).reshape(b, 1, sk)
    return q_seg, kv_seg


def _kernel(cfg: _Config, entry: str, **extra: Any) -> Any:
    return _base.kernel("flash.pk", entry, **cfg.params(), **extra)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _flash(cfg: _Config, q: Any, k: Any, v: Any, seg: tuple[Any, ...]) -> Any:
    # Without a gradient to take, the forward kernel skips the logsumexp.
    return _kernel(cfg, "flash_attention", residuals=False)(q, k, v, *seg)


def _fwd(cfg: _Config, q: Any, k: Any, v: Any, seg: tuple[Any, ...]) -> tuple[Any, Any]:
    o, lse = _kernel(cfg, "flash_attention", residuals=True)(q, k, v, *seg)
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
    sm_scale: float | None = None,
    soft_cap: float = 0.0,
    q_segment_ids: Any = None,
    kv_segment_ids: Any = None,
    block_q: int | None = None,
    block_k: int | None = None,
) -> Any:
    """``softmax(sm_scale * q k^T + mask) v`` without materialising the
    scores, in Pallas's layout: ``q: T[B, H, S, D]``, ``k, v: T[B, KH, SK,
    D]`` with ``H % KH == 0`` (grouped-query / multi-query attention), T
    f32 or bf16; returns ``T[B, H, S, D]``.

    ``sm_scale`` defaults to ``1 / sqrt(D)``. ``soft_cap > 0`` caps the
    scores at ``soft_cap * tanh(s / soft_cap)``. ``q_segment_ids: [B, S]``
    and ``kv_segment_ids: [B, SK]`` (int32, both or neither) mask scores
    between different segments. Blocks default to the largest divisors of
    S and SK up to 512 (the backward kernels need divisors).

    Differentiable: ``jax.grad`` runs pk's ``flash_attention_bwd_dq`` and
    ``flash_attention_bwd_dkv`` kernels on the saved logsumexp.
    """
    if (q_segment_ids is None) != (kv_segment_ids is None):
        raise ValueError("give both q_segment_ids and kv_segment_ids, or neither")
    s, d = q.shape[2], q.shape[3]
    sk = k.shape[2]
    cfg = _Config(
        bq=block_q or _base.block(s, 512),
        bk=block_k or _base.block(sk, 512, align=128),
        sm_scale=float(sm_scale if sm_scale is not None else 1.0 / math.sqrt(d)),
        causal=bool(causal),
        soft_cap=float(soft_cap),
        segments=q_segment_ids is not None,
    )
    return _flash(cfg, q, k, v, _segments(cfg, q, k, q_segment_ids, kv_segment_ids))

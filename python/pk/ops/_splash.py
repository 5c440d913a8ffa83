"""``splash_attention``: kernels/splash.pk, block-sparse flash attention
over a mask given as a description (``"causal"``, ``"local:L,R"``,
``"chunked:C"``, ``"full"``) or a dense boolean array, forward and backward
(``dq`` and ``dkv`` kernels). The mask info the kernels read as scalar
prefetch is built on the host by :func:`pk.meta.splash_mask_info` when the
op is traced (the mask is static), and enters the computation as
constants."""

from __future__ import annotations

import functools
import math
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import meta
from . import _base

__all__ = ["splash_attention"]

#: The mask info in the order of the kernels' operands: the forward and
#: `dq` prefetch, the `dkv` prefetch, and the partial blocks.
_FWD = ("data_next", "mask_next", "block_mask")
_DKV = ("dkv_data_next", "dkv_mask_next", "dkv_block_mask")


class _Config(NamedTuple):
    """The static parameters of one call (hashable, for custom_vjp)."""

    bq: int
    bk: int
    NP: int
    NKS: int
    NQS: int
    sm_scale: float
    soft_cap: float

    def params(self) -> dict[str, Any]:
        return dict(self._asdict())


@functools.lru_cache(maxsize=64)
def _described(mask: str, bq: int, bk: int, sq: int, skv: int, shrink: bool) -> dict[str, np.ndarray]:
    # Mask descriptions are hashable: their info is built once per shape.
    return meta.splash_mask_info(mask, bq=bq, bkv=bk, sq=sq, skv=skv, shrink=shrink)


def _mask_info(mask: Any, bq: int, bk: int, sq: int, skv: int, shrink: bool) -> dict[str, np.ndarray]:
    if isinstance(mask, str):
        return _described(mask, bq, bk, sq, skv, shrink)
    dense = np.asarray(mask)
    if dense.shape != (sq, skv):
        raise ValueError(f"the dense mask is {list(dense.shape)}, the scores [S, SK] are {[sq, skv]}")
    return meta.splash_mask_info(dense, bq=bq, bkv=bk, shrink=shrink)


def _forward(cfg: _Config, q: Any, k: Any, v: Any, info: tuple[Any, ...], residuals: bool) -> Any:
    # `info` is the arrays in the order of `_FWD + _DKV + ("mask_blocks",)`.
    fwd, blocks = info[:3], info[6]
    k_fwd = _base.kernel("splash.pk", "splash_attention", **cfg.params(), residuals=residuals)
    return k_fwd(*fwd, q, k, v, blocks)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _splash(cfg: _Config, q: Any, k: Any, v: Any, *info: Any) -> Any:
    # Without a gradient to take, the forward kernel skips the logsumexp.
    return _forward(cfg, q, k, v, info, residuals=False)


def _fwd(cfg: _Config, q: Any, k: Any, v: Any, *info: Any) -> tuple[Any, Any]:
    o, lse = _forward(cfg, q, k, v, info, residuals=True)
    return o, (q, k, v, o, lse, info)


def _bwd(cfg: _Config, res: Any, do: Any) -> tuple[Any, ...]:
    q, k, v, o, lse, info = res
    fwd, dkv, blocks = info[:3], info[3:6], info[6]
    args = (q, k, v, blocks, o, do.astype(o.dtype), lse)
    dq = _base.kernel("splash.pk", "splash_attention_bwd_dq", **cfg.params())(*fwd, *args)
    dk, dv = _base.kernel("splash.pk", "splash_attention_bwd_dkv", **cfg.params())(*dkv, *args)
    # The mask info is integers: it has no gradient.
    return (dq, dk, dv) + (None,) * len(info)


_splash.defvjp(_fwd, _bwd)


def splash_attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    mask: Any = "causal",
    sm_scale: float | None = None,
    soft_cap: float = 0.0,
    shrink: bool = False,
    block_q: int | None = None,
    block_kv: int | None = None,
) -> Any:
    """``softmax(sm_scale * q k^T masked) v``, computing only the blocks
    the mask leaves visible, in the layouts of :func:`flash_attention`:
    ``q: T[B, H, S, D]``, ``k, v: T[B, KH, SK, D]`` with ``H % KH == 0``,
    T f32 or bf16; returns ``T[B, H, S, D]``.

    ``mask`` is shared by every batch row and head: ``"causal"``,
    ``"full"``, ``"local:LEFT,RIGHT"`` (query ``r`` sees keys ``r - LEFT``
    to ``r + RIGHT``), ``"chunked:SIZE"`` (causal within chunks of
    ``SIZE``), or a concrete ``[S, SK]`` boolean array, true where a query
    sees a key. Every query must see at least one key (``PK5103``
    otherwise; other bad masks raise ``PK5101``, ``PK5102``, ``PK5104``).
    ``shrink`` walks only each row's live key blocks (JAX's
    ``shrink_grid``), fewer grid steps for a sparse mask.

    ``sm_scale`` defaults to ``1 / sqrt(D)``; ``soft_cap > 0`` caps the
    scores at ``soft_cap * tanh(s / soft_cap)``. Blocks default to the
    largest divisors of S (multiples of 32) and SK (of 128) up to 512;
    the backward kernels need divisors.

    Differentiable: ``jax.grad`` runs pk's ``splash_attention_bwd_dq`` and
    ``splash_attention_bwd_dkv`` kernels on the saved logsumexp, over the
    same mask info.
    """
    s, d = q.shape[2], q.shape[3]
    sk = k.shape[2]
    bq = block_q or _base.block(s, 512, align=32)
    bk = block_kv or _base.block(sk, 512, align=128)
    info = _mask_info(mask, bq, bk, s, sk, bool(shrink))
    cfg = _Config(
        bq=bq,
        bk=bk,
        NP=int(info["mask_blocks"].shape[0]),
        NKS=int(info["data_next"].shape[1]),
        NQS=int(info["dkv_data_next"].shape[1]),
        sm_scale=float(sm_scale if sm_scale is not None else 1.0 / math.sqrt(d)),
        soft_cap=float(soft_cap),
    )
    arrays = tuple(jnp.asarray(info[n]) for n in _FWD + _DKV + ("mask_blocks",))
    return _splash(cfg, q, k, v, *arrays)

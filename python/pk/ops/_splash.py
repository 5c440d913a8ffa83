"""``splash_attention``: kernels/splash.pk, block-sparse flash attention
over a mask given as a description (``"causal"``, ``"local:L,R"``,
``"chunked:C"``, ``"full"``) or a dense boolean array, forward and backward
(``dq`` and ``dkv`` kernels). The mask info the kernels read as scalar
prefetch is built on the host by :func:`pk.meta.splash_mask_info` when the
op is traced (the mask is static), and enters the computation as
constants."""

from __future__ import annotations

import functools
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import meta
from . import _base, _check

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
    #: The parameters set by the caller's keyword arguments.
    keywords: tuple[str, ...] = ()

    def params(self) -> dict[str, Any]:
        return {k: v for k, v in self._asdict().items() if k != "keywords"}

    def kernel(self, entry: str, **extra: Any) -> Any:
        return _base.kernel("splash.pk", entry, keywords=self.keywords, **self.params(), **extra)


@functools.lru_cache(maxsize=64)
def _described(mask: str, bq: int, bk: int, sq: int, skv: int, shrink: bool) -> dict[str, np.ndarray]:
    # Mask descriptions are hashable: their info is built once per shape.
    return meta.splash_mask_info(mask, bq=bq, bkv=bk, sq=sq, skv=skv, shrink=shrink)


def _mask_info(mask: Any, bq: int, bk: int, sq: int, skv: int, shrink: bool) -> dict[str, np.ndarray]:
    if isinstance(mask, str):
        return _described(mask, bq, bk, sq, skv, shrink)
    if isinstance(mask, jax.core.Tracer):
        raise _check.error(
            "PK5306",
            "pk.ops.splash_attention cuts `mask` into the kernels' mask info when it is traced, "
            "so a dense mask must be a concrete array, not a traced value",
            "pass the mask as a numpy array or a description (\"causal\", \"local:L,R\")",
            type_error=True,
        )
    dense = np.asarray(mask)
    if dense.shape != (sq, skv):
        raise _check.error(
            "PK5302",
            f"pk.ops.splash_attention takes a dense `mask` as [S, SK] = {[sq, skv]}, "
            f"but its shape is {list(dense.shape)}",
            "pass one row per query and one column per key",
        )
    return meta.splash_mask_info(dense, bq=bq, bkv=bk, shrink=shrink)


def _forward(cfg: _Config, q: Any, k: Any, v: Any, info: tuple[Any, ...], residuals: bool) -> Any:
    # `info` is the arrays in the order of `_FWD + _DKV + ("mask_blocks",)`.
    fwd, blocks = info[:3], info[6]
    return cfg.kernel("splash_attention", residuals=residuals)(*fwd, q, k, v, blocks)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _splash(cfg: _Config, q: Any, k: Any, v: Any, *info: Any) -> Any:
    # Without a gradient to take, the forward kernel skips the logsumexp.
    return _forward(cfg, q, k, v, info, residuals=False)


def _fwd(cfg: _Config, q: Any, k: Any, v: Any, *info: Any) -> tuple[Any, Any]:
    o, lse = _forward(cfg, q, k, v, info, residuals=True)
    # The backward kernels are compiled now, so that a block they do not
    # take is reported where the forward is traced.
    fwd, dkv, blocks = info[:3], info[3:6], info[6]
    args = (q, k, v, blocks, o, o, lse)
    cfg.kernel("splash_attention_bwd_dq").specialise(*fwd, *args)
    cfg.kernel("splash_attention_bwd_dkv").specialise(*dkv, *args)
    return o, (q, k, v, o, lse, info)


def _bwd(cfg: _Config, res: Any, do: Any) -> tuple[Any, ...]:
    q, k, v, o, lse, info = res
    fwd, dkv, blocks = info[:3], info[3:6], info[6]
    args = (q, k, v, blocks, o, do.astype(o.dtype), lse)
    dq = cfg.kernel("splash_attention_bwd_dq")(*fwd, *args)
    dk, dv = cfg.kernel("splash_attention_bwd_dkv")(*dkv, *args)
    # The mask info is integers: it has no gradient.
    return (dq, dk, dv) + (None,) * len(info)


_splash.defvjp(_fwd, _bwd)


def splash_attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    mask: Any = "causal",
    sm_scale: Any = None,
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

    ``sm_scale`` defaults to ``1 / sqrt(D)`` (a traced scale multiplies
    ``q`` before the kernel, as in :func:`flash_attention`); ``soft_cap >
    0`` caps the scores at ``soft_cap * tanh(s / soft_cap)``. Blocks
    default to the largest divisors of S (multiples of 32) and SK (of 128)
    up to 512; the backward kernels need divisors, which a differentiated
    call checks when its forward is traced.

    Differentiable: ``jax.grad`` runs pk's ``splash_attention_bwd_dq`` and
    ``splash_attention_bwd_dkv`` kernels on the saved logsumexp, over the
    same mask info.
    """
    op = "splash_attention"
    q, k, v = _check.attention(op, q, k, v)
    s = q.shape[2]
    sk = k.shape[2]
    block_q = _check.positive(op, "block_q", block_q)
    block_kv = _check.positive(op, "block_kv", block_kv)
    bq = block_q or _base.block(s, 512, align=32)
    bk = block_kv or _base.block(sk, 512, align=128)
    info = _mask_info(mask, bq, bk, s, sk, _check.static(op, "shrink", shrink, bool))
    q, scale, scale_given = _check.scaled_queries(op, q, sm_scale)
    cfg = _Config(
        bq=bq,
        bk=bk,
        NP=int(info["mask_blocks"].shape[0]),
        NKS=int(info["data_next"].shape[1]),
        NQS=int(info["dkv_data_next"].shape[1]),
        sm_scale=scale,
        soft_cap=_check.soft_cap(op, soft_cap),
        keywords=("soft_cap",)
        + ("bq",) * (block_q is not None)
        + ("bk",) * (block_kv is not None)
        + ("sm_scale",) * scale_given,
    )
    arrays = tuple(jnp.asarray(info[n]) for n in _FWD + _DKV + ("mask_blocks",))
    return _splash(cfg, q, k, v, *arrays)

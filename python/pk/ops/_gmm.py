"""``gmm``: kernels/gmm.pk, the grouped matmul of megablox, with its group
metadata computed by :func:`make_group_metadata` in jnp, so it runs inside
``jit`` on traced group sizes."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from .. import meta
from . import _base

__all__ = ["gmm", "make_group_metadata"]


def make_group_metadata(group_sizes: Any, m: int, tm: int) -> tuple[Any, Any, Any, Any]:
    """The kernel's scalar-prefetch operands for ``group_sizes`` (int32
    ``[G]``) over ``m`` rows in row tiles of ``tm``: ``group_offsets``
    ``[G + 1]``, and for each visit ``t`` of the grid's dynamic axis its
    group ``group_ids[t]`` and row tile ``m_tile_ids[t]`` (a tile that
    straddles a group boundary is visited once per group, an empty group
    not at all), and the visit count ``num_tiles`` ``[1]``. Shapes are
    static (``m // tm + G - 1`` visits at most). This is
    :func:`pk.meta.gmm_metadata_jnp`, tested equal to pk's Rust builder."""
    return meta.gmm_metadata_jnp(group_sizes, m, tm)


def _forward(lhs: Any, rhs: Any, group_sizes: Any, tiles: tuple[int, int, int]) -> Any:
    tm, tk, tn = tiles
    m = lhs.shape[0]
    n = rhs.shape[2]
    md = make_group_metadata(group_sizes, m, tm)
    out = _base.kernel("gmm.pk", "gmm", N=n, tm=tm, tk=tk, tn=tn)(*md, lhs, rhs)
    # Rows past the last group belong to no group: no visit writes them.
    rows = jnp.arange(m)[:, None]
    return jnp.where(rows < md[0][-1], out, 0.0)


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def _gmm(lhs: Any, rhs: Any, group_sizes: Any, tiles: tuple[int, int, int]) -> Any:
    return _forward(lhs, rhs, group_sizes, tiles)


def _fwd(lhs: Any, rhs: Any, group_sizes: Any, tiles: Any) -> tuple[Any, Any]:
    return _forward(lhs, rhs, group_sizes, tiles), (lhs, rhs, group_sizes)


def _bwd(tiles: Any, res: Any, dout: Any) -> tuple[Any, Any, None]:
    lhs, rhs, group_sizes = res
    # `dlhs` is a grouped matmul by the transposed weights, run by the same
    # kernel; `drhs[g] = lhs_g^T dout_g` (megablox's `tgmm`, not yet a pk
    # kernel) is a jnp contraction over the rows with a one-hot group mask.
    k, n = rhs.shape[1], rhs.shape[2]
    t_back = (tiles[0], _base.block(n, tiles[2], align=128), _base.block(k, tiles[1], align=128))
    d = dout.astype(lhs.dtype)
    dlhs = _forward(d, jnp.swapaxes(rhs, 1, 2), group_sizes, t_back).astype(lhs.dtype)
    offsets = jnp.concatenate([jnp.zeros((1,), jnp.int32), jnp.cumsum(group_sizes, dtype=jnp.int32)])
    rows = jnp.arange(lhs.shape[0])[:, None]
    onehot = ((rows >= offsets[None, :-1]) & (rows < offsets[None, 1:])).astype(jnp.float32)
    drhs = jnp.einsum(
        "mk,mg,mn->gkn", lhs.astype(jnp.float32), onehot, dout.astype(jnp.float32),
        precision=jax.lax.Precision.HIGHEST,
    )  # fmt: skip
    return dlhs, drhs.astype(rhs.dtype), None


_gmm.defvjp(_fwd, _bwd)


def gmm(
    lhs: Any,
    rhs: Any,
    group_sizes: Any,
    *,
    tm: int | None = None,
    tk: int | None = None,
    tn: int | None = None,
) -> Any:
    """Grouped matmul (megablox ``gmm``): ``lhs: T[M, K]`` split into
    consecutive row groups of ``group_sizes`` (int32 ``[G]``, traced
    values are fine), group ``g`` times ``rhs[g]`` (``rhs: T[G, K, N]``),
    f32 ``[M, N]`` out. Rows past ``sum(group_sizes)`` are zero; empty
    groups cost nothing. Tiles default to the largest aligned divisors up
    to 128. Differentiable: ``dlhs`` runs the kernel on the transposed
    weights, ``drhs`` is a jnp contraction."""
    m, k = lhs.shape
    n = rhs.shape[2]
    tiles = (
        tm or _base.block(m, 128),
        tk or _base.block(k, 128, align=128),
        tn or _base.block(n, 128, align=128),
    )
    return _gmm(lhs, rhs, group_sizes, tiles)

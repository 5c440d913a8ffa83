"""``gmm`` and ``tgmm``: kernels/gmm.pk, the grouped matmuls of megablox,
with their group metadata computed by :func:`make_group_metadata` in jnp,
so they run inside ``jit`` on traced group sizes. Each is the other's
gradient: ``gmm``'s weight gradient is a ``tgmm``, and ``tgmm``'s two
gradients are ``gmm`` calls, so ``jax.grad`` of either runs only pk
kernels."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from .. import meta
from . import _base

__all__ = ["gmm", "make_group_metadata", "tgmm"]


def make_group_metadata(
    group_sizes: Any, m: int, tm: int, visit_empty_groups: bool = False
) -> tuple[Any, Any, Any, Any]:
    """The kernels' scalar-prefetch operands for ``group_sizes`` (int32
    ``[G]``) over ``m`` rows in row tiles of ``tm``: ``group_offsets``
    ``[G + 1]``, and for each visit ``t`` of the grid's dynamic axis its
    group ``group_ids[t]`` and row tile ``m_tile_ids[t]`` (a tile that
    straddles a group boundary is visited once per group, an empty group
    not at all, or once with ``visit_empty_groups``, which ``tgmm``
    needs), and the visit count ``num_tiles`` ``[1]``. Shapes are static
    (``cdiv(m, tm) + G - 1`` visits at most). This is
    :func:`pk.meta.gmm_metadata_jnp`, tested equal to pk's Rust builder."""
    return meta.gmm_metadata_jnp(group_sizes, m, tm, visit_empty_groups)


def _gmm_call(
    lhs: Any, rhs: Any, group_sizes: Any, tiles: tuple[int, int, int], transpose_rhs: bool = False
) -> Any:
    """``out[r] = lhs[r] @ rhs[g]`` (``rhs[g]^T`` with ``transpose_rhs``,
    ``rhs`` then stored ``[G, N, K]``), f32, rows past the groups zero."""
    tm, tk, tn = tiles
    m = lhs.shape[0]
    n = rhs.shape[1] if transpose_rhs else rhs.shape[2]
    md = make_group_metadata(group_sizes, m, tm)
    k = _base.kernel("gmm.pk", "gmm", N=n, tm=tm, tk=tk, tn=tn, transpose_rhs=transpose_rhs)
    out = k(*md, lhs, rhs)
    # Rows past the last group belong to no group: no visit writes them.
    rows = jnp.arange(m)[:, None]
    return jnp.where(rows < md[0][-1], out, 0.0)


def _tgmm_call(lhs: Any, rhs: Any, group_sizes: Any, tiles: tuple[int, int, int]) -> Any:
    """``out[g] = lhs[rows of g]^T @ rhs[rows of g]``, f32 ``[G, K, N]``."""
    tm, tk, tn = tiles
    md = make_group_metadata(group_sizes, lhs.shape[0], tm, visit_empty_groups=True)
    k = _base.kernel("gmm.pk", "tgmm", G=group_sizes.shape[0], tm=tm, tk=tk, tn=tn)
    return k(*md, lhs, rhs)


def _tiles(m: int, k: int, n: int) -> tuple[int, int, int]:
    """Default tiles: the largest aligned divisors up to 128 of the rows,
    the contraction (gmm) or output rows (tgmm), and the columns."""
    return _base.block(m, 128), _base.block(k, 128, align=128), _base.block(n, 128, align=128)


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def _gmm(lhs: Any, rhs: Any, group_sizes: Any, tiles: tuple[int, int, int]) -> Any:
    return _gmm_call(lhs, rhs, group_sizes, tiles)


def _gmm_fwd(lhs: Any, rhs: Any, group_sizes: Any, tiles: Any) -> tuple[Any, Any]:
    return _gmm_call(lhs, rhs, group_sizes, tiles), (lhs, rhs, group_sizes)


def _gmm_bwd(tiles: Any, res: Any, dout: Any) -> tuple[Any, Any, None]:
    # `dlhs[r] = dout[r] @ rhs[g]^T`: the same kernel reading the weights
    # transposed in place; `drhs[g] = lhs_g^T @ dout_g`: the `tgmm` kernel.
    # Both take the operands' dtype (f32 accumulation), as the forward.
    lhs, rhs, group_sizes = res
    m, k = lhs.shape
    n = rhs.shape[2]
    d = dout.astype(lhs.dtype)
    t = _tiles(m, n, k)
    dlhs = _gmm_call(d, rhs, group_sizes, (tiles[0], t[1], t[2]), transpose_rhs=True)
    t = _tiles(m, k, n)
    drhs = _tgmm_call(lhs, d, group_sizes, (tiles[0], t[1], t[2]))
    # Group sizes are integers: no gradient.
    return dlhs.astype(lhs.dtype), drhs.astype(rhs.dtype), None


_gmm.defvjp(_gmm_fwd, _gmm_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def _tgmm(lhs: Any, rhs: Any, group_sizes: Any, tiles: tuple[int, int, int]) -> Any:
    return _tgmm_call(lhs, rhs, group_sizes, tiles)


def _tgmm_fwd(lhs: Any, rhs: Any, group_sizes: Any, tiles: Any) -> tuple[Any, Any]:
    return _tgmm_call(lhs, rhs, group_sizes, tiles), (lhs, rhs, group_sizes)


def _tgmm_bwd(tiles: Any, res: Any, dout: Any) -> tuple[Any, Any, None]:
    # `out[g] = lhs_g^T rhs_g`, so `dlhs[r] = rhs[r] @ dout[g]^T` and
    # `drhs[r] = lhs[r] @ dout[g]`: two grouped matmuls over the same rows,
    # the first reading `dout` transposed in place.
    lhs, rhs, group_sizes = res
    m, k = lhs.shape
    n = rhs.shape[1]
    d = dout.astype(lhs.dtype)
    t = _tiles(m, n, k)
    dlhs = _gmm_call(rhs, d, group_sizes, (tiles[0], t[1], t[2]), transpose_rhs=True)
    t = _tiles(m, k, n)
    drhs = _gmm_call(lhs, d, group_sizes, (tiles[0], t[1], t[2]))
    return dlhs.astype(lhs.dtype), drhs.astype(rhs.dtype), None


_tgmm.defvjp(_tgmm_fwd, _tgmm_bwd)


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
    groups cost nothing; ``M`` need not be a multiple of ``tm``. Tiles default to
    the largest aligned divisors up to 128. Differentiable: ``dlhs`` runs
    the kernel on the weights read transposed, ``drhs`` the ``tgmm``
    kernel."""
    m, k = lhs.shape
    d = _tiles(m, k, rhs.shape[2])
    tiles = (tm or d[0], tk or d[1], tn or d[2])
    return _gmm(lhs, rhs, jnp.asarray(group_sizes, jnp.int32), tiles)


def tgmm(
    lhs: Any,
    rhs: Any,
    group_sizes: Any,
    *,
    tm: int | None = None,
    tk: int | None = None,
    tn: int | None = None,
) -> Any:
    """Transposed grouped matmul (megablox ``tgmm``), the weight gradient
    of :func:`gmm`: ``out[g] = lhs[rows of g]^T @ rhs[rows of g]`` for
    ``lhs: T[M, K]`` and ``rhs: T[M, N]`` (usually ``gmm``'s input and
    output gradient) whose rows are grouped by ``group_sizes`` (int32
    ``[G]``, traced values are fine); f32 ``[G, K, N]`` out. An empty
    group's block is zero, rows past ``sum(group_sizes)`` take no part.
    ``M`` need not be a multiple of ``tm``; ``tk`` and ``tn`` block the output's
    rows and columns. Tiles default to the largest aligned divisors up to
    128. Differentiable: both gradients run the ``gmm`` kernel."""
    m, k = lhs.shape
    d = _tiles(m, k, rhs.shape[1])
    tiles = (tm or d[0], tk or d[1], tn or d[2])
    return _tgmm(lhs, rhs, jnp.asarray(group_sizes, jnp.int32), tiles)

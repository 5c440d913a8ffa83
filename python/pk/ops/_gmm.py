"""``gmm`` and ``tgmm``: kernels/gmm.pk, the grouped matmuls of megablox,
with their group metadata computed by :func:`make_group_metadata` in jnp,
so they run inside ``jit`` on traced group sizes. Each is the other's
gradient: ``gmm``'s weight gradient is a ``tgmm``, and ``tgmm``'s two
gradients are ``gmm`` calls, so ``jax.grad`` of either runs only pk
kernels."""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import meta
from . import _base, _check

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


class _Config(NamedTuple):
    """The static parameters of one call (hashable, for custom_vjp)."""

    tiles: tuple[int, int, int]
    #: The output's dtype (numpy's name).
    out: str
    #: The parameters set by the caller's keyword arguments.
    keywords: tuple[str, ...] = ()


def _gmm_call(
    lhs: Any, rhs: Any, group_sizes: Any, tiles: tuple[int, int, int], out: str,
    keywords: tuple[str, ...] = (), transpose_rhs: bool = False,
) -> Any:  # fmt: skip
    """``out[r] = lhs[r] @ rhs[g]`` (``rhs[g]^T`` with ``transpose_rhs``,
    ``rhs`` then stored ``[G, N, K]``), accumulated in f32 and stored as
    ``out``, rows past the groups zero."""
    tm, tk, tn = tiles
    m = lhs.shape[0]
    n = rhs.shape[1] if transpose_rhs else rhs.shape[2]
    md = make_group_metadata(group_sizes, m, tm)
    k = _base.kernel(
        "gmm.pk", "gmm", keywords=keywords, N=n, tm=tm, tk=tk, tn=tn,
        transpose_rhs=transpose_rhs, O=jnp.dtype(out),
    )  # fmt: skip
    o = k(*md, lhs, rhs)
    # Rows past the last group belong to no group: no visit writes them.
    rows = jnp.arange(m)[:, None]
    return jnp.where(rows < md[0][-1], o, 0)


def _tgmm_call(
    lhs: Any, rhs: Any, group_sizes: Any, tiles: tuple[int, int, int], out: str,
    keywords: tuple[str, ...] = (),
) -> Any:  # fmt: skip
    """``out[g] = lhs[rows of g]^T @ rhs[rows of g]``, ``[G, K, N]``."""
    tm, tk, tn = tiles
    md = make_group_metadata(group_sizes, lhs.shape[0], tm, visit_empty_groups=True)
    k = _base.kernel(
        "gmm.pk", "tgmm", keywords=keywords, G=group_sizes.shape[0], tm=tm, tk=tk, tn=tn, O=jnp.dtype(out)
    )
    return k(*md, lhs, rhs)


def _tiles(m: int, k: int, n: int) -> tuple[int, int, int]:
    """Default tiles: the largest aligned divisors up to 128 of the rows,
    the contraction (gmm) or output rows (tgmm), and the columns."""
    return _base.block(m, 128), _base.block(k, 128, align=128), _base.block(n, 128, align=128)


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def _gmm(lhs: Any, rhs: Any, group_sizes: Any, cfg: _Config) -> Any:
    return _gmm_call(lhs, rhs, group_sizes, cfg.tiles, cfg.out, cfg.keywords)


def _gmm_fwd(lhs: Any, rhs: Any, group_sizes: Any, cfg: _Config) -> tuple[Any, Any]:
    return _gmm(lhs, rhs, group_sizes, cfg), (lhs, rhs, group_sizes)


def _gmm_bwd(cfg: _Config, res: Any, dout: Any) -> tuple[Any, Any, None]:
    # `dlhs[r] = dout[r] @ rhs[g]^T`: the same kernel reading the weights
    # transposed in place; `drhs[g] = lhs_g^T @ dout_g`: the `tgmm` kernel.
    # Both take the operands' dtype (f32 accumulation) and store the
    # gradients in the operands' dtypes.
    lhs, rhs, group_sizes = res
    m, k = lhs.shape
    n = rhs.shape[2]
    d = dout.astype(lhs.dtype)
    tm = cfg.tiles[0]
    t = _tiles(m, n, k)
    dlhs = _gmm_call(d, rhs, group_sizes, (tm, t[1], t[2]), _dtype(lhs), cfg.keywords, transpose_rhs=True)
    t = _tiles(m, k, n)
    drhs = _tgmm_call(lhs, d, group_sizes, (tm, t[1], t[2]), _dtype(rhs), cfg.keywords)
    # Group sizes are integers: no gradient.
    return dlhs, drhs, None


_gmm.defvjp(_gmm_fwd, _gmm_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(3,))
def _tgmm(lhs: Any, rhs: Any, group_sizes: Any, cfg: _Config) -> Any:
    return _tgmm_call(lhs, rhs, group_sizes, cfg.tiles, cfg.out, cfg.keywords)


def _tgmm_fwd(lhs: Any, rhs: Any, group_sizes: Any, cfg: _Config) -> tuple[Any, Any]:
    return _tgmm(lhs, rhs, group_sizes, cfg), (lhs, rhs, group_sizes)


def _tgmm_bwd(cfg: _Config, res: Any, dout: Any) -> tuple[Any, Any, None]:
    # `out[g] = lhs_g^T rhs_g`, so `dlhs[r] = rhs[r] @ dout[g]^T` and
    # `drhs[r] = lhs[r] @ dout[g]`: two grouped matmuls over the same rows,
    # the first reading `dout` transposed in place.
    lhs, rhs, group_sizes = res
    m, k = lhs.shape
    n = rhs.shape[1]
    d = dout.astype(lhs.dtype)
    tm = cfg.tiles[0]
    t = _tiles(m, n, k)
    dlhs = _gmm_call(rhs, d, group_sizes, (tm, t[1], t[2]), _dtype(lhs), cfg.keywords, transpose_rhs=True)
    t = _tiles(m, k, n)
    drhs = _gmm_call(lhs, d, group_sizes, (tm, t[1], t[2]), _dtype(rhs), cfg.keywords)
    return dlhs, drhs, None


_tgmm.defvjp(_tgmm_fwd, _tgmm_bwd)


def _dtype(x: Any) -> str:
    return jnp.dtype(x.dtype).name


def _sizes(op: str, group_sizes: Any, groups: int, m: int) -> Any:
    """The group sizes the kernels walk: checked when concrete (``PK5304``
    for a negative size or a total past ``m``, as under
    :func:`pk.ops.checks` for traced ones), and clipped (negative sizes to
    0, the running total at ``m``, dropping a group's rows past the last
    row as ``jax.lax.ragged_dot`` does), so that the tile walk never
    leaves ``lhs``; sizes that pass the check are unchanged."""
    sizes = _check.integers(op, "group_sizes", group_sizes)
    _check.layout(op, "group_sizes", sizes, "[G]", (groups,))

    def exceeding(s: np.ndarray) -> str | None:
        neg = np.flatnonzero(s < 0)
        if neg.size:
            return f"group_sizes[{neg[0]}] is {int(s[neg[0]])}; a group has 0 rows or more"
        total = int(s.astype(np.int64).sum())
        if total > m:
            return f"the group sizes add up to {total}, more than the {m} rows of `lhs` (M)"
        return None

    (sizes,) = _check.values(
        op, "PK5304", f"group g owns the next group_sizes[g] rows of lhs; they add up to at most {m}",
        exceeding, sizes,
    )
    ends = jnp.cumsum(jnp.clip(sizes, 0, m))
    return jnp.diff(jnp.minimum(ends, m), prepend=0).astype(jnp.int32)


def _config(
    op: str, lhs: Any, out_dims: tuple[int, int], preferred_element_type: Any,
    tm: int | None, tk: int | None, tn: int | None,
) -> _Config:  # fmt: skip
    """Tiles (the defaults for those not given) and the output dtype:
    ``preferred_element_type``, else the operands' dtype, as
    ``jax.lax.ragged_dot``."""
    given = _check.blocks(op, tm=tm, tk=tk, tn=tn)
    d = _tiles(lhs.shape[0], *out_dims)
    tiles = tuple(given[n] or d[i] for i, n in enumerate(("tm", "tk", "tn")))
    out = _dtype(lhs)
    if preferred_element_type is not None:
        out = jnp.dtype(preferred_element_type).name
        if out not in _check.FLOATS:
            raise _check.error(
                "PK5301",
                f"pk.ops.{op} stores its result in float32 or bfloat16, not {out} (preferred_element_type)",
                "pass preferred_element_type=jnp.float32 or jnp.bfloat16, or None for the operands' dtype",
                type_error=True,
            )
    return _Config(tiles, out, tuple(n for n in given if given[n] is not None))  # type: ignore[arg-type]


def gmm(
    lhs: Any,
    rhs: Any,
    group_sizes: Any,
    *,
    preferred_element_type: Any = None,
    tm: int | None = None,
    tk: int | None = None,
    tn: int | None = None,
) -> Any:
    """Grouped matmul (megablox ``gmm``, ``jax.lax.ragged_dot``): ``lhs:
    T[M, K]`` split into consecutive row groups of ``group_sizes``
    (integers ``[G]``, traced values are fine), group ``g`` times
    ``rhs[g]`` (``rhs: T[G, K, N]``), T float32 or bfloat16; ``[M, N]``
    out, accumulated in f32 and stored in ``preferred_element_type``
    (default: T, as ``ragged_dot``; float32 or bfloat16).

    Rows past ``sum(group_sizes)`` are zero; empty groups cost nothing; M
    need not be a multiple of ``tm``. Sizes that are negative or add up to
    more than M are refused when concrete (``PK5304``); traced ones are
    clipped (negative sizes to 0, the total at M: a group's rows past M do
    not exist, as in ``ragged_dot``), so the kernel's tile walk stays
    within ``lhs`` on CPU and TPU alike, and :func:`pk.ops.checks`
    reports them at run time. Tiles default to the largest aligned
    divisors up to 128. Differentiable: ``dlhs`` runs the kernel on the
    weights read transposed, ``drhs`` the ``tgmm`` kernel (both in the
    operands' dtypes)."""
    op = "gmm"
    lhs, rhs = _check.dtype(op, "lhs", lhs), _check.dtype(op, "rhs", rhs)
    _check.same_dtype(op, {"lhs": lhs, "rhs": rhs})
    _check.layout(op, "lhs", lhs, "[M, K]")
    _check.layout(op, "rhs", rhs, "[G, K, N]", (None, lhs.shape[1], None))
    sizes = _sizes(op, group_sizes, rhs.shape[0], lhs.shape[0])
    cfg = _config(op, lhs, (lhs.shape[1], rhs.shape[2]), preferred_element_type, tm, tk, tn)
    return _gmm(lhs, rhs, sizes, cfg)


def tgmm(
    lhs: Any,
    rhs: Any,
    group_sizes: Any,
    *,
    preferred_element_type: Any = None,
    tm: int | None = None,
    tk: int | None = None,
    tn: int | None = None,
) -> Any:
    """Transposed grouped matmul (megablox ``tgmm``), the weight gradient
    of :func:`gmm`: ``out[g] = lhs[rows of g]^T @ rhs[rows of g]`` for
    ``lhs: T[M, K]`` and ``rhs: T[M, N]`` (usually ``gmm``'s input and
    output gradient) whose rows are grouped by ``group_sizes`` (integers
    ``[G]``, traced values are fine); ``[G, K, N]`` out in
    ``preferred_element_type`` (default: T). An empty group's block is
    zero, rows past ``sum(group_sizes)`` take no part, and sizes are
    checked and clipped as in :func:`gmm`. M need not be a multiple of
    ``tm``; ``tk`` and ``tn`` block the output's rows and columns. Tiles
    default to the largest aligned divisors up to 128. Differentiable:
    both gradients run the ``gmm`` kernel."""
    op = "tgmm"
    lhs, rhs = _check.dtype(op, "lhs", lhs), _check.dtype(op, "rhs", rhs)
    _check.same_dtype(op, {"lhs": lhs, "rhs": rhs})
    _check.layout(op, "lhs", lhs, "[M, K]")
    _check.layout(op, "rhs", rhs, "[M, N]", (lhs.shape[0], None))
    group_sizes = _check.array(group_sizes)
    if group_sizes.ndim != 1:
        _check.layout(op, "group_sizes", group_sizes, "[G]")
    sizes = _sizes(op, group_sizes, group_sizes.shape[0], lhs.shape[0])
    cfg = _config(op, lhs, (lhs.shape[1], rhs.shape[1]), preferred_element_type, tm, tk, tn)
    return _tgmm(lhs, rhs, sizes, cfg)

"""Host-side metadata of the library kernels: the arrays a kernel of
``kernels/`` reads as scalar prefetch, computed by pk's Rust builders (the
same code as ``pkc meta``).

Grouped matmul (``kernels/gmm.pk``)
-----------------------------------
``gmm_metadata`` runs pk's Rust builder (the one ``pkc meta gmm`` runs) on
numpy values and checks them; ``gmm_metadata_jnp`` computes the same tables
with ``jax.numpy``, so that they can be built inside ``jax.jit`` from
traced group sizes (it cannot check traced values: give it sizes that
``gmm_metadata`` would accept).

Splash attention (``kernels/splash.pk``)
-----------------------------------------
``splash_mask_info(mask, bq=..., bkv=...)`` cuts a mask into ``[bq, bkv]``
blocks and returns the kernels' mask info as numpy arrays, keyed by the
kernels' operand names: ``block_mask``, ``data_next``, ``mask_next`` (for
the forward and ``dq`` kernels), ``dkv_block_mask``, ``dkv_data_next``,
``dkv_mask_next`` (for the ``dk``/``dv`` kernel) and ``mask_blocks`` (the
distinct partial blocks, int8; its first dimension is the kernels' ``NP``).
"""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from . import _pk
from .errors import PkError

__all__ = ["gmm_metadata", "gmm_metadata_jnp", "splash_mask_info"]


def gmm_metadata(
    group_sizes: Any, m: int, tm: int, visit_empty_groups: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The tile metadata of ``kernels/gmm.pk`` for ``m`` rows grouped by
    ``group_sizes`` (1-D int32 or int64), in tiles of ``tm`` rows:
    ``(group_offsets [G + 1], group_ids [cdiv(m, tm) + G - 1],
    m_tile_ids [cdiv(m, tm) + G - 1], num_tiles [1])``, all int32, in the
    order the kernels take them. ``tgmm`` needs ``visit_empty_groups=True``.

    Raises ``PkError``: ``PK5201`` for sizes that are not a 1-D integer
    array, ``PK5202`` for a negative size, ``PK5203`` when they do not add
    up to ``m``, ``PK5204`` for a non-positive ``m`` or ``tm`` or no groups.
    """
    a = np.asarray(group_sizes)
    ints = a.dtype in (np.int32, np.int64) and a.ndim == 1
    sizes = [int(v) for v in a] if ints else []
    offsets, ids, tiles, num = _pk.gmm_metadata(
        a.dtype.name, a.ndim, sizes, int(m), int(tm), bool(visit_empty_groups)
    )
    i32 = lambda v: np.asarray(v, dtype=np.int32)  # noqa: E731
    return i32(offsets), i32(ids), i32(tiles), i32([num])


def gmm_metadata_jnp(
    group_sizes: Any, m: int, tm: int, visit_empty_groups: bool = False
) -> tuple[Any, Any, Any, Any]:
    """``gmm_metadata`` in ``jax.numpy``, traceable: ``group_sizes`` may be
    a traced int32 array of static length; ``m``, ``tm`` and
    ``visit_empty_groups`` are static. Counts each group's tiles and each
    tile's groups and expands both with ``jnp.repeat``, as megablox's
    ``make_group_metadata`` does; the entries past ``num_tiles`` then
    repeat the last visit, as the Rust builder's do."""
    import jax.numpy as jnp

    sizes = jnp.asarray(group_sizes, dtype=jnp.int32)
    groups = sizes.shape[0]
    tiles_m = -(-m // tm)
    bound = tiles_m + groups - 1
    ends = jnp.cumsum(sizes, dtype=jnp.int32)
    offsets = jnp.concatenate([jnp.zeros((1,), jnp.int32), ends])
    starts = offsets[:-1]
    empty = sizes == 0
    spanned = (ends + tm - 1) // tm - starts // tm
    group_tiles = jnp.where(empty, int(visit_empty_groups), spanned)
    # A tile gets one more visit for each group that begins inside it
    # after another group's rows, or that is empty and visited there; an
    # empty group at row m visits the last tile.
    extra = (~empty & (starts % tm != 0)) | (empty & visit_empty_groups)
    tile = jnp.minimum(starts // tm, tiles_m - 1)
    tile_visits = 1 + jnp.zeros((tiles_m,), jnp.int32).at[tile].add(extra.astype(jnp.int32))
    group_ids = jnp.repeat(
        jnp.arange(groups, dtype=jnp.int32), group_tiles, total_repeat_length=bound
    )
    m_tile_ids = jnp.repeat(
        jnp.arange(tiles_m, dtype=jnp.int32), tile_visits, total_repeat_length=bound
    )
    num_tiles = jnp.sum(group_tiles, dtype=jnp.int32)
    # `jnp.repeat` pads with the last group, which may have no visits (an
    # empty last group); the kernels' idle steps should name the blocks of
    # the last real visit, so that they fetch nothing new.
    real = jnp.arange(bound) < num_tiles
    group_ids = jnp.where(real, group_ids, group_ids[num_tiles - 1])
    return offsets, group_ids, m_tile_ids, num_tiles.reshape(1)


MaskLike = Union[str, np.ndarray]


def splash_mask_info(
    mask: MaskLike,
    *,
    bq: int,
    bkv: int,
    sq: int | None = None,
    skv: int | None = None,
    shrink: bool = False,
) -> dict[str, np.ndarray]:
    """The splash attention mask info of ``mask``.

    ``mask`` is ``"causal"``, ``"full"``, ``"local:LEFT,RIGHT"`` (a
    sliding window: row ``r`` sees keys ``r - LEFT .. r + RIGHT``),
    ``"chunked:SIZE"``, or a dense ``[S_q, S_kv]`` boolean array (true
    where a query sees a key). A description needs ``sq`` (``skv``
    defaults to it); a dense mask gives both. A bad mask or size raises
    ``pk.PkError`` with its code (``PK5101`` .. ``PK5104``), as
    ``pkc meta splash`` reports it.

    With ``shrink``, the grid is shrunk to the live blocks of each row (and
    column, for the ``dkv_*`` arrays), as JAX's ``shrink_grid``: the
    forward arrays get ``NKS`` columns and the dkv arrays ``NQS``, which
    the kernels take as parameters (``data_next.shape[1]`` and
    ``dkv_data_next.shape[1]``).
    """
    if isinstance(mask, str):
        if sq is None:
            raise PkError(f"`sq` is needed for the mask `{mask}`", "PK5102")
        spec, dense = mask, None
        skv = sq if skv is None else skv
    else:
        m = np.asarray(mask)
        if m.ndim != 2 or not (m.dtype == np.bool_ or np.issubdtype(m.dtype, np.integer)):
            raise PkError(
                f"a dense mask is a 2-D bool array, not {m.dtype} of shape {m.shape}", "PK5104"
            )
        if (sq, skv) not in ((None, None), m.shape):
            raise PkError(
                f"the dense mask is {list(m.shape)} but sq, skv are {sq}, {skv}", "PK5102"
            )
        sq, skv = m.shape
        spec, dense = None, np.ascontiguousarray(m != 0).view(np.uint8).tobytes()
    arrays = _pk.splash_mask_info(spec, dense, int(sq), int(skv), int(bq), int(bkv), bool(shrink))
    return {
        name: np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape).copy()
        for name, dtype, shape, data in arrays
    }

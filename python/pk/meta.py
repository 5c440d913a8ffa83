"""Host-side metadata of the library kernels: the tables a kernel takes as
scalar prefetch, computed from what the model knows (group sizes, ...).

``gmm_metadata`` runs pk's Rust builder (the one ``pkc meta gmm`` runs) on
numpy values and checks them; ``gmm_metadata_jnp`` computes the same tables
with ``jax.numpy``, so that they can be built inside ``jax.jit`` from
traced group sizes (it cannot check traced values: give it sizes that
``gmm_metadata`` would accept).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _pk

__all__ = ["gmm_metadata", "gmm_metadata_jnp"]


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

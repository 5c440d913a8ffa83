"""Fixtures of kernels/gmm.pk, the grouped matmul whose middle grid axis has
a dynamic extent: the schedule (megablox's `make_group_metadata`) and the
float64 reference are computed here from the group sizes, and each case
runs a different number of steps along that axis."""

import numpy as np

from .common import as_dtype, case, f64, rng

# Each output element is one f32 dot product of K terms in [-1, 1].
F32 = {"rtol": 1e-5, "atol": 1e-4}


def schedule(sizes, m, tm):
    """`(group_offsets, group_ids, m_tile_ids, num_tiles)`: one visit per
    (group, row tile) pair that the group's rows touch, in group order; an
    empty group has none. Unused entries are 0, as megablox pads them."""
    g = len(sizes)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    ids, tiles = [], []
    for gi in range(g):
        lo, hi = offsets[gi], offsets[gi + 1]
        if hi == lo:
            continue
        for tile in range(lo // tm, (hi - 1) // tm + 1):
            ids.append(gi)
            tiles.append(tile)
    bound = m // tm + g - 1
    assert len(ids) <= bound
    pad = [0] * (bound - len(ids))
    return (
        offsets,
        np.array(ids + pad, dtype=np.int32),
        np.array(tiles + pad, dtype=np.int32),
        np.array([len(ids)], dtype=np.int32),
    )


def gmm_case(name, sizes, m=128, k=256, n=256, tm=32, tk=128, tn=128, dtype="f32"):
    r = rng(name)
    g = len(sizes)
    assert sum(sizes) == m
    lhs = as_dtype(r.uniform(-1, 1, (m, k)), dtype)
    rhs = as_dtype(r.uniform(-1, 1, (g, k, n)), dtype)
    offsets, ids, tiles, count = schedule(sizes, m, tm)
    out = np.zeros((m, n))
    for gi in range(g):
        lo, hi = offsets[gi], offsets[gi + 1]
        out[lo:hi] = f64(lhs)[lo:hi] @ f64(rhs)[gi]
    params = {"M": m, "K": k, "N": n, "G": g, "tm": tm, "tk": tk, "tn": tn, "T": dtype}
    inputs = {
        "group_offsets": offsets,
        "group_ids": ids,
        "m_tile_ids": tiles,
        "num_tiles": count,
        "lhs": lhs,
        "rhs": rhs,
    }
    return case(name, "kernels/gmm.pk", None, params, inputs, {"out": out}, F32)


def cases():
    # Small (K, N) = (128, 128) weights keep the fixtures to tens of KB; the
    # schedules differ in how many of the bound's steps they run.
    small = {"k": 128, "n": 128}
    return [
        # Row boundaries inside tiles 0 and 1 around an empty middle group:
        # 4 of the bound's 5 steps.
        gmm_case("gmm_bf16_sizes_20_0_28", [20, 0, 28], m=48, tm=16, dtype="bf16", **small),
        # A boundary on a tile edge: one visit per tile, 2 of 3 steps.
        gmm_case("gmm_f32_sizes_16_16", [16, 16], m=32, tm=16, **small),
        # Empty first and last groups: 3 of 5 steps, all of group 1.
        gmm_case("gmm_bf16_sizes_0_48_0", [0, 48, 0], m=48, tm=16, dtype="bf16", **small),
    ]

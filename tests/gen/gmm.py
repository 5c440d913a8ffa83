"""Fixtures of kernels/gmm.pk (grouped matmul, megablox `gmm` and `tgmm`)
against a float64 numpy reference that multiplies each group's rows
directly, from the inputs exactly as the kernels read them.

The tile metadata the kernels take as scalar prefetch is computed here by
walking the groups one by one (`metadata`), a different algorithm from the
vectorised one of megablox and of runtime/src/meta/gmm.rs, which the Rust
tests and python/tests check against the files saved here."""

import numpy as np

from .common import as_dtype, case, f64, rng


def metadata(sizes, m, tm, visit_empty=False):
    """group_offsets [G + 1], group_ids and m_tile_ids [cdiv(m, tm) + G - 1]
    and num_tiles [1], as i32. Visit `t` of the first `num_tiles` is row
    tile `m_tile_ids[t]` for group `group_ids[t]`; the rest repeat the
    last visit. With `visit_empty`, an empty group gets one visit of the
    tile its offset falls in (the last tile when the offset is `m`)."""
    g_count = len(sizes)
    tiles_m = -(-m // tm)
    bound = tiles_m + g_count - 1
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    gids, mids = [], []
    for g in range(g_count):
        start, end = int(offsets[g]), int(offsets[g + 1])
        if start == end:
            if visit_empty:
                gids.append(g)
                mids.append(min(start // tm, tiles_m - 1))
            continue
        for tile in range(start // tm, -(-end // tm)):
            gids.append(g)
            mids.append(tile)
    num = len(gids)
    assert 0 < num <= bound
    gids += [gids[-1]] * (bound - num)
    mids += [mids[-1]] * (bound - num)
    i32 = lambda x: np.asarray(x, dtype=np.int32)
    return {
        "group_offsets": i32(offsets),
        "group_ids": i32(gids),
        "m_tile_ids": i32(mids),
        "num_tiles": i32([num]),
    }


def schedule(sizes, m, tm):
    """The four prefetch arrays of `gmm`, in call order."""
    md = metadata(sizes, m, tm)
    return md["group_offsets"], md["group_ids"], md["m_tile_ids"], md["num_tiles"]


def gmm_ref(lhs, rhs, sizes, transpose_rhs):
    """out [M, N]: each group's rows times its own rhs, float64."""
    out = np.zeros((lhs.shape[0], rhs.shape[1] if transpose_rhs else rhs.shape[2]))
    start = 0
    for g, size in enumerate(sizes):
        w = rhs[g].T if transpose_rhs else rhs[g]
        out[start:start + size] = lhs[start:start + size] @ w
        start += size
    return out


def tgmm_ref(lhs, rhs, sizes):
    """out [G, K, N]: each group's rows of lhs, transposed, times its rows
    of rhs; zero for an empty group."""
    out = np.zeros((len(sizes), lhs.shape[1], rhs.shape[1]))
    start = 0
    for g, size in enumerate(sizes):
        out[g] = lhs[start:start + size].T @ rhs[start:start + size]
        start += size
    return out


def tolerance(dtype, out_dtype):
    if out_dtype == "bf16":
        # The f32 result is rounded to bf16 once: 2^-9 relative, and
        # outputs that cancel toward zero need an absolute bound of the
        # same size relative to the typical magnitude (~sqrt(K) / 3).
        return {"rtol": 8e-3, "atol": 2e-2}
    # Products of f32 or bf16 inputs summed in f32 over at most a few
    # hundred terms of size <= 1: the error is a few ulps of the running
    # sum (~1e-6 relative), with atol for sums that cancel to near zero.
    return {"rtol": 1e-5, "atol": 1e-4}


def gmm_case(name, dtype, sizes, k, n, tm, tk, tn, transpose_rhs=False, acc=False,
             out_dtype="f32"):
    g = rng(name)
    m, groups = int(sum(sizes)), len(sizes)
    lhs = as_dtype(g.uniform(-1.0, 1.0, (m, k)), dtype)
    shape = (groups, n, k) if transpose_rhs else (groups, k, n)
    rhs = as_dtype(g.uniform(-1.0, 1.0, shape), dtype)
    out = gmm_ref(f64(lhs), f64(rhs), sizes, transpose_rhs)
    inputs = dict(metadata(sizes, m, tm))
    inputs.update({"lhs": lhs, "rhs": rhs})
    if acc:
        existing = as_dtype(g.uniform(-4.0, 4.0, (m, n)), out_dtype)
        inputs["existing_out"] = existing
        out = out + f64(existing)
    params = {
        "M": m, "K": k, "N": n, "G": groups, "tm": tm, "tk": tk, "tn": tn,
        "transpose_rhs": str(transpose_rhs).lower(), "ACC": str(acc).lower(),
        "T": dtype, "O": out_dtype,
    }
    expected = {"out": as_dtype(out, out_dtype) if out_dtype == "bf16" else out}
    return case(name, "kernels/gmm.pk", "gmm", params, inputs, expected,
                tolerance(dtype, out_dtype))


def tgmm_case(name, dtype, sizes, k, n, tm, tk, tn, acc=False, out_dtype="f32"):
    g = rng(name)
    m, groups = int(sum(sizes)), len(sizes)
    lhs = as_dtype(g.uniform(-1.0, 1.0, (m, k)), dtype)
    rhs = as_dtype(g.uniform(-1.0, 1.0, (m, n)), dtype)
    out = tgmm_ref(f64(lhs), f64(rhs), sizes)
    inputs = dict(metadata(sizes, m, tm, visit_empty=True))
    inputs.update({"lhs": lhs, "rhs": rhs})
    if acc:
        existing = as_dtype(g.uniform(-4.0, 4.0, (groups, k, n)), out_dtype)
        inputs["existing_out"] = existing
        out = out + f64(existing)
    params = {
        "M": m, "K": k, "N": n, "G": groups, "tm": tm, "tk": tk, "tn": tn,
        "ACC": str(acc).lower(), "T": dtype, "O": out_dtype,
    }
    expected = {"out": as_dtype(out, out_dtype) if out_dtype == "bf16" else out}
    return case(name, "kernels/gmm.pk", "tgmm", params, inputs, expected,
                tolerance(dtype, out_dtype))


# Group sizes of the cases. SHARED: rows 0..31 (the first tile of 32) hold
# groups 0, 2 and 3 (20, 9 and 3 of 5 rows), group 1 is empty, group 3 is
# smaller than a tile, and group 4 spans a tile boundary (96 rows).
SHARED = [20, 0, 9, 5, 62]
# Empty groups first and last, and an empty group on a tile boundary.
EDGES = [0, 32, 0, 30, 2, 0]


def cases():
    # Sizes stay small (fixtures of tens of KB): K and N are ragged only
    # where a case tests the remainders, on two groups.
    return [
        gmm_case("gmm_f32_shared3_empty_k32_n128", "f32", SHARED, 32, 128, 32, 32, 128),
        gmm_case("gmm_bf16_ragged_k136_n136", "bf16", [40, 56], 136, 136, 32, 128, 128),
        gmm_case("gmm_bf16_transpose_ragged_k136_n136", "bf16", [40, 56], 136, 136, 32, 128, 128,
                 transpose_rhs=True),
        gmm_case("gmm_bf16_transpose_rhs_acc_edges", "bf16", EDGES, 32, 128, 16, 32, 128,
                 transpose_rhs=True, acc=True),
        gmm_case("gmm_bf16_out_bf16_one_group", "bf16", [0, 48, 0], 32, 256, 16, 32, 128,
                 out_dtype="bf16"),
        # Each group on whole tiles: the tile axis runs 3 of its bound of 5.
        gmm_case("gmm_bf16_sizes_16_0_32", "bf16", [16, 0, 32], 64, 128, 16, 64, 128),
        tgmm_case("tgmm_f32_shared3_empty_k24_n128", "f32", SHARED, 24, 128, 32, 24, 128),
        tgmm_case("tgmm_bf16_acc_edges", "bf16", EDGES, 16, 128, 16, 16, 128, acc=True),
        # M not a multiple of tm: the last row tile is ragged (84 rows in
        # tiles of 32, 50 in tiles of 16); its padding rows belong to no
        # group. An empty last group visits that last tile (tgmm).
        gmm_case("gmm_f32_ragged_m84_tm32", "f32", [20, 0, 9, 5, 50], 32, 128, 32, 32, 128),
        gmm_case("gmm_bf16_ragged_m50_acc", "bf16", [0, 30, 20], 32, 128, 16, 32, 128, acc=True),
        tgmm_case("tgmm_f32_ragged_m84_tm32", "f32", [20, 0, 9, 5, 50], 24, 128, 32, 24, 128),
        tgmm_case("tgmm_bf16_ragged_m50_acc_empty_last", "bf16", [30, 20, 0], 16, 128, 16, 16,
                  128, acc=True),
    ]

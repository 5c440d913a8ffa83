"""Fixtures of kernels/splash.pk (splash attention forward and backward)
against a float64 numpy reference: dense attention over the whole score
matrix with the mask applied as -inf, and its gradients by the chain rule.

The mask info the kernels read is built here with numpy, independently of
the Rust builder (`pkc meta splash`): block-level any/all of the padded
dense mask, partial blocks deduplicated in first-seen grid order, and the
"next" arrays found by a sorted search over the live blocks' flat indices.
tests/cli_meta.rs checks that the builder writes the same arrays."""

import numpy as np

from .common import as_dtype, case, f64, rng, save


def dense_mask(kind, sq, skv, arg=None):
    """The [sq, skv] bool mask of a description: `causal`, `local` with
    arg = (left, right), `chunked` with arg = chunk size, or `full`."""
    r = np.arange(sq)[:, None]
    c = np.arange(skv)[None, :]
    if kind == "causal":
        return c <= r
    if kind == "local":
        left, right = arg
        return (c >= r - left) & (c <= r + right)
    if kind == "chunked":
        return (c <= r) & (r // arg == c // arg)
    if kind == "full":
        return np.ones((sq, skv), dtype=bool)
    raise ValueError(kind)


def next_live(live):
    """For every block, in row-major order of the [n0, n1] grid, the
    flat index of the first live block at or after it, wrapping to the
    first live block; -1 everywhere when nothing is live."""
    flat = live.reshape(-1)
    idx = np.nonzero(flat)[0]
    if len(idx) == 0:
        return np.full(flat.shape, -1)
    pos = np.searchsorted(idx, np.arange(flat.size))
    return idx[np.where(pos == len(idx), 0, pos)]


def shrink(kinds, data, masks):
    """[rows, cols] arrays to [rows, steps]: each row's live entries moved
    to the front (steps = the most live entries of any row, at least 1),
    and the "next" values recomputed over the new order."""
    rows = kinds.shape[0]
    lives = [np.nonzero(kinds[r])[0] for r in range(rows)]
    steps = max(1, max(len(x) for x in lives))
    k, d, m = (np.zeros((rows, steps), np.int32) for _ in range(3))
    for r, idx in enumerate(lives):
        k[r, :len(idx)], d[r, :len(idx)], m[r, :len(idx)] = kinds[r, idx], data[r, idx], masks[r, idx]
    return k, *nexts_of(k, d, m)


def nexts_of(kinds, data, masks):
    """data_next and mask_next of `kinds` with the given values at live
    (and partial) entries."""
    out = []
    for live, vals in ((kinds != 0, data), (kinds == 1, masks)):
        nxt = next_live(live)
        out.append(np.where(nxt < 0, 0, vals.reshape(-1)[np.maximum(nxt, 0)])
                   .reshape(kinds.shape).astype(np.int32))
    return out


def mask_info(mask, bq, bk, shrunk=False):
    """data_next, mask_next, block_mask [nq, nk], their dkv forms [nk, nq]
    and mask_blocks [P, bq, bk] (int8; one all-zero block when no block is
    partial, so that the operand is never empty). With `shrunk`, the grid
    is shrunk to each row's (column's) live blocks, as JAX's shrink_grid."""
    sq, skv = mask.shape
    nq, nk = -(-sq // bq), -(-skv // bk)
    padded = np.zeros((nq * bq, nk * bk), dtype=bool)
    padded[:sq, :skv] = mask
    blocks = padded.reshape(nq, bq, nk, bk).transpose(0, 2, 1, 3)
    anyb, allb = blocks.any(axis=(2, 3)), blocks.all(axis=(2, 3))
    block_mask = np.where(allb, 2, np.where(anyb, 1, 0)).astype(np.int32)
    partial, index = [], {}
    block_index = np.zeros((nq, nk), dtype=np.int64)
    for i in range(nq):
        for j in range(nk):
            if block_mask[i, j] == 1:
                key = blocks[i, j].tobytes()
                if key not in index:
                    index[key] = len(partial)
                    partial.append(blocks[i, j])
                block_index[i, j] = index[key]
    mask_blocks = (np.stack(partial) if partial else np.zeros((1, bq, bk), bool)).astype(np.int8)

    def nexts(bm, bidx):
        nxt = next_live(bm != 0)
        cols = bm.shape[1]
        data = np.where(nxt < 0, 0, nxt % cols).reshape(bm.shape)
        nxt_p = next_live(bm == 1)
        flat_b = bidx.reshape(-1)
        masks = np.where(nxt_p < 0, 0, flat_b[np.maximum(nxt_p, 0)]).reshape(bm.shape)
        return data.astype(np.int32), masks.astype(np.int32)

    data_next, mask_next = nexts(block_mask, block_index)
    dkv_block_mask = np.ascontiguousarray(block_mask.T)
    dkv_data_next, dkv_mask_next = nexts(dkv_block_mask, np.ascontiguousarray(block_index.T))
    if shrunk:
        block_mask, data_next, mask_next = shrink(block_mask, data_next, mask_next)
        dkv_block_mask, dkv_data_next, dkv_mask_next = shrink(
            dkv_block_mask, dkv_data_next, dkv_mask_next)
    return {
        "data_next": data_next, "mask_next": mask_next, "block_mask": block_mask,
        "dkv_data_next": dkv_data_next, "dkv_mask_next": dkv_mask_next,
        "dkv_block_mask": dkv_block_mask, "mask_blocks": mask_blocks,
    }


def masked_attention(q, k, v, mask, sm_scale, soft_cap):
    """o [B, H, S, D], lse [B, H, S, 1] and the probabilities."""
    h, kh = q.shape[1], k.shape[1]
    kr, vr = np.repeat(k, h // kh, axis=1), np.repeat(v, h // kh, axis=1)
    raw = np.einsum("bhqd,bhkd->bhqk", q, kr) * sm_scale
    capped = soft_cap * np.tanh(raw / soft_cap) if soft_cap > 0 else raw
    s = np.where(mask[None, None], capped, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    l = e.sum(axis=-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", e / l, vr), m + np.log(l), e / l, capped


def masked_grads(q, k, v, do, mask, sm_scale, soft_cap):
    """dq, dk, dv of masked_attention, float64; dk and dv sum over the
    query heads of each key/value head."""
    b, h, _, d = q.shape
    kh, sk = k.shape[1], k.shape[2]
    kr, vr = np.repeat(k, h // kh, axis=1), np.repeat(v, h // kh, axis=1)
    _, _, p, capped = masked_attention(q, k, v, mask, sm_scale, soft_cap)
    dv = np.einsum("bhqk,bhqd->bhkd", p, do)
    dp = np.einsum("bhqd,bhkd->bhqk", do, vr)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    if soft_cap > 0:
        ds = ds * (1.0 - (capped / soft_cap) ** 2)
    dq = np.einsum("bhqk,bhkd->bhqd", ds, kr) * sm_scale
    dk = np.einsum("bhqk,bhqd->bhkd", ds, q) * sm_scale
    group = lambda x: x.reshape(b, kh, h // kh, sk, d).sum(axis=2)
    return dq, group(dk), group(dv)


def tolerances(dtype, backward):
    if dtype == "f32" and not backward:
        # f32 scores over D terms and f32 exps: a few ulps of the largest
        # term; o averages values of size ~1, so 1e-5 absolute covers
        # outputs that cancel toward zero.
        return {"rtol": 1e-5, "atol": 1e-5}
    if dtype == "f32":
        # Sums of up to SK (or group * S) f32 products of size ~1, with di
        # from the f32-stored o: 1e-4 covers the accumulated rounding.
        return {"rtol": 1e-4, "atol": 1e-4}
    if not backward:
        # The probabilities are rounded to bf16 for the second matmul (2^-9
        # relative per term, at most ~8e-3 in total for |v| up to ~4), and
        # o is stored as bf16.
        return {"rtol": 8e-3, "atol": 8e-3}
    # p and ds are rounded to bf16 for the matmuls and the stored o and the
    # gradients are bf16: a few bf16 ulps of values of size ~1.
    return {"rtol": 2e-2, "atol": 2e-2}


def params_of(b, h, kh, s, sk, d, bq, bk, np_, sm_scale, soft_cap, dtype):
    return {
        "B": b, "H": h, "KH": kh, "S": s, "SK": sk, "D": d, "bq": bq, "bk": bk, "NP": np_,
        "sm_scale": repr(float(sm_scale)), "soft_cap": soft_cap, "T": dtype,
    }


def splash_case(name, dtype, b, h, kh, s, sk, d, bq, bk, mask, soft_cap=0.0, backward=False,
                nan_unseen=False, shrunk=False):
    """The forward case (and with `backward`, a dq and a dkv case) of one
    configuration and mask. With `nan_unseen`, the keys and values that no
    query sees are NaN: a kernel that computed or read a skipped block
    would spread them (0 * NaN is NaN), so the case shows that skipped
    blocks are neither computed nor used."""
    g = rng(name)
    sm_scale = 1.0 / np.sqrt(d)
    q = as_dtype(g.normal(0.0, 1.0, (b, h, s, d)), dtype)
    k = as_dtype(g.normal(0.0, 1.0, (b, kh, sk, d)), dtype)
    v = as_dtype(g.normal(0.0, 1.0, (b, kh, sk, d)), dtype)
    info = mask_info(mask, bq, bk, shrunk)
    params = params_of(b, h, kh, s, sk, d, bq, bk, info["mask_blocks"].shape[0], sm_scale,
                       soft_cap, dtype)
    if shrunk:
        params["NKS"] = info["data_next"].shape[1]
        params["NQS"] = info["dkv_data_next"].shape[1]
    o, lse, _, _ = masked_attention(f64(q), f64(k), f64(v), mask, sm_scale, soft_cap)
    if nan_unseen:
        unseen = ~mask.any(axis=0)
        k[:, :, unseen] = np.nan
        v[:, :, unseen] = np.nan
    fwd_info = {n: info[n] for n in ("data_next", "mask_next", "block_mask")}
    inputs = {**fwd_info, "q": q, "k": k, "v": v, "mask_blocks": info["mask_blocks"]}
    out = [case(name, "kernels/splash.pk", "splash_attention", params, inputs,
                {"o": as_dtype(o, dtype), "lse": lse}, tolerances(dtype, False))]
    if backward:
        do = as_dtype(g.normal(0.0, 1.0, (b, h, s, d)), dtype)
        dq, dk, dv = masked_grads(f64(q), f64(k), f64(v), f64(do), mask, sm_scale, soft_cap)
        common = {"q": q, "k": k, "v": v, "mask_blocks": info["mask_blocks"],
                  "o": as_dtype(o, dtype), "do": do, "lse": lse.astype(np.float32)}
        t = tolerances(dtype, True)
        out.append(case(name + "_dq", "kernels/splash.pk", "splash_attention_bwd_dq", params,
                        {**fwd_info, **common}, {"dq": as_dtype(dq, dtype)}, t))
        dkv_info = {n: info[n] for n in ("dkv_data_next", "dkv_mask_next", "dkv_block_mask")}
        out.append(case(name + "_dkv", "kernels/splash.pk", "splash_attention_bwd_dkv", params,
                        {**dkv_info, **common},
                        {"dk": as_dtype(dk, dtype), "dv": as_dtype(dv, dtype)}, t))
    return out


def dense_random_mask(name, sq, skv):
    """A dense mask with whole masked blocks, partial blocks and full
    blocks: random keep-probabilities per [32, 128] tile, then at least the
    diagonal-ish key `r % skv` per row so that no row is empty."""
    g = rng(name + "/mask")
    tiles = g.choice([0.0, 0.5, 1.0], size=(-(-sq // 32), -(-skv // 128)))
    prob = np.repeat(np.repeat(tiles, 32, axis=0), 128, axis=1)[:sq, :skv]
    mask = g.random((sq, skv)) < prob
    mask[np.arange(sq), np.arange(sq) % skv] = True
    return mask


def builder_fixtures():
    """Masks and the numpy mask info the builder test compares against:
    tests/data/splash_meta/<name>/{mask.npy, <array>.npy}."""
    configs = [
        ("causal_s256_bq32_bk128", "causal", None, 256, 256, 32, 128),
        ("local_l40_r8_s200_sk300_bq32_bk128", "local", (40, 8), 200, 300, 32, 128),
        ("chunked_c48_s256_bq64_bk128", "chunked", 48, 256, 256, 64, 128),
        ("full_s100_sk130_bq32_bk128", "full", None, 100, 130, 32, 128),
    ]
    for name, kind, arg, sq, skv, bq, bk in configs:
        mask = dense_mask(kind, sq, skv, arg)
        for n, a in mask_info(mask, bq, bk).items():
            save("splash_meta/" + name, n, a)
    mask = dense_mask("local", 256, 300, (40, 8))
    for n, a in mask_info(mask, 32, 128, shrunk=True).items():
        save("splash_meta/local_l40_r8_s256_sk300_bq32_bk128_shrunk", n, a)
    mask = dense_random_mask("dense_s96_sk256", 96, 256)
    save("splash_meta/dense_s96_sk256_bq32_bk128", "mask", mask)
    for n, a in mask_info(mask, 32, 128).items():
        save("splash_meta/dense_s96_sk256_bq32_bk128", n, a)


def cases():
    builder_fixtures()
    # Small head dimensions keep the fixtures small; S = 256 with [32, 128]
    # blocks still gives grids of 8 x 2 blocks with skipped, partial and
    # full blocks.
    return (
        splash_case("splash_f32_causal_gqa_h2kh1_s256d16_bq32bk128", "f32", 1, 2, 1, 256, 256,
                    16, 32, 128, dense_mask("causal", 256, 256), backward=True)
        + splash_case("splash_bf16_local_l64r0_gqa_s256d32_bq32bk128", "bf16", 1, 2, 1, 256, 256,
                      32, 32, 128, dense_mask("local", 256, 256, (64, 0)), backward=True)
        + splash_case("splash_f32_chunked_c96_softcap_s256d16", "f32", 1, 1, 1, 256, 256, 16,
                      64, 128, dense_mask("chunked", 256, 256, 96), soft_cap=1.5,
                      backward=True)
        + splash_case("splash_f32_dense_ragged_s96_sk200_bq32bk128", "f32", 1, 2, 1, 96, 200,
                      32, 32, 128, dense_random_mask("splash_dense_ragged", 96, 200))
        + splash_case("splash_f32_full_ragged_s40_sk136", "f32", 1, 1, 1, 40, 136, 32, 32, 128,
                      dense_mask("full", 40, 136))
        + splash_case("splash_f32_dense_mqa_s64_sk256", "f32", 1, 2, 1, 64, 256, 32, 32, 128,
                      dense_random_mask("splash_dense_mqa", 64, 256), backward=True)
        + splash_case("splash_f32_unseen_keys_nan_s64_sk384", "f32", 1, 1, 1, 64, 384, 16, 32,
                      128, unseen_tail_mask(), nan_unseen=True)
        + splash_case("splash_f32_local_shrunk_l60r140_s256_sk392_d16", "f32", 1, 2, 1, 256,
                      392, 16, 32, 128, dense_mask("local", 256, 392, (60, 140)), shrunk=True)
        + splash_case("splash_f32_local_shrunk_l100r0_s256_d16", "f32", 1, 2, 1, 256, 256, 16,
                      32, 128, dense_mask("local", 256, 256, (100, 0)), backward=True, shrunk=True)
    )


def unseen_tail_mask():
    """[64, 384]: causal over the first 64 keys, a random band over the
    next 64, and keys 128.. seen by no query (two wholly masked key
    blocks of 128 in every row)."""
    mask = np.zeros((64, 384), dtype=bool)
    mask[:, :64] = dense_mask("causal", 64, 64)
    mask[:, 64:128] = rng("splash_unseen/mask").random((64, 64)) < 0.5
    return mask

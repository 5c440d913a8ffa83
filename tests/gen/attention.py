"""Fixtures of kernels/flash_attention.pk against a float64 numpy
reference: the full score matrix, masked with -inf, softmaxed and
multiplied by v, from q, k and v exactly as the kernel reads them."""

import numpy as np

from .common import as_dtype, case, f64, rng


def attention_ref(q, k, v, sm_scale, causal, soft_cap, q_seg, kv_seg):
    """o [B, H, S, D] and lse [B, H, S, 1]; query head h reads key/value
    head h // (H // KH)."""
    h, kh = q.shape[1], k.shape[1]
    k = np.repeat(k, h // kh, axis=1)
    v = np.repeat(v, h // kh, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * sm_scale
    if soft_cap > 0:
        s = soft_cap * np.tanh(s / soft_cap)
    sq, sk = q.shape[2], k.shape[2]
    keep = np.ones((1, 1, sq, sk), dtype=bool)
    if causal:
        keep = keep & (np.arange(sk)[None, :] <= np.arange(sq)[:, None])
    if q_seg is not None:
        keep = keep & (q_seg[:, None, :, :] == kv_seg[:, None, :, :])
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    l = e.sum(axis=-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", e / l, v), m + np.log(l)


def flash_case(name, dtype, b, h, kh, s, sk, d, bq, bk, causal=True, soft_cap=0.0,
               segments=False, sm_scale=None):
    g = rng(name)
    sm_scale = 1.0 / np.sqrt(d) if sm_scale is None else sm_scale
    q = as_dtype(g.normal(0.0, 1.0, (b, h, s, d)), dtype)
    k = as_dtype(g.normal(0.0, 1.0, (b, kh, sk, d)), dtype)
    v = as_dtype(g.normal(0.0, 1.0, (b, kh, sk, d)), dtype)
    if segments:
        # Sorted segment ids, as packed sequences have: each query's segment
        # also occurs among the keys, so no row is wholly masked.
        q_seg = np.sort(g.integers(0, 3, (b, s)), axis=1).astype(np.int32)[:, :, None]
        kv_seg = np.sort(np.concatenate(
            [np.tile(np.arange(3), (b, 1)), g.integers(0, 3, (b, sk - 3))], axis=1
        ), axis=1).astype(np.int32)[:, None, :]
        ref_seg = (q_seg, kv_seg)
    else:
        q_seg = np.zeros((1, bq, 1), np.int32)
        kv_seg = np.zeros((1, 1, bk), np.int32)
        ref_seg = (None, None)
    o, lse = attention_ref(f64(q), f64(k), f64(v), sm_scale, causal, soft_cap, *ref_seg)
    params = {
        "B": b, "H": h, "KH": kh, "S": s, "SK": sk, "D": d, "bq": bq, "bk": bk,
        "sm_scale": repr(float(sm_scale)), "causal": str(causal).lower(),
        "soft_cap": soft_cap, "segments": str(segments).lower(), "T": dtype,
    }
    inputs = {"q": q, "k": k, "v": v, "q_seg": q_seg, "kv_seg": kv_seg}
    if dtype == "f32":
        # f32 scores over D terms and f32 exps: errors of a few ulps of the
        # largest term, 1e-5 relative; o averages values of size ~1, so
        # atol 1e-5 covers outputs that cancel toward zero.
        t = {"rtol": 1e-5, "atol": 1e-5}
    else:
        # As Pallas does, the probabilities are rounded to bf16 for the
        # second matmul: each term of o carries up to 2^-9 relative error,
        # which for |v| up to ~4 is at most ~8e-3 in total and far less on
        # average; o itself is then rounded to bf16 (2^-9 relative). lse is
        # f32 from exact products of bf16 inputs, and passes the same
        # bounds easily.
        t = {"rtol": 8e-3, "atol": 8e-3}
    expected = {"o": as_dtype(o, dtype), "lse": lse}
    return case(name, "kernels/flash_attention.pk", None, params, inputs, expected, t)


def cases():
    return [
        flash_case("flash_f32_causal_b1h2s64d64", "f32", 1, 2, 2, 64, 64, 64, 16, 16),
        flash_case("flash_bf16_causal_gqa_h4kh2_s64d128_bq32bk16", "bf16", 1, 4, 2, 64, 64, 128, 32, 16),
        flash_case("flash_f32_causal_ragged_s56_bq16bk16", "f32", 1, 1, 1, 56, 56, 64, 16, 16,
                   sm_scale=0.2),
        flash_case("flash_f32_mqa_segments_softcap_s40_sk200", "f32", 1, 2, 1, 40, 200, 64, 16, 128,
                   causal=False, soft_cap=1.5, segments=True),
        flash_case("flash_bf16_full_b2h1s32d128", "bf16", 2, 1, 1, 32, 32, 128, 16, 16, causal=False),
    ]

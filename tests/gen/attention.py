"""Fixtures of kernels/flash.pk (flash attention forward and backward)
against a float64 numpy reference: the full score matrix, masked with
-inf, softmaxed and multiplied by v, and its gradients by the chain rule,
from the inputs exactly as the kernels read them."""

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
               segments=False, sm_scale=None, residuals=True):
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
        ref_seg = (None, None)
    o, lse = attention_ref(f64(q), f64(k), f64(v), sm_scale, causal, soft_cap, *ref_seg)
    params = {
        "B": b, "H": h, "KH": kh, "S": s, "SK": sk, "D": d, "bq": bq, "bk": bk,
        "sm_scale": repr(float(sm_scale)), "causal": str(causal).lower(),
        "soft_cap": soft_cap, "segments": str(segments).lower(),
        "residuals": str(residuals).lower(), "T": dtype,
    }
    # Segment ids are operands only with `segments`.
    inputs = {"q": q, "k": k, "v": v}
    if segments:
        inputs.update(q_seg=q_seg, kv_seg=kv_seg)
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
    expected = {"o": as_dtype(o, dtype)}
    if residuals:
        expected["lse"] = lse
    return case(name, "kernels/flash.pk", "flash_attention", params, inputs, expected, t)


def single_head_case(name, s, d, bq, bk):
    """kernels/attention.pk: one head, no mask, the whole key range in VMEM."""
    g = rng(name)
    scale = 1.0 / np.sqrt(d)
    q, k, v = (as_dtype(g.normal(0.0, 1.0, (s, d)), "f32") for _ in range(3))
    o, _ = attention_ref(f64(q)[None, None], f64(k)[None, None], f64(v)[None, None],
                         scale, False, 0.0, None, None)
    params = {"S": s, "D": d, "bq": bq, "bk": bk, "scale": repr(float(scale))}
    # f32 as the flash forward: a few ulps of the largest score, 1e-5.
    t = {"rtol": 1e-5, "atol": 1e-5}
    return case(name, "kernels/attention.pk", None, params, {"q": q, "k": k, "v": v},
                {"o": o[0, 0]}, t)


def cases():
    return [
        single_head_case("attention_f32_s256d128_bq64bk128", 256, 128, 64, 128),
        flash_case("flash_f32_causal_b1h2s64d64", "f32", 1, 2, 2, 64, 64, 64, 16, 16),
        flash_case("flash_bf16_causal_gqa_h4kh2_s64d128_bq32bk16", "bf16", 1, 4, 2, 64, 64, 128, 32, 16),
        flash_case("flash_f32_causal_ragged_s56_bq16bk16", "f32", 1, 1, 1, 56, 56, 64, 16, 16,
                   sm_scale=0.2),
        flash_case("flash_f32_mqa_segments_softcap_s40_sk200", "f32", 1, 2, 1, 40, 200, 64, 16, 128,
                   causal=False, soft_cap=1.5, segments=True),
        flash_case("flash_bf16_full_b2h1s32d128", "bf16", 2, 1, 1, 32, 32, 128, 16, 16, causal=False),
        # Key blocks and D whole multiples of the 128 lanes the row
        # statistics are kept on (tiled, not broadcast, at each use).
        flash_case("flash_f32_causal_gqa_s384d128_bq128bk128", "f32", 1, 4, 2, 384, 384, 128,
                   128, 128),
        # Without residuals the kernel has one output.
        flash_case("flash_bf16_no_residuals_s256d128_bq64bk128", "bf16", 1, 2, 2, 256, 256, 128,
                   64, 128, residuals=False),
        # Key blocks of several times 128 lanes: the row statistics are
        # repeated across the block's lanes where the scores read them.
        flash_case("flash_f32_causal_s256d128_bq128bk256", "f32", 1, 1, 1, 256, 256, 128,
                   128, 256),
        flash_case("flash_bf16_causal_softcap_s384_bq128bk384", "bf16", 1, 1, 1, 384, 384, 128,
                   128, 384, soft_cap=20.0),
    ]


def attention_grads(q, k, v, do, sm_scale, causal, soft_cap, q_seg, kv_seg):
    """dq, dk, dv of the reference attention, float64, by the chain rule
    through softmax (and the soft cap); dk and dv sum over the query heads
    of each key/value head."""
    h, kh = q.shape[1], k.shape[1]
    kr = np.repeat(k, h // kh, axis=1)
    vr = np.repeat(v, h // kh, axis=1)
    raw = np.einsum("bhqd,bhkd->bhqk", q, kr) * sm_scale
    capped = soft_cap * np.tanh(raw / soft_cap) if soft_cap > 0 else raw
    sq, sk = q.shape[2], k.shape[2]
    keep = np.ones((1, 1, sq, sk), dtype=bool)
    if causal:
        keep = keep & (np.arange(sk)[None, :] <= np.arange(sq)[:, None])
    if q_seg is not None:
        keep = keep & (q_seg[:, None, :, :] == kv_seg[:, None, :, :])
    s = np.where(keep, capped, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    dv = np.einsum("bhqk,bhqd->bhkd", p, do)
    dp = np.einsum("bhqd,bhkd->bhqk", do, vr)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    if soft_cap > 0:
        ds = ds * (1.0 - (capped / soft_cap) ** 2)
    dq = np.einsum("bhqk,bhkd->bhqd", ds, kr) * sm_scale
    dk = np.einsum("bhqk,bhqd->bhkd", ds, q) * sm_scale
    b, _, _, d = q.shape
    group = lambda x: x.reshape(b, kh, h // kh, sk, d).sum(axis=2)
    return dq, group(dk), group(dv)


def flash_bwd_cases(name, dtype, b, h, kh, s, sk, d, bq, bk, causal=True, soft_cap=0.0,
                    segments=False):
    """One dq case and one dkv case on the same inputs; o and lse are the
    float64 forward results, rounded as the forward kernel stores them."""
    g = rng(name)
    sm_scale = 1.0 / np.sqrt(d)
    q = as_dtype(g.normal(0.0, 1.0, (b, h, s, d)), dtype)
    k = as_dtype(g.normal(0.0, 1.0, (b, kh, sk, d)), dtype)
    v = as_dtype(g.normal(0.0, 1.0, (b, kh, sk, d)), dtype)
    do = as_dtype(g.normal(0.0, 1.0, (b, h, s, d)), dtype)
    if segments:
        q_seg = np.sort(g.integers(0, 3, (b, s)), axis=1).astype(np.int32)[:, :, None]
        kv_seg = q_seg[:, :, 0][:, None, :].copy()
        ref_seg = (q_seg, kv_seg)
    else:
        ref_seg = (None, None)
    o, lse = attention_ref(f64(q), f64(k), f64(v), sm_scale, causal, soft_cap, *ref_seg)
    o = as_dtype(o, dtype)
    # di = rowsum(do * o) is computed by the kernel from the stored o; the
    # reference's sum(dp * p) equals it in exact arithmetic.
    dq, dk, dv = attention_grads(f64(q), f64(k), f64(v), f64(do), sm_scale, causal, soft_cap,
                                 *ref_seg)
    params = {
        "B": b, "H": h, "KH": kh, "S": s, "SK": sk, "D": d, "bq": bq, "bk": bk,
        "sm_scale": repr(float(sm_scale)), "causal": str(causal).lower(),
        "soft_cap": soft_cap, "segments": str(segments).lower(), "T": dtype,
    }
    inputs = {"q": q, "k": k, "v": v, "o": o, "do": do, "lse": lse.astype(np.float32)}
    if segments:
        inputs.update(q_seg=q_seg, kv_seg=kv_seg)
    if dtype == "f32":
        # Sums of SK (or group * S) products of f32 values of size ~1, and
        # di from the f32-stored o: a few ulps of the largest partial sums,
        # 1e-4 absolute for gradients of size ~1 that cancel to near zero.
        t = {"rtol": 1e-4, "atol": 1e-4}
    else:
        # p and ds are rounded to bf16 for the matmuls (2^-9 relative per
        # term) and the stored o and the outputs are bf16: a few bf16 ulps.
        t = {"rtol": 2e-2, "atol": 2e-2}
    kernel = "kernels/flash.pk"
    return [
        case(name + "_dq", kernel, "flash_attention_bwd_dq", params, inputs,
             {"dq": as_dtype(dq, dtype)}, t),
        case(name + "_dkv", kernel, "flash_attention_bwd_dkv", params, inputs,
             {"dk": as_dtype(dk, dtype), "dv": as_dtype(dv, dtype)}, t),
    ]


def bwd_cases():
    return (
        flash_bwd_cases("flash_bwd_f32_causal_b1h2s64d64", "f32", 1, 2, 2, 64, 64, 64, 16, 16)
        + flash_bwd_cases("flash_bwd_f32_mqa_h2kh1_causal_bq32bk16_softcap", "f32", 1, 2, 1, 64, 64,
                          64, 32, 16, soft_cap=2.0)
        + flash_bwd_cases("flash_bwd_f32_segments_full_s128d64", "f32", 1, 1, 1, 128, 128, 64,
                          32, 128, causal=False, segments=True)
        + flash_bwd_cases("flash_bwd_bf16_causal_mqa_h2kh1_s32d128", "bf16", 1, 2, 1, 32, 32,
                          128, 16, 16)
    )

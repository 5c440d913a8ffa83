"""Fixtures of the fused layers: kernels/norms.pk, rope.pk, glu.pk and
xent.pk, against float64 numpy references computed from the inputs exactly
as the kernels read them (bf16 inputs are rounded first)."""

import numpy as np

from .common import as_dtype, case, f64, rng

# Tolerances. The kernels compute in f32: an f32 output differs from the
# float64 reference by a few ulps of rounding in the row reductions (at most
# a few hundred terms here) and in rsqrt/exp/log, so rtol 1e-5 with an atol
# of 1e-5 for values that cancel to near zero (centred rows, gradients that
# sum positive and negative terms). A bf16 output is the f32 result rounded
# once to 8 significant bits: half an ulp is 2^-9 relative, and an f32
# result that lies within f32 error of a rounding boundary may round the
# other way, so up to one ulp, 2^-8 = 3.9e-3; rtol 8e-3 allows both with a
# factor of two. The expected bf16 outputs are the float64 reference rounded
# to bf16 the same way, which keeps the difference within that one ulp. Its atol covers values near zero whose bf16 ulp is tiny
# next to the f32 error of their inputs' sums.
F32 = {"rtol": 1e-5, "atol": 1e-5}
BF16_OUT = {"rtol": 8e-3, "atol": 2e-3}


def tol(dtype):
    return F32 if dtype == "f32" else BF16_OUT


def rms_ref(h, w, eps):
    rstd = 1.0 / np.sqrt(np.mean(h * h, axis=1, keepdims=True) + eps)
    return h * rstd * w


def ln_ref(h, w, b, eps):
    xc = h - h.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(np.mean(xc * xc, axis=1, keepdims=True) + eps)
    return xc * rstd * w + b


def rms_bwd_ref(h, w, dy, eps):
    rstd = 1.0 / np.sqrt(np.mean(h * h, axis=1, keepdims=True) + eps)
    xhat = h * rstd
    g = dy * w
    dx = rstd * (g - xhat * np.mean(g * xhat, axis=1, keepdims=True))
    return dx, (dy * xhat).sum(axis=0, keepdims=True)


def ln_bwd_ref(h, w, dy, eps):
    xc = h - h.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(np.mean(xc * xc, axis=1, keepdims=True) + eps)
    xhat = xc * rstd
    g = dy * w
    dx = rstd * (g - g.mean(axis=1, keepdims=True) - xhat * np.mean(g * xhat, axis=1, keepdims=True))
    return dx, (dy * xhat).sum(axis=0, keepdims=True), dy.sum(axis=0, keepdims=True)


def norm_case(name, kind, dtype, r, c, br, residual=False, offset=0.0):
    """A forward case of `rms_norm`/`layer_norm` (or their `_residual`
    variants). `offset` shifts the rows' mean, which LayerNorm removes."""
    g = rng(name)
    eps = 1e-6 if kind == "rms" else 1e-5
    x = as_dtype(g.normal(offset, 1.0, (r, c)), dtype)
    w = as_dtype(g.uniform(0.5, 1.5, (1, c)), dtype)
    b = as_dtype(g.uniform(-0.5, 0.5, (1, c)), dtype)
    inputs = {"x": x}
    h = f64(x)
    expected = {}
    if residual:
        rr = as_dtype(g.normal(0.0, 1.0, (r, c)), dtype)
        inputs["r"] = rr
        # The kernel rounds the sum to the storage dtype before normalising.
        h = f64(as_dtype(f64(x) + f64(rr), dtype))
        expected["h"] = as_dtype(h, dtype)
    inputs["w"] = w
    if kind == "rms":
        expected["y"] = rms_ref(h, f64(w), eps)
    else:
        inputs["b"] = b
        expected["y"] = ln_ref(h, f64(w), f64(b), eps)
    expected["y"] = as_dtype(expected["y"], dtype)
    entry = ("rms_norm" if kind == "rms" else "layer_norm") + ("_residual" if residual else "")
    params = {"R": r, "C": c, "br": br, "T": dtype}
    return case(name, "kernels/norms.pk", entry, params, inputs, expected, tol(dtype))


def norm_bwd_case(name, kind, dtype, r, c, br, residual=False):
    g = rng(name)
    eps = 1e-6 if kind == "rms" else 1e-5
    x = as_dtype(g.normal(0.5, 1.0, (r, c)), dtype)
    w = as_dtype(g.uniform(0.5, 1.5, (1, c)), dtype)
    dy = as_dtype(g.normal(0.0, 1.0, (r, c)), dtype)
    inputs = {"x": x, "w": w, "dy": dy}
    if kind == "rms":
        dx, dw = rms_bwd_ref(f64(x), f64(w), f64(dy), eps)
        expected = {"dx": dx, "dw": dw}
    else:
        dx, dw, db = ln_bwd_ref(f64(x), f64(w), f64(dy), eps)
        expected = {"dx": dx, "dw": dw, "db": db}
    if residual:
        dh = as_dtype(g.normal(0.0, 1.0, (r, c)), dtype)
        inputs["dh"] = dh
        expected["dx"] = expected["dx"] + f64(dh)
    else:
        # A one-block placeholder: the kernel never reads it.
        inputs["dh"] = as_dtype(np.zeros((br, c)), dtype)
    expected["dx"] = as_dtype(expected["dx"], dtype)
    entry = "rms_norm_bwd" if kind == "rms" else "layer_norm_bwd"
    params = {"R": r, "C": c, "br": br, "T": dtype, "residual": "true" if residual else "false"}
    # The weight gradients sum r rows: their error grows with the row count,
    # still within 1e-5 relative for f32 here; bf16 inputs give f32 sums, so
    # only dx carries bf16 rounding.
    return case(name, "kernels/norms.pk", entry, params, inputs, expected, tol(dtype))


def cases():
    return [
        norm_case("rms_norm_f32_40x128_ragged", "rms", "f32", 40, 128, 16),
        norm_case("rms_norm_bf16_32x256", "rms", "bf16", 32, 256, 16),
        norm_case("rms_norm_residual_f32_24x128", "rms", "f32", 24, 128, 8, residual=True),
        norm_case("rms_norm_residual_bf16_48x128_ragged", "rms", "bf16", 48, 128, 32, residual=True),
        norm_bwd_case("rms_norm_bwd_f32_40x128_ragged", "rms", "f32", 40, 128, 16),
        norm_bwd_case("rms_norm_bwd_bf16_32x128_residual", "rms", "bf16", 32, 128, 16, residual=True),
        norm_bwd_case("rms_norm_bwd_f32_16x256_one_block", "rms", "f32", 16, 256, 16),
        norm_case("layer_norm_f32_40x128_ragged_offset", "ln", "f32", 40, 128, 16, offset=3.0),
        norm_case("layer_norm_bf16_32x256", "ln", "bf16", 32, 256, 16),
        norm_case("layer_norm_residual_f32_24x128", "ln", "f32", 24, 128, 8, residual=True),
        norm_case("layer_norm_residual_bf16_32x128", "ln", "bf16", 32, 128, 16, residual=True),
        norm_bwd_case("layer_norm_bwd_f32_40x128_ragged", "ln", "f32", 40, 128, 16),
        norm_bwd_case("layer_norm_bwd_f32_24x128_residual", "ln", "f32", 24, 128, 8, residual=True),
        norm_bwd_case("layer_norm_bwd_bf16_32x128", "ln", "bf16", 32, 128, 16),
        # Blocks of 256 KiB: strips of rows on the CPU reference (the
        # backward's weight gradients sum over rows and stay whole).
        norm_case("rms_norm_residual_f32_160x512_strips", "rms", "f32", 160, 512, 128, residual=True),
        norm_case("layer_norm_bf16_128x512_strips", "ln", "bf16", 128, 512, 128),
        norm_bwd_case("rms_norm_bwd_f32_160x512_strips", "rms", "f32", 160, 512, 128),
    ]


def rope_tables(s, d, base=10000.0):
    """Hugging Face Llama's tables: each position's angles, twice."""
    inv = 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)
    ang = np.outer(np.arange(s, dtype=np.float64), inv)
    ang = np.concatenate([ang, ang], axis=1)
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def rope_case(name, dtype, b, h, s, d, bs):
    g = rng(name)
    x = as_dtype(g.normal(0.0, 1.0, (b, h, s, d)), dtype)
    cos, sin = rope_tables(s, d)
    xf = f64(x)
    rot = np.concatenate([-xf[..., d // 2 :], xf[..., : d // 2]], axis=-1)
    y = xf * f64(cos) + rot * f64(sin)
    params = {"B": b, "H": h, "S": s, "D": d, "bs": bs, "T": dtype}
    inputs = {"x": x, "cos": cos, "sin": sin}
    return case(name, "kernels/rope.pk", None, params, inputs, {"y": as_dtype(y, dtype)}, tol(dtype))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def gelu_erf(x):
    from math import erf

    return 0.5 * x * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def glu_case(name, entry, dtype, m, n, bm, bn, approximate=True):
    g = rng(name)
    a = as_dtype(g.normal(0.0, 2.0, (m, n)), dtype)
    b = as_dtype(g.normal(0.0, 1.0, (m, n)), dtype)
    params = {"M": m, "N": n, "bm": bm, "bn": bn, "T": dtype}
    if entry == "swiglu":
        y = silu(f64(a)) * f64(b)
    else:
        params["approximate"] = "true" if approximate else "false"
        y = (gelu_tanh if approximate else gelu_erf)(f64(a)) * f64(b)
    expected = {"y": as_dtype(y, dtype)}
    return case(name, "kernels/glu.pk", entry, params, {"a": a, "b": b}, expected, tol(dtype))


def gated_mlp_case(name, dtype, m, n, k, bm, bn, bk, use_gelu=False):
    g = rng(name)
    x = as_dtype(g.uniform(-1.0, 1.0, (m, k)), dtype)
    wg = as_dtype(g.uniform(-1.0, 1.0, (k, n)) / np.sqrt(k) * 2.0, dtype)
    wu = as_dtype(g.uniform(-1.0, 1.0, (k, n)) / np.sqrt(k) * 2.0, dtype)
    gate, up = f64(x) @ f64(wg), f64(x) @ f64(wu)
    y = (gelu_tanh(gate) if use_gelu else silu(gate)) * up
    params = {"M": m, "N": n, "K": k, "bm": bm, "bn": bn, "bk": bk, "T": dtype,
              "use_gelu": "true" if use_gelu else "false"}
    inputs = {"x": x, "wg": wg, "wu": wu}
    # The two projections are f32 matmuls over K terms (the matmul cases'
    # 1e-5 relative); the epilogue adds the f32 error of exp/tanh.
    expected = {"y": as_dtype(y, dtype)}
    return case(name, "kernels/glu.pk", "gated_mlp", params, inputs, expected, tol(dtype))


def xent_ref(logits, labels, soft_cap):
    z = soft_cap * np.tanh(logits / soft_cap) if soft_cap > 0 else logits
    m = z.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(z - m).sum(axis=1, keepdims=True))
    rows = np.arange(z.shape[0])
    picked = z[rows, np.maximum(labels[:, 0], 0)][:, None]
    loss = np.where(labels >= 0, lse - picked, 0.0)
    return z, lse, loss


def xent_inputs(name, dtype, n, v, scale):
    g = rng(name)
    logits = as_dtype(g.normal(0.0, scale, (n, v)), dtype)
    labels = g.integers(0, v, (n, 1)).astype(np.int32)
    # Every fifth row is padding, ignored by the loss; one row's label is the
    # last vocabulary entry, in the ragged last block when V is ragged.
    labels[::5] = -100
    labels[1] = v - 1
    return g, logits, labels


def xent_case(name, dtype, n, v, bn, bv, soft_cap=0.0, scale=3.0):
    _, logits, labels = xent_inputs(name, dtype, n, v, scale)
    _, lse, loss = xent_ref(f64(logits), labels, soft_cap)
    params = {"N": n, "V": v, "bn": bn, "bv": bv, "soft_cap": soft_cap, "T": dtype}
    inputs = {"logits": logits, "labels": labels}
    # Both outputs are f32 whatever the logits' dtype. The logsumexp of a
    # row is a sum of V exps in f32 (relative error ~V * 2^-24 at worst,
    # 1e-5 at most here); the loss subtracts the label's logit from it, so
    # its absolute error is that of lse: atol 1e-4 for |lse| up to ~15.
    t = {"rtol": 1e-5, "atol": 1e-4}
    return case(name, "kernels/xent.pk", "xent", params, inputs, {"loss": loss, "lse": lse}, t)


def xent_bwd_case(name, dtype, n, v, bn, bv, soft_cap=0.0, scale=3.0):
    g, logits, labels = xent_inputs(name, dtype, n, v, scale)
    z, lse, _ = xent_ref(f64(logits), labels, soft_cap)
    dloss = g.uniform(0.5, 1.5, (n, 1)).astype(np.float32)
    onehot = np.arange(v)[None, :] == labels
    dz = np.where(labels >= 0, f64(dloss), 0.0) * (np.exp(z - lse) - onehot)
    if soft_cap > 0:
        dz = dz * (1.0 - (z / soft_cap) ** 2)
    params = {"N": n, "V": v, "bn": bn, "bv": bv, "soft_cap": soft_cap, "T": dtype}
    # The kernel is given the float64 logsumexp rounded to f32, as the
    # forward kernel would pass it (within its tolerance above).
    inputs = {"logits": logits, "labels": labels, "lse": lse.astype(np.float32), "dloss": dloss}
    # Probabilities are at most 1: the f32 error of exp(z - lse) is a few
    # ulps of 1 (plus lse's own f32 rounding, 2^-24 * |lse|): atol 1e-6.
    t = {"rtol": 1e-5, "atol": 1e-6} if dtype == "f32" else BF16_OUT
    expected = {"dlogits": as_dtype(dz, dtype)}
    return case(name, "kernels/xent.pk", "xent_bwd", params, inputs, expected, t)


def more_cases():
    return [
        rope_case("rope_f32_b1h2s64d128", "f32", 1, 2, 64, 128, 32),
        rope_case("rope_bf16_b2h2s48d128_ragged", "bf16", 2, 2, 48, 128, 32),
        rope_case("rope_f32_b1h1s16d256_one_block", "f32", 1, 1, 16, 256, 16),
        glu_case("swiglu_f32_24x256_ragged", "swiglu", "f32", 24, 256, 16, 128),
        glu_case("swiglu_bf16_32x384", "swiglu", "bf16", 32, 384, 16, 128),
        glu_case("geglu_tanh_f32_16x256", "geglu", "f32", 16, 256, 8, 128),
        glu_case("geglu_erf_bf16_48x256_ragged", "geglu", "bf16", 48, 256, 32, 256, approximate=False),
        gated_mlp_case("gated_mlp_swiglu_f32_16x128x128_one_k", "f32", 16, 128, 128, 8, 128, 128),
        gated_mlp_case("gated_mlp_geglu_bf16_32x256x128", "bf16", 32, 256, 128, 16, 128, 128, use_gelu=True),
        gated_mlp_case("gated_mlp_swiglu_bf16_16x128x384_k3", "bf16", 16, 128, 384, 16, 128, 128),
        xent_case("xent_f32_16x1000_ragged_vocab", "f32", 16, 1000, 8, 256),
        xent_case("xent_bf16_24x512", "bf16", 24, 512, 8, 128, scale=8.0),
        xent_case("xent_f32_20x384_softcap_ragged_rows", "f32", 20, 384, 8, 128, soft_cap=5.0),
        xent_bwd_case("xent_bwd_f32_16x1000_ragged_vocab", "f32", 16, 1000, 8, 256),
        xent_bwd_case("xent_bwd_bf16_16x512", "bf16", 16, 512, 16, 256),
        xent_bwd_case("xent_bwd_f32_20x384_softcap", "f32", 20, 384, 8, 128, soft_cap=5.0),
        # Blocks of 256 KiB and more: the CPU reference runs them in strips
        # of rows (ragged last row block, bf16 with a soft cap, backward).
        xent_case("xent_f32_80x2048_strips", "f32", 80, 2048, 64, 1024),
        xent_case("xent_bf16_64x2048_softcap_strips", "bf16", 64, 2048, 64, 1024, soft_cap=30.0, scale=8.0),
        xent_bwd_case("xent_bwd_f32_64x2048_strips", "f32", 64, 2048, 64, 1024),
    ]

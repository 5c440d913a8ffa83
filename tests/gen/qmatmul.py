"""Fixtures of kernels/qmatmul.pk (int8 w8a8 and block-scaled fp8
matmuls) against a float64 numpy reference that dequantizes the exact
quantized values the kernels read and multiplies them."""

import ml_dtypes
import numpy as np

from .common import as_dtype, case, f64, rng

FP8 = {"f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}


def tolerance(out_dtype):
    if out_dtype == "bf16":
        # One rounding of the f32 result to bf16: 2^-9 relative.
        return {"rtol": 8e-3, "atol": 1e-3}
    return None


def w8a8_case(name, m, k, n, bm, bn, bk, out_dtype="f32"):
    g = rng(name)
    x = g.integers(-127, 128, (m, k)).astype(np.int8)
    w = g.integers(-127, 128, (k, n)).astype(np.int8)
    x_scale = g.uniform(0.001, 0.02, (m, 1)).astype(np.float32)
    w_scale = g.uniform(0.001, 0.02, (1, n)).astype(np.float32)
    out = (f64(x_scale) * f64(x)) @ (f64(w) * f64(w_scale))
    params = {"M": m, "K": k, "N": n, "bm": bm, "bn": bn, "bk": bk, "O": out_dtype}
    # The int8 products sum exactly in i32 (|sum| <= K * 127^2 < 2^24 for
    # these K, so the cast to f32 is exact too); two f32 scalings then
    # round twice: 2.4e-7 relative, and atol covers sums near zero.
    t = tolerance(out_dtype) or {"rtol": 1e-6, "atol": 1e-6}
    inputs = {"x": x, "x_scale": x_scale, "w": w, "w_scale": w_scale}
    expected = {"out": as_dtype(out, out_dtype) if out_dtype == "bf16" else out}
    return case(name, "kernels/qmatmul.pk", "qmatmul_w8a8", params, inputs, expected, t)


def fp8_case(name, m, k, n, bm, bn, bk, fp8="f8e4m3fn", out_dtype="f32"):
    """`x` and `w` stored in `fp8` (the `.npy` files hold the ml_dtypes
    encodings), the reference from their exact values."""
    g = rng(name)
    x = g.normal(0.0, 1.0, (m, k)).astype(FP8[fp8])
    w = g.normal(0.0, 1.0, (k, n)).astype(FP8[fp8])
    # Scales as a quantizer makes them: one per row of each 1x128 block
    # of x, one per 128x128 block of w.
    xs = g.uniform(0.01, 1.0, (m, k // 128)).astype(np.float32)
    ws = g.uniform(0.01, 1.0, (k // 128, n // 128)).astype(np.float32)
    x_deq = f64(x) * np.repeat(f64(xs), 128, axis=1)
    w_deq = f64(w) * np.repeat(np.repeat(f64(ws), 128, axis=0), 128, axis=1)
    out = x_deq @ w_deq
    params = {"M": m, "K": k, "N": n, "bm": bm, "bn": bn, "bk": bk, "F": fp8, "O": out_dtype}
    # fp8 products are exact in f32; each 128-term slice sums in f32 (a
    # few ulps of terms of size ~10, ~1e-6 relative), is scaled twice and
    # added into the f32 accumulator: 1e-5 relative with atol for sums
    # that cancel.
    t = tolerance(out_dtype) or {"rtol": 1e-5, "atol": 1e-4}
    inputs = {
        "x": x,
        "x_scale": np.ascontiguousarray(xs.T[:, :, None]),
        "w": w,
        "w_scale": ws,
    }
    expected = {"out": as_dtype(out, out_dtype) if out_dtype == "bf16" else out}
    return case(name, "kernels/qmatmul.pk", "qmatmul_fp8", params, inputs, expected, t)


def cases():
    return [
        w8a8_case("qmatmul_w8a8_f32_64x256x256", 64, 256, 256, 32, 128, 128),
        w8a8_case("qmatmul_w8a8_bf16_ragged_m40", 40, 384, 128, 32, 128, 128, out_dtype="bf16"),
        w8a8_case("qmatmul_w8a8_f32_one_k_block", 32, 128, 384, 32, 128, 128),
        fp8_case("qmatmul_fp8_e4m3_f32_64x256x256", 64, 256, 256, 32, 256, 256),
        fp8_case("qmatmul_fp8_e4m3_bf16_ragged_m40", 40, 384, 128, 32, 128, 128, out_dtype="bf16"),
        fp8_case("qmatmul_fp8_e5m2_f32_32x256x128", 32, 256, 128, 32, 128, 256, fp8="f8e5m2"),
    ]

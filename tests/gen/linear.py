"""Fixtures of kernels/linear.pk (a linear layer with single-buffered,
resident weights) against a float64 numpy reference from the exact values
the kernel reads."""

import numpy as np

from .common import BF16, as_dtype, case, f64, rng


def linear_case(name, m, k, n, bm, bn, nw, dtype="bf16", out_dtype="f32"):
    g = rng(name)
    x = g.uniform(-1.0, 1.0, (m, k)).astype(np.float32)
    w = g.uniform(-1.0, 1.0, (k, n)).astype(np.float32)
    if dtype == "bf16":
        x, w = x.astype(BF16), w.astype(BF16)
    b = g.uniform(-1.0, 1.0, (1, n)).astype(np.float32)
    y = f64(x) @ f64(w) + f64(b)
    params = {"M": m, "K": k, "N": n, "bm": bm, "bn": bn, "nw": nw, "T": dtype, "O": out_dtype}
    if out_dtype == "bf16":
        # One rounding of the f32 result to bf16: 2^-9 relative.
        tol = {"rtol": 8e-3, "atol": 1e-3}
    else:
        # f32 sums of K products in a different order than float64.
        tol = {"rtol": 1e-5, "atol": 1e-4}
    expected = {"y": as_dtype(y, out_dtype) if out_dtype == "bf16" else y}
    return case(name, "kernels/linear.pk", None, params, {"x": x, "w": w, "b": b}, expected, tol)


def cases():
    return [
        # One weight buffer, resident for the whole grid (bn = N).
        linear_case("linear_bf16_resident_64x256x384", 64, 256, 384, 16, 384, 1),
        # One weight buffer refetched per column block, rows ragged.
        linear_case("linear_f32_single_ragged_m40_n256", 40, 128, 256, 16, 128, 1, dtype="f32"),
        # Two buffers, bf16 out.
        linear_case("linear_bf16_double_bf16_out", 32, 128, 256, 16, 128, 2, out_dtype="bf16"),
    ]

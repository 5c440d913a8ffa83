#!/usr/bin/env python3
"""Regenerates the numerics fixtures of the CPU reference under tests/data/.

Each case is a starter kernel with parameters, input arrays and the
expected outputs computed by numpy in float64 (from the inputs exactly as
the kernel sees them: bf16 inputs are rounded first) and saved as float32.
tests/data/cases.json lists the cases with their tolerances; the Rust test
tests/cpu_numerics.rs runs every case through the CPU reference.

Usage: python3 tests/gen_expected.py   (needs numpy and ml_dtypes)
"""

import json
import os

import ml_dtypes
import numpy as np

from gen import attention, gmm, layers, linear, paged, qmatmul, splash

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
RNG = np.random.default_rng(20240611)

# Tolerances, as numpy.testing.assert_allclose takes them. Elementwise adds
# are exact; matmuls differ from float64 only by f32 summation order; softmax
# by exp (within 1 ulp) and the row sums' order.
EXACT = {"rtol": 0.0, "atol": 0.0}
MATMUL = {"rtol": 1e-5, "atol": 1e-4}
SOFTMAX = {"rtol": 1e-5, "atol": 1e-9}


def save(case, name, arr):
    path = os.path.join(DATA, case, name + ".npy")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, arr)
    return os.path.relpath(path, os.path.dirname(HERE))


def uniform(shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def add_case(name, m, n, bm, bn):
    x, y = uniform((m, n)), uniform((m, n))
    return {
        "name": name,
        "kernel": "kernels/add.pk",
        "params": {"M": m, "N": n, "bm": bm, "bn": bn},
        "inputs": {"x": save(name, "x", x), "y": save(name, "y", y)},
        "expected": {"z": save(name, "z_expected", x + y)},
        **EXACT,
    }


def matmul_case(name, dtype, m, n, k, bm, bn, bk):
    a, b = uniform((m, k)), uniform((k, n))
    if dtype == "bf16":
        a = a.astype(ml_dtypes.bfloat16)
        b = b.astype(ml_dtypes.bfloat16)
    c = a.astype(np.float64) @ b.astype(np.float64)
    return {
        "name": name,
        "kernel": "kernels/matmul.pk",
        "params": {"M": m, "N": n, "K": k, "bm": bm, "bn": bn, "bk": bk, "T": dtype},
        "inputs": {"a": save(name, "a", a), "b": save(name, "b", b)},
        "expected": {"c": save(name, "c_expected", c.astype(np.float32))},
        **MATMUL,
    }


def softmax_case(name, r, c, br, scale=1.0):
    x = uniform((r, c), -scale, scale)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    return {
        "name": name,
        "kernel": "kernels/softmax.pk",
        "params": {"R": r, "C": c, "br": br},
        "inputs": {"x": save(name, "x", x)},
        "expected": {"y": save(name, "y_expected", y.astype(np.float32))},
        **SOFTMAX,
    }


def main():
    cases = [
        add_case("add_16x256", 16, 256, 8, 128),
        add_case("add_24x384_grid3x3", 24, 384, 8, 128),
        matmul_case("matmul_f32_64x128x256", "f32", 64, 128, 256, 32, 128, 128),
        matmul_case("matmul_f32_96x384x384_grid3x3x3", "f32", 96, 384, 384, 32, 128, 128),
        matmul_case("matmul_f32_128x256x128_one_k", "f32", 128, 256, 128, 64, 256, 128),
        matmul_case("matmul_bf16_64x256x512", "bf16", 64, 256, 512, 32, 128, 256),
        matmul_case("matmul_bf16_96x384x256_grid3x3x2", "bf16", 96, 384, 256, 32, 128, 128),
        softmax_case("softmax_16x128", 16, 128, 8),
        softmax_case("softmax_64x512", 64, 512, 16),
        softmax_case("softmax_32x1024_one_block", 32, 1024, 32),
        softmax_case("softmax_24x256_wide_range", 24, 256, 8, scale=80.0),
        softmax_case("softmax_192x1024_strips", 192, 1024, 64),
    ]
    cases += layers.cases() + layers.more_cases() + attention.cases() + attention.bwd_cases()
    cases += gmm.cases() + qmatmul.cases()
    cases += paged.cases() + paged.ragged_cases() + paged.jax_ragged_cases()
    cases += splash.cases()
    cases += linear.cases()
    with open(os.path.join(DATA, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

"""Shared helpers of the fixture generators: saving arrays under tests/data,
per-case random inputs, bf16 rounding and the case record of cases.json."""

import os
import zlib

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(HERE, "data")
BF16 = ml_dtypes.bfloat16


def rng(case):
    """A generator seeded by the case name, so that adding, removing or
    reordering cases leaves the other cases' inputs as they were."""
    return np.random.default_rng(zlib.crc32(case.encode()))


def save(case, name, arr):
    path = os.path.join(DATA, case, name + ".npy")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if arr.dtype.itemsize == 1 and arr.dtype.kind not in "iub":
        # fp8: opaque bytes (`|V1`), which numpy reads back without
        # ml_dtypes (it writes float8_e5m2 as `<f1`, which numpy cannot).
        arr = arr.view(np.dtype("V1"))
    np.save(path, arr)
    return os.path.relpath(path, os.path.dirname(HERE))


def as_dtype(x, dtype):
    """`x` stored as the kernel's dtype: f32, or bf16 rounded to nearest."""
    return x.astype(np.float32) if dtype == "f32" else x.astype(np.float32).astype(BF16)


def f64(x):
    """The exact values the kernel reads, widened for the reference."""
    return np.asarray(x).astype(np.float64)


def case(name, kernel, entry, params, inputs, expected, tol):
    """One record of cases.json. `entry` names the kernel inside a file that
    defines several; inputs and expected outputs are arrays, saved here
    (expected outputs as float32, or as bf16 when given as bf16: `pkc test`
    wants an expected file in its output's dtype)."""
    record = {"name": name, "kernel": kernel}
    if entry is not None:
        record["entry"] = entry
    record["params"] = params
    record["inputs"] = {k: save(name, k, v) for k, v in inputs.items()}
    record["expected"] = {
        k: save(name, k + "_expected", v if v.dtype == BF16 else f64(v).astype(np.float32))
        for k, v in expected.items()
    }
    record.update(tol)
    return record

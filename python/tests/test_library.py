"""Every case of the kernel library's numpy fixtures (tests/data/cases.json,
made by tests/gen_expected.py) called from JAX on CPU: each output equals
what `pkc run` writes bit for bit, and numpy's float64 result within the
case's own tolerances."""

from __future__ import annotations

import json
import pathlib
import re

import jax
import ml_dtypes
import numpy as np
import pytest

import pk.jax
from conftest import KERNELS, ROOT, pkc

CASES = json.loads((ROOT / "tests" / "data" / "cases.json").read_text())


FP8 = {"f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}


def load(path: str, fp8: str | None = None) -> np.ndarray:
    a = np.load(ROOT / path)
    # bf16 files hold 2-byte opaque elements (numpy has no bfloat16), fp8
    # files 1-byte ones, of the case's fp8 dtype.
    if a.dtype.kind == "V" and a.itemsize == 2:
        return a.view(ml_dtypes.bfloat16)
    if a.dtype.kind == "V" and a.itemsize == 1 and fp8:
        return a.view(FP8[fp8])
    return a


# Kernels across devices run on a CPU mesh (`pkc test --mesh N`): their
# cases are tests/data/mesh/cases.json, run by tests/cpu_mesh.rs
# (tests/multichip.rs compiles them with libtpu).
ACROSS_DEVICES = {
    "all_gather.pk",
    "all_gather_matmul.pk",
    "all_reduce.pk",
    "matmul_reduce_scatter.pk",
    "ppermute.pk",
    "reduce_scatter.pk",
}


def test_every_kernel_file_has_a_fixture_case() -> None:
    files = sorted(p.name for p in KERNELS.glob("*.pk"))
    covered = {pathlib.Path(c["kernel"]).name for c in CASES}
    for f in ACROSS_DEVICES:
        assert re.search(r"^mesh \(", (KERNELS / f).read_text(), re.M), f
    assert [f for f in files if f not in covered | ACROSS_DEVICES] == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_fixture_case_through_jax(case: dict, tmp_path: pathlib.Path) -> None:
    params = {n: str(v) for n, v in case["params"].items()}
    entry = case.get("entry")
    k = pk.jax.kernel(ROOT / case["kernel"], kernel=entry, **params)
    # The case's fp8 dtype, when it has one (`F` or `KV`).
    fp8 = next((v for v in params.values() if v in FP8), None)
    inputs = [load(p, fp8) for p in case["inputs"].values()]
    got = jax.jit(k)(*inputs)
    got = got if isinstance(got, tuple) else (got,)
    outputs = [name for name, _, _ in k.specialise(*inputs).outputs]
    by_name = dict(zip(outputs, got))

    args = ["run", case["kernel"]]
    if entry:
        args += ["-k", entry]
    for n, v in params.items():
        args += ["-p", f"{n}={v}"]
    for n, p in case["inputs"].items():
        args += ["--in", f"{n}={p}"]
    for n in case["expected"]:
        args += ["--out", f"{n}={tmp_path / (n + '.npy')}"]
    pkc(*args)

    for n, path in case["expected"].items():
        jax_out = np.asarray(by_name[n])
        cli_out = load(str(tmp_path / (n + ".npy")))
        assert jax_out.dtype == cli_out.dtype and jax_out.shape == cli_out.shape, n
        assert jax_out.tobytes() == cli_out.tobytes(), f"{n}: JAX on CPU differs from pkc run"
        want = load(path).astype(np.float64)
        np.testing.assert_allclose(
            jax_out.astype(np.float64), want, rtol=case["rtol"], atol=case["atol"], err_msg=n
        )

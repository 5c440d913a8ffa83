"""Packages built by `pkc build`, opened from Python and verified."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import pk
import pk.jax
from conftest import KERNELS, pkc


@pytest.fixture
def package(tmp_path):
    pkc("build", str(KERNELS / "add.pk"), "-p", "M=256", "-p", "N=512", "-o", str(tmp_path))
    return tmp_path / "add-M256-N512"


def test_package_runs_under_jit(package, rng) -> None:
    k = pk.jax.kernel(package)
    x = rng.standard_normal((256, 512)).astype(np.float32)
    y = rng.standard_normal((256, 512)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(k)(x, y)), x + y)
    opened = pk.open_package(package)
    assert opened.name == "add"
    assert dict(opened.params)["M"] == "256"
    assert opened.inputs == [("x", "f32", [256, 512]), ("y", "f32", [256, 512])]


def test_tampered_package_is_refused(package) -> None:
    wasm = package / "kernel.wasm"
    data = bytearray(wasm.read_bytes())
    data[-1] ^= 1
    wasm.write_bytes(bytes(data))
    with pytest.raises(pk.PkError) as e:
        pk.jax.kernel(package)
    assert e.value.code is not None and e.value.code.startswith("PK30")
    assert "kernel.wasm" in str(e.value)


def test_package_shapes_are_fixed(package) -> None:
    k = pk.jax.kernel(package)
    x = np.zeros((128, 512), np.float32)
    with pytest.raises(pk.PkError) as e:
        k(x, x)
    assert e.value.code == "PK5003"
    assert "dimension 0 of `x` is 128, but `add` was built for [256, 512]" in str(e.value)


def test_parameters_for_a_package_are_refused(package) -> None:
    with pytest.raises(pk.PkError) as e:
        pk.jax.kernel(package, bm=128)
    assert e.value.code == "PK5005"
    assert "help:" in str(e.value)

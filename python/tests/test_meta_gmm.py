"""pk.meta: the grouped-matmul tile metadata from numpy (pk's Rust builder)
against the tables tests/gen/gmm.py computes by walking the groups, and
the jax.numpy version, inside jax.jit, against the Rust one."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

import pk
import pk.meta
from conftest import ROOT

CASES = [
    c
    for c in json.loads((ROOT / "tests" / "data" / "cases.json").read_text())
    if c["kernel"] == "kernels/gmm.pk"
]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_numpy_builder_matches_the_fixture_tables(case: dict) -> None:
    inputs = {k: np.load(ROOT / v) for k, v in case["inputs"].items()}
    sizes = np.diff(inputs["group_offsets"]).astype(np.int64)
    got = pk.meta.gmm_metadata(
        sizes, case["params"]["M"], case["params"]["tm"],
        visit_empty_groups=case["entry"] == "tgmm",
    )
    names = ["group_offsets", "group_ids", "m_tile_ids", "num_tiles"]
    for name, value in zip(names, got):
        assert value.dtype == np.int32
        np.testing.assert_array_equal(value, inputs[name], err_msg=name)


def random_sizes(rng: np.random.Generator, groups: int, m: int) -> np.ndarray:
    """`groups` sizes adding up to `m`, about a third of them empty."""
    cuts = np.sort(rng.integers(0, m + 1, groups - 1))
    sizes = np.diff(np.concatenate([[0], cuts, [m]]))
    sizes[rng.random(groups) < 0.3] = 0
    sizes[-1] += m - sizes.sum()
    return sizes.astype(np.int32)


@pytest.mark.parametrize("visit_empty", [False, True])
def test_jnp_builder_under_jit_equals_the_rust_one(
    rng: np.random.Generator, visit_empty: bool
) -> None:
    for groups, m, tm in [(1, 8, 8), (5, 90, 32), (8, 256, 16), (16, 100, 128), (7, 64, 8)]:
        build = jax.jit(
            lambda s: pk.meta.gmm_metadata_jnp(s, m, tm, visit_empty)  # noqa: B023
        )
        for _ in range(20):
            sizes = random_sizes(rng, groups, m)
            want = pk.meta.gmm_metadata(sizes, m, tm, visit_empty)
            got = build(sizes)
            for w, g in zip(want, got):
                np.testing.assert_array_equal(np.asarray(g), w, err_msg=str(sizes))


@pytest.mark.parametrize(
    "sizes, m, tm, code",
    [
        (np.array([4, -1, 5], np.int32), 8, 8, "PK5202"),
        (np.array([20, 70], np.int64), 100, 32, "PK5203"),
        (np.array([4.0, 4.0]), 8, 8, "PK5201"),
        (np.array([[8]], np.int32), 8, 8, "PK5201"),
        (np.array([8], np.int32), 8, 0, "PK5204"),
    ],
)
def test_bad_sizes_raise_coded_errors(sizes: np.ndarray, m: int, tm: int, code: str) -> None:
    with pytest.raises(pk.PkError) as e:
        pk.meta.gmm_metadata(sizes, m, tm)
    assert e.value.code == code
    assert "help:" in str(e.value)

"""A kernel with a dynamic grid extent (kernels/gmm.pk) through JAX. Lowered
for TPU, the module reads the bound from its scalar-prefetch operand and
passes it to the custom call ahead of the operands, as `pkc build` writes
it, and libtpu compiles the export for every generation. On CPU the kernel
runs exactly the number of steps its prefetch element says."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import pk
import pk.jax
from conftest import KERNELS, ROOT
from test_tpu import built_stablehlo, custom_calls

sys.path.insert(0, str(ROOT / "tests"))
from gen.gmm import schedule  # noqa: E402

M, K, N, G, TM = 48, 128, 128, 3, 16
BOUND = M // TM + G - 1


def gmm_kernel():
    return pk.jax.kernel(KERNELS / "gmm.pk", tm=str(TM))


def avals():
    i32 = jnp.int32
    return (
        jax.ShapeDtypeStruct((G + 1,), i32),
        jax.ShapeDtypeStruct((BOUND,), i32),
        jax.ShapeDtypeStruct((BOUND,), i32),
        jax.ShapeDtypeStruct((1,), i32),
        jax.ShapeDtypeStruct((M, K), jnp.bfloat16),
        jax.ShapeDtypeStruct((G, K, N), jnp.bfloat16),
    )


def test_tpu_lowering_passes_the_bound_ahead_of_the_operands(tmp_path) -> None:
    k = gmm_kernel()
    lowered = jax.jit(k).trace(*avals()).lower(lowering_platforms=("tpu",))
    (jax_call,) = custom_calls(lowered.as_text())
    spec = k.specialise(*avals())
    (pkc_call,) = custom_calls(built_stablehlo(tmp_path, "gmm.pk", dict(spec.params)))
    assert jax_call[:3] == pkc_call[:3], "attributes or types differ from pkc build"
    # The bound, read from `num_tiles` (argument 3), then main's arguments.
    assert jax_call[1][0] == "tensor<i32>"
    assert jax_call[3] == ["stablehlo.reshape"] + [f"arg{i}" for i in range(6)]
    assert "stablehlo.slice" in lowered.as_text()


def test_exported_gmm_compiles_for_every_tpu() -> None:
    exported = jax.export.export(jax.jit(gmm_kernel()), platforms=("tpu",))(*avals())
    reports = pk.aot_compile(exported)
    assert [r["target"] for r in reports] == ["v4", "v5e", "v5p", "v6e", "tpu7x"]
    assert all(r["generated_code_bytes"] > 0 for r in reports)


@pytest.mark.parametrize("sizes", [[20, 0, 28], [0, 48, 0], [16, 16, 16]])
def test_gmm_on_cpu_runs_the_dynamic_count(sizes, rng) -> None:
    lhs = rng.uniform(-1, 1, (M, K)).astype(ml_dtypes.bfloat16)
    rhs = rng.uniform(-1, 1, (G, K, N)).astype(ml_dtypes.bfloat16)
    offsets, ids, tiles, count = schedule(sizes, M, TM)
    got = np.asarray(jax.jit(gmm_kernel())(offsets, ids, tiles, count, lhs, rhs))
    want = np.zeros((M, N))
    for g in range(G):
        lo, hi = offsets[g], offsets[g + 1]
        want[lo:hi] = lhs[lo:hi].astype(np.float64) @ rhs[g].astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_a_count_above_the_bound_fails_the_call(rng) -> None:
    lhs = np.zeros((M, K), ml_dtypes.bfloat16)
    rhs = np.zeros((G, K, N), ml_dtypes.bfloat16)
    offsets, ids, tiles, _ = schedule([16, 16, 16], M, TM)
    count = np.array([BOUND + 1], np.int32)
    with pytest.raises(Exception, match="PK1035"):
        jax.block_until_ready(jax.jit(gmm_kernel())(offsets, ids, tiles, count, lhs, rhs))

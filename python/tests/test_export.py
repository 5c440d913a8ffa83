"""The TorchTPU contract: a JAX model whose layers are pk kernels exports
for TPU with jax.export, and the exported module (the bytes TorchTPU
registers) compiles with libtpu for every TPU generation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pk
import pk.jax
from conftest import KERNELS, pkc

TARGETS = ["v4", "v5e", "v5p", "v6e", "tpu7x"]

mm = pk.jax.kernel(KERNELS / "matmul.pk", bm=128, bn=128, bk=256)
softmax = pk.jax.kernel(KERNELS / "softmax.pk")


def mlp(x, w1, w2):
    """Two layers whose matmuls are pk kernels (bf16 in, f32 out), a ReLU
    that XLA fuses, and a pk softmax."""
    h = jax.nn.relu(mm(x.astype(jnp.bfloat16), w1.astype(jnp.bfloat16)))
    return softmax(mm(h.astype(jnp.bfloat16), w2.astype(jnp.bfloat16)))


AVALS = (
    jax.ShapeDtypeStruct((256, 512), jnp.float32),
    jax.ShapeDtypeStruct((512, 512), jnp.float32),
    jax.ShapeDtypeStruct((512, 256), jnp.float32),
)


@pytest.fixture(scope="module")
def exported() -> jax.export.Exported:
    return jax.export.export(jax.jit(mlp), platforms=("tpu",))(*AVALS)


def test_exported_module_holds_pk_custom_calls(exported) -> None:
    text = exported.mlir_module()
    assert text.count("stablehlo.custom_call @tpu_custom_call") == 3
    assert text.count('kernel_name = "matmul"') == 2
    assert 'kernel_name = "softmax"' in text
    assert exported.platforms == ("tpu",)


def test_exported_mlp_compiles_for_every_tpu(exported) -> None:
    reports = pk.aot_compile(exported)
    assert [r["target"] for r in reports] == TARGETS
    for r in reports:
        assert r["generated_code_bytes"] > 0, r["target"]
        assert len(r["executable"]) == r["executable_bytes"] > 0
        # The model's arguments as libtpu accounts them: the f32 x, w1, w2.
        assert r["memory"]["argument_bytes"] == 4 * (256 * 512 + 512 * 512 + 512 * 256)
        assert r["memory"]["output_bytes"] == 4 * 256 * 256


def test_pkc_aot_compiles_the_serialized_module(exported, tmp_path) -> None:
    path = tmp_path / "mlp.mlirbc"
    path.write_bytes(exported.mlir_module_serialized)
    p = pkc("aot", str(path), "--target", "all")
    lines = p.stdout.splitlines()
    assert [l.split()[0] for l in lines] == TARGETS
    assert all("bytes of TPU code" in l and "peak" in l for l in lines)


def test_libtpu_rejection_is_a_pk_error(tmp_path) -> None:
    with pytest.raises(pk.PkError) as e:
        pk.aot_compile("module { func.func @main() { stablehlo.bogus } }", "v5e")
    assert e.value.code is not None and e.value.code.startswith("PK20")
    path = tmp_path / "bad.mlir"
    path.write_text("this is not MLIR")
    p = pkc("aot", str(path), "-t", "v5e", check=False)
    assert p.returncode == 1, p.stderr
    assert "PK20" in p.stderr


def test_exported_mlp_runs_on_cpu_like_numpy(rng) -> None:
    x, w1, w2 = (rng.standard_normal(a.shape).astype(np.float32) / 8 for a in AVALS)
    got = np.asarray(jax.jit(mlp)(x, w1, w2))
    bf = lambda a: np.asarray(jnp.asarray(a).astype(jnp.bfloat16).astype(jnp.float32), np.float64)
    h = np.maximum(bf(x) @ bf(w1), 0)
    logits = bf(h) @ bf(w2)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=2e-2, atol=1e-5)

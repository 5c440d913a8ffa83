"""jax.vmap and jax.shard_map of pk kernels."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import pk
import pk.jax
from conftest import KERNELS

mm = pk.jax.kernel(KERNELS / "matmul.pk", bm=128, bn=128, bk=128, T="f32")
add = pk.jax.kernel(KERNELS / "add.pk", bm=128)
softmax = pk.jax.kernel(KERNELS / "softmax.pk")


def test_vmap_over_both_arguments(rng) -> None:
    a = rng.standard_normal((3, 128, 256)).astype(np.float32)
    b = rng.standard_normal((3, 256, 128)).astype(np.float32)
    got = np.asarray(jax.jit(jax.vmap(mm))(a, b))
    want = np.stack([np.asarray(mm(a[i], b[i])) for i in range(3)])
    assert got.shape == (3, 128, 128)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, np.einsum("bmk,bkn->bmn", a, b), rtol=1e-4, atol=1e-4)


def test_vmap_with_an_unbatched_argument_and_another_axis(rng) -> None:
    a = rng.standard_normal((128, 2, 256)).astype(np.float32)
    b = rng.standard_normal((256, 128)).astype(np.float32)
    got = np.asarray(jax.vmap(mm, in_axes=(1, None), out_axes=2)(a, b))
    assert got.shape == (128, 128, 2)
    for i in range(2):
        np.testing.assert_array_equal(got[:, :, i], np.asarray(mm(a[:, i], b)))


def test_nested_vmap(rng) -> None:
    x = rng.standard_normal((2, 3, 128, 128)).astype(np.float32)
    got = np.asarray(jax.vmap(jax.vmap(softmax))(x))
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=-1, keepdims=True), rtol=1e-6, atol=1e-7)


def test_vmap_is_one_call_with_a_leading_parallel_grid_axis() -> None:
    a = jax.ShapeDtypeStruct((4, 128, 256), jnp.float32)
    b = jax.ShapeDtypeStruct((256, 128), jnp.float32)
    jaxpr = str(jax.make_jaxpr(jax.vmap(mm, in_axes=(0, None)))(a, b))
    assert jaxpr.count("pk_call") == 1 and "scan" not in jaxpr and "while" not in jaxpr
    batched = mm.specialise(a.update(shape=(128, 256)), b).batched([True, False], 4)
    assert batched.inputs == [("a", "f32", [4, 128, 256]), ("b", "f32", [256, 128])]
    assert batched.outputs == [("c", "f32", [4, 128, 128])]


def test_batched_kernel_lowers_for_tpu_and_compiles() -> None:
    a = jax.ShapeDtypeStruct((4, 128, 256), jnp.float32)
    b = jax.ShapeDtypeStruct((4, 256, 128), jnp.float32)
    lowered = jax.jit(jax.vmap(mm)).trace(a, b).lower(lowering_platforms=("tpu",))
    text = lowered.as_text()
    assert text.count("stablehlo.custom_call @tpu_custom_call") == 1
    assert "(tensor<4x128x256xf32>, tensor<4x256x128xf32>) -> tensor<4x128x128xf32>" in text
    report = pk.aot_compile(lowered, "v5e")
    assert report["memory"]["output_bytes"] == 4 * 4 * 128 * 128


def test_vmap_of_a_package_loops(tmp_path, rng) -> None:
    from conftest import pkc

    pkc("build", str(KERNELS / "add.pk"), "-p", "M=256", "-p", "N=512", "-o", str(tmp_path))
    k = pk.jax.kernel(tmp_path / "add-M256-N512")
    x = rng.standard_normal((2, 256, 512)).astype(np.float32)
    jaxpr = str(jax.make_jaxpr(jax.vmap(k))(x, x))
    assert "scan" in jaxpr
    np.testing.assert_array_equal(np.asarray(jax.vmap(k)(x, x)), x + x)


def mesh2() -> Mesh:
    devices = jax.devices("cpu")
    assert len(devices) >= 2, "run with --xla_force_host_platform_device_count=2"
    return Mesh(np.array(devices[:2]), ("x",))


def test_shard_map_on_two_cpu_devices_equals_unsharded(rng) -> None:
    mesh = mesh2()
    a = rng.standard_normal((256, 256)).astype(np.float32)
    b = rng.standard_normal((256, 128)).astype(np.float32)
    # Rows of `a` split over the two devices; `b` replicated.
    f = jax.jit(
        jax.shard_map(mm, mesh=mesh, in_specs=(P("x", None), P()), out_specs=P("x", None))
    )
    a_sharded = jax.device_put(a, NamedSharding(mesh, P("x", None)))
    got = f(a_sharded, b)
    assert len(got.sharding.device_set) == 2
    # Each device ran the kernel on its 128 rows.
    np.testing.assert_array_equal(np.asarray(got), np.asarray(mm(a, b)))


def test_shard_map_of_softmax_and_add(rng) -> None:
    mesh = mesh2()
    x = rng.standard_normal((256, 512)).astype(np.float32)
    y = rng.standard_normal((256, 512)).astype(np.float32)

    def f(x, y):
        return softmax(add(x, y))

    spec = P("x", None)
    sharded = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=(spec, spec), out_specs=spec))
    np.testing.assert_array_equal(np.asarray(sharded(x, y)), np.asarray(jax.jit(f)(x, y)))


def test_shard_map_on_a_2x2_mesh_exports_and_compiles_for_every_tpu() -> None:
    """The same sharded call, exported for TPU over a 2x2 mesh: libtpu
    partitions it over four devices (Shardy), each running the kernel on
    its 128x128 block of the product."""
    mesh = jax.sharding.AbstractMesh((2, 2), ("x", "y"))
    f = jax.shard_map(
        mm, mesh=mesh, in_specs=(P("x", None), P(None, "y")), out_specs=P("x", "y")
    )
    a = jax.ShapeDtypeStruct((256, 256), jnp.float32, sharding=NamedSharding(mesh, P("x", None)))
    b = jax.ShapeDtypeStruct((256, 256), jnp.float32, sharding=NamedSharding(mesh, P(None, "y")))
    exported = jax.export.export(jax.jit(f), platforms=("tpu",))(a, b)
    assert exported.nr_devices == 4
    text = exported.mlir_module()
    # Each device's call is the kernel specialised for its block.
    assert "stablehlo.custom_call @tpu_custom_call(%arg2, %arg3)" in text
    assert "(tensor<128x256xf32>, tensor<256x128xf32>) -> tensor<128x128xf32>" in text
    for r in pk.aot_compile(exported):
        # Per-device memory: a 128x256 block of `a` and a 256x128 block of
        # `b` in, a 128x128 block out (unpartitioned it would be 4x).
        assert r["memory"]["argument_bytes"] == 4 * (128 * 256 + 256 * 128), r["target"]
        assert r["memory"]["output_bytes"] == 4 * 128 * 128, r["target"]


def test_shard_map_2x2_blocks_on_cpu_equal_unsharded(rng) -> None:
    """What each of the four TPU devices computes, run on CPU block by
    block, assembles to the unsharded product."""
    a = rng.standard_normal((256, 256)).astype(np.float32)
    b = rng.standard_normal((256, 256)).astype(np.float32)
    whole = np.asarray(mm(a, b))
    for i in range(2):
        for j in range(2):
            block = np.asarray(mm(a[128 * i : 128 * (i + 1)], b[:, 128 * j : 128 * (j + 1)]))
            np.testing.assert_array_equal(block, whole[128 * i : 128 * (i + 1), 128 * j : 128 * (j + 1)])

"""pk's collectives inside jax.shard_map on CPU meshes of 2, 4 and 8
devices, f32 and bf16, against jax.lax's collectives (values and
gradients); the devices' calls meet in pk's CPU mesh through the FFI
handler.

XLA's CPU device count is fixed when JAX starts (the conftest gives this
process 2), so each mesh size runs its cases in a fresh Python: this file
runs itself as a script (`python test_collectives.py N`) with
`--xla_force_host_platform_device_count=N`, and the tests here check what
it printed.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def _run(devices: int, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ)
    e["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    e["JAX_PLATFORMS"] = "cpu"
    e.update(env or {})
    return subprocess.run(
        [sys.executable, str(pathlib.Path(__file__).resolve()), str(devices), *extra],
        cwd=HERE,
        env=e,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module", params=[2, 4, 8])
def results(request) -> tuple[int, dict[str, str]]:
    p = _run(request.param)
    assert p.returncode == 0, p.stderr[-4000:]
    return request.param, json.loads(p.stdout.strip().splitlines()[-1])


CASES = [
    f"{op}/{dt}"
    for op in ("all_gather", "all_gather_tiled", "reduce_scatter", "reduce_scatter_tiled",
               "all_reduce", "ppermute", "ppermute_back", "all_gather_matmul", "matmul_reduce_scatter")
    for dt in ("float32", "bfloat16")
] + [f"grad/{op}" for op in ("all_gather", "reduce_scatter", "all_reduce", "ppermute", "all_gather_matmul")] + [
    "kernel/same_names", "kernel/loop", "kernel/two_groups"
]


@pytest.mark.parametrize("case", CASES)
def test_matches_jax_lax(results, case) -> None:
    devices, got = results
    assert got.get(case) == "ok", f"{devices} devices, {case}: {got.get(case)}"


def test_peers_that_never_call_are_pk1047() -> None:
    p = _run(2, "missing-peer", env={"PK_MESH_JOIN_TIMEOUT": "2"})
    assert p.returncode == 0, p.stderr[-4000:]
    out = p.stdout.strip().splitlines()[-1]
    assert "PK1047" in out, out
    assert "device 1" in out and "never did" in out, out


def test_a_mesh_kernel_outside_shard_map_is_pk5006() -> None:
    p = _run(2, "errors")
    assert p.returncode == 0, p.stderr[-4000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["outside"].startswith("PK5006"), got
    assert "outside jax.shard_map" in got["outside"], got
    assert got["size"].startswith("PK5006") and "has 4 devices" in got["size"], got
    assert got["name"].startswith("PK5006") and "no manual axis 'd'" in got["name"], got
    assert got["perm"].startswith("PK5307"), got


def test_exported_collectives_compile_for_multichip_tpus() -> None:
    p = _run(4, "export", env={"TPU_SKIP_MDS_QUERY": "1"})
    assert p.returncode == 0, p.stderr[-4000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    for op in ("all_gather", "all_gather_matmul"):
        r = got[op]
        assert r["nr_devices"] == 4 and r["calls"] == 1, r
        # The custom call says the kernel communicates, with its barrier's
        # collective id, as Pallas emits it.
        assert r["has_communication"] and r["collective_id"] == 0, r
        assert [t for t, _, _ in r["compiled"]] == ["v4", "v5e", "v5p", "v6e", "tpu7x"], r
        for target, topology, code in r["compiled"]:
            assert code > 0, (op, target)
            # Four chips: a 2x2 slice (v4 and v5p count cores in 3-D).
            assert topology.split(":")[1] in ("2x2", "2x2x1"), (op, target, topology)


# The script: one mesh size per process.


def _main(devices: int, mode: str) -> dict[str, str]:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    import pk
    import pk.jax
    import pk.ops

    n = devices
    mesh = Mesh(np.array(jax.devices()[:n]), ("x",))
    rng = np.random.default_rng(n)
    out: dict[str, str] = {}

    def smap(f, n_in=1):
        return jax.jit(jax.shard_map(f, mesh=mesh, in_specs=(P("x"),) * n_in, out_specs=P("x")))

    def record(name, fn):
        try:
            fn()
            out[name] = "ok"
        except Exception as e:  # noqa: BLE001 - every failure is reported by name
            out[name] = f"{type(e).__name__}: {str(e)[:600]}"

    def close(a, b, dt, rtol=None):
        a = np.asarray(jnp.asarray(a).astype(jnp.float32))
        b = np.asarray(jnp.asarray(b).astype(jnp.float32))
        assert a.shape == b.shape, (a.shape, b.shape)
        tol = rtol if rtol is not None else (1e-6 if dt == "float32" else 2e-2)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)

    if mode == "missing-peer":
        ag = pk.jax.kernel(pk.ops.kernels_dir() / "all_gather.pk", n=n, axis_names=("x",))

        def only_device_0(a):
            first = jax.lax.axis_index("x") == 0
            return jax.lax.cond(first, lambda v: ag(v)[0][None], lambda v: v[None], a)

        try:
            smap(only_device_0)(np.ones((n * 8, 128), np.float32)).block_until_ready()
            return {"missing": "no error"}
        except Exception as e:  # noqa: BLE001
            return {"missing": str(e)}

    if mode == "export":
        import re

        res: dict[str, Any] = {}
        spec = jax.ShapeDtypeStruct((n * 32, 256), jnp.float32)
        ws = jax.ShapeDtypeStruct((256, n * 128), jnp.float32)
        funcs = {
            "all_gather": (
                jax.shard_map(lambda a: pk.ops.all_gather(a, "x")[None], mesh=mesh, in_specs=P("x"), out_specs=P("x")),
                (spec,),
            ),
            "all_gather_matmul": (
                jax.shard_map(
                    lambda a, b: pk.ops.all_gather_matmul(a, b, "x"),
                    mesh=mesh,
                    in_specs=(P("x"), P(None, "x")),
                    out_specs=P(None, "x"),
                ),
                (spec, ws),
            ),
        }
        for name, (f, avals) in funcs.items():
            exp = jax.export.export(jax.jit(f), platforms=("tpu",))(*avals)
            text = exp.mlir_module()
            config = re.search(r"tpu_custom_call.*?backend_config = \"(.*?)\"", text, re.S)
            cfg = config.group(1).replace("\\22", '"') if config else ""
            cid = re.search(r'"collective_id": (\d+)', cfg)
            res[name] = {
                "nr_devices": exp.nr_devices,
                "calls": text.count("stablehlo.custom_call @tpu_custom_call"),
                "has_communication": '"has_communication": true' in cfg,
                "collective_id": int(cid.group(1)) if cid else None,
                "compiled": [
                    (r["target"], r["topology"], r["generated_code_bytes"]) for r in pk.aot_compile(exp)
                ],
            }
        return res

    if mode == "errors":
        errs: dict[str, str] = {}
        ag = pk.jax.kernel(pk.ops.kernels_dir() / "all_gather.pk", n=n)
        x = np.ones((8, 128), np.float32)
        for name, fn in {
            "outside": lambda: ag(x),
            "size": lambda: smap(pk.jax.kernel(pk.ops.kernels_dir() / "all_gather.pk", n=4, axis_names=("x",)))(
                np.ones((n * 8, 128), np.float32)
            ),
            "name": lambda: smap(ag)(np.ones((n * 8, 128), np.float32)),
            "perm": lambda: smap(lambda a: pk.ops.ppermute(a, "x", [(0, 0), (1, 0)]))(
                np.ones((n * 8, 128), np.float32)
            ),
        }.items():
            try:
                fn()
                errs[name] = "no error"
            except pk.PkError as e:
                errs[name] = f"{e.code}: {e}"
        return errs

    for dt in ("float32", "bfloat16"):
        cast = lambda a: jnp.asarray(a).astype(dt)  # noqa: E731
        # Values of a few bits, so that bf16 sums in any order are exact.
        x = cast(rng.integers(-8, 8, size=(n * 16, 3, 128)).astype(np.float32))
        blocks = cast(rng.integers(-8, 8, size=(n * n, 5, 128)).astype(np.float32))

        def ag():
            got = smap(lambda a: pk.ops.all_gather(a, "x")[None])(x)
            want = smap(lambda a: jax.lax.all_gather(a, "x")[None])(x)
            close(got, want, dt, 0)

        def ag_tiled():
            got = smap(lambda a: pk.ops.all_gather(a, "x", tiled=True)[None])(x)
            want = smap(lambda a: jax.lax.all_gather(a, "x", tiled=True)[None])(x)
            close(got, want, dt, 0)

        def rs():
            got = smap(lambda a: pk.ops.reduce_scatter(a, "x")[None])(blocks)
            want = smap(lambda a: jax.lax.psum_scatter(a, "x")[None])(blocks)
            close(got, want, dt)

        def rs_tiled():
            got = smap(lambda a: pk.ops.reduce_scatter(a, "x", tiled=True)[None])(blocks)
            want = smap(lambda a: jax.lax.psum_scatter(a, "x", tiled=True)[None])(blocks)
            close(got, want, dt)

        def ar():
            got = smap(lambda a: pk.ops.all_reduce(a, "x"))(x)
            want = smap(lambda a: jax.lax.pcast(jax.lax.psum(a, "x"), "x", to="varying"))(x)
            close(got, want, dt)

        def pp(shift):
            perm = [(i, (i + shift) % n) for i in range(n)]
            got = smap(lambda a: pk.ops.ppermute(a, "x", perm))(x)
            want = smap(lambda a: jax.lax.ppermute(a, "x", perm))(x)
            close(got, want, dt, 0)

        def agm():
            m, k, cols = 32, 256, 128
            xs = cast(rng.standard_normal((n * m, k)).astype(np.float32))
            ws = cast(rng.standard_normal((k, n * cols)).astype(np.float32))
            f = lambda a, b: pk.ops.all_gather_matmul(a, b, "x")  # noqa: E731
            got = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=(P("x"), P(None, "x")), out_specs=P(None, "x")))(xs, ws)
            ref = lambda a, b: jnp.dot(  # noqa: E731
                jax.lax.all_gather(a, "x", tiled=True), b, preferred_element_type=jnp.float32
            ).astype(a.dtype)
            want = jax.jit(jax.shard_map(ref, mesh=mesh, in_specs=(P("x"), P(None, "x")), out_specs=P(None, "x")))(xs, ws)
            close(got, want, dt, 1e-5 if dt == "float32" else 2e-2)

        def mrs():
            m, k, cols = 32, 128, 256
            xs = cast(rng.standard_normal((n * m, n * k)).astype(np.float32))
            ws = cast(rng.standard_normal((n * k, cols)).astype(np.float32))
            f = lambda a, b: pk.ops.matmul_reduce_scatter(a, b, "x")  # noqa: E731
            specs = dict(mesh=mesh, in_specs=(P(None, "x"), P("x")), out_specs=P("x"))
            got = jax.jit(jax.shard_map(f, **specs))(xs, ws)
            # The f32 sum of the devices' f32 products, rounded once; the
            # kernel rounds bf16 partial sums at every hop.
            want = (np.asarray(xs, np.float32) @ np.asarray(ws, np.float32)).astype(np.float32)
            if dt == "float32":
                close(got, want, dt, 1e-4)
            else:
                # Each of the n - 1 hops rounds a partial sum to bf16 (half
                # an ulp, 2^-9 of its magnitude), besides the inputs.
                bound = 2.0 ** -8 * n * float(np.abs(want).max())
                np.testing.assert_allclose(np.asarray(got.astype(jnp.float32)), want, rtol=0, atol=bound)

        record(f"matmul_reduce_scatter/{dt}", mrs)
        record(f"all_gather/{dt}", ag)
        record(f"all_gather_tiled/{dt}", ag_tiled)
        record(f"reduce_scatter/{dt}", rs)
        record(f"reduce_scatter_tiled/{dt}", rs_tiled)
        record(f"all_reduce/{dt}", ar)
        record(f"ppermute/{dt}", lambda: pp(1))
        record(f"ppermute_back/{dt}", lambda: pp(n - 1))
        record(f"all_gather_matmul/{dt}", agm)

    # Gradients against jax.lax's, through a loss that weighs every
    # device's output differently.
    x = jnp.asarray(rng.standard_normal((n * 16, 128)).astype(np.float32))
    blocks = jnp.asarray(rng.standard_normal((n * n, 128)).astype(np.float32))

    def grad_case(ours, theirs, arg, out_rows):
        c = jnp.asarray(rng.standard_normal((n * out_rows, 128)).astype(np.float32))

        def loss(f):
            g = jax.shard_map(
                lambda a, w: (f(a).reshape(out_rows, 128) * w)[None],
                mesh=mesh,
                in_specs=(P("x"), P("x")),
                out_specs=P("x"),
            )
            return lambda a: jnp.sum(g(a, c))

        got = jax.jit(jax.grad(loss(ours)))(arg)
        want = jax.jit(jax.grad(loss(theirs)))(arg)
        close(got, want, "float32", 1e-5)

    perm = [(i, (i + 1) % n) for i in range(n)]
    record("grad/all_gather", lambda: grad_case(
        lambda a: pk.ops.all_gather(a, "x"), lambda a: jax.lax.all_gather(a, "x"), x, n * 16))
    record("grad/reduce_scatter", lambda: grad_case(
        lambda a: pk.ops.reduce_scatter(a, "x"), lambda a: jax.lax.psum_scatter(a, "x"), blocks, 1))
    record("grad/all_reduce", lambda: grad_case(
        lambda a: pk.ops.all_reduce(a, "x"), lambda a: jax.lax.psum(a, "x"), x, 16))
    record("grad/ppermute", lambda: grad_case(
        lambda a: pk.ops.ppermute(a, "x", perm), lambda a: jax.lax.ppermute(a, "x", perm), x, 16))

    def grad_agm():
        m, k, cols = 32, 256, 128
        xs = jnp.asarray(rng.standard_normal((n * m, k)).astype(np.float32))
        ws = jnp.asarray(rng.standard_normal((k, n * cols)).astype(np.float32))
        c = jnp.asarray(rng.standard_normal((n * m, n * cols)).astype(np.float32))
        specs = dict(mesh=mesh, in_specs=(P("x"), P(None, "x"), P(None, "x")), out_specs=P(None, "x"))

        def loss(f):
            g = jax.shard_map(lambda a, b, cc: f(a, b) * cc, **specs)
            return lambda a, b: jnp.sum(g(a, b, c))

        ours = lambda a, b: pk.ops.all_gather_matmul(a, b, "x")  # noqa: E731
        theirs = lambda a, b: jnp.dot(jax.lax.all_gather(a, "x", tiled=True), b)  # noqa: E731
        got = jax.jit(jax.grad(loss(ours), argnums=(0, 1)))(xs, ws)
        want = jax.jit(jax.grad(loss(theirs), argnums=(0, 1)))(xs, ws)
        for g, w_ in zip(got, want):
            close(g, w_, "float32", 1e-4)

    record("grad/all_gather_matmul", grad_agm)

    # pk.jax.kernel directly: a kernel whose mesh axis is named like the
    # shard_map's needs no axis_names; a loop calls one site many times;
    # a 2-D shard_map runs one mesh per row.
    kdir = pk.ops.kernels_dir()
    x = np.arange(n * 8 * 128, dtype=np.float32).reshape(n * 8, 128)

    def named():
        mesh_d = Mesh(np.array(jax.devices()[:n]), ("d",))
        ag = pk.jax.kernel(kdir / "all_gather.pk", n=n)
        got = jax.jit(jax.shard_map(lambda a: ag(a)[None], mesh=mesh_d, in_specs=P("d"), out_specs=P("d")))(x)
        want = np.broadcast_to(x.reshape(n, 8, 128), (n, n, 8, 128))
        np.testing.assert_array_equal(np.asarray(got), want)

    def loop():
        perm = [(i, (i + 1) % n) for i in range(n)]

        def f(a):
            return jax.lax.fori_loop(0, 3, lambda _, v: pk.ops.ppermute(v, "x", perm), a)

        got = smap(f)(x)
        np.testing.assert_array_equal(np.asarray(got), np.roll(x.reshape(n, 8, 128), 3, axis=0).reshape(n * 8, 128))

    def groups():
        if n < 4:
            return
        mesh2 = Mesh(np.array(jax.devices()[:n]).reshape(2, n // 2), ("g", "x"))
        f = jax.jit(jax.shard_map(
            lambda a: pk.ops.all_gather(a, "x")[None, None],
            mesh=mesh2, in_specs=P(("g", "x")), out_specs=P("g", "x"),
        ))
        got = np.asarray(f(x))
        shards = x.reshape(2, n // 2, 8, 128)
        want = np.broadcast_to(shards[:, None], (2, n // 2, n // 2, 8, 128))
        np.testing.assert_array_equal(got, want)

    record("kernel/same_names", named)
    record("kernel/loop", loop)
    record("kernel/two_groups", groups)
    return out


if __name__ == "__main__":
    devices = int(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "cases"
    result = _main(devices, mode)
    print(json.dumps(result if mode != "missing-peer" else result["missing"]))

"""The collective matmul on a CPU mesh, for bench/compare.py (`--only
mesh`): `all_gather_matmul` on 4 devices of XLA's CPU client under
`jax.shard_map`, f32 `x[4096, 1024]` sharded by rows and `w[1024, 4096]`
by columns, each device computing `all_gather(x) @ w_local`:
`pk.ops.all_gather_matmul` (pk's kernel, the devices' calls meeting in
pk's CPU mesh with the devices running at once) against
`jax.lax.all_gather` + `jnp.dot` in the same shard_map, on the same host.

XLA's device count is fixed when JAX starts, so the measurement runs in a
Python of its own (`python bench/mesh.py ROUNDS ITERS`); each round times
both in turn, so the noise of a shared machine falls on both. It needs
the `pk` Python package (python/, built by maturin) in that Python.
"""

import os
import statistics
import subprocess
import sys
import time

DEVICES = 4


def rows(a):
    """Runs the measurement in a fresh Python and prints its line."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={DEVICES}"
    env["JAX_PLATFORMS"] = "cpu"
    p = subprocess.run(
        [sys.executable, os.path.abspath(__file__), str(a.rounds), str(max(1, a.iters // 2))],
        env=env,
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        print(f"all_gather_matmul on a {DEVICES}-device CPU mesh: not measured ({p.stderr.strip()[-300:]})")
        return
    print(p.stdout.strip())


def measure(rounds, iters):
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    import pk.ops

    mesh = Mesh(np.array(jax.devices()[:DEVICES]), ("x",))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 1024)).astype(np.float32)
    w = rng.standard_normal((1024, 4096)).astype(np.float32)
    specs = dict(mesh=mesh, in_specs=(P("x"), P(None, "x")), out_specs=P(None, "x"))
    ours = jax.jit(jax.shard_map(lambda a, b: pk.ops.all_gather_matmul(a, b, "x"), **specs))
    theirs = jax.jit(jax.shard_map(lambda a, b: jnp.dot(jax.lax.all_gather(a, "x", tiled=True), b), **specs))
    x, w = jax.device_put(x), jax.device_put(w)
    got, want = np.asarray(ours(x, w)), np.asarray(theirs(x, w))
    err = float(np.abs(got - want).max() / np.abs(want).max())

    def median(f):
        f(x, w).block_until_ready()
        ts = []
        for _ in range(iters):
            t = time.perf_counter()
            f(x, w).block_until_ready()
            ts.append(time.perf_counter() - t)
        return statistics.median(ts)

    t_pk, t_jax = [], []
    for _ in range(rounds):
        t_pk.append(median(ours))
        t_jax.append(median(theirs))
    pk_ms, jax_ms = statistics.median(t_pk) * 1e3, statistics.median(t_jax) * 1e3
    return (
        f"all_gather_matmul f32 x[4096, 1024] w[1024, 4096] on a {DEVICES}-device CPU mesh "
        f"(shard_map): pk median {pk_ms:.1f} ms (min {min(t_pk) * 1e3:.1f}), "
        f"jax.lax.all_gather + jnp.dot {jax_ms:.1f} ms (min {min(t_jax) * 1e3:.1f}), "
        f"ratio {jax_ms / pk_ms:.2f} (above 1: pk is faster); max relative difference {err:.1e}"
    )


if __name__ == "__main__":
    print(measure(int(sys.argv[1]), int(sys.argv[2])))

#!/usr/bin/env python3
"""Regenerates the fixtures of the CPU mesh under tests/data/mesh/.

Each case is a kernel of the library run on a mesh of devices (`pkc run
--mesh N`): its inputs stack the devices' arrays on a leading dimension, and
its expected outputs are what `jax.lax` computes, written here with numpy:
`ppermute` moves device d's array to device (d + shift) % n, `all_gather`
stacks every device's shard on every device, `reduce_scatter` and
`all_reduce` sum over devices (`psum_scatter`, `psum`), and
`all_gather_matmul` multiplies the gathered rows by each device's columns,
`matmul_reduce_scatter` sums the devices' products and scatters the rows.
tests/cpu_mesh.rs runs each case and compares within the case's `rtol` and
`atol`: bit for bit where the kernel only moves data, or sums values whose
every partial sum is exact.

Usage: python3 tests/gen_mesh.py   (needs numpy and ml_dtypes)
"""

import json
import os

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "mesh")
RNG = np.random.default_rng(20261207)


def save(case, name, arr):
    path = os.path.join(DATA, case, name + ".npy")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, arr)
    return os.path.relpath(path, os.path.dirname(HERE))


def shards(n, m, c, dtype):
    x = RNG.uniform(-1.0, 1.0, size=(n, m, c)).astype(np.float32)
    if dtype == "bf16":
        x = x.astype(ml_dtypes.bfloat16)
    return x


def ppermute(n, shift, dtype, m=8, c=128):
    name = f"ppermute_{dtype}_n{n}_shift{shift}"
    x = shards(n, m, c, dtype)
    # jax.lax.ppermute(x, perm=[(i, (i + shift) % n) for i in range(n)]):
    # device (d + shift) % n receives device d's array.
    y = np.empty_like(x)
    for d in range(n):
        y[(d + shift) % n] = x[d]
    return {
        "name": name,
        "kernel": "kernels/ppermute.pk",
        "mesh": str(n),
        "params": {"n": n, "shift": shift, "T": dtype, "M": m, "N": c},
        "inputs": {"x": save(name, "x", x)},
        "expected": {"y": save(name, "y_expected", y)},
    }


def all_gather(n, dtype, m=8, c=128):
    name = f"all_gather_{dtype}_n{n}"
    x = shards(n, m, c, dtype)
    # jax.lax.all_gather(x, axis_name, tiled=False): every device holds
    # x of all devices, stacked.
    y = np.stack([x] * n)
    return {
        "name": name,
        "kernel": "kernels/all_gather.pk",
        "mesh": str(n),
        "params": {"n": n, "T": dtype, "M": m, "N": c},
        "inputs": {"x": save(name, "x", x)},
        "expected": {"y": save(name, "y_expected", y)},
    }


# Rows of one sublane tile of each dtype: the collectives cut their blocks
# into halves of whole tiles.
TILE_ROWS = {"f32": 8, "bf16": 16}


def values(shape, dtype):
    """Inputs of the reductions. f32: uniform in [-1, 1), compared within
    the rounding of a sum in another order. bf16: multiples of 1/16 in
    [-1, 1], whose every partial sum of up to 8 is exact in bf16, so the
    ring's order and its rounding at each hop change nothing and the result
    is compared bit for bit."""
    if dtype == "f32":
        return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)
    k = RNG.integers(-16, 17, size=shape)
    return (k / 16.0).astype(ml_dtypes.bfloat16)


def to(dtype, a):
    return a.astype(np.float32 if dtype == "f32" else ml_dtypes.bfloat16)


def sum_tolerance(dtype):
    # f32: n values of magnitude below 1 summed in another order differ by
    # a few units in the last place of a sum below n.
    return {"rtol": 0, "atol": 0} if dtype == "bf16" else {"rtol": 1e-6, "atol": 1e-6}


def reduce_scatter(n, dtype, c=128):
    name = f"reduce_scatter_{dtype}_n{n}"
    m = 2 * TILE_ROWS[dtype]
    # Device d holds n blocks x[d, j]; stacked [n, n, M, N].
    x = values((n, n, m, c), dtype)
    # jax.lax.psum_scatter(x, axis, scatter_dimension=0, tiled=False):
    # device d gets the sum over devices j of x[j, d].
    y = to(dtype, x.astype(np.float64).sum(axis=0))
    return {
        "name": name,
        "kernel": "kernels/reduce_scatter.pk",
        "mesh": str(n),
        "params": {"n": n, "T": dtype, "M": m, "N": c},
        "inputs": {"x": save(name, "x", x)},
        "expected": {"y": save(name, "y_expected", y)},
        **sum_tolerance(dtype),
    }


def all_reduce(n, dtype, c=128):
    name = f"all_reduce_{dtype}_n{n}"
    m = 2 * n * TILE_ROWS[dtype]
    x = values((n, m, c), dtype)
    # jax.lax.psum(x, axis): every device gets the sum over devices.
    s = to(dtype, x.astype(np.float64).sum(axis=0))
    y = np.stack([s] * n)
    return {
        "name": name,
        "kernel": "kernels/all_reduce.pk",
        "mesh": str(n),
        "params": {"n": n, "T": dtype, "M": m, "N": c},
        "inputs": {"x": save(name, "x", x)},
        "expected": {"y": save(name, "y_expected", y)},
        **sum_tolerance(dtype),
    }


def all_gather_matmul(n, dtype, k=128, c=128, blocks=None):
    name = f"all_gather_matmul_{dtype}_n{n}" + ("_blocks" if blocks else "")
    m = 2 * TILE_ROWS[dtype]
    x = shards(n, m, k, dtype)
    w = shards(n, k, c, dtype)
    # jnp.dot(jax.lax.all_gather(x, axis, tiled=True), w): device d
    # multiplies the rows of every device's x, in device order, by its w.
    gathered = x.astype(np.float64).reshape(n * m, k)
    y = to(dtype, np.stack([gathered @ w[d].astype(np.float64) for d in range(n)]))
    # Products accumulate in f32 and round once to the dtype: within one
    # unit in the last place of the result (2^-23 f32, 2^-7 bf16) of the
    # exact product, plus the f32 accumulation of K terms near zero.
    tol = {"f32": (1e-5, 1e-5), "bf16": (2.0**-7, 1e-4)}[dtype]
    return {
        "name": name,
        "kernel": "kernels/all_gather_matmul.pk",
        "mesh": str(n),
        "params": {"n": n, "T": dtype, "M": m, "K": k, "N": c,
                   **({"bn": blocks[0], "bk": blocks[1]} if blocks else {})},
        "inputs": {"x": save(name, "x", x), "w": save(name, "w", w)},
        "expected": {"y": save(name, "y_expected", y)},
        "rtol": tol[0],
        "atol": tol[1],
    }


def matmul_reduce_scatter(n, dtype, k=128, c=128):
    name = f"matmul_reduce_scatter_{dtype}_n{n}"
    m = 2 * TILE_ROWS[dtype]
    # Device d holds all n * M rows over its slice of the contraction, and
    # the same slice of w's rows.
    if dtype == "f32":
        x = shards(n, n * m, k, dtype)
        w = shards(n, k, c, dtype)
    else:
        # Rows of x with three entries of +-1, w in multiples of 1/8 in
        # [-1, 1]: every product and partial sum is a multiple of 1/8 below
        # 3 * n <= 24, exact in bf16, so the ring's order and its rounding
        # at each hop change nothing and the result is compared bit for bit.
        x = np.zeros((n, n * m, k))
        for d in range(n):
            for r in range(n * m):
                cols = RNG.choice(k, size=3, replace=False)
                x[d, r, cols] = RNG.choice([-1.0, 1.0], size=3)
        x = x.astype(ml_dtypes.bfloat16)
        w = (RNG.integers(-8, 9, size=(n, k, c)) / 8.0).astype(ml_dtypes.bfloat16)
    prods = np.stack([x[d].astype(np.float64) @ w[d].astype(np.float64) for d in range(n)])
    # jax.lax.psum_scatter(x @ w, axis, scatter_dimension=0, tiled=True):
    # device d gets rows d * M .. of the sum over devices.
    total = prods.sum(axis=0)
    y = to(dtype, np.stack([total[d * m : (d + 1) * m] for d in range(n)]))
    # f32: every dot accumulates K products, each of the n - 1 hops rounds
    # a partial sum and so does the last addition, each rounding within
    # 2^-24 of its value; the magnitudes of all the terms, summed, bound
    # every such value (the textbook bound of a sum of K + n + 1 roundings).
    bound = np.stack([np.abs(x[d].astype(np.float64)) @ np.abs(w[d].astype(np.float64)) for d in range(n)]).sum(axis=0).max()
    tol = (2.0**-24, float((k + n + 1) * 2.0**-24 * bound)) if dtype == "f32" else (0, 0)
    return {
        "name": name,
        "kernel": "kernels/matmul_reduce_scatter.pk",
        "mesh": str(n),
        "params": {"n": n, "T": dtype, "M": m, "K": k, "N": c},
        "inputs": {"x": save(name, "x", x), "w": save(name, "w", w)},
        "expected": {"y": save(name, "y_expected", y)},
        "rtol": tol[0],
        "atol": tol[1],
    }


def main():
    cases = []
    for dtype in ["f32", "bf16"]:
        for n in [2, 4, 8]:
            cases.append(ppermute(n, 1, dtype))
            cases.append(all_gather(n, dtype))
    cases.append(ppermute(4, 3, "f32", m=16, c=256))
    for dtype in ["f32", "bf16"]:
        for n in [2, 4, 8]:
            cases.append(reduce_scatter(n, dtype))
            cases.append(all_reduce(n, dtype))
            cases.append(all_gather_matmul(n, dtype))
    for dtype in ["f32", "bf16"]:
        for n in [2, 4, 8]:
            cases.append(matmul_reduce_scatter(n, dtype))
    # Tuned block sizes: column blocks of w and a split contraction whose
    # partial products accumulate in f32.
    cases.append(all_gather_matmul(4, "f32", k=256, c=384, blocks=(128, 128)))
    with open(os.path.join(DATA, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

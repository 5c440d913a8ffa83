#!/usr/bin/env python3
"""Regenerates the fixtures of the CPU mesh under tests/data/mesh/.

Each case is a kernel of the library run on a mesh of devices (`pkc run
--mesh N`): its inputs stack the devices' arrays on a leading dimension, and
its expected outputs are what `jax.lax` computes, written here with numpy:
`ppermute` moves device d's array to device (d + shift) % n, `all_gather`
stacks every device's shard on every device. tests/cpu_mesh.rs runs each
case and compares bit for bit (a collective moves data, it computes
nothing).

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


def main():
    cases = []
    for dtype in ["f32", "bf16"]:
        for n in [2, 4, 8]:
            cases.append(ppermute(n, 1, dtype))
            cases.append(all_gather(n, dtype))
    cases.append(ppermute(4, 3, "f32", m=16, c=256))
    with open(os.path.join(DATA, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

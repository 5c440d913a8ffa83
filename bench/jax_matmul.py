"""What calling a pk kernel from JAX on CPU costs over the CPU reference
alone: the pk matmul (f32, 1024^3, the kernel's default blocks) jitted and
run through XLA's FFI, against `pkc bench` on the same shape.

Not a test: it prints both medians and the overhead. Run it with the pk
package installed in release mode and a release pkc (the overhead budget
is 5% at 1024^3):

    cargo build --release -p pk
    CARGO_TARGET_DIR=target pip install ./python     # a release build
    python bench/jax_matmul.py [--iters 20] [--size 1024]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import time

import jax
import numpy as np

import pk.jax

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--pkc", default=str(ROOT / "target" / "release" / "pkc"))
    a = p.parse_args()
    n = a.size

    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    y = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    mm = jax.jit(pk.jax.kernel(ROOT / "kernels" / "matmul.pk", T="f32"))
    xd, yd = jax.device_put(x), jax.device_put(y)
    mm(xd, yd).block_until_ready()  # compile and warm up
    times = []
    for _ in range(a.iters):
        t = time.perf_counter()
        mm(xd, yd).block_until_ready()
        times.append(time.perf_counter() - t)
    jax_median = statistics.median(times)

    env = {k: v for k, v in os.environ.items() if not k.startswith("TPU_")}
    out = subprocess.run(
        [a.pkc, "bench", str(ROOT / "kernels" / "matmul.pk"), "-p", "T=f32",
         "-p", f"M={n}", "-p", f"N={n}", "-p", f"K={n}", "--iters", str(a.iters), "--json"],
        check=True, capture_output=True, text=True, env=env,
    ).stdout
    pkc_median = json.loads(out.strip().splitlines()[-1])["median_s"]

    flops = 2 * n**3
    print(f"pk matmul f32 {n}^3, median of {a.iters} calls")
    print(f"  pkc bench:          {pkc_median * 1e3:8.2f} ms  ({flops / pkc_median / 1e9:5.1f} GFLOP/s)")
    print(f"  jax.jit on CPU/FFI: {jax_median * 1e3:8.2f} ms  ({flops / jax_median / 1e9:5.1f} GFLOP/s)")
    print(f"  overhead:           {(jax_median / pkc_median - 1) * 100:+.1f}%")


if __name__ == "__main__":
    main()

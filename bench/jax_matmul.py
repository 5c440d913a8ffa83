"""What calling a pk kernel from JAX on CPU costs over the CPU reference
alone: the pk matmul (f32, 1024^3, the kernel's default blocks) jitted and
run through XLA's FFI, against `pkc bench` on the same shape.

Not a test: it prints the two timings and the overhead. The build machine
is shared, so the two are measured in alternating rounds and compared by
their fastest call (the least disturbed) as well as by the median of each
round's fastest. Run it with release builds of both (the overhead budget
is 5% at 1024^3):

    cargo build --release -p pk
    pip install ./python                  # a release build of the extension
    python bench/jax_matmul.py [--rounds 10] [--iters 5] [--size 1024]
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
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--iters", type=int, default=5, help="timed calls per round")
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--pkc", default=str(ROOT / "target" / "release" / "pkc"))
    a = p.parse_args()
    n = a.size

    rng = np.random.default_rng(0)
    x = jax.device_put(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    y = jax.device_put(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    mm = jax.jit(pk.jax.kernel(ROOT / "kernels" / "matmul.pk", T="f32"))
    mm(x, y).block_until_ready()  # compile and warm up

    # pkc would inherit the TPU_* variables importing JAX sets.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPU_")}
    bench = [a.pkc, "bench", str(ROOT / "kernels" / "matmul.pk"), "-p", "T=f32",
             "-p", f"M={n}", "-p", f"N={n}", "-p", f"K={n}", "--iters", str(a.iters), "--json"]
    pkc_best, jax_best = [], []
    for _ in range(a.rounds):
        out = subprocess.run(bench, check=True, capture_output=True, text=True, env=env).stdout
        pkc_best.append(json.loads(out.strip().splitlines()[-1])["min_s"])
        times = []
        for _ in range(a.iters):
            t = time.perf_counter()
            mm(x, y).block_until_ready()
            times.append(time.perf_counter() - t)
        jax_best.append(min(times))

    flops = 2 * n**3
    print(f"pk matmul f32 {n}^3: {a.rounds} rounds of {a.iters} calls each")
    for name, best in (("pkc bench", pkc_best), ("jax.jit, CPU FFI", jax_best)):
        print(f"  {name:<17} fastest {min(best) * 1e3:7.2f} ms ({flops / min(best) / 1e9:5.1f} GFLOP/s),"
              f" median of rounds' fastest {statistics.median(best) * 1e3:7.2f} ms")
    print(f"  overhead: {(min(jax_best) / min(pkc_best) - 1) * 100:+.1f}% (fastest),"
          f" {(statistics.median(jax_best) / statistics.median(pkc_best) - 1) * 100:+.1f}% (median)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Measures the CPU reference (`pkc bench`) against numpy in one run.

Workloads: matmul f32 1024^3, matmul bf16 inputs with f32 accumulation
1024^3, and row softmax f32 4096x4096; jax.numpy on the CPU is timed too
when JAX is installed. Each line prints both medians and
the throughput ratio numpy_time / pkc_time (above 1: pk is faster).

Block sizes are chosen first by a short autotuning pass over a few
candidates per kernel (`--no-tune` keeps matmul 256 x 256 x 512 and
softmax 8 rows per block).

numpy has no bf16 matmul, so the bf16 workload is compared with numpy's
f32 matmul of the same sizes (what a numpy user would run). numpy and pkc
are measured in alternating rounds, so that the noise of a shared machine
falls on both.

Usage: cargo build --release --bin pkc && python3 bench/compare.py
       [--pkc PATH] [--iters N] [--threads N] [--rounds N] [--no-tune]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def median_time(fn, iters):
    fn()  # warm-up
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def pkc_bench(pkc, kernel, params, iters, threads):
    cmd = [pkc, "bench", os.path.join(ROOT, kernel), "--json", "--iters", str(iters)]
    for p in params:
        cmd += ["-p", p]
    if threads:
        cmd += ["--threads", str(threads)]
    # numpy's BLAS threads keep spinning for a while after a call; let them
    # go to sleep first, so that they do not take CPU time from the run.
    time.sleep(0.5)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_s"]


def softmax(x):
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=1, keepdims=True)


def workloads_jax(am, bm, xs):
    """The same workloads in jax.numpy on the CPU, when JAX is installed."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return []
    cpu = jax.devices("cpu")[0]
    a, b, x = (jax.device_put(v, cpu) for v in (am, bm, xs))
    ab, bb = a.astype(jnp.bfloat16), b.astype(jnp.bfloat16)
    mm = jax.jit(lambda p, q: p @ q)
    mmb = jax.jit(lambda p, q: jnp.matmul(p, q, preferred_element_type=jnp.float32))
    sm = jax.jit(lambda v: jax.nn.softmax(v, axis=1))
    return [
        ("matmul f32 1024^3", lambda: mm(a, b).block_until_ready()),
        ("matmul bf16->f32 1024^3", lambda: mmb(ab, bb).block_until_ready()),
        ("softmax f32 4096x4096", lambda: sm(x).block_until_ready()),
    ]


def jax_line(jobs, a):
    if not jobs:
        print("(jax.numpy not installed: no jax column)")
        return
    for name, fn in jobs:
        t = statistics.median(median_time(fn, a.iters) for _ in range(a.rounds))
        print(f"{name:26} jax.numpy on CPU: {t * 1e3:.2f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pkc", default=os.path.join(ROOT, "target", "release", "pkc"))
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="pkc worker threads (0: all cores)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating numpy/pkc rounds")
    ap.add_argument("--no-tune", action="store_true", help="the first block candidate of each kernel only")
    a = ap.parse_args()
    if not os.path.exists(a.pkc):
        sys.exit(f"{a.pkc} not found: build it with `cargo build --release --bin pkc`")

    rng = np.random.default_rng(0)
    n = 1024
    am = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    bm = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    xs = rng.uniform(-1, 1, (4096, 4096)).astype(np.float32)
    flops = 2 * n**3
    # Block sizes are the kernel author's to choose: a short autotuning pass
    # picks the fastest of a few candidates (as one would for the TPU).
    mm_blocks = [
        (256, 256, 512),
        (512, 512, 1024),
        (1024, 256, 1024),
        (512, 256, 1024),
        (256, 1024, 1024),
        (512, 1024, 1024),
    ]
    softmax_rows = [8, 16, 32, 64]
    if a.no_tune:
        mm_blocks, softmax_rows = mm_blocks[:1], softmax_rows[:1]

    def tuned(name, kernel, candidates):
        timed = {}
        for _ in range(3):
            for params in candidates:
                t = pkc_bench(a.pkc, kernel, list(params), a.iters, a.threads)
                timed.setdefault(params, []).append(t)
        best = list(min(timed, key=lambda p: statistics.median(timed[p])))
        print(f"{name}: {' '.join(best)} (fastest of {len(timed)})")
        return best

    def matmul_candidates(dtype):
        return [(f"bm={m}", f"bn={n}", f"bk={k}", f"T={dtype}") for m, n, k in mm_blocks]

    mm_f32 = tuned("matmul f32", "kernels/matmul.pk", matmul_candidates("f32"))
    mm_bf16 = tuned("matmul bf16", "kernels/matmul.pk", matmul_candidates("bf16"))
    softmax_params = tuned(
        "softmax",
        "kernels/softmax.pk",
        [("R=4096", "C=4096", f"br={r}") for r in softmax_rows],
    )

    # (name, numpy call, pkc kernel, pkc params, flops, target ratio)
    workloads = [
        ("matmul f32 1024^3", lambda: am @ bm, "kernels/matmul.pk", mm_f32, flops, 0.8),
        ("matmul bf16->f32 1024^3", lambda: am @ bm, "kernels/matmul.pk", mm_bf16, flops, 0.8),
        ("softmax f32 4096x4096", lambda: softmax(xs), "kernels/softmax.pk", softmax_params, None, 1.5),
    ]
    # The machine is shared and noisy: numpy and pkc are measured in
    # alternation, and each line reports the median over the rounds.
    times = {w[0]: ([], []) for w in workloads}
    for _ in range(a.rounds):
        for name, fn, kernel, params, _, _ in workloads:
            times[name][0].append(median_time(fn, a.iters))
            times[name][1].append(pkc_bench(a.pkc, kernel, params, a.iters, a.threads))

    print(f"{'workload':26} {'numpy ms':>9} {'pkc ms':>9} {'ratio':>6} {'target':>7}  throughput")
    for name, _, _, _, fl, target in workloads:
        t_np = statistics.median(times[name][0])
        t_pk = statistics.median(times[name][1])
        ratio = t_np / t_pk
        tp = f"pkc {fl / t_pk / 1e9:.1f} GFLOP/s, numpy {fl / t_np / 1e9:.1f} GFLOP/s" if fl else ""
        ok = "ok" if ratio >= target else "below"
        print(f"{name:26} {t_np * 1e3:9.2f} {t_pk * 1e3:9.2f} {ratio:6.2f} {target:5.1f}x {ok:6} {tp}")
    jax_line(workloads_jax(am, bm, xs), a)
    print(f"(medians of {a.rounds} alternating rounds of {a.iters} calls; numpy has no bf16 matmul,")
    print(" so the bf16 line compares with numpy's f32 matmul of the same size)")


if __name__ == "__main__":
    main()

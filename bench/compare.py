#!/usr/bin/env python3
"""Measures the CPU reference (`pkc bench`) against numpy in one run.

Workloads: matmul f32 1024^3, matmul bf16 inputs with f32 accumulation
1024^3, and row softmax f32 4096x4096; jax.numpy on the CPU is timed too
when JAX is installed. Each line prints both medians and minimums,
pkc's spread (median / minimum; goal at most 1.25) and the throughput
ratio of the medians numpy_time / pkc_time (above 1: pk is faster).

Block sizes are chosen first by a short autotuning pass over a few
candidates per kernel (`--no-tune` keeps matmul 256 x 256 x 512 and
softmax 8 rows per block).

numpy has no bf16 matmul, so the bf16 workload is compared with numpy's
f32 matmul of the same sizes (what a numpy user would run). numpy and pkc
are measured in alternating rounds, so that the noise of a shared machine
falls on both.

The attention workload is flash attention forward (kernels/flash.pk),
causal, B1 H8 S2048 D128 f32, against numpy's dense causal attention and,
when JAX is installed, jitted jax.numpy of the same (goal: 2x jax.numpy).
RMSNorm and softmax cross-entropy (kernels/norms.pk, kernels/xent.pk) are
timed against numpy too. `--only base|layers|attention` runs one group.

Usage: cargo build --release --bin pkc && python3 bench/compare.py
       [--pkc PATH] [--iters N] [--threads N] [--rounds N] [--no-tune]
       [--only base|layers|attention]
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


def time_stats(fn, iters):
    """The median and the minimum of `iters` calls, after a warm-up."""
    fn()  # warm-up
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), min(times)


def median_time(fn, iters):
    return time_stats(fn, iters)[0]


def pkc_bench(pkc, kernel, params, iters, threads, entry=None):
    return pkc_bench_stats(pkc, kernel, params, iters, threads, entry)[0]


def pkc_bench_stats(pkc, kernel, params, iters, threads, entry=None):
    """`pkc bench`'s median and minimum call time, in seconds."""
    cmd = [pkc, "bench", os.path.join(ROOT, kernel), "--json", "--iters", str(iters)]
    if entry:
        cmd += ["-k", entry]
    for p in params:
        cmd += ["-p", p]
    if threads:
        cmd += ["--threads", str(threads)]
    # numpy's BLAS threads keep spinning for a while after a call; let them
    # go to sleep first, so that they do not take CPU time from the run.
    time.sleep(0.5)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return r["median_s"], r["min_s"]


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


# Flash attention forward: the configuration the library's goal names.
ATTN = {"B": 1, "H": 8, "S": 2048, "D": 128}


def attention_np(q, k, v, scale):
    """Dense causal attention in numpy, one head at a time (f32)."""
    s_len = q.shape[2]
    mask = np.triu(np.ones((s_len, s_len), dtype=bool), 1)
    out = np.empty_like(q)
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            s = (q[b, h] @ k[b, h].T) * scale
            s[mask] = -np.inf
            out[b, h] = softmax(s) @ v[b, h]
    return out


def attention_jax(q, k, v, scale):
    """The same in jitted jax.numpy on the CPU, or None without JAX."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    cpu = jax.devices("cpu")[0]
    qj, kj, vj = (jax.device_put(x, cpu) for x in (q, k, v))

    @jax.jit
    def attn(q, k, v):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) * scale
        n = q.shape[2]
        s = jnp.where(jnp.tril(jnp.ones((n, n), dtype=bool)), s, -jnp.inf)
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)

    return lambda: attn(qj, kj, vj).block_until_ready()


def attention_rows(a):
    """Flash attention forward against numpy and jax.numpy, alternating."""
    b, h, s_len, d = ATTN["B"], ATTN["H"], ATTN["S"], ATTN["D"]
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((b, h, s_len, d)).astype(np.float32) for _ in range(3))
    scale = 1.0 / np.sqrt(d)
    params = [f"{n}={x}" for n, x in ATTN.items()] + [f"SK={s_len}", f"KH={h}", "T=f32", "causal=true"]
    kernel = "kernels/flash.pk"
    jx = attention_jax(q, k, v, scale)
    t_np, t_pk, t_jx = [], [], []
    for _ in range(a.rounds):
        t_np.append(median_time(lambda: attention_np(q, k, v, scale), max(1, a.iters // 5)))
        t_pk.append(pkc_bench(a.pkc, kernel, params, a.iters, a.threads, "flash_attention"))
        if jx:
            t_jx.append(median_time(jx, a.iters))
    name = f"flash fwd causal B{b} H{h} S{s_len} D{d} f32"
    med_pk, min_pk = statistics.median(t_pk), min(t_pk)
    print(f"{name}: pkc median {med_pk * 1e3:.1f} ms (min {min_pk * 1e3:.1f}), "
          f"numpy {statistics.median(t_np) * 1e3:.1f} ms "
          f"(ratio {statistics.median(t_np) / med_pk:.2f})")
    if jx:
        ratio = statistics.median(t_jx) / med_pk
        ok = "ok" if ratio >= 2.0 else "below"
        print(f"{'':{len(name)}}  jax.numpy {statistics.median(t_jx) * 1e3:.1f} ms "
              f"(ratio {ratio:.2f}, target 2.0x {ok})")
    else:
        print("(jax.numpy not installed: no jax column for attention)")


def rms_norm_np(x, w, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * w


def xent_np(logits, labels):
    m = logits.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    return lse[:, 0] - logits[np.arange(len(labels)), labels]


def layer_rows(a):
    """RMSNorm (4096 x 4096) and cross-entropy (1024 rows, vocabulary 32768),
    f32, against the same computation in numpy, alternating."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4096, 4096)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, (1, 4096)).astype(np.float32)
    logits = rng.standard_normal((1024, 32768)).astype(np.float32)
    labels = rng.integers(0, 32768, 1024)
    rows = [
        ("rms_norm f32 4096x4096", lambda: rms_norm_np(x, w), "kernels/norms.pk", "rms_norm",
         ["R=4096", "C=4096", "br=32", "T=f32"]),
        ("xent f32 1024x32768", lambda: xent_np(logits, labels), "kernels/xent.pk", "xent",
         ["N=1024", "V=32768", "bn=64", "bv=2048", "T=f32"]),
    ]
    for name, fn, kernel, entry, params in rows:
        t_np, t_pk = [], []
        for _ in range(a.rounds):
            t_np.append(median_time(fn, a.iters))
            t_pk.append(pkc_bench(a.pkc, kernel, params, a.iters, a.threads, entry))
        med_np, med_pk = statistics.median(t_np), statistics.median(t_pk)
        print(f"{name:26} numpy {med_np * 1e3:.2f} ms, pkc median {med_pk * 1e3:.2f} ms "
              f"(min {min(t_pk) * 1e3:.2f}), ratio {med_np / med_pk:.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pkc", default=os.path.join(ROOT, "target", "release", "pkc"))
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="pkc worker threads (0: all cores)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating numpy/pkc rounds")
    ap.add_argument("--no-tune", action="store_true", help="the first block candidate of each kernel only")
    ap.add_argument("--only", choices=["base", "layers", "attention"], help="run one group of workloads")
    a = ap.parse_args()
    if not os.path.exists(a.pkc):
        sys.exit(f"{a.pkc} not found: build it with `cargo build --release --bin pkc`")
    if a.only == "attention":
        attention_rows(a)
        return
    if a.only == "layers":
        layer_rows(a)
        return
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
    # alternation, and each line reports the median over the rounds (the
    # ratio is of medians) and the fastest call of any round. `spread` is
    # pkc's median over its minimum: how much the figure depends on when
    # it is taken (goal: at most 1.25).
    times = {w[0]: ([], [], [], []) for w in workloads}
    for _ in range(a.rounds):
        for name, fn, kernel, params, _, _ in workloads:
            med, low = time_stats(fn, a.iters)
            times[name][0].append(med)
            times[name][1].append(low)
            med, low = pkc_bench_stats(a.pkc, kernel, params, a.iters, a.threads)
            times[name][2].append(med)
            times[name][3].append(low)

    print(f"{'workload':26} {'numpy ms':>9} {'(min)':>7} {'pkc ms':>9} {'(min)':>7} {'spread':>6} "
          f"{'ratio':>6} {'target':>7}  throughput (medians)")
    for name, _, _, _, fl, target in workloads:
        t_np, min_np = statistics.median(times[name][0]), min(times[name][1])
        t_pk, min_pk = statistics.median(times[name][2]), min(times[name][3])
        ratio = t_np / t_pk
        tp = f"pkc {fl / t_pk / 1e9:.1f} GFLOP/s, numpy {fl / t_np / 1e9:.1f} GFLOP/s" if fl else ""
        ok = "ok" if ratio >= target else "below"
        print(f"{name:26} {t_np * 1e3:9.2f} {min_np * 1e3:7.2f} {t_pk * 1e3:9.2f} {min_pk * 1e3:7.2f} "
              f"{t_pk / min_pk:6.2f} {ratio:6.2f} {target:5.1f}x {ok:6} {tp}")
    jax_line(workloads_jax(am, bm, xs), a)
    print(f"(medians of {a.rounds} alternating rounds of {a.iters} calls; numpy has no bf16 matmul,")
    print(" so the bf16 line compares with numpy's f32 matmul of the same size)")
    if a.only != "base":
        layer_rows(a)
        attention_rows(a)


if __name__ == "__main__":
    main()

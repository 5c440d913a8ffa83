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
timed against numpy too, grouped matmul (kernels/gmm.pk) against
jax.lax.ragged_dot, and the int8 w8a8 matmul (kernels/qmatmul.pk) against
numpy and jax.numpy. Paged and ragged paged attention (bench/paged.py)
are timed against jitted jax.numpy gathering the pages and attending on the
same batch (goal: at least as fast). Splash attention forward
(kernels/splash.pk), causal and a 256-key sliding window, is timed against
dense masked numpy and jax.numpy attention and, causal, against flash
attention. `all_gather_matmul` on a 4-device CPU mesh under
`jax.shard_map` (bench/mesh.py) is timed against `jax.lax.all_gather` +
`jnp.dot` in the same shard_map (goal: at least as fast).
`--only base|layers|attention|gmm|qmatmul|paged|splash|mesh` runs one
group.

Usage: cargo build --release --bin pkc && python3 bench/compare.py
       [--pkc PATH] [--iters N] [--threads N] [--rounds N] [--no-tune]
       [--only base|layers|attention|gmm|qmatmul|paged|splash|mesh]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import mesh
import paged

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


def pkc_bench(pkc, kernel, params, iters, threads, entry=None, inputs=()):
    return pkc_bench_stats(pkc, kernel, params, iters, threads, entry, inputs)[0]


def pkc_bench_stats(pkc, kernel, params, iters, threads, entry=None, inputs=()):
    """`pkc bench`'s median and minimum call time, in seconds."""
    cmd = [pkc, "bench", os.path.join(ROOT, kernel), "--json", "--iters", str(iters)]
    if entry:
        cmd += ["-k", entry]
    for i in inputs:
        cmd += ["--in", i]
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


def pallas_flash(scale):
    """JAX's Pallas TPU flash attention (its forward, and its two backward
    kernels) run with `pallas_call(..., interpret=True)` on the CPU, causal,
    blocks of 512 as pk's defaults; None without JAX.

    Returns (forward(q, k, v), backward(q, k, v, l, m, do, di) -> (dq, dk,
    dv)), jitted."""
    try:
        import functools

        import jax
        from jax.experimental import pallas as pl
        from jax.experimental.pallas.ops.tpu import flash_attention as fa
    except ImportError:
        return None

    class Interpreted:
        """`fa.pl` with `pallas_call` interpreting: the module's kernels
        take no `interpret` argument of their own."""

        def __getattr__(self, name):
            if name == "pallas_call":
                return functools.partial(pl.pallas_call, interpret=True)
            return getattr(pl, name)

    fa.pl = Interpreted()
    blk = min(512, ATTN["S"])
    bs = fa.BlockSizes(block_q=blk, block_k_major=blk, block_k=blk, block_b=1)

    def fwd(q, k, v):
        return fa._flash_attention(q, k, v, None, None, False, True, scale, bs, False)

    def bwd(q, k, v, l, m, do, di):
        dk, dv = fa._flash_attention_bwd_dkv(
            q, k, v, None, None, l, m, do, di, block_q_major=blk, block_q=blk,
            block_k_major=blk, block_k=blk, sm_scale=scale, causal=True,
            mask_value=fa.DEFAULT_MASK_VALUE)
        dq, _ = fa._flash_attention_bwd_dq(
            q, k, v, None, None, l, m, do, di, block_q_major=blk, block_k_major=blk,
            block_k=blk, sm_scale=scale, causal=True, mask_value=fa.DEFAULT_MASK_VALUE,
            debug=False)
        return dq, dk, dv

    return jax.jit(fwd), jax.jit(bwd)


def attention_grad_jax(q, k, v, do, scale):
    """`jax.grad` of the jitted jax.numpy attention, or None without JAX."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    cpu = jax.devices("cpu")[0]
    args = [jax.device_put(x, cpu) for x in (q, k, v, do)]

    def loss(q, k, v, do):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) * scale
        n = q.shape[2]
        s = jnp.where(jnp.tril(jnp.ones((n, n), dtype=bool)), s, -jnp.inf)
        o = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)
        return (o * do).sum()

    g = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))
    return lambda: jax.block_until_ready(g(*args))


def attention_rows(a):
    """Flash attention forward and backward against numpy, jax.numpy and
    Pallas's own flash attention in interpret mode, alternating."""
    import tempfile

    b, h, s_len, d = ATTN["B"], ATTN["H"], ATTN["S"], ATTN["D"]
    rng = np.random.default_rng(1)
    q, k, v, do = (rng.standard_normal((b, h, s_len, d)).astype(np.float32) for _ in range(4))
    scale = 1.0 / np.sqrt(d)
    params = [f"{n}={x}" for n, x in ATTN.items()] + [f"SK={s_len}", f"KH={h}", "T=f32", "causal=true"]
    kernel = "kernels/flash.pk"
    jx = attention_jax(q, k, v, scale)
    jx_bwd = attention_grad_jax(q, k, v, do, scale)
    # The backward kernels read the forward's o and lse (Pallas's its row
    # max m, sum l and di = rowsum(o * do)): the real ones, from numpy, so
    # that the probabilities they recompute are the real ones.
    o = attention_np(q, k, v, scale)
    rmax = np.empty((b, h, s_len), np.float32)
    rsum = np.empty((b, h, s_len), np.float32)
    mask = np.triu(np.ones((s_len, s_len), dtype=bool), 1)
    for bi in range(b):
        for hi in range(h):
            sc = (q[bi, hi] @ k[bi, hi].T) * scale
            sc[mask] = -np.inf
            rmax[bi, hi] = sc.max(axis=1)
            rsum[bi, hi] = np.exp(sc - rmax[bi, hi][:, None]).sum(axis=1)
    lse = (rmax + np.log(rsum))[..., None]
    di = (o * do).sum(axis=-1)
    pl = pallas_flash(scale)
    if pl:
        import jax

        pl_fwd = lambda: jax.block_until_ready(pl[0](q, k, v))  # noqa: E731
        pl_bwd = lambda: jax.block_until_ready(pl[1](q, k, v, rsum, rmax, do, di))  # noqa: E731
    tmp = tempfile.mkdtemp(prefix="pk-flash-")
    files = []
    for name, arr in (("q", q), ("k", k), ("v", v), ("o", o), ("do", do), ("lse", lse)):
        path = os.path.join(tmp, name + ".npy")
        np.save(path, arr)
        files.append(f"{name}={path}")
    t = {key: [] for key in ("np", "pk", "jx", "pl", "pk_bwd", "jx_bwd", "pl_bwd")}
    for _ in range(a.rounds):
        t["np"].append(median_time(lambda: attention_np(q, k, v, scale), max(1, a.iters // 5)))
        t["pk"].append(pkc_bench(a.pkc, kernel, params + ["residuals=false"], a.iters, a.threads,
                                 "flash_attention"))
        t["pk_bwd"].append(
            pkc_bench(a.pkc, kernel, params, a.iters, a.threads, "flash_attention_bwd_dq", files)
            + pkc_bench(a.pkc, kernel, params, a.iters, a.threads, "flash_attention_bwd_dkv",
                        files))
        if jx:
            t["jx"].append(median_time(jx, a.iters))
            t["jx_bwd"].append(median_time(jx_bwd, max(1, a.iters // 2)))
        if pl:
            t["pl"].append(median_time(pl_fwd, max(1, a.iters // 2)))
            t["pl_bwd"].append(median_time(pl_bwd, max(1, a.iters // 5)))
    med = {key: statistics.median(x) for key, x in t.items() if x}
    name = f"flash causal B{b} H{h} S{s_len} D{d} f32"
    print(f"{name} forward: pkc median {med['pk'] * 1e3:.1f} ms (min {min(t['pk']) * 1e3:.1f}), "
          f"numpy {med['np'] * 1e3:.1f} ms (ratio {med['np'] / med['pk']:.2f})")
    pad = " " * (len(name) + 10)

    def against(label, base, ours, goal=None):
        ratio = med[base] / med[ours]
        verdict = f", target {goal:.1f}x {'ok' if ratio >= goal else 'below'}" if goal else ""
        print(f"{pad}{label} {med[base] * 1e3:.1f} ms (ratio {ratio:.2f}{verdict})")

    if jx:
        against("jax.numpy", "jx", "pk", 2.0)
    if pl:
        against("Pallas interpret", "pl", "pk", 2.0)
    print(f"{name} backward (dq + dkv kernels): pkc median {med['pk_bwd'] * 1e3:.1f} ms "
          f"(min {min(t['pk_bwd']) * 1e3:.1f})")
    if jx:
        against("jax.grad of jax.numpy", "jx_bwd", "pk_bwd")
    if pl:
        against("Pallas interpret dq + dkv kernels", "pl_bwd", "pk_bwd", 2.0)
    if not jx:
        print("(JAX not installed: no jax.numpy or Pallas columns for attention)")


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


# ---- grouped matmul (kernels/gmm.pk) ---------------------------------------

GMM = {"M": 2048, "K": 1024, "N": 1024, "G": 8, "tm": 256, "tk": 512, "tn": 512}


def gmm_rows(a):
    """Grouped matmul, f32, M2048 K1024 N1024 over 8 groups of uneven sizes
    (one empty), against jax.lax.ragged_dot (jitted, on the CPU) and a numpy
    loop of one matmul per group, alternating (goal: at least as fast as
    ragged_dot). The tile metadata comes from `pkc meta gmm`."""
    import tempfile

    m, k, n, g = GMM["M"], GMM["K"], GMM["N"], GMM["G"]
    rng = np.random.default_rng(3)
    sizes = np.array([300, 0, 512, 100, 356, 200, 300, 280], np.int32)
    assert sizes.sum() == m and len(sizes) == g
    lhs = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    rhs = rng.uniform(-1, 1, (g, k, n)).astype(np.float32)
    tmp = tempfile.mkdtemp(prefix="pk-bench-gmm-")
    np.save(os.path.join(tmp, "sizes.npy"), sizes)
    subprocess.run([a.pkc, "meta", "gmm", "--group-sizes", os.path.join(tmp, "sizes.npy"),
                    "--m", str(m), "--tm", str(GMM["tm"]), "-o", tmp, "-q"], check=True)
    params = [f"{p}={v}" for p, v in GMM.items()] + ["T=f32", "O=f32"]
    ins = [f"{t}={os.path.join(tmp, t + '.npy')}"
           for t in ("group_offsets", "group_ids", "m_tile_ids", "num_tiles")]
    ends = np.cumsum(sizes)

    def loop():
        out = np.empty((m, n), np.float32)
        for i, (lo, hi) in enumerate(zip(ends - sizes, ends)):
            out[lo:hi] = lhs[lo:hi] @ rhs[i]
        return out

    try:
        import jax
        import jax.numpy as jnp

        jl, jr, js = jnp.asarray(lhs), jnp.asarray(rhs), jnp.asarray(sizes)
        rd = jax.jit(jax.lax.ragged_dot)
        rd(jl, jr, js).block_until_ready()

        def ragged():
            return rd(jl, jr, js).block_until_ready()
    except ImportError:
        ragged = None
    t_np, t_pk, t_rd = [], [], []
    for _ in range(a.rounds):
        t_np.append(median_time(loop, a.iters))
        t_pk.append(pkc_bench(a.pkc, "kernels/gmm.pk", params, a.iters, a.threads, "gmm", ins))
        if ragged:
            t_rd.append(median_time(ragged, a.iters))
    med_pk = statistics.median(t_pk)
    name = f"gmm f32 M{m} K{k} N{n} G{g}"
    print(f"{name}: pkc median {med_pk * 1e3:.1f} ms (min {min(t_pk) * 1e3:.1f}), "
          f"numpy loop {statistics.median(t_np) * 1e3:.1f} ms "
          f"(ratio {statistics.median(t_np) / med_pk:.2f})")
    if ragged:
        ratio = statistics.median(t_rd) / med_pk
        ok = "ok" if ratio >= 1.0 else "below"
        print(f"{'':{len(name)}}  jax.lax.ragged_dot {statistics.median(t_rd) * 1e3:.1f} ms "
              f"(min {min(t_rd) * 1e3:.1f}; ratio {ratio:.2f}, target 1.0x {ok})")
    else:
        print("(jax not installed: no ragged_dot column for gmm)")

# ---- end of grouped matmul ---------------------------------------------------


# ---- quantized matmul (kernels/qmatmul.pk) -----------------------------------

def qmatmul_rows(a):
    """int8 w8a8 matmul, M512 K2048 N2048, f32 output, against numpy's f32
    matmul of the dequantized operands (what a numpy user runs) and jitted
    jax.numpy `int8 x int8 -> int32` then scaled, alternating."""
    m, k, n = 512, 2048, 2048
    rng = np.random.default_rng(4)
    x = rng.integers(-127, 128, (m, k)).astype(np.int8)
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    xs = rng.uniform(0.001, 0.02, (m, 1)).astype(np.float32)
    ws = rng.uniform(0.001, 0.02, (1, n)).astype(np.float32)
    xf, wf = x.astype(np.float32), w.astype(np.float32)

    def dequant():
        return (xs * xf) @ (wf * ws)

    try:
        import jax
        import jax.numpy as jnp

        @jax.jit
        def q(x, w, xs, ws):
            acc = jnp.matmul(x, w, preferred_element_type=jnp.int32)
            return acc.astype(jnp.float32) * xs * ws

        args = [jnp.asarray(v) for v in (x, w, xs, ws)]
        q(*args).block_until_ready()

        def jq():
            return q(*args).block_until_ready()
    except ImportError:
        jq = None
    params = [f"M={m}", f"K={k}", f"N={n}", "bm=256", "bn=512", "bk=1024", "O=f32"]
    t_np, t_pk, t_jx = [], [], []
    for _ in range(a.rounds):
        t_np.append(median_time(dequant, a.iters))
        t_pk.append(pkc_bench(a.pkc, "kernels/qmatmul.pk", params, a.iters, a.threads,
                              "qmatmul_w8a8"))
        if jq:
            t_jx.append(median_time(jq, a.iters))
    med_pk = statistics.median(t_pk)
    name = f"qmatmul w8a8 M{m} K{k} N{n}"
    print(f"{name}: pkc median {med_pk * 1e3:.1f} ms (min {min(t_pk) * 1e3:.1f}), "
          f"numpy f32 dequantized {statistics.median(t_np) * 1e3:.1f} ms "
          f"(ratio {statistics.median(t_np) / med_pk:.2f})")
    if jq:
        print(f"{'':{len(name)}}  jax.numpy int8 {statistics.median(t_jx) * 1e3:.1f} ms "
              f"(ratio {statistics.median(t_jx) / med_pk:.2f})")

# ---- end of quantized matmul -------------------------------------------------
# ---- Splash attention (kernels/splash.pk) ----------------------------------
# Block-sparse attention driven by the mask info of `pkc meta splash`,
# against dense masked attention in numpy and jitted jax.numpy (which compute
# every score and mask afterwards), and, for the causal mask, against
# kernels/flash.pk causal (which skips the same blocks by an index test).

SPLASH = {"B": 1, "H": 8, "KH": 8, "S": 2048, "SK": 2048, "D": 128, "bq": 512, "bk": 512}
# (mask, its dense form, shrink the grid): the window is timed with the
# grid shrunk to the live blocks of each row.
SPLASH_MASKS = [
    ("causal", lambda r, c: c <= r, False),
    ("local:256,0", lambda r, c: (c <= r) & (c >= r - 256), True),
]


def splash_pkc_bench(a, params, meta_dir, names):
    """`pkc bench` of splash_attention with the mask info files of
    `meta_dir` (q, k and v random)."""
    cmd = [a.pkc, "bench", os.path.join(ROOT, "kernels/splash.pk"), "-k", "splash_attention",
           "--json", "--iters", str(a.iters)]
    for p in params:
        cmd += ["-p", p]
    for n in names:
        cmd += ["--in", f"{n}={os.path.join(meta_dir, n + '.npy')}"]
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    time.sleep(0.5)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_s"]


def masked_attention_np(q, k, v, scale, mask):
    out = np.empty_like(q)
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            s = (q[b, h] @ k[b, h].T) * scale
            s[~mask] = -np.inf
            out[b, h] = softmax(s) @ v[b, h]
    return out


def masked_attention_jax(q, k, v, scale, mask):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    cpu = jax.devices("cpu")[0]
    qj, kj, vj, mj = (jax.device_put(x, cpu) for x in (q, k, v, mask))

    @jax.jit
    def attn(q, k, v, m):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) * scale
        s = jnp.where(m, s, -jnp.inf)
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)

    return lambda: attn(qj, kj, vj, mj).block_until_ready()


def splash_rows(a):
    """Splash attention forward, f32, per mask: pkc median and minimum, and
    the ratios numpy / pkc, jax.numpy / pkc and flash / splash (above 1:
    splash is faster), from alternating rounds."""
    import tempfile

    b, h, s_len, d = SPLASH["B"], SPLASH["H"], SPLASH["S"], SPLASH["D"]
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((b, h, s_len, d)).astype(np.float32) for _ in range(3))
    scale = 1.0 / np.sqrt(d)
    r, c = np.arange(s_len)[:, None], np.arange(s_len)[None, :]
    names = ["data_next", "mask_next", "block_mask", "mask_blocks"]
    for spec, keep, shrink in SPLASH_MASKS:
        mask = keep(r, c)
        with tempfile.TemporaryDirectory() as meta:
            subprocess.run([a.pkc, "meta", "splash", "--mask", spec, "--sq", str(s_len),
                            "--bq", str(SPLASH["bq"]), "--bkv", str(SPLASH["bk"]), "-o", meta]
                           + (["--shrink"] if shrink else []),
                           check=True, capture_output=True)
            n_blocks = np.load(os.path.join(meta, "mask_blocks.npy")).shape[0]
            kinds = np.load(os.path.join(meta, "block_mask.npy"))
            live = float((kinds != 0).sum()) / (kinds.shape[0] * -(-s_len // SPLASH["bk"]))
            params = [f"{n}={x}" for n, x in SPLASH.items()] + [
                f"NP={n_blocks}", f"NKS={kinds.shape[1]}", "T=f32"]
            flash = [f"{n}={x}" for n, x in SPLASH.items()] + ["T=f32", "causal=true"]
            jx = masked_attention_jax(q, k, v, scale, mask)
            t_np, t_pk, t_fl, t_jx = [], [], [], []
            for _ in range(a.rounds):
                t_np.append(median_time(lambda: masked_attention_np(q, k, v, scale, mask),
                                        max(1, a.iters // 5)))
                t_pk.append(splash_pkc_bench(a, params, meta, names))
                if spec == "causal":
                    t_fl.append(pkc_bench(a.pkc, "kernels/flash.pk", flash, a.iters, a.threads,
                                          "flash_attention"))
                if jx:
                    t_jx.append(median_time(jx, a.iters))
        med = statistics.median(t_pk)
        grid = ", grid shrunk" if shrink else ""
        line = (f"splash fwd {spec} B{b} H{h} S{s_len} D{d} f32 ({live:.0%} of blocks live{grid}): "
                f"pkc median {med * 1e3:.1f} ms (min {min(t_pk) * 1e3:.1f}), "
                f"numpy ratio {statistics.median(t_np) / med:.2f}")
        if jx:
            line += f", jax.numpy {statistics.median(t_jx) * 1e3:.1f} ms (ratio {statistics.median(t_jx) / med:.2f})"
        if t_fl:
            line += (f", flash causal {statistics.median(t_fl) * 1e3:.1f} ms "
                     f"(min {min(t_fl) * 1e3:.1f}; ratio {statistics.median(t_fl) / med:.2f})")
        print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pkc", default=os.path.join(ROOT, "target", "release", "pkc"))
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="pkc worker threads (0: all cores)")
    ap.add_argument("--rounds", type=int, default=5, help="alternating numpy/pkc rounds")
    ap.add_argument("--no-tune", action="store_true", help="the first block candidate of each kernel only")
    ap.add_argument("--only", choices=["base", "layers", "attention", "gmm", "qmatmul", "paged", "splash", "mesh"],
                    help="run one group of workloads")
    a = ap.parse_args()
    if not os.path.exists(a.pkc):
        sys.exit(f"{a.pkc} not found: build it with `cargo build --release --bin pkc`")
    if a.only == "attention":
        attention_rows(a)
        return
    if a.only == "layers":
        layer_rows(a)
        return
    if a.only == "gmm":
        gmm_rows(a)
        return
    if a.only == "qmatmul":
        qmatmul_rows(a)
        return
    # ---- paged and ragged paged attention (bench/paged.py) ----
    if a.only == "paged":
        paged.rows(a, median_time)
        return
    if a.only == "splash":
        splash_rows(a)
        return
    if a.only == "mesh":
        mesh.rows(a)
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
        gmm_rows(a)
        qmatmul_rows(a)
        paged.rows(a, median_time)
        splash_rows(a)
        mesh.rows(a)


if __name__ == "__main__":
    main()

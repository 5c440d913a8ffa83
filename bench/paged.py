"""Paged and ragged paged attention (kernels/paged_attention.pk,
kernels/ragged_paged_attention.pk) on the CPU reference against jitted
jax.numpy on the same batch: the pages gathered through the page table,
then dense attention. Used by bench/compare.py (`--only paged`)."""

import json
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Decode: 16 sequences of 128..1024 tokens, Llama-style heads (32 query, 8
# key/value), 16-token pages.
PAGED = {"B": 16, "H": 32, "KH": 8, "D": 128, "page_size": 16, "pages_per_seq": 64, "ppb": 8}
# Mixed batch: two prefill chunks of 128 tokens (at 512 and 1024 tokens of
# context) and eight decode tokens, in tables with room for 16 sequences.
RAGGED_Q = [128, 128] + [1] * 8
RAGGED_KV = [512, 1024, 130, 260, 390, 520, 650, 780, 910, 1000]
RAGGED = {"S": 16, "H": 32, "KH": 8, "D": 128, "page_size": 16, "pages_per_seq": 64,
          "bq": 32, "ppb": 8}


def _tables(rng, lengths, page_size, pages_per_seq, total_pages):
    table = np.zeros((len(lengths), pages_per_seq), np.int32)
    perm = rng.permutation(total_pages)
    used = 0
    for b, n in enumerate(lengths):
        need = -(-n // page_size)
        table[b, :need] = perm[used:used + need]
        used += need
    return table


def _save(tmp, arrays):
    args = []
    for name, arr in arrays.items():
        path = os.path.join(tmp, name + ".npy")
        np.save(path, arr)
        args += ["--in", f"{name}={path}"]
    return args


def _jax():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None, None
    return jax, jnp


def paged_inputs(rng):
    c = PAGED
    b, kh, g, d = c["B"], c["KH"], c["H"] // c["KH"], c["D"]
    ps, pps = c["page_size"], c["pages_per_seq"]
    total = b * pps
    lengths = rng.integers(128, pps * ps + 1, b).astype(np.int32)
    table = _tables(rng, lengths, ps, pps, total)
    q = rng.standard_normal((b, kh, g, d)).astype(np.float32)
    k = rng.standard_normal((kh, total, ps, d)).astype(np.float32)
    v = rng.standard_normal((kh, total, ps, d)).astype(np.float32)
    return {"lengths": lengths, "page_indices": table, "q": q, "k_pages": k, "v_pages": v}, total


def paged_jnp(inputs, scale):
    """Gather every table entry's page, then masked dense attention."""
    jax, jnp = _jax()
    if jax is None:
        return None
    cpu = jax.devices("cpu")[0]
    args = {n: jax.device_put(x, cpu) for n, x in inputs.items()}

    @jax.jit
    def attn(lengths, page_indices, q, k_pages, v_pages):
        kh, _, ps, d = k_pages.shape
        b, pps = page_indices.shape
        k = k_pages[:, page_indices].reshape(kh, b, pps * ps, d)
        v = v_pages[:, page_indices].reshape(kh, b, pps * ps, d)
        s = jnp.einsum("bhgd,hbld->bhgl", q, k) * scale
        keep = jnp.arange(pps * ps)[None, None, None, :] < lengths[:, None, None, None]
        p = jax.nn.softmax(jnp.where(keep, s, -jnp.inf), axis=-1)
        return jnp.einsum("bhgl,hbld->bhgd", p, v)

    return lambda: attn(**args).block_until_ready()


def ragged_inputs(rng):
    c = RAGGED
    kh, g, d = c["KH"], c["H"] // c["KH"], c["D"]
    ps, pps, s_max = c["page_size"], c["pages_per_seq"], c["S"]
    n = len(RAGGED_Q)
    total = s_max * pps
    tq = sum(RAGGED_Q)
    cu = np.full(s_max + 1, tq, np.int32)
    cu[:n + 1] = np.concatenate([[0], np.cumsum(RAGGED_Q)])
    kv_lens = np.zeros(s_max, np.int32)
    kv_lens[:n] = RAGGED_KV
    table = _tables(rng, kv_lens, ps, pps, total)
    q = rng.standard_normal((tq, kh, g, d)).astype(np.float32)
    k = rng.standard_normal((kh, total, ps, d)).astype(np.float32)
    v = rng.standard_normal((kh, total, ps, d)).astype(np.float32)
    return {"cu_q_lens": cu, "kv_lens": kv_lens, "page_indices": table,
            "num_seqs": np.array([n], np.int32), "q": q, "k_pages": k, "v_pages": v}, total, tq


def ragged_jnp(inputs, scale):
    """JAX's reference formulation: per sequence (lengths static under
    jit), its pages gathered and causal attention over them, concatenated."""
    jax, jnp = _jax()
    if jax is None:
        return None
    cpu = jax.devices("cpu")[0]
    table = inputs["page_indices"]
    q, k_pages, v_pages = (jax.device_put(inputs[n], cpu) for n in ("q", "k_pages", "v_pages"))
    ps = k_pages.shape[2]

    @jax.jit
    def attn(q, k_pages, v_pages):
        kh, d = k_pages.shape[0], k_pages.shape[3]
        outs, start = [], 0
        for s, (ql, kl) in enumerate(zip(RAGGED_Q, RAGGED_KV)):
            pages = table[s, :-(-kl // ps)]
            k = k_pages[:, pages].reshape(kh, -1, d)[:, :kl]
            v = v_pages[:, pages].reshape(kh, -1, d)[:, :kl]
            qs = q[start:start + ql]
            sc = jnp.einsum("qhgd,hkd->hgqk", qs, k) * scale
            keep = jnp.arange(kl)[None, :] <= (kl - ql + jnp.arange(ql))[:, None]
            p = jax.nn.softmax(jnp.where(keep, sc, -jnp.inf), axis=-1)
            outs.append(jnp.einsum("hgqk,hkd->qhgd", p, v))
            start += ql
        return jnp.concatenate(outs, axis=0)

    return lambda: attn(q, k_pages, v_pages).block_until_ready()


def pkc_bench(pkc, kernel, params, ins, iters, threads):
    """`pkc bench` of a kernel with its inputs from files: the page tables
    must be real, and both sides then see the same batch."""
    cmd = [pkc, "bench", os.path.join(ROOT, kernel), "--json", "--iters", str(iters)]
    for p in params:
        cmd += ["-p", p]
    cmd += ins
    if threads:
        cmd += ["--threads", str(threads)]
    time.sleep(0.5)  # Let jax's worker threads go idle first.
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_s"]


def rows(a, median_time):
    """Both kernels against jitted jax.numpy, alternating rounds."""
    rng = np.random.default_rng(3)
    scale = 1.0 / np.sqrt(PAGED["D"])
    p_in, p_total = paged_inputs(rng)
    r_in, r_total, tq = ragged_inputs(rng)
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "p"))
        os.makedirs(os.path.join(tmp, "r"))
        p_args = _save(os.path.join(tmp, "p"), p_in)
        r_args = _save(os.path.join(tmp, "r"), r_in)
        work = [
            (f"paged decode B{PAGED['B']} H32 KH8 D128 f32", "kernels/paged_attention.pk",
             [f"{n}={x}" for n, x in PAGED.items()] + [f"P={p_total}", "T=f32"], p_args,
             paged_jnp(p_in, scale)),
            (f"ragged mixed TQ{tq} H32 KH8 D128 f32", "kernels/ragged_paged_attention.pk",
             [f"{n}={x}" for n, x in RAGGED.items()] + [f"P={r_total}", f"TQ={tq}", "T=f32"],
             r_args, ragged_jnp(r_in, scale)),
        ]
        for name, kernel, params, ins, jx in work:
            t_pk, t_jx = [], []
            for _ in range(a.rounds):
                t_pk.append(pkc_bench(a.pkc, kernel, params, ins, a.iters, a.threads))
                if jx:
                    t_jx.append(median_time(jx, a.iters))
            med = statistics.median(t_pk)
            line = f"{name}: pkc median {med * 1e3:.2f} ms (min {min(t_pk) * 1e3:.2f})"
            if jx:
                ratio = statistics.median(t_jx) / med
                ok = "ok" if ratio >= 1.0 else "below"
                line += (f", jax.numpy {statistics.median(t_jx) * 1e3:.2f} ms "
                         f"(min {min(t_jx) * 1e3:.2f}; ratio {ratio:.2f}, target 1.0x {ok})")
            else:
                line += " (jax.numpy not installed: no comparison)"
            print(line)

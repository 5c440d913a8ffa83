#!/usr/bin/env python3
"""A jitted training step of a small transformer on the CPU: pk.ops against
the same model in jax.numpy.

The model is a pre-norm decoder: token embedding, L layers of RMSNorm,
q/k/v projections, rope on q and k, causal flash attention, the output
projection, RMSNorm and a SwiGLU MLP (gate and up projections fused in
`gated_mlp`, then the down projection), a final RMSNorm, tied output
logits and softmax cross-entropy. The pk step runs `pk.ops.rms_norm`,
`rope`, `flash_attention`, `gated_mlp` and `xent` (forward and backward
kernels on pk's CPU reference); the jax.numpy step computes the same
formulas with jnp. Projections are `@` in both. One step is
`jax.value_and_grad` of the mean loss and an SGD update, jitted.

Both steps are checked to give the same loss and gradients first, then
timed in alternating rounds (medians; the minimum in brackets) and the
ratio pk time / jax.numpy time is printed (goal: at most 1.25).

Time it with pk's Python package built in release mode (`pip install
./python`; `.ci/python` builds the dev profile, which is several times
slower): the script prints which build it found.

Usage: python3 bench/train_step.py [--rounds N] [--iters N] [--seq S]
       [--layers L] [--dim DM] [--heads H] [--vocab V]
"""

import argparse
import statistics

import numpy as np

from compare import time_stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=4096)
    a = ap.parse_args()

    import jax
    import jax.numpy as jnp

    import pk
    import pk.ops as ops

    jax.config.update("jax_platforms", "cpu")
    s_len, dm, nh, v, n_layers = a.seq, a.dim, a.heads, a.vocab, a.layers
    hd = dm // nh
    ff = 2 * dm
    b = 1
    rng = np.random.default_rng(0)

    def w(*shape):
        return jnp.asarray(rng.standard_normal(shape).astype(np.float32) / np.sqrt(shape[0]))

    params = {
        "emb": w(v, dm),
        "final_norm": jnp.ones((dm,), jnp.float32),
        "layers": [
            {
                "norm1": jnp.ones((dm,), jnp.float32),
                "wq": w(dm, dm),
                "wk": w(dm, dm),
                "wv": w(dm, dm),
                "wo": w(dm, dm),
                "norm2": jnp.ones((dm,), jnp.float32),
                "w_gate": w(dm, ff),
                "w_up": w(dm, ff),
                "w_down": w(ff, dm),
            }
            for _ in range(n_layers)
        ],
    }
    tokens = jnp.asarray(rng.integers(0, v, (b, s_len)).astype(np.int32))
    labels = jnp.asarray(rng.integers(0, v, (b * s_len,)).astype(np.int32))
    inv = 1.0 / (10000.0 ** (np.arange(0, hd, 2) / hd))
    ang = np.arange(s_len)[:, None] * inv[None, :]
    ang = np.concatenate([ang, ang], axis=1)
    cos = jnp.asarray(np.cos(ang).astype(np.float32))
    sin = jnp.asarray(np.sin(ang).astype(np.float32))
    scale = 1.0 / np.sqrt(hd)

    # ---- the two implementations of each layer --------------------------
    def rms_jnp(x, g):
        return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * g

    def rope_jnp(x):
        half = x.shape[-1] // 2
        rot = jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)
        return x * cos + rot * sin

    def attn_jnp(q, k, vv):
        sc = jnp.einsum("bhqd,bhkd->bhqk", q, k) * scale
        mask = jnp.tril(jnp.ones((s_len, s_len), dtype=bool))
        sc = jnp.where(mask, sc, -jnp.inf)
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(sc, axis=-1), vv)

    def mlp_jnp(x, wg, wu):
        return jax.nn.silu(x @ wg) * (x @ wu)

    def xent_jnp(logits, lab):
        lse = jax.nn.logsumexp(logits, axis=-1)
        return lse - jnp.take_along_axis(logits, lab[:, None], axis=-1)[:, 0]

    impls = {
        "jax.numpy": (rms_jnp, rope_jnp, attn_jnp, mlp_jnp, xent_jnp),
        "pk.ops": (
            ops.rms_norm,
            lambda x: ops.rope(x, cos, sin),
            lambda q, k, vv: ops.flash_attention(q, k, vv, causal=True),
            ops.gated_mlp,
            ops.xent,
        ),
    }

    def make_step(impl):
        rms, rope, attn, mlp, xent = impl

        def heads(x):
            return x.reshape(b, s_len, nh, hd).transpose(0, 2, 1, 3)

        def loss(p):
            h = p["emb"][tokens].reshape(b * s_len, dm)
            for lp in p["layers"]:
                x = rms(h, lp["norm1"])
                q, k, vv = (heads(x @ lp[n]) for n in ("wq", "wk", "wv"))
                o = attn(rope(q), rope(k), vv)
                h = h + o.transpose(0, 2, 1, 3).reshape(b * s_len, dm) @ lp["wo"]
                x = rms(h, lp["norm2"])
                h = h + mlp(x, lp["w_gate"], lp["w_up"]) @ lp["w_down"]
            logits = rms(h, p["final_norm"]) @ p["emb"].T
            return jnp.mean(xent(logits, labels))

        @jax.jit
        def step(p):
            value, g = jax.value_and_grad(loss)(p)
            return value, jax.tree_util.tree_map(lambda x, d: x - 0.01 * d, p, g)

        return step

    steps = {name: make_step(impl) for name, impl in impls.items()}
    # Same loss and updated parameters, before anything is timed.
    (l_jnp, p_jnp), (l_pk, p_pk) = (steps[n](params) for n in ("jax.numpy", "pk.ops"))
    np.testing.assert_allclose(float(l_pk), float(l_jnp), rtol=1e-4)
    for x, y in zip(jax.tree_util.tree_leaves(p_pk), jax.tree_util.tree_leaves(p_jnp)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-3, atol=1e-4)

    t = {n: ([], []) for n in steps}
    for _ in range(a.rounds):
        for name, step in steps.items():
            med, low = time_stats(lambda s=step: jax.block_until_ready(s(params)), a.iters)
            t[name][0].append(med)
            t[name][1].append(low)
    med = {n: statistics.median(x[0]) for n, x in t.items()}
    print(f"pk {pk.__file__} (loss {float(l_pk):.4f}, jax.numpy {float(l_jnp):.4f})")
    print(f"training step, {n_layers} layers, S {s_len}, dim {dm}, heads {nh}, vocab {v}, f32:")
    for n in steps:
        print(f"  {n:10} median {med[n] * 1e3:8.2f} ms (min {min(t[n][1]) * 1e3:.2f})")
    ratio = med["pk.ops"] / med["jax.numpy"]
    ok = "ok" if ratio <= 1.25 else "above"
    print(f"  pk.ops / jax.numpy: {ratio:.2f} (goal at most 1.25: {ok}; "
          f"medians of {a.rounds} alternating rounds of {a.iters} steps)")


if __name__ == "__main__":
    main()

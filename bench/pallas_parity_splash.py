#!/usr/bin/env python3
"""Generated TPU code bytes of kernels/splash.pk against JAX's Pallas
splash attention, both compiled by the same libtpu (`pkc aot` for the
exported JAX program, `pkc build --aot` for pk), per TPU generation.

Configuration: causal mask, 8 heads (one mask shared), S = SK = 2048,
D = 128, bf16, blocks of 512 queries and 512 keys. Pallas's forward is
exported with `save_residuals=True`, so that, like pk's, it returns the
logsumexp; its backward is the `jax.grad` program, which holds the forward,
dq and dkv kernels in one executable, against the sum of pk's three
executables (each carries a fixed program overhead of about 50-65 KB, the
size of kernels/add.pk's executable).

Not a CI test: needs jax (the CPU wheels are enough to export for TPU).
Usage: python3 bench/pallas_parity_splash.py [--pkc PATH]
"""

import argparse
import os
import re
import subprocess
import tempfile

import jax
import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_kernel as sk
from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_mask as sm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ["v4", "v5e", "v5p", "v6e", "tpu7x"]
H, S, D, BLOCK = 8, 2048, 128, 512


def pallas_programs():
    mask = sm.MultiHeadMask([sm.CausalMask((S, S)) for _ in range(H)])
    bs = sk.BlockSizes(block_q=BLOCK, block_kv=BLOCK, block_kv_compute=BLOCK,
                       block_q_dkv=BLOCK, block_kv_dkv=BLOCK, block_kv_dkv_compute=BLOCK,
                       block_q_dq=BLOCK, block_kv_dq=BLOCK, use_fused_bwd_kernel=False)
    fwd = sk.make_splash_mha(mask, head_shards=1, q_seq_shards=1, block_sizes=bs,
                             save_residuals=True)
    plain = sk.make_splash_mha(mask, head_shards=1, q_seq_shards=1, block_sizes=bs)
    x = jax.ShapeDtypeStruct((H, S, D), jnp.bfloat16)
    grad = jax.grad(lambda q, k, v: plain(q, k, v).astype(jnp.float32).sum(), argnums=(0, 1, 2))
    export = lambda f: jax.export.export(jax.jit(f), platforms=["tpu"])(x, x, x).mlir_module()
    return {"forward": export(fwd), "forward+backward": export(grad)}


def code_bytes(text):
    """{target: bytes} from `pkc aot` / `pkc build --aot` lines."""
    return {m.group(2): int(m.group(3)) for m in
            re.finditer(r"^(\S+\s+)?(v4|v5e|v5p|v6e|tpu7x)\s+(\d+) bytes of TPU code", text, re.M)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pkc", default=os.path.join(ROOT, "target", "release", "pkc"))
    a = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPU_")}
    env["TPU_SKIP_MDS_QUERY"] = "1"
    pallas = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in pallas_programs().items():
            path = os.path.join(tmp, "p.mlir")
            with open(path, "w") as f:
                f.write(text)
            out = subprocess.run([a.pkc, "aot", path], env=env, check=True, capture_output=True,
                                 text=True)
            pallas[name] = code_bytes(out.stdout + out.stderr)
        pk = {}
        for entry in ["splash_attention", "splash_attention_bwd_dq", "splash_attention_bwd_dkv"]:
            out = subprocess.run(
                [a.pkc, "build", os.path.join(ROOT, "kernels/splash.pk"), "-k", entry,
                 "-p", f"H={H}", "-p", f"KH={H}", "-p", f"S={S}", "-p", f"SK={S}",
                 "-p", f"D={D}", "-p", f"bq={BLOCK}", "-p", f"bk={BLOCK}", "-p", "T=bf16",
                 "--target", "all", "--aot", "-o", tmp],
                env=env, check=True, capture_output=True, text=True)
            pk[entry] = code_bytes(out.stdout + out.stderr)
    rows = [
        ("forward", {t: pk["splash_attention"][t] for t in TARGETS}, pallas["forward"]),
        ("forward+backward", {t: sum(v[t] for v in pk.values()) for t in TARGETS},
         pallas["forward+backward"]),
    ]
    print("| splash attention | " + " | ".join(TARGETS) + " |")
    print("|---|" + "---:|" * len(TARGETS))
    for name, p, q in rows:
        cells = [f"{p[t]:,} / {q[t]:,} ({p[t] / q[t]:.2f})" for t in TARGETS]
        print(f"| {name}: pk / Pallas bytes | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

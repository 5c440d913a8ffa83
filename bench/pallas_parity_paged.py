#!/usr/bin/env python3
"""Generated TPU code bytes of pk's paged kernels against JAX's Pallas
kernels of the same configuration, both compiled by the same libtpu.

The Pallas kernels (`paged_attention`, `ragged_paged_attention`) are
exported for TPU with `jax.export` on this CPU-only machine, one module per
generation (Pallas's lowering asks which TPU it lowers for; the answer is
supplied per target instead of from a device), and compiled with
`pkc aot`; pk's kernels with `pkc build --aot` at the same parameters. The
kernels are configured as pk's defaults: decode B8 H32 KH8 D128 with 16-token
pages, 8 pages per block; ragged TQ512 with 16 sequences, 32 queries per
block. Pallas's ragged kernel keeps keys and values in one interleaved
cache (`[P, page_size, 2 * KH, D]`); pk's keeps two `[KH, P, page_size, D]`
arrays. Run where jax is installed; not a CI test.

Usage: python3 bench/pallas_parity_paged.py [--pkc PATH]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = {"v4": "TPU_V4", "v5e": "TPU_V5E", "v5p": "TPU_V5P", "v6e": "TPU_V6E", "tpu7x": "TPU_7X"}
PAGED = dict(B=8, H=32, KH=8, D=128, P=2048, page_size=16, pages_per_seq=128, ppb=8)
RAGGED = dict(TQ=512, S=16, H=32, KH=8, D=128, P=2048, page_size=16, pages_per_seq=128,
              bq=32, ppb=8)


def pallas_modules(target):
    """StableHLO text of both Pallas kernels, lowered for `target`."""
    import jax
    import jax.numpy as jnp
    from jax import export
    from jax._src.pallas.mosaic import tpu_info
    from jax.experimental.pallas.ops.tpu.paged_attention import paged_attention
    from jax.experimental.pallas.ops.tpu.ragged_paged_attention import ragged_paged_attention

    chip = getattr(tpu_info.ChipVersion, TARGETS[target])
    cores = 2 if target in ("v4", "v5p") else 1
    tpu_info.get_tpu_info = lambda: tpu_info._get_tpu_info_impl(chip, cores)
    sd = jax.ShapeDtypeStruct
    c = PAGED
    paged = jax.jit(lambda q, k, v, lens, pages: paged_attention(
        q, k, v, lens, pages, pages_per_compute_block=c["ppb"]))
    kv = sd((c["KH"], c["P"], c["page_size"], c["D"]), jnp.bfloat16)
    m1 = export.export(paged, platforms=["tpu"])(
        sd((c["B"], c["H"], c["D"]), jnp.bfloat16), kv, kv, sd((c["B"],), jnp.int32),
        sd((c["B"], c["pages_per_seq"]), jnp.int32)).mlir_module()
    r = RAGGED
    ragged = jax.jit(lambda *a: ragged_paged_attention(
        *a, sm_scale=1.0 / r["D"] ** 0.5, num_kv_pages_per_block=r["ppb"],
        num_queries_per_block=r["bq"]))
    m2 = export.export(ragged, platforms=["tpu"])(
        sd((r["TQ"], r["H"], r["D"]), jnp.bfloat16),
        sd((r["P"], r["page_size"], 2 * r["KH"], r["D"]), jnp.bfloat16),
        sd((r["S"],), jnp.int32), sd((r["S"], r["pages_per_seq"]), jnp.int32),
        sd((r["S"] + 1,), jnp.int32), sd((1,), jnp.int32)).mlir_module()
    return {"paged_attention": m1, "ragged_paged_attention": m2}


def code_bytes(text):
    m = re.search(r"(\d+) bytes of TPU code", text)
    return int(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pkc", default=os.path.join(ROOT, "target", "release", "pkc"))
    a = ap.parse_args()
    env = dict(os.environ, TPU_SKIP_MDS_QUERY="1")
    sizes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kernel, params in (("paged_attention", PAGED), ("ragged_paged_attention", RAGGED)):
            cmd = [a.pkc, "build", os.path.join(ROOT, "kernels", kernel + ".pk"), "--target", "all",
                   "--aot", "-o", tmp] + [x for n, v in params.items() for x in ("-p", f"{n}={v}")]
            out = subprocess.run(cmd, capture_output=True, text=True, env=env)
            for line in (out.stdout + out.stderr).splitlines():
                for t in TARGETS:
                    if re.search(rf"\s{t}\s+\d+ bytes of TPU code", line):
                        sizes[(kernel, t, "pk")] = code_bytes(line)
        for t in TARGETS:
            for kernel, text in pallas_modules(t).items():
                path = os.path.join(tmp, f"{kernel}-{t}.mlir")
                with open(path, "w") as f:
                    f.write(text)
                out = subprocess.run([a.pkc, "aot", path, "--target", t], capture_output=True,
                                     text=True, env=env)
                sizes[(kernel, t, "pallas")] = code_bytes(out.stdout + out.stderr)
    print("Generated TPU code bytes, pk / Pallas (same libtpu, same configuration).\n")
    print("| kernel | " + " | ".join(TARGETS) + " |")
    print("|---|" + "---:|" * len(TARGETS))
    for kernel in ("paged_attention", "ragged_paged_attention"):
        cells = []
        for t in TARGETS:
            pk, pl = sizes.get((kernel, t, "pk")), sizes.get((kernel, t, "pallas"))
            if pk and pl:
                cells.append(f"{pk:,} / {pl:,} ({pk / pl:.2f})")
            else:
                cells.append(f"{pk or '-'} / {pl or '-'}")
        print(f"| {kernel} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())

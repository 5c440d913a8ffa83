#!/usr/bin/env bash
# Times `pkc tune` end to end with the performance model on each TPU
# generation, libtpu compiling every configuration the checker keeps:
# - matmul 4096^3 bf16 over bm, bn, bk in pow2(128, 1024) (64
#   configurations per generation);
# - flash attention forward, causal, B1 H8 S2048 D128 bf16 (the kernel's
#   defaults) over bq, bk in pow2(128, 2048) (25 per generation).
# Prints one line per kernel and generation: wall time, configurations kept
# and compiled, and the best configuration.
#
# Usage: bash bench/tune.sh [PKC] [JOBS]   (default: target/debug/pkc, all cores)
# The tuning cache goes to a temporary directory, so runs do not read or
# fill ~/.cache/pk/tune.
set -euo pipefail
pkc=${1:-target/debug/pkc}
jobs=${2:-$(nproc)}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
matmul=(kernels/matmul.pk -p M=4096 -p N=4096 -p K=4096)
flash=(kernels/flash.pk -k flash_attention)
for kernel in matmul flash; do
    declare -n args=$kernel
    for t in v4 v5e v5p v6e tpu7x; do
        start=$(date +%s.%N)
        line=$(PK_TUNE_CACHE=$cache "$pkc" tune "${args[@]}" --target "$t" --jobs "$jobs" --json)
        end=$(date +%s.%N)
        python3 - "$kernel" "$t" "$start" "$end" "$line" <<'PY'
import json, sys
kernel, t, start, end, line = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
r = json.loads(line)
kept = r["tried"] - sum(r["pruned"].values())
best = r["best"][0]
params = " ".join(f"{k}={v}" for k, v in sorted(best["params"].items()))
print(f"{kernel:7} {t:6} {end - start:6.1f} s  {r['tried']} tried, {kept} kept, "
      f"{kept - len(r['refused'])} compiled, best {params} "
      f"({best['seconds'] * 1e6:.0f} us predicted, {best['roofline_fraction']:.0%} of roofline)")
PY
    done
done

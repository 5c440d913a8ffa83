#!/usr/bin/env python3
"""Compares the ranking of `pkc tune`'s performance model with published TPU
measurements (bench/published/*.json, every number with its source).

For each published case (a kernel, a shape, a TPU generation, and the
measured time of several block-size configurations) the script asks
`pkc tune --eval model --no-aot --json` (the roofline model; with
`--eval schedule`, `pkc tune --eval schedule --json`, which compiles the
configurations the roofline model cannot rule out (`--screen`) with libtpu
and reads their schedules; one it screened out ranks after every compiled
one, as in `pkc tune`'s ranking) for the model's
prediction of every configuration of the space, takes the model's best among the configurations
that were measured, and counts a hit when that configuration is the measured
best or within 10% of its time. It prints, per source, how many cases hit,
and per case the predicted and measured times.

This is a check of the model, not a test: nothing in pk reads the published
tables (docs/tuning.md, "Validation of the model").

    python3 bench/validate_model.py [--pkc PATH] [--eval model|schedule] [--data FILE.json ...]

`--pkc` defaults to $PKC, else target/release/pkc or target/debug/pkc.
Standard library only.

With `--rpa` it scores ragged paged attention instead, on the block sizes
Google tuned on TPUs and published in JAX: the table `TUNED_BLOCK_SIZES` of
`jax/experimental/pallas/ops/tpu/ragged_paged_attention/tuned_block_sizes.py`
of the installed jax (found by importing jax here, else through
~/.cache/pk/pyenv/bin/python, or given with `--jax-table FILE`; read at run
time and never copied into pk), keyed by (q dtype, kv dtype, query heads
and key/value heads per block, head dim, page size, max batched tokens,
max model length) and valued (pages per block, queries per block). Per TPU
generation (`TPU v6` is v6e; `TPU v5` is the name of v5e's devices, and
is scored as v5e), `--keys` keys evenly spread over the sorted table, each
a shape of `bench/ragged_paged_attention_jax.pk` (JAX's algorithm step for
step) and of the library's `kernels/ragged_paged_attention.pk` beside it,
with `bq` fixed to the published value (under `--eval schedule` with
`--screen none`: the ratios need the model's time of the published pick,
so every candidate is compiled) and `ppb` ranked by the model over
the kernel's candidates up to the pages per sequence (the bench kernel's
powers of two and the pages per sequence itself, which is what JAX runs
for a table value past it; the library's powers of two up to 16), on one
batch (counting mode, `--in`):

- decode-heavy: the batch the table was tuned on (the autotuning script
  of vLLM's TPU backend, vllm-project/tpu-inference, `get_qkv_lens_example`:
  34 sequences decoding one token and one taking the rest of
  min(max batched tokens, max_model_len) query tokens, every kv length
  max_model_len, table rows for 128 sequences and 1000 pages);
- prefill-heavy: every query row a prompt token and every kv length
  max_model_len, as in the tuning's batch: max batched tokens /
  max_model_len whole prompts, or, when max_model_len is the larger, one
  chunk of max batched tokens that ends a prompt of max_model_len.

Per key it prints the model's pick, the published one, the published
one's rank and the ratio (model time of the published pick / model time of
the model's pick), and per generation, batch and kernel: exact top-1, the
published pick in the top 3, the median and worst ratio; each over the
kernel's candidates (`all`) and over the candidates the autotuning tried
(`tuned`: 4, 8, 16, .. up to the pages per sequence). Equal predicted times
rank the smaller `ppb` first.

    python3 bench/validate_model.py --rpa [--eval model|schedule] [--gen v6e,v5e]
        [--batch decode,prefill] [--kernel jax,library] [--keys 20]
"""

import argparse
import ast
import glob
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOLERANCE = 0.10

# The pk kernel each published kernel is modelled with, and how its
# parameters are named there.
KERNELS = {
    "matmul": "kernels/matmul.pk",
}


def find_pkc(given):
    for p in [given, os.environ.get("PKC"),
              os.path.join(ROOT, "target/release/pkc"),
              os.path.join(ROOT, "target/debug/pkc")]:
        if p and os.path.exists(p):
            return p
    sys.exit("error: no pkc found; build it (cargo build) or pass --pkc PATH")


_MEMO = {}
EVAL = "model"


def predictions(pkc, cache, kernel, shape, target):
    """The model's predicted seconds of every ranked configuration, keyed by
    its parameters as a sorted tuple of (name, int), and its best."""
    memo = (kernel, tuple(sorted(shape.items())), target)
    if memo not in _MEMO:
        _MEMO[memo] = _predictions(pkc, cache, kernel, shape, target)
    return _MEMO[memo]


def _predictions(pkc, cache, kernel, shape, target):
    args = [pkc, "tune", os.path.join(ROOT, kernel), "--json",
            "--eval", EVAL, "-t", target, "--tuned-cache", cache]
    if EVAL == "model":
        args.append("--no-aot")
    for name, value in sorted(shape.items()):
        args += ["-p", f"{name}={value}"]
    env = dict(os.environ, TPU_SKIP_MDS_QUERY="1")
    out = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(args)} failed:\n{out.stderr}")
    report = json.loads(out.stdout.splitlines()[0])
    pred = {}
    for p in report["points"]:
        key = tuple(sorted((n, int(v)) for n, v in p["params"].items()))
        if p["status"] == "ranked":
            pred[key] = p["seconds"]
        elif p["status"] == "screened":
            # Not compiled under `--screen`: ranked after every compiled
            # configuration, as `pkc tune` ranks it.
            pred[key] = float("inf")
    best = report["best"][0]
    return pred, {n: int(v) for n, v in best["params"].items()}


def config_key(measured):
    return tuple(sorted((n, int(v)) for n, v in measured.items()
                        if n != "seconds"))


def show(key):
    return " ".join(f"{n}={v}" for n, v in key)


def validate(pkc, path):
    data = json.load(open(path))
    total_hits = total_cases = 0
    with tempfile.TemporaryDirectory(prefix="pk-validate-") as cache:
        for src in data["sources"]:
            kernel = KERNELS[src.get("pk_kernel", "matmul")]
            hits = exact = 0
            print(f"== {src['title']}")
            print(f"   {src['url']} ({src['chip']})")
            for case in src["cases"]:
                shape = {"M": case["m"], "N": case["n"], "K": case["k"]}
                pred, model_best = predictions(pkc, cache, kernel, shape,
                                               src["target"])
                rows = []
                for m in case["measured"]:
                    key = config_key(m)
                    if key not in pred:
                        sys.exit(f"error: the model did not rank {show(key)} "
                                 f"for {shape} on {src['target']}")
                    rows.append((key, pred[key], m["seconds"]))
                pick = min(rows, key=lambda r: r[1])
                best = min(rows, key=lambda r: r[2])
                hit = pick[2] <= best[2] * (1 + TOLERANCE)
                hits += hit
                exact += pick[0] == best[0]
                print(f"-- {case['experiment']}, {case['m']}x{case['k']}x{case['n']}: "
                      f"model picks {show(pick[0])}, measured best {show(best[0])}: "
                      f"{'hit' if hit else 'MISS'}")
                for key, p, s in rows:
                    if p == float("inf"):
                        print(f"     {show(key):<24} not compiled (--screen)  "
                              f"measured {s * 1e3:9.4f} ms")
                        continue
                    print(f"     {show(key):<24} predicted {p * 1e3:9.4f} ms  "
                          f"measured {s * 1e3:9.4f} ms  measured/predicted {s / p:6.2f}")
                print(f"     (the model's best over its whole space: "
                      f"{' '.join(f'{n}={v}' for n, v in sorted(model_best.items()))},"
                      f" {pred[tuple(sorted(model_best.items()))] * 1e3:.4f} ms; not measured)")
            n = len(src["cases"])
            print(f"== {src['id']}: the model's choice is the measured best or "
                  f"within {TOLERANCE:.0%} of it in {hits} of {n} cases "
                  f"(the measured best itself in {exact})\n")
            total_hits += hits
            total_cases += n
    return total_hits, total_cases


# ---- ragged paged attention against JAX's tuned table ----------------------

RPA_KERNELS = {
    "jax": "bench/ragged_paged_attention_jax.pk",
    "library": "kernels/ragged_paged_attention.pk",
}
RPA_TABLE = "jax/experimental/pallas/ops/tpu/ragged_paged_attention/tuned_block_sizes.py"
# The device names of the table (jax.devices()[0].device_kind, first two
# words) and pk's target of each. v5e's devices are "TPU v5 lite".
RPA_DEVICES = {"v6e": "TPU v6", "v5e": "TPU v5"}
# The pages per block the autotuning tried (its `block_kv_pages`, those up
# to the pages per sequence).
AUTOTUNE_PPB = (4, 8, 16, 32, 64, 128, 256)


def find_jax_table(given):
    """The path of the installed jax's tuned_block_sizes.py and jax's version."""
    if given:
        path = given
    else:
        path = None
        code = ("import os, jax; print(os.path.dirname(jax.__file__)); "
                "print(jax.__version__)")
        for py in [sys.executable,
                   os.path.expanduser("~/.cache/pk/pyenv/bin/python")]:
            if not os.path.exists(py):
                continue
            out = subprocess.run([py, "-c", code], capture_output=True, text=True)
            if out.returncode == 0:
                root, version = out.stdout.split()
                path = os.path.join(os.path.dirname(root), RPA_TABLE)
                return path, version
        if path is None:
            sys.exit("error: no jax found (pip install jax, or --jax-table FILE)")
    version = "unknown"
    vfile = os.path.join(os.path.dirname(path), "../" * 5, "version.py")
    if os.path.exists(vfile):
        m = re.search(r'_version: str = "([^"]+)"|_version = "([^"]+)"', open(vfile).read())
        if m:
            version = m.group(1) or m.group(2)
    return path, version


def read_jax_table(path):
    """TUNED_BLOCK_SIZES of jax's file, read as a literal (the file itself is
    not imported, so no TPU or jax is needed here)."""
    tree = ast.parse(open(path).read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "TUNED_BLOCK_SIZES" for t in node.targets):
            return ast.literal_eval(node.value)
    sys.exit(f"error: no TUNED_BLOCK_SIZES in {path}")


def write_npy(path, values, shape):
    """A little-endian int32 .npy file (standard library only)."""
    header = "{'descr': '<i4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join(f"{d}, " for d in shape) if len(shape) == 1 else ", ".join(map(str, shape)))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{len(values)}i", *values))


# The batch of the autotuning that produced the table (its
# `get_qkv_lens_example`, "a typical distribution of kv_lens and
# cu_q_lens"): 35 sequences, the first 34 decoding one token, the last the
# rest of min(max batched tokens, max_model_len) query tokens, every kv
# length max_model_len; table rows for 128 sequences, 1000 pages.
DECODE_SEQS = 35
MAX_SEQS = 128
TOTAL_PAGES = 1000


def rpa_batch(kind, tq, max_len):
    """(q_lens, kv_lens) of one batch of `kind` for a key."""
    if kind == "decode":
        n = DECODE_SEQS
        q_lens = [1] * (n - 1) + [min(tq, max_len) - (n - 1)]
        return q_lens, [max_len] * n
    # Prefill-heavy: every query row a prompt token, every kv length
    # max_model_len as in the tuning's batch: whole prompts of
    # max_model_len tokens, or one chunk of max batched tokens ending a
    # longer prompt.
    if max_len <= tq:
        n = tq // max_len
        return [max_len] * n, [max_len] * n
    return [tq], [max_len]


def rpa_inputs(folder, q_lens, kv_lens, pages_per_seq):
    n = len(q_lens)
    s = max(n, MAX_SEQS)
    cu = [0]
    for ql in q_lens:
        cu.append(cu[-1] + ql)
    cu += [cu[-1]] * (s - n)
    arrays = {
        "cu_q_lens": (cu, [s + 1]),
        "kv_lens": (kv_lens + [0] * (s - n), [s]),
        "num_seqs": ([n], [1]),
        # Distinct pages per sequence as far as the cache holds them.
        "page_indices": ([i % TOTAL_PAGES for i in range(s * pages_per_seq)],
                         [s, pages_per_seq]),
    }
    paths = {}
    for name, (values, shape) in arrays.items():
        paths[name] = os.path.join(folder, name + ".npy")
        write_npy(paths[name], values, shape)
    return paths, s


def rpa_predict(pkc, cache, kernel, params, inputs, target):
    """{ppb: predicted seconds} over the kernel's ranked candidates."""
    args = [pkc, "tune", os.path.join(ROOT, kernel), "--json", "--eval", EVAL,
            "-t", target, "--tuned-cache", cache, "--force"]
    if EVAL == "model":
        args.append("--no-aot")
    else:
        # The ratios need the schedule model's time of the published pick
        # too: every candidate is compiled.
        args += ["--screen", "none"]
    for name, value in sorted(params.items()):
        args += ["-p", f"{name}={value}"]
    for name, path in sorted(inputs.items()):
        args += ["--in", f"{name}={path}"]
    env = dict(os.environ, TPU_SKIP_MDS_QUERY="1")
    out = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"
    report = json.loads(out.stdout.splitlines()[0])
    pred = {}
    for p in report["points"]:
        if p["status"] == "ranked":
            pred[int(p["params"]["ppb"])] = p["seconds"]
    return pred, None


def median(xs):
    xs = sorted(xs)
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def validate_rpa(pkc, a):
    path, version = find_jax_table(a.jax_table)
    table = read_jax_table(path)
    print(f"table: {path} (jax {version})\n")
    summary = []
    with tempfile.TemporaryDirectory(prefix="pk-validate-rpa-") as tmp:
        # A kept cache answers recurring compiles from libtpu's kept
        # schedules (`schedules/` of the tuning cache).
        cache = a.cache or os.path.join(tmp, "cache")
        for gen in a.gen.split(","):
            device = RPA_DEVICES[gen]
            keys = sorted(table[device])
            step = (len(keys) - 1) / max(a.keys - 1, 1)
            chosen = [keys[round(i * step)] for i in range(min(a.keys, len(keys)))]
            for batch in a.batch.split(","):
                for kname in a.kernel.split(","):
                    kernel = RPA_KERNELS[kname]
                    print(f"== {gen}, {batch}-heavy batch, {kernel}")
                    stats = {sp: {"scored": 0, "top1": 0, "top3": 0, "ratios": []}
                             for sp in ("all", "tuned")}
                    failed = 0
                    for key in chosen:
                        _, _, qh, kvh, d, ps, tq, max_len = key
                        ppb_raw, bq_pub = table[device][key]
                        pps = max_len // ps
                        bq = min(tq, bq_pub)
                        if kname == "jax":
                            # JAX runs min(pages per sequence, table value),
                            # a candidate of the bench kernel.
                            ppb_pub, top = min(pps, ppb_raw), pps
                        else:
                            # The library's candidates are powers of two: a
                            # block of more pages than a sequence has is one
                            # block of the whole sequence either way.
                            top = 1 << (pps - 1).bit_length()
                            ppb_pub = min(top, ppb_raw)
                        q_lens, kv_lens = rpa_batch(batch, tq, max_len)
                        folder = os.path.join(tmp, f"{gen}-{batch}-{'-'.join(map(str, key[2:]))}")
                        os.makedirs(folder, exist_ok=True)
                        inputs, n = rpa_inputs(folder, q_lens, kv_lens, pps)
                        params = {"TQ": tq, "S": n, "H": qh, "KH": kvh, "D": d,
                                  "P": TOTAL_PAGES, "page_size": ps, "pages_per_seq": pps,
                                  "bq": bq, "sm_scale": repr(d ** -0.5)}
                        pred, err = rpa_predict(pkc, cache, kernel, params, inputs, gen)
                        label = f"H{qh}/KH{kvh} ps{ps} tq{tq} len{max_len} bq{bq}"
                        if pred is None or ppb_pub not in pred:
                            failed += 1
                            print(f"-- {label}: not ranked ({err or 'published ppb pruned'})")
                            continue
                        pred = {p: t for p, t in pred.items() if p <= top}
                        # Over the kernel's candidates, and over those the
                        # autotuning tried (4, 8, 16, .. up to the pages per
                        # sequence; the table's values are among them).
                        tuned = {p: t for p, t in pred.items() if p in AUTOTUNE_PPB and p <= pps}
                        times = " ".join(f"{p}:{pred[p] * 1e6:.1f}" for p in sorted(pred))
                        row = []
                        for space, cand in (("all", pred), ("tuned", tuned)):
                            # Equal times rank the smaller ppb first, as
                            # pkc's ranking keeps the declared order.
                            order = sorted(cand, key=lambda p: (cand[p], p))
                            pick = order[0]
                            rank = order.index(ppb_pub) + 1
                            ratio = cand[ppb_pub] / cand[pick]
                            st = stats[space]
                            st["scored"] += 1
                            st["top1"] += rank == 1
                            st["top3"] += rank <= 3
                            st["ratios"].append(ratio)
                            row.append(f"{space}: pick {pick}, rank {rank}, ratio {ratio:.3f}")
                        print(f"-- {label}: published ppb={ppb_pub}; " + "; ".join(row)
                              + f"   us: {times}")
                    for space in ("all", "tuned"):
                        st = stats[space]
                        head = f"{gen} {batch:7} {kname:7} {space:5}"
                        if st["ratios"]:
                            line = (f"{head}: top-1 {st['top1']}/{st['scored']}, "
                                    f"top-3 {st['top3']}/{st['scored']}, "
                                    f"median {median(st['ratios']):.3f}, "
                                    f"worst {max(st['ratios']):.3f}"
                                    + (f", {failed} not ranked" if failed else ""))
                        else:
                            line = f"{head}: nothing ranked ({failed} failed)"
                        print(f"== {line}")
                        summary.append(line)
                    print()
    print(f"evaluator {EVAL}, jax {version}, {a.keys} keys per generation:")
    for line in summary:
        print("  " + line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pkc")
    ap.add_argument("--eval", choices=["model", "schedule"], default="model")
    ap.add_argument("--data", nargs="*",
                    default=sorted(glob.glob(os.path.join(ROOT, "bench/published/*.json"))))
    ap.add_argument("--rpa", action="store_true",
                    help="score ragged paged attention on JAX's tuned table")
    ap.add_argument("--jax-table", help="JAX's tuned_block_sizes.py (default: the installed jax's)")
    ap.add_argument("--gen", default="v6e,v5e")
    ap.add_argument("--batch", default="decode,prefill")
    ap.add_argument("--kernel", default="jax,library")
    ap.add_argument("--keys", type=int, default=20)
    ap.add_argument("--cache", help="the tuning cache to use (default: a temporary one)")
    a = ap.parse_args()
    pkc = find_pkc(a.pkc)
    global EVAL
    EVAL = a.eval
    print(f"evaluator: {EVAL}\n")
    if a.rpa:
        validate_rpa(pkc, a)
        return
    if not a.data:
        sys.exit("error: no published data under bench/published/")
    for path in a.data:
        hits, cases = validate(pkc, path)
        print(f"{os.path.relpath(path, ROOT)}: {hits} of {cases} cases hit")


if __name__ == "__main__":
    main()

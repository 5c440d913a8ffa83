#!/usr/bin/env python3
"""Compares the ranking of `pkc tune`'s performance model with published TPU
measurements (bench/published/*.json, every number with its source).

For each published case (a kernel, a shape, a TPU generation, and the
measured time of several block-size configurations) the script asks
`pkc tune --eval model --no-aot --json` (the roofline model; with
`--eval schedule`, `pkc tune --eval schedule --json`, which compiles every
configuration with libtpu and reads its schedule) for the model's
prediction of every configuration of the space, takes the model's best among the configurations
that were measured, and counts a hit when that configuration is the measured
best or within 10% of its time. It prints, per source, how many cases hit,
and per case the predicted and measured times.

This is a check of the model, not a test: nothing in pk reads the published
tables (docs/tuning.md, "Validation of the model").

    python3 bench/validate_model.py [--pkc PATH] [--eval model|schedule] [--data FILE.json ...]

`--pkc` defaults to $PKC, else target/release/pkc or target/debug/pkc.
Standard library only.
"""

import argparse
import glob
import json
import os
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
        if p["status"] == "ranked":
            key = tuple(sorted((n, int(v)) for n, v in p["params"].items()))
            pred[key] = p["seconds"]
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pkc")
    ap.add_argument("--eval", choices=["model", "schedule"], default="model")
    ap.add_argument("--data", nargs="*",
                    default=sorted(glob.glob(os.path.join(ROOT, "bench/published/*.json"))))
    a = ap.parse_args()
    pkc = find_pkc(a.pkc)
    global EVAL
    EVAL = a.eval
    print(f"evaluator: {EVAL}\n")
    if not a.data:
        sys.exit("error: no published data under bench/published/")
    for path in a.data:
        hits, cases = validate(pkc, path)
        print(f"{os.path.relpath(path, ROOT)}: {hits} of {cases} cases hit")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How far the roofline model's and the schedule model's rankings disagree on
the kernel library's tuning spaces: the evidence for `pkc tune --screen`'s
default margin (docs/tuning.md, "The screen").

`pkc tune --eval schedule` compiles only the configurations the roofline
model predicts within a margin of its own best (and the default). That is
safe when the schedule model's best (and the rest of its top 3) always lies
within the margin. For each library kernel's space (its defaults, or the
shapes given below) and each generation, this asks `pkc tune --eval model
--no-aot --json` for the roofline model's time of every configuration and
`pkc tune --eval schedule --screen none --json` for the schedule model's
(every configuration compiled), and prints:

- the roofline ratio of the schedule model's best (its roofline time over
  the roofline model's best time), and the largest of its top 3;
- how many configurations a margin keeps, for a few margins, and whether
  the schedule model's best is among them.

    python3 bench/screen_margin.py [--pkc PATH] [--gen v5e,v6e] [--cases NAME,..] [--jobs J]

Standard library only. The tuning cache goes to a temporary directory.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name: (file, kernel, fixed parameters)
CASES = {
    "matmul4096": ("kernels/matmul.pk", None, {"M": 4096, "N": 4096, "K": 4096}),
    "matmul": ("kernels/matmul.pk", None, {}),
    "flash": ("kernels/flash.pk", "flash_attention", {}),
    "flash_dq": ("kernels/flash.pk", "flash_attention_bwd_dq", {}),
    "flash_dkv": ("kernels/flash.pk", "flash_attention_bwd_dkv", {}),
    "splash": ("kernels/splash.pk", "splash_attention", {}),
    "splash_dq": ("kernels/splash.pk", "splash_attention_bwd_dq", {}),
    "splash_dkv": ("kernels/splash.pk", "splash_attention_bwd_dkv", {}),
    "paged": ("kernels/paged_attention.pk", None, {}),
    "rpa": ("kernels/ragged_paged_attention.pk", None, {}),
    "gmm": ("kernels/gmm.pk", "gmm", {}),
    "tgmm": ("kernels/gmm.pk", "tgmm", {}),
    "w8a8": ("kernels/qmatmul.pk", "qmatmul_w8a8", {}),
    "fp8": ("kernels/qmatmul.pk", "qmatmul_fp8", {}),
}
MARGINS = [1.1, 1.25, 1.5, 2.0]


def find_pkc(given):
    for p in [given, os.environ.get("PKC"),
              os.path.join(ROOT, "target/release/pkc"),
              os.path.join(ROOT, "target/debug/pkc")]:
        if p and os.path.exists(p):
            return p
    sys.exit("error: no pkc found; build it (cargo build) or pass --pkc PATH")


def tune(pkc, cache, case, target, evaluator, jobs):
    """{params tuple: seconds} of the ranked configurations, and the
    default's params tuple (or None)."""
    path, kernel, fixed = CASES[case]
    args = [pkc, "tune", os.path.join(ROOT, path), "--json", "--eval", evaluator,
            "-t", target, "--tuned-cache", cache, "--force"]
    if kernel:
        args += ["-k", kernel]
    if evaluator == "model":
        args.append("--no-aot")
    elif screen_flag(pkc):
        args += ["--screen", "none"]
    if jobs:
        args += ["-j", str(jobs)]
    for name, value in sorted(fixed.items()):
        args += ["-p", f"{name}={value}"]
    env = dict(os.environ, TPU_SKIP_MDS_QUERY="1")
    out = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)
    if out.returncode != 0:
        return None, None, out.stderr.strip().splitlines()[-1:]
    r = json.loads(out.stdout.splitlines()[0])
    times = {}
    for p in r["points"]:
        if p["status"] == "ranked":
            times[tuple(sorted(p["params"].items()))] = p["seconds"]
    default = None
    if all(a.get("default") is not None for a in r["axes"]):
        default = tuple(sorted((a["name"], a["default"]) for a in r["axes"]))
    return times, default, None


_FLAG = {}


def screen_flag(pkc):
    """Whether this pkc has `--screen` (an older one compiles every
    configuration anyway)."""
    if pkc not in _FLAG:
        out = subprocess.run([pkc, "tune", "--help"], capture_output=True, text=True)
        _FLAG[pkc] = "--screen" in out.stdout
    return _FLAG[pkc]


def show(key):
    return " ".join(f"{n}={v}" for n, v in key)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pkc")
    ap.add_argument("--gen", default="v5e,v6e")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--jobs", type=int)
    a = ap.parse_args()
    pkc = find_pkc(a.pkc)
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="pk-screen-") as cache:
        for case in a.cases.split(","):
            for gen in a.gen.split(","):
                roof, default, err = tune(pkc, cache, case, gen, "model", a.jobs)
                if roof is None:
                    print(f"{case:11} {gen:5} roofline failed: {err}")
                    continue
                sched, _, err = tune(pkc, cache, case, gen, "schedule", a.jobs)
                if sched is None:
                    print(f"{case:11} {gen:5} schedule failed: {err}")
                    continue
                common = [k for k in sched if k in roof]
                if not common:
                    print(f"{case:11} {gen:5} nothing ranked by both")
                    continue
                best_roof = min(roof[k] for k in roof)
                order = sorted(common, key=lambda k: (sched[k], common.index(k)))
                ratio = {k: roof[k] / best_roof for k in common}
                r1 = ratio[order[0]]
                r3 = max(ratio[k] for k in order[:3])
                worst = max(worst, r1)
                kept = []
                for m in MARGINS:
                    keep = [k for k in roof if roof[k] <= m * best_roof or k == default]
                    kept.append(f"{m}: {len(keep)}/{len(roof)}"
                                + ("" if order[0] in keep else " (best lost)"))
                print(f"{case:11} {gen:5} schedule best {show(order[0])}: roofline x{r1:.3f}, "
                      f"top-3 up to x{r3:.3f}; kept at {'; '.join(kept)}", flush=True)
    print(f"largest roofline ratio of the schedule model's best: {worst:.3f}")


if __name__ == "__main__":
    main()

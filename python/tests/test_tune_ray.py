"""`pkc tune --ray`: a sweep's libtpu compiles run on a Ray cluster.

The fixture starts a real local cluster on this machine, a head that runs
no tasks and two worker nodes with one CPU each, with Ray's own CLI; the
sweep must rank exactly as the same sweep compiled by local threads, and
its tasks must have run on both workers.
"""

from __future__ import annotations

import json
import pathlib
import socket
import subprocess
import sys

import pytest

from conftest import KERNELS, ROOT, clean_env, pkc, pkc_path

RAY = pathlib.Path(sys.executable).with_name("ray")

# A space of 64 configurations (bm, bn, bk in 128..1024) of which 18 survive
# the checker (bm, bn in 128..512 divide 512; bk in 128..256 divides 256), on
# two generations.
SWEEP = [
    "tune", str(KERNELS / "matmul.pk"),
    "-p", "M=512", "-p", "N=512", "-p", "K=256",
    "-t", "v5e,v6e", "--json",
    # The roofline on both sides: the schedule model reads libtpu's dump
    # where it compiles, so it is not offered with --ray.
    "--eval", "model",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_cli(*args: str) -> None:
    env = dict(clean_env(), RAY_USAGE_STATS_ENABLED="0")
    p = subprocess.run([str(RAY), *args], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"ray {' '.join(args)} exited {p.returncode}:\n{p.stderr}")


@pytest.fixture(scope="module")
def cluster():
    port = free_port()
    address = f"127.0.0.1:{port}"
    try:
        ray_cli("start", "--head", f"--port={port}", "--num-cpus=0",
                "--include-dashboard=false", "--disable-usage-stats")
        for _ in range(2):
            ray_cli("start", f"--address={address}", "--num-cpus=1")
        yield address
    finally:
        ray_cli("stop", "--force")


def results(p: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    out = {}
    for line in p.stdout.splitlines():
        r = json.loads(line)
        if r.get("type") == "tune":
            out[r["target"]] = r
    return out


def test_a_ray_sweep_ranks_as_the_local_one(cluster, tmp_path) -> None:
    python = {"PK_PYTHON": sys.executable}
    local = results(pkc(*SWEEP, "--tuned-cache", str(tmp_path / "local")))
    remote = results(
        ok(run(*SWEEP, "--tuned-cache", str(tmp_path / "ray"), "--ray", cluster, env=python))
    )
    assert set(local) == set(remote) == {"v5e", "v6e"}
    for target in ("v5e", "v6e"):
        lo, ra = local[target], remote[target]
        assert lo["ray"] is None
        assert ra["ray"]["cluster_nodes"] == 3
        # 18 survivors per target, all compiled on the cluster, by both
        # worker nodes (the head has no CPU).
        assert ra["ray"]["jobs"] == 36
        assert ra["ray"]["nodes"] == 2
        assert ra["ray"]["workers"] >= 2
        assert lo["tried"] == ra["tried"] == 64
        assert lo["pruned"] == ra["pruned"] and sum(ra["pruned"].values()) == 46
        assert lo["ranked"] == ra["ranked"] == 18
        assert lo["points"] == ra["points"]
        # libtpu's code sizes and memory for the best configurations are the
        # same whether it ran here or on a worker.
        for a, b in zip(lo["best"], ra["best"]):
            assert a["params"] == b["params"]
            assert a["generated_code_bytes"] == b["generated_code_bytes"] > 0
            assert a["memory"] == b["memory"]


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(pkc_path()), *args], cwd=ROOT, env=dict(clean_env(), **env),
                          capture_output=True, text=True)


def ok(p: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    if p.returncode != 0:
        raise AssertionError(f"pkc exited {p.returncode}:\n{p.stderr}")
    return p


def test_no_cluster_at_the_address_is_a_coded_error(tmp_path) -> None:
    p = run(*SWEEP, "--tuned-cache", str(tmp_path), "--ray", f"127.0.0.1:{free_port()}",
                env={"PK_PYTHON": sys.executable})
    assert p.returncode == 5, p.stderr
    assert "PK6006" in p.stdout + p.stderr
    assert not any(tmp_path.iterdir()), "nothing is cached from a sweep that did not run"


def test_a_python_without_ray_is_a_coded_error(tmp_path) -> None:
    # A fresh virtual environment has no Ray.
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    p = run(*SWEEP, "--ray", "auto", env={"PK_PYTHON": str(bare / "bin" / "python")})
    assert p.returncode == 5, p.stderr
    assert "PK6005" in p.stdout + p.stderr
    p = run(*SWEEP, "--ray", "auto", env={"PK_PYTHON": str(tmp_path / "no-such-python")})
    assert p.returncode == 5, p.stderr
    assert "PK6005" in p.stdout + p.stderr


def test_a_node_without_pkc_fails_the_sweep_with_its_name(cluster, tmp_path) -> None:
    p = run(*SWEEP, "--tuned-cache", str(tmp_path), "--ray", cluster,
                env={"PK_PYTHON": sys.executable, "PK_RAY_PKC": str(tmp_path / "pkc")})
    assert p.returncode == 5, p.stderr
    out = p.stdout + p.stderr
    assert "PK6007" in out and "no executable pkc" in out and socket.gethostname() in out

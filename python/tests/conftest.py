"""Shared set-up of the pk Python tests.

XLA's CPU client is told to expose two devices (for the shard_map tests)
before JAX is imported anywhere. `pkc` is the binary of the same checkout
(`PKC`, else target/debug/pkc); it runs with the `TPU_*` variables that
importing JAX leaves behind removed, since libtpu fails on them.
"""

from __future__ import annotations

import os
import pathlib
import subprocess

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"


def pkc_path() -> pathlib.Path:
    if "PKC" in os.environ:
        return pathlib.Path(os.environ["PKC"])
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "pkc"


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPU_")}
    env["TPU_SKIP_MDS_QUERY"] = "1"
    return env


def pkc(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        [str(pkc_path()), *args],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
    )
    if check and p.returncode != 0:
        raise AssertionError(f"pkc {' '.join(args)} exited {p.returncode}:\n{p.stderr}")
    return p


@pytest.fixture(scope="session")
def root() -> pathlib.Path:
    return ROOT


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)

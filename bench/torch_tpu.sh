#!/usr/bin/env bash
# The PyTorch tests of the pk package (python/tests/test_torch*.py), which
# .ci/python skips: creates a venv of its own ($PK_TORCH_ENV, default
# ~/.cache/pk/torch-env), installs torch-tpu 0.2.0 there (it brings torch
# 2.15, libtpu and the CUDA wheels PyPI's torch needs to import: about 6 GB,
# and imports without a TPU), the pinned test requirements and pk (dev
# profile), then runs those tests: op registration, fake kernels on meta
# tensors for every pk.ops kernel, torch.compile, the CPU kernels against
# torch's CPU ops, and the exported modules compiled by libtpu on five
# generations.
#
# Usage: bash bench/torch_tpu.sh [PYTEST ARGS...]
# Check the disk first (`df -h`); the venv is kept, so a second run only
# reinstalls pk.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
env_dir="${PK_TORCH_ENV:-$HOME/.cache/pk/torch-env}"
if [[ ! -x "$env_dir/bin/python" ]]; then
    echo "torch_tpu.sh: creating $env_dir" >&2
    "${PYTHON:-python3}" -m venv "$env_dir"
fi
req=python/requirements-test.txt
stamp="$env_dir/.pk-torch-requirements"
if ! { echo "torch-tpu==0.2.0"; cat "$req"; } | cmp -s - "$stamp"; then
    echo "torch_tpu.sh: installing torch-tpu==0.2.0 and $req (about 6 GB)" >&2
    "$env_dir/bin/python" -m pip install --quiet --upgrade pip >&2
    "$env_dir/bin/python" -m pip install --quiet "torch-tpu==0.2.0" -r "$req" >&2
    { echo "torch-tpu==0.2.0"; cat "$req"; } > "$stamp"
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export TPU_SKIP_MDS_QUERY=1
[[ -x "$CARGO_TARGET_DIR/debug/pkc" ]] || cargo build -j2 -p pk
MATURIN_PEP517_ARGS="--profile dev" "$env_dir/bin/python" -m pip install --quiet ./python
"$env_dir/bin/python" -m pytest python/tests/test_torch.py python/tests/test_torch_ops.py \
    -q -p no:cacheprovider "$@"

"""TPU code size of pk's library kernels against their Pallas reference
designs, per TPU generation, compiled by the same libtpu.

Run where jax (0.10.2, CPU wheels are enough) and pk's Python package are
installed, from the repository root, after `cargo build -p pk`:

    python bench/pallas_parity.py [--target all] [--only flash] [--json out.json]

For each row of `ROWS`:

- the pk side is `pkc build FILE -k ENTRY -p ... --aot` (the package's
  StableHLO module, one `tpu_custom_call`), whose compile report gives
  libtpu's generated code bytes per target;
- the Pallas side is the reference kernel from
  `jax.experimental.pallas.ops.tpu`, called with the same configuration
  (shapes, dtype, blocks, causal, scale), traced with `jax.jit` and lowered
  for TPU on this CPU-only machine (`.lower(lowering_platforms=("tpu",))`).
  Its `tpu_custom_call` is cut out into a module of its own (the kernel's
  operands as the function's arguments, its results as the results), so
  that both sides are one kernel and nothing else: the XLA glue around a
  `pallas_call` (reshapes, the broadcasts Pallas's flash backward does
  outside its kernels) is not counted against either. That module is
  compiled by `pkc aot`, the same libtpu path as `pkc build --aot`.

The table gives pk's generated code bytes over Pallas's (below 1: pk is
smaller) with both sizes in KiB. Not a CI test: it needs jax and takes a
minute or two (libtpu compiles each kernel five times).

Adding a kernel: one `Row` with the `.pk` file, entry and parameters and a
function that returns the Pallas call and its argument specs; rows whose
`.pk` file does not exist yet are listed as skipped.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax._src.interpreters import mlir as jax_mlir  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402
from jax._src.lib.mlir.dialects import func as func_dialect  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
TARGETS = ("v4", "v5e", "v5p", "v6e", "tpu7x")

# A Pallas side: a function to lower and the ShapeDtypeStructs of its
# arguments.
PallasSide = tuple[Callable[..., Any], list[jax.ShapeDtypeStruct]]


@dataclasses.dataclass(frozen=True)
class Row:
    """One comparison: a pk kernel and the Pallas kernel it matches."""

    name: str
    config: str
    pk_file: str
    pk_entry: str | None
    pk_params: dict[str, str]
    pallas: Callable[[], PallasSide]


# Flash attention, the configuration: B1 H8 S2048 D128, blocks of
# 512 (pk's defaults; Pallas's `block_k_major` = `block_k` = 512 so both
# make one pass over a key block per grid step).
B, H, S, D = 1, 8, 2048, 128
SM_SCALE = 0.08838834764831845
BLK = 512


def _fa():
    from jax.experimental.pallas.ops.tpu import flash_attention as fa

    return fa


def _qkv(dtype: Any) -> list[jax.ShapeDtypeStruct]:
    return [jax.ShapeDtypeStruct((B, H, S, D), dtype)] * 3


def pallas_flash_fwd(causal: bool, residuals: bool, dtype: Any = jnp.bfloat16) -> PallasSide:
    fa = _fa()
    bs = fa.BlockSizes(block_q=BLK, block_k_major=BLK, block_k=BLK, block_b=1)

    def f(q, k, v):
        # `_flash_attention` with `save_residuals` is the forward the VJP
        # runs (o, l, m); without it, what `flash_attention` calls.
        return fa._flash_attention(q, k, v, None, None, residuals, causal, SM_SCALE, bs, False)

    return f, _qkv(dtype)


def _bwd_specs(dtype: Any) -> list[jax.ShapeDtypeStruct]:
    row = jax.ShapeDtypeStruct((B, H, S), jnp.float32)
    return _qkv(dtype) + [row, row, jax.ShapeDtypeStruct((B, H, S, D), dtype), row]


def pallas_flash_dkv(causal: bool, dtype: Any = jnp.bfloat16) -> PallasSide:
    fa = _fa()

    def f(q, k, v, l, m, do, di):
        return fa._flash_attention_bwd_dkv(
            q, k, v, None, None, l, m, do, di,
            block_q_major=BLK, block_q=BLK, block_k_major=BLK, block_k=BLK,
            sm_scale=SM_SCALE, causal=causal, mask_value=fa.DEFAULT_MASK_VALUE,
        )  # fmt: skip

    return f, _bwd_specs(dtype)


def pallas_flash_dq(causal: bool, dtype: Any = jnp.bfloat16) -> PallasSide:
    fa = _fa()

    def f(q, k, v, l, m, do, di):
        return fa._flash_attention_bwd_dq(
            q, k, v, None, None, l, m, do, di,
            block_q_major=BLK, block_k_major=BLK, block_k=BLK,
            sm_scale=SM_SCALE, causal=causal, mask_value=fa.DEFAULT_MASK_VALUE, debug=False,
        )[0]  # fmt: skip

    return f, _bwd_specs(dtype)


def pallas_matmul(dtype: Any, m: int = 1024, n: int = 1024, k: int = 1024) -> PallasSide:
    from jax.experimental.pallas.ops.tpu import matmul as pmm

    def f(a, b):
        return pmm.matmul(a, b, block_shape=(256, 256), block_k=512, out_dtype=jnp.float32)

    return f, [jax.ShapeDtypeStruct((m, k), dtype), jax.ShapeDtypeStruct((k, n), dtype)]


def _flash_params(causal: bool, t: str = "bf16") -> dict[str, str]:
    return {
        "B": str(B), "H": str(H), "KH": str(H), "S": str(S), "SK": str(S), "D": str(D),
        "bq": str(BLK), "bk": str(BLK), "sm_scale": repr(SM_SCALE),
        "causal": "true" if causal else "false", "T": t,
    }  # fmt: skip


FLASH_CFG = f"B{B} H{H} S{S} D{D} bf16, blocks {BLK}"
ROWS: list[Row] = [
    Row("flash fwd", FLASH_CFG + ", causal", "flash.pk", "flash_attention",
        _flash_params(True), lambda: pallas_flash_fwd(True, False)),
    Row("flash fwd", FLASH_CFG + ", not causal", "flash.pk", "flash_attention",
        _flash_params(False), lambda: pallas_flash_fwd(False, False)),
    Row("flash fwd + residuals", FLASH_CFG + ", causal", "flash.pk", "flash_attention",
        _flash_params(True), lambda: pallas_flash_fwd(True, True)),
    Row("flash bwd dkv", FLASH_CFG + ", causal", "flash.pk", "flash_attention_bwd_dkv",
        _flash_params(True), lambda: pallas_flash_dkv(True)),
    Row("flash bwd dq", FLASH_CFG + ", causal", "flash.pk", "flash_attention_bwd_dq",
        _flash_params(True), lambda: pallas_flash_dq(True)),
    Row("matmul", "1024^3 bf16 -> f32, blocks 256/256/512", "matmul.pk", "matmul",
        {"M": "1024", "N": "1024", "K": "1024", "bm": "256", "bn": "256", "bk": "512", "T": "bf16"},
        lambda: pallas_matmul(jnp.bfloat16)),
    Row("matmul", "1024^3 f32, blocks 256/256/512", "matmul.pk", "matmul",
        {"M": "1024", "N": "1024", "K": "1024", "bm": "256", "bn": "256", "bk": "512", "T": "f32"},
        lambda: pallas_matmul(jnp.float32)),
]  # fmt: skip


def clean_env() -> dict[str, str]:
    """The environment for pkc: importing JAX sets `TPU_*` variables that
    make libtpu's initialisation fail."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPU_")}
    env["TPU_SKIP_MDS_QUERY"] = "1"
    return env


def pkc() -> str:
    if "PKC" in os.environ:
        return os.environ["PKC"]
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for profile in ("release", "debug"):
        p = target / profile / "pkc"
        if p.exists():
            return str(p)
    sys.exit("pallas_parity: no pkc; run `cargo build -p pk` (or set PKC)")


def run_json(args: list[str]) -> list[dict[str, Any]]:
    p = subprocess.run(args, cwd=ROOT, env=clean_env(), capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {p.returncode}:\n{p.stderr}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def pk_code_bytes(row: Row, targets: list[str], out: pathlib.Path) -> dict[str, int]:
    args = [pkc(), "build", f"kernels/{row.pk_file}", "--aot", "-t", ",".join(targets)]
    args += ["-o", str(out), "--message-format", "json", "-q"]
    if row.pk_entry:
        args += ["-k", row.pk_entry]
    for k, v in row.pk_params.items():
        args += ["-p", f"{k}={v}"]
    packages = [r for r in run_json(args) if r.get("type") == "package"]
    assert len(packages) == 1, packages
    return {t: int(b) for t, b in packages[0]["generated_code_bytes"].items()}


def kernel_only_module(text: str) -> str:
    """The module's one `tpu_custom_call`, alone in a `main` whose arguments
    are its operands and whose results are its results."""
    with jax_mlir.make_ir_context() as ctx, ir.Location.unknown(ctx):
        module = ir.Module.parse(text)
        calls = [
            op.operation
            for f in module.body.operations
            for block in f.regions[0].blocks
            for op in block.operations
            if op.operation.name == "stablehlo.custom_call"
            and ir.StringAttr(op.operation.attributes["call_target_name"]).value == "tpu_custom_call"
        ]
        if len(calls) != 1:
            raise RuntimeError(f"expected one tpu_custom_call, found {len(calls)}")
        call = calls[0]
        ins = [o.type for o in call.operands]
        outs = [r.type for r in call.results]
        attrs = {a.name: a.attr for a in (call.attributes[i] for i in range(len(call.attributes)))}
        new = ir.Module.create()
        new.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1)
        new.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1)
        with ir.InsertionPoint(new.body):
            main = func_dialect.FuncOp("main", ir.FunctionType.get(ins, outs))
            main.attributes["sym_visibility"] = ir.StringAttr.get("public")
            entry = main.add_entry_block()
            with ir.InsertionPoint(entry):
                op = ir.Operation.create(
                    "stablehlo.custom_call", results=outs, operands=list(entry.arguments), attributes=attrs
                )
                func_dialect.ReturnOp(list(op.results))
        assert new.operation.verify()
        return str(new)


def pallas_code_bytes(row: Row, targets: list[str], out: pathlib.Path) -> dict[str, int]:
    f, specs = row.pallas()
    lowered = jax.jit(f).trace(*specs).lower(lowering_platforms=("tpu",))
    path = out / "pallas.mlir"
    path.write_text(kernel_only_module(lowered.as_text()))
    reports = run_json([pkc(), "aot", str(path), "-t", ",".join(targets), "--message-format", "json", "-q"])
    return {r["target"]: int(r["generated_code_bytes"]) for r in reports if r.get("type") == "aot"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="all", help="comma-separated generations, or all")
    ap.add_argument("--only", help="rows whose name contains this")
    ap.add_argument("--json", help="also write the figures to this file")
    a = ap.parse_args()
    targets = list(TARGETS) if a.target == "all" else a.target.split(",")
    results = []
    print("| kernel | configuration | " + " | ".join(targets) + " |")
    print("|---|---|" + "---:|" * len(targets))
    for row in ROWS:
        if a.only and a.only not in row.name:
            continue
        if not (ROOT / "kernels" / row.pk_file).exists():
            print(f"| {row.name} | skipped: kernels/{row.pk_file} does not exist yet |", flush=True)
            continue
        with tempfile.TemporaryDirectory(prefix="pk-parity-") as tmp:
            out = pathlib.Path(tmp)
            pk_b = pk_code_bytes(row, targets, out / "pk")
            pl_b = pallas_code_bytes(row, targets, out)
        cells = [f"{pk_b[t] / pl_b[t]:.2f} ({pk_b[t] / 1024:.0f}/{pl_b[t] / 1024:.0f} KiB)" for t in targets]
        print(f"| {row.name} | {row.config} | " + " | ".join(cells) + " |", flush=True)
        results.append({"name": row.name, "config": row.config, "pk": pk_b, "pallas": pl_b})
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()

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
  for TPU on this CPU-only machine (`.lower(lowering_platforms=("tpu",))`),
  once per generation under an abstract mesh whose device is that chip, as
  Pallas's generation-dependent lowering rules need.
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


# Flash attention, the library's benchmark configuration: B1 H8 S2048 D128, blocks of
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


def pallas_linear(m: int = 2048, k: int = 2048, n: int = 1024, bm: int = 256) -> PallasSide:
    """`y = x @ w + b` with the whole weight and bias resident and
    single-buffered (`pipeline_mode=pl.Buffered(1)`), the rows of `x`
    streamed: the Pallas kernel kernels/linear.pk matches (JAX ships none
    with single-buffered weights)."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    def body(x_ref, w_ref, b_ref, y_ref):
        y_ref[...] = (
            jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32) + b_ref[...]
        )

    def f(x, w, b):
        one = pl.Buffered(1)
        return pl.pallas_call(
            body,
            grid=(1, m // bm),
            in_specs=[
                pl.BlockSpec((bm, k), lambda j, i: (i, 0)),
                pl.BlockSpec((k, n), lambda j, i: (0, j), pipeline_mode=one),
                pl.BlockSpec((1, n), lambda j, i: (0, j), pipeline_mode=one),
            ],
            out_specs=pl.BlockSpec((bm, n), lambda j, i: (i, j)),
            out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
            compiler_params=pltpu.CompilerParams(
                dimension_semantics=("parallel", "parallel"), vmem_limit_bytes=16 << 20
            ),
        )(x, w, b)

    return f, [
        jax.ShapeDtypeStruct((m, k), jnp.bfloat16),
        jax.ShapeDtypeStruct((k, n), jnp.bfloat16),
        jax.ShapeDtypeStruct((1, n), jnp.float32),
    ]


# The reference designs of the kernels still being written. Their rows
# below name the `.pk` file each will live in and are skipped until it
# exists; the kernel's author fills in `pk_params` to match the Pallas
# configuration here.


def pallas_gmm(transpose_rhs: bool = False) -> PallasSide:
    """megablox `gmm`: M 1024 tokens in 8 groups, K 1024, N 1024, bf16,
    tiles 128/128/128 (megablox's default)."""
    import importlib

    # The package re-exports the differentiable `gmm` under the module's
    # name; the kernel is the module's.
    mb = importlib.import_module("jax.experimental.pallas.ops.tpu.megablox.gmm")

    def f(lhs, rhs, group_sizes):
        return mb.gmm(lhs, rhs, group_sizes, jnp.float32, (128, 128, 128), transpose_rhs=transpose_rhs)

    rhs = (8, 1024, 1024)
    return f, [
        jax.ShapeDtypeStruct((1024, 1024), jnp.bfloat16),
        jax.ShapeDtypeStruct(rhs, jnp.bfloat16),
        jax.ShapeDtypeStruct((8,), jnp.int32),
    ]


def pallas_paged() -> PallasSide:
    """Decode: batch 8, 32 query heads over 8 KV heads, D 128, pages of 16
    tokens, 128 pages per sequence (2048 tokens), 8 pages per block, bf16."""
    from jax.experimental.pallas.ops.tpu.paged_attention import paged_attention_kernel as pa

    def f(q, k_pages, v_pages, lengths, page_indices):
        return pa.paged_attention(q, k_pages, v_pages, lengths, page_indices, pages_per_compute_block=8)

    pages = (8, 1024, 16, 128)
    return f, [
        jax.ShapeDtypeStruct((8, 32, 128), jnp.bfloat16),
        jax.ShapeDtypeStruct(pages, jnp.bfloat16),
        jax.ShapeDtypeStruct(pages, jnp.bfloat16),
        jax.ShapeDtypeStruct((8,), jnp.int32),
        jax.ShapeDtypeStruct((8, 128), jnp.int32),
    ]


def pallas_ragged_paged() -> PallasSide:
    """Mixed prefill and decode: up to 1024 tokens of up to 16 sequences, 32
    query heads over 8 KV heads, D 128, pages of 16 tokens, bf16."""
    from jax.experimental.pallas.ops.tpu.ragged_paged_attention import kernel as rpa

    def f(q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
        return rpa.ragged_paged_attention(
            q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs,
            sm_scale=SM_SCALE, num_kv_pages_per_block=8, num_queries_per_block=64,
        )  # fmt: skip

    return f, [
        jax.ShapeDtypeStruct((1024, 32, 128), jnp.bfloat16),
        jax.ShapeDtypeStruct((1024, 16, 16, 128), jnp.bfloat16),  # 2 * 8 combined K/V heads
        jax.ShapeDtypeStruct((16,), jnp.int32),
        jax.ShapeDtypeStruct((16, 128), jnp.int32),
        jax.ShapeDtypeStruct((17,), jnp.int32),
        jax.ShapeDtypeStruct((1,), jnp.int32),
    ]


def pallas_splash(causal: bool = True) -> PallasSide:
    """Splash attention forward, H8 S2048 D128 bf16, causal mask, blocks of
    512 (the flash rows' configuration, per head)."""
    from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_kernel as sk
    from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_mask as sm

    head = sm.CausalMask((S, S)) if causal else sm.FullMask((S, S))
    mask = sm.MultiHeadMask([head] * H)
    bs = sk.BlockSizes(block_q=BLK, block_kv=BLK, block_kv_compute=BLK)
    kernel = sk.make_splash_mha(mask, block_sizes=bs, head_shards=1, q_seq_shards=1)

    def f(q, k, v):
        return kernel(q * SM_SCALE, k, v)

    return f, [jax.ShapeDtypeStruct((H, S, D), jnp.bfloat16)] * 3


def _flash_params(causal: bool, t: str = "bf16", residuals: bool = True) -> dict[str, str]:
    return {
        "B": str(B), "H": str(H), "KH": str(H), "S": str(S), "SK": str(S), "D": str(D),
        "bq": str(BLK), "bk": str(BLK), "sm_scale": repr(SM_SCALE),
        "causal": "true" if causal else "false", "T": t,
        **({} if residuals else {"residuals": "false"}),
    }  # fmt: skip


FLASH_CFG = f"B{B} H{H} S{S} D{D} bf16, blocks {BLK}"
ROWS: list[Row] = [
    Row("flash fwd", FLASH_CFG + ", causal", "flash.pk", "flash_attention",
        _flash_params(True, residuals=False), lambda: pallas_flash_fwd(True, False)),
    Row("flash fwd", FLASH_CFG + ", not causal", "flash.pk", "flash_attention",
        _flash_params(False, residuals=False), lambda: pallas_flash_fwd(False, False)),
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
    Row("linear, resident weight", "M2048 K2048 N1024 bf16 -> f32, bm 256, w and b Buffered(1)",
        "linear.pk", "linear",
        {"M": "2048", "K": "2048", "N": "1024", "bm": "256", "bn": "1024", "nw": "1", "T": "bf16",
         "O": "f32"}, pallas_linear),
    # Pallas's side only (`--pallas-only`): pk's splash, paged and ragged
    # paged kernels are compared by pallas_parity_splash.py and
    # pallas_parity_paged.py, which build their metadata too.
    Row("splash fwd", f"H{H} S{S} D{D} bf16, causal, blocks {BLK}", "splash.pk", None,
        {}, lambda: pallas_splash(True)),
    Row("paged attention", "B8 H32 KH8 D128 bf16, pages 16 x 128/seq, 8 pages/block", "paged.pk",
        None, {}, pallas_paged),
    Row("ragged paged attention", "1024 tokens, 16 seqs, H32 KH8 D128 bf16, pages 16",
        "ragged_paged.pk", None, {}, pallas_ragged_paged),
    Row("gmm", "M1024 K1024 N1024, 8 groups, bf16 -> f32, tiles 128", "gmm.pk", "gmm",
        {"M": "1024", "K": "1024", "N": "1024", "G": "8", "tm": "128", "tk": "128", "tn": "128",
         "T": "bf16"}, pallas_gmm),
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
    # The newer of the release and debug builds: code size does not depend
    # on how pkc was compiled, but a stale pkc may not know a new kernel's
    # syntax.
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    built = [p for p in (target / "release" / "pkc", target / "debug" / "pkc") if p.exists()]
    if not built:
        sys.exit("pallas_parity: no pkc; run `cargo build -p pk` (or set PKC)")
    return str(max(built, key=lambda p: p.stat().st_mtime))


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


# The device each target is to Pallas's lowering (`tpu_info`): its device
# kind and TensorCores per device (megacore on v4 and v5p).
DEVICES = {
    "v4": ("TPU v4", 2),
    "v5e": ("TPU v5 lite", 1),
    "v5p": ("TPU v5", 2),
    "v6e": ("TPU v6 lite", 1),
    "tpu7x": ("TPU7x", 1),
}


def lower_for(target: str, f: Callable[..., Any], specs: list[jax.ShapeDtypeStruct]) -> str:
    """`f` lowered for TPU as Pallas lowers it on a `target` chip: some
    lowering rules (and tuned block sizes) depend on the generation, which
    an abstract mesh with that device supplies on a machine without one."""
    kind, cores = DEVICES[target]
    device = jax.sharding.AbstractDevice(device_kind=kind, num_cores=cores, platform="tpu")
    mesh = jax.sharding.AbstractMesh((1,), ("x",), abstract_device=device)
    with jax.sharding.use_abstract_mesh(mesh):
        return jax.jit(f).trace(*specs).lower(lowering_platforms=("tpu",)).as_text()


def pallas_code_bytes(row: Row, targets: list[str], out: pathlib.Path) -> dict[str, int]:
    f, specs = row.pallas()
    sizes = {}
    for t in targets:
        path = out / f"pallas-{t}.mlir"
        path.write_text(kernel_only_module(lower_for(t, f, specs)))
        reports = run_json([pkc(), "aot", str(path), "-t", t, "--message-format", "json", "-q"])
        sizes.update({r["target"]: int(r["generated_code_bytes"]) for r in reports if r.get("type") == "aot"})
    return sizes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="all", help="comma-separated generations, or all")
    ap.add_argument("--only", help="rows whose name contains this")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument(
        "--pallas-only",
        action="store_true",
        help="lower and compile the Pallas side of every row (even rows whose .pk file is missing)",
    )
    a = ap.parse_args()
    targets = list(TARGETS) if a.target == "all" else a.target.split(",")
    results = []
    failed = False
    print("| kernel | configuration | " + " | ".join(targets) + " |")
    print("|---|---|" + "---:|" * len(targets))
    for row in ROWS:
        if a.only and a.only not in row.name:
            continue
        if a.pallas_only:
            try:
                with tempfile.TemporaryDirectory(prefix="pk-parity-") as tmp:
                    pl_b = pallas_code_bytes(row, targets, pathlib.Path(tmp))
                cells = [f"Pallas {pl_b[t] / 1024:.0f} KiB" for t in targets]
            except Exception as e:  # noqa: BLE001 - as below
                cells = [f"error: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}"]
                failed = True
            print(f"| {row.name} | {row.config} | " + " | ".join(cells) + " |", flush=True)
            continue
        if row.pk_entry is None:
            print(f"| {row.name} | Pallas side only (--pallas-only) |", flush=True)
            continue
        try:
            with tempfile.TemporaryDirectory(prefix="pk-parity-") as tmp:
                out = pathlib.Path(tmp)
                pk_b = pk_code_bytes(row, targets, out / "pk")
                pl_b = pallas_code_bytes(row, targets, out)
        except Exception as e:  # noqa: BLE001 - one failing row must not hide the others
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            print(f"| {row.name} | {row.config} | error: {first} |", flush=True)
            failed = True
            continue
        cells = [f"{pk_b[t] / pl_b[t]:.2f} ({pk_b[t] / 1024:.0f}/{pl_b[t] / 1024:.0f} KiB)" for t in targets]
        print(f"| {row.name} | {row.config} | " + " | ".join(cells) + " |", flush=True)
        results.append({"name": row.name, "config": row.config, "pk": pk_b, "pallas": pl_b})
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(results, indent=1) + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

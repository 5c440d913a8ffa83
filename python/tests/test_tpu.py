"""The TPU lowering: the custom call JAX emits for a pk kernel is the one
`pkc build` writes for the same kernel and parameters."""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import pytest
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir

import pk.jax
from pk.jax import _attributes
from conftest import KERNELS, pkc


def custom_calls(text: str) -> list[tuple[dict[str, str], list[str], list[str], list[str]]]:
    """Each custom call of a module: its attributes, the operands' types,
    the results' types, and what each operand is (`argN` for the N-th
    argument of `main`)."""
    ctx = mlir.make_ir_context()
    module = ir.Module.parse(text, context=ctx)
    found = []

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    o = inner.operation
                    if o.name == "stablehlo.custom_call":
                        attrs = {n: str(a) for n, a in _attributes(o).items()}
                        sources = []
                        for v in o.operands:
                            owner = v.owner
                            if isinstance(owner, ir.Block):
                                sources.append(f"arg{ir.BlockArgument(v).arg_number}")
                            else:
                                sources.append(owner.name)
                        found.append(
                            (
                                attrs,
                                [str(v.type) for v in o.operands],
                                [str(r.type) for r in o.results],
                                sources,
                            )
                        )
                    walk(o)

    walk(module.operation)
    return found


def built_stablehlo(
    tmp: pathlib.Path, file: str, params: dict[str, str], kernel: str | None = None
) -> str:
    args = ["build", str(KERNELS / file), "-o", str(tmp)]
    if kernel:
        args += ["-k", kernel]
    for n, v in params.items():
        args += ["-p", f"{n}={v}"]
    pkc(*args)
    (path,) = tmp.glob("*/kernel.stablehlo.mlir")
    return path.read_text()


CASES = [
    ("matmul.pk", {"bm": "128", "bn": "128", "bk": "256"},
     [((256, 512), jnp.bfloat16), ((512, 384), jnp.bfloat16)]),
    ("matmul.pk", {"T": "f32"}, [((1024, 1024), jnp.float32), ((1024, 1024), jnp.float32)]),
    ("add.pk", {}, [((512, 1024), jnp.float32)] * 2),
    ("softmax.pk", {"br": "64"}, [((256, 512), jnp.float32)]),
]


@pytest.mark.parametrize("file,given,shapes", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_tpu_custom_call_equals_pkc_build(file, given, shapes, tmp_path) -> None:
    k = pk.jax.kernel(KERNELS / file, **given)
    avals = [jax.ShapeDtypeStruct(s, d) for s, d in shapes]
    lowered = jax.jit(k).trace(*avals).lower(lowering_platforms=("tpu",))
    (jax_call,) = custom_calls(lowered.as_text())
    # pkc build with every parameter the call inferred, spelled out.
    spec = k.specialise(*avals)
    (pkc_call,) = custom_calls(built_stablehlo(tmp_path, file, dict(spec.params)))
    assert jax_call[0]["call_target_name"] == '"tpu_custom_call"'
    assert jax_call[0] == pkc_call[0], "attributes differ"
    assert jax_call[1:] == pkc_call[1:], "operand or result types, or operand order, differ"
    # The operands are main's arguments, in order, in both.
    assert jax_call[3] == [f"arg{i}" for i in range(len(shapes))]


def test_tpu_lowering_of_a_package(tmp_path) -> None:
    text = built_stablehlo(tmp_path, "add.pk", {"M": "256", "N": "512"})
    (pkg,) = tmp_path.glob("add*")
    k = pk.jax.kernel(pkg)
    x = jax.ShapeDtypeStruct((256, 512), jnp.float32)
    lowered = jax.jit(k).trace(x, x).lower(lowering_platforms=("tpu",))
    assert custom_calls(lowered.as_text()) == custom_calls(text)

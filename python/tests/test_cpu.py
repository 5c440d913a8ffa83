"""Every kernel of kernels/ called from JAX on CPU: bit for bit what
`pkc run` computes, and numpy's result within tolerance."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, field
from typing import Callable

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import pk
import pk.jax
from conftest import KERNELS, pkc


def softmax_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@dataclass
class Case:
    file: str
    params: dict[str, str]
    inputs: dict[str, tuple[tuple[int, ...], str]]
    reference: Callable[..., np.ndarray]
    tol: float
    id: str = ""
    given: dict[str, str] = field(default_factory=dict)


BF16 = "bf16"
CASES = [
    Case("add.pk", {}, {"x": ((256, 1024), "f32"), "y": ((256, 1024), "f32")},
         lambda x, y: x + y, 1e-7, "add"),
    Case("matmul.pk", {"T": "f32"}, {"a": ((256, 1024), "f32"), "b": ((1024, 256), "f32")},
         lambda a, b: a @ b, 1e-4, "matmul-f32-split-k"),
    Case("matmul.pk", {"T": "bf16"}, {"a": ((256, 1024), BF16), "b": ((1024, 256), BF16)},
         lambda a, b: a @ b, 1e-4, "matmul-bf16-split-k"),
    Case("matmul.pk", {"T": "f32", "bk": "256"},
         {"a": ((256, 256), "f32"), "b": ((256, 512), "f32")},
         lambda a, b: a @ b, 1e-4, "matmul-f32-one-k-block", given={"bk": "256"}),
    Case("softmax.pk", {}, {"x": ((256, 256), "f32")}, softmax_ref, 1e-6, "softmax"),
]


def test_the_starter_kernels_have_cases() -> None:
    # Every file of kernels/ is called through JAX with its numpy fixtures
    # in test_library.py; these cases add shape inference on top.
    assert {c.file for c in CASES} == {"add.pk", "matmul.pk", "softmax.pk"}


def make_inputs(case: Case, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for shape, d in case.inputs.values():
        x = rng.standard_normal(shape).astype(np.float32)
        out.append(x.astype(ml_dtypes.bfloat16) if d == BF16 else x)
    return out


def pkc_run(case: Case, inputs: list[np.ndarray], tmp: pathlib.Path) -> np.ndarray:
    args = ["run", str(KERNELS / case.file)]
    # The sizes the JAX call infers, given explicitly to pkc.
    for (name, (shape, _)), a in zip(case.inputs.items(), inputs):
        np.save(tmp / f"{name}.npy", a)
        args += ["--in", f"{name}={tmp / f'{name}.npy'}"]
    k = pk.compile(KERNELS / case.file, **params_for(case, inputs))
    for n, v in k.params:
        args += ["-p", f"{n}={v}"]
    (out_name, _, _), = k.outputs
    args += ["--out", f"{out_name}={tmp / 'out.npy'}"]
    pkc(*args)
    return np.load(tmp / "out.npy")


def params_for(case: Case, inputs: list[np.ndarray]) -> dict[str, str]:
    """The parameters shape inference should find (hand-written per kernel)."""
    shapes = [a.shape for a in inputs]
    if case.file == "add.pk":
        return {"M": str(shapes[0][0]), "N": str(shapes[0][1])}
    if case.file == "matmul.pk":
        (m, k), (_, n) = shapes
        return {"M": str(m), "N": str(n), "K": str(k), **case.params}
    (r, c), = shapes
    return {"R": str(r), "C": str(c)}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_jit_on_cpu_equals_pkc_run_and_numpy(case: Case, rng, tmp_path) -> None:
    inputs = make_inputs(case, rng)
    k = pk.jax.kernel(KERNELS / case.file, **case.given)
    got = np.asarray(jax.jit(k)(*inputs))
    # Inferred exactly the sizes and dtypes a person would write.
    spec = k.specialise(*inputs)
    assert dict(spec.params) == {**params_for(case, inputs), **case.given}
    want = pkc_run(case, inputs, tmp_path)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), "JAX on CPU differs from pkc run"
    ref = case.reference(*[a.astype(np.float64) for a in inputs])
    np.testing.assert_allclose(got, ref, rtol=case.tol, atol=case.tol * np.abs(ref).max())


def test_eager_call_and_pk_run_agree(rng) -> None:
    x = rng.standard_normal((256, 512)).astype(np.float32)
    y = rng.standard_normal((256, 512)).astype(np.float32)
    k = pk.jax.kernel(KERNELS / "add.pk")
    eager = np.asarray(k(x, y))
    (direct,) = pk.run(pk.compile(KERNELS / "add.pk", M=256, N=512), x, y)
    np.testing.assert_array_equal(eager, x + y)
    np.testing.assert_array_equal(direct, x + y)


def test_each_shape_compiles_once() -> None:
    k = pk.jax.kernel(KERNELS / "add.pk")
    a = jax.ShapeDtypeStruct((256, 512), jnp.float32)
    b = jax.ShapeDtypeStruct((512, 512), jnp.float32)
    ka, kb = k.specialise(a, a), k.specialise(b, b)
    assert k.specialise(a, a) is ka
    assert ka is not kb
    assert dict(kb.params) == {"M": "512", "N": "512"}


def test_jit_inside_a_model(rng) -> None:
    """A jitted function mixing pk kernels with XLA ops."""
    mm = pk.jax.kernel(KERNELS / "matmul.pk", bm=128, bn=128, bk=128)
    sm = pk.jax.kernel(KERNELS / "softmax.pk")
    x = rng.standard_normal((128, 256)).astype(np.float32)
    w = rng.standard_normal((256, 128)).astype(np.float32)

    @jax.jit
    def f(x, w):
        return sm(jnp.tanh(mm(x, w)))

    got = np.asarray(f(x, w))
    np.testing.assert_allclose(got, softmax_ref(np.tanh(x.astype(np.float64) @ w)), rtol=1e-5, atol=1e-6)

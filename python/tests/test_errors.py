"""pk's diagnostics reach Python as pk.PkError with the rendered text."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import pk
import pk.jax
from conftest import KERNELS


def test_shape_conflict_names_operand_and_dimension() -> None:
    mm = pk.jax.kernel(KERNELS / "matmul.pk", bm=128, bn=128, bk=128)
    a = np.zeros((256, 512), np.float32)
    b = np.zeros((256, 128), np.float32)
    with pytest.raises(pk.PkError) as e:
        jax.jit(mm)(a, b)
    assert e.value.code == "PK5003"
    msg = str(e.value)
    assert "dimension 0 of `b` is 256, but `K` is 512 (from dimension 1 of `a`)" in msg
    # The caret points at `K` in `b: T[K, N]`, on that line of the file.
    src = "    b: T[K, N] block [bk, bn] at (k, j),"
    line = (KERNELS / "matmul.pk").read_text().splitlines().index(src) + 1
    assert f"{line} │ {src}" in msg
    assert "╰── `K` must be the same size here" in msg
    assert "help: every array that names the same parameter must agree on it" in msg


def test_given_size_conflict() -> None:
    add = pk.jax.kernel(KERNELS / "add.pk", M=512)
    x = np.zeros((256, 512), np.float32)
    with pytest.raises(pk.PkError) as e:
        add(x, x)
    assert e.value.code == "PK5003"
    assert "dimension 0 of `x` is 256, but `M` was given as 512" in str(e.value)


def test_bad_dtype() -> None:
    sm = pk.jax.kernel(KERNELS / "softmax.pk")
    x = jnp.zeros((128, 128), jnp.bfloat16)
    with pytest.raises(pk.PkError) as e:
        jax.jit(sm)(x)
    assert e.value.code == "PK5004"
    assert "`x` is f32, but the array passed for it is bf16" in str(e.value)
    assert "x.astype(jnp.float32)" in str(e.value)


def test_dtypes_of_one_parameter_must_agree() -> None:
    mm = pk.jax.kernel(KERNELS / "matmul.pk", bm=128, bn=128, bk=128)
    a = np.zeros((128, 128), np.float32)
    b = np.zeros((128, 128), ml_dtypes.bfloat16)
    with pytest.raises(pk.PkError) as e:
        mm(a, b)
    assert e.value.code == "PK5004"
    assert "the dtype of `b` is bf16, but `T` is f32 (from the dtype of `a`)" in str(e.value)


def test_argument_count_and_rank() -> None:
    add = pk.jax.kernel(KERNELS / "add.pk")
    x = np.zeros((256, 512), np.float32)
    with pytest.raises(pk.PkError) as e:
        add(x)
    assert e.value.code == "PK5001"
    assert "`add` takes 2 arrays (x, y), 1 given" in str(e.value)
    with pytest.raises(pk.PkError) as e:
        add(x[0], x[0])
    assert e.value.code == "PK5002"


def test_compile_error_is_the_rendered_diagnostic() -> None:
    # 100 rows in blocks of 256: pk's checker rejects it with carets.
    add = pk.jax.kernel(KERNELS / "add.pk")
    x = np.zeros((100, 512), np.float32)
    with pytest.raises(pk.PkError) as e:
        add(x, x)
    assert e.value.code is not None and e.value.code.startswith("PK0")
    assert "kernels/add.pk" in str(e.value)
    assert "help:" in str(e.value) or "╰" in str(e.value)


def test_missing_file() -> None:
    with pytest.raises(pk.PkError) as e:
        pk.compile("no/such/kernel.pk")
    assert e.value.code == "PK0009"
    assert "cannot read" in str(e.value)


def test_bad_parameter_type() -> None:
    with pytest.raises(TypeError):
        pk.jax.kernel(KERNELS / "add.pk", M=True)


IDIV = """\
kernel idiv<M = 8, N = 128>(
    x: i32[M, N] block [M, N] at (0, 0),
    y: i32[M, N] block [M, N] at (0, 0),
) -> z: i32[M, N] block [M, N] at (0, 0)
grid (i in 1 parallel)
{
    z[..] = x[..] / y[..];
}
"""


def test_cpu_reference_error_inside_jit_is_the_rendered_diagnostic(tmp_path) -> None:
    path = tmp_path / "idiv.pk"
    path.write_text(IDIV)
    k = jax.jit(pk.jax.kernel(path))
    x = np.full((8, 128), 7, np.int32)
    np.testing.assert_array_equal(np.asarray(k(x, np.full_like(x, 2))), np.full_like(x, 3))
    # The FFI handler's error comes back through XLA as JAX's runtime error.
    with pytest.raises(Exception) as e:
        k(x, np.zeros_like(x))
    msg = str(e.value)
    assert "PK1011" in msg
    assert "integer division by zero at" in msg and "idiv.pk:7:13" in msg
    assert "╰── this division" in msg
    assert "help: integer division by zero has no value on the TPU" in msg


MUL8 = """kernel mul8<M = 32, N = 128>(
    x: f8e4m3fn[M, N] block [M, N] at (0, 0),
) -> z: f8e4m3fn[M, N] block [M, N] at (0, 0)
grid (i in 1 parallel)
{
    z[..] = x[..] * x[..];
}
"""


def test_kernel_without_cpu_reference_fails_on_cpu_as_pkc_run_does(tmp_path) -> None:
    """Arithmetic on fp8 values is not in the CPU reference (which reads,
    writes and casts fp8, and multiplies fp8 matrices): jitted on CPU or run with
    `pk.run`, the kernel raises the error `pkc run` prints for its source
    (PK1021 at the operation), and a package built without kernel.wasm the
    one `pkc run` prints for the package (PK3012)."""
    from conftest import pkc

    path = tmp_path / "mul8.pk"
    path.write_text(MUL8)
    x = np.zeros((32, 128), ml_dtypes.float8_e4m3fn)
    k = pk.jax.kernel(path)
    with pytest.raises(pk.PkError) as e:
        jax.jit(k)(x)
    assert e.value.code == "PK1021"
    msg = str(e.value)
    assert "`Mul` on f8e4m3fn is not supported by the CPU reference" in msg
    assert "mul8.pk:6:13" in msg and "╰── here" in msg
    p = pkc("run", str(path), check=False)
    assert p.returncode == 1 and "PK1021" in p.stderr and "mul8.pk:6:13" in p.stderr
    with pytest.raises(pk.PkError) as e:
        pk.run(k.specialise(x), x)
    assert e.value.code == "PK1021"
    # Export for TPU needs no CPU reference.
    spec = jax.ShapeDtypeStruct(x.shape, x.dtype)
    assert "tpu_custom_call" in jax.jit(k).trace(spec).lower(lowering_platforms=("tpu",)).as_text()

    pkc("build", str(path), "-o", str(tmp_path / "out"))
    package = pk.jax.kernel(tmp_path / "out" / "mul8")
    with pytest.raises(pk.PkError) as e:
        jax.jit(package)(x)
    assert e.value.code == "PK3012"
    assert "was built without kernel.wasm" in str(e.value)

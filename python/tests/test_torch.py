"""pk.torch: a pk kernel as a PyTorch op through TorchTPU's `jax_op`.

Registration (the op's schema from the kernel header), the fake kernel on
`meta` tensors, `torch.compile` tracing through the op with fake tensors,
the CPU kernel against torch's own CPU ops, and the module TorchTPU
registers compiled by libtpu for all five generations. These tests need
torch-tpu (`bash bench/torch_tpu.sh` installs it in a venv of its own);
without it they are skipped.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch_tpu", reason="torch-tpu not installed (bash bench/torch_tpu.sh runs these tests)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import torch  # noqa: E402

import pk  # noqa: E402
import pk.jax  # noqa: E402
import pk.torch  # noqa: E402
from conftest import KERNELS, pkc  # noqa: E402

TARGETS = ["v4", "v5e", "v5p", "v6e", "tpu7x"]
BF16 = torch.bfloat16


def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device="meta")


@pytest.fixture(scope="module")
def mm():
    return pk.torch.op("pktest::matmul", KERNELS / "matmul.pk", bm=128, bn=128, bk=128)


@pytest.fixture(scope="module")
def flash():
    return pk.torch.op(
        "pktest::flash", KERNELS / "flash.pk", kernel="flash_attention", segments=True, residuals=True
    )


def schema(op) -> str:
    return str(op._opoverload._schema)


def test_schema_comes_from_the_kernel_header(mm, flash) -> None:
    assert schema(mm) == "pktest::matmul(Tensor a, Tensor b) -> Tensor"
    assert torch.ops.pktest.matmul.default._schema == mm._opoverload._schema
    # Conditional operands follow the parameters given: with segments the
    # call takes the segment ids, with residuals it returns the lse too.
    assert schema(flash) == (
        "pktest::flash(Tensor q, Tensor k, Tensor v, Tensor q_seg, Tensor kv_seg) -> (Tensor, Tensor)"
    )
    plain = pk.torch.op("pktest::flash_plain", KERNELS / "flash.pk", kernel="flash_attention", residuals=False)
    assert schema(plain) == "pktest::flash_plain(Tensor q, Tensor k, Tensor v) -> Tensor"


def test_fake_kernel_gives_shapes_and_dtypes_on_meta(mm, flash) -> None:
    c = mm(meta(256, 512, dtype=BF16), meta(512, 384, dtype=BF16))
    assert (c.shape, c.dtype, c.device.type) == ((256, 384), torch.float32, "meta")
    o, lse = flash(
        meta(2, 4, 256, 128, dtype=BF16), meta(2, 2, 256, 128, dtype=BF16), meta(2, 2, 256, 128, dtype=BF16),
        meta(2, 256, 1, dtype=torch.int32), meta(2, 1, 256, dtype=torch.int32),
    )  # fmt: skip
    assert (o.shape, o.dtype) == ((2, 4, 256, 128), BF16)
    assert (lse.shape, lse.dtype) == ((2, 4, 256, 1), torch.float32)


def test_cpu_kernel_against_torch_matmul(mm) -> None:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(256, 384, generator=g)
    b = torch.randn(384, 256, generator=g)
    torch.testing.assert_close(mm(a, b), a @ b, rtol=1e-5, atol=1e-4)
    # bf16 operands, f32 accumulation: torch's product of the same bf16
    # values in f32.
    ab, bb = a.to(BF16), b.to(BF16)
    c = torch.ops.pktest.matmul(ab, bb)
    assert c.dtype == torch.float32
    torch.testing.assert_close(c, ab.float() @ bb.float(), rtol=1e-5, atol=1e-4)


def test_an_op_from_a_package(tmp_path) -> None:
    pkc("build", str(KERNELS / "add.pk"), "-o", str(tmp_path), "-p", "M=256", "-p", "N=512")
    (package,) = tmp_path.glob("add*")
    add = pk.torch.op("pktest::add_pkg", package)
    assert schema(add) == "pktest::add_pkg(Tensor x, Tensor y) -> Tensor"
    x = torch.randn(256, 512)
    y = torch.randn(256, 512)
    assert torch.equal(add(x, y), x + y)
    assert add(meta(256, 512), meta(256, 512)).shape == (256, 512)


def test_torch_compile_traces_the_op_with_fake_tensors(mm) -> None:
    graphs = []

    def backend(gm: torch.fx.GraphModule, example_inputs):
        graphs.append(gm)
        return gm.forward

    def layer(x, w):
        return torch.relu(torch.ops.pktest.matmul(x, w)) * 2

    compiled = torch.compile(layer, backend=backend, fullgraph=True)
    x = torch.randn(128, 256)
    w = torch.randn(256, 128)
    out = compiled(x, w)
    torch.testing.assert_close(out, torch.relu(x @ w) * 2, rtol=1e-5, atol=1e-4)
    (gm,) = graphs
    targets = (torch.ops.pktest.matmul, torch.ops.pktest.matmul.default)
    (node,) = [n for n in gm.graph.nodes if n.target in targets]
    # Dynamo ran the fake kernel: the node's value is a fake tensor of the
    # kernel's output shape.
    val = node.meta["example_value"]
    assert isinstance(val, torch._subclasses.fake_tensor.FakeTensor)
    assert (tuple(val.shape), val.dtype) == ((128, 128), torch.float32)


def test_opcheck_schema_fake_and_autograd_registration(mm) -> None:
    a = torch.randn(128, 256)
    b = torch.randn(256, 128)
    torch.library.opcheck(
        torch.ops.pktest.matmul.default,
        (a, b),
        test_utils=("test_schema", "test_faketensor", "test_autograd_registration"),
    )


def test_exported_op_compiles_for_every_tpu(mm) -> None:
    exported = pk.torch.export(mm, meta(256, 512, dtype=BF16), meta(512, 384, dtype=BF16))
    text = exported.mlir_module()
    assert text.count("stablehlo.custom_call @tpu_custom_call") == 1
    assert 'kernel_name = "matmul"' in text
    reports = pk.aot_compile(exported)
    assert [r["target"] for r in reports] == TARGETS
    for r in reports:
        assert r["generated_code_bytes"] > 0, r["target"]
        # The op's arguments and result as libtpu accounts them.
        assert r["memory"]["argument_bytes"] == 2 * (256 * 512 + 512 * 384), r["target"]
        assert r["memory"]["output_bytes"] == 4 * 256 * 384, r["target"]


def test_a_wrong_dtype_is_pk5004_on_cpu_and_meta() -> None:
    softmax = pk.torch.op("pktest::softmax", KERNELS / "softmax.pk")
    for x in (torch.randn(256, 128, dtype=BF16), meta(256, 128, dtype=BF16)):
        with pytest.raises(pk.PkError) as e:
            softmax(x)
        assert e.value.code == "PK5004", e.value
    # 64-bit tensors become 32-bit ones on the way into JAX (x64 is off),
    # on the CPU as in TorchTPU's placeholders.
    x = torch.randn(256, 128, dtype=torch.float64)
    torch.testing.assert_close(softmax(x), torch.softmax(x.float(), dim=-1))
    assert softmax(meta(256, 128, dtype=torch.float64)).dtype == torch.float32


def test_a_bad_parameter_or_kernel_is_the_compilers_error() -> None:
    with pytest.raises(pk.PkError) as e:
        pk.torch.op("pktest::bad_param", KERNELS / "matmul.pk", bq=128)
    assert e.value.code is not None and e.value.code.startswith("PK0"), e.value
    assert "`bq`" in str(e.value)
    with pytest.raises(pk.PkError) as e:
        pk.torch.op("pktest::bad_kernel", KERNELS / "flash.pk", kernel="flash")
    assert e.value.code is not None and e.value.code.startswith("PK0"), e.value
    assert "no kernel `flash`" in str(e.value)


@pytest.mark.filterwarnings("ignore:.*jax_op is experimental")
def test_a_hand_written_jax_op_calling_a_pk_kernel() -> None:
    """docs/python.md's `jax_op` example: TorchTPU's own registration of an
    annotated JAX function that calls a pk kernel, on meta tensors and
    exported for TPU (it has no CPU kernel: that is what pk.torch adds)."""
    from torch.tpu.pallas import jax_op

    kernel = pk.jax.kernel(KERNELS / "matmul.pk", bm=128, bn=128, bk=256)

    def mm_relu(a: jax.Array, b: jax.Array) -> jax.Array:
        return jnp.maximum(kernel(a, b), 0)

    op = jax_op("pktest::mm_relu", mm_relu)
    c = op(meta(256, 512, dtype=BF16), meta(512, 384, dtype=BF16))
    assert (c.shape, c.dtype) == ((256, 384), torch.float32)
    exported = pk.torch.export(op, meta(256, 512, dtype=BF16), meta(512, 384, dtype=BF16))
    text = exported.mlir_module()
    assert text.count("stablehlo.custom_call @tpu_custom_call") == 1
    assert "stablehlo.maximum" in text
    assert pk.aot_compile(exported, "v5e")["generated_code_bytes"] > 0

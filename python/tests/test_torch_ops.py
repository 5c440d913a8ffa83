"""pk.torch.ops: the kernel library as PyTorch ops.

Every op's fake kernel on `meta` tensors against the shapes and dtypes
its documentation gives (and, for the differentiable ops, the gradients'
shapes through the `_fwd`/`_bwd` ops); forward and backward on the CPU
against torch's own CPU ops; `torch.compile` through AOTAutograd, whose
forward and backward graphs hold pk's ops; and the exported forward and
backward modules compiled by libtpu. Skipped without torch-tpu.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch_tpu", reason="torch-tpu not installed (bash bench/torch_tpu.sh runs these tests)")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import pk  # noqa: E402
import pk.ops  # noqa: E402
import pk.torch  # noqa: E402
import pk.torch.ops as ops  # noqa: E402

F32, BF16, I32, I8 = torch.float32, torch.bfloat16, torch.int32, torch.int8
F8 = torch.float8_e4m3fn


def m(*shape: int, dtype: torch.dtype = F32) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device="meta")


#: Each op on meta tensors: (arguments, keywords, [(shape, dtype) of each
#: output]), the outputs as the op's documentation states them.
META = {
    "add": ((m(256, 512), m(256, 512)), {}, [((256, 512), F32)]),
    "matmul": ((m(256, 512, dtype=BF16), m(512, 384, dtype=BF16)), {}, [((256, 384), F32)]),
    "softmax": ((m(4, 64, 256),), {}, [((4, 64, 256), F32)]),
    "flash_attention": (
        (m(1, 4, 256, 128, dtype=BF16), m(1, 2, 256, 128, dtype=BF16), m(1, 2, 256, 128, dtype=BF16)),
        {"causal": False}, [((1, 4, 256, 128), BF16)]),
    "attention": ((m(256, 128), m(256, 128), m(256, 128)), {}, [((256, 128), F32)]),
    "rms_norm": ((m(2, 64, 256, dtype=BF16), m(256, dtype=BF16)), {}, [((2, 64, 256), BF16)]),
    "layer_norm": ((m(64, 256), m(256), m(256)), {"residual": m(64, 256)},
                   [((64, 256), F32), ((64, 256), F32)]),
    "rope": ((m(2, 4, 256, 64, dtype=BF16), m(256, 64), m(256, 64)), {}, [((2, 4, 256, 64), BF16)]),
    "swiglu": ((m(256, 384), m(256, 384)), {}, [((256, 384), F32)]),
    "geglu": ((m(256, 384), m(256, 384)), {"approximate": False}, [((256, 384), F32)]),
    "gated_mlp": ((m(128, 256, dtype=BF16), m(256, 512, dtype=BF16), m(256, 512, dtype=BF16)), {},
                  [((128, 512), BF16)]),
    "xent": ((m(200, 1000), m(200, dtype=torch.int64)), {}, [((200,), F32)]),
    "gmm": ((m(512, 128, dtype=BF16), m(4, 128, 256, dtype=BF16), m(4, dtype=I32)), {}, [((512, 256), BF16)]),
    "tgmm": ((m(512, 128, dtype=BF16), m(512, 256, dtype=BF16), m(4, dtype=I32)), {}, [((4, 128, 256), BF16)]),
    "splash_attention": ((m(1, 2, 512, 128, dtype=BF16),) * 3, {"mask": "local:128,0"},
                         [((1, 2, 512, 128), BF16)]),
    "paged_attention": (
        (m(8, 32, 128, dtype=BF16), m(8, 256, 16, 128, dtype=BF16), m(8, 256, 16, 128, dtype=BF16),
         m(8, dtype=I32), m(8, 32, dtype=I32)), {}, [((8, 32, 128), BF16)]),
    "ragged_paged_attention": (
        (m(128, 32, 128, dtype=BF16), m(8, 256, 16, 128, dtype=BF16), m(8, 256, 16, 128, dtype=BF16),
         m(16, dtype=I32), m(16, 32, dtype=I32), m(17, dtype=I32), m(1, dtype=I32)), {},
        [((128, 32, 128), BF16)]),
    "qmatmul_w8a8": ((m(256, 1024, dtype=I8), m(256), m(1024, 512, dtype=I8), m(512)), {},
                     [((256, 512), BF16)]),
    "qmatmul_fp8": ((m(256, 512, dtype=F8), m(256, 4), m(512, 256, dtype=F8), m(4, 2)),
                    {"out_dtype": F32}, [((256, 256), F32)]),
}  # fmt: skip


def test_every_library_kernel_is_a_torch_op() -> None:
    kernel_ops = set(pk.ops.__all__) - {"kernels_dir", "make_group_metadata", "checks"}
    assert ops.NOT_OPS <= set(pk.ops.__all__)
    assert set(ops.__all__) == kernel_ops
    assert set(META) == kernel_ops, "add the new op to META"
    for name in ops.__all__:
        assert hasattr(torch.ops.pk, name), name
        differentiable = name not in ops.FORWARD_ONLY
        assert hasattr(torch.ops.pk, name + "_fwd") == differentiable, name
        assert hasattr(torch.ops.pk, name + "_bwd") == differentiable, name
    assert hasattr(torch.ops.pk, "rms_norm_residual") and hasattr(torch.ops.pk, "layer_norm_residual_bwd")


def test_schemas_take_tensors_positionally_and_parameters_as_keywords() -> None:
    s = str(torch.ops.pk.flash_attention.default._schema)
    assert s == (
        "pk::flash_attention(Tensor q, Tensor k, Tensor v, Tensor? q_segment_ids=None, "
        "Tensor? kv_segment_ids=None, *, bool causal=True, float? sm_scale=None, float soft_cap=0., "
        "SymInt? block_q=None, SymInt? block_k=None) -> Tensor"
    )
    assert str(torch.ops.pk.rms_norm_residual.default._schema).endswith(
        "(Tensor x, Tensor weight, Tensor residual, *, float eps=9.9999999999999995e-07, "
        "SymInt? block_rows=None) -> (Tensor, Tensor)"
    )
    assert "Tensor? k_scale=None, Tensor? v_scale=None, *, float? sm_scale=None" in str(
        torch.ops.pk.paged_attention.default._schema
    )
    assert "Tensor[] outputs, Tensor[] residuals, Tensor[] cotangents" in str(
        torch.ops.pk.matmul_bwd.default._schema
    )


def test_gmm_takes_the_output_dtype_as_a_torch_dtype() -> None:
    # The default is the inputs' dtype (as jax.lax.ragged_dot); a torch
    # dtype asks for another, as `preferred_element_type` does in JAX.
    assert "ScalarType? preferred_element_type=None" in str(torch.ops.pk.gmm.default._schema)
    lhs, rhs, sizes = m(512, 128, dtype=BF16), m(4, 128, 256, dtype=BF16), m(4, dtype=I32)
    assert outputs(ops.gmm(lhs, rhs, sizes, preferred_element_type=F32)) == [((512, 256), F32)]
    assert outputs(ops.tgmm(lhs, m(512, 256, dtype=BF16), sizes, preferred_element_type=F32)) == [
        ((4, 128, 256), F32)
    ]


def outputs(r) -> list[tuple[tuple[int, ...], torch.dtype]]:
    rs = r if isinstance(r, tuple) else (r,)
    return [(tuple(t.shape), t.dtype) for t in rs]


@pytest.mark.parametrize("name", sorted(META))
def test_fake_kernel_on_meta_tensors(name) -> None:
    args, kwargs, want = META[name]
    assert outputs(getattr(ops, name)(*args, **kwargs)) == want
    if name in ops.FORWARD_ONLY:
        return
    # With gradients: the `_fwd` op, then the `_bwd` op's fake kernel
    # gives each floating-point input a gradient of its shape and dtype.
    inputs = [a.clone().requires_grad_(a.is_floating_point()) for a in args]
    kw = {k: (v.clone().requires_grad_() if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
    r = getattr(ops, name)(*inputs, **kw)
    assert outputs(r) == want
    rs = r if isinstance(r, tuple) else (r,)
    leaves = [t for t in inputs + list(kw.values()) if isinstance(t, torch.Tensor) and t.requires_grad]
    grads = torch.autograd.grad(rs, leaves, [torch.empty_like(t) for t in rs])
    assert [(g.shape, g.dtype) for g in grads] == [(t.shape, t.dtype) for t in leaves]


def close(got: torch.Tensor, want: torch.Tensor, tol: float) -> None:
    """Agreement relative to the reference's largest magnitude."""
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.dtype)
    err = (got.double() - want.double()).abs().max() / want.double().abs().max().clamp_min(1e-30)
    assert err <= tol, f"max relative error {err:.3g} > {tol}"


def grads_of(f, args: list[torch.Tensor], seed: int = 7) -> list[torch.Tensor]:
    """Gradients of `sum(f(*args) * weights)` with fixed random weights."""
    xs = [a.detach().clone().requires_grad_(a.is_floating_point()) for a in args]
    out = f(*xs)
    outs = out if isinstance(out, tuple) else (out,)
    g = torch.Generator().manual_seed(seed)
    loss = sum((o.float() * torch.randn(o.shape, generator=g)).sum() for o in outs)
    return list(torch.autograd.grad(loss, [x for x in xs if x.requires_grad]))


def check(f_pk, f_ref, args, tol: float) -> None:
    got, want = f_pk(*args), f_ref(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        close(g, w, tol)
    for g, w in zip(grads_of(f_pk, args), grads_of(f_ref, args)):
        close(g, w, tol)


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def test_flash_attention_against_sdpa(gen) -> None:
    q = torch.randn(1, 4, 256, 128, generator=gen)
    k, v = (torch.randn(1, 2, 256, 128, generator=gen) for _ in range(2))

    def ref(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    check(lambda q, k, v: ops.flash_attention(q, k, v, causal=True, block_q=128, block_k=128), ref,
          [q, k, v], 1e-5)  # fmt: skip


def test_rms_norm_with_residual_against_torch(gen) -> None:
    x, r = (torch.randn(3, 40, 256, generator=gen) for _ in range(2))
    w = torch.randn(256, generator=gen)

    def ref(x, w, r):
        h = x + r
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * w, h

    check(lambda x, w, r: ops.rms_norm(x, w, residual=r), ref, [x, w, r], 1e-5)


def test_layer_norm_against_torch(gen) -> None:
    x = torch.randn(200, 384, generator=gen)
    w, b = torch.randn(384, generator=gen), torch.randn(384, generator=gen)
    check(ops.layer_norm, lambda x, w, b: F.layer_norm(x, (384,), w, b, eps=1e-5), [x, w, b], 1e-5)


def test_xent_against_cross_entropy_with_ignored_rows(gen) -> None:
    z = torch.randn(200, 1000, generator=gen) * 4
    labels = torch.randint(0, 1000, (200,), generator=gen)
    labels[::7] = -100  # ignored: zero loss and gradient, as torch's ignore_index

    def ref(z):
        return F.cross_entropy(z, labels, reduction="none", ignore_index=-100)

    check(lambda z: ops.xent(z, labels, block_rows=128, block_vocab=384), ref, [z], 1e-5)


def test_matmul_softmax_and_add_against_torch(gen) -> None:
    a = torch.randn(384, 256, generator=gen)
    b = torch.randn(256, 640, generator=gen)
    check(ops.matmul, torch.matmul, [a, b], 1e-5)
    x = torch.randn(2, 64, 256, generator=gen)
    check(ops.softmax, lambda x: torch.softmax(x, -1), [x], 1e-5)
    y = torch.randn(256, 1024, generator=gen)
    assert torch.equal(ops.add(y, y), y + y)


def test_gmm_against_a_loop_over_groups(gen) -> None:
    sizes = [100, 0, 200, 84]
    lhs = torch.rand(384, 128, generator=gen) * 2 - 1
    rhs = torch.rand(4, 128, 256, generator=gen) * 2 - 1
    group_sizes = torch.tensor(sizes, dtype=I32)

    def ref(lhs, rhs):
        starts = [0] + list(torch.tensor(sizes).cumsum(0))
        return torch.cat([lhs[starts[g] : starts[g + 1]] @ rhs[g] for g in range(len(sizes))])

    check(lambda lhs, rhs: ops.gmm(lhs, rhs, group_sizes), ref, [lhs, rhs], 1e-5)


def test_qmatmul_w8a8_against_the_integer_product(gen) -> None:
    x = torch.randint(-128, 128, (64, 512), generator=gen, dtype=I8)
    w = torch.randint(-128, 128, (512, 256), generator=gen, dtype=I8)
    xs = torch.rand(64, generator=gen) / 50 + 1e-3
    ws = torch.rand(256, generator=gen) / 50 + 1e-3
    got = ops.qmatmul_w8a8(x, xs, w, ws, out_dtype=F32)
    exact = (x.long() @ w.long()).double() * xs.double()[:, None] * ws.double()[None, :]
    close(got, exact.float(), 1e-6)


def test_torch_compile_runs_pk_forward_and_backward_ops(gen) -> None:
    """AOTAutograd traces the op with fake tensors into a forward graph
    holding `pk::flash_attention_fwd` and a backward graph holding
    `pk::flash_attention_bwd`; the compiled step matches eager."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    graphs: dict[str, list[str]] = {}

    def keep(kind):
        def compiler(gm, _):
            graphs[kind] = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
            return make_boxed_func(gm.forward)

        return compiler

    backend = aot_autograd(fw_compiler=keep("fw"), bw_compiler=keep("bw"))

    def step(q, k, v, w):
        o = ops.flash_attention(q, k, v, causal=True, block_q=128, block_k=128)
        y, _ = ops.rms_norm(o, w, residual=q)
        return y.sum()

    q, k, v = (torch.randn(1, 2, 256, 128, generator=gen) for _ in range(3))
    w = torch.randn(128, generator=gen)
    eager = grads_of(step, [q, k, v, w])
    compiled = grads_of(torch.compile(step, backend=backend, fullgraph=True), [q, k, v, w])
    for c, e in zip(compiled, eager):
        torch.testing.assert_close(c, e)
    assert "pk.flash_attention_fwd.default" in graphs["fw"], graphs["fw"]
    assert "pk.rms_norm_residual_fwd.default" in graphs["fw"], graphs["fw"]
    assert "pk.flash_attention_bwd.default" in graphs["bw"], graphs["bw"]
    assert "pk.rms_norm_residual_bwd.default" in graphs["bw"], graphs["bw"]


def test_forward_and_backward_modules_compile_for_tpu() -> None:
    """The modules TorchTPU registers for the library's flash attention:
    the forward, and the backward over the residuals the training forward
    returns (pk's dq and dkv kernels, no forward kernel)."""
    q, k, v = (m(1, 4, 512, 128, dtype=BF16),) + (m(1, 2, 512, 128, dtype=BF16),) * 2
    fwd = pk.torch.export(ops.flash_attention, q, k, v)
    assert fwd.mlir_module().count('kernel_name = "flash_attention"') == 1
    outs = torch.ops.pk.flash_attention_fwd(q, k, v)
    outputs_, residuals = outs[:1], outs[1:]
    assert [tuple(r.shape) for r in residuals] == [(1, 4, 512, 1)]  # the logsumexp only
    bwd_op = ops.REGISTERED["flash_attention"].backward
    bwd = pk.torch.export(bwd_op, q, k, v, outputs_, residuals, [outputs_[0]])
    text = bwd.mlir_module()
    assert text.count("stablehlo.custom_call @tpu_custom_call") == 2
    assert 'kernel_name = "flash_attention_bwd_dq"' in text
    assert 'kernel_name = "flash_attention_bwd_dkv"' in text
    for exported in (fwd, bwd):
        for r in pk.aot_compile(exported):
            assert r["generated_code_bytes"] > 0, r["target"]

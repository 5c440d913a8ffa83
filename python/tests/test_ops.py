"""pk.ops: every library kernel as a JAX function, its forward against a
jnp reference written here from the formulas (f32 at HIGHEST precision,
or float64 numpy), and its gradient (``jax.grad``) against the gradient
of that reference.

Tolerances: f32 kernels reorder sums (blocked matmuls, online softmax),
so values agree to about 1e-5 relative; bf16 storage rounds to 8 bits of
mantissa (relative 2^-8 = 0.4%), and a bf16 gradient passes through two or
three such roundings, hence 2e-2. Gradients are compared relative to the
largest element of the reference gradient."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import pk.ops

HI = jax.lax.Precision.HIGHEST
BF16 = ml_dtypes.bfloat16


def close(got, want, tol: float) -> None:
    """Agreement relative to the reference's largest magnitude."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape
    scale = max(np.abs(want).max(), 1e-30)
    err = np.abs(got - want).max() / scale
    assert err <= tol, f"max relative error {err:.3g} > {tol}"


def grads(f, args, argnums):
    """Gradients of a scalar loss `sum(f(*args) * weights)`, the weights
    fixed random numbers so that every output element matters."""
    out = jax.eval_shape(f, *args)
    outs = out if isinstance(out, tuple) else (out,)
    rng = np.random.default_rng(7)
    ws = [jnp.asarray(rng.standard_normal(o.shape), jnp.float32) for o in outs]

    def loss(*a):
        r = f(*a)
        r = r if isinstance(r, tuple) else (r,)
        return sum(jnp.sum(x.astype(jnp.float32) * w) for x, w in zip(r, ws))

    return jax.jit(jax.grad(loss, argnums=argnums))(*args)


def check_grads(f_pk, f_ref, args, argnums, tol):
    for g, w in zip(grads(f_pk, args, argnums), grads(f_ref, args, argnums)):
        close(g, w, tol)


def test_every_kernel_entry_is_an_op() -> None:
    import re

    entries = set()
    for path in pk.ops.kernels_dir().glob("*.pk"):
        entries |= set(re.findall(r"^kernel (\w+)", path.read_text(), re.M))
    # Backward and residual entries are reached through their forward op.
    covered = {
        "flash_attention_bwd_dq", "flash_attention_bwd_dkv", "splash_attention_bwd_dq",
        "splash_attention_bwd_dkv", "rms_norm_bwd", "layer_norm_bwd", "rms_norm_residual",
        "layer_norm_residual", "xent_bwd",
    }
    # Kernels still called through `pk.jax.kernel` (docs/python.md says
    # so); an entry added to kernels/ must be listed here or get an op.
    pending = {"linear"}
    assert sorted(entries - covered - pending - set(pk.ops.__all__)) == []
    assert sorted(pending & set(pk.ops.__all__)) == []


def test_add_and_its_gradient(rng) -> None:
    x = rng.standard_normal((256, 1024)).astype(np.float32)
    y = rng.standard_normal((256, 1024)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(jax.jit(pk.ops.add)(x, y)), x + y)
    check_grads(pk.ops.add, lambda a, b: a + b, (x, y), (0, 1), 0)


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_matmul_and_its_gradient(rng, dtype) -> None:
    a = rng.standard_normal((384, 256)).astype(dtype)
    b = rng.standard_normal((256, 640)).astype(dtype)
    want = a.astype(np.float64) @ b.astype(np.float64)
    close(jax.jit(pk.ops.matmul)(a, b), want, 1e-5)

    def ref(a, b):
        return jnp.dot(a, b, precision=HI, preferred_element_type=jnp.float32)

    check_grads(pk.ops.matmul, ref, (a, b), (0, 1), 1e-5 if dtype == np.float32 else 2e-2)


def test_matmul_explicit_blocks_accumulate_over_k(rng) -> None:
    a = rng.standard_normal((256, 512)).astype(np.float32)
    b = rng.standard_normal((512, 128)).astype(np.float32)
    got = pk.ops.matmul(a, b, bm=128, bn=128, bk=128)
    close(got, a.astype(np.float64) @ b, 1e-5)


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_softmax_flattens_leading_axes_and_differentiates(rng) -> None:
    x = rng.standard_normal((2, 64, 256)).astype(np.float32)
    close(jax.jit(pk.ops.softmax)(x), np_softmax(x.astype(np.float64)), 1e-6)
    check_grads(pk.ops.softmax, lambda x: jax.nn.softmax(x, axis=-1), (x,), (0,), 1e-5)


def ref_attention(q, k, v, *, causal, sm_scale, soft_cap=0.0, q_seg=None, kv_seg=None):
    """Dense attention in f32 at HIGHEST precision, `[B, H, S, D]` layout,
    k/v heads repeated for grouped-query attention."""
    f32 = jnp.float32
    q, k, v = (x.astype(f32) for x in (q, k, v))
    rep = q.shape[1] // k.shape[1]
    k = jnp.repeat(k, rep, axis=1)
    v = jnp.repeat(v, rep, axis=1)
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k, precision=HI) * sm_scale
    if soft_cap > 0:
        s = soft_cap * jnp.tanh(s / soft_cap)
    mask = jnp.ones(s.shape[-2:], bool)
    if causal:
        mask = jnp.tril(mask)
    mask = mask[None, None]
    if q_seg is not None:
        mask = mask & (q_seg[:, None, :, None] == kv_seg[:, None, None, :])
    s = jnp.where(mask, s, -jnp.inf)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v, precision=HI)


FLASH_CASES = [
    # (B, H, KH, S, D, causal, soft_cap, segments, dtype, blocks)
    (1, 2, 2, 256, 64, True, 0.0, False, np.float32, (128, 128)),
    (2, 4, 1, 256, 64, False, 0.0, False, np.float32, (128, 128)),  # multi-query
    (1, 4, 2, 256, 64, True, 20.0, True, np.float32, (64, 128)),  # GQA, cap, segments
    (1, 2, 2, 256, 128, True, 0.0, False, BF16, (None, None)),  # default blocks
]


@pytest.mark.parametrize("case", FLASH_CASES, ids=lambda c: f"{c[2]}kv-causal{c[5]}-cap{c[6]}-seg{c[7]}-{np.dtype(c[8]).name}")
def test_flash_attention_forward_and_gradients(rng, case) -> None:
    b, h, kh, s, d, causal, cap, segments, dtype, (bq, bk) = case
    q = (rng.standard_normal((b, h, s, d))).astype(dtype)
    k = (rng.standard_normal((b, kh, s, d))).astype(dtype)
    v = rng.standard_normal((b, kh, s, d)).astype(dtype)
    seg = None
    if segments:
        # Three segments of uneven length per batch row.
        seg = np.repeat(np.array([[0, 1, 2]], np.int32), [100, 60, 96], axis=1)
        seg = np.broadcast_to(seg, (b, s)).copy()
    scale = 1.0 / np.sqrt(d)
    kw = dict(causal=causal, soft_cap=cap)

    def f_pk(q, k, v):
        return pk.ops.flash_attention(
            q, k, v, q_segment_ids=seg, kv_segment_ids=seg, block_q=bq, block_k=bk, **kw
        )

    def f_ref(q, k, v):
        return ref_attention(q, k, v, sm_scale=scale, q_seg=seg, kv_seg=seg, **kw).astype(q.dtype)

    tol = 1e-5 if dtype == np.float32 else 2e-2
    close(jax.jit(f_pk)(q, k, v), f_ref(q, k, v), tol)
    check_grads(f_pk, f_ref, (q, k, v), (0, 1, 2), 1e-4 if dtype == np.float32 else 3e-2)


def test_flash_attention_needs_both_segment_ids(rng) -> None:
    q = np.zeros((1, 1, 128, 64), np.float32)
    with pytest.raises(ValueError, match="both"):
        pk.ops.flash_attention(q, q, q, q_segment_ids=np.zeros((1, 128), np.int32))


def test_attention_single_head(rng) -> None:
    q, k, v = (rng.standard_normal((256, 64)).astype(np.float32) for _ in range(3))
    s = (q.astype(np.float64) @ k.T) / 8.0
    close(jax.jit(pk.ops.attention)(q, k, v), np_softmax(s) @ v, 1e-5)

    def ref(q, k, v):
        return jax.nn.softmax(jnp.dot(q, k.T, precision=HI) / 8.0, axis=-1) @ v

    check_grads(pk.ops.attention, ref, (q, k, v), (0, 1, 2), 1e-4)


def ref_rms(x, w, eps):
    xf = x.astype(jnp.float32)
    return (xf * jax.lax.rsqrt(jnp.mean(xf * xf, -1, keepdims=True) + eps) * w.astype(jnp.float32)).astype(x.dtype)


def ref_ln(x, w, b, eps):
    xf = x.astype(jnp.float32)
    xc = xf - jnp.mean(xf, -1, keepdims=True)
    y = xc * jax.lax.rsqrt(jnp.mean(xc * xc, -1, keepdims=True) + eps)
    return (y * w.astype(jnp.float32) + b.astype(jnp.float32)).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_rms_norm_ragged_rows_and_gradient(rng, dtype) -> None:
    # 2 * 150 = 300 rows: a ragged last block of the default 128.
    x = rng.standard_normal((2, 150, 256)).astype(dtype)
    w = (1 + 0.1 * rng.standard_normal(256)).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 2e-2
    xd = x.astype(np.float64)
    want = xd / np.sqrt((xd * xd).mean(-1, keepdims=True) + 1e-6) * w.astype(np.float64)
    close(jax.jit(pk.ops.rms_norm)(x, w), want, tol)
    check_grads(pk.ops.rms_norm, lambda x, w: ref_rms(x, w, 1e-6), (x, w), (0, 1), 1e-4 if dtype == np.float32 else 3e-2)


def test_rms_norm_residual_returns_both_and_differentiates(rng) -> None:
    x = rng.standard_normal((200, 128)).astype(np.float32)
    r = rng.standard_normal((200, 128)).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(128)).astype(np.float32)

    def f_pk(x, r, w):
        return pk.ops.rms_norm(x, w, residual=r)

    def f_ref(x, r, w):
        h = x + r
        return ref_rms(h, w, 1e-6), h

    y, h = jax.jit(f_pk)(x, r, w)
    np.testing.assert_array_equal(np.asarray(h), x + r)
    close(y, f_ref(x, r, w)[0], 1e-5)
    check_grads(f_pk, f_ref, (x, r, w), (0, 1, 2), 1e-4)


def test_layer_norm_with_and_without_residual(rng) -> None:
    x = rng.standard_normal((300, 256)).astype(np.float32) * 3 + 1
    r = rng.standard_normal((300, 256)).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(256)).astype(np.float32)
    b = (0.1 * rng.standard_normal(256)).astype(np.float32)
    xd = x.astype(np.float64)
    xc = xd - xd.mean(-1, keepdims=True)
    want = xc / np.sqrt((xc * xc).mean(-1, keepdims=True) + 1e-5) * w + b
    close(jax.jit(pk.ops.layer_norm)(x, w, b), want, 1e-5)
    check_grads(pk.ops.layer_norm, lambda x, w, b: ref_ln(x, w, b, 1e-5), (x, w, b), (0, 1, 2), 1e-4)

    def f_pk(x, r, w, b):
        return pk.ops.layer_norm(x, w, b, residual=r)

    def f_ref(x, r, w, b):
        return ref_ln(x + r, w, b, 1e-5), x + r

    check_grads(f_pk, f_ref, (x, r, w, b), (0, 1, 2, 3), 1e-4)


def rope_tables(s, d):
    f = 1.0 / (10000 ** (np.arange(0, d, 2) / d))
    ang = np.arange(s)[:, None] * np.concatenate([f, f])[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def ref_rope(x, cos, sin):
    xf = x.astype(jnp.float32)
    half = x.shape[-1] // 2
    rot = jnp.concatenate([-xf[..., half:], xf[..., :half]], axis=-1)
    return (xf * cos + rot * sin).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_rope_and_its_gradient(rng, dtype) -> None:
    x = rng.standard_normal((2, 3, 320, 64)).astype(dtype)  # 320: ragged blocks of 256
    cos, sin = rope_tables(320, 64)
    tol = 1e-6 if dtype == np.float32 else 1e-2
    close(jax.jit(lambda x, c, s: pk.ops.rope(x, c, s, block_seq=256))(x, cos, sin), ref_rope(x, cos, sin), tol)
    check_grads(pk.ops.rope, ref_rope, (x, cos, sin), (0, 1, 2), 1e-5 if dtype == np.float32 else 2e-2)


def test_swiglu_geglu_and_gradients(rng) -> None:
    a = rng.standard_normal((256, 384)).astype(np.float32)
    b = rng.standard_normal((256, 384)).astype(np.float32)
    ad = a.astype(np.float64)
    close(jax.jit(pk.ops.swiglu)(a, b), ad / (1 + np.exp(-ad)) * b, 1e-6)
    tanh_gelu = 0.5 * ad * (1 + np.tanh(np.sqrt(2 / np.pi) * (ad + 0.044715 * ad**3)))
    close(jax.jit(pk.ops.geglu)(a, b), tanh_gelu * b, 1e-5)
    check_grads(pk.ops.swiglu, lambda a, b: jax.nn.silu(a) * b, (a, b), (0, 1), 1e-5)
    exact = lambda a, b: pk.ops.geglu(a, b, approximate=False)  # noqa: E731
    check_grads(exact, lambda a, b: jax.nn.gelu(a, approximate=False) * b, (a, b), (0, 1), 1e-5)


@pytest.mark.parametrize("activation", ["silu", "gelu"])
def test_gated_mlp_and_its_gradient(rng, activation) -> None:
    x = rng.standard_normal((128, 256)).astype(np.float32) / 4
    wg = rng.standard_normal((256, 256)).astype(np.float32) / 16
    wu = rng.standard_normal((256, 256)).astype(np.float32) / 16
    act = jax.nn.silu if activation == "silu" else jax.nn.gelu

    def f_ref(x, wg, wu):
        return act(jnp.dot(x, wg, precision=HI)) * jnp.dot(x, wu, precision=HI)

    def f_pk(x, wg, wu):
        return pk.ops.gated_mlp(x, wg, wu, activation=activation, bk=128)

    close(jax.jit(f_pk)(x, wg, wu), f_ref(x, wg, wu), 1e-5)
    check_grads(f_pk, f_ref, (x, wg, wu), (0, 1, 2), 1e-4)


def ref_xent(z, labels, soft_cap=0.0):
    z = z.astype(jnp.float32)
    if soft_cap > 0:
        z = soft_cap * jnp.tanh(z / soft_cap)
    lse = jax.nn.logsumexp(z, axis=-1)
    picked = jnp.take_along_axis(z, jnp.maximum(labels, 0)[:, None], axis=-1)[:, 0]
    return jnp.where(labels >= 0, lse - picked, 0.0)


@pytest.mark.parametrize("dtype,cap", [(np.float32, 0.0), (np.float32, 30.0), (BF16, 0.0)])
def test_xent_ragged_vocab_ignored_rows_and_gradient(rng, dtype, cap) -> None:
    n, v = 200, 1000  # ragged in both rows (bn 128) and vocabulary (bv 384)
    z = (rng.standard_normal((n, v)) * 4).astype(dtype)
    labels = rng.integers(0, v, n).astype(np.int32)
    labels[::7] = -100  # ignored rows

    def f_pk(z):
        return pk.ops.xent(z, labels, soft_cap=cap, block_rows=128, block_vocab=384)

    def f_ref(z):
        return ref_xent(z, labels, cap)

    got = np.asarray(jax.jit(f_pk)(z))
    assert (got[::7] == 0).all()
    close(got, f_ref(z), 1e-5 if dtype == np.float32 else 1e-2)
    check_grads(f_pk, f_ref, (z,), (0,), 1e-5 if dtype == np.float32 else 2e-2)
    # Ignored rows get zero gradient.
    g = np.asarray(jax.grad(lambda z: jnp.sum(f_pk(z)))(z), np.float32)
    assert (g[::7] == 0).all()


def test_ops_export_for_tpu() -> None:
    """The ops lower to the TPU custom call, forward and backward, on a
    machine without a TPU."""
    spec = jax.ShapeDtypeStruct((1, 2, 256, 128), jnp.bfloat16)

    def loss(q, k, v):
        return jnp.sum(pk.ops.flash_attention(q, k, v).astype(jnp.float32))

    lowered = jax.jit(jax.grad(loss, argnums=(0, 1, 2))).trace(spec, spec, spec).lower(
        lowering_platforms=("tpu",)
    )
    # The forward, dq and dkv kernels: three Mosaic custom calls.
    assert lowered.as_text().count("stablehlo.custom_call @tpu_custom_call") == 3


def test_ops_vmap_and_differentiate_under_vmap(rng) -> None:
    a = rng.standard_normal((3, 128, 256)).astype(np.float32)
    b = rng.standard_normal((3, 256, 128)).astype(np.float32)
    close(jax.jit(jax.vmap(pk.ops.matmul))(a, b), np.einsum("bmk,bkn->bmn", a.astype(np.float64), b), 1e-5)

    def f(mm):
        return lambda a, b: jax.vmap(mm)(a, b)

    ref = lambda a, b: jnp.dot(a, b, precision=HI)  # noqa: E731
    check_grads(f(pk.ops.matmul), f(ref), (a, b), (0, 1), 1e-5)


@pytest.mark.parametrize("sizes", [[20, 0, 28], [0, 48, 0], [16, 16, 16], [5, 3, 30]])
def test_gmm_metadata_matches_the_fixture_schedule(sizes) -> None:
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "tests"))
    from gen.gmm import schedule

    got = jax.jit(pk.ops.make_group_metadata, static_argnums=(1, 2))(np.array(sizes, np.int32), 48, 16)
    for g, w in zip(got, schedule(sizes, 48, 16)):
        np.testing.assert_array_equal(np.asarray(g), w)


@pytest.mark.parametrize("sizes", [[20, 0, 28], [16, 16, 10]])  # an empty group; rows past the groups
def test_gmm_values_and_gradients(rng, sizes) -> None:
    m, k, n = 48, 128, 128
    lhs = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    rhs = rng.uniform(-1, 1, (len(sizes), k, n)).astype(np.float32)
    gs = np.array(sizes, np.int32)
    off = np.concatenate([[0], np.cumsum(sizes)])
    want = np.zeros((m, n))
    for g in range(len(sizes)):
        want[off[g] : off[g + 1]] = lhs[off[g] : off[g + 1]].astype(np.float64) @ rhs[g]
    f_pk = jax.jit(lambda a, b, s: pk.ops.gmm(a, b, s, tm=16))
    close(f_pk(lhs, rhs, gs), want, 1e-5)

    def ref(a, b):
        rows = jnp.arange(m)[:, None]
        hot = (rows >= off[None, :-1]) & (rows < off[None, 1:])
        return jnp.einsum("mk,mg,gkn->mn", a, hot.astype(jnp.float32), b, precision=HI)

    check_grads(lambda a, b: pk.ops.gmm(a, b, gs, tm=16), ref, (lhs, rhs), (0, 1), 1e-5)


def group_loop(f, sizes):
    """`f(g, lo, hi)` for each group's row range, a loop over the groups
    with static offsets (no ragged_dot, no one-hot tricks)."""
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    return [f(g, off[g], off[g + 1]) for g in range(len(sizes))]


# Sizes with an empty group inside, empty groups at both ends and rows past
# the last group (48 rows).
@pytest.mark.parametrize("sizes", [[20, 0, 28], [0, 30, 0, 10]])
def test_tgmm_values_and_gradients(rng, sizes) -> None:
    m, k, n = 48, 64, 128
    lhs = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    rhs = rng.uniform(-1, 1, (m, n)).astype(np.float32)
    gs = np.array(sizes, np.int32)
    want = np.stack(group_loop(lambda g, lo, hi: lhs[lo:hi].astype(np.float64).T @ rhs[lo:hi], sizes))
    got = jax.jit(lambda a, b, s: pk.ops.tgmm(a, b, s, tm=16))(lhs, rhs, gs)
    assert got.shape == (len(sizes), k, n) and got.dtype == jnp.float32
    close(got, want, 1e-5)
    assert (np.asarray(got)[gs == 0] == 0).all()

    def ref(a, b):
        return jnp.stack(group_loop(lambda g, lo, hi: jnp.dot(a[lo:hi].T, b[lo:hi], precision=HI), sizes))

    check_grads(lambda a, b: pk.ops.tgmm(a, b, gs, tm=16), ref, (lhs, rhs), (0, 1), 1e-5)


def test_gmm_gradient_is_pk_kernels_only(rng) -> None:
    """gmm's backward is the gmm kernel on the weights read transposed
    and the tgmm kernel: the TPU lowering of its gradient holds those two
    custom calls (the forward's output is not needed, so no forward call)
    and no dot of XLA's; libtpu compiles it."""
    lhs = jax.ShapeDtypeStruct((64, 128), jnp.bfloat16)
    rhs = jax.ShapeDtypeStruct((4, 128, 256), jnp.bfloat16)
    sizes = jax.ShapeDtypeStruct((4,), jnp.int32)

    def loss(a, b, s):
        return jnp.sum(pk.ops.gmm(a, b, s, tm=16))

    lowered = jax.jit(jax.grad(loss, argnums=(0, 1))).trace(lhs, rhs, sizes).lower(
        lowering_platforms=("tpu",)
    )
    text = lowered.as_text()
    assert text.count("stablehlo.custom_call @tpu_custom_call") == 2
    assert text.count('kernel_name = "gmm"') == 1 and text.count('kernel_name = "tgmm"') == 1
    assert "stablehlo.dot_general" not in text
    assert pk.aot_compile(lowered, "v5e")["generated_code_bytes"] > 0


@pytest.mark.parametrize("sizes", [[0, 48, 0], [7, 9, 32]])
def test_gmm_bf16_gradients_against_a_group_loop(rng, sizes) -> None:
    m, k, n = 48, 128, 256
    lhs = rng.uniform(-1, 1, (m, k)).astype(BF16)
    rhs = rng.uniform(-1, 1, (len(sizes), k, n)).astype(BF16)
    gs = np.array(sizes, np.int32)

    def ref(a, b):
        rows = group_loop(lambda g, lo, hi: jnp.dot(a[lo:hi], b[g], precision=HI, preferred_element_type=jnp.float32), sizes)
        return jnp.concatenate(rows)

    check_grads(lambda a, b: pk.ops.gmm(a, b, gs, tm=16), ref, (lhs, rhs), (0, 1), 2e-2)


def dense_mask(kind, sq, skv, arg=None):
    """The `[sq, skv]` bool mask of a description, from its definition."""
    r = np.arange(sq)[:, None]
    c = np.arange(skv)[None, :]
    if kind == "causal":
        return c <= r
    if kind == "local":
        left, right = arg
        return (c >= r - left) & (c <= r + right)
    if kind == "full":
        return np.ones((sq, skv), bool)
    raise ValueError(kind)


def ref_masked_attention(q, k, v, mask, sm_scale, soft_cap=0.0):
    """Dense attention in f32 at HIGHEST precision under a `[S, SK]` mask,
    k/v heads repeated for grouped-query attention."""
    f32 = jnp.float32
    rep = q.shape[1] // k.shape[1]
    qf, kf, vf = q.astype(f32), jnp.repeat(k.astype(f32), rep, 1), jnp.repeat(v.astype(f32), rep, 1)
    s = jnp.einsum("bhqd,bhkd->bhqk", qf, kf, precision=HI) * sm_scale
    if soft_cap > 0:
        s = soft_cap * jnp.tanh(s / soft_cap)
    s = jnp.where(mask[None, None], s, -jnp.inf)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), vf, precision=HI).astype(q.dtype)


def random_mask(rng, sq, skv):
    """A dense mask with no pattern, each query seeing at least one key."""
    m = rng.random((sq, skv)) < 0.3
    m[np.arange(sq), rng.integers(0, skv, sq)] = True
    return m


SPLASH_CASES = [
    # (name, B, H, KH, S, SK, D, mask spec or "random", dense equivalent args, kwargs, dtype)
    ("causal-gqa", 1, 2, 1, 256, 256, 32, "causal", ("causal",), dict(block_q=64, block_kv=128), np.float32),
    ("local-shrunk", 1, 2, 2, 256, 256, 32, "local:48,16", ("local", (48, 16)),
     dict(block_q=32, block_kv=128, shrink=True), np.float32),
    ("full-sk-longer", 2, 2, 1, 64, 256, 32, "full", ("full",), dict(block_q=32), np.float32),
    ("random-dense", 1, 1, 1, 128, 256, 32, "random", None, dict(block_q=32, block_kv=128), np.float32),
    ("causal-softcap-bf16", 1, 2, 2, 256, 256, 64, "causal", ("causal",), dict(soft_cap=20.0), BF16),
]


@pytest.mark.parametrize("case", SPLASH_CASES, ids=lambda c: c[0])
def test_splash_attention_forward_and_gradients(rng, case) -> None:
    _, b, h, kh, s, sk, d, spec, dense_args, kw, dtype = case
    q = rng.standard_normal((b, h, s, d)).astype(dtype)
    k = rng.standard_normal((b, kh, sk, d)).astype(dtype)
    v = rng.standard_normal((b, kh, sk, d)).astype(dtype)
    if spec == "random":
        mask = spec = random_mask(rng, s, sk)
    else:
        mask = dense_mask(dense_args[0], s, sk, *dense_args[1:])
    scale = 1.0 / np.sqrt(d)

    def f_pk(q, k, v):
        return pk.ops.splash_attention(q, k, v, mask=spec, **kw)

    def f_ref(q, k, v):
        return ref_masked_attention(q, k, v, mask, scale, kw.get("soft_cap", 0.0))

    tol = 1e-5 if dtype == np.float32 else 2e-2
    close(jax.jit(f_pk)(q, k, v), f_ref(q, k, v), tol)
    check_grads(f_pk, f_ref, (q, k, v), (0, 1, 2), 1e-4 if dtype == np.float32 else 3e-2)


def test_splash_attention_bad_mask_is_a_coded_error() -> None:
    q = np.zeros((1, 1, 64, 32), np.float32)
    k = np.zeros((1, 1, 128, 32), np.float32)
    # Queries 0..63 see no key of a window that lies wholly to their right.
    with pytest.raises(pk.PkError) as e:
        pk.ops.splash_attention(q, k, k, mask=np.zeros((64, 128), bool))
    assert e.value.code == "PK5103"
    with pytest.raises(pk.PkError) as e:
        pk.ops.splash_attention(q, k, k, mask="window:3")
    assert e.value.code == "PK5101"


def test_splash_attention_exports_forward_and_backward_for_tpu() -> None:
    """The gradient lowers to the three splash kernels' custom calls, and
    libtpu compiles it."""
    spec = jax.ShapeDtypeStruct((1, 2, 256, 128), jnp.bfloat16)

    def loss(q, k, v):
        return jnp.sum(pk.ops.splash_attention(q, k, v, mask="local:128,0").astype(jnp.float32))

    lowered = jax.jit(jax.grad(loss, argnums=(0, 1, 2))).trace(spec, spec, spec).lower(
        lowering_platforms=("tpu",)
    )
    text = lowered.as_text()
    assert text.count("stablehlo.custom_call @tpu_custom_call") == 3
    for name in ("splash_attention", "splash_attention_bwd_dq", "splash_attention_bwd_dkv"):
        assert f'kernel_name = "{name}"' in text
    assert pk.aot_compile(lowered, "v5e")["generated_code_bytes"] > 0

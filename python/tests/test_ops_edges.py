"""pk.ops at its edges, as a JAX user meets them: labels past the
vocabulary, leading axes, wrong ranks and dtypes, group sizes past the
rows, inconsistent paged-attention metadata, blocks that only the
backward refuses, traced parameters, and the conversions an op defines
(longer and bf16 rope tables, a float32 residual stream, the grouped
matmul's output dtype). Every value is compared against jnp/numpy written
here from the formulas (or ``jax.lax.ragged_dot``), every refusal by its
``PK53xx`` code, which ``pkc explain`` must know."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import pk
import pk.jax
import pk.ops
from conftest import KERNELS, ROOT, pkc
from test_ops import HI, check_grads, close, grads, ref_attention, rope_tables, ref_rope
from test_ops_inference import cache

BF16 = ml_dtypes.bfloat16


def refused(code: str, exc: type = pk.PkError):
    """``pytest.raises`` for a pk error of ``code``."""
    return pytest.raises(exc, match=re.escape(f"error[{code}]"))


def run_fails(code: str):
    """A jitted call whose run-time check fails: JAX's runtime error,
    carrying pk's message."""
    return pytest.raises(Exception, match=re.escape(f"error[{code}]"))


# --- xent: labels past the vocabulary, ignore_index, leading axes -------


def optax_xent(z, labels):
    """optax's integer-label cross-entropy: ``logsumexp - take_along_axis``
    (a label past the vocabulary gathers NaN, jnp's fill)."""
    z = z.astype(jnp.float32)
    picked = jnp.take_along_axis(z, labels[..., None], axis=-1)[..., 0]
    return jax.nn.logsumexp(z, axis=-1) - picked


def test_xent_refuses_concrete_labels_past_the_vocabulary(rng) -> None:
    z = rng.standard_normal((4, 256)).astype(np.float32)
    with refused("PK5303", ValueError) as e:
        pk.ops.xent(z, np.array([1, 300, 2, 256], np.int32))
    assert e.value.code == "PK5303"
    msg = str(e.value)
    assert "labels[1] = 300 is past the vocabulary (V = 256" in msg and "2 labels are" in msg


def test_xent_traced_labels_past_the_vocabulary_give_nan_as_jnp(rng) -> None:
    z = (rng.standard_normal((16, 300)) * 3).astype(np.float32)
    labels = rng.integers(0, 300, 16).astype(np.int32)
    labels[[3, 9]] = [300, 1000]
    labels[5] = -1

    def f_pk(z, lab):
        return pk.ops.xent(z, lab, block_vocab=128)

    def f_ref(z, lab):
        # optax's formula, with rows of a negative label ignored.
        return jnp.where(lab < 0, 0.0, optax_xent(z, jnp.maximum(lab, 0)))

    got = np.asarray(jax.jit(f_pk)(z, labels))
    want = np.asarray(f_ref(z, labels))
    assert np.isnan(got[[3, 9]]).all() and np.isnan(want[[3, 9]]).all()
    ok = ~np.isnan(want)
    close(got[ok], want[ok], 1e-5)
    # The gradient of those rows is the logsumexp's, as jnp's derivative
    # (the labels are traced: `grads` jits the loss of both arguments).
    for g, w in zip(grads(f_pk, (z, labels), (0,)), grads(f_ref, (z, labels), (0,))):
        assert np.isfinite(np.asarray(g)).all()
        close(g, w, 1e-5)


def test_xent_checks_traced_labels_at_run_time() -> None:
    z = np.zeros((8, 128), np.float32)
    labels = np.array([0, 1, 2, 3, 4, 5, 6, 128], np.int32)
    f = jax.jit(lambda z, lab: pk.ops.xent(z, lab))
    with pk.ops.checks():
        with run_fails("PK5303"):
            jax.block_until_ready(f(z, labels))
        # Good labels pass through the check unchanged.
        good = labels.copy()
        good[7] = 127
        close(f(z, good), np.full(8, np.log(128.0)), 1e-6)


def test_xent_ignore_index_and_leading_axes(rng) -> None:
    b, s, v = 2, 24, 384
    z = (rng.standard_normal((b, s, v)) * 2).astype(np.float32)
    labels = rng.integers(0, v, (b, s)).astype(np.int32)
    labels[0, ::5] = 0  # the padding id
    labels[1, 3] = -100

    def f_pk(z):
        return pk.ops.xent(z, labels, ignore_index=0, block_rows=16)

    def f_ref(z):
        keep = (labels != 0) & (labels >= 0)
        return jnp.where(keep, optax_xent(z, jnp.where(keep, labels, 0)), 0.0)

    got = jax.jit(f_pk)(z)
    assert got.shape == (b, s) and got.dtype == jnp.float32
    close(got, f_ref(z), 1e-5)
    assert (np.asarray(got)[labels == 0] == 0).all()
    check_grads(f_pk, f_ref, (z,), (0,), 1e-5)
    with refused("PK5302", ValueError):
        pk.ops.xent(z, labels.reshape(-1))
    with refused("PK5301", TypeError):
        pk.ops.xent(z, labels.astype(np.float32))


# --- layouts and dtypes, in the caller's terms ---------------------------


def test_flash_and_splash_name_their_layout_for_a_rank_3_array() -> None:
    q3 = np.zeros((2, 128, 64), np.float32)
    for op in (pk.ops.flash_attention, pk.ops.splash_attention):
        with refused("PK5302", ValueError) as e:
            op(q3, q3, q3)
        assert "takes `q` as [B, H, S, D], a 4-D array, but it is 3-D with shape [2, 128, 64]" in str(e.value)
    q = np.zeros((1, 4, 128, 64), np.float32)
    k = np.zeros((1, 3, 128, 64), np.float32)
    with refused("PK5302") as e:
        pk.ops.flash_attention(q, k, k)
    assert "4 query heads" in str(e.value)
    with refused("PK5302") as e:
        pk.ops.flash_attention(q, q[..., :32], q[..., :32])
    assert "takes `k` as [B, KH, SK, D] with D = 64" in str(e.value)


F16 = np.float16


def _f16(*shape):
    return np.zeros(shape, F16)


FLOAT16_CALLS = {
    "rms_norm": lambda: pk.ops.rms_norm(_f16(8, 128), np.ones(128, np.float32)),
    "layer_norm": lambda: pk.ops.layer_norm(_f16(8, 128), np.ones(128), np.zeros(128)),
    "flash_attention": lambda: pk.ops.flash_attention(*(_f16(1, 1, 128, 64),) * 3),
    "splash_attention": lambda: pk.ops.splash_attention(*(_f16(1, 1, 128, 64),) * 3),
    "xent": lambda: pk.ops.xent(_f16(8, 128), np.zeros(8, np.int32)),
    "gmm": lambda: pk.ops.gmm(_f16(16, 128), _f16(2, 128, 128), np.array([8, 8], np.int32)),
    "matmul": lambda: pk.ops.matmul(_f16(128, 128), _f16(128, 128)),
    "rope": lambda: pk.ops.rope(_f16(1, 1, 16, 64), *rope_tables(16, 64)),
    "swiglu": lambda: pk.ops.swiglu(_f16(8, 128), _f16(8, 128)),
    "paged_attention": lambda: pk.ops.paged_attention(
        _f16(2, 2, 32), _f16(1, 4, 8, 32), _f16(1, 4, 8, 32), np.ones(2, np.int32), np.zeros((2, 2), np.int32)),
    "ragged_paged_attention": lambda: pk.ops.ragged_paged_attention(
        _f16(8, 2, 32), _f16(1, 4, 8, 32), _f16(1, 4, 8, 32), np.array([8], np.int32),
        np.zeros((1, 2), np.int32), np.array([0, 8], np.int32), np.array([1], np.int32)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(FLOAT16_CALLS))
def test_float16_is_refused_naming_the_dtypes_the_op_takes(name) -> None:
    with refused("PK5301", TypeError) as e:
        FLOAT16_CALLS[name]()
    msg = str(e.value)
    assert f"pk.ops.{name} takes `" in msg and "in float32 or bfloat16, not float16" in msg
    assert ".astype(jnp.bfloat16)" in msg and "-p T" not in msg


def test_f32_only_ops_say_so() -> None:
    with refused("PK5301", TypeError) as e:
        pk.ops.softmax(np.zeros((8, 128), BF16))
    assert "pk.ops.softmax takes `x` in float32, not bfloat16" in str(e.value)


# --- gmm: group sizes past the rows -------------------------------------


def test_gmm_refuses_concrete_sizes_past_m_in_the_callers_terms(rng) -> None:
    lhs = np.ones((32, 128), np.float32)
    rhs = np.ones((2, 128, 128), np.float32)
    with refused("PK5304", ValueError) as e:
        pk.ops.gmm(lhs, rhs, np.array([20, 20], np.int32))
    assert "the group sizes add up to 40, more than the 32 rows of `lhs` (M)" in str(e.value)
    with refused("PK5304") as e:
        pk.ops.tgmm(lhs, np.ones((32, 128), np.float32), np.array([40, -8], np.int32))
    assert "group_sizes[1] is -8" in str(e.value)


@pytest.mark.parametrize("sizes", [[20, 20], [0, 48, 7], [-3, 40]])
def test_gmm_traced_sizes_past_m_are_clipped_as_ragged_dot(rng, sizes) -> None:
    m, k, n = 32, 128, 128
    lhs = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    rhs = rng.uniform(-1, 1, (len(sizes), k, n)).astype(np.float32)
    gs = np.array(sizes, np.int32)
    got = jax.jit(lambda a, b, s: pk.ops.gmm(a, b, s, tm=16))(lhs, rhs, gs)
    # ragged_dot's rows past M do not exist; a negative size owns no row.
    want = jax.lax.ragged_dot(lhs, rhs, np.maximum(gs, 0), precision=HI)
    close(got, want, 1e-5)
    with pk.ops.checks(), run_fails("PK5304"):
        jax.block_until_ready(jax.jit(lambda a, b, s: pk.ops.gmm(a, b, s, tm=16))(lhs, rhs, gs))


def test_gmm_and_tgmm_take_the_output_dtype_as_ragged_dot(rng) -> None:
    m, k, n = 48, 128, 256
    sizes = np.array([7, 9, 32], np.int32)
    lhs = rng.uniform(-1, 1, (m, k)).astype(BF16)
    rhs = rng.uniform(-1, 1, (3, k, n)).astype(BF16)
    want = jax.lax.ragged_dot(lhs, rhs, sizes, preferred_element_type=jnp.float32)
    got = jax.jit(lambda a, b: pk.ops.gmm(a, b, sizes, tm=16))(lhs, rhs)
    assert got.dtype == jax.lax.ragged_dot(lhs, rhs, sizes).dtype == jnp.bfloat16
    close(got, want, 1e-2)
    got = pk.ops.gmm(lhs, rhs, sizes, tm=16, preferred_element_type=jnp.float32)
    assert got.dtype == jnp.float32
    close(got, want, 1e-5)
    # tgmm: per group lhs_g^T rhs_g, bf16 by default.
    r2 = rng.uniform(-1, 1, (m, n)).astype(BF16)
    off = np.concatenate([[0], np.cumsum(sizes)])
    want = np.stack([lhs[a:b].astype(np.float64).T @ r2[a:b].astype(np.float64) for a, b in zip(off, off[1:])])
    got = pk.ops.tgmm(lhs, r2, sizes, tm=16)
    assert got.dtype == jnp.bfloat16 and got.shape == (3, k, n)
    close(got, want, 1e-2)
    close(pk.ops.tgmm(lhs, r2, sizes, tm=16, preferred_element_type=jnp.float32), want, 1e-5)

    def ref(a, b):
        return jax.lax.ragged_dot(a, b, sizes, precision=HI, preferred_element_type=jnp.float32).astype(a.dtype)

    check_grads(lambda a, b: pk.ops.gmm(a, b, sizes, tm=16), ref, (lhs, rhs), (0, 1), 3e-2)
    with refused("PK5301", TypeError):
        pk.ops.gmm(lhs, rhs, sizes, preferred_element_type=jnp.int32)


# --- ragged paged attention: metadata validated as JAX does -------------


def _ragged(rng, seqs, pages_per_seq=3, tq=16):
    """q, caches and metadata for sequences ``(new tokens, all tokens)``."""
    h, kh, d, ps, pages = 2, 1, 32, 8, 12
    kv = [b for _, b in seqs]
    table, kp, vp = cache(rng, kh, pages, ps, d, [min(n, ps * pages_per_seq) for n in kv], pages_per_seq, np.float32)
    cu = np.concatenate([[0], np.cumsum([a for a, _ in seqs])]).astype(np.int32)
    q = rng.standard_normal((tq, h, d)).astype(np.float32)
    return q, kp, vp, np.array(kv, np.int32), table, cu, np.array([len(seqs)], np.int32)


RAGGED_BAD = {
    # (sequences, change to (kv, table, cu, n), expected words)
    "q_len>kv_len": ([(8, 4)], None, "sequence 0 has 8 new tokens (cu_q_lens[1] - cu_q_lens[0]) but only 4 tokens"),
    "num_seqs>S": ([(2, 4)], lambda a: (a[0], a[1], a[2], np.array([2], np.int32)), "num_seqs[0] is 2, but the tables"),
    "cu_q_lens past TQ": ([(2, 4), (3, 9)], lambda a: (a[0], a[1], np.array([0, 2, 17], np.int32), a[3]),
                          "cu_q_lens[2] = 17 new tokens in all, more than the 16 rows of q"),
    "cu_q_lens falls": ([(2, 4), (3, 9)], lambda a: (a[0], a[1], np.array([0, 5, 3], np.int32), a[3]),
                        "cu_q_lens falls from 5 to 3 at sequence 1"),
    "too few pages": ([(1, 30)], None, "30 tokens (kv_lens[0]), 4 pages of 8, but page_indices has 3"),
    "page outside": ([(1, 9)], lambda a: (a[0], np.where(np.arange(3) == 1, 12, a[1]).astype(np.int32), a[2], a[3]),
                     "page_indices[0, 1] is 12, outside the cache's 12 pages"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(RAGGED_BAD))
def test_ragged_paged_attention_validates_metadata_as_jax(rng, name) -> None:
    seqs, change, words = RAGGED_BAD[name]
    q, kp, vp, *meta = _ragged(rng, seqs)
    if change is not None:
        meta = list(change(meta))
    with refused("PK5305", ValueError) as e:
        pk.ops.ragged_paged_attention(q, kp, vp, *meta)
    assert words in str(e.value)
    # Traced, the same metadata is checked at run time under checks().
    f = jax.jit(pk.ops.ragged_paged_attention)
    with pk.ops.checks(), run_fails("PK5305"):
        jax.block_until_ready(f(q, kp, vp, *meta))


def test_ragged_paged_attention_checked_mode_passes_good_metadata(rng) -> None:
    q, kp, vp, *meta = _ragged(rng, [(3, 10), (5, 5), (1, 20)])
    f = jax.jit(pk.ops.ragged_paged_attention)
    want = f(q, kp, vp, *meta)
    with pk.ops.checks():
        got = jax.jit(lambda *a: pk.ops.ragged_paged_attention(*a, block_q=8))(q, kp, vp, *meta)
    close(got, np.asarray(want, np.float64), 1e-6)


def test_ragged_paged_attention_static_checks() -> None:
    q = np.zeros((8, 2, 32), np.float32)
    kp = np.zeros((1, 4, 8, 32), np.float32)
    meta = (np.array([8], np.int32), np.zeros((1, 2), np.int32), np.array([0, 8], np.int32), np.array([1], np.int32))
    with refused("PK5302") as e:
        pk.ops.ragged_paged_attention(q, kp, kp, np.array([8, 8], np.int32), *meta[1:])
    assert "takes `kv_lens` as [S] with S = 1" in str(e.value)
    with refused("PK5307") as e:
        pk.ops.ragged_paged_attention(q, kp, kp, *meta, sliding_window=0)
    assert "`sliding_window` is 0; it must be positive" in str(e.value)
    with refused("PK5307"):
        pk.ops.ragged_paged_attention(q, kp, kp, *meta, pages_per_compute_block=4)
    with refused("PK5307"):
        pk.ops.ragged_paged_attention(q, kp, kp, *meta, k_scale=0.5)


def test_paged_attention_checks_lengths_and_pages(rng) -> None:
    table, kp, vp = cache(rng, 1, 8, 8, 32, [10, 3], 2, np.float32)
    q = rng.standard_normal((2, 2, 32)).astype(np.float32)
    with refused("PK5305") as e:
        pk.ops.paged_attention(q, kp, vp, np.array([10, 17], np.int32), table)
    assert "sequence 1 has 17 tokens (lengths[1]), 3 pages of 8, but page_indices has 2" in str(e.value)
    bad = table.copy()
    bad[0, 1] = -1
    with refused("PK5305") as e:
        pk.ops.paged_attention(q, kp, vp, np.array([10, 3], np.int32), bad)
    assert "page_indices[0, 1] is -1, outside the cache's 8 pages" in str(e.value)
    with refused("PK5307", ValueError):
        pk.ops.paged_attention(q, kp, vp, np.array([10, 3], np.int32), table, k_scale=np.ones((1, 8, 1, 1), np.float32))


# --- a backward's constraint, found when the forward is traced ----------


def test_backward_block_constraint_is_reported_at_the_forward_in_the_callers_terms(rng) -> None:
    q = rng.standard_normal((1, 1, 200, 64)).astype(np.float32)
    f = lambda q: pk.ops.flash_attention(q, q, q, block_q=64)  # noqa: E731
    # The forward alone takes a ragged block.
    assert np.isfinite(np.asarray(jax.jit(f)(q))).all()
    # Differentiated, the backward kernels are built when the forward is
    # traced: jax.vjp fails, not the later call of its pullback.
    with pytest.raises(pk.PkError) as e:
        jax.vjp(f, q)
    assert e.value.code == "PK0224"
    msg = str(e.value)
    assert "the backward kernels need S % bq == 0" in msg
    assert "command line" not in msg and "-p " not in msg
    note = msg[msg.index("note:"):].replace("\n", " ")
    note = re.sub(r"\s+", " ", note)
    assert "taken from the arrays: S=200, SK=200" in note
    assert "from the call's keyword arguments: bq=64" in note
    assert "chosen from the shapes: bk=200" in note
    # Splash attention's backward needs divisors too; its forward does not.
    g = lambda q: pk.ops.splash_attention(q, q, q, block_q=64, block_kv=128)  # noqa: E731
    assert jax.jit(g)(q).shape == q.shape
    with pytest.raises(pk.PkError) as e:
        jax.vjp(g, q)
    assert e.value.code == "PK0224" and "command line" not in str(e.value)
    assert "from the call's keyword arguments: bq=64, bk=128" in re.sub(r"\s+", " ", str(e.value))


def test_pk_jax_kernel_names_its_own_origins() -> None:
    mm = pk.jax.kernel(KERNELS / "attention.pk", bk=96)
    x = np.zeros((256, 64), np.float32)
    with pytest.raises(pk.PkError) as e:
        mm(x, x, x)
    msg = re.sub(r"\s+", " ", str(e.value))
    assert e.value.code == "PK0224"
    assert "taken from the arrays: S=256; given to pk.jax.kernel: bk=96" in msg
    assert "command line" not in msg
    with pytest.raises(pk.PkError) as e:
        pk.compile(KERNELS / "attention.pk", S=256, bk=96)
    assert "given to pk.compile: S=256, bk=96" in re.sub(r"\s+", " ", str(e.value))


# --- conversions the ops define -----------------------------------------


@pytest.mark.parametrize("table_dtype", [np.float32, BF16, np.float64])
def test_rope_takes_longer_and_other_float_tables(rng, table_dtype) -> None:
    x = rng.standard_normal((1, 2, 40, 64)).astype(np.float32)
    cos, sin = (t.astype(table_dtype) for t in rope_tables(128, 64))  # built for 128 positions

    def ref(x, cos, sin):
        return ref_rope(x, cos[:40].astype(jnp.float32), sin[:40].astype(jnp.float32))

    close(jax.jit(pk.ops.rope)(x, cos, sin), ref(x, cos, sin), 1e-6)
    for g, w in zip(grads(pk.ops.rope, (x, cos, sin), (0, 1, 2)), grads(ref, (x, cos, sin), (0, 1, 2))):
        assert g.shape == w.shape and g.dtype == w.dtype
        close(g, w, 1e-5 if table_dtype != BF16 else 1e-2)
    with refused("PK5302") as e:
        pk.ops.rope(x, cos[:32], sin[:32])
    assert "with L >= S = 40" in str(e.value)


def test_rms_norm_promotes_a_bf16_x_with_an_f32_residual_as_jnp(rng) -> None:
    x = rng.standard_normal((64, 256)).astype(BF16)
    r = rng.standard_normal((64, 256)).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(256)).astype(np.float32)

    def ref(x, r, w):
        h = x + r  # jnp promotes: f32
        hf = h.astype(jnp.float32)
        y = hf * jax.lax.rsqrt(jnp.mean(hf * hf, -1, keepdims=True) + 1e-6) * w
        return y.astype(h.dtype), h

    y, h = jax.jit(lambda x, r, w: pk.ops.rms_norm(x, w, residual=r))(x, r, w)
    wy, wh = ref(x, r, w)
    assert y.dtype == h.dtype == wy.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(h), np.asarray(wh))
    close(y, wy, 1e-5)
    check_grads(lambda x, r, w: pk.ops.rms_norm(x, w, residual=r), ref, (x, r, w), (0, 1, 2), 1e-4)


def test_traced_sm_scale_scales_the_queries_and_differentiates(rng) -> None:
    q, k, v = (rng.standard_normal((1, 2, 128, 64)).astype(np.float32) for _ in range(3))

    def f_pk(q, k, v, scale):
        return pk.ops.flash_attention(q, k, v, causal=False, sm_scale=scale)

    def f_ref(q, k, v, scale):
        return ref_attention(q, k, v, causal=False, sm_scale=scale)

    scale = np.float32(0.3)
    close(jax.jit(f_pk)(q, k, v, scale), f_ref(q, k, v, scale), 1e-5)
    check_grads(f_pk, f_ref, (q, k, v, scale), (0, 1, 2, 3), 1e-4)
    # A constant scale stays in the kernel: the same numbers.
    close(f_pk(q, k, v, 0.3), f_ref(q, k, v, scale), 1e-5)


def test_traced_kernel_constants_are_refused_clearly() -> None:
    x = np.ones((8, 128), np.float32)
    with refused("PK5306", TypeError) as e:
        jax.jit(lambda x, eps: pk.ops.rms_norm(x, np.ones(128, np.float32), eps=eps))(x, 1e-6)
    assert "pk.ops.rms_norm compiles `eps` into the kernel" in str(e.value)
    q = np.ones((1, 1, 128, 64), np.float32)
    with refused("PK5306", TypeError):
        jax.jit(lambda q, c: pk.ops.flash_attention(q, q, q, soft_cap=c))(q, 30.0)


def test_flash_attention_documents_its_defaults_against_pallas() -> None:
    doc = pk.ops.flash_attention.__doc__
    assert "``causal=True``" in doc and "(Pallas: ``False``)" in doc and "(Pallas: ``1.0``)" in doc
    docs = (ROOT / "docs" / "python.md").read_text()
    assert "Pallas's `flash_attention` defaults" in docs and "jax.jvp" in docs


# --- the codes -----------------------------------------------------------


def test_every_ops_code_is_explained_and_tested() -> None:
    raised = set()
    for path in (ROOT / "python" / "pk" / "ops").glob("*.py"):
        raised |= set(re.findall(r'"(PK53\d\d)"', path.read_text()))
    tested = set(re.findall(r'"(PK53\d\d)"', (ROOT / "python" / "tests" / "test_ops_edges.py").read_text()))
    assert raised and raised <= tested
    for code in sorted(raised):
        out = pkc("explain", code).stdout
        assert out.startswith(code) and "What" in out and "Example" in out

"""pk.ops's inference kernels, forward only: paged and ragged paged
attention against a numpy float64 reference that gathers each sequence's
keys and values through its page table, and the quantized matmuls against
numpy's integer and float64 products. Page slots that hold no token are
NaN, so a kernel that reads one fails instead of passing by luck. Each
op's TPU lowering (the only path of fp8) is compiled with libtpu."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import pk
import pk.ops
from conftest import pkc

BF16 = ml_dtypes.bfloat16
F8 = ml_dtypes.float8_e4m3fn


def close(got, want, tol: float) -> None:
    """Agreement relative to the reference's largest magnitude."""
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    assert err <= tol, f"max relative error {err:.3g} > {tol}"


def cache(rng, kh, pages, page_size, d, kv_lens, pages_per_seq, dtype):
    """Random page tables (distinct pages per sequence, unused entries
    pointing anywhere) and key/value caches, NaN where no token lives."""
    need = [-(-n // page_size) for n in kv_lens]
    perm = rng.permutation(pages)
    table = rng.integers(0, pages, (len(kv_lens), pages_per_seq)).astype(np.int32)
    live = np.zeros((pages, page_size), bool)
    used = 0
    for s, n in enumerate(kv_lens):
        table[s, : need[s]] = perm[used : used + need[s]]
        used += need[s]
        for t in range(n):
            live[table[s, t // page_size], t % page_size] = True
    k, v = (rng.standard_normal((kh, pages, page_size, d)) for _ in range(2))
    k[:, ~live] = np.nan
    v[:, ~live] = np.nan
    return table, k.astype(dtype), v.astype(dtype)


def gather(pages, head, table_row, n, page_size):
    """Tokens `0..n` of one sequence, `[n, D]`, in float64."""
    t = np.arange(n)
    return pages[head, table_row[t // page_size], t % page_size].astype(np.float64)


def attend(q, k, v, scale, soft_cap, keep):
    """softmax over the kept keys of `scale * q k^T` (capped) times v, for
    `q [R, D]`, `k, v [N, D]`, `keep [R, N]`; rows keeping nothing are 0."""
    out = np.zeros((q.shape[0], v.shape[1]))
    for r in range(q.shape[0]):
        if keep[r].any():
            s = k[keep[r]] @ q[r] * scale
            if soft_cap > 0:
                s = soft_cap * np.tanh(s / soft_cap)
            e = np.exp(s - s.max())
            out[r] = e @ v[keep[r]] / e.sum()
    return out


PAGED_CASES = [
    # (name, dtype, H, KH, D, page_size, lengths, soft_cap, pages_per_compute_block)
    ("f32-gqa-zero-len-ppb2", np.float32, 4, 2, 32, 8, [13, 0, 32, 1], 0.0, 2),
    ("f32-mqa-default-blocks", np.float32, 4, 1, 32, 8, [25, 7, 0], 0.0, None),
    ("bf16-mha-softcap", BF16, 2, 2, 64, 16, [40, 0, 17], 5.0, None),
]


@pytest.mark.parametrize("case", PAGED_CASES, ids=lambda c: c[0])
def test_paged_attention_against_gathered_pages(rng, case) -> None:
    _, dtype, h, kh, d, ps, lengths, cap, ppb = case
    b, pages, pages_per_seq = len(lengths), 16, 4
    table, kp, vp = cache(rng, kh, pages, ps, d, lengths, pages_per_seq, dtype)
    q = rng.standard_normal((b, h, d)).astype(dtype)
    lens = np.array(lengths, np.int32)
    got = jax.jit(
        lambda *a: pk.ops.paged_attention(*a, soft_cap=cap, pages_per_compute_block=ppb)
    )(q, kp, vp, lens, table)
    assert got.shape == (b, h, d) and got.dtype == q.dtype
    want = np.zeros((b, h, d))
    for s in range(b):
        for hh in range(h):
            kv = hh // (h // kh)
            k = gather(kp, kv, table[s], lengths[s], ps)
            v = gather(vp, kv, table[s], lengths[s], ps)
            keep = np.ones((1, lengths[s]), bool)
            want[s, hh] = attend(q[s, hh][None].astype(np.float64), k, v, d**-0.5, cap, keep)[0]
    close(got, want, 1e-5 if dtype == np.float32 else 2e-2)
    assert (np.asarray(got)[lens == 0] == 0).all()


def test_paged_attention_int8_pages_with_token_scales(rng) -> None:
    h, kh, d, ps, pages, pages_per_seq = 4, 2, 32, 8, 12, 3
    lengths = [20, 0, 9]
    table, _, _ = cache(rng, kh, pages, ps, d, lengths, pages_per_seq, np.float32)
    kp, vp = (rng.integers(-127, 128, (kh, pages, ps, d)).astype(np.int8) for _ in range(2))
    ks, vs = (rng.uniform(0.004, 0.02, (kh, pages, 1, ps)).astype(np.float32) for _ in range(2))
    q = rng.standard_normal((len(lengths), h, d)).astype(np.float32)
    got = jax.jit(pk.ops.paged_attention)(q, kp, vp, np.array(lengths, np.int32), table,
                                          k_scale=ks, v_scale=vs)  # fmt: skip
    kf = kp.astype(np.float64) * ks[:, :, 0, :, None]
    vf = vp.astype(np.float64) * vs[:, :, 0, :, None]
    want = np.zeros(q.shape)
    for s, n in enumerate(lengths):
        for hh in range(h):
            k, v = (gather(a, hh // (h // kh), table[s], n, ps) for a in (kf, vf))
            want[s, hh] = attend(q[s, hh][None].astype(np.float64), k, v, d**-0.5, 0.0, np.ones((1, n), bool))[0]
    close(got, want, 1e-5)


# Sequences as (new query tokens, cached tokens including them): a decode
# step, a sequence with nothing new and nothing cached, a whole prefill,
# one with nothing new, and a prefill chunk after 12 cached tokens.
RAGGED_SEQS = [(1, 17), (0, 0), (12, 12), (0, 9), (8, 20)]


@pytest.mark.parametrize(
    "dtype,window,cap",
    [(np.float32, None, 0.0), (np.float32, 5, 0.0), (BF16, None, 3.0)],
    ids=["f32", "f32-window5", "bf16-softcap"],
)
def test_ragged_paged_attention_against_gathered_pages(rng, dtype, window, cap) -> None:
    h, kh, d, ps, pages, pages_per_seq = 4, 2, 32, 16, 12, 2
    seqs = RAGGED_SEQS
    q_lens = [a for a, _ in seqs]
    kv_lens = [b for _, b in seqs] + [0]  # the tables have room for one more
    tq = 32  # 21 tokens of sequences, then padding
    table, kp, vp = cache(rng, kh, pages, ps, d, kv_lens, pages_per_seq, dtype)
    cu = np.concatenate([[0], np.cumsum(q_lens + [0])]).astype(np.int32)
    q = rng.standard_normal((tq, h, d)).astype(dtype)
    num_seqs = np.array([len(seqs)], np.int32)

    def f(q, kp, vp, kv, table, cu, n):
        return pk.ops.ragged_paged_attention(q, kp, vp, kv, table, cu, n, sliding_window=window,
                                             soft_cap=cap, block_q=16)  # fmt: skip

    got = jax.jit(f)(q, kp, vp, np.array(kv_lens, np.int32), table, cu, num_seqs)
    assert got.shape == (tq, h, d) and got.dtype == q.dtype
    want = np.zeros((tq, h, d))
    for s, (ql, kl) in enumerate(seqs):
        pos = kl - ql + np.arange(ql)  # each new token's position
        keep = np.arange(kl)[None, :] <= pos[:, None]
        if window is not None:
            keep &= np.arange(kl)[None, :] > pos[:, None] - window
        for hh in range(h):
            k, v = (gather(a, hh // (h // kh), table[s], kl, ps) for a in (kp, vp))
            rows = q[cu[s] : cu[s + 1], hh].astype(np.float64)
            want[cu[s] : cu[s + 1], hh] = attend(rows, k, v, d**-0.5, cap, keep)
    close(got, want, 1e-5 if dtype == np.float32 else 2e-2)
    assert (np.asarray(got)[cu[len(seqs)] :] == 0).all()


def test_ragged_paged_attention_default_blocks_and_int8_pages(rng) -> None:
    h, kh, d, ps, pages, pages_per_seq = 2, 1, 32, 8, 12, 3
    seqs = [(3, 10), (5, 5), (1, 24)]
    table, _, _ = cache(rng, kh, pages, ps, d, [b for _, b in seqs], pages_per_seq, np.float32)
    kp, vp = (rng.integers(-127, 128, (kh, pages, ps, d)).astype(np.int8) for _ in range(2))
    cu = np.concatenate([[0], np.cumsum([a for a, _ in seqs])]).astype(np.int32)
    tq = int(cu[-1])  # 9 tokens, no padding
    q = rng.standard_normal((tq, h, d)).astype(np.float32)
    ks, vs = 0.015625, 0.0078125
    got = pk.ops.ragged_paged_attention(q, kp, vp, np.array([b for _, b in seqs], np.int32), table, cu,
                                        np.array([3], np.int32), k_scale=ks, v_scale=vs)  # fmt: skip
    want = np.zeros((tq, h, d))
    for s, (ql, kl) in enumerate(seqs):
        keep = np.arange(kl)[None, :] <= (kl - ql + np.arange(ql))[:, None]
        k = gather(kp, 0, table[s], kl, ps) * ks
        v = gather(vp, 0, table[s], kl, ps) * vs
        for hh in range(h):
            want[cu[s] : cu[s + 1], hh] = attend(q[cu[s] : cu[s + 1], hh].astype(np.float64), k, v, d**-0.5, 0.0, keep)
    close(got, want, 1e-5)


@pytest.mark.parametrize(
    "m,k,n,out,blocks",
    [(40, 256, 256, np.float32, dict(bm=32, bn=128, bk=128)), (64, 384, 128, BF16, {})],
    ids=["f32-ragged-m-blocks", "bf16-default-blocks"],
)
def test_qmatmul_w8a8_against_integer_product(rng, m, k, n, out, blocks) -> None:
    x = rng.integers(-128, 128, (m, k)).astype(np.int8)
    w = rng.integers(-128, 128, (k, n)).astype(np.int8)
    xs = rng.uniform(0.001, 0.02, m).astype(np.float32)
    ws = rng.uniform(0.001, 0.02, n).astype(np.float32)
    got = jax.jit(lambda *a: pk.ops.qmatmul_w8a8(*a, out_dtype=out, **blocks))(x, xs, w, ws)
    assert got.shape == (m, n) and got.dtype == out
    acc = x.astype(np.int64) @ w.astype(np.int64)  # exact
    want = acc * xs[:, None].astype(np.float64) * ws[None, :].astype(np.float64)
    close(got, want, 1e-6 if out == np.float32 else 8e-3)


def fp8_operands(rng, m, k, n, f8=F8):
    x = rng.uniform(-4, 4, (m, k)).astype(f8)
    w = rng.uniform(-4, 4, (k, n)).astype(f8)
    xs = rng.uniform(0.5, 2, (m, k // 128)).astype(np.float32)
    ws = rng.uniform(0.5, 2, (k // 128, n // 128)).astype(np.float32)
    return x, xs, w, ws


def fp8_reference(x, xs, w, ws):
    """numpy's block-by-block product of the exact fp8 values, float64."""
    m, k = x.shape
    n = w.shape[1]
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    want = np.zeros((m, n))
    for c in range(k // 128):
        for j in range(n // 128):
            ks, js = slice(c * 128, (c + 1) * 128), slice(j * 128, (j + 1) * 128)
            want[:, js] += (xd[:, ks] @ wd[ks, js]) * xs[:, c : c + 1] * ws[c, j]
    return want


@pytest.mark.parametrize("f8", [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2])
def test_qmatmul_fp8_block_scales_on_cpu(rng, f8) -> None:
    """fp8 storage on the CPU reference, against numpy on the exact values:
    the products are exact in f32, each 128-deep slice sums in f32 (1e-5)."""
    x, xs, w, ws = fp8_operands(rng, 40, 384, 256, f8)
    got = jax.jit(lambda *a: pk.ops.qmatmul_fp8(*a, out_dtype=jnp.float32, bk=128))(x, xs, w, ws)
    close(got, fp8_reference(x, xs, w, ws), 1e-5)


def test_qmatmul_fp8_with_bf16_storage_computes_the_same(rng) -> None:
    """bf16 holds every e4m3 value exactly: the same numbers with bf16
    storage give the same result."""
    x, xs, w, ws = fp8_operands(rng, 40, 384, 256)
    run = jax.jit(lambda *a: pk.ops.qmatmul_fp8(*a, out_dtype=jnp.float32, bk=128))
    got = run(x.astype(BF16), xs, w.astype(BF16), ws)
    close(got, fp8_reference(x, xs, w, ws), 1e-5)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(run(x, xs, w, ws)))


def test_qmatmul_fp8_lowers_and_compiles_for_tpu() -> None:
    args = (
        jax.ShapeDtypeStruct((256, 512), jnp.float8_e4m3fn),
        jax.ShapeDtypeStruct((256, 4), jnp.float32),
        jax.ShapeDtypeStruct((512, 256), jnp.float8_e4m3fn),
        jax.ShapeDtypeStruct((4, 2), jnp.float32),
    )
    lowered = jax.jit(pk.ops.qmatmul_fp8).trace(*args).lower(lowering_platforms=("tpu",))
    text = lowered.as_text()
    assert text.count("stablehlo.custom_call @tpu_custom_call") == 1
    assert 'kernel_name = "qmatmul_fp8"' in text
    assert "f8E4M3FN" in text
    # libtpu compiles it for the generations with fp8.
    for target in ("v5e", "v6e", "tpu7x"):
        assert pk.aot_compile(lowered, target)["generated_code_bytes"] > 0, target


def sds(shape, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype)


I32 = jnp.int32
LOWERINGS = {
    "paged_attention": (pk.ops.paged_attention, (
        sds((8, 32, 128), jnp.bfloat16), sds((8, 256, 16, 128), jnp.bfloat16),
        sds((8, 256, 16, 128), jnp.bfloat16), sds((8,), I32), sds((8, 32), I32))),
    "ragged_paged_attention": (pk.ops.ragged_paged_attention, (
        sds((128, 32, 128), jnp.bfloat16), sds((8, 256, 16, 128), jnp.bfloat16),
        sds((8, 256, 16, 128), jnp.bfloat16), sds((16,), I32), sds((16, 32), I32),
        sds((17,), I32), sds((1,), I32))),
    "qmatmul_w8a8": (pk.ops.qmatmul_w8a8, (
        sds((256, 1024), jnp.int8), sds((256,)), sds((1024, 512), jnp.int8), sds((512,)))),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(LOWERINGS))
def test_inference_ops_lower_and_compile_for_tpu(name) -> None:
    f, args = LOWERINGS[name]
    lowered = jax.jit(f).trace(*args).lower(lowering_platforms=("tpu",))
    text = lowered.as_text()
    assert text.count("stablehlo.custom_call @tpu_custom_call") == 1
    assert f'kernel_name = "{name}"' in text
    assert pk.aot_compile(lowered, "v5e")["generated_code_bytes"] > 0

"""``ragged_paged_attention``: kernels/ragged_paged_attention.pk,
attention for a batch that mixes prefill and decode over a paged
key/value cache, as vLLM serves models on TPU. Forward only (an inference
kernel); the sequence lengths, page table and sequence count are
scalar-prefetch operands, so they may be traced values."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from . import _base, _check

__all__ = ["ragged_paged_attention"]


#: Page dtypes: the queries' float dtype, or 8-bit ones with scales.
_PAGES = _check.FLOATS + ("int8", "float8_e4m3fn", "float8_e5m2")


def _metadata_problem(
    tq: int, pages: int, page_size: int, window: int | None,
    kv_lens: np.ndarray, page_indices: np.ndarray, cu_q_lens: np.ndarray, num_seqs: np.ndarray,
) -> str | None:  # fmt: skip
    """What is wrong with concrete sequence metadata, as JAX's
    ``dynamic_validate_inputs`` checks it, and the ranges the kernel's
    reads need besides (page indices inside the cache, ``cu_q_lens``
    rising)."""
    s, pages_per_seq = page_indices.shape
    n = int(num_seqs.reshape(-1)[0])
    if not 0 <= n <= s:
        return f"num_seqs[0] is {n}, but the tables (kv_lens, page_indices, cu_q_lens) hold S = {s} sequences"
    cu = cu_q_lens[: n + 1].astype(np.int64)
    if cu[0] < 0:
        return f"cu_q_lens[0] is {cu[0]}; the first sequence's tokens start at row 0 or later"
    for i in range(n):
        if cu[i + 1] < cu[i]:
            return f"cu_q_lens falls from {cu[i]} to {cu[i + 1]} at sequence {i}; it must not decrease"
    if cu[n] > tq:
        return f"cu_q_lens[{n}] = {cu[n]} new tokens in all, more than the {tq} rows of q"
    for i in range(n):
        q_len, kv_len = int(cu[i + 1] - cu[i]), int(kv_lens[i])
        if q_len > kv_len:
            return (
                f"sequence {i} has {q_len} new tokens (cu_q_lens[{i + 1}] - cu_q_lens[{i}]) "
                f"but only {kv_len} tokens in all (kv_lens[{i}]); its new tokens are its last ones"
            )
        need = -(-kv_len // page_size)
        if need > pages_per_seq:
            return (
                f"sequence {i} has {kv_len} tokens (kv_lens[{i}]), {need} pages of {page_size}, "
                f"but page_indices has {pages_per_seq} per sequence"
            )
        # The pages the sequence's new tokens see: all of its prefix, or
        # with a window the last `window` positions before each of them.
        first = 0 if window is None else max(0, kv_len - q_len - window + 1) // page_size
        row = page_indices[i, first:need]
        bad = np.flatnonzero((row < 0) | (row >= pages))
        if q_len and bad.size:
            j = first + int(bad[0])
            return f"page_indices[{i}, {j}] is {int(page_indices[i, j])}, outside the cache's {pages} pages"
    return None


def ragged_paged_attention(
    q: Any,
    k_pages: Any,
    v_pages: Any,
    kv_lens: Any,
    page_indices: Any,
    cu_q_lens: Any,
    num_seqs: Any,
    *,
    sm_scale: Any = None,
    sliding_window: int | None = None,
    soft_cap: float = 0.0,
    k_scale: float | None = None,
    v_scale: float | None = None,
    block_q: int | None = None,
    pages_per_compute_block: int | None = None,
) -> Any:
    """Attention for a batch that mixes prefill and decode, as JAX's
    ``ragged_paged_attention`` (with keys and values in two caches):
    ``q: T[TQ, H, D]`` (T float32 or bfloat16) packs the new tokens of
    every sequence, sequence ``s`` owning rows ``cu_q_lens[s]`` to
    ``cu_q_lens[s + 1]`` (``cu_q_lens: int32[S + 1]``), which are its last
    ones of ``kv_lens[s]`` (``kv_lens: int32[S]``); its cache position
    ``n`` is row ``n % page_size`` of page ``page_indices[s, n //
    page_size]`` of ``k_pages, v_pages: KV[KH, P, page_size, D]``
    (``H % KH == 0``). Only the first ``num_seqs[0]`` sequences
    (``num_seqs: int32[1]``) are read. Each token attends causally to its
    sequence's positions up to its own (the last ``sliding_window`` of
    them, with a window). Returns ``T[TQ, H, D]``; tokens of no sequence
    (past ``cu_q_lens[num_seqs]``) get zeros, and a sequence with no new
    tokens costs nothing.

    The metadata is validated as JAX's ``dynamic_validate_inputs`` does
    (``PK5305``): ``num_seqs[0] <= S``, ``cu_q_lens`` rising to at most
    TQ, no sequence with more new tokens than tokens, enough pages per
    sequence, and every page a sequence's tokens read inside the cache.
    Concrete metadata (an eager call) is checked before the call; traced
    metadata only under :func:`pk.ops.checks`, since the kernel trusts it
    (a sequence with more new tokens than tokens gets zeros, and page
    indices outside the cache read outside it on TPU).

    ``page_size`` is a multiple of 8 (16 for 16-bit pages). int8 or fp8
    pages need the per-tensor scales ``k_scale`` and ``v_scale`` (the key
    is ``k_pages * k_scale``). ``sm_scale`` defaults to ``1 / sqrt(D)``
    (JAX's defaults to 1.0); a traced scale multiplies ``q`` before the
    kernel. ``soft_cap > 0`` caps the scores. ``block_q`` query tokens (a
    multiple of the kernel's chunk, 8 tokens for f32 queries and 16 for
    bf16; default 32, or for a shorter batch ``TQ`` rounded down to whole
    chunks) and ``pages_per_compute_block`` pages (default up to 8) make
    one step.
    """
    op = "ragged_paged_attention"
    q = _check.dtype(op, "q", q)
    _check.layout(op, "q", q, "[TQ, H, D]")
    tq, h, d = q.shape
    k_pages, v_pages = _check.pages(op, q, k_pages, v_pages, _PAGES)
    kh, pages, page_size, _ = k_pages.shape
    kv_lens = _check.integers(op, "kv_lens", kv_lens)
    page_indices = _check.integers(op, "page_indices", page_indices)
    _check.layout(op, "page_indices", page_indices, "[S, pages_per_seq]")
    s, pages_per_seq = page_indices.shape
    _check.layout(op, "kv_lens", kv_lens, "[S]", (s,))
    cu_q_lens = _check.integers(op, "cu_q_lens", cu_q_lens)
    _check.layout(op, "cu_q_lens", cu_q_lens, "[S + 1]", (s + 1,))
    num_seqs = _check.integers(op, "num_seqs", num_seqs).reshape(-1)
    _check.layout(op, "num_seqs", num_seqs, "[1]", (1,))
    window = _check.positive(op, "sliding_window", sliding_window)
    scales = (None, None)
    if _check.pair(op, "k_scale", k_scale, "v_scale", v_scale):
        scales = (_check.static(op, "k_scale", k_scale), _check.static(op, "v_scale", v_scale))
    ppb = _check.positive(op, "pages_per_compute_block", pages_per_compute_block)
    if ppb is not None and ppb > pages_per_seq:
        raise _check.error(
            "PK5307",
            f"pk.ops.{op}: `pages_per_compute_block` is {ppb}, "
            f"more than the {pages_per_seq} pages per sequence",
            f"pass at most {pages_per_seq}",
        )
    block_q = _check.positive(op, "block_q", block_q)

    def problem(*tables: np.ndarray) -> str | None:
        return _metadata_problem(tq, pages, page_size, window, *tables)

    kv_lens, page_indices, cu_q_lens, num_seqs = _check.values(
        op,
        "PK5305",
        "fix the metadata: each sequence's new tokens are the last of its kv_lens, in pages it lists",
        problem,
        kv_lens,
        page_indices,
        cu_q_lens,
        num_seqs,
    )
    q, scale, scale_given = _check.scaled_queries(op, q, sm_scale)
    # The kernel's `bc = 8 * packing(T)`: whole sublane tiles of q.
    chunk = 8 * (4 // jnp.dtype(q.dtype).itemsize)
    k = _base.kernel(
        "ragged_paged_attention.pk",
        keywords=("soft_cap", "window", "k_scale", "v_scale")
        + ("bq",) * (block_q is not None)
        + ("ppb",) * (ppb is not None)
        + ("sm_scale",) * scale_given,
        S=s,
        H=h,
        pages_per_seq=pages_per_seq,
        bq=block_q or (32 if tq >= 32 else max(chunk, tq - tq % chunk)),
        ppb=ppb or min(8, pages_per_seq),
        sm_scale=scale,
        soft_cap=_check.soft_cap(op, soft_cap),
        window=window,
        k_scale=scales[0],
        v_scale=scales[1],
    )
    o = k(cu_q_lens, kv_lens, page_indices, num_seqs, q.reshape(tq, kh, h // kh, d), k_pages, v_pages)
    return o.reshape(tq, h, d)

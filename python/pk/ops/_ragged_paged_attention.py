"""``ragged_paged_attention``: kernels/ragged_paged_attention.pk,
attention for a batch that mixes prefill and decode over a paged
key/value cache, as vLLM serves models on TPU. Forward only (an inference
kernel); the sequence lengths, page table and sequence count are
scalar-prefetch operands, so they may be traced values."""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp

from . import _base

__all__ = ["ragged_paged_attention"]


def ragged_paged_attention(
    q: Any,
    k_pages: Any,
    v_pages: Any,
    kv_lens: Any,
    page_indices: Any,
    cu_q_lens: Any,
    num_seqs: Any,
    *,
    sm_scale: float | None = None,
    sliding_window: int | None = None,
    soft_cap: float = 0.0,
    k_scale: float | None = None,
    v_scale: float | None = None,
    block_q: int | None = None,
    pages_per_compute_block: int | None = None,
) -> Any:
    """Attention for a batch that mixes prefill and decode, as JAX's
    ``ragged_paged_attention`` (with keys and values in two caches):
    ``q: T[TQ, H, D]`` (T f32 or bf16) packs the new tokens of every
    sequence, sequence ``s`` owning rows ``cu_q_lens[s]`` to
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

    ``page_size`` is a multiple of 8 (16 for 16-bit pages). int8 or fp8
    pages need the per-tensor scales ``k_scale`` and ``v_scale`` (the key
    is ``k_pages * k_scale``). ``sm_scale`` defaults to ``1 / sqrt(D)``;
    ``soft_cap > 0`` caps the scores. ``block_q`` query tokens (a multiple
    of the kernel's chunk, 8 tokens for f32 queries and 16 for bf16;
    default 32, or for a shorter batch ``TQ`` rounded down to whole chunks)
    and ``pages_per_compute_block`` pages (default up to 8) make one step.
    """
    tq, h, d = q.shape
    kh = k_pages.shape[0]
    s, pages_per_seq = page_indices.shape
    # The kernel's `bc = 8 * packing(T)`: whole sublane tiles of q.
    chunk = 8 * (4 // jnp.dtype(q.dtype).itemsize)
    k = _base.kernel(
        "ragged_paged_attention.pk",
        S=s,
        H=h,
        pages_per_seq=pages_per_seq,
        bq=block_q or (32 if tq >= 32 else max(chunk, tq - tq % chunk)),
        ppb=pages_per_compute_block or min(8, pages_per_seq),
        sm_scale=float(sm_scale if sm_scale is not None else 1.0 / math.sqrt(d)),
        soft_cap=float(soft_cap),
        window=sliding_window,
        k_scale=None if k_scale is None else float(k_scale),
        v_scale=None if v_scale is None else float(v_scale),
    )
    o = k(
        jnp.asarray(cu_q_lens, jnp.int32),
        jnp.asarray(kv_lens, jnp.int32),
        jnp.asarray(page_indices, jnp.int32),
        jnp.asarray(num_seqs, jnp.int32).reshape(1),
        q.reshape(tq, kh, h // kh, d),
        k_pages,
        v_pages,
    )
    return o.reshape(tq, h, d)

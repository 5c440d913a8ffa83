"""``paged_attention``: kernels/paged_attention.pk, decode attention of one
new token per sequence over a key/value cache kept in pages, in the
layouts of JAX's Pallas TPU ``paged_attention``. Forward only (an
inference kernel); the lengths and page table are scalar-prefetch
operands, so they may be traced values."""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp

from . import _base

__all__ = ["paged_attention"]


def paged_attention(
    q: Any,
    k_pages: Any,
    v_pages: Any,
    lengths: Any,
    page_indices: Any,
    *,
    k_scale: Any = None,
    v_scale: Any = None,
    sm_scale: float | None = None,
    soft_cap: float = 0.0,
    pages_per_compute_block: int | None = None,
) -> Any:
    """Decode attention of one new token per sequence over a paged cache,
    in the layouts of JAX's Pallas TPU ``paged_attention``: ``q: T[B, H,
    D]`` (T f32 or bf16), ``k_pages, v_pages: KV[KH, P, page_size, D]``
    with ``H % KH == 0`` (grouped-query attention), ``lengths: int32[B]``
    (tokens of each sequence) and ``page_indices: int32[B,
    pages_per_seq]`` (sequence ``b``'s token ``n`` is row ``n %
    page_size`` of page ``page_indices[b, n // page_size]``). Returns
    ``T[B, H, D]``; a zero-length sequence gets zeros.

    ``page_size`` is a multiple of 8 (16 for 16-bit pages). int8 pages
    (``KV = int8``) take f32 scales ``k_scale, v_scale: [KH, P, 1,
    page_size]`` (one per token) or ``[KH, P, 1, 1]`` (one per page):
    the key is ``k_pages * k_scale``. ``sm_scale`` defaults to ``1 /
    sqrt(D)`` (Pallas's kernel takes the queries pre-scaled: pass
    ``sm_scale=1.0`` for its numbers); ``soft_cap > 0`` caps the scores.
    ``pages_per_compute_block`` (default up to 8) pages are copied and
    scored at a time.
    """
    b, h, d = q.shape
    kh, _, page_size, _ = k_pages.shape
    pages_per_seq = page_indices.shape[1]
    quant = k_scale is not None
    if quant != (v_scale is not None):
        raise ValueError("give both k_scale and v_scale, or neither")
    scales = (k_scale, v_scale) if quant else ()
    per_page = quant and k_scale.shape[-1] == 1
    k = _base.kernel(
        "paged_attention.pk",
        H=h,
        pages_per_seq=pages_per_seq,
        ppb=pages_per_compute_block or min(8, pages_per_seq),
        sm_scale=float(sm_scale if sm_scale is not None else 1.0 / math.sqrt(d)),
        soft_cap=float(soft_cap),
        QUANT=quant,
        per_page=per_page,
    )
    o = k(
        jnp.asarray(lengths, jnp.int32),
        jnp.asarray(page_indices, jnp.int32),
        q.reshape(b, kh, h // kh, d),
        k_pages,
        v_pages,
        *scales,
    )
    return o.reshape(b, h, d)

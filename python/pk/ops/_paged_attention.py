"""``paged_attention``: kernels/paged_attention.pk, decode attention of one
new token per sequence over a key/value cache kept in pages, in the
layouts of JAX's Pallas TPU ``paged_attention``. Forward only (an
inference kernel); the lengths and page table are scalar-prefetch
operands, so they may be traced values."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _base, _check

__all__ = ["paged_attention"]


def _tables_problem(pages: int, page_size: int, lengths: np.ndarray, page_indices: np.ndarray) -> str | None:
    """What is wrong with concrete lengths and page table: a length that
    is negative or needs more pages than a row of the table has, or a page
    a sequence's tokens are in that lies outside the cache."""
    pages_per_seq = page_indices.shape[1]
    for b, n in enumerate(int(x) for x in lengths):
        if n < 0:
            return f"lengths[{b}] is {n}; a sequence has 0 tokens or more"
        need = -(-n // page_size)
        if need > pages_per_seq:
            return (
                f"sequence {b} has {n} tokens (lengths[{b}]), {need} pages of {page_size}, "
                f"but page_indices has {pages_per_seq} per sequence"
            )
        row = page_indices[b, :need]
        bad = np.flatnonzero((row < 0) | (row >= pages))
        if bad.size:
            j = int(bad[0])
            return f"page_indices[{b}, {j}] is {int(row[j])}, outside the cache's {pages} pages"
    return None


def paged_attention(
    q: Any,
    k_pages: Any,
    v_pages: Any,
    lengths: Any,
    page_indices: Any,
    *,
    k_scale: Any = None,
    v_scale: Any = None,
    sm_scale: Any = None,
    soft_cap: float = 0.0,
    pages_per_compute_block: int | None = None,
) -> Any:
    """Decode attention of one new token per sequence over a paged cache,
    in the layouts of JAX's Pallas TPU ``paged_attention``: ``q: T[B, H,
    D]`` (T float32 or bfloat16), ``k_pages, v_pages: KV[KH, P, page_size,
    D]`` with ``H % KH == 0`` (grouped-query attention), ``lengths:
    int32[B]`` (tokens of each sequence) and ``page_indices: int32[B,
    pages_per_seq]`` (sequence ``b``'s token ``n`` is row ``n %
    page_size`` of page ``page_indices[b, n // page_size]``). Returns
    ``T[B, H, D]``; a zero-length sequence gets zeros.

    Concrete lengths and page tables are checked before the call
    (``PK5305``: a negative length, more tokens than a row of the table
    has pages for, a page of a sequence's tokens outside the cache);
    traced ones under :func:`pk.ops.checks`.

    ``page_size`` is a multiple of 8 (16 for 16-bit pages). int8 pages
    (``KV = int8``) take f32 scales ``k_scale, v_scale: [KH, P, 1,
    page_size]`` (one per token) or ``[KH, P, 1, 1]`` (one per page):
    the key is ``k_pages * k_scale``. ``sm_scale`` defaults to ``1 /
    sqrt(D)`` (Pallas's kernel takes the queries pre-scaled: pass
    ``sm_scale=1.0`` for its numbers; a traced scale multiplies ``q``
    before the kernel); ``soft_cap > 0`` caps the scores.
    ``pages_per_compute_block`` (default up to 8) pages are copied and
    scored at a time.
    """
    op = "paged_attention"
    q = _check.dtype(op, "q", q)
    _check.layout(op, "q", q, "[B, H, D]")
    b, h, d = q.shape
    k_pages, v_pages = _check.pages(op, q, k_pages, v_pages, _check.FLOATS + ("int8",))
    kh, pages, page_size, _ = k_pages.shape
    quant = _check.pair(op, "k_scale", k_scale, "v_scale", v_scale)
    scales: tuple[Any, ...] = ()
    if quant:
        f32 = ("float32",)
        scales = (_check.dtype(op, "k_scale", k_scale, f32), _check.dtype(op, "v_scale", v_scale, f32))
    per_page = quant and scales[0].shape[-1] == 1
    lengths = _check.integers(op, "lengths", lengths)
    _check.layout(op, "lengths", lengths, "[B]", (b,))
    page_indices = _check.integers(op, "page_indices", page_indices)
    _check.layout(op, "page_indices", page_indices, "[B, pages_per_seq]", (b, None))
    pages_per_seq = page_indices.shape[1]
    ppb = _check.positive(op, "pages_per_compute_block", pages_per_compute_block)
    lengths, page_indices = _check.values(
        op, "PK5305", "fix the tables: sequence b's tokens fill the pages its row of page_indices lists",
        lambda n, t: _tables_problem(pages, page_size, n, t), lengths, page_indices,
    )
    q, scale, scale_given = _check.scaled_queries(op, q, sm_scale)
    k = _base.kernel(
        "paged_attention.pk",
        keywords=("soft_cap",) + ("ppb",) * (ppb is not None) + ("sm_scale",) * scale_given,
        H=h,
        pages_per_seq=pages_per_seq,
        ppb=ppb or min(8, pages_per_seq),
        sm_scale=scale,
        soft_cap=_check.soft_cap(op, soft_cap),
        QUANT=quant,
        per_page=per_page,
    )
    o = k(lengths, page_indices, q.reshape(b, kh, h // kh, d), k_pages, v_pages, *scales)
    return o.reshape(b, h, d)

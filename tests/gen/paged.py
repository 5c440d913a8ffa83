"""Fixtures of kernels/paged_attention.pk and kernels/ragged_paged_attention.pk
against a float64 numpy reference: each sequence's keys and values gathered
from the page cache through its page table, then plain softmax attention
(causal within a sequence for the ragged kernel).

Every page slot that holds no token of a sequence (the tail of a partial
last page, and the pages no sequence uses) is filled with NaN (with a NaN
scale for int8 pages), so a kernel that lets such a slot reach a result
fails the case instead of passing by luck."""

import ml_dtypes
import numpy as np

from .common import as_dtype, case, f64, rng

FP8 = {"f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}


def page_tables(g, lengths, page_size, pages_per_seq, total_pages):
    """Distinct random pages for each sequence's tokens; table entries past
    a sequence's last page are valid page numbers that hold no token of it."""
    need = [-(-n // page_size) for n in lengths]
    assert max(need) <= pages_per_seq and sum(need) <= total_pages
    perm = g.permutation(total_pages)
    table = g.integers(0, total_pages, (len(lengths), pages_per_seq)).astype(np.int32)
    used = 0
    for b, n in enumerate(need):
        table[b, :n] = perm[used:used + n]
        used += n
    return table


def fill_cache(g, kv_dtype, kh, total_pages, page_size, d, table, lengths, per_page):
    """Random pages (and f32 scales for int8 pages), NaN wherever no token
    lives. Returns (pages as stored, scales or None, pages as float64 values
    the kernel reads)."""
    live = np.zeros((total_pages, page_size), dtype=bool)
    for b, n in enumerate(lengths):
        for t in range(n):
            live[table[b, t // page_size], t % page_size] = True
    if kv_dtype == "i8":
        pages = g.integers(-127, 128, (kh, total_pages, page_size, d)).astype(np.int8)
        # Scales are a row per page, `[KH, P, 1, page_size]` (or
        # `[KH, P, 1, 1]` per page).
        lanes = 1 if per_page else page_size
        scale = g.uniform(0.004, 0.02, (kh, total_pages, 1, lanes)).astype(np.float32)
        rows = scale[:, :, 0, :]
        if per_page:
            rows[:, ~live.any(axis=1)] = np.nan
        else:
            rows[:, ~live] = np.nan
        values = f64(pages) * f64(rows)[..., None]
        return pages, scale, values
    pages = as_dtype(g.normal(0.0, 1.0, (kh, total_pages, page_size, d)), kv_dtype)
    pages[:, ~live] = np.nan
    return pages, None, f64(pages)


def attend(q, k, v, sm_scale, soft_cap, keep):
    """softmax(sm_scale * q k^T, capped, where `keep`) v for one head group:
    q [R, D], k and v [N, D], keep [R, N]; rows that keep nothing are 0."""
    s = q @ k.T * sm_scale
    if soft_cap > 0:
        s = soft_cap * np.tanh(s / soft_cap)
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=1, keepdims=True)
    e = np.where(keep, np.exp(s - np.where(np.isfinite(m), m, 0.0)), 0.0)
    l = e.sum(axis=1, keepdims=True)
    out = (e @ np.where(keep.any(axis=0)[:, None], v, 0.0)) / np.where(l > 0, l, 1.0)
    return out


def gather(values, head, table_row, n, page_size):
    """The first `n` tokens of one sequence, `[n, D]`, from its pages."""
    idx = np.arange(n)
    return values[head, table_row[idx // page_size], idx % page_size]


def paged_case(name, dtype, kv_dtype, b, h, kh, d, page_size, pages_per_seq, total_pages, ppb,
               lengths, soft_cap=0.0, sm_scale=None, per_page=False):
    g = rng(name)
    quant = kv_dtype == "i8"
    sm_scale = 1.0 / np.sqrt(d) if sm_scale is None else sm_scale
    grp = h // kh
    table = page_tables(g, lengths, page_size, pages_per_seq, total_pages)
    k_pages, k_scale, kf = fill_cache(g, kv_dtype, kh, total_pages, page_size, d, table, lengths,
                                      per_page)
    v_pages, v_scale, vf = fill_cache(g, kv_dtype, kh, total_pages, page_size, d, table, lengths,
                                      per_page)
    q = as_dtype(g.normal(0.0, 1.0, (b, kh, grp, d)), dtype)
    o = np.zeros((b, kh, grp, d))
    for s, n in enumerate(lengths):
        for hh in range(kh):
            if n == 0:
                continue  # A zero-length sequence attends to nothing: zeros.
            k = gather(kf, hh, table[s], n, page_size)
            v = gather(vf, hh, table[s], n, page_size)
            o[s, hh] = attend(f64(q[s, hh]), k, v, sm_scale, soft_cap, np.ones((grp, n), bool))
    params = {
        "B": b, "H": h, "KH": kh, "D": d, "P": total_pages, "page_size": page_size,
        "pages_per_seq": pages_per_seq, "ppb": ppb, "sm_scale": repr(float(sm_scale)),
        "soft_cap": soft_cap, "QUANT": str(quant).lower(), "per_page": str(per_page).lower(),
        "T": dtype, "KV": kv_dtype,
    }
    inputs = {"lengths": np.array(lengths, np.int32), "page_indices": table, "q": q,
              "k_pages": k_pages, "v_pages": v_pages}
    if quant:
        inputs.update(k_scale=k_scale, v_scale=v_scale)
    if dtype == "f32" and kv_dtype != "bf16":
        # f32 scores over D terms (int8 values times an f32 scale are exact
        # to 1 ulp), f32 exps and sums over at most a few hundred keys: a
        # few ulps of the largest term, 1e-5 relative; o averages values of
        # size ~1 (~0.5 for int8 times scale), so atol 1e-5 covers outputs
        # that cancel toward zero.
        t = {"rtol": 1e-5, "atol": 1e-5}
    else:
        # bf16 pages: as Pallas does, the probabilities are rounded to bf16
        # for the second matmul (2^-9 relative per term, at most ~8e-3 for
        # |v| up to ~4 and far less on average); a bf16 output adds 2^-9.
        t = {"rtol": 8e-3, "atol": 8e-3}
    return case(name, "kernels/paged_attention.pk", None, params, inputs,
                {"o": as_dtype(o, dtype)}, t)


def cases():
    return [
        # A zero-length sequence, a partial last page (37 = 4 * 8 + 5) in a
        # partial last block (5 pages are 2 + 2 + 1), exactly one page;
        # grouped-query heads (4 query heads per key/value head).
        paged_case("paged_f32_gqa_h8kh2_ps8_ppb2_zero_len", "f32", "f32", 4, 8, 2, 32, 8, 5, 12, 2,
                   [37, 0, 8, 17]),
        # bf16 pages and queries, multi-head, soft cap that bites (scores of
        # size ~2.5 against a cap of 2).
        paged_case("paged_bf16_mha_softcap_ps16", "bf16", "bf16", 2, 2, 2, 64, 16, 4, 6, 2,
                   [50, 1], soft_cap=2.0, sm_scale=0.3),
        # int8 pages with one scale per token, multi-query, f32 queries.
        paged_case("paged_int8_token_scales_mqa_f32", "f32", "i8", 3, 4, 1, 32, 8, 3, 12, 2,
                   [20, 0, 9]),
        # int8 pages with one scale per page, bf16 queries and output.
        paged_case("paged_int8_page_scales_bf16", "bf16", "i8", 2, 2, 2, 32, 8, 5, 12, 4,
                   [33, 16], per_page=True),
    ]


def ragged_case(name, dtype, kv_dtype, h, kh, d, page_size, pages_per_seq, total_pages, bq, ppb,
                max_seqs, tq, q_lens, kv_lens, window=None, soft_cap=0.0, sm_scale=None,
                k_scale=None, v_scale=None):
    """Sequences packed in `q` one after another; the tables have room for
    `max_seqs`, of which `len(q_lens)` are used; query rows past the last
    sequence are NaN and their expected output is zero."""
    g = rng(name)
    sm_scale = 1.0 / np.sqrt(d) if sm_scale is None else sm_scale
    grp = h // kh
    n = len(q_lens)
    assert all(ql <= kl for ql, kl in zip(q_lens, kv_lens)) and sum(q_lens) <= tq
    cu = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    cu_q_lens = np.full(max_seqs + 1, cu[-1], np.int32)
    cu_q_lens[:n + 1] = cu
    lens = np.zeros(max_seqs, np.int32)
    lens[:n] = kv_lens
    table = page_tables(g, list(lens), page_size, pages_per_seq, total_pages)
    if kv_dtype == "i8":
        k_pages = g.integers(-127, 128, (kh, total_pages, page_size, d)).astype(np.int8)
        v_pages = g.integers(-127, 128, (kh, total_pages, page_size, d)).astype(np.int8)
        kf, vf = f64(k_pages) * k_scale, f64(v_pages) * v_scale
    elif kv_dtype in FP8:
        k_pages = g.normal(0.0, 1.0, (kh, total_pages, page_size, d)).astype(FP8[kv_dtype])
        v_pages = g.normal(0.0, 1.0, (kh, total_pages, page_size, d)).astype(FP8[kv_dtype])
        kf, vf = f64(k_pages) * k_scale, f64(v_pages) * v_scale
    else:
        k_pages, _, kf = fill_cache(g, kv_dtype, kh, total_pages, page_size, d, table, lens, False)
        v_pages, _, vf = fill_cache(g, kv_dtype, kh, total_pages, page_size, d, table, lens, False)
    q = as_dtype(g.normal(0.0, 1.0, (tq, kh, grp, d)), dtype)
    q[cu[-1]:] = np.nan
    o = np.zeros((tq, kh, grp, d))
    for s in range(n):
        ql, kl = q_lens[s], kv_lens[s]
        if ql == 0:
            continue
        qpos = kl - ql + np.arange(ql)[:, None]
        kpos = np.arange(kl)[None, :]
        keep = kpos <= qpos
        if window is not None:
            keep &= kpos > qpos - window
        for hh in range(kh):
            k = gather(kf, hh, table[s], kl, page_size)
            v = gather(vf, hh, table[s], kl, page_size)
            for gg in range(grp):
                o[cu[s]:cu[s + 1], hh, gg] = attend(f64(q[cu[s]:cu[s + 1], hh, gg]), k, v,
                                                    sm_scale, soft_cap, keep)
    params = {
        "TQ": tq, "S": max_seqs, "H": h, "KH": kh, "D": d, "P": total_pages,
        "page_size": page_size, "pages_per_seq": pages_per_seq, "bq": bq, "ppb": ppb,
        "sm_scale": repr(float(sm_scale)), "soft_cap": soft_cap,
        "window": "none" if window is None else window,
        "k_scale": "none" if k_scale is None else repr(k_scale),
        "v_scale": "none" if v_scale is None else repr(v_scale),
        "T": dtype, "KV": kv_dtype,
    }
    inputs = {"cu_q_lens": cu_q_lens, "kv_lens": lens, "page_indices": table,
              "num_seqs": np.array([n], np.int32), "q": q, "k_pages": k_pages,
              "v_pages": v_pages}
    if dtype == "f32" and kv_dtype != "bf16":
        # As the f32 paged cases: f32 scores and sums over at most ~40 keys
        # (int8 values times a power-of-two scale are exact): 1e-5.
        t = {"rtol": 1e-5, "atol": 1e-5}
    else:
        # bf16 as the paged cases: probabilities rounded to bf16 for the
        # second matmul and a bf16 output, 8e-3.
        t = {"rtol": 8e-3, "atol": 8e-3}
    return case(name, "kernels/ragged_paged_attention.pk", None, params, inputs,
                {"o": as_dtype(o, dtype)}, t)


def ragged_cases():
    return [
        # A prefill chunk (5 tokens of 21), a decode token, an empty
        # sequence, a whole prefill (12 of 12) spanning two query blocks of
        # 16 (two chunks of 8 each); 18 tokens in 20 rows (a ragged last
        # block) and unused table rows (4 of 6 sequences); grouped-query
        # heads (2 per kv head).
        ragged_case("ragged_f32_mixed_gqa_tq20_bq16", "f32", "f32", 4, 2, 32, 8, 3, 12, 16, 2, 6, 20,
                    [5, 1, 0, 12], [21, 9, 0, 12]),
        # bf16, multi-query, a sliding window of 8 and a soft cap that bites.
        ragged_case("ragged_bf16_mqa_window8_softcap", "bf16", "bf16", 2, 1, 64, 16, 3, 10, 16, 1,
                    3, 32, [3, 20, 1], [40, 20, 33], window=8, soft_cap=2.0, sm_scale=0.3),
        # int8 pages with per-tensor scales (powers of two, so that the f32
        # products are exact), decode and prefill, f32 queries; every table
        # row used (num_seqs = S), and a last query block with no token.
        ragged_case("ragged_int8_scaled_f32_full_tables", "f32", "i8", 2, 2, 32, 8, 4, 12, 16, 2, 3, 40,
                    [1, 1, 9], [17, 3, 30], k_scale=0.015625, v_scale=0.0078125),
        # fp8 pages (both formats) with power-of-two scales, as the int8 case.
        ragged_case("ragged_fp8_e4m3_scaled_f32", "f32", "f8e4m3fn", 2, 2, 32, 8, 4, 12, 16, 2, 3,
                    40, [1, 4, 9], [17, 4, 30], k_scale=0.5, v_scale=0.25),
        ragged_case("ragged_fp8_e5m2_scaled_f32_window", "f32", "f8e5m2", 4, 2, 32, 8, 4, 12, 16, 2,
                    3, 40, [2, 1, 9], [20, 3, 30], window=6, k_scale=0.25, v_scale=0.5),
    ]


def jax_ragged_case(name, h, kh, page_size, pages_per_seq, total_pages, bq, ppb, max_seqs, q_lens,
                    kv_lens):
    """bench/ragged_paged_attention_jax.pk (JAX's algorithm, bf16, D = 128):
    the cache is `[P, page_size * 2 KH, D]`, row `t * 2 KH + 2 h` key head
    `h` of token `t` of the page and the row after it its value head. The
    batch fills every query row (the kernel leaves rows past the last token
    unwritten, as JAX's does)."""
    g = rng(name)
    d = 128
    sm_scale = 1.0 / np.sqrt(d)
    grp = h // kh
    n = len(q_lens)
    tq = sum(q_lens)
    assert all(ql <= kl for ql, kl in zip(q_lens, kv_lens)) and tq % bq == 0
    cu = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    cu_q_lens = np.full(max_seqs + 1, cu[-1], np.int32)
    cu_q_lens[:n + 1] = cu
    lens = np.zeros(max_seqs, np.int32)
    lens[:n] = kv_lens
    table = page_tables(g, list(lens), page_size, pages_per_seq, total_pages)
    k_pages, _, kf = fill_cache(g, "bf16", kh, total_pages, page_size, d, table, lens, False)
    v_pages, _, vf = fill_cache(g, "bf16", kh, total_pages, page_size, d, table, lens, False)
    # [KH, P, page_size, D] twice -> [P, page_size, 2 KH, D] -> merged.
    kv = np.stack([k_pages, v_pages], axis=1).reshape(2 * kh, total_pages, page_size, d)
    kv = kv.transpose(1, 2, 0, 3).reshape(total_pages, page_size * 2 * kh, d)
    q = as_dtype(g.normal(0.0, 1.0, (tq, h, d)), "bf16")
    o = np.zeros((tq, h, d))
    for s in range(n):
        ql, kl = q_lens[s], kv_lens[s]
        if ql == 0:
            continue
        qpos = kl - ql + np.arange(ql)[:, None]
        keep = np.arange(kl)[None, :] <= qpos
        for hh in range(kh):
            k = gather(kf, hh, table[s], kl, page_size)
            v = gather(vf, hh, table[s], kl, page_size)
            for gg in range(grp):
                o[cu[s]:cu[s + 1], hh * grp + gg] = attend(
                    f64(q[cu[s]:cu[s + 1], hh * grp + gg]), k, v, sm_scale, 0.0, keep)
    params = {
        "TQ": tq, "S": max_seqs, "H": h, "KH": kh, "D": d, "P": total_pages,
        "page_size": page_size, "pages_per_seq": pages_per_seq, "bq": bq, "ppb": ppb,
        "sm_scale": repr(float(sm_scale)), "T": "bf16",
    }
    inputs = {"kv_lens": lens, "page_indices": table, "cu_q_lens": cu_q_lens,
              "num_seqs": np.array([n], np.int32), "q": q, "kv_pages": kv}
    # f32 probabilities times bf16 values in f32 (JAX's promotion), a bf16
    # output: 2^-9 relative from the output's rounding, and the scores of
    # bf16 operands summed in f32; the library's bf16 tolerance covers it.
    return case(name, "bench/ragged_paged_attention_jax.pk", None, params, inputs,
                {"o": as_dtype(o, "bf16")}, {"rtol": 8e-3, "atol": 8e-3})


def jax_ragged_cases():
    return [
        # Grouped heads (2 per kv head), key blocks of 2 pages: a prefill
        # chunk (5 of 21), a decode token, a prefill of 12 of 40 that spans
        # the two query blocks of 16 (the next step's first key block is
        # copied during this step), a whole prefill of 14; a partial last
        # page and a block past a sequence's last page; an unused table row.
        jax_ragged_case("jax_ragged_bf16_gqa_ppb2_bq16", 4, 2, 16, 4, 16, 16, 2, 5,
                        [5, 1, 12, 14], [21, 9, 40, 14]),
        # One kv head (its words read without a stride), one page a block,
        # query blocks of 8: a decode token of 33, a whole prefill of 7
        # ending a block, 8 tokens of 20 filling the last block.
        jax_ragged_case("jax_ragged_bf16_mqa_ppb1_bq8", 2, 1, 16, 3, 10, 8, 1, 3,
                        [1, 7, 8], [33, 7, 20]),
    ]

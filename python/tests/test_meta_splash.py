"""`pk.meta.splash_mask_info`: the same arrays as the numpy construction of
tests/gen/splash.py (block-level any/all of the dense mask), usable as the
splash attention kernels' prefetch operands, and coded errors."""

from __future__ import annotations

import numpy as np
import pytest

import pk
from conftest import KERNELS, ROOT

META = ROOT / "tests" / "data" / "splash_meta"

CONFIGS = [
    ("causal_s256_bq32_bk128", "causal", dict(sq=256, bq=32, bkv=128)),
    ("local_l40_r8_s200_sk300_bq32_bk128", "local:40,8", dict(sq=200, skv=300, bq=32, bkv=128)),
    ("chunked_c48_s256_bq64_bk128", "chunked:48", dict(sq=256, bq=64, bkv=128)),
    ("full_s100_sk130_bq32_bk128", "full", dict(sq=100, skv=130, bq=32, bkv=128)),
    ("dense_s96_sk256_bq32_bk128", None, dict(bq=32, bkv=128)),
    ("local_l40_r8_s256_sk300_bq32_bk128_shrunk", "local:40,8",
     dict(sq=256, skv=300, bq=32, bkv=128, shrink=True)),
]


@pytest.mark.parametrize("name,spec,sizes", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_mask_info_equals_the_numpy_construction(name: str, spec: str | None, sizes: dict) -> None:
    mask = spec if spec is not None else np.load(META / name / "mask.npy")
    got = pk.meta.splash_mask_info(mask, **sizes)
    files = sorted(p.stem for p in (META / name).glob("*.npy") if p.stem != "mask")
    assert sorted(got) == files
    for n, a in got.items():
        want = np.load(META / name / f"{n}.npy")
        assert a.dtype == want.dtype and a.shape == want.shape, n
        assert np.array_equal(a, want), n


def test_sliding_window_forward_matches_dense_float64_attention() -> None:
    s, d, h, kh, bq, bk = 256, 32, 2, 1, 32, 128
    info = pk.meta.splash_mask_info("local:48,0", sq=s, bq=bq, bkv=bk)
    rng = np.random.default_rng(7)
    q = rng.normal(size=(1, h, s, d)).astype(np.float32)
    k = rng.normal(size=(1, kh, s, d)).astype(np.float32)
    v = rng.normal(size=(1, kh, s, d)).astype(np.float32)
    scale = 1.0 / np.sqrt(d)
    kern = pk.compile(
        KERNELS / "splash.pk", kernel="splash_attention", B=1, H=h, KH=kh, S=s, SK=s, D=d,
        bq=bq, bk=bk, NP=info["mask_blocks"].shape[0], sm_scale=repr(float(scale)), T="f32",
    )
    o, lse = pk.run(kern, info["data_next"], info["mask_next"], info["block_mask"], q, k, v,
                    info["mask_blocks"])
    # Row r sees keys r - 48 .. r: a dense float64 reference.
    r, c = np.arange(s)[:, None], np.arange(s)[None, :]
    keep = (c <= r) & (c >= r - 48)
    sc = np.einsum("bhqd,bkd->bhqk", q.astype(np.float64), k[:, 0].astype(np.float64)) * scale
    sc = np.where(keep, sc, -np.inf)
    m = sc.max(-1, keepdims=True)
    e = np.exp(sc - m)
    want = np.einsum("bhqk,bkd->bhqd", e / e.sum(-1, keepdims=True), v[:, 0].astype(np.float64))
    # f32 scores and exps over D and up to 49 keys: a few ulps, 1e-5.
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lse, m + np.log(e.sum(-1, keepdims=True)), rtol=1e-5, atol=1e-5)
    # Of the 8 x 2 blocks of [32, 128], rows 0..127 never reach keys 128..255
    # (4 blocks) and rows 192..255 never reach keys 0..127 (2 blocks).
    assert int((info["block_mask"] == 0).sum()) == 6


@pytest.mark.parametrize(
    "mask,sizes,code",
    [
        ("window:3", dict(sq=8), "PK5101"),
        ("causal", dict(), "PK5102"),
        ("causal", dict(sq=0), "PK5102"),
        ("local:0,0", dict(sq=8, skv=4), "PK5103"),
        (np.zeros((4, 4), np.float32), dict(), "PK5104"),
        (np.ones((4, 4), bool), dict(sq=4, skv=8), "PK5102"),
    ],
)
def test_bad_masks_raise_coded_errors(mask: object, sizes: dict, code: str) -> None:
    with pytest.raises(pk.PkError) as e:
        pk.meta.splash_mask_info(mask, bq=2, bkv=2, **sizes)
    assert e.value.code == code

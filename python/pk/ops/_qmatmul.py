"""``qmatmul_w8a8`` and ``qmatmul_fp8``: kernels/qmatmul.pk, matmuls of
quantized operands whose scales are applied to the f32/i32 sums, never to
the operands. Both are forward only (inference kernels: integer and fp8
operands have no gradient)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from . import _base, _check

__all__ = ["qmatmul_fp8", "qmatmul_w8a8"]


def _blocks(op: str, m: int, n: int, k: int, bm: int | None, bn: int | None, bk: int | None,
            preferred: tuple[int, int, int]) -> dict[str, Any]:  # fmt: skip
    # Rows use `cdiv` in both kernels (a ragged last block is masked);
    # columns and the contraction must divide. 8-bit tiles are 32 rows.
    given = _check.blocks(op, bm=bm, bn=bn, bk=bk)
    return dict(
        bm=given["bm"] or _base.block(m, preferred[0], divides=False, align=32),
        bn=given["bn"] or _base.block(n, preferred[1], align=128),
        bk=given["bk"] or _base.block(k, preferred[2], align=128),
        keywords=("O",) + tuple(p for p, v in given.items() if v is not None),
    )


def _out_dtype(op: str, out_dtype: Any) -> Any:
    d = jnp.dtype(out_dtype)
    if d.name not in _check.FLOATS:
        raise _check.error(
            "PK5301", f"pk.ops.{op} stores its result in float32 or bfloat16, not {d.name} (out_dtype)",
            "pass out_dtype=jnp.bfloat16 or jnp.float32", type_error=True,
        )
    return d


def _operands(op: str, x: Any, w: Any, accepted: tuple[str, ...]) -> tuple[Any, Any]:
    x, w = _check.dtype(op, "x", x, accepted), _check.dtype(op, "w", w, accepted)
    _check.same_dtype(op, {"x": x, "w": w})
    _check.layout(op, "x", x, "[M, K]")
    _check.layout(op, "w", w, "[K, N]", (x.shape[1], None))
    return x, w


def qmatmul_w8a8(
    x: Any,
    x_scale: Any,
    w: Any,
    w_scale: Any,
    *,
    out_dtype: Any = jnp.bfloat16,
    bm: int | None = None,
    bn: int | None = None,
    bk: int | None = None,
) -> Any:
    """``out[r, c] = x_scale[r] * w_scale[c] * sum_k x[r, k] w[k, c]`` for
    int8 activations ``x: [M, K]`` with one f32 scale per row (``x_scale:
    [M]`` or ``[M, 1]``) and int8 weights ``w: [K, N]`` with one f32 scale
    per output channel (``w_scale: [N]`` or ``[1, N]``), as vLLM's TPU
    ``quantized_matmul``. The products sum exactly in int32; the result is
    ``out_dtype`` (bf16 or f32) ``[M, N]``. Blocks default to the largest
    aligned sizes up to (256, 512, 1024) that the grid allows (``M`` may be
    ragged; ``bn`` and ``bk`` divide ``N`` and ``K``). int8 matmuls need
    v5e, v5p or v6e (``PK0305`` for v4 and TPU7x). Forward only."""
    op = "qmatmul_w8a8"
    x, w = _operands(op, x, w, ("int8",))
    m, k = x.shape
    n = w.shape[1]
    blocks = _blocks(op, m, n, k, bm, bn, bk, (256, 512, 1024))
    kern = _base.kernel("qmatmul.pk", "qmatmul_w8a8", O=_out_dtype(op, out_dtype), **blocks)
    x_scale, w_scale = _check.floating(op, "x_scale", x_scale), _check.floating(op, "w_scale", w_scale)
    if x_scale.size != m or w_scale.size != n:
        raise _check.error(
            "PK5302", f"pk.ops.{op} takes `x_scale` as [M] = [{m}] and `w_scale` as [N] = [{n}], "
            f"but they are {list(x_scale.shape)} and {list(w_scale.shape)}",
            "one scale per row of x and one per column of w",
        )
    xs = jnp.asarray(x_scale, jnp.float32).reshape(m, 1)
    ws = jnp.asarray(w_scale, jnp.float32).reshape(1, n)
    return kern(x, xs, w, ws)


def qmatmul_fp8(
    x: Any,
    x_scale: Any,
    w: Any,
    w_scale: Any,
    *,
    out_dtype: Any = jnp.bfloat16,
    bm: int | None = None,
    bn: int | None = None,
    bk: int | None = None,
) -> Any:
    """Block-scaled fp8 matmul, as TorchTPU's ``blockwise128_scaled_mm``:
    ``x: F[M, K]`` scaled by ``x_scale: f32[M, K / 128]`` (one scale per
    row of each 128 columns), ``w: F[K, N]`` scaled by ``w_scale: f32[K /
    128, N / 128]`` (one per 128x128 block), ``F`` float8_e4m3fn or
    float8_e5m2, ``K`` and ``N`` multiples of 128. Each 128-deep slice of
    the contraction is one MXU product whose f32 result is scaled by its
    row and block scales before it is summed. Returns ``out_dtype`` (bf16
    or f32) ``[M, N]``. Blocks default to up to (256, 512, 512), ``bn`` and
    ``bk`` multiples of 128 dividing ``N`` and ``K``.

    fp8 exists on v5e and later (``PK0312`` on v4); the CPU reference runs
    it too (fp8 values in f32 lanes, exact products). Forward only.
    """
    op = "qmatmul_fp8"
    x, w = _operands(op, x, w, ("float8_e4m3fn", "float8_e5m2", "bfloat16"))
    m, k = x.shape
    n = w.shape[1]
    x_scale, w_scale = _check.floating(op, "x_scale", x_scale), _check.floating(op, "w_scale", w_scale)
    _check.layout(op, "x_scale", x_scale, "[M, K / 128]", (m, k // 128))
    _check.layout(op, "w_scale", w_scale, "[K / 128, N / 128]", (k // 128, n // 128))
    blocks = _blocks(op, m, n, k, bm, bn, bk, (256, 512, 512))
    kern = _base.kernel("qmatmul.pk", "qmatmul_fp8", O=_out_dtype(op, out_dtype), **blocks)
    # The kernel reads a block's row scales as `bk / 128` columns of `bm`
    # rows: `[K / 128, M, 1]`, the transpose of the natural layout.
    xs = jnp.asarray(x_scale, jnp.float32).reshape(m, k // 128).T.reshape(k // 128, m, 1)
    return kern(x, xs, w, jnp.asarray(w_scale, jnp.float32))

"""``rms_norm`` and ``layer_norm``: kernels/norms.pk, forward (plain and
with a fused residual add) and backward."""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from . import _base, _check

__all__ = ["rms_norm", "layer_norm"]


class _Config(NamedTuple):
    kind: str  # "rms_norm" or "layer_norm"
    br: int
    eps: float
    #: The parameters set by the caller's keyword arguments.
    keywords: tuple[str, ...] = ()


def _fwd_kernel(cfg: _Config, residual: bool) -> Any:
    entry = cfg.kind + ("_residual" if residual else "")
    return _base.kernel("norms.pk", entry, keywords=cfg.keywords, br=cfg.br, eps=cfg.eps)


def _bwd_kernel(cfg: _Config, residual: bool) -> Any:
    return _base.kernel(
        "norms.pk", cfg.kind + "_bwd", keywords=cfg.keywords, br=cfg.br, eps=cfg.eps, residual=residual
    )


def _no_dh(cfg: _Config, x: Any) -> Any:
    # The backward kernels declare `dh` as a one-block placeholder when
    # there is no residual stream.
    return jnp.zeros((cfg.br, x.shape[1]), x.dtype)


# Plain norm: (x, w[, b]) -> y.


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _norm(cfg: _Config, x: Any, *wb: Any) -> Any:
    return _fwd_kernel(cfg, False)(x, *wb)


def _norm_fwd(cfg: _Config, x: Any, *wb: Any) -> tuple[Any, Any]:
    # The backward kernel is compiled now, so that a parameter it does not
    # take is reported where the forward is traced.
    _bwd_kernel(cfg, False).specialise(x, wb[0], x, _no_dh(cfg, x))
    return _norm(cfg, x, *wb), (x, wb[0])


def _norm_bwd(cfg: _Config, res: Any, dy: Any) -> tuple[Any, ...]:
    x, w = res
    outs = _bwd_kernel(cfg, False)(x, w, dy.astype(x.dtype), _no_dh(cfg, x))
    dx, dws = outs[0], outs[1:]
    return (dx, *(g.astype(w.dtype) for g in dws))


_norm.defvjp(_norm_fwd, _norm_bwd)


# With the residual add: (x, r, w[, b]) -> (y, h), h = x + r.


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _norm_res(cfg: _Config, x: Any, r: Any, *wb: Any) -> tuple[Any, Any]:
    return _fwd_kernel(cfg, True)(x, r, *wb)


def _norm_res_fwd(cfg: _Config, x: Any, r: Any, *wb: Any) -> tuple[Any, Any]:
    y, h = _norm_res(cfg, x, r, *wb)
    _bwd_kernel(cfg, True).specialise(h, wb[0], h, h)
    return (y, h), (h, wb[0])


def _norm_res_bwd(cfg: _Config, res: Any, cts: Any) -> tuple[Any, ...]:
    h, w = res
    dy, dh = cts
    outs = _bwd_kernel(cfg, True)(h, w, dy.astype(h.dtype), dh.astype(h.dtype))
    dx, dws = outs[0], outs[1:]
    # `h = x + r`: the gradient of `h` (dx, which includes dh) is the
    # gradient of both addends.
    return (dx, dx, *(g.astype(w.dtype) for g in dws))


_norm_res.defvjp(_norm_res_fwd, _norm_res_bwd)


def _apply(
    kind: str, x: Any, residual: Any, params: tuple[tuple[str, Any], ...], eps: float, br: int | None
) -> Any:
    x = _check.dtype(kind, "x", x)
    _check.rows(kind, x)
    if residual is not None:
        residual = _check.dtype(kind, "residual", residual)
        if residual.shape != x.shape:
            raise _check.error(
                "PK5302",
                f"pk.ops.{kind} takes `residual` in the shape of `x`, {list(x.shape)}, "
                f"but its shape is {list(residual.shape)}",
                "pass the residual stream that x is added to",
            )
        # `x + residual` in the dtype jnp would give it (bf16 and f32 make
        # f32), and the norm in that dtype.
        dt = jnp.result_type(x, residual)
        x, residual = x.astype(dt), residual.astype(dt)
    shape = x.shape
    c = shape[-1]
    for name, p in params:
        _check.layout(kind, name, _check.floating(kind, name, p), "[C]", (c,))
    rows = x.reshape(-1, c)
    br = _check.positive(kind, "block_rows", br)
    # The kernels hold whole rows and mask a ragged last block, so any
    # row count works with the default of up to 128 rows per step.
    cfg = _Config(
        kind,
        br or _base.block(rows.shape[0], 128, divides=False),
        _check.static(kind, "eps", eps),
        ("eps",) + ("br",) * (br is not None),
    )
    wb = tuple(jnp.asarray(p).reshape(1, c).astype(x.dtype) for _, p in params)
    if residual is None:
        return _norm(cfg, rows, *wb).reshape(shape)
    y, h = _norm_res(cfg, rows, residual.reshape(-1, c), *wb)
    return y.reshape(shape), h.reshape(shape)


def rms_norm(
    x: Any, weight: Any, *, residual: Any = None, eps: float = 1e-6, block_rows: int | None = None
) -> Any:
    """``x * rsqrt(mean(x^2) + eps) * weight`` over the last axis of
    ``x: T[..., C]`` (T float32 or bfloat16, computed in f32), ``weight:
    [C]`` (used in T).

    With ``residual`` (the shape of ``x``, float32 or bfloat16), computes
    the pre-norm step ``h = x + residual; y = rms_norm(h)`` in one pass
    and returns ``(y, h)``. Both are in the dtype jnp gives ``x +
    residual``: a bfloat16 ``x`` with a float32 residual stream makes
    float32 ``y`` and ``h``. Differentiable through pk's ``rms_norm_bwd``
    kernel (the weight gradient is accumulated in f32)."""
    return _apply("rms_norm", x, residual, (("weight", weight),), eps, block_rows)


def layer_norm(
    x: Any,
    weight: Any,
    bias: Any,
    *,
    residual: Any = None,
    eps: float = 1e-5,
    block_rows: int | None = None,
) -> Any:
    """``(x - mean) * rsqrt(var + eps) * weight + bias`` over the last axis,
    as :func:`rms_norm` otherwise (``residual`` returns ``(y, h)``, with
    the same promotion); differentiable through ``layer_norm_bwd``."""
    return _apply("layer_norm", x, residual, (("weight", weight), ("bias", bias)), eps, block_rows)

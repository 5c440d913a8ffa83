"""``swiglu``, ``geglu`` and ``gated_mlp``: kernels/glu.pk.

glu.pk has no backward kernels; the gradients here are the jnp
derivatives of the same formulas, evaluated on the saved inputs (for
``gated_mlp`` the two projections are recomputed, as a fused MLP that does
not keep its activations must)."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from . import _base, _check

__all__ = ["swiglu", "geglu", "gated_mlp"]


def _gelu(x: Any, approximate: bool) -> Any:
    return jax.nn.gelu(x, approximate=approximate)


def _glu_ref(a: Any, b: Any, act: str, approximate: bool) -> Any:
    af = a.astype(jnp.float32)
    g = jax.nn.silu(af) if act == "silu" else _gelu(af, approximate)
    return (g * b.astype(jnp.float32)).astype(a.dtype)


@partial(jax.custom_vjp, nondiff_argnums=(2, 3, 4))
def _glu(a: Any, b: Any, act: str, approximate: bool, blocks: tuple[int, int, tuple[str, ...]]) -> Any:
    # `blocks`: the blocks and the parameters the caller's keywords set.
    bm, bn, keywords = blocks
    if act == "silu":
        return _base.kernel("glu.pk", "swiglu", keywords=keywords, bm=bm, bn=bn)(a, b)
    return _base.kernel(
        "glu.pk", "geglu", keywords=keywords + ("approximate",), bm=bm, bn=bn, approximate=approximate
    )(a, b)


def _glu_fwd(a: Any, b: Any, act: str, approximate: bool, blocks: Any) -> tuple[Any, Any]:
    return _glu(a, b, act, approximate, blocks), (a, b)


def _glu_bwd(act: str, approximate: bool, blocks: Any, res: Any, dy: Any) -> Any:
    a, b = res
    _, vjp = jax.vjp(lambda a, b: _glu_ref(a, b, act, approximate), a, b)
    return vjp(dy)


_glu.defvjp(_glu_fwd, _glu_bwd)


def _operands(op: str, a: Any, b: Any) -> tuple[Any, Any]:
    a, b = _check.dtype(op, "a", a), _check.dtype(op, "b", b)
    _check.same_dtype(op, {"a": a, "b": b})
    _check.layout(op, "a", a, "[M, N]")
    _check.layout(op, "b", b, "[M, N]", a.shape)
    return a, b


def _blocks2(op: str, a: Any, bm: int | None, bn: int | None) -> tuple[int, int, tuple[str, ...]]:
    m, n = a.shape
    bm, bn = _check.positive(op, "bm", bm), _check.positive(op, "bn", bn)
    return (
        bm or _base.block(m, 256, divides=False),
        bn or _base.block(n, 512, divides=False, align=128),
        ("bm",) * (bm is not None) + ("bn",) * (bn is not None),
    )


def swiglu(a: Any, b: Any, *, bm: int | None = None, bn: int | None = None) -> Any:
    """``silu(a) * b`` elementwise for ``a, b: T[M, N]`` (T float32 or
    bfloat16), computed in f32. Differentiable."""
    a, b = _operands("swiglu", a, b)
    return _glu(a, b, "silu", False, _blocks2("swiglu", a, bm, bn))


def geglu(
    a: Any, b: Any, *, approximate: bool = True, bm: int | None = None, bn: int | None = None
) -> Any:
    """``gelu(a) * b`` elementwise (tanh form unless ``approximate=False``)
    for ``a, b: T[M, N]`` (T float32 or bfloat16), computed in f32.
    Differentiable."""
    a, b = _operands("geglu", a, b)
    approximate = _check.static("geglu", "approximate", approximate, bool)
    return _glu(a, b, "gelu", approximate, _blocks2("geglu", a, bm, bn))


def _mlp_ref(x: Any, wg: Any, wu: Any, use_gelu: bool) -> Any:
    f32 = jnp.float32
    g = jnp.dot(x, wg, preferred_element_type=f32)
    u = jnp.dot(x, wu, preferred_element_type=f32)
    act = _gelu(g, True) if use_gelu else jax.nn.silu(g)
    return (act * u).astype(x.dtype)


@partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _mlp(x: Any, wg: Any, wu: Any, use_gelu: bool, blocks: tuple[int, int, int, tuple[str, ...]]) -> Any:
    # `blocks`: the blocks and the parameters the caller's keywords set.
    bm, bn, bk, keywords = blocks
    k = _base.kernel(
        "glu.pk", "gated_mlp", keywords=keywords + ("use_gelu",), bm=bm, bn=bn, bk=bk, use_gelu=use_gelu
    )
    return k(x, wg, wu)


def _mlp_fwd(x: Any, wg: Any, wu: Any, use_gelu: bool, blocks: Any) -> tuple[Any, Any]:
    return _mlp(x, wg, wu, use_gelu, blocks), (x, wg, wu)


def _mlp_bwd(use_gelu: bool, blocks: Any, res: Any, dy: Any) -> Any:
    _, vjp = jax.vjp(lambda *a: _mlp_ref(*a, use_gelu), *res)
    return vjp(dy)


_mlp.defvjp(_mlp_fwd, _mlp_bwd)


def gated_mlp(
    x: Any,
    w_gate: Any,
    w_up: Any,
    *,
    activation: str = "silu",
    bm: int | None = None,
    bn: int | None = None,
    bk: int | None = None,
) -> Any:
    """``act(x @ w_gate) * (x @ w_up)`` for ``x: T[M, K]``, ``w_gate, w_up:
    T[K, N]`` (T float32 or bfloat16), with both projections accumulated
    in f32 VMEM and the activation (``"silu"``: SwiGLU, ``"gelu"``: GeGLU,
    tanh form) applied once at the end. Blocks default to the largest
    aligned divisors up to (256, 256, 512). Differentiable."""
    op = "gated_mlp"
    if activation not in ("silu", "gelu"):
        raise _check.error(
            "PK5307", f"pk.ops.gated_mlp: `activation` is {activation!r}; it takes 'silu' or 'gelu'",
            "pass activation='silu' (SwiGLU) or activation='gelu' (GeGLU)",
        )
    x, wg, wu = (_check.dtype(op, n, a) for n, a in (("x", x), ("w_gate", w_gate), ("w_up", w_up)))
    _check.same_dtype(op, {"x": x, "w_gate": wg, "w_up": wu})
    _check.layout(op, "x", x, "[M, K]")
    _check.layout(op, "w_gate", wg, "[K, N]", (x.shape[1], None))
    _check.layout(op, "w_up", wu, "[K, N]", wg.shape)
    m, k = x.shape
    n = wg.shape[1]
    given = _check.blocks(op, bm=bm, bn=bn, bk=bk)
    blocks = (
        given["bm"] or _base.block(m, 256),
        given["bn"] or _base.block(n, 256, align=128),
        given["bk"] or _base.block(k, 512, align=128),
        tuple(p for p, v in given.items() if v is not None),
    )
    w_gate, w_up = wg, wu
    return _mlp(x, w_gate, w_up, activation == "gelu", blocks)

"""The collectives: kernels/all_gather.pk, reduce_scatter.pk,
all_reduce.pk, ppermute.pk, all_gather_matmul.pk and
matmul_reduce_scatter.pk, called inside
``jax.shard_map`` with an ``axis_name`` as their ``jax.lax`` counterparts.

Each op runs one pk kernel per device over the shard_map axis (or tuple
of axes, flattened row-major) ``axis_name``: on TPU the Mosaic kernel
with its remote copies and barrier, on CPU the devices' calls meeting in
pk's CPU mesh (see :mod:`pk.jax`). The kernels move whole arrays of the
layouts they are written for; an op reshapes its operand to that layout
and back (a free reshape of a contiguous array) and, where a kernel needs
rows in whole tiles, pads with zeros and slices the padding off again.

Gradients: where the transpose of a collective is another collective of
the library, the op is differentiable with that collective as its
backward pass, as ``jax.lax`` defines them: ``all_gather`` and
``reduce_scatter`` are each other's transposes, ``all_reduce`` is its
own, and ``ppermute``'s is the inverse permutation. ``all_gather_matmul``'s
gradient is ``matmul_reduce_scatter`` for ``x`` and the gathered ``x``
times the cotangent for ``w``; ``matmul_reduce_scatter`` is forward only.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from . import _base, _check

__all__ = [
    "all_gather",
    "reduce_scatter",
    "all_reduce",
    "ppermute",
    "all_gather_matmul",
    "matmul_reduce_scatter",
]

#: Rows of one (sublane) tile of a 32-bit and of a 16-bit dtype.
_TILE = {"float32": 8, "bfloat16": 16}


def _names(axis_name: Any) -> tuple[str, ...]:
    return (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)


def _size(op: str, axis_name: Any) -> int:
    """The devices along ``axis_name`` of the enclosing shard_map."""
    mesh = jax.sharding.get_abstract_mesh()
    manual = tuple(getattr(mesh, "manual_axes", ()) or ())
    names = _names(axis_name)
    missing = [n for n in names if n not in manual]
    if mesh.empty or missing:
        where = f"its manual axes are {list(manual)}" if manual else "there is none"
        raise _check.error(
            "PK5006",
            f"pk.ops.{op} runs over shard_map axis {axis_name!r}, but no enclosing "
            f"jax.shard_map has it ({where})",
            "call the op inside jax.shard_map over a mesh with that axis",
        )
    shape = dict(mesh.shape)
    return math.prod(shape[n] for n in names)


def _axes(axis_name: Any) -> tuple[Any, ...]:
    """The kernel's one mesh axis as shard_map axes (``axis_names``)."""
    names = _names(axis_name)
    return (names[0] if len(names) == 1 else names,)


def _rows(x: Any, lanes: int = 128) -> tuple[Any, int]:
    """``x`` flattened to rows of ``lanes`` elements (zero-padded), and its
    element count."""
    size = x.size
    flat = x.reshape(-1)
    rows = -(-size // lanes)
    return jnp.pad(flat, (0, rows * lanes - size)).reshape(rows, lanes), size


def _pad_rows(x: Any, multiple: int) -> Any:
    """``x`` (2-D) with zero rows added to a multiple of ``multiple``."""
    extra = -x.shape[0] % multiple
    return jnp.pad(x, ((0, extra), (0, 0))) if extra else x


# all_gather and reduce_scatter, each other's transposes.


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def _gather(x: Any, axis_name: Any, n: int) -> Any:
    lead = x.shape[0] if x.ndim >= 2 else 1
    x2 = x.reshape(lead, -1)
    y = _base.kernel("all_gather.pk", axes=_axes(axis_name), n=n)(x2)
    return y.reshape((n,) + x.shape)


def _gather_fwd(x: Any, axis_name: Any, n: int) -> tuple[Any, None]:
    return _gather(x, axis_name, n), None


def _gather_bwd(axis_name: Any, n: int, _: None, ct: Any) -> tuple[Any]:
    return (_scatter(ct, axis_name, n),)


_gather.defvjp(_gather_fwd, _gather_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def _scatter(x: Any, axis_name: Any, n: int) -> Any:
    # x: [n, ...]; block j of every device summed onto device j.
    shape = x.shape[1:]
    tile = _TILE[_check.dtype_name(x)]
    blocks = [_rows(x[j])[0] for j in range(n)]
    stacked = jnp.stack([_pad_rows(b, 2 * tile) for b in blocks])
    y = _base.kernel("reduce_scatter.pk", axes=_axes(axis_name), n=n)(stacked)
    size = math.prod(shape)
    return y.reshape(-1)[:size].reshape(shape)


def _scatter_fwd(x: Any, axis_name: Any, n: int) -> tuple[Any, None]:
    return _scatter(x, axis_name, n), None


def _scatter_bwd(axis_name: Any, n: int, _: None, ct: Any) -> tuple[Any]:
    return (_gather(ct, axis_name, n),)


_scatter.defvjp(_scatter_fwd, _scatter_bwd)


def all_gather(x: Any, axis_name: Any, *, tiled: bool = False) -> Any:
    """``jax.lax.all_gather(x, axis_name, axis=0, tiled=tiled)`` as pk's
    ring all-gather (kernels/all_gather.pk): every device ends with the
    shards of all devices along ``axis_name``, stacked on a new leading
    axis (``tiled``: concatenated along axis 0). ``x`` is float32 or
    bfloat16 of any shape. Differentiable (the transpose is
    :func:`reduce_scatter`)."""
    op = "all_gather"
    x = _check.dtype(op, "x", x)
    n = _size(op, axis_name)
    y = _gather(x, axis_name, n)
    if tiled:
        _tiled(op, x)
        return y.reshape((n * x.shape[0],) + x.shape[1:])
    return y


def _tiled(op: str, x: Any) -> None:
    if x.ndim == 0:
        raise _check.error(
            "PK5302",
            f"pk.ops.{op} with tiled=True takes `x` with at least one axis, but it is a scalar",
            "pass tiled=False, or reshape `x` to [1]",
        )


def reduce_scatter(x: Any, axis_name: Any, *, tiled: bool = False) -> Any:
    """``jax.lax.psum_scatter(x, axis_name, scatter_dimension=0,
    tiled=tiled)`` as pk's bidirectional ring reduce-scatter
    (kernels/reduce_scatter.pk): ``x`` holds one block per device along
    axis 0 (of size n, or ``tiled``: n blocks of rows), and device ``j``
    ends with the sum over devices of block ``j``. float32 or bfloat16
    (bfloat16 partial sums are rounded at every hop, as on the TPU).
    Differentiable (the transpose is :func:`all_gather`)."""
    op = "reduce_scatter"
    x = _check.dtype(op, "x", x)
    n = _size(op, axis_name)
    if tiled:
        _tiled(op, x)
        if x.shape[0] % n:
            raise _check.error(
                "PK5302",
                f"pk.ops.{op} with tiled=True takes `x` whose axis 0 divides among the "
                f"{n} devices of {axis_name!r}, but it has {x.shape[0]} rows",
                f"pad axis 0 of `x` to a multiple of {n}",
            )
        blocks = x.reshape((n, x.shape[0] // n) + x.shape[1:])
        return _scatter(blocks, axis_name, n)
    if x.ndim == 0 or x.shape[0] != n:
        got = list(x.shape)
        raise _check.error(
            "PK5302",
            f"pk.ops.{op} takes `x` as [n, ...] with n = {n} (the devices of "
            f"{axis_name!r}), but its shape is {got}",
            "give axis 0 one block per device, or pass tiled=True",
        )
    return _scatter(x, axis_name, n)


# all_reduce, its own transpose.


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def _reduce(x: Any, axis_name: Any, n: int) -> Any:
    tile = _TILE[_check.dtype_name(x)]
    rows, size = _rows(x)
    y = _base.kernel("all_reduce.pk", axes=_axes(axis_name), n=n)(_pad_rows(rows, 2 * n * tile))
    return y.reshape(-1)[:size].reshape(x.shape)


def _reduce_fwd(x: Any, axis_name: Any, n: int) -> tuple[Any, None]:
    return _reduce(x, axis_name, n), None


def _reduce_bwd(axis_name: Any, n: int, _: None, ct: Any) -> tuple[Any]:
    return (_reduce(ct, axis_name, n),)


_reduce.defvjp(_reduce_fwd, _reduce_bwd)


def all_reduce(x: Any, axis_name: Any) -> Any:
    """``jax.lax.psum(x, axis_name)`` as pk's bidirectional ring all-reduce
    (kernels/all_reduce.pk): every device ends with the sum of ``x`` over
    the devices of ``axis_name``. ``x`` is float32 or bfloat16 of any
    shape (bfloat16 partial sums are rounded at every hop, as on the
    TPU). The result varies over ``axis_name`` as far as JAX knows (it is
    the kernel's output on each device), like ``psum`` followed by
    ``jax.lax.pcast(..., to="varying")``. Differentiable (its own transpose)."""
    op = "all_reduce"
    x = _check.dtype(op, "x", x)
    return _reduce(x, axis_name, _size(op, axis_name))


# ppermute, whose transpose is the inverse permutation.


@partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))
def _shift(x: Any, axis_name: Any, n: int, shift: int) -> Any:
    lead = x.shape[0] if x.ndim >= 2 else 1
    y = _base.kernel("ppermute.pk", axes=_axes(axis_name), n=n, shift=shift)(x.reshape(lead, -1))
    return y.reshape(x.shape)


def _shift_fwd(x: Any, axis_name: Any, n: int, shift: int) -> tuple[Any, None]:
    return _shift(x, axis_name, n, shift), None


def _shift_bwd(axis_name: Any, n: int, shift: int, _: None, ct: Any) -> tuple[Any]:
    return (_shift(ct, axis_name, n, (n - shift) % n),)


_shift.defvjp(_shift_fwd, _shift_bwd)


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """``jax.lax.ppermute(x, axis_name, perm)`` for a ring shift, as pk's
    ppermute kernel (kernels/ppermute.pk): ``perm`` sends every device
    ``i`` to ``(i + s) % n`` for one shift ``s``. ``x`` is float32 or
    bfloat16 of any shape. Differentiable (the transpose is the inverse
    shift)."""
    op = "ppermute"
    x = _check.dtype(op, "x", x)
    n = _size(op, axis_name)
    pairs = sorted((int(a), int(b)) for a, b in perm)
    shift = (pairs[0][1] - pairs[0][0]) % n if pairs else 0
    if pairs != [(i, (i + shift) % n) for i in range(n)]:
        raise _check.error(
            "PK5307",
            f"pk.ops.{op}: `perm` {list(map(tuple, perm))} is not a shift of the ring of "
            f"the {n} devices of {axis_name!r}; the kernel sends every device `i` to "
            "`(i + s) % n`",
            f"pass perm=[(i, (i + s) % {n}) for i in range({n})], or use jax.lax.ppermute",
        )
    if shift == 0:
        return x
    return _shift(x, axis_name, n, shift)


def all_gather_matmul(x: Any, w: Any, axis_name: Any) -> Any:
    """``jnp.dot(jax.lax.all_gather(x, axis_name, tiled=True), w)`` as
    pk's collective matmul (kernels/all_gather_matmul.pk): ``x`` is this
    device's ``[M, K]`` shard of rows of the left-hand side, ``w`` its
    ``[K, N]`` block of columns of the right-hand side, and the result the
    ``[n * M, N]`` product, the ring transfer of the next shard overlapped
    with the matmul of the current one. ``x`` and ``w`` share one dtype,
    float32 or bfloat16; products accumulate in float32 and the result is
    in that dtype. ``M`` is a whole number of pairs of tiles (multiples of
    16 rows for float32, 32 for bfloat16), ``K`` and ``N`` multiples of
    128. Differentiable: ``dx`` is :func:`matmul_reduce_scatter` of the
    cotangent and ``w`` transposed, ``dw`` the gathered ``x`` (pk's
    :func:`all_gather`) transposed times the cotangent (``jnp.dot``)."""
    op = "all_gather_matmul"
    x = _check.dtype(op, "x", x)
    w = _check.dtype(op, "w", w)
    _check.same_dtype(op, {"x": x, "w": w})
    _check.layout(op, "x", x, "[M, K]")
    _check.layout(op, "w", w, "[K, N]", (x.shape[1], None))
    n = _size(op, axis_name)
    tile = _TILE[_check.dtype_name(x)]
    m, k = x.shape
    if m % (2 * tile) or k % 128 or w.shape[1] % 128:
        raise _check.error(
            "PK5302",
            f"pk.ops.{op} takes `x` as [M, K] and `w` as [K, N] with M a multiple of "
            f"{2 * tile} and K, N multiples of 128, but they are {list(x.shape)} and "
            f"{list(w.shape)}",
            "pad the shards to those multiples",
        )
    return _gather_matmul(x, w, axis_name, n)


@partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _gather_matmul(x: Any, w: Any, axis_name: Any, n: int) -> Any:
    return _base.kernel("all_gather_matmul.pk", axes=_axes(axis_name), n=n)(x, w)


def _gather_matmul_fwd(x: Any, w: Any, axis_name: Any, n: int) -> tuple[Any, tuple[Any, Any]]:
    return _gather_matmul(x, w, axis_name, n), (x, w)


def _gather_matmul_bwd(axis_name: Any, n: int, res: tuple[Any, Any], dy: Any) -> tuple[Any, Any]:
    x, w = res
    dy = dy.astype(x.dtype)
    # d(all_gather(x) @ w)/dx: the rows of dy @ w^T that came from this
    # device's shard, summed over the devices (each used it for its w).
    dx = _reduce_matmul(dy, w.T, axis_name, n)
    xg = _gather(x, axis_name, n).reshape(n * x.shape[0], x.shape[1])
    dw = jnp.dot(xg.T, dy, preferred_element_type=jnp.float32).astype(w.dtype)
    return dx, dw


_gather_matmul.defvjp(_gather_matmul_fwd, _gather_matmul_bwd)


def _reduce_matmul(x: Any, w: Any, axis_name: Any, n: int) -> Any:
    return _base.kernel(
        "matmul_reduce_scatter.pk", axes=_axes(axis_name), n=n, M=x.shape[0] // n
    )(x, w)


def matmul_reduce_scatter(x: Any, w: Any, axis_name: Any) -> Any:
    """``jax.lax.psum_scatter(jnp.dot(x, w), axis_name, scatter_dimension=0,
    tiled=True)`` as pk's collective matmul the other way round
    (kernels/matmul_reduce_scatter.pk): ``x`` is this device's
    ``[n * M, K]`` slice of the contraction of the left-hand side, ``w``
    the same ``[K, N]`` slice of the right-hand side's rows, and the result
    this device's ``[M, N]`` block of rows of the sum over devices, the
    partial sums travelling the ring while the next block is multiplied.
    One dtype, float32 or bfloat16 (partial sums are rounded to it at every
    hop, as on the TPU); ``M`` a whole number of pairs of tiles, ``K`` and
    ``N`` multiples of 128. Forward only."""
    op = "matmul_reduce_scatter"
    x = _check.dtype(op, "x", x)
    w = _check.dtype(op, "w", w)
    _check.same_dtype(op, {"x": x, "w": w})
    _check.layout(op, "x", x, "[R, K]")
    _check.layout(op, "w", w, "[K, N]", (x.shape[1], None))
    n = _size(op, axis_name)
    tile = _TILE[_check.dtype_name(x)]
    rows, k = x.shape
    if rows % (2 * tile * n) or k % 128 or w.shape[1] % 128:
        raise _check.error(
            "PK5302",
            f"pk.ops.{op} takes `x` as [n * M, K] and `w` as [K, N] with n = {n}, M a "
            f"multiple of {2 * tile} and K, N multiples of 128, but they are "
            f"{list(x.shape)} and {list(w.shape)}",
            "pad the arrays to those multiples",
        )
    return _reduce_matmul(x, w, axis_name, n)

"""Argument checks shared by the ``pk.ops`` functions, worded in the
caller's terms: the op, the argument, and the layout or dtypes it takes.

Every error is a :class:`pk.errors.PkValueError` or
:class:`pk.errors.PkTypeError` (so also a ``ValueError`` or ``TypeError``)
with a ``PK53xx`` code that ``pkc explain`` describes (the table is
``runtime/src/ops.rs``):

- ``PK5301`` an array's dtype is not one the op takes;
- ``PK5302`` an array's rank or shape does not fit the op's layout;
- ``PK5303`` ``xent`` labels past the vocabulary;
- ``PK5304`` ``gmm``/``tgmm`` group sizes that are negative or add up to
  more than the rows;
- ``PK5305`` paged attention metadata that does not describe the cache;
- ``PK5306`` a traced value for a parameter compiled into the kernel;
- ``PK5307`` a keyword argument outside its range.

Invariants:

1. Shapes, dtypes and keyword arguments are known when an op is traced,
   so they are checked on every call, inside ``jit`` too.
2. Values (labels, group sizes, page tables) are checked by one numpy
   function per op, :func:`values`: at once when they are concrete (an op
   called outside ``jit``, or arrays closed over as constants), and for
   traced values at run time only under :func:`checks` (a host callback
   that the kernel's inputs pass through, so it runs before the kernel).
   Without it each op defines what it does with such values (its
   docstring says).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pk.errors import PkError, PkTypeError, PkValueError

#: The floating-point dtypes most kernels of the library take.
FLOATS = ("float32", "bfloat16")

_CHECKS = contextvars.ContextVar(
    "pk_ops_checks", default=os.environ.get("PK_OPS_CHECKS", "") not in ("", "0")
)


@contextlib.contextmanager
def checks(enabled: bool = True) -> Iterator[None]:
    """Checks the values of traced arguments at run time, in the ops
    traced inside this block (``PK_OPS_CHECKS=1`` turns it on for the
    process): xent labels, grouped-matmul group sizes, paged attention
    metadata. A bad value makes the jitted call fail with the op's
    ``PK53xx`` error (inside JAX's runtime error). Each checked call copies
    those arrays to the host and back, so this is for debugging.

    A function jitted before keeps the trace it has: the setting is read
    when an op is traced (``jax.clear_caches()`` drops old traces).

    Example::

        with pk.ops.checks():
            loss = jax.jit(model)(params, batch)   # raises on a bad label
    """
    token = _CHECKS.set(bool(enabled))
    try:
        yield
    finally:
        _CHECKS.reset(token)


def checking() -> bool:
    """Whether traced values are checked (see :func:`checks`)."""
    return _CHECKS.get()


def error(code: str, message: str, help: str, *, type_error: bool = False) -> PkError:
    """A ``pk.ops`` argument error, rendered as pk's diagnostics are."""
    cls = PkTypeError if type_error else PkValueError
    return cls(f"error[{code}]: {message}\nhelp: {help}", code)


def array(x: Any) -> Any:
    """``x`` itself when it is an array (anything with a shape and a
    dtype, traced or not), else ``jnp.asarray(x)``."""
    return x if hasattr(x, "shape") and hasattr(x, "dtype") else jnp.asarray(x)


def dtype_name(x: Any) -> str:
    return np.dtype(x.dtype).name


def _either(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def dtype(op: str, name: str, x: Any, accepted: Sequence[str] = FLOATS) -> Any:
    """``x`` as an array, refused (``PK5301``) unless its dtype is one of
    ``accepted`` (numpy names)."""
    x = array(x)
    d = dtype_name(x)
    if d not in accepted:
        casts = " or ".join(f"{name}.astype(jnp.{a})" for a in accepted)
        raise error(
            "PK5301",
            f"pk.ops.{op} takes `{name}` in {_either(accepted)}, not {d}",
            f"cast it: {casts}",
            type_error=True,
        )
    return x


def same_dtype(op: str, arrays: dict[str, Any]) -> None:
    """Refuses (``PK5301``) arrays that must share one dtype but do not."""
    names = list(arrays)
    first = dtype_name(arrays[names[0]])
    for n in names[1:]:
        d = dtype_name(arrays[n])
        if d != first:
            raise error(
                "PK5301",
                f"pk.ops.{op} takes {_either([f'`{m}`' for m in names])} in one dtype; "
                f"`{names[0]}` is {first} and `{n}` is {d}",
                f"cast one of them: {n}.astype({names[0]}.dtype)",
                type_error=True,
            )


def integers(op: str, name: str, x: Any) -> Any:
    """``x`` as an int32 array; refused (``PK5301``) unless it holds
    integers of some width."""
    x = array(x)
    if not jnp.issubdtype(x.dtype, jnp.integer):
        raise error(
            "PK5301",
            f"pk.ops.{op} takes `{name}` as integers (int32), not {dtype_name(x)}",
            f"pass integers: {name}.astype(jnp.int32)",
            type_error=True,
        )
    return x if x.dtype == jnp.int32 else x.astype(jnp.int32)


def layout(op: str, name: str, x: Any, dims: str, shape: Sequence[int | None] | None = None) -> None:
    """Refuses (``PK5302``) ``x`` unless it has the rank of the layout
    ``dims`` (``"[B, H, S, D]"``) and, where ``shape`` gives a size, that
    size (``None`` takes any)."""
    names = [d.strip() for d in dims.strip("[]").split(",")] if dims != "[]" else []
    got = list(x.shape)
    if len(got) != len(names):
        raise error(
            "PK5302",
            f"pk.ops.{op} takes `{name}` as {dims}, a {len(names)}-D array, "
            f"but it is {len(got)}-D with shape {got}",
            f"pass `{name}` in the layout {dims}",
        )
    if shape is None:
        return
    for i, (want, have) in enumerate(zip(shape, got)):
        if want is not None and want != have:
            raise error(
                "PK5302",
                f"pk.ops.{op} takes `{name}` as {dims} with {names[i]} = {want}, "
                f"but its shape is {got}",
                f"dimension {i} of `{name}` ({names[i]}) must be {want}",
            )


def static(op: str, name: str, value: Any, kind: type = float) -> Any:
    """``value`` as a Python ``kind``; a traced value is refused
    (``PK5306``): it is compiled into the kernel, so it must be known when
    the op is traced."""
    if isinstance(value, jax.core.Tracer):
        raise error(
            "PK5306",
            f"pk.ops.{op} compiles `{name}` into the kernel, so it must be a Python "
            f"{kind.__name__}, not a traced value",
            f"pass `{name}` as a constant (for a jitted function: "
            f"jax.jit(f, static_argnames=...) or a closure)",
            type_error=True,
        )
    return kind(value)


def positive(op: str, name: str, value: Any) -> int | None:
    """An optional block size or count: ``None``, or a positive Python
    int (``PK5307`` otherwise; ``PK5306`` for a traced value)."""
    if value is None:
        return None
    v = static(op, name, value, int)
    if v <= 0:
        raise error(
            "PK5307",
            f"pk.ops.{op}: `{name}` is {v}; it must be positive",
            f"pass a positive `{name}`, or leave it to the op",
        )
    return v


def blocks(op: str, **given: Any) -> dict[str, int | None]:
    """Optional block sizes by name, each ``None`` or a positive int (see
    :func:`positive`)."""
    return {name: positive(op, name, v) for name, v in given.items()}


def pair(op: str, a: str, a_value: Any, b: str, b_value: Any) -> bool:
    """Whether a pair of optional arguments that go together was given;
    one without the other is refused (``PK5307``)."""
    if (a_value is None) != (b_value is None):
        raise error("PK5307", f"pk.ops.{op} takes both {a} and {b}, or neither", f"pass {b} with {a}")
    return a_value is not None


def concrete(x: Any) -> np.ndarray | None:
    """The value of ``x`` on the host, or ``None`` when it is traced."""
    if isinstance(x, jax.core.Tracer):
        return None
    return np.asarray(x)


def values(
    op: str,
    code: str,
    help: str,
    describe: Callable[..., str | None],
    *arrays: Any,
) -> tuple[Any, ...]:
    """Checks the values of ``arrays`` with ``describe`` (numpy arrays in,
    the problem out, or ``None``) and returns the arrays to call the
    kernel with (see the module doc, invariant 2).

    Concrete arrays are checked now. Traced ones under :func:`checks` pass
    through a host callback that checks them and returns them unchanged,
    so that the kernel reads them only after the check; otherwise they are
    returned as they are, unchecked.
    """
    host = [concrete(a) for a in arrays]
    if all(h is not None for h in host):
        problem = describe(*host)
        if problem:
            raise error(code, f"pk.ops.{op}: {problem}", help)
        return arrays
    if not checking():
        return arrays

    def check(*vals: Any) -> tuple[np.ndarray, ...]:
        vals = tuple(np.asarray(v) for v in vals)
        problem = describe(*vals)
        if problem:
            raise error(code, f"pk.ops.{op}: {problem}", help)
        return vals

    shapes = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays)
    return tuple(jax.pure_callback(check, shapes, *arrays, vmap_method="sequential"))


def attention(op: str, q: Any, k: Any, v: Any) -> tuple[Any, Any, Any]:
    """``q, k, v`` in the layouts of Pallas's TPU flash attention, ``q:
    T[B, H, S, D]`` and ``k, v: T[B, KH, SK, D]`` with ``H % KH == 0``, T
    float32 or bfloat16 (``PK5301``, ``PK5302`` otherwise)."""
    q, k, v = (dtype(op, n, x) for n, x in (("q", q), ("k", k), ("v", v)))
    same_dtype(op, {"q": q, "k": k, "v": v})
    layout(op, "q", q, "[B, H, S, D]")
    b, h, _, d = q.shape
    layout(op, "k", k, "[B, KH, SK, D]", (b, None, None, d))
    layout(op, "v", v, "[B, KH, SK, D]", k.shape)
    if h % k.shape[1] != 0:
        raise error(
            "PK5302",
            f"pk.ops.{op} takes {h} query heads (dimension 1 of `q`) over key/value heads "
            f"that divide them, but `k` and `v` have {k.shape[1]}",
            "for grouped-query attention H must be a multiple of KH",
        )
    return q, k, v


def scaled_queries(op: str, q: Any, sm_scale: Any) -> tuple[Any, float, bool]:
    """The queries and the kernel's constant ``sm_scale``: a traced scale
    multiplies ``q`` before the kernel (in f32, rounded once to ``q``'s
    dtype) and the kernel's is 1; a constant is the kernel's. The flag
    says whether the scale was a constant the caller gave."""
    if isinstance(sm_scale, jax.core.Tracer):
        scaled = (q.astype(jnp.float32) * sm_scale.astype(jnp.float32)).astype(q.dtype)
        return scaled, 1.0, False
    if sm_scale is None:
        return q, 1.0 / float(np.sqrt(q.shape[-1])), False
    return q, float(sm_scale), True


def soft_cap(op: str, value: Any) -> float:
    """A soft cap: a Python float, 0 (off) or positive."""
    cap = static(op, "soft_cap", value)
    if cap < 0:
        raise error(
            "PK5307",
            f"pk.ops.{op}: `soft_cap` is {cap}; it must be 0 (off) or positive",
            "pass soft_cap=0.0 to turn the cap off",
        )
    return cap


def floating(op: str, name: str, x: Any) -> Any:
    """``x`` as an array of any floating-point dtype (an op converts it, as
    its docstring says); integers and bools are refused (``PK5301``)."""
    x = array(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise error(
            "PK5301",
            f"pk.ops.{op} takes `{name}` as floating-point numbers, not {dtype_name(x)}",
            f"pass floats: {name}.astype(jnp.float32)",
            type_error=True,
        )
    return x


def rows(op: str, x: Any) -> None:
    """Refuses (``PK5302``) a scalar where an op takes ``[..., C]``."""
    if x.ndim < 1:
        raise error("PK5302", f"pk.ops.{op} takes `x` as [..., C], not a scalar", "pass at least one axis")


def pages(op: str, q: Any, k_pages: Any, v_pages: Any, accepted: Sequence[str]) -> tuple[Any, Any]:
    """The key and value caches of the paged attention ops, ``KV[KH, P,
    page_size, D]`` with the ``D`` of ``q`` (its last dimension) and ``KH``
    dividing its heads (dimension 1), of one dtype among ``accepted``: a
    float one must be ``q``'s."""
    k_pages = dtype(op, "k_pages", k_pages, accepted)
    v_pages = dtype(op, "v_pages", v_pages, accepted)
    same_dtype(op, {"k_pages": k_pages, "v_pages": v_pages})
    if dtype_name(k_pages) in FLOATS:
        same_dtype(op, {"q": q, "k_pages": k_pages})
    layout(op, "k_pages", k_pages, "[KH, P, page_size, D]", (None, None, None, q.shape[-1]))
    layout(op, "v_pages", v_pages, "[KH, P, page_size, D]", k_pages.shape)
    h, kh = q.shape[1], k_pages.shape[0]
    if h % kh:
        raise error(
            "PK5302",
            f"pk.ops.{op} takes H = {h} query heads over KH key/value heads that divide them, "
            f"but the pages have {kh}",
            "for grouped-query attention H must be a multiple of KH",
        )
    return k_pages, v_pages

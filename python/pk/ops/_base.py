"""What every family module of ``pk.ops`` shares: where the library's
``.pk`` files are, parameter spelling, default block sizes, and the cache
of compiled ``pk.jax`` kernels.

A family module calls :func:`kernel` with the file, the entry and the
parameters it chose, naming those that came straight from the caller's
keyword arguments; shapes and the dtype parameter ``T`` are inferred from
the arguments by ``pk.jax`` as usual, and every distinct configuration is
built once per process. A kernel that refuses its parameters (a false
``assert`` of the ``.pk`` file) says where each value came from in the
caller's terms: the call's keyword arguments, the op's choice from the
shapes, or the arrays.
"""

from __future__ import annotations

import functools
import os
import pathlib
from collections.abc import Iterable
from typing import Any

import pk.jax
from pk.errors import PkError

_HERE = pathlib.Path(__file__).resolve().parent


def kernels_dir() -> pathlib.Path:
    """The directory holding the library's ``.pk`` files.

    ``PK_KERNELS`` names it explicitly; otherwise the copy bundled in the
    package (``pk/kernels``, present in wheels) is used, and failing that
    the ``kernels/`` of the source checkout this module lives in (an
    editable install or ``PYTHONPATH=python``).
    """
    env = os.environ.get("PK_KERNELS")
    candidates = [pathlib.Path(env)] if env else []
    candidates += [_HERE.parent / "kernels", _HERE.parents[2] / "kernels"]
    for c in candidates:
        if (c / "matmul.pk").is_file():
            return c
    tried = ", ".join(str(c) for c in candidates)
    raise PkError(
        f"error: the pk kernel library was not found (tried {tried})\n"
        "help: set PK_KERNELS to the `kernels/` directory of a pk checkout"
    )


def param(v: Any) -> str:
    """A parameter value in pk's spelling: ``true``/``false`` for bools,
    floats with full precision, integers and dtype names as written."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return pk.param_value(v)


#: How a failed assertion's note describes the parameters an op passes.
FROM_KEYWORDS = "from the call's keyword arguments"
CHOSEN = "chosen from the shapes"


@functools.lru_cache(maxsize=None)
def _cached(
    file: str,
    entry: str | None,
    params: tuple[tuple[str, str], ...],
    keywords: frozenset[str],
    axes: tuple[Any, ...] | None = None,
) -> pk.jax.Kernel:
    k = pk.jax.kernel(kernels_dir() / file, kernel=entry, axis_names=axes, **dict(params))
    k._origins = {n: FROM_KEYWORDS if n in keywords else CHOSEN for n, _ in params}
    return k


def kernel(
    file: str,
    entry: str | None = None,
    *,
    keywords: Iterable[str] = (),
    axes: tuple[Any, ...] | None = None,
    **params: Any,
) -> pk.jax.Kernel:
    """The ``pk.jax`` kernel ``entry`` of the library file ``file`` with
    these parameters (``None`` values are left to the kernel's defaults or
    to inference from the arguments); built once per configuration.
    ``keywords`` names the parameters whose values are the caller's
    keyword arguments (defaults included); the others were chosen by the
    op. ``axes`` maps a collective's mesh axes to ``jax.shard_map`` axes
    (``axis_names`` of :func:`pk.jax.kernel`)."""
    given = tuple(sorted((k, param(v)) for k, v in params.items() if v is not None))
    return _cached(file, entry, given, frozenset(keywords), axes)


def block(n: int, preferred: int, *, divides: bool = True, align: int = 8) -> int:
    """A default block size for a dimension of ``n``.

    The whole dimension when it is no larger than ``preferred`` (always a
    valid block); otherwise the largest size no larger than ``preferred``
    that is a multiple of ``align`` and, when the kernel's grid needs it
    (``divides``), divides ``n``. A kernel whose grid uses ``cdiv`` takes
    ``preferred`` itself and masks its last, partial block.
    """
    if n <= preferred:
        return n
    if not divides:
        return preferred
    b = preferred - preferred % align
    while b >= align:
        if n % b == 0:
            return b
        b -= align
    # No aligned divisor: one block spans the dimension.
    return n

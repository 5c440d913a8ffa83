"""A JAX function's reverse-mode derivative split into two functions, a
forward that returns the residuals and a backward that takes them, as two
torch ops need it.

``jax.vjp`` returns the pullback as a ``jax.tree_util.Partial`` whose
leaves are the residuals the function's rules saved (for a pk op, what
its ``jax.custom_vjp`` forward rule returned: flash attention's
logsumexp, say). ``forward`` returns the outputs followed by those
leaves; ``backward`` rebuilds the pullback from them and applies it. So
the backward kernels run on the saved residuals, and no forward kernel
runs again.

A residual that is one of the inputs or outputs is not returned again:
it is found by identity (``is``) at trace time, and ``backward`` takes
it from the inputs and outputs it is given. Torch keeps the inputs and
outputs anyway; copying them into more outputs would cost memory.

Invariants:
1. The function differentiated is the same in both halves, traced with
   the same shapes, dtypes and static arguments, so the pullback has the
   same tree structure and the same residual kinds in both; ``backward``
   reads them from an abstract trace (``jax.eval_shape``), which runs no
   kernel.
2. Only floating-point inputs are differentiated; the others (integer
   ids, group sizes, absent optional inputs) are constants of the
   differentiated function and get no gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

#: What a residual leaf is: ("in", i) the i-th input, ("out", j) the j-th
#: output, ("new", None) a value only the forward computes.
Kind = tuple[str, Any]


def differentiable(inputs: Sequence[Any]) -> list[int]:
    """The positions of the floating-point inputs (invariant 2)."""
    return [
        i for i, x in enumerate(inputs) if x is not None and jnp.issubdtype(x.dtype, jnp.floating)
    ]


def _pullback(
    f: Callable[..., tuple[Any, ...]], inputs: Sequence[Any]
) -> tuple[tuple[Any, ...], Any, list[Kind]]:
    """``jax.vjp`` of ``f`` over its floating-point inputs: the outputs,
    the pullback, and the kind of each of its leaves."""
    diff = differentiable(inputs)

    def g(*xs: Any) -> tuple[Any, ...]:
        args = list(inputs)
        for i, x in zip(diff, xs):
            args[i] = x
        return f(*args)

    outs, pb = jax.vjp(g, *(inputs[i] for i in diff))
    kinds: list[Kind] = []
    for leaf in jax.tree.leaves(pb):
        i = next((i for i, x in enumerate(inputs) if x is leaf), None)
        j = next((j for j, y in enumerate(outs) if y is leaf), None)
        kinds.append(("in", i) if i is not None else ("out", j) if j is not None else ("new", None))
    return outs, pb, kinds


def forward(f: Callable[..., tuple[Any, ...]], inputs: Sequence[Any]) -> list[Any]:
    """``f(*inputs)``'s outputs, then the residuals the backward needs that
    are neither inputs nor outputs."""
    outs, pb, kinds = _pullback(f, inputs)
    leaves = jax.tree.leaves(pb)
    return list(outs) + [leaf for leaf, (k, _) in zip(leaves, kinds) if k == "new"]


def backward(
    f: Callable[..., tuple[Any, ...]],
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    residuals: Sequence[Any],
    cotangents: Sequence[Any],
) -> list[Any]:
    """The gradients of the floating-point inputs (in input order), given
    what ``forward`` returned: ``outputs`` and ``residuals``."""
    found: dict[str, Any] = {}

    def probe(*xs: Any) -> Any:
        _, pb, kinds = _pullback(f, xs)
        found["kinds"] = kinds
        return pb

    # Invariant 1: the abstract trace gives the tree and the kinds.
    shape = jax.eval_shape(probe, *inputs)
    fresh = iter(residuals)
    leaves = []
    for k, n in found["kinds"]:
        leaves.append(inputs[n] if k == "in" else outputs[n] if k == "out" else next(fresh))
    pb = jax.tree.unflatten(jax.tree.structure(shape), leaves)
    return list(pb(tuple(cotangents)))

"""The pk kernel library (``pk.ops``) as PyTorch ops.

Each function of ``pk.ops`` that runs a kernel is here under the same
name, with the same arguments (tensors positionally, parameters as
keywords) and the same defaults, and is registered as custom ops of the
``pk`` namespace through TorchTPU's ``jax_op`` (see ``pk.torch``)::

    o = pk.torch.ops.flash_attention(q, k, v, causal=True)   # torch.ops.pk.flash_attention
    o.sum().backward()                                         # pk's dq and dkv kernels

Every op is three custom ops (one for a forward-only op):

- ``pk::NAME``, the forward, which is what a call without gradients runs;
- ``pk::NAME_fwd``, the forward that also returns the residuals its
  backward reads (``Tensor[]``: the outputs, then the residuals), run when
  a floating-point tensor argument requires a gradient; its autograd
  formula (``torch.library.register_autograd``) calls
- ``pk::NAME_bwd``, the backward: the pullback of the ``pk.ops`` function
  rebuilt from the saved residuals (``_vjp``), which runs the library's
  backward kernels (flash's ``dq`` and ``dkv``, ``rms_norm_bwd``, ...).

So eager autograd and ``torch.compile`` (AOTAutograd traces the forward
and backward ops with fake tensors) see the same kernels JAX's
``jax.grad`` runs. A keyword argument that changes what an op returns
makes an op of its own: ``rms_norm(x, w, residual=r)`` is
``pk::rms_norm_residual(x, w, residual)`` and returns ``(y, h)``.
``splash_attention`` takes its mask as a description (``"causal"``,
``"local:L,R"``, ...); a dense mask is a static value JAX builds the mask
info from, which a torch op cannot take.

Invariants:
1. The torch signature of an op is derived from the ``pk.ops`` function's:
   positional parameters are tensors; the keyword parameters named in
   ``_OPTIONAL_TENSORS`` are optional tensors (``None`` when absent); the
   other keywords are static arguments of their annotated type, and an
   unannotated (``Any``) one takes its type from its default (a string, a
   dtype, or ``None``: an optional number), except the optional dtypes of
   ``_OPTIONAL_DTYPES``.
2. ``NAME``, ``NAME_fwd`` and ``NAME_bwd`` call the same ``pk.ops``
   function with the same static arguments.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import torch

import pk.ops
from . import _convert, _register, _vjp

#: The torch namespace of the library's ops.
NAMESPACE = "pk"

#: Functions of pk.ops that run no kernel (``checks`` is a context manager).
NOT_OPS = frozenset({"kernels_dir", "make_group_metadata", "checks"})

#: The inference kernels: forward only, as in pk.ops.
FORWARD_ONLY = frozenset(
    {"paged_attention", "ragged_paged_attention", "qmatmul_w8a8", "qmatmul_fp8"}
)

#: Keyword tensors that add outputs when given: each such op is two ops,
#: without the tensor and with it (``NAME_residual``, the tensor last).
_SPLIT = {"residual": 2}

#: Keyword parameters that take a dtype or ``None`` (``None``: as the
#: pk.ops function decides, e.g. the inputs' dtype).
_OPTIONAL_DTYPES = frozenset({"preferred_element_type"})

#: The keyword parameters of pk.ops functions that are tensors, absent
#: when ``None``; the other keywords are static (invariant 1).
_OPTIONAL_TENSORS = {
    "flash_attention": ("q_segment_ids", "kv_segment_ids"),
    "paged_attention": ("k_scale", "v_scale"),
}


@dataclasses.dataclass(frozen=True)
class Spec:
    """One torch op over a pk.ops function."""

    #: The op's name in the `pk` namespace.
    name: str
    #: The pk.ops function.
    fn: Callable[..., Any]
    #: Tensor parameters: the positional ones (the split tensor last),
    #: then the optional ones.
    tensors: tuple[str, ...]
    optional: tuple[str, ...]
    #: Static parameters (keyword-only, annotated, with defaults).
    statics: tuple[inspect.Parameter, ...]
    #: The keyword the pk.ops function takes the split tensor by, if any.
    split: str | None
    outputs: int
    differentiable: bool

    def call(self, arrays: list[Any], statics: dict[str, Any]) -> tuple[Any, ...]:
        """The pk.ops function on ``arrays`` (one per tensor parameter,
        ``None`` for an absent optional one): its outputs, as a tuple."""
        n = len(self.tensors) - (1 if self.split else 0)
        kw = dict(zip(self.optional, arrays[len(self.tensors) :]))
        if self.split:
            kw[self.split] = arrays[n]
        out = self.fn(*arrays[:n], **kw, **statics)
        return out if isinstance(out, tuple) else (out,)

    def signature(self, *extra: inspect.Parameter, returns: Any) -> inspect.Signature:
        """The op's signature (invariant 1), with ``extra`` positional
        parameters after the tensors."""
        ps = [_register.tensor(n) for n in self.tensors] + list(extra)
        ps += [_register.tensor(n, optional=True) for n in self.optional]
        return inspect.Signature(ps + list(self.statics), return_annotation=returns)

    def split_args(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], extra: tuple[str, ...] = ()
    ) -> tuple[list[Any], dict[str, Any], list[Any]]:
        """A call's tensors (in parameter order, ``None`` for an absent
        optional one), static arguments, and the ``extra`` parameters
        that :meth:`signature` put after the tensors."""
        bound = dict(zip(self.tensors + extra + self.optional, args))
        bound.update(kwargs)
        arrays = [bound.get(n) for n in self.tensors + self.optional]
        statics = {p.name: bound[p.name] for p in self.statics if p.name in bound}
        return arrays, statics, [bound[n] for n in extra]


def _static(p: inspect.Parameter) -> inspect.Parameter:
    """A keyword parameter of a pk.ops function as a static argument of
    its torch op (invariant 1)."""
    if p.annotation is not Any:
        return p
    d = p.default
    if p.name in _OPTIONAL_DTYPES:
        return p.replace(annotation=np.dtype | None)
    if isinstance(d, str):
        return p.replace(annotation=str)
    if d is None:
        return p.replace(annotation=float | None)
    try:
        return p.replace(annotation=np.dtype, default=np.dtype(d))
    except TypeError:
        raise TypeError(f"pk.torch cannot type the parameter `{p.name}` = {d!r}") from None


def specs(name: str, fn: Callable[..., Any]) -> list[Spec]:
    """The torch ops of the pk.ops function ``fn``: one, or two when a
    keyword tensor adds outputs (``_SPLIT``)."""
    sig = inspect.signature(fn, eval_str=True)
    tensors = tuple(p.name for p in sig.parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD)
    keywords = [p for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
    optional = _OPTIONAL_TENSORS.get(name, ())
    statics = tuple(_static(p) for p in keywords if p.name not in optional and p.name not in _SPLIT)
    split = next((p.name for p in keywords if p.name in _SPLIT), None)
    base = Spec(name, fn, tensors, optional, statics, None, 1, name not in FORWARD_ONLY)
    if split is None:
        return [base]
    with_split = dataclasses.replace(
        base, name=f"{name}_{split}", tensors=tensors + (split,), split=split, outputs=_SPLIT[split]
    )
    return [base, with_split]


#: The parameters of a ``_bwd`` op after the tensors: what the forward
#: saved, and the outputs' gradients.
_SAVED = ("outputs", "residuals", "cotangents")


def _qualified(name: str) -> str:
    return f"{NAMESPACE}::{name}"


def _define_forward(s: Spec) -> Any:
    def forward(*args: Any, **kwargs: Any) -> Any:
        arrays, statics, _ = s.split_args(args, kwargs)
        out = s.call(arrays, statics)
        return out[0] if s.outputs == 1 else out

    return _register.define(_qualified(s.name), forward, s.signature(returns=_register.returns(s.outputs)))


def _define_training(s: Spec) -> tuple[Any, Any]:
    """The ``_fwd`` and ``_bwd`` ops of ``s``, the first differentiable."""

    def f(statics: dict[str, Any]) -> Callable[..., tuple[Any, ...]]:
        return lambda *arrays: s.call(list(arrays), statics)

    def fwd(*args: Any, **kwargs: Any) -> list[Any]:
        arrays, statics, _ = s.split_args(args, kwargs)
        return _vjp.forward(f(statics), arrays)

    def bwd(*args: Any, **kwargs: Any) -> list[Any]:
        arrays, statics, (outputs, residuals, cotangents) = s.split_args(args, kwargs, _SAVED)
        return _vjp.backward(f(statics), arrays, outputs, residuals, cotangents)

    listed = list[jax.Array]
    fwd_op = _register.define(_qualified(s.name + "_fwd"), fwd, s.signature(returns=listed))
    extra = [
        inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=listed)
        for n in _SAVED
    ]
    bwd_op = _register.define(_qualified(s.name + "_bwd"), bwd, s.signature(*extra, returns=listed))
    _wire_autograd(s, fwd_op, bwd_op)
    return fwd_op, bwd_op


def _wire_autograd(s: Spec, fwd_op: Any, bwd_op: Any) -> None:
    """Registers the autograd formula of ``s``'s ``_fwd`` op: its backward
    is the ``_bwd`` op on the saved inputs, outputs and residuals."""
    names = s.tensors + s.optional

    def setup_context(
        ctx: Any,
        inputs: tuple[Any, ...],
        output: list[torch.Tensor],
        keyword_only_inputs: dict[str, Any] | None = None,
    ) -> None:
        # The tensors are the positional inputs; the static arguments are
        # keyword-only (torch passes them apart when the op has any).
        tensors = list(inputs[: len(names)])
        ctx.present = [t is not None for t in tensors]
        ctx.counts = (sum(ctx.present), s.outputs)
        ctx.statics = dict(keyword_only_inputs or {})
        ctx.save_for_backward(*(t for t in tensors if t is not None), *output)

    def backward(ctx: Any, grads: list[torch.Tensor | None]) -> tuple[Any, ...]:
        saved = ctx.saved_tensors
        n_in, n_out = ctx.counts
        it = iter(saved[:n_in])
        tensors = [next(it) if p else None for p in ctx.present]
        outputs = list(saved[n_in : n_in + n_out])
        residuals = list(saved[n_in + n_out :])
        cts = [g if g is not None else torch.zeros_like(o) for g, o in zip(grads, outputs)]
        positional = tensors[: len(s.tensors)]
        keywords = dict(zip(s.optional, tensors[len(s.tensors) :]))
        gs = iter(bwd_op(*positional, outputs, residuals, cts, **keywords, **ctx.statics))
        # Invariant 2 of _vjp: a gradient for each floating-point tensor.
        # One gradient per positional input: the static arguments, all
        # keyword-only, take none.
        return tuple(next(gs) if t is not None and t.is_floating_point() else None for t in tensors)

    fwd_op.register_autograd(backward, setup_context=setup_context)


@dataclasses.dataclass
class _Op:
    """The torch ops of one spec (``CustomOpDef``s): the forward, and for a
    differentiable spec the ``_fwd`` and ``_bwd`` ops."""

    spec: Spec
    forward: Any
    train: Any = None
    backward: Any = None


#: Every op registered, by its name in the `pk` namespace.
REGISTERED: dict[str, _Op] = {}


def _torch_static(v: Any) -> Any:
    """A static argument as the torch schema takes it (a numpy/JAX dtype
    as a torch dtype)."""
    if isinstance(v, (type, np.dtype)) and not isinstance(v, torch.dtype):
        try:
            return _convert.torch_dtype(v)
        except TypeError:
            return v
    return v


def _make(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The Python function ``pk.torch.ops.NAME``: picks the op for the
    arguments (the split variant, the differentiable forward) and calls
    it."""
    ops = []
    for s in specs(name, fn):
        o = _Op(s, _define_forward(s))
        if s.differentiable:
            o.train, o.backward = _define_training(s)
        REGISTERED[s.name] = o
        ops.append(o)
    sig = inspect.signature(fn)

    def select(*args: Any, **kwargs: Any) -> tuple[_Op, list[Any], dict[str, Any]]:
        """The ops of a call, and its arguments as their schema takes them."""
        bound = sig.bind(*args, **kwargs)
        split = next((k for k in _SPLIT if bound.arguments.get(k) is not None), None)
        o = ops[1] if split else ops[0]
        given = bound.arguments
        ordered = [given[n] for n in o.spec.tensors]
        kw = {n: given[n] for n in o.spec.optional if n in given}
        kw.update({p.name: _torch_static(given[p.name]) for p in o.spec.statics if p.name in given})
        return o, ordered, kw

    def call(*args: Any, **kwargs: Any) -> Any:
        o, ordered, kw = select(*args, **kwargs)
        grad = torch.is_grad_enabled() and any(
            isinstance(t, torch.Tensor) and t.requires_grad for t in ordered + list(kw.values())
        )
        if o.train is None or not grad:
            return o.forward(*ordered, **kw)
        outs = o.train(*ordered, **kw)
        return outs[0] if o.spec.outputs == 1 else tuple(outs[: o.spec.outputs])

    def forward_call(*args: Any, **kwargs: Any) -> tuple[Any, list[Any], dict[str, Any]]:
        o, ordered, kw = select(*args, **kwargs)
        return o.forward, ordered, kw

    # `pk.torch.export` exports the op a call without gradients runs.
    call._pk_forward = forward_call  # type: ignore[attr-defined]

    call.__name__ = call.__qualname__ = name
    call.__doc__ = (
        f"``pk.ops.{name}`` as a PyTorch op (``torch.ops.{NAMESPACE}.{name}``); "
        "arguments and defaults as there.\n\n" + (fn.__doc__ or "")
    )
    call.__signature__ = sig  # type: ignore[attr-defined]
    return call


__all__: list[str] = []
for _name in pk.ops.__all__:
    if _name in NOT_OPS:
        continue
    globals()[_name] = _make(_name, getattr(pk.ops, _name))
    __all__.append(_name)

"""pk kernels as JAX functions.

``pk.jax.kernel(path, **params)`` returns a callable usable inside
``jax.jit``, ``jax.vmap``, ``jax.shard_map`` and ``jax.export``:

- lowered for TPU (``lowering_platforms=("tpu",)``, ``jax.export`` with
  ``platforms=("tpu",)``, or a TPU backend), a call is the same
  ``stablehlo.custom_call @tpu_custom_call`` that ``pkc build`` writes for
  the kernel and parameters: Mosaic body, operand order, output aliases,
  cost estimate and scoped VMEM limit. So an exported function that calls
  pk kernels is what TorchTPU's ``torch.tpu.pallas.jax_op`` registers
  (``pk.torch`` makes such ops).
- lowered for CPU, a call is an XLA FFI custom call (``pk_cpu_kernel``,
  typed FFI) whose handler, native code in ``pk._pk``, runs the kernel's
  CPU reference (its WebAssembly, strictly) on XLA's buffers. A model
  runs on a laptop or in CI with pk's reference numerics, unchanged.

Sizes that the kernel declares as a bare parameter (``a: T[M, K]``) and
dtypes declared as a dtype parameter are taken from the arguments when not
given; every new combination of shapes compiles once and is cached. A
conflict raises ``pk.PkError`` naming the operand and dimension.

``jax.vmap`` of a kernel adds a leading ``parallel`` grid axis over the
batch, as Pallas batches a ``pallas_call``: the batched operands gain a
leading dimension with a squeezed block indexed by the new axis, and the
result is one kernel call (on TPU, one custom call whose grid steps may be
split across TensorCores). Where the kernel cannot be batched that way (a
package, no grid, scalar prefetch, a batched operand that is a whole array
or in HBM), each batch element is one call,
in sequence, through ``jax.lax.map`` (on TPU, a loop around the custom
call).

A kernel with a mesh (``mesh (d in n)``: a collective, with remote copies
and semaphores) is called inside ``jax.shard_map``, once per device as
every shard_map'd operation is. Its mesh axes are axes of the shard_map
mesh: by default those of the same names, or those given by
``axis_names`` (one shard_map axis name, or a tuple of names flattened
row-major, per kernel axis), with the same sizes (``PK5006`` otherwise).
On TPU the kernel's device ids are the program's logical device ids, so
its axes must be all the (non-trivial) axes of the device mesh, in order.
On CPU each device's call passes its coordinates (from
``jax.lax.axis_index``) to the FFI handler, and the calls of one launch
meet in one simulated mesh (``pk_runtime``'s CPU mesh, all its checks
included); devices along the other shard_map axes form separate meshes.
A device whose peers never reach the call fails after
``PK_MESH_JOIN_TIMEOUT`` seconds (60) with ``PK1047``.

The CPU lowering refers to kernels compiled in this process, so a module
lowered for CPU cannot be serialized for use elsewhere; the TPU lowering is
self-contained.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence
from functools import partial
from typing import Any

import jax
import numpy as np
from jax._src import dispatch
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax.extend.core import Primitive
from jax.interpreters import batching

import pk as _pkg
from . import _pk
from .errors import PkError

__all__ = ["Kernel", "kernel", "FFI_TARGET"]

#: The name of the FFI target of the CPU lowering.
FFI_TARGET = "pk_cpu_kernel"

jax.ffi.register_ffi_target(FFI_TARGET, _pk.ffi_handler(), platform="cpu", api_version=1)

_call_p = Primitive("pk_call")
_call_p.multiple_results = True
_call_p.def_impl(partial(dispatch.apply_primitive, _call_p))


def _varying(avals: Sequence[Any]) -> frozenset[str]:
    """The shard_map axes any of ``avals`` varies over."""
    axes: frozenset[str] = frozenset()
    for a in avals:
        manual = getattr(a, "manual_axis_type", None)
        axes |= frozenset(manual.varying) if manual is not None else frozenset(getattr(a, "vma", ()))
    return axes


def _abstract_eval(
    *avals: Any, kernel: _pk.Kernel, whole_mesh: bool = True
) -> list[jax.core.ShapedArray]:
    # Inside shard_map, outputs vary over the mesh axes any input varies
    # over (the kernel runs on each device's block; a kernel with a mesh
    # takes its coordinates, which vary over its axes).
    varying = _varying(avals)
    base = next((a for a in avals if getattr(a, "manual_axis_type", None) is not None), None)
    outs = []
    for _, d, shape in kernel.outputs:
        if base is None:
            outs.append(jax.core.ShapedArray(tuple(shape), _pkg.numpy_dtype(d)))
            continue
        # The output's sharding is the inputs' mesh with no dimension
        # split, as for any value of a shard_map body.
        mesh = base.sharding.mesh
        sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
        out = jax.core.ShapedArray(tuple(shape), _pkg.numpy_dtype(d), sharding=sharding)
        outs.append(out.update(manual_axis_type=base.manual_axis_type.update(varying=varying)))
    return outs


_call_p.def_abstract_eval(_abstract_eval)


#: Call sites of kernels with a mesh, one number per lowered call: the
#: devices' calls of one site meet (see python/src/rendezvous.rs).
_sites = itertools.count(1)


def _cpu_lowering(
    ctx: mlir.LoweringRuleContext, *args: ir.Value, kernel: _pk.Kernel, whole_mesh: bool = True
) -> Any:
    # A kernel without a CPU reference raises what `pkc run` says of it.
    kernel.check_cpu()
    aliases = {i: o for i, o in kernel.aliases}
    rule = jax.ffi.ffi_lowering(FFI_TARGET, operand_output_aliases=aliases or None)
    if kernel.mesh:
        # The last operand is the device's coordinates (see `_coordinates`).
        return rule(ctx, *args, kernel_id=np.int64(kernel.ffi_id), site=np.int64(next(_sites)))
    return rule(ctx, *args, kernel_id=np.int64(kernel.ffi_id))


def _main_of(module: ir.Module) -> ir.Operation:
    """The ``main`` function of a module ``pkc build`` wrote."""
    for func in module.body.operations:
        if func.operation.name == "func.func":
            return func.operation
    raise PkError("internal error: no main function in pk's StableHLO module")


def _attributes(op: ir.Operation) -> dict[str, ir.Attribute]:
    """An operation's attributes by name."""
    named = (op.attributes[i] for i in range(len(op.attributes)))
    return {a.name: a.attr for a in named}


def _tpu_lowering(
    ctx: mlir.LoweringRuleContext, *args: ir.Value, kernel: _pk.Kernel, whole_mesh: bool = True
) -> Any:
    # pk's own module for these shapes is parsed into the lowering's
    # context and the body of its `main` replayed on the traced operands,
    # every attribute as pkc build wrote it: the `tpu_custom_call`, and
    # before it, for a kernel with dynamic grid extents, the ops that read
    # each bound from its scalar-prefetch operand (the call takes the
    # bounds ahead of its operands, as Pallas passes them).
    if kernel.mesh:
        if not whole_mesh:
            raise _mesh_error(
                f"kernel `{kernel.name}` runs over a part of the device mesh; on TPU its "
                "device ids are the program's logical ids, so its mesh axes must be all "
                "the axes of the device mesh (of more than one device), in order",
                "shard_map over a mesh of the kernel's axes only, or give the kernel "
                "every axis (axis_names=((\"a\", \"b\"),) flattens two)",
            )
        # The coordinates operand is the CPU handler's; Mosaic reads the
        # device id from the chip.
        args = args[:-1]
    module = ir.Module.parse(kernel.stablehlo, context=ctx.module_context.context)
    (block,) = _main_of(module).regions[0].blocks
    values: dict[ir.Value, ir.Value] = {a: x for a, x in zip(block.arguments, args)}
    for inner in block.operations:
        op = inner.operation
        operands = [values[v] for v in op.operands]
        if op.name in ("func.return", "return"):
            return operands
        new = ir.Operation.create(
            op.name,
            results=[r.type for r in op.results],
            operands=operands,
            attributes=_attributes(op),
        )
        values.update(zip(op.results, new.results))
    raise PkError("internal error: pk's StableHLO main does not return")


mlir.register_lowering(_call_p, _cpu_lowering, platform="cpu")
mlir.register_lowering(_call_p, _tpu_lowering, platform="tpu")


_batched_cache: dict[tuple[Any, ...], _pk.Kernel | None] = {}
_batched_lock = threading.Lock()


def _batched_kernel(kernel: _pk.Kernel, flags: tuple[bool, ...], size: int) -> _pk.Kernel | None:
    key = (kernel, flags, size)
    with _batched_lock:
        if key in _batched_cache:
            return _batched_cache[key]
    k = kernel.batched(list(flags), size)
    with _batched_lock:
        _batched_cache[key] = k
    return k


def _batching_rule(
    args: Sequence[Any], dims: Sequence[int | None], *, kernel: _pk.Kernel, whole_mesh: bool = True
) -> tuple[list[Any], list[int]]:
    if kernel.mesh:
        raise _mesh_error(
            f"kernel `{kernel.name}` runs on a mesh and cannot be batched by jax.vmap",
            "call it once per batch element (jax.lax.map), or fold the batch into its arrays",
        )
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    moved = [jax.numpy.moveaxis(a, d, 0) if d is not None else a for a, d in zip(args, dims)]
    flags = tuple(d is not None for d in dims)
    batched = _batched_kernel(kernel, flags, size)
    if batched is not None:
        # The kernel with a leading parallel grid axis over the batch: one
        # call, the batch's blocks squeezed (see the module doc).
        return list(_call_p.bind(*moved, kernel=batched)), [0] * len(kernel.outputs)

    # The fallback: one call per batch element, in sequence.
    def one(xs: list[Any]) -> list[Any]:
        it = iter(xs)
        call_args = [next(it) if f else a for a, f in zip(moved, flags)]
        return _call_p.bind(*call_args, kernel=kernel)

    outs = jax.lax.map(one, [m for m, f in zip(moved, flags) if f])
    return list(outs), [0] * len(outs)


batching.primitive_batchers[_call_p] = _batching_rule


class Kernel:
    """A pk kernel as a JAX function.

    Call it with one array per input operand, in the order the kernel
    declares them; it returns the output (a tuple for several). Each
    distinct combination of argument shapes and dtypes specialises and
    compiles the kernel once.

    Attributes:
        path: the ``.pk`` file or package directory.
        name: the kernel's name (``kernel=`` or the file's only kernel).
        params: the parameters given (``{name: value}``, pk spelling).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        kernel: str | None = None,
        targets: Sequence[str] = ("v5e",),
        axis_names: Sequence[str | Sequence[str]] | None = None,
        **params: Any,
    ) -> None:
        self.path = os.fspath(path)
        self.axis_names = None if axis_names is None else tuple(
            a if isinstance(a, str) else tuple(a) for a in axis_names
        )
        self.params = {k: _pkg.param_value(v) for k, v in params.items()}
        self.targets = tuple(targets)
        self._kernel = kernel
        # Where given parameters came from, in words for a failed
        # assertion's note; `pk.ops` describes its own (see `_origins_of`).
        self._origins: dict[str, str] = {}
        self._lock = threading.Lock()
        self._cache: dict[tuple[Any, ...], _pk.Kernel] = {}
        self._package: _pk.Kernel | None = None
        if os.path.isdir(self.path):
            if self.params:
                raise _pk.package_params_error(self.path, sorted(self.params))
            self._package = _pkg.open_package(self.path)
            self.name = self._package.name
        else:
            self.name = kernel or os.path.splitext(os.path.basename(self.path))[0]
        self.__doc__ = self._describe()

    def _describe(self) -> str:
        if self._package is not None:
            k = self._package
            ins = ", ".join(f"{n}: {d}{list(s)}" for n, d, s in k.inputs)
            outs = ", ".join(f"{n}: {d}{list(s)}" for n, d, s in k.outputs)
            return f"pk kernel `{k.name}` (package {self.path}): ({ins}) -> ({outs})"
        given = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"pk kernel from {self.path} [{given}]; sizes not given come from the arguments"

    def specialise(self, *args: Any) -> _pk.Kernel:
        """The compiled kernel for arguments of these shapes and dtypes
        (arrays, or anything with ``shape`` and ``dtype`` such as
        ``jax.ShapeDtypeStruct``)."""
        sig = tuple((_pkg.dtype_name(a.dtype), tuple(int(d) for d in a.shape)) for a in args)
        with self._lock:
            hit = self._cache.get(sig)
        if hit is not None:
            return hit
        if self._package is not None:
            k = self._package
        else:
            given = list(self.params.items())
            ps = _pk.infer_params(
                self.path, self._kernel, given, [(d, list(s)) for d, s in sig]
            )
            k = _pk.compile(self.path, self._kernel, ps, list(self.targets), self._origins_of(ps))
        k.check_args([(d, list(s)) for d, s in sig])
        with self._lock:
            self._cache.setdefault(sig, k)
        return k

    def _origins_of(self, params: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Where each parameter of a specialisation came from, in the words
        of a failed assertion's note (never "the command line"): given to
        :func:`kernel` (or as ``pk.ops`` described it), or taken from the
        arrays of the call."""
        return [
            (n, self._origins.get(n, "given to pk.jax.kernel") if n in self.params else "taken from the arrays")
            for n, _ in params
        ]

    def __call__(self, *args: Any) -> Any:
        arrays = [a if hasattr(a, "shape") and hasattr(a, "dtype") else jax.numpy.asarray(a) for a in args]
        k = self.specialise(*arrays)
        if k.mesh:
            coords, whole = _coordinates(k, self.axis_names)
            outs = _call_p.bind(*arrays, coords, kernel=k, whole_mesh=whole)
        else:
            outs = _call_p.bind(*arrays, kernel=k)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self) -> str:
        ps = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"pk.jax.kernel({self.path!r}{ps})"


def _mesh_error(message: str, help: str) -> PkError:
    return PkError(f"error[PK5006]: {message}\nhelp: {help}", "PK5006")


def _names(a: str | tuple[str, ...]) -> tuple[str, ...]:
    return (a,) if isinstance(a, str) else a


def _linear(names: Sequence[str], sizes: dict[str, int]) -> Any:
    """This device's row-major index over the shard_map axes ``names``."""
    index = jax.numpy.int32(0)
    for n in names:
        index = index * sizes[n] + jax.lax.axis_index(n).astype(jax.numpy.int32)
    return index


def _coordinates(
    k: _pk.Kernel, axis_names: tuple[str | tuple[str, ...], ...] | None
) -> tuple[Any, bool]:
    """The operand that tells the CPU handler where this device is: its
    index on the kernel's mesh and its group (the row-major index over the
    shard_map's other manual axes), as ``int32[2]``; and whether the
    kernel's axes are the whole device mesh (what TPU device ids need)."""
    axes = [n for n, _ in k.mesh]
    text = ", ".join(f"{n}: {s}" for n, s in k.mesh)
    mapped = axis_names if axis_names is not None else tuple(axes)
    if len(mapped) != len(axes):
        raise _mesh_error(
            f"kernel `{k.name}` has {len(axes)} mesh axes ({text}), but axis_names gives "
            f"{len(mapped)}: {list(mapped)}",
            "give one shard_map axis name (or a tuple of names) per mesh axis of the kernel",
        )
    mesh = jax.sharding.get_abstract_mesh()
    manual = tuple(getattr(mesh, "manual_axes", ()) or ())
    if mesh.empty or not manual:
        raise _mesh_error(
            f"kernel `{k.name}` runs on a mesh ({text}) and was called outside "
            "jax.shard_map",
            f"call it inside jax.shard_map over a mesh with the axes {list(mapped)}, "
            "where each device calls it with its own shard",
        )
    sizes = dict(mesh.shape)
    for (name, size), a in zip(k.mesh, mapped):
        names = _names(a)
        unknown = [n for n in names if n not in manual]
        if unknown:
            raise _mesh_error(
                f"mesh axis `{name}` of kernel `{k.name}` is shard_map axis "
                f"{' x '.join(repr(n) for n in names)}, but the shard_map mesh has no manual "
                f"axis {unknown[0]!r} (its manual axes: {list(manual)})",
                "name the kernel's mesh axes like the shard_map mesh's axes, or pass "
                "axis_names=(...) to pk.jax.kernel",
            )
        have = int(np.prod([sizes[n] for n in names]))
        if have != size:
            raise _mesh_error(
                f"mesh axis `{name}` of kernel `{k.name}` has {size} devices, but shard_map "
                f"axis {' x '.join(repr(n) for n in names)} has {have}",
                f"specialise the kernel for the shard_map mesh (its size parameter = {have})",
            )
    used = [n for a in mapped for n in _names(a)]
    device = jax.numpy.int32(0)
    for (_, size), a in zip(k.mesh, mapped):
        device = device * size + _linear(_names(a), sizes)
    others = [n for n in manual if n not in used]
    group = _linear(others, sizes)
    coords = jax.numpy.stack([device, group]).astype(jax.numpy.int32)
    wide = lambda names: tuple(n for n in names if sizes[n] > 1)  # noqa: E731
    whole = wide(used) == wide(mesh.axis_names)
    return coords, whole


def kernel(
    path: str | os.PathLike[str],
    *,
    kernel: str | None = None,
    targets: Sequence[str] = ("v5e",),
    axis_names: Sequence[str | Sequence[str]] | None = None,
    **params: Any,
) -> Kernel:
    """A pk kernel as a JAX function.

    Args:
        path: a ``.pk`` file, or a package directory built by ``pkc build``
            (opened and verified against its manifest; its parameters are
            fixed).
        kernel: the kernel to use when the file defines several.
        targets: the TPU generations the kernel is checked for (their
            smallest VMEM bounds the scoped VMEM limit, as in ``pkc
            build``).
        axis_names: for a kernel with a mesh, the ``jax.shard_map`` axis
            (a name, or a tuple of names flattened row-major) each of its
            mesh axes runs over; by default the axes of the same names.
        **params: kernel parameters, such as ``bm=256`` or ``T="bf16"``
            (``T=jnp.bfloat16`` works too). Sizes and dtypes not given are
            taken from the arguments where the kernel declares an operand
            dimension as a bare parameter (``M`` in ``a: T[M, K]``); the
            others keep their defaults.

    Returns:
        A callable ``k(*inputs) -> output | tuple[outputs]`` that works
        under ``jax.jit``, ``jax.vmap``, ``jax.shard_map`` and
        ``jax.export``: on TPU a Mosaic custom call, on CPU the CPU
        reference through XLA's FFI.

    Raises:
        pk.PkError: the source does not compile for these parameters (the
            rendered diagnostic, with carets), the package is not valid, or
            the arguments conflict with the kernel (``PK5001``-``PK5004``).

    Example::

        mm = pk.jax.kernel("kernels/matmul.pk", bm=128, bn=128, bk=128)
        c = jax.jit(mm)(a, b)   # M, N, K and T from a and b
    """
    return Kernel(path, kernel=kernel, targets=targets, axis_names=axis_names, **params)

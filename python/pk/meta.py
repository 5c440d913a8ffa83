"""Host-side metadata of library kernels: the arrays a kernel of
``kernels/`` reads as scalar prefetch, computed by pk's Rust builders (the
same code as ``pkc meta``).

Splash attention (``kernels/splash.pk``)
-----------------------------------------
``splash_mask_info(mask, bq=..., bkv=...)`` cuts a mask into ``[bq, bkv]``
blocks and returns the kernels' mask info as numpy arrays, keyed by the
kernels' operand names: ``block_mask``, ``data_next``, ``mask_next`` (for
the forward and ``dq`` kernels), ``dkv_block_mask``, ``dkv_data_next``,
``dkv_mask_next`` (for the ``dk``/``dv`` kernel) and ``mask_blocks`` (the
distinct partial blocks, int8; its first dimension is the kernels' ``NP``).
"""

from __future__ import annotations

from typing import Union

import numpy as np

from . import _pk
from .errors import PkError

__all__ = ["splash_mask_info"]

MaskLike = Union[str, np.ndarray]


def splash_mask_info(
    mask: MaskLike,
    *,
    bq: int,
    bkv: int,
    sq: int | None = None,
    skv: int | None = None,
    shrink: bool = False,
) -> dict[str, np.ndarray]:
    """The splash attention mask info of ``mask``.

    ``mask`` is ``"causal"``, ``"full"``, ``"local:LEFT,RIGHT"`` (a
    sliding window: row ``r`` sees keys ``r - LEFT .. r + RIGHT``),
    ``"chunked:SIZE"``, or a dense ``[S_q, S_kv]`` boolean array (true
    where a query sees a key). A description needs ``sq`` (``skv``
    defaults to it); a dense mask gives both. A bad mask or size raises
    ``pk.PkError`` with its code (``PK5101`` .. ``PK5104``), as
    ``pkc meta splash`` reports it.

    With ``shrink``, the grid is shrunk to the live blocks of each row (and
    column, for the ``dkv_*`` arrays), as JAX's ``shrink_grid``: the
    forward arrays get ``NKS`` columns and the dkv arrays ``NQS``, which
    the kernels take as parameters (``data_next.shape[1]`` and
    ``dkv_data_next.shape[1]``).
    """
    if isinstance(mask, str):
        if sq is None:
            raise PkError(f"`sq` is needed for the mask `{mask}`", "PK5102")
        spec, dense = mask, None
        skv = sq if skv is None else skv
    else:
        m = np.asarray(mask)
        if m.ndim != 2 or not (m.dtype == np.bool_ or np.issubdtype(m.dtype, np.integer)):
            raise PkError(
                f"a dense mask is a 2-D bool array, not {m.dtype} of shape {m.shape}", "PK5104"
            )
        if (sq, skv) not in ((None, None), m.shape):
            raise PkError(
                f"the dense mask is {list(m.shape)} but sq, skv are {sq}, {skv}", "PK5102"
            )
        sq, skv = m.shape
        spec, dense = None, np.ascontiguousarray(m != 0).view(np.uint8).tobytes()
    arrays = _pk.splash_mask_info(spec, dense, int(sq), int(skv), int(bq), int(bkv), bool(shrink))
    return {
        name: np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape).copy()
        for name, dtype, shape, data in arrays
    }

"""Dtype and shape queries: `can_cast`, `isdtype`, `broadcast_shapes`, `iterable`, and NumPy's abstract scalar
types and warning class that `jax.numpy` re-exports (`character`, `flexible`, `object_`, `ComplexWarning`)."""

from __future__ import annotations

import operator

import numpy as np

from .. import core, dtypes
from ..core import Array, Tracer
from . import util

ComplexWarning = np.exceptions.ComplexWarning
character = np.character
flexible = np.flexible
object_ = np.object_
iterable = np.iterable


def _as_dtype(x) -> np.dtype:
    if isinstance(x, (Array, Tracer)):
        return core.get_aval(x).dtype
    if hasattr(x, "dtype") and not isinstance(x, type):
        return np.dtype(x.dtype)
    if isinstance(x, type) and hasattr(x, "dtype") and isinstance(x.dtype, np.dtype):
        return x.dtype  # fluxion's scalar types (fluxion.numpy.float32, ...)
    return np.dtype(x)


def can_cast(from_, to, casting: str = "safe") -> bool:
    """Whether a value of dtype `from_` (a dtype, scalar type or array) can be cast to `to` under NumPy's `casting`
    rule ('no', 'equiv', 'safe', 'same_kind', 'unsafe')."""
    return bool(np.can_cast(_as_dtype(from_), _as_dtype(to), casting))


_KINDS = {
    "bool": lambda dt: dt == dtypes.bool_,
    "signed integer": lambda dt: dtypes.is_integer(dt) and dt.kind == "i",
    "unsigned integer": lambda dt: dtypes.is_integer(dt) and dt.kind == "u",
    "integral": dtypes.is_integer,
    "real floating": dtypes.is_float,
    "complex floating": dtypes.is_complex,
    "numeric": lambda dt: dt != dtypes.bool_,
}


def isdtype(dtype, kind) -> bool:
    """The Array-API kind test: whether `dtype` is of `kind` ('bool', 'signed integer', 'unsigned integer',
    'integral', 'real floating' (bfloat16 included), 'complex floating', 'numeric', a dtype, or a tuple of these).

    Raises:
      ValueError: an unknown kind name. TypeError: a kind that is neither a name nor a dtype.
    """
    dt = _as_dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _KINDS:
                raise ValueError(f"name {k!r} is not a valid dtype kind; expected one of {sorted(_KINDS)}")
            if _KINDS[k](dt):
                return True
        else:
            try:
                if dt == _as_dtype(k):
                    return True
            except TypeError:
                raise TypeError(f"Expected kind to be a dtype, string, or tuple; got {k!r}") from None
    return False


def broadcast_shapes(*shapes) -> tuple:
    """The shape that arrays of the given shapes (tuples or ints) broadcast to.

    Raises:
      ValueError: incompatible shapes.
    """
    norm = [(operator.index(s),) if np.ndim(s) == 0 and not isinstance(s, tuple) else tuple(operator.index(d) for d in s)
            for s in shapes]
    if not norm:
        return ()
    return util.broadcast_shapes(*norm)

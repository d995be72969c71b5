"""`segment_sum`, `segment_prod`, `segment_max`, `segment_min` (mirror `jax.ops`): reduce the rows of `data` that
share a segment id.

`segment_ids[i]` names the segment of `data[i]`; the result has `num_segments` rows, each the reduction of its rows,
or the reduction's identity for an empty segment (0, 1, the dtype's lowest / highest value: -inf / inf for floats).
Ids outside `[0, num_segments)` are dropped, as JAX's default `mode` does. Built on scatter (`.at[ids].add` ...), so
every transformation applies.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import core, dtypes
from .creation import full
from .ufuncs import where
from .util import asarray_arg


def _num_segments(segment_ids, num_segments) -> int:
    if num_segments is not None:
        return int(num_segments)
    ids = core.concrete_value(segment_ids)
    if ids is None:
        raise ValueError("segment reductions need num_segments under jit/vmap (the number of segments must be "
                         "known to give the result its shape); pass num_segments=")
    return int(np.max(ids)) + 1 if np.size(ids) else 0


def _segment(kind: str, data: Any, segment_ids: Any, num_segments, indices_are_sorted: bool, unique_indices: bool,
             bucket_size, mode) -> Any:
    data = asarray_arg(data, f"segment_{kind}")
    segment_ids = asarray_arg(segment_ids, f"segment_{kind}")
    ids_aval = core.get_aval(segment_ids)
    if not dtypes.is_integer(ids_aval.dtype):
        raise TypeError(f"segment_{kind}: segment_ids must be integers, got {ids_aval.dtype.name}")
    if ids_aval.ndim != 1 or (data.ndim and ids_aval.shape[0] != data.shape[0]):
        raise ValueError(f"segment_{kind}: segment_ids must be one id per row of data: got shape {ids_aval.shape} for "
                         f"data of shape {data.shape}")
    if mode not in (None, "drop", "fill"):
        raise ValueError(f"segment_{kind}: mode must be None or 'drop' (ids out of range are dropped), got {mode!r}")
    n = _num_segments(segment_ids, num_segments)
    dt = data.dtype
    if kind == "sum":
        init = 0
    elif kind == "prod":
        init = 1
    elif dtypes.is_inexact(dt):
        init = -np.inf if kind == "max" else np.inf
    elif dt == np.bool_:
        init = kind != "max"
    else:
        info = np.iinfo(dt)
        init = info.min if kind == "max" else info.max
    out = full((n,) + tuple(data.shape[1:]), init, dtype=dt)
    # A negative id is out of range (dropped), not counted from the end as `.at[]` would count it.
    segment_ids = where(segment_ids < 0, n, segment_ids)
    at = out.at[segment_ids]
    kw = dict(mode="drop", indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    if kind == "sum":
        return at.add(data, **kw)
    if kind == "prod":
        return at.multiply(data, **kw)
    return at.max(data, **kw) if kind == "max" else at.min(data, **kw)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size=None, mode=None):
    """Sum of the rows of `data` per segment (see the module docstring). `bucket_size` is accepted (it only
    splits the scatter on accelerators)."""
    return _segment("sum", data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted: bool = False,
                 unique_indices: bool = False, bucket_size=None, mode=None):
    """Product of the rows of `data` per segment (1 for an empty segment)."""
    return _segment("prod", data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size=None, mode=None):
    """Maximum of the rows of `data` per segment (the dtype's lowest value for an empty segment)."""
    return _segment("max", data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size=None, mode=None):
    """Minimum of the rows of `data` per segment (the dtype's highest value for an empty segment)."""
    return _segment("min", data, segment_ids, num_segments, indices_are_sorted, unique_indices, bucket_size, mode)

"""Sorting and searching for `fluxion.numpy`.

* Sorting -- `sort`, `argsort`, `lexsort`, `searchsorted`, `digitize` -- is built on the multi-operand `lax.sort`
  (stable, NaNs last, -0.0 == 0.0): `argsort` and `lexsort` sort an iota along with the keys; `searchsorted` sorts
  the queries together with `a` and counts the elements of `a` that precede each query; `digitize` is two
  `searchsorted` calls, for increasing and decreasing bins.
* Searching for nonzero elements -- `nonzero`, `flatnonzero`, `argwhere`, `compress`, `extract` -- has a result
  whose shape depends on the values, so it needs a concrete argument, or a static `size=` (the positions are then
  computed with a cumulative sum and a scatter, and padded with a fill value), as in JAX.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..core import Array, Tracer
from ..lax import cumulative as cum
from ..lax import elementwise as ew
from ..lax import indexing as lind
from ..lax import reductions as red
from ..lax import sorting as lsort
from ..lax import structural as st
from ..lax.indexing import GatherScatterMode
from .indexing import _FLAT_DNUMS, _concrete_or_error, take
from .util import asarray_arg, broadcast_to_shape, canonicalize_axis, promote_dtypes


# --------------------------------------------------------------------------------------------------------------
# Sorting
# --------------------------------------------------------------------------------------------------------------

def _axis_or_flat(a, axis):
    if axis is None:
        return st.reshape(a, (core.get_aval(a).size,)), 0
    return a, canonicalize_axis(axis, core.get_aval(a).ndim)


@staged_as_call("sort")
def sort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True, descending: bool = False):
    """Sorted copy of `a` along `axis` (flattened if None); NaNs last; stable.

    >>> import fluxion.numpy as jnp
    >>> jnp.sort(jnp.array([3.0, jnp.nan, 1.0, 2.0]))
    Array([ 1.,  2.,  3., nan], dtype=float32)
    >>> jnp.sort(jnp.array([[3, 1], [2, 4]]), axis=0)
    Array([[2, 1],
           [3, 4]], dtype=int32)
    >>> jnp.sort(jnp.array([3, 1, 2]), descending=True)
    Array([3, 2, 1], dtype=int32)
    """
    if order is not None:
        raise TypeError("The 'order' argument to jnp.sort is not supported.")
    a, axis = _axis_or_flat(asarray_arg(a, "sort"), axis)
    if core.get_aval(a).ndim == 0:
        return a
    if descending:
        # As JAX: the ascending sort reversed (equal values, such as 0.0 and -0.0, come out in reversed order).
        return st.rev(lsort.sort(a, dimension=axis), (axis,))
    return lsort.sort(a, dimension=axis)


@staged_as_call("argsort")
def argsort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True, descending: bool = False):
    """Indices that sort `a` along `axis` (stable; with `descending`, ties keep their original order).

    >>> import fluxion.numpy as jnp
    >>> jnp.argsort(jnp.array([3, 1, 2]))
    Array([1, 2, 0], dtype=int32)
    >>> jnp.argsort(jnp.array([1, 3, 1]), descending=True)
    Array([1, 0, 2], dtype=int32)
    """
    if order is not None:
        raise TypeError("The 'order' argument to jnp.argsort is not supported.")
    a, axis = _axis_or_flat(asarray_arg(a, "argsort"), axis)
    shape = core.get_aval(a).shape
    idt = dtypes.default_int_dtype()
    if not shape:
        return Array(np.zeros((), idt))
    iota = st.broadcasted_iota(idt, shape, axis)
    if descending:
        # Sort the reversed array ascending; reversing that order gives a stable descending order.
        _, perm = lsort.sort([st.rev(a, (axis,)), iota], dimension=axis, num_keys=1)
        return ew.sub(np.array(shape[axis] - 1, idt), st.rev(perm, (axis,)))
    _, perm = lsort.sort([a, iota], dimension=axis, num_keys=1)
    return perm


@staged_as_call("lexsort")
def lexsort(keys: Sequence, axis: int = -1):
    """Indirect stable sort by several keys; the *last* key is the primary one (as NumPy).

    >>> import fluxion.numpy as jnp
    >>> surnames = jnp.array([1, 0, 1])
    >>> first = jnp.array([2, 5, 1])
    >>> jnp.lexsort((first, surnames))
    Array([1, 2, 0], dtype=int32)
    """
    keys = [asarray_arg(k, "lexsort") for k in keys]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shape = core.get_aval(keys[0]).shape
    if any(core.get_aval(k).shape != shape for k in keys):
        raise ValueError("all keys need to be the same shape")
    if not shape:
        return Array(np.zeros((), dtypes.default_int_dtype()))
    axis = canonicalize_axis(axis, len(shape))
    iota = st.broadcasted_iota(dtypes.default_int_dtype(), shape, axis)
    return lsort.sort(list(reversed(keys)) + [iota], dimension=axis, num_keys=len(keys))[-1]


def searchsorted(a, v, side: str = "left", sorter=None, *, method: str = "scan"):
    """Insertion points of `v` into the sorted 1-d `a` (NaN-aware total order, as jnp).

    Computed by one stable sort of `a` and `v` together (v placed before equal elements of `a` for side='left',
    after them for 'right'): the count of `a` elements preceding each `v` is its insertion point.

    Raises:
      ValueError: `a` is not 1-d, or an unknown side/method.

    >>> import fluxion.numpy as jnp
    >>> a = jnp.array([1, 2, 2, 3])
    >>> jnp.searchsorted(a, jnp.array([2, 4]))
    Array([1, 4], dtype=int32)
    >>> jnp.searchsorted(a, 2, side='right')
    Array(3, dtype=int32)
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"searchsorted: unknown method {method!r}")
    a = asarray_arg(a, "searchsorted")
    v = asarray_arg(v, "searchsorted")
    if core.get_aval(a).ndim != 1:
        raise ValueError(f"searchsorted: a should be 1-dimensional, got shape {core.get_aval(a).shape}")
    if sorter is not None:
        a = take(a, sorter, mode="clip")
    a, v = promote_dtypes(a, v)
    v_shape = core.get_aval(v).shape
    n, m = core.get_aval(a).shape[0], int(np.prod(v_shape, dtype=np.int64))
    # As JAX: int32 indices whenever `a`'s length fits (also with x64 on); the internal positions run to n + m.
    idt = dtypes.canonicalize_dtype(np.int64) if n > np.iinfo(np.int32).max else np.dtype(np.int32)
    wide = dtypes.canonicalize_dtype(np.int64) if n + m > np.iinfo(np.int32).max else idt
    if m == 0 or n == 0:
        return st.full(v_shape, 0, idt)
    keys = st.concatenate([a, st.reshape(v, (m,))], 0)
    a_flag, v_flag = (1, 0) if side == "left" else (0, 1)
    flags = st.concatenate([st.full((n,), a_flag, np.int8), st.full((m,), v_flag, np.int8)], 0)
    _, _, perm = lsort.sort([keys, flags, st.iota(wide, n + m)], dimension=0, num_keys=2)
    is_a = ew.lt(perm, np.array(n, wide))
    a_before = cum.cumsum(ew.convert_element_type(is_a, wide), 0)
    # Scatter each v's count back to v's position; a-entries go to slot m, which is dropped.
    target = ew.select_n(is_a, ew.sub(perm, np.array(n, wide)), st.full((n + m,), m, wide))
    out = lind.scatter(st.full((m,), 0, wide), st.reshape(target, (n + m, 1)), a_before, _FLAT_DNUMS,
                       mode=GatherScatterMode.FILL_OR_DROP, unique_indices=True)
    return st.reshape(ew.convert_element_type(out, idt) if wide != idt else out, v_shape)


def digitize(x, bins, right: bool = False, *, method: str | None = None):
    """Index of the bin of each `x` for monotonic 1-d `bins` (increasing or decreasing), as np.digitize.

    >>> import fluxion.numpy as jnp
    >>> jnp.digitize(jnp.array([0.5, 1.0, 2.5]), jnp.array([1.0, 2.0, 3.0]))
    Array([0, 1, 2], dtype=int32)
    >>> jnp.digitize(jnp.array([1.0]), jnp.array([1.0, 2.0]), right=True)
    Array([0], dtype=int32)
    """
    x = asarray_arg(x, "digitize")
    bins = asarray_arg(bins, "digitize")
    if core.get_aval(bins).ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array, got shape {core.get_aval(bins).shape}")
    n = core.get_aval(bins).shape[0]
    idt = dtypes.default_int_dtype()
    if n == 0:
        return st.full(core.get_aval(x).shape, 0, idt)
    side = "left" if right else "right"
    meth = "scan" if method is None else method
    inc = searchsorted(bins, x, side=side, method=meth)
    dec = ew.sub(np.array(n, idt), searchsorted(st.rev(bins, (0,)), x, side=side, method=meth))
    first, last = st.slice(bins, (0,), (1,)), st.slice(bins, (n - 1,), (n,))
    increasing = st.reshape(ew.ge(*promote_dtypes(last, first)), ())
    return ew.select_n(increasing, dec, inc)


# --------------------------------------------------------------------------------------------------------------
# Searching for nonzero elements
# --------------------------------------------------------------------------------------------------------------

def nonzero(a, *, size: int | None = None, fill_value=None) -> tuple:
    """Indices of the nonzero elements of `a`, one int array per dimension.

    Args:
      size: if given, the result has exactly `size` entries (truncated, or padded with `fill_value`), which makes
        it usable under jit.
      fill_value: padding value (default 0), a scalar or one per dimension.

    Raises:
      ValueError: `a` is 0-d.
      ConcretizationTypeError: `size` is None and `a` is traced.

    >>> import fluxion.numpy as jnp
    >>> jnp.nonzero(jnp.array([[0, 1], [2, 0]]))
    (Array([0, 1], dtype=int32), Array([1, 0], dtype=int32))
    >>> jnp.nonzero(jnp.array([0, 5, 0, 7]), size=3, fill_value=-1)
    (Array([ 1,  3, -1], dtype=int32),)
    """
    a = asarray_arg(a, "nonzero")
    shape = core.get_aval(a).shape
    if not shape:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d(scalar).nonzero() "
                         "instead.")
    idt = dtypes.default_int_dtype()
    if size is None:
        v = _concrete_or_error(a, "jnp.nonzero", "Pass a static size=... (and fill_value=...) to use it under jit.")
        return tuple(Array(p.astype(idt)) for p in np.nonzero(v))
    size = int(size)
    n = int(np.prod(shape, dtype=np.int64))
    flat = st.reshape(a, (n,))
    mask = flat if core.get_aval(flat).dtype == dtypes.bool_ else ew.ne(flat, st.full((), 0, core.get_aval(flat).dtype))
    mask_i = ew.convert_element_type(mask, idt)
    slot = ew.sub(cum.cumsum(mask_i, 0), np.array(1, idt)) if n else mask_i
    # Non-selected elements (and those past `size`) go to slot `size`, which the scatter drops.
    slot = ew.select_n(mask, st.full((n,), size, idt), slot) if n else slot
    flat_idx = lind.scatter(st.full((size,), 0, idt), st.reshape(slot, (n, 1)), st.iota(idt, n), _FLAT_DNUMS,
                            mode=GatherScatterMode.FILL_OR_DROP, unique_indices=True, indices_are_sorted=True)
    count = red.reduce_sum(mask_i, (0,)) if n else np.array(0, idt)
    valid = ew.lt(st.iota(idt, size), count)
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * len(shape)
    if len(fills) != len(shape):
        raise ValueError(f"nonzero: fill_value must be a scalar or have one entry per dimension ({len(shape)}), got "
                         f"{fill_value!r}")
    out = []
    stride = n
    for d, fv in zip(shape, fills):
        stride //= max(d, 1)
        coord = ew.div(flat_idx, np.array(max(stride, 1), idt)) if stride != 1 else flat_idx
        coord = ew.rem(coord, np.array(max(d, 1), idt))
        fv = st.full((size,), 0 if fv is None else fv, idt) if not isinstance(fv, (Array, Tracer)) else \
            broadcast_to_shape(ew.convert_element_type(fv, idt), (size,))
        out.append(ew.select_n(valid, fv, coord))
    return tuple(out)


def flatnonzero(a, *, size: int | None = None, fill_value=None):
    """Indices of the nonzero elements of the flattened `a` (see `nonzero` for size/fill_value).

    >>> import fluxion.numpy as jnp
    >>> jnp.flatnonzero(jnp.array([[0, 1], [2, 0]]))
    Array([1, 2], dtype=int32)
    """
    a = asarray_arg(a, "flatnonzero")
    return nonzero(st.reshape(a, (core.get_aval(a).size,)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size: int | None = None, fill_value=None):
    """(N, a.ndim) array of the indices of the nonzero elements of `a`.

    >>> import fluxion.numpy as jnp
    >>> jnp.argwhere(jnp.array([[0, 1], [2, 0]]))
    Array([[0, 1],
           [1, 0]], dtype=int32)
    """
    a = asarray_arg(a, "argwhere")
    nd = core.get_aval(a).ndim
    cols = nonzero(a if nd else st.reshape(a, (1,)), size=size, fill_value=fill_value)
    n = core.get_aval(cols[0]).shape[0]
    result = st.concatenate([st.reshape(c, (n, 1)) for c in cols], 1)
    return st.slice(result, (0, 0), (n, 0)) if nd == 0 else result


def compress(condition, a, axis: int | None = None, *, size: int | None = None, fill_value=0, out=None):
    """Elements of `a` along `axis` where `condition` (1-d) is true.

    Raises:
      ValueError: condition is not 1-d or has true entries past the axis length.

    >>> import fluxion.numpy as jnp
    >>> jnp.compress(jnp.array([True, False, True]), jnp.array([10, 20, 30]))
    Array([10, 30], dtype=int32)
    >>> jnp.compress(jnp.array([False, True]), jnp.array([[1, 2], [3, 4]]), axis=1)
    Array([[2],
           [4]], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    cond = asarray_arg(condition, "compress")
    a = asarray_arg(a, "compress")
    if core.get_aval(cond).ndim != 1:
        raise ValueError(f"condition must be a 1D array, got shape {core.get_aval(cond).shape}")
    if axis is None:
        a = st.reshape(a, (core.get_aval(a).size,))
        axis = 0
    axis = canonicalize_axis(axis, core.get_aval(a).ndim)
    n = core.get_aval(a).shape[axis]
    m = core.get_aval(cond).shape[0]
    if m > n:
        v = core.concrete_value(cond)
        if v is not None and np.any(np.asarray(v)[n:]):
            raise ValueError(f"compress: condition has True entries past the length {n} of axis {axis}")
        cond = st.slice(cond, (0,), (n,))
    if size is None:
        (idx,) = nonzero(cond)
        return take(a, idx, axis=axis, mode="clip")
    (idx,) = nonzero(cond, size=size, fill_value=n)
    return take(a, idx, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition, arr, *, size: int | None = None, fill_value=0):
    """Elements of the flattened `arr` where the flattened `condition` is nonzero.

    >>> import fluxion.numpy as jnp
    >>> jnp.extract(jnp.array([[1, 0], [0, 1]]), jnp.array([[5, 6], [7, 8]]))
    Array([5, 8], dtype=int32)
    >>> jnp.extract(jnp.array([1, 0, 1]), jnp.array([5, 6, 7]), size=3, fill_value=-1)
    Array([ 5,  7, -1], dtype=int32)
    """
    cond = asarray_arg(condition, "extract")
    arr = asarray_arg(arr, "extract")
    cond = st.reshape(cond, (core.get_aval(cond).size,))
    if core.get_aval(cond).dtype != dtypes.bool_:
        cond = ew.ne(cond, st.full((), 0, core.get_aval(cond).dtype))
    return compress(cond, st.reshape(arr, (core.get_aval(arr).size,)), size=size, fill_value=fill_value)

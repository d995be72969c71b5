"""Set operations on flattened arrays: `isin`, `union1d`, `intersect1d`, `setdiff1d`, `setxor1d`, and the
Array-API `unique_values`, `unique_counts`, `unique_inverse`, `unique_all`.

Every operation sorts and marks the entries to keep with a boolean mask, then compacts the marked entries to the
front (`nonzero(mask, size=...)` followed by a gather). With a static `size` the result has that length (truncated,
or padded with `fill_value`) and the whole computation traces, so it works under jit and vmap. Without `size` the
length is the number of marked entries, which needs concrete inputs: a traced input raises
ConcretizationTypeError, as in JAX.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..core import Array
from ..lax import elementwise as ew
from ..lax import structural as st
from .indexing import _concrete_or_error, take
from .util import arraylike_arg, asarray_arg, promote_dtypes

_SIZE_HINT = "Pass a static size=... (and optionally fill_value=...) to use it under jit."


def _ravel(x):
    return st.reshape(x, (core.get_aval(x).size,))


def _len(x) -> int:
    return core.get_aval(x).shape[0]


def _idt():
    return dtypes.default_int_dtype()


def _first_of_runs(s, equal_nan: bool = True):
    """For sorted 1-d `s`: True at the first entry of each run of equal values (NaNs form one run if equal_nan)."""
    from .shape import concatenate
    from .ufuncs import isnan
    n = _len(s)
    if n == 0:
        return st.full((0,), False, dtypes.bool_)
    hi, lo = st.slice_in_dim(s, 1, n, 1, 0), st.slice_in_dim(s, 0, n - 1, 1, 0)
    new = ew.ne(hi, lo)
    if equal_nan and dtypes.is_inexact(core.get_aval(s).dtype):
        new = ew.bitwise_and(new, ew.not_p.bind(ew.bitwise_and(isnan(hi), isnan(lo))))
    return concatenate([st.full((1,), True, dtypes.bool_), new])


def _result_size(mask, size, name, *inputs):
    """`size`, or (for size=None) the concrete number of True entries of `mask`."""
    if size is not None:
        return int(size)
    from .reductions import sum as _sum
    for x in inputs:
        _concrete_or_error(x, f"jnp.{name}", _SIZE_HINT)
    return int(_concrete_or_error(_sum(mask), f"jnp.{name}", _SIZE_HINT))


def _compact(values, mask, size: int, fill_value):
    """The entries of 1-d `values` where `mask` is True, moved to the front; `size` of them, padded with
    `fill_value` (a scalar, or None for the first selected entry)."""
    from .sorting import nonzero
    n = _len(values)
    dt = core.get_aval(values).dtype
    if n == 0:
        return st.full((size,), 0 if fill_value is None else fill_value, dt)
    # Unselected slots get the out-of-bounds index n, which marks them for padding below.
    (idx,) = nonzero(mask, size=size, fill_value=n)
    out = take(values, idx, mode="clip")
    if fill_value is None:
        if size == 0:
            return out
        # The smallest selected value; 0 when nothing is selected (as JAX pads an empty result).
        any_selected = ew.lt(st.index_in_dim(idx, 0, 0, False), Array(np.asarray(n, core.get_aval(idx).dtype), True))
        first = ew.select_n(any_selected, Array(np.zeros((), dt)), st.index_in_dim(out, 0, 0, False))
        fill = st.broadcast_in_dim(first, (size,), ())
    else:
        fill = st.broadcast_in_dim(ew.convert_element_type(asarray_arg(fill_value), dt), (size,), ())
    valid = ew.lt(idx, Array(np.asarray(n, core.get_aval(idx).dtype), True))
    return ew.select_n(valid, fill, out)


def _sorted_unique(x, equal_nan=True):
    from .sorting import sort
    s = sort(_ravel(x))
    return s, _first_of_runs(s, equal_nan)


# ---------------------------------------------------------------------------------------------------------------
# Membership
# ---------------------------------------------------------------------------------------------------------------

@staged_as_call("_in1d")
def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *, method: str = "auto"):
    """Whether each entry of `element` equals some entry of `test_elements` (NaN is in nothing); shaped like
    `element`. Computed by comparing all pairs, so it needs memory for element.size * test_elements.size booleans.

    Raises:
      ValueError: an unknown method (accepted: 'auto', 'compare_all', 'binary_search', 'sort', which all give the
        same result here).

    >>> import fluxion.numpy as jnp
    >>> jnp.isin(jnp.array([1, 2, 3, 4]), jnp.array([2, 4]))
    Array([False,  True, False,  True], dtype=bool)
    >>> jnp.isin(jnp.array([1, 2]), jnp.array([2]), invert=True)
    Array([ True, False], dtype=bool)
    """
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', 'binary_search', "
                         "'sort', and 'auto'")
    element = arraylike_arg(element, "isin")
    test_elements = arraylike_arg(test_elements, "isin", 1)
    e, t = promote_dtypes(element, test_elements)
    shape = core.get_aval(e).shape
    e, t = _ravel(e), _ravel(t)
    n, m = _len(e), _len(t)
    if n == 0 or m == 0:
        return st.full(shape, bool(invert), dtypes.bool_)
    eq = ew.eq(st.broadcast_in_dim(e, (n, m), (0,)), st.broadcast_in_dim(t, (n, m), (1,)))
    from .reductions import any as _any
    found = _any(eq, axis=1)
    return st.reshape(ew.not_p.bind(found) if invert else found, shape)


# ---------------------------------------------------------------------------------------------------------------
# Two-set operations
# ---------------------------------------------------------------------------------------------------------------

def _two(name, ar1, ar2):
    a, b = promote_dtypes(arraylike_arg(ar1, name), arraylike_arg(ar2, name, 1))
    return _ravel(a), _ravel(b)


def union1d(ar1, ar2, *, size: int | None = None, fill_value=None):
    """Sorted unique values found in either array (flattened).

    `size`/`fill_value`: see the module docstring; the default fill is the smallest value.

    >>> import fluxion.numpy as jnp
    >>> jnp.union1d(jnp.array([3, 1, 1]), jnp.array([2, 1]))
    Array([1, 2, 3], dtype=int32)
    """
    from .shape import concatenate
    a, b = _two("union1d", ar1, ar2)
    if _len(a) + _len(b) == 0 and size and fill_value is None:
        raise ValueError("jnp.union1d: for zero-sized input with nonzero size argument, fill_value must be specified")
    s, mask = _sorted_unique(concatenate([a, b]))
    return _compact(s, mask, _result_size(mask, size, "union1d", a, b), fill_value)


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None, fill_value=None):
    """Sorted unique values of `ar1` that are not in `ar2` (flattened), in `ar1`'s dtype; the default fill is 0.

    >>> import fluxion.numpy as jnp
    >>> jnp.setdiff1d(jnp.array([5, 1, 3, 3]), jnp.array([3]))
    Array([1, 5], dtype=int32)
    >>> jnp.setdiff1d(jnp.array([5, 1, 3]), jnp.array([3]), size=3)
    Array([1, 5, 0], dtype=int32)
    """
    # ar1's dtype is kept (ar2 only tests membership), as in JAX.
    a, b = _ravel(arraylike_arg(ar1, "setdiff1d")), _ravel(arraylike_arg(ar2, "setdiff1d", 1))
    if assume_unique:
        from .sorting import sort
        s = sort(a)
        mask = st.full((_len(s),), True, dtypes.bool_)
    else:
        s, mask = _sorted_unique(a)
    mask = ew.bitwise_and(mask, isin(s, b, invert=True)) if _len(s) else mask
    n = _result_size(mask, size, "setdiff1d", a, b)
    return _compact(s, mask, n, 0 if fill_value is None else fill_value)


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None, fill_value=None):
    """Sorted values that are in exactly one of the arrays (flattened); default fill: the smallest such value.

    >>> import fluxion.numpy as jnp
    >>> jnp.setxor1d(jnp.array([1, 2, 3]), jnp.array([2, 3, 4]))
    Array([1, 4], dtype=int32)
    """
    from ..lax import sorting as lsort
    from .shape import concatenate
    a, b = _two("setxor1d", ar1, ar2)
    if assume_unique:
        vals = concatenate([a, b])
        keep = st.full((_len(vals),), True, dtypes.bool_)
    else:
        (sa, ma), (sb, mb) = _sorted_unique(a), _sorted_unique(b)
        vals, keep = concatenate([sa, sb]), concatenate([ma, mb])
    n = _len(vals)
    if n == 0:
        return _compact(vals, keep, 0 if size is None else int(size), fill_value)
    # Sort by value with the kept (first-of-run) entries before the duplicates of the same value: the kept entries
    # of one value are then adjacent, and a value is in exactly one set when its kept entry has no kept neighbour
    # of the same value.
    s_vals, s_drop = lsort.sort([vals, ew.convert_element_type(ew.not_p.bind(keep), np.int8)], dimension=0,
                                num_keys=2)
    s_keep = ew.eq(s_drop, Array(np.asarray(0, np.int8), True))
    pair = ew.bitwise_and(ew.eq(st.slice_in_dim(s_vals, 1, n, 1, 0), st.slice_in_dim(s_vals, 0, n - 1, 1, 0)),
                          ew.bitwise_and(st.slice_in_dim(s_keep, 1, n, 1, 0), st.slice_in_dim(s_keep, 0, n - 1, 1, 0)))
    no = st.full((1,), False, dtypes.bool_)
    paired = ew.bitwise_or(concatenate([no, pair]), concatenate([pair, no]))
    mask = ew.bitwise_and(s_keep, ew.not_p.bind(paired))
    return _compact(s_vals, mask, _result_size(mask, size, "setxor1d", a, b), fill_value)


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *, size: int | None = None,
                fill_value=None):
    """Sorted unique values found in both arrays (flattened).

    With `return_indices`, also the indices of the first occurrences of those values in the flattened `ar1` and
    `ar2`; padded entries of the indices are out of bounds (the array's length). Default fill: the smallest value.

    >>> import fluxion.numpy as jnp
    >>> jnp.intersect1d(jnp.array([1, 3, 4, 3]), jnp.array([3, 1, 2]))
    Array([1, 3], dtype=int32)
    >>> jnp.intersect1d(jnp.array([1, 3]), jnp.array([3, 1]), return_indices=True)
    (Array([1, 3], dtype=int32), Array([0, 1], dtype=int32), Array([1, 0], dtype=int32))
    """
    from .shape import concatenate
    a, b = _two("intersect1d", ar1, ar2)
    na, nb = _len(a), _len(b)
    idt = _idt()
    if assume_unique:
        ua, ia, ma = a, st.iota(idt, na), st.full((na,), True, dtypes.bool_)
        ub, ib, mb = b, st.iota(idt, nb), st.full((nb,), True, dtypes.bool_)
    else:
        ua, ia, ma = _unique_first_index(a)
        ub, ib, mb = _unique_first_index(b)
    # Duplicates (mask False) stay in but are excluded from the pair test below.
    vals = concatenate([ua, ub])
    keep = concatenate([ma, mb])
    src = concatenate([ia, ew.add(ib, Array(np.asarray(na, idt), True))])
    n = na + nb
    if n == 0:
        out = _compact(vals, keep, 0 if size is None else int(size), fill_value)
        return (out, st.full(core.get_aval(out).shape, 0, idt), st.full(core.get_aval(out).shape, 0, idt)) \
            if return_indices else out
    from ..lax import sorting as lsort
    # Sort by value, then kept entries first, then source position: within a run of equal values the kept entry
    # from ar1 then comes right before the kept entry from ar2, and that adjacent pair marks a common value.
    not_keep = ew.convert_element_type(ew.not_p.bind(keep), np.int8)
    s_vals, s_nk, s_src = lsort.sort([vals, not_keep, src], dimension=0, num_keys=3)
    s_keep = ew.eq(s_nk, Array(np.asarray(0, np.int8), True))
    nxt_same = ew.eq(st.slice_in_dim(s_vals, 1, n, 1, 0), st.slice_in_dim(s_vals, 0, n - 1, 1, 0))
    both_kept = ew.bitwise_and(st.slice_in_dim(s_keep, 1, n, 1, 0), st.slice_in_dim(s_keep, 0, n - 1, 1, 0))
    first_from_a = ew.lt(st.slice_in_dim(s_src, 0, n - 1, 1, 0), Array(np.asarray(na, idt), True))
    second_from_b = ew.ge(st.slice_in_dim(s_src, 1, n, 1, 0), Array(np.asarray(na, idt), True))
    mask = ew.bitwise_and(ew.bitwise_and(nxt_same, both_kept), ew.bitwise_and(first_from_a, second_from_b))
    m = _result_size(mask, size, "intersect1d", a, b)
    out = _compact(st.slice_in_dim(s_vals, 0, n - 1, 1, 0), mask, m, fill_value)
    if not return_indices:
        return out
    i1 = _compact(st.slice_in_dim(s_src, 0, n - 1, 1, 0), mask, m, na)
    i2 = ew.sub(_compact(st.slice_in_dim(s_src, 1, n, 1, 0), mask, m, na + nb), Array(np.asarray(na, idt), True))
    return out, i1, i2


def _unique_first_index(x):
    """(values, first-occurrence indices, mask) of 1-d `x` in sorted order; mask marks the first of each run."""
    from ..lax import sorting as lsort
    n = _len(x)
    idt = _idt()
    if n == 0:
        return x, st.full((0,), 0, idt), st.full((0,), False, dtypes.bool_)
    s, perm = lsort.sort([x, st.iota(idt, n)], dimension=0, num_keys=1)
    return s, perm, _first_of_runs(s)


# ---------------------------------------------------------------------------------------------------------------
# Unique values with indices, inverse and counts
# ---------------------------------------------------------------------------------------------------------------

class _UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class _UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class _UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def unique_sized(x, *, size: int | None, fill_value=None, equal_nan: bool = True, name: str = "unique"):
    """Sorted unique values of the flattened `x` with first indices, inverse indices (shaped like `x`) and counts.

    The traced core of the unique family: with `size`, everything is static-shaped; padded values are
    `fill_value` (default: the smallest value), padded indices are those of the smallest value and padded counts 0.
    """
    from ..lax import sorting as lsort
    from .indexing import bincount
    from .reductions import cumsum
    x = arraylike_arg(x, name)
    shape = core.get_aval(x).shape
    flat = _ravel(x)
    n = _len(flat)
    idt = _idt()
    if n == 0:
        m = 0 if size is None else int(size)
        if m and fill_value is None:
            raise ValueError(f"jnp.{name}: for zero-sized input with nonzero size argument, fill_value must be "
                             "specified")
        empty_v = st.full((m,), 0 if fill_value is None else fill_value, core.get_aval(x).dtype)
        return _UniqueAllResult(empty_v, st.full((m,), 0, idt), st.full(shape, 0, idt), st.full((m,), 0, idt))
    s, perm = lsort.sort([flat, st.iota(idt, n)], dimension=0, num_keys=1)
    mask = _first_of_runs(s, equal_nan)
    m = _result_size(mask, size, name, x)
    values = _compact(s, mask, m, fill_value)
    indices = _compact(perm, mask, m, None)
    group = ew.sub(cumsum(ew.convert_element_type(mask, idt)), Array(np.asarray(1, idt), True))
    from ..lax import indexing as lind
    from .indexing import _FLAT_DNUMS
    inverse = lind.scatter(st.full((n,), 0, idt), st.reshape(perm, (n, 1)), group, _FLAT_DNUMS,
                           mode=lind.GatherScatterMode.FILL_OR_DROP, unique_indices=True)
    counts = bincount(group, length=m)
    return _UniqueAllResult(values, indices, st.reshape(inverse, shape), counts)


def unique_all(x, /, *, size: int | None = None, fill_value=None) -> _UniqueAllResult:
    """Unique values of the flattened `x` with the index of each one's first occurrence, the inverse indices
    (shaped like `x`) and the counts (the Array-API function).

    >>> import fluxion.numpy as jnp
    >>> r = jnp.unique_all(jnp.array([3, 1, 3]))
    >>> r.values, r.indices
    (Array([1, 3], dtype=int32), Array([1, 0], dtype=int32))
    >>> r.inverse_indices, r.counts
    (Array([1, 0, 1], dtype=int32), Array([1, 2], dtype=int32))
    """
    return unique_sized(x, size=size, fill_value=fill_value, equal_nan=False, name="unique_all")


def unique_counts(x, /, *, size: int | None = None, fill_value=None) -> _UniqueCountsResult:
    """Unique values of the flattened `x` and how often each occurs.

    >>> import fluxion.numpy as jnp
    >>> jnp.unique_counts(jnp.array([2, 1, 2, 2]))
    _UniqueCountsResult(values=Array([1, 2], dtype=int32), counts=Array([1, 3], dtype=int32))
    """
    r = unique_sized(x, size=size, fill_value=fill_value, equal_nan=False, name="unique_counts")
    return _UniqueCountsResult(r.values, r.counts)


def unique_inverse(x, /, *, size: int | None = None, fill_value=None) -> _UniqueInverseResult:
    """Unique values of the flattened `x` and, shaped like `x`, the index of each entry's value among them.

    >>> import fluxion.numpy as jnp
    >>> jnp.unique_inverse(jnp.array([[2, 1], [2, 5]]))
    _UniqueInverseResult(values=Array([1, 2, 5], dtype=int32), inverse_indices=Array([[1, 0],
           [1, 2]], dtype=int32))
    """
    r = unique_sized(x, size=size, fill_value=fill_value, equal_nan=False, name="unique_inverse")
    return _UniqueInverseResult(r.values, r.inverse_indices)


def unique_values(x, /, *, size: int | None = None, fill_value=None):
    """Sorted unique values of the flattened `x`.

    >>> import fluxion.numpy as jnp
    >>> jnp.unique_values(jnp.array([2, 1, 2, 5]))
    Array([1, 2, 5], dtype=int32)
    >>> jnp.unique_values(jnp.array([2, 1, 2]), size=3, fill_value=0)
    Array([1, 2, 0], dtype=int32)
    """
    return unique_sized(x, size=size, fill_value=fill_value, equal_nan=False, name="unique_values").values

"""Building and editing arrays: `insert`, `delete`, `resize`, `trim_zeros`, `put`, `put_along_axis`, `place`,
`fill_diagonal`, `diagflat`, `block`, `dsplit`, `unstack`, `partition`, `argpartition`, `packbits`, `unpackbits`,
`sort_complex`.

Arrays are immutable, so the "in-place" NumPy functions (`put`, `put_along_axis`, `place`, `fill_diagonal`) return
an updated copy and, as in JAX, require `inplace=False` to say so.

`insert` and `delete` take NumPy's whole index semantics (ints, slices, index arrays, booleans, negative indices,
value broadcasting) by running `np.insert`/`np.delete` on arrays of *positions* instead of values: the result
says, for every output element, which input or value element it is, and one gather builds the output. The index
argument must therefore be concrete, while the array and the values may be traced.
"""

from __future__ import annotations

import operator
import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes, errors
from ..core import Array, Tracer
from ..lax import elementwise as ew
from ..lax import sorting as lsort
from ..lax import structural as st
from .indexing import take
from .util import arraylike_arg, asarray_arg, canonicalize_axis, promote_dtypes


def _shape(x) -> tuple:
    return core.get_aval(x).shape


def _ravel(x):
    return st.reshape(x, (core.get_aval(x).size,))


def _static_index(obj, name):
    """`obj` (an int, slice or array) as a NumPy index; a traced array raises ConcretizationTypeError.

    Lists are rejected, as JAX does for array arguments (`TypeError`).
    """
    if isinstance(obj, slice):
        return obj
    if isinstance(obj, (list, tuple)):
        raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(obj)} at position 1.")
    if isinstance(obj, (Array, Tracer)):
        v = core.concrete_value(obj)
        if v is None:
            raise errors.ConcretizationTypeError(
                f"jnp.{name}: the index argument 'obj' must be concrete, got a traced array of shape "
                f"{core.get_aval(obj).str_short()} (the result shape depends on it).")
        return np.asarray(v)
    return obj


def _require_not_inplace(name, inplace):
    if inplace:
        raise ValueError(f"jax.numpy.{name} cannot modify arrays in-place, because JAX arrays are immutable. Pass "
                         "inplace=False to instead return an updated array.")


# ---------------------------------------------------------------------------------------------------------------
# Insertion, deletion, resizing, trimming
# ---------------------------------------------------------------------------------------------------------------

def insert(arr, obj, values, axis: int | None = None):
    """`arr` with `values` inserted before the index/indices `obj` along `axis` (the flattened array if None),
    with NumPy's rules for `obj` (concrete) and for broadcasting `values` (cast to `arr`'s dtype)."""
    a = arraylike_arg(arr, "insert")
    vals = ew.convert_element_type(asarray_arg(values, "insert"), core.get_aval(a).dtype)
    obj = _static_index(obj, "insert")
    if axis is None:
        a = _ravel(a)
        axis = 0
    axis = canonicalize_axis(axis, core.get_aval(a).ndim)
    pos_a = np.arange(core.get_aval(a).size).reshape(_shape(a))
    pos_v = -1 - np.arange(core.get_aval(vals).size).reshape(_shape(vals))
    pos = np.insert(pos_a, obj, pos_v, axis=axis)
    from_a = take(_ravel(a), Array(np.maximum(pos, 0).astype(np.int32)), mode="clip")
    if core.get_aval(vals).size == 0:
        return from_a
    from_v = take(_ravel(vals), Array(np.maximum(-1 - pos, 0).astype(np.int32)), mode="clip")
    return ew.select_n(Array(pos >= 0), from_v, from_a)


def delete(arr, obj, axis: int | None = None, *, assume_unique_indices: bool = False):
    """`arr` without the entries at the (concrete) index/indices or boolean mask `obj` along `axis` (the flattened
    array if None)."""
    a = arraylike_arg(arr, "delete")
    obj = _static_index(obj, "delete")
    if axis is None:
        a = _ravel(a)
        axis = 0
    axis = canonicalize_axis(axis, core.get_aval(a).ndim)
    pos = np.delete(np.arange(core.get_aval(a).size).reshape(_shape(a)), obj, axis=axis)
    return take(_ravel(a), Array(pos.astype(np.int32)), mode="clip")


def resize(a, new_shape):
    """An array of `new_shape` filled with the elements of the flattened `a`, repeated cyclically (zeros if `a` is
    empty).

    Raises:
      ValueError: a negative dimension.
    """
    a = arraylike_arg(a, "resize")
    new_shape = (operator.index(new_shape),) if np.ndim(new_shape) == 0 else tuple(
        operator.index(d) for d in new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    n = int(np.prod(new_shape, dtype=np.int64))
    size = core.get_aval(a).size
    if size == 0 or n == 0:
        return st.full(new_shape, 0, core.get_aval(a).dtype)
    idx = Array((np.arange(n) % size).astype(np.int32))
    return st.reshape(take(_ravel(a), idx, mode="clip"), new_shape)


def trim_zeros(filt, trim: str = "fb", axis=None):
    """`filt` without its leading ('f') and/or trailing ('b') all-zero slices along `axis` (all axes if None).

    Raises:
      ConcretizationTypeError: `filt` is traced (the result shape depends on its values).
    """
    f = arraylike_arg(filt, "trim_zeros")
    from .indexing import _concrete_or_error
    v = _concrete_or_error(f, "jnp.trim_zeros", "Its `filt` argument decides the result's length.")
    nd = v.ndim
    axes = set(range(nd)) if axis is None else {canonicalize_axis(x, nd) for x in (
        (axis,) if isinstance(axis, (int, np.integer)) else axis)}
    trim = trim.lower()
    if not axes or ("f" not in trim and "b" not in trim):
        return f
    slices = []
    for ax in range(nd):
        if ax not in axes:
            slices.append(slice(None))
            continue
        mask = np.any(v != 0, axis=tuple(i for i in range(nd) if i != ax))
        if not mask.any():
            slices.append(slice(0, 0))
            continue
        start = int(mask.argmax()) if "f" in trim else None
        stop = v.shape[ax] - int(mask[::-1].argmax()) if "b" in trim else None
        slices.append(slice(start, stop))
    return f[tuple(slices)]


# ---------------------------------------------------------------------------------------------------------------
# Updates returning a copy
# ---------------------------------------------------------------------------------------------------------------

def _tile_to_size(x, n):
    size = core.get_aval(x).size
    if size == n:
        return x
    return take(x, Array((np.arange(n) % size).astype(np.int32)), mode="clip")


def put(a, ind, v, mode: str | None = None, *, inplace: bool = True):
    """Copy of `a` with the flattened positions `ind` set to the values `v` (repeated cyclically).

    `mode`: None (as in JAX, positions go through `unravel_index`, so negative ones count from the end and those
    past the end clamp to the last element), 'clip' or 'wrap'.

    Raises:
      ValueError: inplace=True (arrays are immutable) or an unknown mode. NotImplementedError: mode='raise'.
    """
    from .indexing import unravel_index
    _require_not_inplace("put", inplace)
    a = arraylike_arg(a, "put")
    ind = _ravel(arraylike_arg(ind, "put", 1))
    v = _ravel(arraylike_arg(v, "put", 2))
    size = core.get_aval(a).size
    if size == 0 or core.get_aval(ind).size == 0 or core.get_aval(v).size == 0:
        return a
    v = _tile_to_size(ew.convert_element_type(v, core.get_aval(a).dtype), core.get_aval(ind).size)
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        from .ufuncs import clip
        ind = clip(ind, 0, size - 1)
        scatter_mode = "promise_in_bounds"
    elif mode == "wrap":
        from .ufuncs import remainder
        ind = remainder(ind, size)
        scatter_mode = "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    return a.at[tuple(unravel_index(ind, _shape(a)))].set(v, mode=scatter_mode)


def put_along_axis(arr, indices, values, axis: int | None, inplace: bool = True, *, mode: str | None = None):
    """Copy of `arr` with `values` written at `indices` along `axis` (the counterpart of `take_along_axis`;
    `indices` has `arr`'s rank, other dimensions broadcast).

    Raises:
      ValueError: inplace=True, or `indices` of another rank.
    """
    from .util import broadcast_shapes, broadcast_to_shape
    a = arraylike_arg(arr, "put_along_axis")
    indices = arraylike_arg(indices, "put_along_axis", 1)
    values = arraylike_arg(values, "put_along_axis", 2)
    _require_not_inplace("put_along_axis", inplace)
    original_shape = _shape(a)
    if axis is None:
        if core.get_aval(indices).ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        a = _ravel(a)
        axis = 0
    nd = core.get_aval(a).ndim
    if core.get_aval(indices).ndim != nd:
        raise ValueError(f"put_along_axis: indices and arr must have the same number of dimensions; got shapes "
                         f"{_shape(indices)} and {_shape(a)}")
    axis = canonicalize_axis(axis, nd)
    others = [d for d in range(nd) if d != axis]
    common = broadcast_shapes(tuple(_shape(a)[d] for d in others), tuple(_shape(indices)[d] for d in others))
    if common != tuple(_shape(a)[d] for d in others):
        raise ValueError(f"put_along_axis: indices of shape {_shape(indices)} do not broadcast to arr's shape "
                         f"{_shape(a)} outside axis {axis}")
    ishape = list(common)
    ishape.insert(axis, _shape(indices)[axis])
    ishape = tuple(ishape)
    indices = broadcast_to_shape(indices, ishape)
    idt = core.get_aval(indices).dtype
    index = tuple(indices if d == axis else st.broadcasted_iota(idt, ishape, d) for d in range(nd))
    out = a.at[index].set(broadcast_to_shape(ew.convert_element_type(values, core.get_aval(a).dtype), ishape),
                          mode=mode)
    return st.reshape(out, original_shape)


def place(arr, mask, vals, *, inplace: bool = True):
    """Copy of `arr` with the positions where `mask` is True set to `vals` taken in order (cyclically).

    Raises:
      ValueError: inplace=True, or `vals` is empty.
    """
    from .sorting import nonzero
    data = arraylike_arg(arr, "place")
    mask = arraylike_arg(mask, "place", 1)
    vals = _ravel(arraylike_arg(vals, "place", 2))
    _require_not_inplace("place", inplace)
    if core.get_aval(vals).size == 0:
        raise ValueError("Cannot place values from an empty array")
    n = core.get_aval(mask).size
    if n == 0:
        return data
    (idx,) = nonzero(_ravel(mask), size=n, fill_value=n)
    vals = _tile_to_size(ew.convert_element_type(vals, core.get_aval(data).dtype), n)
    return st.reshape(_ravel(data).at[idx].set(vals, mode="drop"), _shape(data))


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    """Copy of `a` (ndim >= 2, all dimensions equal if ndim > 2) with its main diagonal set to `val` (a scalar, or
    values used in order and repeated cyclically).

    Raises:
      ValueError: inplace=True, ndim < 2, or unequal dimensions for ndim > 2.
      NotImplementedError: wrap=True (as in JAX).
    """
    from .indexing import diag_indices
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    _require_not_inplace("fill_diagonal", inplace)
    a = arraylike_arg(a, "fill_diagonal")
    val = arraylike_arg(val, "fill_diagonal", 1)
    if core.get_aval(a).ndim < 2:
        raise ValueError("array must be at least 2-d")
    if core.get_aval(a).ndim > 2 and len(set(_shape(a))) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    n = min(_shape(a))
    idx = diag_indices(n, core.get_aval(a).ndim)
    val = ew.convert_element_type(val, core.get_aval(a).dtype)
    return a.at[idx].set(val if core.get_aval(val).ndim == 0 else _tile_to_size(_ravel(val), n))


# ---------------------------------------------------------------------------------------------------------------
# Building from pieces, splitting
# ---------------------------------------------------------------------------------------------------------------

def diagflat(v, k: int = 0):
    """2-D array with the flattened `v` on its `k`-th diagonal."""
    from .shape import diag
    return diag(_ravel(arraylike_arg(v, "diagflat")), k)


def _block_depth(x, name="block") -> int:
    if isinstance(x, tuple):
        raise TypeError(f"jnp.{name}: tuples are not allowed as the nested sequence, use lists")
    if isinstance(x, list):
        if not x:
            raise ValueError("jnp.block: lists cannot be empty")
        depths = {_block_depth(e) for e in x}
        if len(depths) != 1:
            raise ValueError("jnp.block: list depths are mismatched")
        return depths.pop() + 1
    return 0


def _block_leaves(x):
    if isinstance(x, list):
        for e in x:
            yield from _block_leaves(e)
    else:
        yield x


@staged_as_call("block")
def block(arrays):
    """Assembles an array from nested lists of blocks: the innermost lists are joined along the last axis, the
    next level along the second-to-last, and so on; blocks are first given leading unit dimensions up to
    max(nesting depth, largest block ndim) and promoted to a common dtype.

    Raises:
      ValueError: mismatched list depths or empty lists; TypeError: tuples in place of lists.
    """
    from .shape import concatenate
    depth = _block_depth(arrays)
    leaves = [asarray_arg(x, "block") for x in _block_leaves(arrays)]
    ndim = max([depth] + [core.get_aval(x).ndim for x in leaves])
    leaves = iter(promote_dtypes(*leaves))

    def build(x, level):
        if not isinstance(x, list):
            leaf = next(leaves)
            s = _shape(leaf)
            return st.reshape(leaf, (1,) * (ndim - len(s)) + s)
        parts = [build(e, level + 1) for e in x]
        return concatenate(parts, axis=ndim - depth + level)
    return build(arrays, 0)


def dsplit(ary, indices_or_sections):
    """Splits along the third axis (see `split`).

    Raises:
      ValueError: `ary` has fewer than 3 dimensions.
    """
    from .shape import split
    ary = arraylike_arg(ary, "dsplit")
    if core.get_aval(ary).ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def unstack(x, /, *, axis: int = 0) -> tuple:
    """The slices of `x` along `axis`, as a tuple of arrays (the inverse of `stack`).

    Raises:
      ValueError: `x` is 0-d.
    """
    x = arraylike_arg(x, "unstack")
    if core.get_aval(x).ndim == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was passed.")
    axis = canonicalize_axis(axis, core.get_aval(x).ndim)
    return tuple(st.index_in_dim(x, i, axis, False) for i in range(_shape(x)[axis]))


# ---------------------------------------------------------------------------------------------------------------
# Partial sorting
# ---------------------------------------------------------------------------------------------------------------

def _descending_key(arr):
    """An order-reversing map of `arr` that cannot overflow: `~x` for integers, `-x` for floats."""
    dt = core.get_aval(arr).dtype
    if dt == dtypes.bool_ or dtypes.is_integer(dt):
        return ew.not_p.bind(arr)
    return ew.neg(arr)


def _partition_setup(name, a, kth, axis):
    arr = arraylike_arg(a, name)
    if dtypes.is_complex(core.get_aval(arr).dtype):
        raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
    nd = core.get_aval(arr).ndim
    axis = canonicalize_axis(axis, nd)
    kth = canonicalize_axis(kth, _shape(arr)[axis])
    perm = list(range(nd))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return st.transpose(arr, tuple(perm)), kth, tuple(perm)


def partition(a, kth: int, axis: int = -1):
    """`a` rearranged along `axis` so that position `kth` holds the value it would have if sorted, with the
    `kth + 1` smallest values before it (ascending) and the others after it (descending), as JAX lays them out.
    NaNs are not placed as NumPy places them (as in JAX).

    Raises:
      NotImplementedError: complex input.
    """
    arr, kth, perm = _partition_setup("partition", a, kth, axis)
    n = _shape(arr)[-1]
    bottom = _descending_key(lsort.top_k(_descending_key(arr), kth + 1)[0])
    top = lsort.top_k(arr, n - kth - 1)[0]
    return st.transpose(st.concatenate([bottom, top], len(perm) - 1), perm)


def argpartition(a, kth: int, axis: int = -1):
    """Indices that partition `a` along `axis` (see `partition`): the indices of the `kth + 1` smallest values in
    ascending order of value, then the remaining indices in increasing order.

    Raises:
      NotImplementedError: complex input.
    """
    from .reductions import any as _any
    arr, kth, perm = _partition_setup("argpartition", a, kth, axis)
    n = _shape(arr)[-1]
    bottom_ind = lsort.top_k(_descending_key(arr), kth + 1)[1]
    idt = core.get_aval(bottom_ind).dtype
    shape = _shape(arr)
    # The remaining indices, ascending: top_k of a 0/1 "not yet taken" indicator keeps ties in index order.
    iota = st.broadcasted_iota(idt, shape[:-1] + (kth + 1, n), len(shape))
    taken = _any(ew.eq(st.broadcast_in_dim(bottom_ind, shape[:-1] + (kth + 1, n), tuple(range(len(shape)))), iota),
                 axis=-2)
    proxy = ew.convert_element_type(ew.not_p.bind(taken), np.float32)
    top_ind = lsort.top_k(proxy, n - kth - 1)[1]
    return st.transpose(st.concatenate([bottom_ind, ew.convert_element_type(top_ind, idt)], len(perm) - 1), perm)


@staged_as_call("sort_complex")
def sort_complex(a):
    """`a` sorted along its last axis (by real part, then imaginary part), as a complex array."""
    from .sorting import sort
    a = sort(arraylike_arg(a, "sort_complex"), axis=-1)
    dt = core.get_aval(a).dtype
    cdt = dt if dtypes.is_complex(dt) else dtypes.canonicalize_dtype(
        np.complex128 if dt == dtypes.float64 or dt.itemsize == 8 else np.complex64)
    return ew.convert_element_type(a, cdt)


# ---------------------------------------------------------------------------------------------------------------
# Bits
# ---------------------------------------------------------------------------------------------------------------

def _bit_shifts(bitorder):
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    shifts = np.arange(8, dtype=np.uint8)
    return shifts if bitorder == "little" else shifts[::-1].copy()


def packbits(a, axis: int | None = None, bitorder: str = "big"):
    """Packs the truth values of `a` into the bits of uint8 values along `axis` (flattened if None), padding the
    axis with False to a multiple of 8.

    Raises:
      TypeError: `a` is not integer or bool. ValueError: an unknown bitorder.
    """
    from .reductions import sum as _sum
    a = arraylike_arg(a, "packbits")
    dt = core.get_aval(a).dtype
    if not (dt == dtypes.bool_ or dtypes.is_integer(dt)):
        raise TypeError(f"Expected an input array of integer or boolean data type, got {dt}")
    shifts = _bit_shifts(bitorder)
    bits = ew.convert_element_type(ew.ne(a, Array(np.zeros((), dt), True)) if dt != dtypes.bool_ else a, np.uint8)
    if axis is None:
        bits = _ravel(bits)
        axis = 0
    axis = canonicalize_axis(axis, core.get_aval(bits).ndim)
    n = _shape(bits)[axis]
    rem = (-n) % 8
    if rem:
        cfg = [(0, 0, 0)] * core.get_aval(bits).ndim
        cfg[axis] = (0, rem, 0)
        bits = st.pad(bits, Array(np.zeros((), np.uint8)), cfg)
    shape = _shape(bits)
    grouped = st.reshape(bits, shape[:axis] + ((n + rem) // 8, 8) + shape[axis + 1:])
    sh = st.broadcast_in_dim(Array(shifts), _shape(grouped), (axis + 1,))
    packed = _sum(ew.shift_left(grouped, sh), axis=axis + 1, dtype=np.uint8)
    return packed


def unpackbits(a, axis: int | None = None, count: int | None = None, bitorder: str = "big"):
    """Unpacks each uint8 of `a` into 8 bits (uint8 0/1) along `axis` (flattened if None); `count` keeps that
    many bits (negative: drops -count from the end; more than available pads with zeros).

    Raises:
      TypeError: `a` is not uint8. ValueError: an unknown bitorder.
    """
    a = arraylike_arg(a, "unpackbits")
    if core.get_aval(a).dtype != dtypes.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    shifts = _bit_shifts(bitorder)
    if axis is None:
        a = _ravel(a)
        axis = 0
    axis = canonicalize_axis(axis, core.get_aval(a).ndim)
    shape = _shape(a)
    big = shape[:axis + 1] + (8,) + shape[axis + 1:]
    expanded = st.broadcast_in_dim(a, big, tuple(d for d in range(len(big)) if d != axis + 1))
    sh = st.broadcast_in_dim(Array(shifts), big, (axis + 1,))
    bits = ew.bitwise_and(ew.shift_right_logical(expanded, sh), Array(np.ones((), np.uint8), True))
    bits = st.reshape(bits, shape[:axis] + (shape[axis] * 8,) + shape[axis + 1:])
    if count is not None:
        total = shape[axis] * 8
        count = operator.index(count)
        keep = total + count if count < 0 else count
        keep = max(keep, 0)
        if keep <= total:
            bits = st.slice_in_dim(bits, 0, keep, 1, axis)
        else:
            cfg = [(0, 0, 0)] * len(_shape(bits))
            cfg[axis] = (0, keep - total, 0)
            bits = st.pad(bits, Array(np.zeros((), np.uint8)), cfg)
    return bits

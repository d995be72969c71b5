"""Shape manipulation: reshape, transpose, stacking, splitting, tiling, padding, flipping, rolling, diagonals."""

from __future__ import annotations


import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..core import Array, Tracer
from ..lax import elementwise as ew
from ..lax import structural as st
from .device_args import place
from .util import check_out, asarray_arg, broadcast_shapes, broadcast_to_shape, canonicalize_axes, canonicalize_axis, \
    promote_dtypes


def _shape(x) -> tuple:
    return core.get_aval(x).shape


def reshape(a, shape=None, order: str = "C", *, newshape=None, copy=None, out_sharding=None):
    """`a` with a new shape holding the same elements in row-major (C) order.

    Args:
        a: array-like.
        shape: an int or tuple of ints; one entry may be -1 (inferred from the size). `newshape` is the
            deprecated NumPy spelling.
        order: 'C' (row-major) or 'F' (column-major: dimensions reversed around the reshape).
        copy: accepted and ignored (arrays are immutable).
        out_sharding: the result's sharding in explicit sharding mode (see `fluxion.sharding`).

    Returns:
        An array of the new shape and `a`'s dtype. Shapes are static: under jit they must be Python ints.

    Raises:
        ValueError: if more than one dimension is -1.
        TypeError: if the size cannot be split as asked (as JAX raises).

    >>> import fluxion.numpy as jnp
    >>> jnp.reshape(jnp.arange(6), (2, -1))
    Array([[0, 1, 2],
           [3, 4, 5]], dtype=int32)
    >>> jnp.reshape(jnp.arange(6), (2, 3), order='F')
    Array([[0, 2, 4],
           [1, 3, 5]], dtype=int32)
    """
    if shape is None:
        shape = newshape
    if out_sharding is not None:  # typed and placed as asked (see lax.reshape's out_sharding)
        from ..lax.sharding_rules import with_out_sharding
        return with_out_sharding(lambda v: reshape(v, shape, order, copy=copy), [a], out_sharding)
    a = asarray_arg(a, "reshape")
    size = core.get_aval(a).size
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    shape = tuple(int(d) if not isinstance(d, (Array, Tracer)) else int(d) for d in shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension (-1) in reshape")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise TypeError(f"cannot reshape array of shape {_shape(a)} (size {size}) into shape {shape}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if order == "F":
        nd = core.get_aval(a).ndim
        a = st.transpose(a, tuple(reversed(range(nd))))
        out = st.reshape(a, tuple(reversed(shape)))
        return st.transpose(out, tuple(reversed(range(len(shape)))))
    return st.reshape(a, shape)


def ravel(a, order: str = "C"):
    """`a` flattened to one dimension.

    Args:
        a: array-like.
        order: 'C' (row-major, the default) or 'F' (column-major).

    Returns:
        A 1-d array of `a.size` elements (a new array, never a view).

    >>> import fluxion.numpy as jnp
    >>> jnp.ravel(jnp.array([[1, 2], [3, 4]]), order='F')
    Array([1, 3, 2, 4], dtype=int32)
    """
    a = asarray_arg(a, "ravel")
    return reshape(a, (core.get_aval(a).size,), order=order)


def transpose(a, axes=None):
    """`a` with its dimensions permuted (reversed when `axes` is None). `jnp.permute_dims` is the same function.

    Args:
        a: array-like.
        axes: None or a permutation of `range(a.ndim)` (negative entries allowed).

    Returns:
        An array of the permuted shape.

    Raises:
        ValueError: if an axis is out of bounds for `a`.

    >>> import fluxion.numpy as jnp
    >>> jnp.transpose(jnp.zeros((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """
    a = asarray_arg(a, "transpose")
    nd = core.get_aval(a).ndim
    axes = tuple(reversed(range(nd))) if axes is None else tuple(canonicalize_axis(x, nd) for x in axes)
    return st.transpose(a, axes)


permute_dims = transpose


def matrix_transpose(x):
    """Swaps the last two dimensions of `x` (a batch of matrices).

    Args:
        x: array-like with at least 2 dimensions.

    Returns:
        An array of shape `x.shape[:-2] + (x.shape[-1], x.shape[-2])`.

    Raises:
        ValueError: if `x` has fewer than 2 dimensions.

    >>> import fluxion.numpy as jnp
    >>> jnp.matrix_transpose(jnp.array([[1, 2, 3]]))
    Array([[1],
           [2],
           [3]], dtype=int32)
    """
    x = asarray_arg(x)
    nd = core.get_aval(x).ndim
    if nd < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions, got shape {_shape(x)}")
    return st.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def moveaxis(a, source, destination):
    """`a` with the axes `source` moved to the positions `destination`; the other axes keep their order.

    Args:
        a: array-like.
        source, destination: ints or sequences of ints of the same length.

    Returns:
        An array with the permuted shape.

    Raises:
        ValueError: if the lengths of `source` and `destination` differ, or an axis is out of bounds.

    >>> import fluxion.numpy as jnp
    >>> jnp.moveaxis(jnp.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    a = asarray_arg(a, "moveaxis")
    nd = core.get_aval(a).ndim
    src = [canonicalize_axis(s, nd) for s in ((source,) if isinstance(source, int) else source)]
    dst = [canonicalize_axis(d, nd) for d in ((destination,) if isinstance(destination, int) else destination)]
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of elements")
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return st.transpose(a, tuple(order))


def swapaxes(a, axis1, axis2):
    """`a` with the dimensions `axis1` and `axis2` exchanged.

    Args:
        a: array-like.
        axis1, axis2: ints (negative values count from the end).

    Returns:
        An array of the swapped shape.

    Raises:
        ValueError: if an axis is out of bounds for `a`.

    >>> import fluxion.numpy as jnp
    >>> jnp.swapaxes(jnp.zeros((2, 3, 4)), 0, 2).shape
    (4, 3, 2)
    """
    a = asarray_arg(a)
    nd = core.get_aval(a).ndim
    perm = list(range(nd))
    i, j = canonicalize_axis(axis1, nd), canonicalize_axis(axis2, nd)
    perm[i], perm[j] = perm[j], perm[i]
    return st.transpose(a, tuple(perm))


def rollaxis(a, axis, start=0):
    """Moves `axis` of `a` to sit before position `start` (the legacy spelling of `moveaxis`).

    Args:
        a: array-like.
        axis: the axis to move.
        start: the axis is placed before the axis currently at `start` (default 0).

    Returns:
        An array with the permuted shape.

    Raises:
        ValueError: if an axis is out of bounds for `a`.

    >>> import fluxion.numpy as jnp
    >>> jnp.rollaxis(jnp.zeros((2, 3, 4)), 2).shape
    (4, 2, 3)
    """
    a = asarray_arg(a)
    nd = core.get_aval(a).ndim
    axis = canonicalize_axis(axis, nd)
    start = start % (nd + 1) if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def squeeze(a, axis=None):
    """`a` without size-1 dimensions (all of them, or those in `axis`).

    Args:
        a: array-like.
        axis: None, an int or a tuple of ints naming size-1 dimensions.

    Returns:
        An array with those dimensions removed.

    Raises:
        ValueError: if a named axis does not have size 1, or is out of bounds.

    >>> import fluxion.numpy as jnp
    >>> jnp.squeeze(jnp.zeros((1, 3, 1))).shape
    (3,)
    >>> jnp.squeeze(jnp.zeros((1, 3, 1)), axis=0).shape
    (3, 1)
    """
    a = asarray_arg(a, "squeeze")
    shape = _shape(a)
    if axis is None:
        dims = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        dims = canonicalize_axes(axis, len(shape))
        for d in dims:
            if shape[d] != 1:
                raise ValueError(f"cannot select an axis to squeeze out which has size not equal to one, got "
                                 f"shape={shape} and dimensions={dims}")
    return st.squeeze(a, dims)


def expand_dims(a, axis):
    """`a` with new size-1 dimensions inserted at the positions `axis` of the result.

    Args:
        a: array-like.
        axis: an int or a tuple of ints (positions in the output, negative from its end).

    Returns:
        An array with `a.ndim + len(axis)` dimensions.

    >>> import fluxion.numpy as jnp
    >>> jnp.expand_dims(jnp.array([1, 2]), (0, 2)).shape
    (1, 2, 1)
    """
    a = asarray_arg(a, "expand_dims")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return st.expand_dims(a, axes)


@staged_as_call("atleast_1d")
def atleast_1d(*arys):
    """Each argument as an array of at least one dimension (scalars become shape (1,)).

    Args:
        *arys: array-likes.

    Returns:
        One array for one argument, else a list of arrays; arrays with ndim >= 1 are returned unchanged.

    >>> import fluxion.numpy as jnp
    >>> jnp.atleast_1d(3)
    Array([3], dtype=int32, weak_type=True)
    >>> jnp.atleast_1d(1, jnp.array([2, 3]))
    [Array([1], dtype=int32, weak_type=True), Array([2, 3], dtype=int32)]
    """
    out = [reshape(asarray_arg(a), (1,)) if core.get_aval(asarray_arg(a)).ndim == 0 else asarray_arg(a)
           for a in arys]
    return out[0] if len(out) == 1 else out


@staged_as_call("atleast_2d")
def atleast_2d(*arys):
    """Each argument as an array of at least two dimensions (new axes are added in front).

    Args:
        *arys: array-likes.

    Returns:
        One array for one argument, else a list; shape () -> (1, 1), (n,) -> (1, n).

    >>> import fluxion.numpy as jnp
    >>> jnp.atleast_2d(jnp.array([1, 2]))
    Array([[1, 2]], dtype=int32)
    """
    out = []
    for a in arys:
        a = asarray_arg(a)
        nd = core.get_aval(a).ndim
        out.append(reshape(a, (1,) * (2 - nd) + _shape(a)) if nd < 2 else a)
    return out[0] if len(out) == 1 else out


@staged_as_call("atleast_3d")
def atleast_3d(*arys):
    """Each argument as an array of at least three dimensions.

    Args:
        *arys: array-likes.

    Returns:
        One array for one argument, else a list; shape () -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1).

    >>> import fluxion.numpy as jnp
    >>> jnp.atleast_3d(jnp.array([1, 2])).shape
    (1, 2, 1)
    >>> jnp.atleast_3d(jnp.ones((2, 3))).shape
    (2, 3, 1)
    """
    out = []
    for a in arys:
        a = asarray_arg(a)
        nd = core.get_aval(a).ndim
        if nd == 0:
            a = reshape(a, (1, 1, 1))
        elif nd == 1:
            a = reshape(a, (1, _shape(a)[0], 1))
        elif nd == 2:
            a = reshape(a, _shape(a) + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def broadcast_to(array, shape):
    """`array` broadcast to `shape` with NumPy's rules.

    Args:
        array: array-like.
        shape: an int or tuple of ints.

    Returns:
        An array of `shape` (a new immutable array, not NumPy's read-only view).

    Raises:
        ValueError: if `array` cannot be broadcast to `shape`.

    >>> import fluxion.numpy as jnp
    >>> jnp.broadcast_to(jnp.array([1, 2]), (2, 2))
    Array([[1, 2],
           [1, 2]], dtype=int32)
    """
    array = asarray_arg(array, "broadcast_to")
    shape = (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)
    return broadcast_to_shape(array, shape)


def broadcast_arrays(*args):
    """The arguments broadcast against each other to one common shape.

    Args:
        *args: array-likes (each keeps its dtype).

    Returns:
        A list of arrays, all of the broadcast shape.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> [x.shape for x in jnp.broadcast_arrays(jnp.zeros((3, 1)), jnp.zeros(4))]
    [(3, 4), (3, 4)]
    """
    args = [asarray_arg(a) for a in args]
    shape = broadcast_shapes(*[_shape(a) for a in args])
    return [broadcast_to_shape(a, shape) for a in args]


def concatenate(arrays, axis: int | None = 0, dtype=None):
    """Joins arrays along an existing axis. `jnp.concat` is the same function.

    Args:
        arrays: a sequence of array-likes of equal shapes except along `axis`; promoted to one dtype with JAX's rules.
        axis: the joining axis, or None to flatten every array first.
        dtype: the result dtype (default: the promoted dtype).

    Returns:
        An array whose `axis` length is the sum of the inputs'.

    Raises:
        ValueError: for an empty sequence or 0-d arrays.
        TypeError: if the shapes differ off `axis` (as JAX raises).

    >>> import fluxion.numpy as jnp
    >>> jnp.concatenate([jnp.array([[1, 2]]), jnp.array([[3, 4]])], axis=0)
    Array([[1, 2],
           [3, 4]], dtype=int32)
    """
    if isinstance(arrays, (Array, Tracer)):
        arrays = list(arrays)
    arrays = [asarray_arg(a, "concatenate") for a in arrays]
    if not arrays:
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    arrays = promote_dtypes(*arrays)
    if dtype is not None:
        arrays = [ew.convert_element_type(a, dtype) for a in arrays]
    nd = core.get_aval(arrays[0]).ndim
    if nd == 0:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    return st.concatenate(arrays, canonicalize_axis(axis, nd))


concat = concatenate


def stack(arrays, axis: int = 0, out=None, dtype=None):
    """Joins arrays of equal shape along a new axis.

    Args:
        arrays: a non-empty sequence of array-likes of one shape (promoted to one dtype).
        axis: the position of the new axis in the result.
        out: must be None (NotImplementedError otherwise, as in JAX).
        dtype: the result dtype (default: the promoted dtype).

    Returns:
        An array with one more dimension, of size `len(arrays)` at `axis`.

    Raises:
        ValueError: for an empty sequence or arrays of different shapes.

    >>> import fluxion.numpy as jnp
    >>> jnp.stack([jnp.array([1, 2]), jnp.array([3, 4])], axis=1)
    Array([[1, 3],
           [2, 4]], dtype=int32)
    """
    check_out(out, "stack")
    if isinstance(arrays, (Array, Tracer)):
        arrays = list(arrays)
    arrays = [asarray_arg(a, "stack") for a in arrays]
    if not arrays:
        raise ValueError("Need at least one array to stack.")
    shape0 = _shape(arrays[0])
    for a in arrays:
        if _shape(a) != shape0:
            raise ValueError("All input arrays must have the same shape, got "
                             + ", ".join(str(_shape(x)) for x in arrays))
    axis = canonicalize_axis(axis, len(shape0) + 1)
    return concatenate([st.expand_dims(a, (axis,)) for a in arrays], axis, dtype=dtype)


def hstack(tup, dtype=None):
    """Joins arrays horizontally: along axis 0 for 1-d inputs, else along axis 1 (after `atleast_1d`).

    Args:
        tup: a sequence of array-likes.
        dtype: the result dtype (default: the promoted dtype).

    Returns:
        The concatenated array.

    Raises:
        TypeError: if the shapes differ off the joining axis.

    >>> import fluxion.numpy as jnp
    >>> jnp.hstack([jnp.array([1, 2]), jnp.array([3])])
    Array([1, 2, 3], dtype=int32)
    >>> jnp.hstack([jnp.ones((2, 1)), jnp.zeros((2, 2))]).shape
    (2, 3)
    """
    arrs = [atleast_1d(a) for a in tup]  # one call per array, as JAX stages it
    return concatenate(arrs, 0 if core.get_aval(arrs[0]).ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    """Joins arrays vertically along axis 0, after making each at least 2-d. `jnp.row_stack` is the same function.

    Args:
        tup: a sequence of array-likes.
        dtype: the result dtype (default: the promoted dtype).

    Returns:
        The concatenated array.

    Raises:
        TypeError: if the shapes differ off axis 0.

    >>> import fluxion.numpy as jnp
    >>> jnp.vstack([jnp.array([1, 2]), jnp.array([3, 4])])
    Array([[1, 2],
           [3, 4]], dtype=int32)
    """
    arrs = [atleast_2d(a) for a in tup]  # one call per array, as JAX stages it
    return concatenate(arrs, 0, dtype=dtype)


row_stack = vstack


def dstack(tup, dtype=None):
    """Joins arrays along the third axis, after making each at least 3-d.

    Args:
        tup: a sequence of array-likes.
        dtype: the result dtype (default: the promoted dtype).

    Returns:
        The concatenated array (at least 3-d).

    Raises:
        TypeError: if the shapes differ off axis 2.

    >>> import fluxion.numpy as jnp
    >>> jnp.dstack([jnp.array([1, 2]), jnp.array([3, 4])])
    Array([[[1, 3],
            [2, 4]]], dtype=int32)
    """
    arrs = [atleast_3d(a) for a in tup]  # one call per array, as JAX stages it
    return concatenate(arrs, 2, dtype=dtype)


def column_stack(tup):
    """Joins 1-d arrays as the columns of a 2-d array (2-d inputs are joined along axis 1 as they are).

    Args:
        tup: a sequence of array-likes: 1-d vectors of one length N, or 2-d arrays of N rows.

    Returns:
        A 2-d array (for 1-d and 2-d inputs).

    Raises:
        TypeError: if the row counts differ.

    >>> import fluxion.numpy as jnp
    >>> jnp.column_stack([jnp.array([1, 2]), jnp.array([3, 4])])
    Array([[1, 3],
           [2, 4]], dtype=int32)
    """
    arrs = [asarray_arg(a) for a in tup]
    arrs = [reshape(a, (-1, 1)) if core.get_aval(a).ndim < 2 else a for a in arrs]
    return concatenate(arrs, 1)


def _split_points(n: int, indices_or_sections, strict: bool) -> list[int]:
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("number sections must be larger than 0.")
        if strict and n % k:
            raise ValueError(f"array split does not result in an equal division: {n} into {k} sections")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        return list(np.cumsum(sizes)[:-1])
    return [int(i) for i in indices_or_sections]


def split(ary, indices_or_sections, axis: int = 0):
    """Splits `ary` along `axis` into equal sections, or at the given indices.

    Args:
        ary: array-like.
        indices_or_sections: an int N (N equal sections) or a sequence of split indices (static Python ints).
        axis: the axis to split.

    Returns:
        A list of arrays.

    Raises:
        ValueError: if N does not divide the axis length, N <= 0, or `axis` is out of bounds.

    >>> import fluxion.numpy as jnp
    >>> jnp.split(jnp.arange(6), 3)
    [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32), Array([4, 5], dtype=int32)]
    >>> jnp.split(jnp.arange(5), [1, 3])
    [Array([0], dtype=int32), Array([1, 2], dtype=int32), Array([3, 4], dtype=int32)]
    """
    return _split(ary, indices_or_sections, axis, strict=True)


def array_split(ary, indices_or_sections, axis: int = 0):
    """As `split`, but N sections need not divide the axis: the first `len % N` sections get one extra element.

    Args:
        ary: array-like.
        indices_or_sections: an int N or a sequence of split indices.
        axis: the axis to split.

    Returns:
        A list of arrays.

    Raises:
        ValueError: if N <= 0 or `axis` is out of bounds.

    >>> import fluxion.numpy as jnp
    >>> jnp.array_split(jnp.arange(5), 3)
    [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32), Array([4], dtype=int32)]
    """
    return _split(ary, indices_or_sections, axis, strict=False)


def _split(ary, indices_or_sections, axis, strict):
    ary = asarray_arg(ary, "split")
    nd = core.get_aval(ary).ndim
    axis = canonicalize_axis(axis, nd)
    n = _shape(ary)[axis]
    points = [0] + _split_points(n, indices_or_sections, strict) + [n]
    out = []
    for a, b in zip(points[:-1], points[1:]):
        a, b = min(max(a, 0), n), min(max(b, 0), n)
        out.append(st.slice_in_dim(ary, a, max(a, b), 1, axis))
    return out


def hsplit(ary, indices_or_sections):
    """`split` along axis 1 (axis 0 for 1-d arrays).

    Args:
        ary: array-like.
        indices_or_sections: as for `split`.

    Returns:
        A list of arrays.

    Raises:
        ValueError: as for `split`.

    >>> import fluxion.numpy as jnp
    >>> [x.shape for x in jnp.hsplit(jnp.zeros((2, 4)), 2)]
    [(2, 2), (2, 2)]
    """
    ary = asarray_arg(ary)
    return split(ary, indices_or_sections, 0 if core.get_aval(ary).ndim == 1 else 1)


def vsplit(ary, indices_or_sections):
    """`split` along axis 0.

    Args:
        ary: array-like.
        indices_or_sections: as for `split`.

    Returns:
        A list of arrays.

    Raises:
        ValueError: as for `split`.

    >>> import fluxion.numpy as jnp
    >>> jnp.vsplit(jnp.array([[1, 2], [3, 4]]), 2)
    [Array([[1, 2]], dtype=int32), Array([[3, 4]], dtype=int32)]
    """
    return split(ary, indices_or_sections, 0)


def tile(A, reps):
    """Repeats `A` `reps` times per dimension.

    >>> import fluxion.numpy as jnp
    >>> jnp.tile(jnp.array([1, 2]), 2)
    Array([1, 2, 1, 2], dtype=int32)
    >>> jnp.tile(jnp.array([1, 2]), (2, 1))
    Array([[1, 2],
           [1, 2]], dtype=int32)
    """
    A = asarray_arg(A, "tile")
    reps = (reps,) if isinstance(reps, int) else tuple(int(r) for r in reps)
    shape = _shape(A)
    nd = max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + shape
    reps = (1,) * (nd - len(reps)) + reps
    A = st.reshape(A, shape)
    # Broadcast to (r0, d0, r1, d1, ...) then merge pairs.
    big = tuple(x for r, d in zip(reps, shape) for x in (r, d))
    b = st.broadcast_in_dim(A, big, tuple(range(1, 2 * nd, 2)))
    return st.reshape(b, tuple(r * d for r, d in zip(reps, shape)))


def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None):
    """Repeats each element `repeats` times along `axis` (static repeats).

    >>> import fluxion.numpy as jnp
    >>> jnp.repeat(jnp.array([1, 2]), 2)
    Array([1, 1, 2, 2], dtype=int32)
    >>> jnp.repeat(jnp.array([[1, 2]]), jnp.array([1, 2]), axis=1)
    Array([[1, 2, 2]], dtype=int32)
    """
    a = asarray_arg(a, "repeat")
    if axis is None:
        a = ravel(a)
        axis = 0
    nd = core.get_aval(a).ndim
    axis = canonicalize_axis(axis, nd)
    if isinstance(repeats, (Array, Tracer)):
        v = core.concrete_value(repeats)
        if v is None:
            raise core.Tracer._concretization_error(repeats, "index", "jnp.repeat") if isinstance(
                repeats, Tracer) else TypeError("repeats must be concrete")
        repeats = np.asarray(v)
    if np.ndim(repeats) == 0:
        r = int(repeats)
        shape = _shape(a)
        expanded = st.broadcast_in_dim(a, shape[:axis + 1] + (r,) + shape[axis + 1:],
                                       tuple(range(axis + 1)) + tuple(range(axis + 2, nd + 1)))
        return st.reshape(expanded, shape[:axis] + (shape[axis] * r,) + shape[axis + 1:])
    reps = np.asarray(repeats).astype(int)
    idx = np.repeat(np.arange(_shape(a)[axis]), reps)
    from .indexing import take
    return take(a, Array(idx.astype(np.int32)), axis=axis)


@staged_as_call("_flip")
def flip(m, axis=None):
    """`a` with the order of elements reversed along `axis` (all axes when None).

    Args:
        m: array-like.
        axis: None, an int or a tuple of ints.

    Returns:
        An array of `m`'s shape and dtype (a new array, not a view).

    Raises:
        ValueError: if an axis is out of bounds for `a`.

    >>> import fluxion.numpy as jnp
    >>> jnp.flip(jnp.array([[1, 2], [3, 4]]))
    Array([[4, 3],
           [2, 1]], dtype=int32)
    >>> jnp.flip(jnp.array([[1, 2], [3, 4]]), axis=1)
    Array([[2, 1],
           [4, 3]], dtype=int32)
    """
    m = asarray_arg(m, "flip")
    return st.rev(m, canonicalize_axes(axis, core.get_aval(m).ndim))


def fliplr(m):
    """`m` reversed along axis 1 (left/right).

    Args:
        m: array-like with at least 2 dimensions.

    Returns:
        An array of `m`'s shape.

    Raises:
        ValueError: if `m` has fewer than 2 dimensions.

    >>> import fluxion.numpy as jnp
    >>> jnp.fliplr(jnp.array([[1, 2], [3, 4]]))
    Array([[2, 1],
           [4, 3]], dtype=int32)
    """
    return flip(m, 1)


def flipud(m):
    """`m` reversed along axis 0 (up/down).

    Args:
        m: array-like with at least 1 dimension.

    Returns:
        An array of `m`'s shape.

    Raises:
        ValueError: if `m` is 0-d.

    >>> import fluxion.numpy as jnp
    >>> jnp.flipud(jnp.array([[1, 2], [3, 4]]))
    Array([[3, 4],
           [1, 2]], dtype=int32)
    """
    return flip(m, 0)


def roll(a, shift, axis=None):
    """Shifts the elements of `a` cyclically by `shift` along `axis` (over the flattened array when None).

    Args:
        a: array-like.
        shift: an int, a tuple of ints (one per axis) or an integer array of those (0-d or 1-d); a traced shift
            (under jit) is applied with a dynamic slice.
        axis: None, an int or a tuple of ints.

    Returns:
        An array of `a`'s shape.

    Raises:
        ValueError: if an axis is out of bounds for `a`.

    >>> import fluxion.numpy as jnp
    >>> jnp.roll(jnp.arange(5), 2)
    Array([3, 4, 0, 1, 2], dtype=int32)
    >>> jnp.roll(jnp.array([[1, 2], [3, 4]]), 1, axis=0)
    Array([[3, 4],
           [1, 2]], dtype=int32)
    """
    a = asarray_arg(a, "roll")
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), _shape(a))
    if isinstance(shift, Tracer):
        return _roll_traced(a, shift, axis)
    if hasattr(shift, "__jax_array__"):
        return roll(a, asarray_arg(shift, "roll"), axis)
    # A concrete array shift (of any rank up to 1) is read as ints, like a tuple.
    shifts = (shift,) if isinstance(shift, (int, np.integer)) else tuple(int(v) for v in np.ravel(np.asarray(shift)))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    for s, ax in zip(shifts, axes):
        ax = canonicalize_axis(ax, core.get_aval(a).ndim)
        n = _shape(a)[ax]
        if n == 0:
            continue
        s = int(s) % n
        if s:
            a = st.concatenate([st.slice_in_dim(a, n - s, n, 1, ax), st.slice_in_dim(a, 0, n - s, 1, ax)], ax)
    return a


def _roll_traced(a, shift, axis):
    """`roll` by a shift known only at run time: each axis is doubled by concatenation and the window of its
    length that starts at `n - shift mod n` is cut out dynamically."""
    from .ufuncs import remainder
    shift_aval = core.get_aval(shift)
    if shift_aval.ndim > 1 or not dtypes.is_integer(shift_aval.dtype):
        raise TypeError(f"roll: shift must be an integer scalar or 1-d array, got {shift_aval.dtype}{shift_aval.shape}")
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    shifts = [shift] if shift_aval.ndim == 0 else [st.index_in_dim(shift, i, 0, False) for i in range(shift_aval.shape[0])]
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
    nd = core.get_aval(a).ndim
    for s, ax in zip(shifts, axes):
        ax = canonicalize_axis(ax, nd)
        n = _shape(a)[ax]
        if n == 0:
            continue
        start = ew.sub(Array(np.asarray(n, core.get_aval(s).dtype), True), remainder(s, n))
        doubled = st.concatenate([a, a], ax)
        starts = [Array(np.asarray(0, core.get_aval(s).dtype), True)] * nd
        starts[ax] = start
        a = st.dynamic_slice(doubled, starts, _shape(a))
    return a


@staged_as_call("rot90")
def rot90(m, k: int = 1, axes=(0, 1)):
    """Rotates `m` by 90 degrees `k` times in the plane of `axes`, from the first axis towards the second.

    Args:
        m: array-like with at least 2 dimensions.
        k: the number of quarter turns (any int; negative turns the other way).
        axes: the two axes of the rotation plane.

    Returns:
        An array (its two plane axes swapped for odd `k`).

    >>> import fluxion.numpy as jnp
    >>> jnp.rot90(jnp.array([[1, 2], [3, 4]]))
    Array([[2, 4],
           [1, 3]], dtype=int32)
    """
    m = asarray_arg(m)
    k %= 4
    a0, a1 = axes
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a0), a1)
    if k == 1:
        return swapaxes(flip(m, a1), a0, a1)
    return flip(swapaxes(m, a0, a1), a1)


@staged_as_call("_pad")
def pad(array, pad_width, mode: str = "constant", **kwargs):
    """Pads `array`; modes 'constant' (constant_values), 'edge', 'reflect', 'symmetric', 'wrap'.

    >>> import fluxion.numpy as jnp
    >>> jnp.pad(jnp.array([1, 2]), (1, 2))
    Array([0, 1, 2, 0, 0], dtype=int32)
    >>> jnp.pad(jnp.array([1, 2, 3]), 2, mode='reflect')
    Array([3, 2, 1, 2, 3, 2, 1], dtype=int32)
    >>> jnp.pad(jnp.array([[1]]), 1, constant_values=9)
    Array([[9, 9, 9],
           [9, 1, 9],
           [9, 9, 9]], dtype=int32)
    """
    array = asarray_arg(array, "pad")
    nd = core.get_aval(array).ndim
    pw = np.broadcast_to(np.asarray(pad_width, dtype=np.int64).reshape(-1, 2) if np.ndim(pad_width) else
                         np.asarray([[pad_width, pad_width]]), (nd, 2)) if nd else np.zeros((0, 2), np.int64)
    if mode == "constant":
        cv = kwargs.get("constant_values", 0)
        cv = np.broadcast_to(np.asarray(cv), (nd, 2)) if nd else np.zeros((0, 2))
        out = array
        if np.all(cv == cv.flat[0]) if cv.size else True:
            value = Array(np.asarray(cv.flat[0] if cv.size else 0, core.get_aval(array).dtype), True)
            return st.pad(out, value, [(int(lo), int(hi), 0) for lo, hi in pw])
        for ax in range(nd):
            for side in (0, 1):
                cfg = [(0, 0, 0)] * nd
                cfg[ax] = (int(pw[ax, 0]), 0, 0) if side == 0 else (0, int(pw[ax, 1]), 0)
                out = st.pad(out, Array(np.asarray(cv[ax, side], core.get_aval(array).dtype), True), cfg)
        return out
    out = array
    for ax in range(nd):
        lo, hi = int(pw[ax, 0]), int(pw[ax, 1])
        n = _shape(out)[ax]
        pieces = []
        if mode == "edge":
            if lo:
                pieces.append(repeat(st.slice_in_dim(out, 0, 1, 1, ax), lo, ax))
            pieces.append(out)
            if hi:
                pieces.append(repeat(st.slice_in_dim(out, n - 1, n, 1, ax), hi, ax))
        elif mode in ("reflect", "symmetric", "wrap"):
            idx = np.arange(-lo, n + hi)
            if mode == "wrap":
                idx = idx % n
            else:
                period = 2 * n - 2 if mode == "reflect" else 2 * n
                period = max(period, 1)
                idx = np.abs(idx) if mode == "reflect" else np.where(idx < 0, -idx - 1, idx)
                idx = idx % period
                idx = np.where(idx >= n, period - idx - (0 if mode == "reflect" else 1), idx)
            from .indexing import take
            out = take(out, Array(idx.astype(np.int32)), axis=ax)
            continue
        else:
            raise NotImplementedError(f"jnp.pad mode {mode!r} is not supported (supported: constant, edge, reflect, "
                                      "symmetric, wrap)")
        out = st.concatenate(pieces, ax) if len(pieces) > 1 else pieces[0]
    return out


@staged_as_call("diagonal")
def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The `offset` diagonal of `a` over `axis1`/`axis2`; that diagonal becomes the last dimension.

    Args:
        a: array-like with at least 2 dimensions.
        offset: 0 for the main diagonal, > 0 above it, < 0 below it.
        axis1, axis2: the axes of the 2-d sub-arrays.

    Returns:
        An array of the remaining dimensions plus one of the diagonal's length (a copy, not NumPy's read-only view).

    Raises:
        ValueError: if an axis is out of bounds for `a`.

    >>> import fluxion.numpy as jnp
    >>> jnp.diagonal(jnp.array([[1, 2], [3, 4]]))
    Array([1, 4], dtype=int32)
    >>> jnp.diagonal(jnp.array([[1, 2], [3, 4]]), offset=1)
    Array([2], dtype=int32)
    """
    a = asarray_arg(a, "diagonal")
    nd = core.get_aval(a).ndim
    a1, a2 = canonicalize_axis(axis1, nd), canonicalize_axis(axis2, nd)
    a = moveaxis(a, (a1, a2), (-2, -1))
    shape = _shape(a)
    n, m = shape[-2], shape[-1]
    rows = np.arange(max(0, -offset), min(n, m - offset)) if min(n, m - offset) > max(0, -offset) else np.zeros(
        0, np.int64)
    cols = rows + offset
    from .indexing import getitem
    return getitem(a, (Ellipsis, Array(rows.astype(np.int32)), Array(cols.astype(np.int32))))


@staged_as_call("_diag")
def diag(v, k: int = 0):
    """For 1-d `v`, a square matrix with `v` on its `k`-th diagonal; for 2-d `v`, its `k`-th diagonal.

    Args:
        v: a 1-d or 2-d array-like.
        k: the diagonal offset (> 0 above the main diagonal, < 0 below).

    Returns:
        A 2-d array of size `len(v) + |k|` for 1-d `v`; a 1-d array for 2-d `v`.

    Raises:
        ValueError: if `v` is not 1-d or 2-d.

    >>> import fluxion.numpy as jnp
    >>> jnp.diag(jnp.array([1, 2]))
    Array([[1, 0],
           [0, 2]], dtype=int32)
    >>> jnp.diag(jnp.array([[1, 2], [3, 4]]), k=1)
    Array([2], dtype=int32)
    """
    v = asarray_arg(v, "diag")
    shape = _shape(v)
    if len(shape) == 1:
        n = shape[0] + abs(k)
        rows = st.broadcasted_iota(dtypes.int32, (n, n), 0)
        cols = st.broadcasted_iota(dtypes.int32, (n, n), 1)
        mask = ew.eq(ew.add(rows, Array(np.asarray(k, np.int32), True)), cols)
        # Entry (i, i+k) holds v[i] for k >= 0; entry (j-k, j) holds v[j] for k < 0.
        padded = st.pad(v, Array(np.zeros((), core.get_aval(v).dtype)), [(0, abs(k), 0)])
        row_vals = st.broadcast_in_dim(padded, (n, n), (0,) if k >= 0 else (1,))
        return ew.select_n(mask, st.full((n, n), 0, core.get_aval(v).dtype), row_vals)
    if len(shape) == 2:
        return diagonal(v, k)
    raise ValueError("diag input must be 1d or 2d")


@staged_as_call("trace")
def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
    """The sum of the `offset` diagonal of `a` over `axis1`/`axis2`.

    Args:
        a: array-like with at least 2 dimensions.
        offset, axis1, axis2: as for `diagonal`.
        dtype: the accumulation dtype (default as `sum`: bool and narrow ints widen to int32).
        out: must be None (NotImplementedError otherwise, as in JAX).

    Returns:
        An array of the remaining dimensions.

    Raises:
        ValueError: if an axis is out of bounds for `a`.

    >>> import fluxion.numpy as jnp
    >>> jnp.trace(jnp.array([[1, 2], [3, 4]]))
    Array(5, dtype=int32)
    """
    check_out(out, "trace")
    from .reductions import sum as _sum
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def _check_matrix_rank(name, shape):
    if len(shape) < 2:
        raise ValueError(f"{name}: the argument must be at least 2-d, got shape {shape}")


def _tri_mask(shape, k, lower):
    n, m = shape[-2], shape[-1]
    rows = st.broadcasted_iota(dtypes.int32, (n, m), 0)
    cols = st.broadcasted_iota(dtypes.int32, (n, m), 1)
    kk = Array(np.asarray(k, np.int32), True)
    mask = ew.le(cols, ew.add(rows, kk)) if lower else ew.ge(cols, ew.add(rows, kk))
    return st.broadcast_in_dim(mask, shape, (len(shape) - 2, len(shape) - 1))


@staged_as_call("tril")
def tril(m, k: int = 0):
    """The lower triangle of `m`: entries above the `k`-th diagonal set to zero.

    Args:
        m: array-like with at least 2 dimensions (the last two are the matrix; leading ones are batch dims).
        k: the diagonal offset; entries with `col > row + k` become 0.

    Returns:
        An array of `m`'s shape and dtype.

    Raises:
        ValueError: for input of fewer than 2 dimensions (as JAX; NumPy broadcasts 1-d input as a row).

    >>> import fluxion.numpy as jnp
    >>> jnp.tril(jnp.array([[1, 2], [3, 4]]))
    Array([[1, 0],
           [3, 4]], dtype=int32)
    """
    m = asarray_arg(m, "tril")
    shape = _shape(m)
    _check_matrix_rank("tril", shape)
    return ew.select_n(_tri_mask(shape, k, True), st.full(shape, 0, core.get_aval(m).dtype), m)


@staged_as_call("triu")
def triu(m, k: int = 0):
    """The upper triangle of `m`: entries below the `k`-th diagonal set to zero.

    Args:
        m: array-like with at least 2 dimensions (the last two are the matrix).
        k: the diagonal offset; entries with `col < row + k` become 0.

    Returns:
        An array of `m`'s shape and dtype.

    Raises:
        ValueError: for input of fewer than 2 dimensions (as JAX; NumPy broadcasts 1-d input as a row).

    >>> import fluxion.numpy as jnp
    >>> jnp.triu(jnp.array([[1, 2], [3, 4]]), k=1)
    Array([[0, 2],
           [0, 0]], dtype=int32)
    """
    m = asarray_arg(m, "triu")
    shape = _shape(m)
    _check_matrix_rank("triu", shape)
    return ew.select_n(_tri_mask(shape, k, False), st.full(shape, 0, core.get_aval(m).dtype), m)


def astype(x, dtype, *, copy: bool = False, device=None):
    """`x` converted to `dtype` (values cast as `lax.convert_element_type` does).

    Args:
        x: array-like.
        dtype: the target dtype; 64-bit dtypes are canonicalized to 32-bit ones without x64, as in JAX.
        copy: accepted and ignored (a new immutable array is returned either way).
        device: None, or a Device/Sharding to place the result on (as `device_put`).

    Returns:
        An array of `x`'s shape in `dtype`.

    >>> import fluxion.numpy as jnp
    >>> jnp.astype(jnp.array([1.7, -1.7]), jnp.int32)
    Array([ 1, -1], dtype=int32)
    >>> jnp.astype(jnp.array([0, 2]), bool)
    Array([False,  True], dtype=bool)
    """
    x = asarray_arg(x, "astype")
    if dtypes.is_complex(core.get_aval(x).dtype) and dtypes.canonicalize_dtype(dtype) == np.bool_:
        # As JAX: a complex number is True when either part is non-zero (a plain conversion reads the real part).
        x = ew.ne(x, Array(np.zeros((), core.get_aval(x).dtype), True))
    return place(ew.convert_element_type(x, dtype), device)


def _bitcast_view(x, dtype):
    return ew.bitcast_convert_type(x, dtype)


def shape(a) -> tuple:
    """The shape of `a` as a tuple (works on Arrays, tracers, NumPy arrays, scalars and nested lists).

    Args:
        a: any array-like.

    Returns:
        A tuple of ints (static under jit).

    >>> import fluxion.numpy as jnp
    >>> jnp.shape(jnp.zeros((2, 3)))
    (2, 3)
    >>> jnp.shape(5.0)
    ()
    """
    return tuple(core.get_aval(a).shape) if isinstance(a, (Array, Tracer)) else np.shape(a)


def ndim(a) -> int:
    """The number of dimensions of `a`.

    Args:
        a: any array-like.

    Returns:
        An int (static under jit).

    >>> import fluxion.numpy as jnp
    >>> jnp.ndim(jnp.zeros((2, 3)))
    2
    """
    return core.get_aval(a).ndim if isinstance(a, (Array, Tracer)) else np.ndim(a)


def size(a, axis=None) -> int:
    """The number of elements of `a`, or its length along `axis`.

    Args:
        a: any array-like.
        axis: None or an int.

    Returns:
        An int (static under jit).

    >>> import fluxion.numpy as jnp
    >>> jnp.size(jnp.zeros((2, 3)))
    6
    >>> jnp.size(jnp.zeros((2, 3)), 1)
    3
    """
    s = shape(a)
    return int(np.prod(s, dtype=np.int64)) if axis is None else s[axis]


@staged_as_call("append")
def append(arr, values, axis=None):
    """`values` appended to `arr`: flattened when `axis` is None, else concatenated along `axis`.

    Args:
        arr, values: array-likes (promoted to one dtype with JAX's rules).
        axis: None or the joining axis (then the shapes must match off it).

    Returns:
        A new array (the inputs are unchanged).

    Raises:
        TypeError: if the shapes differ off `axis`.

    >>> import fluxion.numpy as jnp
    >>> jnp.append(jnp.array([[1, 2]]), jnp.array([3]))
    Array([1, 2, 3], dtype=int32)
    >>> jnp.append(jnp.array([[1, 2]]), jnp.array([[3, 4]]), axis=0)
    Array([[1, 2],
           [3, 4]], dtype=int32)
    """
    if axis is None:
        return concatenate([ravel(asarray_arg(arr)), ravel(asarray_arg(values))])
    return concatenate([arr, values], axis)

"""Array creation: `array`, `asarray`, `zeros`, `ones`, `full`, `*_like`, `arange`, `linspace`, `eye`, ..."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..core import Array, Tracer
from ..lax import elementwise as ew
from ..lax import structural as st
from .device_args import accepts_device, place


def _shape_tuple(shape: Any, name: str = "shape") -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        out = tuple(int(operator_index(d)) for d in shape)
    except TypeError as e:
        raise TypeError(f"{name} must be an int or a sequence of ints, got {shape!r} ({e})") from None
    for d in out:
        if d < 0:
            raise ValueError(f"negative dimensions are not allowed: {name}={out}")
    return out


def operator_index(d):
    import operator
    return operator.index(d)


def _leaves_contain_tracer(obj) -> bool:
    if isinstance(obj, Tracer):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_leaves_contain_tracer(o) for o in obj)
    return False


def array(object: Any, dtype=None, copy: bool = True, order=None, ndmin: int = 0) -> Any:  # noqa: A002
    """Creates an array from `object` (array-like, nested lists, scalars; tracers allowed inside lists).

    Python scalars give weakly-typed arrays (as in JAX); `dtype` makes the result strongly typed.
    """
    if isinstance(object, (Array, Tracer)):
        out = object if dtype is None else ew.convert_element_type(object, dtype)
    elif isinstance(object, (list, tuple)) and _leaves_contain_tracer(object):
        from .shape import stack
        out = stack([array(o) for o in object])
        if dtype is not None:
            out = ew.convert_element_type(out, dtype)
    else:
        if hasattr(object, "__jax_array__"):
            object = object.__jax_array__()
            return array(object, dtype=dtype, copy=copy, ndmin=ndmin)
        if isinstance(object, (list, tuple)) and any(isinstance(o, Array) for o in _flat(object)):
            object = _to_numpy_nested(object)
        weak = dtype is None and isinstance(object, (bool, int, float, complex)) and not isinstance(object, np.generic)
        if dtype is None:
            dt, weak2 = dtypes.dtype_and_weak(object) if not isinstance(object, (list, tuple)) else (
                _infer_list_dtype(object), False)
            weak = weak and weak2
        else:
            dt = dtypes.canonicalize_dtype(dtype)
        raw = np.array(object, dtype=dt)
        out = Array(raw, weak and dtype is None and not isinstance(object, bool))
    if ndmin and core.get_aval(out).ndim < ndmin:
        out = st.reshape(out, (1,) * (ndmin - core.get_aval(out).ndim) + core.get_aval(out).shape)
    return out


def _flat(obj):
    if isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flat(o)
    else:
        yield obj


def _to_numpy_nested(obj):
    if isinstance(obj, (list, tuple)):
        return [_to_numpy_nested(o) for o in obj]
    return np.asarray(obj)


def _infer_list_dtype(obj) -> np.dtype:
    """The dtype JAX infers for a nested list: promotion of its elements (Python scalars are weak)."""
    pairs = []
    for o in _flat(obj):
        pairs.append(dtypes.dtype_and_weak(o))
    if not pairs:
        return dtypes.default_float_dtype()
    dt, _ = dtypes.result_type_of_pairs(pairs)
    return dt


def asarray(a: Any, dtype=None, order=None, *, copy=None, device=None) -> Any:
    """`a` as a fluxion Array; Arrays and tracers already of the requested dtype are returned unchanged.

    Args:
        a: an array-like (Array, tracer, NumPy array, scalar, nested lists/tuples).
        dtype: the requested dtype (canonicalized: 64-bit types become 32-bit without x64).
        order, copy: accepted for NumPy compatibility and ignored.
        device: None, or a Device/Sharding to place the result on (as `device_put`).

    Returns:
        An Array (or the tracer itself). Python scalars give weakly typed arrays, as in JAX.

    Differs from NumPy: float64 data becomes float32 (JAX's default without x64).

    >>> import fluxion.numpy as jnp
    >>> jnp.asarray([1, 2.5])
    Array([1. , 2.5], dtype=float32)
    >>> jnp.asarray(3)
    Array(3, dtype=int32, weak_type=True)
    """
    if device is not None:
        return place(asarray(a, dtype, order, copy=copy), device)
    if isinstance(a, (Array, Tracer)) and (dtype is None or core.get_aval(a).dtype == dtypes.canonicalize_dtype(dtype)):
        return a
    return array(a, dtype=dtype)


@accepts_device
def zeros(shape, dtype=None) -> Array:
    """An array of zeros.

    Args:
        shape: an int or a sequence of ints.
        dtype: the dtype (default float32, JAX's default float).

    Returns:
        An array of `shape` and `dtype`.

    Raises:
        TypeError: if `shape` is not an int or a sequence of ints.
        ValueError: for a negative dimension.

    >>> import fluxion.numpy as jnp
    >>> jnp.zeros((2, 2), dtype=jnp.int32)
    Array([[0, 0],
           [0, 0]], dtype=int32)
    """
    return _filled(shape, 0, dtype)


@accepts_device
def ones(shape, dtype=None) -> Array:
    """An array of ones.

    Args:
        shape: an int or a sequence of ints.
        dtype: the dtype (default float32).

    Returns:
        An array of `shape` and `dtype`.

    Raises:
        TypeError: if `shape` is not an int or a sequence of ints.
        ValueError: for a negative dimension.

    >>> import fluxion.numpy as jnp
    >>> jnp.ones(3)
    Array([1., 1., 1.], dtype=float32)
    """
    return _filled(shape, 1, dtype)


@accepts_device
def empty(shape, dtype=None) -> Array:
    """An array of `shape`; it holds zeros (arrays are immutable, so there is no uninitialized memory to expose).

    Args:
        shape: an int or a sequence of ints.
        dtype: the dtype (default float32).

    Returns:
        A zero-filled array of `shape` and `dtype`.

    >>> import fluxion.numpy as jnp
    >>> jnp.empty(2)
    Array([0., 0.], dtype=float32)
    """
    return _filled(shape, 0, dtype)


def _filled(shape, value, dtype):
    shape = _shape_tuple(shape)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.default_float_dtype()
    if not core.is_eager():
        return st.full(shape, value, dt)
    return Array(np.full(shape, value, dtype=dt))


@accepts_device
def full(shape, fill_value, dtype=None) -> Any:
    """An array of `shape` filled with `fill_value`.

    Args:
        shape: an int or a sequence of ints.
        fill_value: a scalar, or an array broadcast to `shape`.
        dtype: the dtype; by default that of `fill_value` (a Python scalar gives a weakly typed result, as in JAX).

    Returns:
        An array of `shape`.

    Raises:
        ValueError: if an array `fill_value` cannot be broadcast to `shape`.

    >>> import fluxion.numpy as jnp
    >>> jnp.full((2,), 7)
    Array([7, 7], dtype=int32, weak_type=True)
    >>> jnp.full((2, 2), jnp.array([1.0, 2.0]))
    Array([[1., 2.],
           [1., 2.]], dtype=float32)
    """
    shape = _shape_tuple(shape)
    if isinstance(fill_value, (Array, Tracer)) and core.get_aval(fill_value).ndim:
        from .shape import broadcast_to
        fv = fill_value if dtype is None else ew.convert_element_type(fill_value, dtype)
        return broadcast_to(fv, shape)
    if dtype is None and not isinstance(fill_value, (Array, Tracer)) and core.is_eager():
        # A Python scalar fill gives a weakly-typed array, as in JAX.
        dt, weak = dtypes.dtype_and_weak(fill_value)
        return Array(np.full(shape, fill_value, dtype=dt), weak)
    return st.full(shape, fill_value, dtype)


def _like(a, dtype, shape):
    aval = core.get_aval(a) if isinstance(a, (Array, Tracer)) else core.get_aval(core.to_array(a))
    weak = aval.weak_type and dtype is None
    return (aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype),
            aval.shape if shape is None else _shape_tuple(shape), weak)


def _filled_like(value, a, dtype, shape):
    dt, shp, weak = _like(a, dtype, shape)
    if core.is_eager():
        return Array(np.full(shp, value, dt), weak)
    return st.full(shp, Array(np.asarray(value, dt), weak), dt if not weak else None) if weak else st.full(
        shp, value, dt)


@accepts_device
def zeros_like(a, dtype=None, shape=None) -> Any:
    """Zeros with the shape and dtype of `a`.

    Args:
        a: an array-like.
        dtype: overrides `a`'s dtype.
        shape: overrides `a`'s shape.

    Returns:
        An array; weakly typed if `a` is and no dtype is given.

    >>> import fluxion.numpy as jnp
    >>> jnp.zeros_like(jnp.array([[1, 2]]))
    Array([[0, 0]], dtype=int32)
    """
    return _filled_like(0, a, dtype, shape)


@accepts_device
def ones_like(a, dtype=None, shape=None) -> Any:
    """Ones with the shape and dtype of `a`.

    Args:
        a: an array-like.
        dtype: overrides `a`'s dtype.
        shape: overrides `a`'s shape.

    Returns:
        An array; weakly typed if `a` is and no dtype is given.

    >>> import fluxion.numpy as jnp
    >>> jnp.ones_like(jnp.array([1.5, 2.5]), dtype=jnp.int32)
    Array([1, 1], dtype=int32)
    """
    return _filled_like(1, a, dtype, shape)


@accepts_device
def empty_like(a, dtype=None, shape=None) -> Any:
    """An array of the shape and dtype of `a`, holding zeros (same as `zeros_like`: immutable arrays have no
    uninitialized memory).

    Args:
        a: an array-like.
        dtype: overrides `a`'s dtype.
        shape: overrides `a`'s shape.

    Returns:
        A zero-filled array.

    >>> import fluxion.numpy as jnp
    >>> jnp.empty_like(jnp.array([1, 2]))
    Array([0, 0], dtype=int32)
    """
    return zeros_like(a, dtype, shape)


@accepts_device
def full_like(a, fill_value, dtype=None, shape=None) -> Any:
    """An array of the shape and dtype of `a` filled with `fill_value`.

    Args:
        a: an array-like.
        fill_value: a scalar, or an array broadcast to the shape.
        dtype: overrides `a`'s dtype.
        shape: overrides `a`'s shape.

    Returns:
        An array of `a`'s (or the given) shape and dtype; the fill is cast to it.

    >>> import fluxion.numpy as jnp
    >>> jnp.full_like(jnp.array([1, 2, 3]), 2.7)
    Array([2, 2, 2], dtype=int32)
    """
    dt, shp, weak = _like(a, dtype, shape)
    return full(shp, fill_value, dt)


def _concrete_scalar(x, name):
    if isinstance(x, Tracer):
        v = x._concrete_value()
        if v is None:
            raise x._concretization_error("int", f"jnp.{name}")
        return np.asarray(v).item()
    if isinstance(x, Array):
        return x.item()
    return x


@accepts_device
def arange(start, stop=None, step=None, dtype=None) -> Array:
    """Evenly spaced values in the half-open interval [start, stop) with the given step.

    Args:
        start: the first value, or the stop when `stop` is None (then start is 0).
        stop: the end (excluded).
        step: the spacing (default 1).
        dtype: the result dtype; by default inferred from the arguments (Python ints -> int32, Python floats ->
            float32), as in JAX.

    Returns:
        A 1-d array. The bounds must be concrete: the length is part of the static shape.

    Raises:
        ConcretizationTypeError: (a TypeError) if a bound is a tracer without a known value (e.g. under jit).

    >>> import fluxion.numpy as jnp
    >>> jnp.arange(4)
    Array([0, 1, 2, 3], dtype=int32)
    >>> jnp.arange(1.0, 2.0, 0.25)
    Array([1.  , 1.25, 1.5 , 1.75], dtype=float32)
    """
    start = _concrete_scalar(start, "arange")
    stop = _concrete_scalar(stop, "arange") if stop is not None else None
    step = _concrete_scalar(step, "arange") if step is not None else None
    if dtype is None:
        vals = [v for v in (start, stop, step) if v is not None]
        dt = dtypes.result_type(*vals)
        if any(isinstance(v, float) for v in vals):
            dt = dtypes.default_float_dtype() if not any(isinstance(v, np.floating) for v in vals) else dt
    else:
        dt = dtypes.canonicalize_dtype(dtype)
    if stop is None:
        start, stop = 0, start
    raw = np.arange(start, stop, 1 if step is None else step)
    return Array(raw.astype(dt))


@accepts_device
@staged_as_call("_linspace")
def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None, axis: int = 0):
    """`num` evenly spaced samples from `start` to `stop` (included unless `endpoint=False`).

    Args:
        start, stop: scalars or arrays (then the samples run along `axis`, broadcast over their shapes); may be traced.
        num: the number of samples (a static int).
        endpoint: whether `stop` is the last sample.
        retstep: if True, also return the spacing.
        dtype: the result dtype (default float32). Differs from NumPy: integer dtypes are not floored, values are
            converted.
        axis: the axis of the samples in the result.

    Returns:
        An array of `num` samples along `axis`, or `(samples, step)` if `retstep`.

    Raises:
        ValueError: if `num` is negative.

    >>> import fluxion.numpy as jnp
    >>> jnp.linspace(0.0, 1.0, 5)
    Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    >>> jnp.linspace(0.0, 1.0, 4, endpoint=False, retstep=True)
    (Array([0.  , 0.25, 0.5 , 0.75], dtype=float32), Array(0.25, dtype=float32))
    """
    num = int(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.default_float_dtype()
    from .util import asarray_arg
    s = ew.convert_element_type(asarray_arg(start), dt)
    e = ew.convert_element_type(asarray_arg(stop), dt)
    from .shape import moveaxis
    bshape = np.broadcast_shapes(core.get_aval(s).shape, core.get_aval(e).shape)
    div = (num - 1) if endpoint else num
    iota = st.broadcasted_iota(dt, (num,) + bshape, 0)
    s_b = st.broadcast_in_dim(s, (num,) + bshape, tuple(range(1 + len(bshape) - core.get_aval(s).ndim,
                                                              1 + len(bshape))))
    e_b = st.broadcast_in_dim(e, (num,) + bshape, tuple(range(1 + len(bshape) - core.get_aval(e).ndim,
                                                              1 + len(bshape))))
    if div > 0:
        step = ew.div(ew.sub(e_b, s_b), Array(np.asarray(div, dt)))
        out = ew.add(s_b, ew.mul(iota, step))
        if endpoint and num > 1:
            out = st.concatenate([st.slice_in_dim(out, 0, num - 1), st.slice_in_dim(e_b, 0, 1)], 0)
    else:
        step = ew.sub(e_b, s_b)
        out = s_b
    out = moveaxis(out, 0, axis) if axis != 0 else out
    if retstep:
        return out, ew.div(ew.sub(e, s), Array(np.asarray(div, dt))) if div > 0 else ew.sub(e, s)
    return out


@staged_as_call("_logspace")
def logspace(start, stop, num: int = 50, endpoint: bool = True, base: float = 10.0, dtype=None, axis: int = 0):
    """`num` samples spaced evenly on a log scale: `base ** linspace(start, stop, num)`.

    Args:
        start, stop: exponents (scalars or arrays; may be traced).
        num, endpoint, dtype, axis: as for `linspace`.
        base: the base of the powers (default 10.0).

    Returns:
        An array of `num` values along `axis`, in `dtype` (default float32).

    Raises:
        ValueError: if `num` is negative.

    >>> import fluxion.numpy as jnp
    >>> jnp.logspace(0.0, 3.0, 4)
    Array([   1.,   10.,  100., 1000.], dtype=float32)
    >>> jnp.logspace(0.0, 3.0, 4, base=2.0)
    Array([1., 2., 4., 8.], dtype=float32)
    """
    from .ufuncs import power
    lin = linspace(start, stop, num, endpoint=endpoint, dtype=dtype, axis=axis)
    return power(Array(np.asarray(base, core.get_aval(lin).dtype), True), lin)


@accepts_device
def eye(N: int, M: int | None = None, k: int = 0, dtype=None) -> Any:
    """A 2-d array with ones on the `k`-th diagonal and zeros elsewhere.

    Args:
        N: the number of rows.
        M: the number of columns (default N).
        k: the diagonal (0 main, > 0 above, < 0 below).
        dtype: the dtype (default float32).

    Returns:
        An array of shape (N, M).

    >>> import fluxion.numpy as jnp
    >>> jnp.eye(2, 3, k=1, dtype=jnp.int32)
    Array([[0, 1, 0],
           [0, 0, 1]], dtype=int32)
    """
    M = N if M is None else M
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.default_float_dtype()
    if int(N) < 0 or int(M) < 0:
        raise ValueError(f"eye: negative dimensions are not allowed, got N={N} and M={M}")
    rows = st.broadcasted_iota(dtypes.int32, (int(N), int(M)), 0)
    cols = st.broadcasted_iota(dtypes.int32, (int(N), int(M)), 1)
    mask = ew.eq(ew.add(rows, Array(np.asarray(int(k), np.int32), True)), cols)
    return ew.convert_element_type(mask, dt)


def identity(n: int, dtype=None) -> Any:
    """The `n` x `n` identity matrix.

    Args:
        n: the size.
        dtype: the dtype (default float32).

    Returns:
        An array of shape (n, n).

    >>> import fluxion.numpy as jnp
    >>> jnp.identity(2)
    Array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype=None) -> Any:
    """A 2-d array with ones at and below the `k`-th diagonal and zeros above it.

    Args:
        N: the number of rows.
        M: the number of columns (default N).
        k: the diagonal (ones where `col <= row + k`).
        dtype: the dtype (default float32).

    Returns:
        An array of shape (N, M).

    >>> import fluxion.numpy as jnp
    >>> jnp.tri(3, dtype=jnp.int32)
    Array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]], dtype=int32)
    >>> jnp.tri(2, 3, k=1)
    Array([[1., 1., 0.],
           [1., 1., 1.]], dtype=float32)
    """
    M = N if M is None else M
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.default_float_dtype()
    rows = st.broadcasted_iota(dtypes.int32, (int(N), int(M)), 0)
    cols = st.broadcasted_iota(dtypes.int32, (int(N), int(M)), 1)
    return ew.convert_element_type(ew.ge(ew.add(rows, Array(np.asarray(int(k), np.int32), True)), cols), dt)


def copy(a, order=None) -> Any:
    """A copy of `a` as an array. Arrays are immutable, so this returns `a` itself when it already is one.

    Args:
        a: an array-like.
        order: accepted for NumPy compatibility and ignored.

    Returns:
        An array equal to `a`.

    >>> import fluxion.numpy as jnp
    >>> jnp.copy(jnp.array([1, 2]))
    Array([1, 2], dtype=int32)
    """
    from .util import asarray_arg
    return asarray_arg(a)


def frombuffer(buffer, dtype=float, count=-1, offset=0) -> Array:
    """An array read from a bytes-like `buffer` (as `numpy.frombuffer`, then converted).

    Args:
        buffer: an object exposing the buffer interface (bytes, bytearray, memoryview).
        dtype: the element dtype to read (default float, i.e. float64 before canonicalization).
        count: the number of elements to read (-1: all).
        offset: the byte offset to start at.

    Returns:
        A 1-d array; 64-bit data is canonicalized to 32-bit without x64, as in JAX.

    Raises:
        ValueError: if the buffer length is not a multiple of the item size (raised by NumPy).

    >>> import fluxion.numpy as jnp
    >>> jnp.frombuffer(bytes([1, 2, 3]), dtype=jnp.uint8)
    Array([1, 2, 3], dtype=uint8)
    """
    return array(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def from_dlpack(x, /, *, device=None, copy=None) -> Array:
    """An array from an object supporting the DLPack protocol (e.g. a NumPy array); the data is copied.

    Args:
        x: an object with `__dlpack__` and `__dlpack_device__`.
        device: None, or a Device/Sharding to place the result on (as `device_put`).
        copy: None or True. Differs from JAX: fluxion never aliases a foreign buffer, so copy=False raises
          ValueError (JAX raises the same class when it cannot alias).

    Returns:
        An array (canonicalized dtype).

    >>> import fluxion.numpy as jnp
    >>> import numpy as np
    >>> jnp.from_dlpack(np.arange(3, dtype=np.int32))
    Array([0, 1, 2], dtype=int32)
    """
    if copy is False:
        raise ValueError("from_dlpack: copy=False is not supported: fluxion always copies the source buffer "
                         "(use copy=None or copy=True)")
    return place(array(np.from_dlpack(x)), device)


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    """Coordinate arrays for a grid spanned by 1-d coordinate vectors.

    Args:
        *xi: array-likes (flattened to 1-d).
        copy: accepted and ignored (results are new immutable arrays).
        sparse: if True, each output keeps size 1 along every axis but its own (broadcastable instead of full).
        indexing: 'xy' (Cartesian: the first two output axes swapped) or 'ij' (matrix).

    Returns:
        A list of `len(xi)` arrays.

    Raises:
        ValueError: for an `indexing` other than 'xy' and 'ij' (as NumPy and JAX).

    >>> import fluxion.numpy as jnp
    >>> xs, ys = jnp.meshgrid(jnp.array([1, 2, 3]), jnp.array([10, 20]))
    >>> xs
    Array([[1, 2, 3],
           [1, 2, 3]], dtype=int32)
    >>> ys
    Array([[10, 10, 10],
           [20, 20, 20]], dtype=int32)
    >>> [g.shape for g in jnp.meshgrid(jnp.arange(3), jnp.arange(2), indexing='ij', sparse=True)]
    [(3, 1), (1, 2)]
    """
    from .util import asarray_arg
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    args = [asarray_arg(x) for x in xi]
    shapes = [core.get_aval(a).size for a in args]
    if indexing == "xy" and len(args) >= 2:
        shapes[0], shapes[1] = shapes[1], shapes[0]
    out = []
    nd = len(args)
    for i, a in enumerate(args):
        pos = i
        if indexing == "xy" and nd >= 2 and i < 2:
            pos = 1 - i
        a = st.reshape(a, (core.get_aval(a).size,))
        if sparse:
            shp = [1] * nd
            shp[pos] = core.get_aval(a).size
            out.append(st.reshape(a, shp))
        else:
            out.append(st.broadcast_in_dim(a, tuple(shapes), (pos,)))
    return out

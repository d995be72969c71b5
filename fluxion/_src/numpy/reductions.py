"""Reductions: `sum`, `prod`, `max`, `min`, `mean`, `var`, `std`, `any`, `all`, `argmax`, `argmin`, cumulative ops."""

from __future__ import annotations

import builtins

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..core import Array
from ..lax import cumulative as cum
from ..lax import elementwise as ew
from ..lax import reductions as red
from ..lax import structural as st
from .util import arraylike_arg, asarray_arg, broadcast_to_shape, canonicalize_axes, canonicalize_axis, check_out


def _strong(a):
    """Reductions return strongly-typed results even for weakly-typed inputs (as in JAX)."""
    aval = core.get_aval(a)
    return ew._convert_weak(a, aval.dtype, False) if aval.weak_type else a


def _keepdims(out, in_shape, axes, keepdims):
    if not keepdims:
        return out
    shape = tuple(1 if i in axes else d for i, d in enumerate(in_shape))
    return st.reshape(out, shape)


def _apply_where(a, where, identity):
    if where is None:
        return a
    where = asarray_arg(where)
    aval = core.get_aval(a)
    where = broadcast_to_shape(where, aval.shape) if core.get_aval(where).shape != aval.shape else where
    ident = Array(np.asarray(identity, aval.dtype), True)
    return ew.select_n(where, st.full(aval.shape, ident, aval.dtype) if aval.shape else ident, a)


def _sum_dtype(dt: np.dtype, dtype) -> np.dtype:
    if dtype is not None:
        return dtypes.canonicalize_dtype(dtype)
    if dt == dtypes.bool_:
        return dtypes.default_int_dtype()
    if dtypes.is_integer(dt) and dt.itemsize < dtypes.default_int_dtype().itemsize:
        return dtypes.default_int_dtype() if dt.kind == "i" else np.dtype(f"uint{dtypes.default_int_dtype().itemsize*8}")
    return dt


def sum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None, promote_integers=True):  # noqa: A001
    """Sum of the elements of `a` over `axis`.

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        dtype: the accumulation and result dtype. By default bool and integers narrower than the default int
            accumulate in the default int (int32; unsigned ones in uint32), as in JAX.
        out: must be None (NotImplementedError otherwise, as in JAX: arrays are immutable).
        keepdims: if True, the reduced axes stay as size-1 dimensions.
        initial: a value added to every sum.
        where: a bool array broadcastable to `a`'s shape; elements where it is False are left out.
        promote_integers: if False, integer inputs keep their dtype.

    Returns:
        An array of the reduced shape. Weakly typed inputs give strongly typed results, as in JAX.

    Raises:
        ValueError: if an axis is out of bounds or repeated.

    >>> import fluxion.numpy as jnp
    >>> x = jnp.array([[1, 2], [3, 4]], dtype=jnp.int8)
    >>> jnp.sum(x)
    Array(10, dtype=int32)
    >>> jnp.sum(x, axis=0, keepdims=True)
    Array([[4, 6]], dtype=int32)
    """
    check_out(out, "sum")
    a = _strong(arraylike_arg(a, "sum"))
    aval = core.get_aval(a)
    dt = _sum_dtype(aval.dtype, dtype) if promote_integers or dtype is not None else aval.dtype
    if dt != aval.dtype:
        a = ew._convert_weak(a, dt, aval.weak_type)
    a = _apply_where(a, where, 0)
    axes = canonicalize_axes(axis, aval.ndim)
    if dt in (dtypes.float16, dtypes.bfloat16):
        # Half-precision sums accumulate in float32 and round once at the end, as JAX's do (this is also why
        # `jax.allow_f16_reductions=False`, which forbids half-precision `reduce_sum`, leaves `sum` working).
        result = ew._convert_weak(red.reduce_sum(ew._convert_weak(a, dtypes.float32, False), axes), dt, False)
    else:
        result = red.reduce_sum(a, axes)
    if initial is not None:
        result = ew.add(result, Array(np.asarray(initial, dt), True))
    return _keepdims(result, aval.shape, axes, keepdims)


def prod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None, promote_integers=True):
    """Product of the elements of `a` over `axis`.

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        dtype: the accumulation and result dtype (by default as `sum`: bool and narrow ints widen to int32).
        out: must be None (NotImplementedError otherwise, as in JAX: arrays are immutable).
        keepdims: if True, the reduced axes stay as size-1 dimensions.
        initial: a value multiplied into every product.
        where: a bool mask broadcastable to `a`; masked-out elements count as 1.
        promote_integers: accepted for JAX compatibility; differs from JAX: narrow integers widen even when False.

    Returns:
        An array of the reduced shape (strongly typed).

    Raises:
        ValueError: if an axis is out of bounds or repeated.

    >>> import fluxion.numpy as jnp
    >>> jnp.prod(jnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)
    Array([ 2., 12.], dtype=float32)
    """
    check_out(out, "prod")
    a = _strong(arraylike_arg(a, "prod"))
    aval = core.get_aval(a)
    dt = _sum_dtype(aval.dtype, dtype)
    if dt != aval.dtype:
        a = ew._convert_weak(a, dt, aval.weak_type)
    a = _apply_where(a, where, 1)
    axes = canonicalize_axes(axis, aval.ndim)
    result = red.reduce_prod(a, axes)
    if initial is not None:
        result = ew.mul(result, Array(np.asarray(initial, dt), True))
    return _keepdims(result, aval.shape, axes, keepdims)


def _minmax(name, prim_fn, a, axis, keepdims, initial, where, is_max):
    a = _strong(arraylike_arg(a, name))
    aval = core.get_aval(a)
    axes = canonicalize_axes(axis, aval.ndim)
    if where is not None:
        if initial is None:
            raise ValueError(f"reduction operation {name} does not have an identity, so to use a where mask one has "
                             "to specify 'initial'")
        a = _apply_where(a, where, initial)
    elif aval.size == 0 and initial is None and builtins.any(aval.shape[i] == 0 for i in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    result = prim_fn(a, axes)
    if initial is not None:
        init = Array(np.asarray(initial, aval.dtype), True)
        result = ew.max(result, init) if is_max else ew.min(result, init)
    return _keepdims(result, aval.shape, axes, keepdims)


def max(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):  # noqa: A001
    """The largest element of `a` over `axis` (nan if any element is nan). `jnp.amax` is the same function.

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        out: must be None (NotImplementedError otherwise, as in JAX: arrays are immutable).
        keepdims: if True, the reduced axes stay as size-1 dimensions.
        initial: a lower bound included in every maximum (needed for empty reductions and with `where`).
        where: a bool mask broadcastable to `a`; masked-out elements are ignored.

    Returns:
        An array of the reduced shape in `a`'s dtype (strongly typed).

    Raises:
        ValueError: if a reduced axis is empty and `initial` is None, if `where` is given without `initial`, or if
            an axis is out of bounds.

    >>> import fluxion.numpy as jnp
    >>> x = jnp.array([[1, 5], [3, 2]])
    >>> jnp.max(x)
    Array(5, dtype=int32)
    >>> jnp.max(x, axis=0)
    Array([3, 5], dtype=int32)
    >>> jnp.max(x, where=x < 4, initial=0)
    Array(3, dtype=int32)
    """
    check_out(out, "max")
    return _minmax("max", red.reduce_max, a, axis, keepdims, initial, where, True)


def min(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):  # noqa: A001
    """The smallest element of `a` over `axis` (nan if any element is nan). `jnp.amin` is the same function.

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        out: must be None (NotImplementedError otherwise, as in JAX: arrays are immutable).
        keepdims: if True, the reduced axes stay as size-1 dimensions.
        initial: an upper bound included in every minimum (needed for empty reductions and with `where`).
        where: a bool mask broadcastable to `a`; masked-out elements are ignored.

    Returns:
        An array of the reduced shape in `a`'s dtype (strongly typed).

    Raises:
        ValueError: if a reduced axis is empty and `initial` is None, if `where` is given without `initial`, or if
            an axis is out of bounds.

    >>> import fluxion.numpy as jnp
    >>> jnp.min(jnp.array([[1, 5], [3, 2]]), axis=1)
    Array([1, 2], dtype=int32)
    """
    check_out(out, "min")
    return _minmax("min", red.reduce_min, a, axis, keepdims, initial, where, False)


amax, amin = max, min


def _bool_reduce(name, prim_fn, a, axis, keepdims, where, identity):
    a = arraylike_arg(a, name)
    aval = core.get_aval(a)
    if aval.dtype != dtypes.bool_:
        a = ew.ne(a, Array(np.zeros((), aval.dtype), True))
    a = _apply_where(a, where, identity)
    axes = canonicalize_axes(axis, aval.ndim)
    return _keepdims(prim_fn(a, axes), aval.shape, axes, keepdims)


def any(a, axis=None, out=None, keepdims: bool = False, *, where=None):  # noqa: A001
    """Whether any element of `a` over `axis` is true (nonzero).

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        out: must be None (NotImplementedError otherwise, as in JAX: arrays are immutable).
        keepdims: if True, the reduced axes stay as size-1 dimensions.
        where: a bool mask broadcastable to `a`; masked-out elements count as False.

    Returns:
        A bool array of the reduced shape; False for an empty reduction.

    Raises:
        ValueError: if an axis is out of bounds or repeated.

    >>> import fluxion.numpy as jnp
    >>> jnp.any(jnp.array([[0, 0], [0, 3]]), axis=1)
    Array([False,  True], dtype=bool)
    """
    check_out(out, "any")
    return _bool_reduce("any", red.reduce_or, a, axis, keepdims, where, False)


def all(a, axis=None, out=None, keepdims: bool = False, *, where=None):  # noqa: A001
    """Whether every element of `a` over `axis` is true (nonzero).

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        out: must be None (NotImplementedError otherwise, as in JAX: arrays are immutable).
        keepdims: if True, the reduced axes stay as size-1 dimensions.
        where: a bool mask broadcastable to `a`; masked-out elements count as True.

    Returns:
        A bool array of the reduced shape; True for an empty reduction.

    Raises:
        ValueError: if an axis is out of bounds or repeated.

    >>> import fluxion.numpy as jnp
    >>> jnp.all(jnp.array([[1, 2], [0, 3]]), axis=1)
    Array([ True, False], dtype=bool)
    >>> jnp.all(jnp.zeros((0,)))
    Array(True, dtype=bool)
    """
    check_out(out, "all")
    return _bool_reduce("all", red.reduce_and, a, axis, keepdims, where, True)


def _count(aval, axes, where):
    if where is None:
        n = int(np.prod([aval.shape[i] for i in axes], dtype=np.int64))
        return n
    w = asarray_arg(where)
    w = broadcast_to_shape(w, aval.shape) if core.get_aval(w).shape != aval.shape else w
    return red.reduce_sum(ew.convert_element_type(w, dtypes.default_int_dtype()), axes)


@staged_as_call("mean", fuse_eager=True, stage=False)
def mean(a, axis=None, dtype=None, out=None, keepdims: bool = False, *, where=None):
    """Arithmetic mean of `a` over `axis`.

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        dtype: the accumulation and result dtype; by default `a`'s inexact dtype (integers and bool: float32).
        out: must be None (NotImplementedError otherwise, as in JAX: arrays are immutable).
        keepdims: if True, the reduced axes stay as size-1 dimensions.
        where: a bool mask broadcastable to `a`; only the True elements are summed and counted.

    Returns:
        An array of the reduced shape (strongly typed). An empty reduction gives nan (0 / 0), without NumPy's
        warning.

    Raises:
        ValueError: if an axis is out of bounds or repeated.

    >>> import fluxion.numpy as jnp
    >>> jnp.mean(jnp.array([[1, 2], [3, 5]]), axis=0)
    Array([2. , 3.5], dtype=float32)
    """
    check_out(out, "mean")
    a = _strong(arraylike_arg(a, "mean"))
    aval = core.get_aval(a)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.inexact_dtype_for(aval.dtype)
    axes = canonicalize_axes(axis, aval.ndim)
    total = sum(a, axis=axes, dtype=dt, keepdims=keepdims, where=where)
    n = _count(aval, axes, where)
    if isinstance(n, int):
        if np.dtype(dt).kind == "f" and not isinstance(total, core.Tracer):
            # JAX divides by the count as a constant of the compiled program, which XLA turns into a product with
            # the rounded reciprocal (traced, the compiler's simplify pass rewrites the `div` below the same way).
            with np.errstate(divide="ignore"):
                return ew.mul(total, Array(np.divide(np.asarray(1, dt), np.asarray(n, dt)), True))
        return ew.div(total, Array(np.asarray(n, dt), True))
    n = ew.convert_element_type(n, dt)
    return ew.div(total, _keepdims(n, aval.shape, axes, keepdims) if keepdims else n)


@staged_as_call("_var", fuse_eager=True)
def var(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None, correction=None):
    """Variance of `a` over `axis`: the mean squared deviation, divided by `N - ddof`.

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        dtype: the computation dtype; by default `a`'s inexact dtype (integers: float32).
        out: must be None (NotImplementedError otherwise, as in JAX: arrays are immutable).
        ddof: delta degrees of freedom (1 gives the unbiased sample variance).
        keepdims: if True, the reduced axes stay as size-1 dimensions.
        where: a bool mask broadcastable to `a`; only the True elements count.
        correction: the Array API's name for `ddof`; overrides it when given.

    Returns:
        A real array of the reduced shape: for complex `a`, the mean of `|a - mean(a)|**2` in the matching real
        dtype.

    Raises:
        ValueError: if an axis is out of bounds or repeated.

    >>> import fluxion.numpy as jnp
    >>> x = jnp.array([1.0, 2.0, 3.0, 4.0])
    >>> jnp.var(x)
    Array(1.25, dtype=float32)
    >>> jnp.var(x, ddof=1)
    Array(1.6666666, dtype=float32)
    """
    check_out(out, "var")
    if correction is not None:
        ddof = correction
    a = _strong(arraylike_arg(a, "var"))
    aval = core.get_aval(a)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.inexact_dtype_for(aval.dtype)
    axes = canonicalize_axes(axis, aval.ndim)
    if aval.dtype != dt:
        a = ew.convert_element_type(a, dt)
    mu = mean(a, axis=axes, keepdims=True, where=where)
    centered = ew.sub(a, broadcast_to_shape(mu, aval.shape))
    if dtypes.is_complex(dt):
        sq = ew.real(ew.mul(centered, ew.conj(centered)))
    else:
        sq = ew.mul(centered, centered)
    total = sum(sq, axis=axes, keepdims=keepdims, where=where)
    n = _count(aval, axes, where)
    rdt = core.get_aval(total).dtype
    # As JAX: nan wherever the normalizer N - ddof is not positive (not total / 0 or a sign-flipped total).
    if isinstance(n, int):
        if n - ddof > 0:
            return ew.div(total, Array(np.asarray(n - ddof, rdt), True))
        return st.full(core.get_aval(total).shape, np.nan, rdt)
    n = ew.sub(ew.convert_element_type(n, rdt), Array(np.asarray(ddof, rdt), True))
    n = _keepdims(n, aval.shape, axes, keepdims) if keepdims else n
    ratio = ew.div(total, n)
    return ew.select_n(ew.gt(n, Array(np.asarray(0, rdt), True)), st.full(core.get_aval(ratio).shape, np.nan, rdt),
                       ratio)


@staged_as_call("_std", fuse_eager=True)
def std(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None, correction=None):
    """Standard deviation of `a` over `axis`: the square root of `var` (same arguments).

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        dtype, out, ddof, keepdims, where, correction: as for `var`.

    Returns:
        A real array of the reduced shape.

    Raises:
        ValueError: if an axis is out of bounds or repeated.

    >>> import fluxion.numpy as jnp
    >>> jnp.std(jnp.array([[1.0, 3.0], [2.0, 2.0]]), axis=1)
    Array([1., 0.], dtype=float32)
    """
    check_out(out, "std")
    return ew.sqrt(var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where, correction=correction))


def _arg(name, fn, a, axis, keepdims):
    a = arraylike_arg(a, name)
    aval = core.get_aval(a)
    if axis is None:
        flat = st.reshape(a, (aval.size,))
        out = fn(flat, 0, dtypes.default_int_dtype())
        return st.reshape(out, (1,) * aval.ndim) if keepdims else out
    ax = canonicalize_axis(axis, aval.ndim)
    out = fn(a, ax, dtypes.default_int_dtype())
    return _keepdims(out, aval.shape, (ax,), keepdims)


def argmax(a, axis=None, out=None, keepdims=None):
    """The index of the largest element of `a` (of the flattened array when `axis` is None). Ties give
    the first index; a nan counts as the largest.

    Args:
        a: array-like.
        axis: None or an int.
        out: must be None (NotImplementedError otherwise, as in JAX: arrays are immutable).
        keepdims: if True, the reduced axis (all axes for None) stays as size 1.

    Returns:
        An int32 array of the reduced shape.

    Raises:
        ValueError: if `axis` is out of bounds.

    >>> import fluxion.numpy as jnp
    >>> jnp.argmax(jnp.array([[1, 7], [9, 2]]))
    Array(2, dtype=int32)
    >>> jnp.argmax(jnp.array([[1, 7], [9, 2]]), axis=1)
    Array([1, 0], dtype=int32)
    """
    check_out(out, "argmax")
    return _arg("argmax", red.argmax, a, axis, bool(keepdims))


def argmin(a, axis=None, out=None, keepdims=None):
    """The index of the smallest element of `a` (of the flattened array when `axis` is None). Ties give
    the first index; a nan counts as the smallest.

    Args:
        a: array-like.
        axis: None or an int.
        out: must be None (NotImplementedError otherwise, as in JAX: arrays are immutable).
        keepdims: if True, the reduced axis (all axes for None) stays as size 1.

    Returns:
        An int32 array of the reduced shape.

    Raises:
        ValueError: if `axis` is out of bounds.

    >>> import fluxion.numpy as jnp
    >>> jnp.argmin(jnp.array([[1, 7], [9, 0]]), axis=0)
    Array([0, 1], dtype=int32)
    """
    check_out(out, "argmin")
    return _arg("argmin", red.argmin, a, axis, bool(keepdims))


def _cumulative(name, fn, a, axis, dtype, promote_integers=False, nan_fill=None):
    """A cumulative reduction as jnp computes it: with `axis=None` the operand is flattened; NaNs are replaced
    by `nan_fill` first (the nancum* variants); the accumulation dtype is `dtype`, else the operand's (bool, and with
    `promote_integers` also small integers, accumulate in the default integer); `dtype=bool` accumulates `a != 0` in
    the default integer and casts back. The result is never weakly typed: as in JAX, a cumulative reduction's
    output has a concrete dtype even for a Python scalar operand."""
    a = arraylike_arg(a, name)
    aval = core.get_aval(a)
    if axis is None:
        a, axis = st.reshape(a, (aval.size,)), 0
    axis = canonicalize_axis(axis, core.get_aval(a).ndim)
    if nan_fill is not None and dtypes.is_inexact(aval.dtype):
        from .ufuncs import isnan
        a = ew.select_n(isnan(a), a, st.full(core.get_aval(a).shape, nan_fill, aval.dtype))
    if dtype is None:
        result = _sum_dtype(aval.dtype, None) if promote_integers or aval.dtype == dtypes.bool_ else aval.dtype
        compute = result
    else:
        result = dtypes.canonicalize_dtype(dtype)
        compute = result
        if result == dtypes.bool_:
            if aval.dtype != dtypes.bool_:
                a = ew.ne(a, Array(np.zeros((), aval.dtype), True))
            compute = dtypes.default_int_dtype()
    a = ew._convert_weak(a, compute, False)
    return ew._convert_weak(fn(a, axis), result, False)


@staged_as_call("cumsum")
def cumsum(a, axis=None, dtype=None, out=None):
    """Running sum of `a` along `axis` (over the flattened array when `axis` is None).

    Args:
        a: array-like.
        axis: None or an int.
        dtype: the accumulation and result dtype. By default integers keep their dtype (unlike `sum`) and bool
            accumulates in int32.
        out: must be None.

    Returns:
        An array of `a`'s shape (1-d when `axis` is None), never weakly typed.

    Raises:
        NotImplementedError: if `out` is given.
        ValueError: if `axis` is out of bounds.

    >>> import fluxion.numpy as jnp
    >>> jnp.cumsum(jnp.array([[1, 2], [3, 4]]))
    Array([ 1,  3,  6, 10], dtype=int32)
    >>> jnp.cumsum(jnp.array([[1, 2], [3, 4]]), axis=0)
    Array([[1, 2],
           [4, 6]], dtype=int32)
    """
    check_out(out, "cumsum")
    return _cumulative("cumsum", cum.cumsum, a, axis, dtype)


@staged_as_call("cumprod")
def cumprod(a, axis=None, dtype=None, out=None):
    """Running product of `a` along `axis` (over the flattened array when `axis` is None).

    Args:
        a, axis, dtype, out: as for `cumsum`.

    Returns:
        An array of `a`'s shape (1-d when `axis` is None), never weakly typed.

    Raises:
        NotImplementedError: if `out` is given.

    >>> import fluxion.numpy as jnp
    >>> jnp.cumprod(jnp.array([1.0, 2.0, 3.0, 4.0]))
    Array([ 1.,  2.,  6., 24.], dtype=float32)
    """
    check_out(out, "cumprod")
    return _cumulative("cumprod", cum.cumprod, a, axis, dtype)


@staged_as_call("nancumsum")
def nancumsum(a, axis=None, dtype=None, out=None):
    """`cumsum` with nans counted as 0 (same arguments and dtype rules).

    Raises:
        NotImplementedError: if `out` is given.

    >>> import fluxion.numpy as jnp
    >>> jnp.nancumsum(jnp.array([1.0, jnp.nan, 2.0]))
    Array([1., 1., 3.], dtype=float32)
    """
    check_out(out, "nancumsum")
    return _cumulative("nancumsum", cum.cumsum, a, axis, dtype, nan_fill=0)


@staged_as_call("nancumprod")
def nancumprod(a, axis=None, dtype=None, out=None):
    """`cumprod` with nans counted as 1 (same arguments and dtype rules).

    Raises:
        NotImplementedError: if `out` is given.

    >>> import fluxion.numpy as jnp
    >>> jnp.nancumprod(jnp.array([2.0, jnp.nan, 3.0]))
    Array([2., 2., 6.], dtype=float32)
    """
    check_out(out, "nancumprod")
    return _cumulative("nancumprod", cum.cumprod, a, axis, dtype, nan_fill=1)


def _array_api_cumulative(name, what, fn, identity, promote_integers, x, axis, dtype, include_initial):
    x = arraylike_arg(x, name)
    ndim = core.get_aval(x).ndim
    if ndim == 0:
        raise ValueError(f"The input must be non-scalar to take a cumulative {what}, however a scalar value or "
                         "scalar array was given.")
    if axis is None:
        if ndim > 1:
            raise ValueError(f"The input array has rank {ndim}, however axis was not set to an explicit value. "
                             "The axis argument is only optional for one-dimensional arrays.")
        axis = 0
    axis = canonicalize_axis(axis, ndim)
    out = _cumulative(name, fn, x, axis, dtype, promote_integers=promote_integers)
    if include_initial:
        o = core.get_aval(out)
        shape = list(o.shape)
        shape[axis] = 1
        out = st.concatenate([st.full(tuple(shape), identity, o.dtype), out], axis)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """The Array API's cumulative sum of `x` along `axis`.

    Like `cumsum`, except: `x` must have at least one dimension; `axis` may be omitted only for 1-d `x`; bool and
    integers narrower than int32 accumulate in the default int (as `sum` does); `include_initial=True` prepends a 0
    along `axis` (the result is then one longer there).

    Raises:
        ValueError: for a 0-d `x`, or a missing `axis` with `x.ndim > 1`.

    >>> import fluxion.numpy as jnp
    >>> jnp.cumulative_sum(jnp.array([1, 2, 3]), include_initial=True)
    Array([0, 1, 3, 6], dtype=int32)
    """
    return _array_api_cumulative("cumulative_sum", "sum", cum.cumsum, 0, True, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """The Array API's cumulative product of `x` along `axis`.

    As `cumulative_sum`, but integers keep their dtype (as in JAX) and `include_initial=True` prepends a 1.

    Raises:
        ValueError: for a 0-d `x`, or a missing `axis` with `x.ndim > 1`.

    >>> import fluxion.numpy as jnp
    >>> jnp.cumulative_prod(jnp.array([[1, 2], [3, 4]]), axis=1)
    Array([[ 1,  2],
           [ 3, 12]], dtype=int32)
    """
    return _array_api_cumulative("cumulative_prod", "product", cum.cumprod, 1, False, x, axis, dtype,
                                 include_initial)


@staged_as_call("nansum")
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """`sum` with nans counted as 0 (same arguments and dtype rules as `sum`).

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        dtype, out, keepdims, initial, where: as for `sum`.

    Returns:
        An array of the reduced shape; 0 where every element is nan.

    >>> import fluxion.numpy as jnp
    >>> jnp.nansum(jnp.array([[1.0, jnp.nan], [jnp.nan, jnp.nan]]), axis=1)
    Array([1., 0.], dtype=float32)
    """
    check_out(out, "nansum")
    from .ufuncs import isnan, where as jwhere
    a = arraylike_arg(a, "nansum")
    return sum(jwhere(isnan(a), Array(np.zeros((), core.get_aval(a).dtype), True), a), axis=axis, dtype=dtype,
               keepdims=keepdims, initial=initial, where=where)


@staged_as_call("nanmean")
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """`mean` over the elements that are not nan.

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        dtype, out, keepdims, where: as for `mean` (`where` is combined with the not-nan mask).

    Returns:
        An array of the reduced shape; nan where every element is nan (0 / 0).

    >>> import fluxion.numpy as jnp
    >>> jnp.nanmean(jnp.array([1.0, jnp.nan, 3.0]))
    Array(2., dtype=float32)
    """
    check_out(out, "nanmean")
    from .ufuncs import isnan, logical_not
    a = arraylike_arg(a, "nanmean")
    valid = logical_not(isnan(a))
    return mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=valid if where is None else
                ew.bitwise_and(valid, asarray_arg(where)))


def _nan_extreme(name, reduce, fill, a, axis, keepdims, initial, where):
    """`reduce` (max or min) with nans replaced by `fill` (the reduction's identity); a slice with only nans gives
    nan when no `initial` is given (as JAX: `initial` then supplies the result). Integer inputs hold no nan and
    go to `reduce` unchanged."""
    from .ufuncs import isnan, where as jwhere
    a = arraylike_arg(a, name)
    dt = core.get_aval(a).dtype
    if not dtypes.is_inexact(dt):
        return reduce(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
    nan_mask = isnan(a)
    out = reduce(jwhere(nan_mask, Array(np.asarray(fill, dt), True), a), axis=axis, keepdims=keepdims,
                 initial=initial, where=where)
    if initial is not None:
        return out
    return jwhere(all(nan_mask, axis=axis, keepdims=keepdims), Array(np.asarray(np.nan, dt), True), out)


@staged_as_call("nanmax")
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """`max` ignoring nans.

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        out, keepdims, initial, where: as for `max`.

    Returns:
        An array of the reduced shape in `a`'s dtype; nan where every element of a slice is nan (unless `initial`
        is given: it is then the result, as in JAX).

    Raises:
        ValueError: as for `max`.

    >>> import fluxion.numpy as jnp
    >>> jnp.nanmax(jnp.array([[1.0, jnp.nan], [jnp.nan, 4.0]]), axis=0)
    Array([1., 4.], dtype=float32)
    """
    check_out(out, "nanmax")
    return _nan_extreme("nanmax", max, -np.inf, a, axis, keepdims, initial, where)


@staged_as_call("nanmin")
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """`min` ignoring nans.

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        out, keepdims, initial, where: as for `min`.

    Returns:
        An array of the reduced shape in `a`'s dtype; nan where every element of a slice is nan (unless `initial`
        is given: it is then the result, as in JAX).

    Raises:
        ValueError: as for `min`.

    >>> import fluxion.numpy as jnp
    >>> jnp.nanmin(jnp.array([[1.0, jnp.nan], [jnp.nan, 4.0]]), axis=0)
    Array([1., 4.], dtype=float32)
    """
    check_out(out, "nanmin")
    return _nan_extreme("nanmin", min, np.inf, a, axis, keepdims, initial, where)


@staged_as_call("count_nonzero")
def count_nonzero(a, axis=None, keepdims=False):
    """The number of nonzero (true) elements of `a` over `axis`.

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        keepdims: if True, the reduced axes stay as size-1 dimensions.

    Returns:
        An int32 array of the reduced shape.

    Raises:
        ValueError: if an axis is out of bounds or repeated.

    >>> import fluxion.numpy as jnp
    >>> jnp.count_nonzero(jnp.array([[0, 1, 2], [3, 0, 0]]), axis=1)
    Array([2, 1], dtype=int32)
    """
    a = arraylike_arg(a, "count_nonzero")
    nz = ew.ne(a, Array(np.zeros((), core.get_aval(a).dtype), True))
    return sum(nz, axis=axis, keepdims=keepdims)


@staged_as_call("_ptp")
def ptp(a, axis=None, out=None, keepdims=False):
    """Peak to peak: `max(a) - min(a)` over `axis`.

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        out: must be None (NotImplementedError otherwise, as in JAX: arrays are immutable).
        keepdims: if True, the reduced axes stay as size-1 dimensions.

    Returns:
        An array of the reduced shape in `a`'s dtype.

    Raises:
        ValueError: for an empty reduction or an out-of-bounds axis.

    >>> import fluxion.numpy as jnp
    >>> jnp.ptp(jnp.array([[4, 9], [1, 2]]), axis=1)
    Array([5, 1], dtype=int32)
    """
    check_out(out, "ptp")
    return ew.sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """The (weighted) average of `a` over `axis`: `sum(a * w) / sum(w)`, or `mean(a)` without weights.

    Args:
        a: array-like of any shape.
        axis: None (all axes), an int or a tuple of ints; negative values count from the end.
        weights: None, an array-like of `a`'s shape, or (with `axis` given) one whose shape is `a`'s sizes
            along `axis` in the order the axes are listed; it is then laid along those axes.
        returned: if True, also return the sum of the weights (the element count without weights).
        keepdims: if True, the reduced axes stay as size-1 dimensions.

    Returns:
        The average (an inexact array of the reduced shape), or `(average, weight_sum)` if `returned`.

    Raises:
        ValueError: if `weights` has neither `a`'s shape nor `a`'s sizes along `axis`, or if the shapes
            differ and `axis` is None.

    >>> import fluxion.numpy as jnp
    >>> jnp.average(jnp.array([1.0, 2.0, 4.0]), weights=jnp.array([1.0, 1.0, 2.0]))
    Array(2.75, dtype=float32)
    >>> jnp.average(jnp.array([[1.0, 3.0]]), axis=1, returned=True)
    (Array([2.], dtype=float32), Array([2.], dtype=float32))
    """
    a = arraylike_arg(a, "average")
    if weights is None:
        avg = mean(a, axis=axis, keepdims=keepdims)
        if returned:
            aval = core.get_aval(a)
            n = int(np.prod([aval.shape[i] for i in canonicalize_axes(axis, aval.ndim)], dtype=np.int64))
            return avg, st.full(core.get_aval(avg).shape, n, core.get_aval(avg).dtype)
        return avg
    from .ufuncs import multiply, true_divide
    from .util import promote_dtypes
    a, w = promote_dtypes(a, asarray_arg(weights, "average"))
    dt, weak = dtypes.dtype_and_weak(a)
    if not dtypes.is_inexact(dt):
        a, w = (ew._convert_weak(v, dtypes.default_float_dtype(), weak) for v in (a, w))
    a_shape, w_shape = core.get_aval(a).shape, core.get_aval(w).shape
    if w_shape != a_shape:
        # As NumPy and JAX: weights of another shape are laid along `axis` (in the order the axes are given),
        # never broadcast from the trailing axes.
        if axis is None:
            raise ValueError(f"average: axis must be given when the shapes of a {a_shape} and weights {w_shape} "
                             "differ.")
        axes = canonicalize_axes(axis, len(a_shape))
        if w_shape != tuple(a_shape[i] for i in axes):
            raise ValueError(f"average: weights of shape {w_shape} must have a's sizes along axis {axis}, "
                             f"{tuple(a_shape[i] for i in axes)}.")
        order = tuple(int(i) for i in np.argsort(axes))
        if order != tuple(range(len(axes))):
            w = st.transpose(w, order)
        w = st.reshape(w, tuple(d if i in axes else 1 for i, d in enumerate(a_shape)))
        w = broadcast_to_shape(w, a_shape)
    wsum = sum(w, axis=axis, keepdims=keepdims)
    avg = true_divide(sum(multiply(a, w), axis=axis, keepdims=keepdims), wsum)
    if returned and core.get_aval(wsum).shape != core.get_aval(avg).shape:
        wsum = broadcast_to_shape(wsum, core.get_aval(avg).shape)
    return (avg, wsum) if returned else avg

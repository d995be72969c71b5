"""Reductions: `sum`, `prod`, `max`, `min`, `mean`, `var`, `std`, `any`, `all`, `argmax`, `argmin`, cumulative ops."""

from __future__ import annotations

import builtins

import numpy as np

from .. import core, dtypes
from ..core import Array
from ..lax import cumulative as cum
from ..lax import elementwise as ew
from ..lax import reductions as red
from ..lax import structural as st
from .util import arraylike_arg, asarray_arg, broadcast_to_shape, canonicalize_axes, canonicalize_axis


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
    """Sum over `axis` (bool and small ints accumulate in the default int dtype, as JAX does)."""
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
    """Product over `axis`."""
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
    """Maximum over `axis`."""
    return _minmax("max", red.reduce_max, a, axis, keepdims, initial, where, True)


def min(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):  # noqa: A001
    """Minimum over `axis`."""
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
    return _bool_reduce("any", red.reduce_or, a, axis, keepdims, where, False)


def all(a, axis=None, out=None, keepdims: bool = False, *, where=None):  # noqa: A001
    return _bool_reduce("all", red.reduce_and, a, axis, keepdims, where, True)


def _count(aval, axes, where):
    if where is None:
        n = int(np.prod([aval.shape[i] for i in axes], dtype=np.int64))
        return n
    w = asarray_arg(where)
    w = broadcast_to_shape(w, aval.shape) if core.get_aval(w).shape != aval.shape else w
    return red.reduce_sum(ew.convert_element_type(w, dtypes.default_int_dtype()), axes)


def mean(a, axis=None, dtype=None, out=None, keepdims: bool = False, *, where=None):
    """Arithmetic mean over `axis` (integer inputs average in the default float dtype)."""
    a = _strong(arraylike_arg(a, "mean"))
    aval = core.get_aval(a)
    dt = dtypes.canonicalize_dtype(dtype) if dtype is not None else dtypes.inexact_dtype_for(aval.dtype)
    axes = canonicalize_axes(axis, aval.ndim)
    total = sum(a, axis=axes, dtype=dt, keepdims=keepdims, where=where)
    n = _count(aval, axes, where)
    if isinstance(n, int):
        return ew.div(total, Array(np.asarray(n, dt), True))
    n = ew.convert_element_type(n, dt)
    return ew.div(total, _keepdims(n, aval.shape, axes, keepdims) if keepdims else n)


def var(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None, correction=None):
    """Variance over `axis` with `ddof` delta degrees of freedom (`correction` is the Array-API name)."""
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
    if isinstance(n, int):
        return ew.div(total, Array(np.asarray(n - ddof, rdt), True))
    n = ew.sub(ew.convert_element_type(n, rdt), Array(np.asarray(ddof, rdt), True))
    return ew.div(total, _keepdims(n, aval.shape, axes, keepdims) if keepdims else n)


def std(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None, correction=None):
    """Standard deviation: sqrt of `var`."""
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
    """Index of the maximum (over the flattened array if axis is None)."""
    return _arg("argmax", red.argmax, a, axis, bool(keepdims))


def argmin(a, axis=None, out=None, keepdims=None):
    """Index of the minimum (over the flattened array if axis is None)."""
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


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along `axis` (all elements, flattened, for None); integers keep their dtype, unlike `sum`;
    bool accumulates in the default int. The result is not weakly typed."""
    _no_out("cumsum", out)
    return _cumulative("cumsum", cum.cumsum, a, axis, dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along `axis` (see `cumsum` for the dtype rules)."""
    _no_out("cumprod", out)
    return _cumulative("cumprod", cum.cumprod, a, axis, dtype)


def nancumsum(a, axis=None, dtype=None, out=None):
    """`cumsum` with NaNs counted as 0 (JAX's `jnp.nancumsum`)."""
    _no_out("nancumsum", out)
    return _cumulative("nancumsum", cum.cumsum, a, axis, dtype, nan_fill=0)


def nancumprod(a, axis=None, dtype=None, out=None):
    """`cumprod` with NaNs counted as 1 (JAX's `jnp.nancumprod`)."""
    _no_out("nancumprod", out)
    return _cumulative("nancumprod", cum.cumprod, a, axis, dtype, nan_fill=1)


def _no_out(name, out):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")


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
    """The Array API's cumulative sum: like `cumsum`, but `x` must have at least one dimension, `axis` may be left
    out only for 1-d input, small integers and bool accumulate in the default integer (as `sum`), and
    `include_initial=True` prepends a 0 along `axis`. Raises ValueError for scalar input or a missing axis."""
    return _array_api_cumulative("cumulative_sum", "sum", cum.cumsum, 0, True, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """The Array API's cumulative product (as `cumulative_sum`, but integers keep their dtype, as in JAX, and
    `include_initial=True` prepends a 1)."""
    return _array_api_cumulative("cumulative_prod", "product", cum.cumprod, 1, False, x, axis, dtype,
                                 include_initial)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    from .ufuncs import isnan, where as jwhere
    a = arraylike_arg(a, "nansum")
    return sum(jwhere(isnan(a), Array(np.zeros((), core.get_aval(a).dtype), True), a), axis=axis, dtype=dtype,
               keepdims=keepdims, initial=initial, where=where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    from .ufuncs import isnan, logical_not
    a = arraylike_arg(a, "nanmean")
    valid = logical_not(isnan(a))
    return mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=valid if where is None else
                ew.bitwise_and(valid, asarray_arg(where)))


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    from .ufuncs import isnan, where as jwhere
    a = arraylike_arg(a, "nanmax")
    return max(jwhere(isnan(a), Array(np.asarray(-np.inf, core.get_aval(a).dtype), True), a), axis=axis,
               keepdims=keepdims, initial=initial, where=where)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    from .ufuncs import isnan, where as jwhere
    a = arraylike_arg(a, "nanmin")
    return min(jwhere(isnan(a), Array(np.asarray(np.inf, core.get_aval(a).dtype), True), a), axis=axis,
               keepdims=keepdims, initial=initial, where=where)


def count_nonzero(a, axis=None, keepdims=False):
    a = arraylike_arg(a, "count_nonzero")
    nz = ew.ne(a, Array(np.zeros((), core.get_aval(a).dtype), True))
    return sum(nz, axis=axis, keepdims=keepdims)


def ptp(a, axis=None, out=None, keepdims=False):
    return ew.sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    a = arraylike_arg(a, "average")
    if weights is None:
        avg = mean(a, axis=axis, keepdims=keepdims)
        if returned:
            aval = core.get_aval(a)
            n = int(np.prod([aval.shape[i] for i in canonicalize_axes(axis, aval.ndim)], dtype=np.int64))
            return avg, st.full(core.get_aval(avg).shape, n, core.get_aval(avg).dtype)
        return avg
    from .ufuncs import multiply, true_divide
    w = asarray_arg(weights)
    wsum = sum(w if core.get_aval(w).shape == core.get_aval(a).shape else broadcast_to_shape(
        w, core.get_aval(a).shape), axis=axis, keepdims=keepdims)
    avg = true_divide(sum(multiply(a, w), axis=axis, keepdims=keepdims), wsum)
    return (avg, wsum) if returned else avg

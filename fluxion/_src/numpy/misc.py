"""Comparisons of whole arrays, set operations and order statistics: `isclose`, `allclose`, `array_equal`,
`unique` (concrete inputs), `median`, `quantile`, `percentile`, `iscomplexobj`, `isscalar`."""

from __future__ import annotations

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..core import Array, Tracer
from ..lax import elementwise as ew
from ..lax import structural as st
from .util import asarray_arg, canonicalize_axis, promote_args_inexact


@staged_as_call("isclose")
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether `a` and `b` are equal within a tolerance, elementwise: `|a - b| <= atol + rtol * |b|`.

    Args:
        a, b: array-likes, broadcast and promoted to an inexact dtype.
        rtol: the relative tolerance (scaled by `|b|`, so the test is not symmetric).
        atol: the absolute tolerance.
        equal_nan: if True, two nans count as close.

    Returns:
        A bool array of the broadcast shape; infinities are close only to the same infinity.

    >>> import fluxion.numpy as jnp
    >>> jnp.isclose(jnp.array([1.0, 1.1, jnp.nan]), jnp.array([1.000001, 1.0, jnp.nan]))
    Array([ True, False, False], dtype=bool)
    >>> jnp.isclose(jnp.array([jnp.nan]), jnp.array([jnp.nan]), equal_nan=True)
    Array([ True], dtype=bool)
    """
    a, b = promote_args_inexact("isclose", a, b)
    from .ufuncs import abs as _abs, isinf, isnan, logical_and, logical_or, where
    dt = core.get_aval(a).dtype
    close = ew.le(_abs(ew.sub(a, b)), ew.add(Array(np.asarray(atol, dt), True),
                                             ew.mul(Array(np.asarray(rtol, dt), True), _abs(b))))
    both_inf = logical_and(isinf(a), isinf(b))
    close = where(logical_or(isinf(a), isinf(b)), logical_and(both_inf, ew.eq(a, b)), close)
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    return close


@staged_as_call("allclose")
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether every element of `a` is close to `b` (`isclose` reduced with `all`).

    Args:
        a, b, rtol, atol, equal_nan: as for `isclose`.

    Returns:
        A 0-d bool Array (not a Python bool, so it can be traced).

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.allclose(jnp.array([1.0, 2.0]), jnp.array([1.0, 2.000001]))
    Array(True, dtype=bool)
    """
    from .reductions import all as _all
    return _all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False) -> Array:
    """Whether `a1` and `a2` have the same shape and equal elements.

    Args:
        a1, a2: array-likes (promoted to one dtype for the comparison).
        equal_nan: if True, nans in the same positions count as equal.

    Returns:
        A 0-d bool Array; False for different shapes.

    >>> import fluxion.numpy as jnp
    >>> jnp.array_equal(jnp.array([1, 2]), jnp.array([1.0, 2.0]))
    Array(True, dtype=bool)
    >>> jnp.array_equal(jnp.array([1, 2]), jnp.array([[1, 2]]))
    Array(False, dtype=bool)
    """
    a1, a2 = asarray_arg(a1), asarray_arg(a2)
    if core.get_aval(a1).shape != core.get_aval(a2).shape:
        return Array(np.asarray(False))
    from .reductions import all as _all
    from .ufuncs import equal, isnan, logical_and, logical_or
    eq = equal(a1, a2)
    if equal_nan:
        eq = logical_or(eq, logical_and(isnan(a1), isnan(a2)))
    return _all(eq)


def array_equiv(a1, a2) -> Array:
    """Whether `a1` and `a2` are equal after broadcasting them to one shape.

    Args:
        a1, a2: array-likes.

    Returns:
        A 0-d bool Array; False if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.array_equiv(jnp.array([1, 2]), jnp.array([[1, 2], [1, 2]]))
    Array(True, dtype=bool)
    >>> jnp.array_equiv(jnp.array([1, 2]), jnp.array([1, 2, 3]))
    Array(False, dtype=bool)
    """
    from .reductions import all as _all
    from .ufuncs import equal
    try:
        return _all(equal(a1, a2))
    except ValueError:
        return Array(np.asarray(False))


def iscomplexobj(x) -> bool:
    """Whether `x` has a complex dtype (checks the dtype only, not the values).

    Args:
        x: an array-like or scalar.

    Returns:
        A Python bool.

    >>> import fluxion.numpy as jnp
    >>> jnp.iscomplexobj(jnp.array([1.0]))
    False
    >>> jnp.iscomplexobj(1 + 0j)
    True
    """
    return dtypes.is_complex(dtypes.dtype_and_weak(x)[0])


def isrealobj(x) -> bool:
    """Whether `x` does not have a complex dtype (the negation of `iscomplexobj`).

    Args:
        x: an array-like or scalar.

    Returns:
        A Python bool.

    >>> import fluxion.numpy as jnp
    >>> jnp.isrealobj(jnp.array([1 + 2j]))
    False
    """
    return not iscomplexobj(x)


def isscalar(element) -> bool:
    """Whether `element` is a scalar: a 0-d Array or tracer, or a value NumPy considers a scalar.

    Args:
        element: any object.

    Returns:
        A Python bool. As in JAX (and unlike NumPy), a 0-d array counts as a scalar.

    >>> import fluxion.numpy as jnp
    >>> jnp.isscalar(jnp.array(1.0))
    True
    >>> jnp.isscalar(jnp.array([1.0]))
    False
    >>> jnp.isscalar(2)
    True
    """
    if isinstance(element, (Array, Tracer)):
        return core.get_aval(element).ndim == 0
    return np.isscalar(element)


def _concrete(x, name):
    v = core.concrete_value(asarray_arg(x))
    if v is None:
        raise x._concretization_error("array", f"jnp.{name}") if isinstance(x, Tracer) else TypeError(name)
    return np.asarray(v)


def unique(ar, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis=None, *, equal_nan: bool = True, size=None, fill_value=None):
    """Sorted unique elements (NumPy semantics) of a concrete array.

    The number of unique values decides the output shape, so a traced input raises ConcretizationTypeError
    unless `size` is given (then, with axis=None, the traced `setops.unique_sized` computes it).
    `size` pads (with `fill_value`, default the smallest value) or truncates the unique values to a fixed length.
    """
    if size is not None and axis is None:
        from .setops import unique_sized
        r = unique_sized(ar, size=size, fill_value=fill_value, equal_nan=equal_nan)
        picked = (r.values,) + ((r.indices,) if return_index else ()) + (
            (r.inverse_indices,) if return_inverse else ()) + ((r.counts,) if return_counts else ())
        return picked[0] if len(picked) == 1 else picked
    if isinstance(ar, Tracer) and ar._concrete_value() is None:
        # ConcretizationTypeError (as JAX raises), not the array-conversion error of np.asarray(tracer).
        from .indexing import _concrete_or_error
        _concrete_or_error(ar, "jnp.unique", "Pass a static size=... (and fill_value=...) to use it under jit.")
    v = _concrete(ar, "unique")
    res = np.unique(v, return_index=return_index, return_inverse=return_inverse, return_counts=return_counts,
                    axis=axis, equal_nan=equal_nan)
    res = res if isinstance(res, tuple) else (res,)
    out = []
    for i, r in enumerate(res):
        r = np.asarray(r)
        if i == 0 and size is not None:
            n = r.shape[0]
            if n >= size:
                r = r[:size]
            else:
                fill = r[:1] if fill_value is None else np.asarray([fill_value], r.dtype)
                r = np.concatenate([r, np.repeat(fill, size - n, axis=0)])
        dt = dtypes.canonicalize_dtype(r.dtype)
        out.append(Array(r.astype(dt)))
    return out[0] if len(out) == 1 else tuple(out)


@staged_as_call("quantile")
def quantile(a, q, axis=None, out=None, overwrite_input=False, method: str = "linear", keepdims: bool = False):
    """The `q`-th quantile(s) of `a` along `axis`, from the sorted values.

    Args:
        a: array-like (integers are converted to float32).
        axis: None (the flattened array) or an int.
        out, overwrite_input: must be None and False (ValueError otherwise, as in JAX).
        q: quantile(s) in [0, 1], a scalar or array (not checked to lie in range).
        method: 'linear' (interpolate), 'lower', 'higher', 'midpoint' or 'nearest'.
        keepdims: if True, the reduced axis stays as size 1.

    Returns:
        An array of shape `q.shape + reduced shape` in `a`'s inexact dtype.

    Raises:
        ValueError: for an unknown `method` or an out-of-bounds axis.

    A nan anywhere in a slice makes its result nan (as NumPy and JAX; `nanquantile` skips nans instead).

    >>> import fluxion.numpy as jnp
    >>> x = jnp.array([1.0, 2.0, 3.0, 4.0])
    >>> jnp.quantile(x, 0.5)
    Array(2.5, dtype=float32)
    >>> jnp.quantile(x, jnp.array([0.0, 0.25]), method='lower')
    Array([1., 1.], dtype=float32)
    """
    _check_quantile_args("quantile", out, overwrite_input)
    from .sorting import sort
    a = promote_args_inexact("quantile", a)[0]
    q = asarray_arg(q)
    dt = core.get_aval(a).dtype
    q = ew.convert_element_type(q, dt)
    if axis is None:
        a = st.reshape(a, (core.get_aval(a).size,))
        axis = 0
        orig_nd = None
    else:
        orig_nd = core.get_aval(a).ndim
    axis = canonicalize_axis(axis, core.get_aval(a).ndim)
    from .shape import moveaxis
    a = moveaxis(sort(a, axis=axis), axis, -1)
    n = core.get_aval(a).shape[-1]
    pos = ew.mul(q, Array(np.asarray(n - 1, dt), True))
    lo = ew.floor(pos)
    hi = ew.ceil(pos)
    from .indexing import take
    idx_lo = ew.convert_element_type(lo, np.int32)
    idx_hi = ew.convert_element_type(hi, np.int32)
    v_lo = take(a, idx_lo, axis=-1)
    v_hi = take(a, idx_hi, axis=-1)
    qshape = core.get_aval(q).shape
    if method == "linear":
        frac = ew.sub(pos, lo)
        res = ew.add(v_lo, ew.mul(ew.sub(v_hi, v_lo), _bcast_q(frac, v_lo, qshape)))
    elif method == "lower":
        res = v_lo
    elif method == "higher":
        res = v_hi
    elif method == "midpoint":
        res = ew.mul(ew.add(v_lo, v_hi), Array(np.asarray(0.5, dt), True))
    elif method == "nearest":
        # JAX takes the lower neighbour on a tie (fraction <= 0.5); NumPy rounds the position half to even.
        low = ew.le(ew.sub(pos, lo), Array(np.asarray(0.5, dt), True))
        res = take(a, ew.convert_element_type(ew.select_n(low, hi, lo), np.int32), axis=-1)
    else:
        raise ValueError(f"quantile: unknown method {method!r}")
    # As NumPy and JAX, a nan anywhere in a slice makes all its quantiles nan. Nans sort last, so the slice's last
    # sorted value tells.
    if n:
        has_nan = ew.ne(take(a, Array(np.asarray(n - 1, np.int32)), axis=-1),
                        take(a, Array(np.asarray(n - 1, np.int32)), axis=-1))
        res_shape = core.get_aval(res).shape
        if res_shape != core.get_aval(has_nan).shape:
            has_nan = st.broadcast_in_dim(has_nan, res_shape, tuple(range(core.get_aval(has_nan).ndim)))
        res = ew.select_n(has_nan, res, st.full(res_shape, Array(np.asarray(np.nan, dt), True), dt)
                          if res_shape else Array(np.asarray(np.nan, dt), True))
    # take along the last axis puts q's dims last; NumPy puts them first.
    if qshape:
        nd = core.get_aval(res).ndim
        nq = len(qshape)
        res = st.transpose(res, tuple(range(nd - nq, nd)) + tuple(range(nd - nq)))
    if keepdims and orig_nd is not None:
        shape = list(core.get_aval(res).shape)
        shape.insert(len(qshape) + axis, 1)
        res = st.reshape(res, shape)
    return res


def _check_quantile_args(name, out, overwrite_input):
    # As JAX: there is no buffer to write into or overwrite (ValueError, where reductions raise
    # NotImplementedError for `out`).
    if out is not None:
        raise ValueError(f"{name}: the 'out' argument is not supported.")
    if overwrite_input:
        raise ValueError(f"{name}: the 'overwrite_input' argument is not supported.")


def _bcast_q(frac, like, qshape):
    target = core.get_aval(like).shape
    if core.get_aval(frac).shape == target:
        return frac
    nd = len(target)
    return st.broadcast_in_dim(frac, target, tuple(range(nd - len(qshape), nd)))


def percentile(a, q, axis=None, out=None, overwrite_input=False, method: str = "linear", keepdims: bool = False):
    """The `q`-th percentile(s) of `a` along `axis`: `quantile(a, q / 100)`.

    Args:
        a: array-like (integers are converted to float32).
        axis: None (the flattened array) or an int.
        out, overwrite_input: must be None and False (ValueError otherwise, as in JAX).
        q: percentile(s) in [0, 100], a scalar or array.
        method, keepdims: as for `quantile`.

    Returns:
        An array of shape `q.shape + reduced shape` in `a`'s inexact dtype.

    Raises:
        ValueError: as for `quantile`.

    A nan anywhere in a slice makes its result nan (as NumPy and JAX; see `nanmedian`/`nanpercentile`).

    >>> import fluxion.numpy as jnp
    >>> jnp.percentile(jnp.array([[1, 2, 3], [4, 5, 6]]), 50, axis=1)
    Array([2., 5.], dtype=float32)
    """
    _check_quantile_args("percentile", out, overwrite_input)
    # JAX divides by 100 inside a jitted function, where XLA rewrites division by a constant as multiplication by
    # its reciprocal; multiplying by 0.01 gives the same positions (and so the same "nearest" picks) as JAX.
    q = ew.mul(promote_args_inexact("percentile", q)[0], Array(np.asarray(0.01, np.float32), True))
    return quantile(a, q, axis=axis, method=method, keepdims=keepdims)


@staged_as_call("median")
def median(a, axis=None, out=None, overwrite_input=False, keepdims: bool = False):
    """The median of `a` along `axis` (`quantile(a, 0.5)`: the mean of the two middle values for even lengths).

    Args:
        a: array-like (integers are converted to float32).
        axis: None (the flattened array) or an int.
        out, overwrite_input: must be None and False (ValueError otherwise, as in JAX).
        keepdims: if True, the reduced axis stays as size 1.

    Returns:
        An array of the reduced shape in `a`'s inexact dtype.

    Raises:
        ValueError: if `axis` is out of bounds.

    A nan anywhere in a slice makes its result nan (as NumPy and JAX; see `nanmedian`/`nanpercentile`).

    >>> import fluxion.numpy as jnp
    >>> jnp.median(jnp.array([3, 1, 4, 2]))
    Array(2.5, dtype=float32)
    >>> jnp.median(jnp.array([[1.0, 5.0, 2.0]]), axis=1, keepdims=True)
    Array([[2.]], dtype=float32)
    """
    _check_quantile_args("median", out, overwrite_input)
    return quantile(a, 0.5, axis=axis, keepdims=keepdims)

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
    """|a - b| <= atol + rtol * |b| elementwise (infinities equal only to themselves)."""
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
    from .reductions import all as _all
    return _all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False) -> Array:
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
    from .reductions import all as _all
    from .ufuncs import equal
    try:
        return _all(equal(a1, a2))
    except ValueError:
        return Array(np.asarray(False))


def iscomplexobj(x) -> bool:
    return dtypes.is_complex(dtypes.dtype_and_weak(x)[0])


def isrealobj(x) -> bool:
    return not iscomplexobj(x)


def isscalar(element) -> bool:
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
    """The q-th quantile(s) along `axis` (methods: linear, lower, higher, midpoint, nearest)."""
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
        res = take(a, ew.convert_element_type(ew.round(pos, 1), np.int32), axis=-1)
    else:
        raise ValueError(f"quantile: unknown method {method!r}")
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


def _bcast_q(frac, like, qshape):
    target = core.get_aval(like).shape
    if core.get_aval(frac).shape == target:
        return frac
    nd = len(target)
    return st.broadcast_in_dim(frac, target, tuple(range(nd - len(qshape), nd)))


def percentile(a, q, axis=None, out=None, overwrite_input=False, method: str = "linear", keepdims: bool = False):
    q = ew.div(promote_args_inexact("percentile", q)[0], Array(np.asarray(100, np.float32), True))
    return quantile(a, q, axis=axis, method=method, keepdims=keepdims)


@staged_as_call("median")
def median(a, axis=None, out=None, overwrite_input=False, keepdims: bool = False):
    return quantile(a, 0.5, axis=axis, keepdims=keepdims)

"""Statistics: `cov`, `corrcoef`, and the NaN-ignoring reductions `nanprod`, `nanvar`, `nanstd`, `nanargmax`,
`nanargmin`, `nanquantile`, `nanpercentile`, `nanmedian`.

The NaN-ignoring reductions replace NaNs by the operation's identity (or count them out), so they keep static
shapes and work under jit and vmap; an all-NaN slice gives NaN (or -1 for the arg-reductions), as in JAX, which
does not raise where NumPy does.
"""

from __future__ import annotations

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..core import Array
from ..lax import elementwise as ew
from ..lax import structural as st
from .util import check_out, arraylike_arg, canonicalize_axes, promote_args_inexact


def _shape(x) -> tuple:
    return core.get_aval(x).shape


def _replace_nan(a, value):
    from .ufuncs import isnan, where
    if not dtypes.is_inexact(core.get_aval(a).dtype):
        return a
    return where(isnan(a), Array(np.asarray(value, core.get_aval(a).dtype), True), a)


# ---------------------------------------------------------------------------------------------------------------
# Covariance and correlation
# ---------------------------------------------------------------------------------------------------------------

@staged_as_call("cov")
def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof=None, fweights=None, aweights=None):
    """Covariance matrix of the variables in the rows (columns if `rowvar` is False) of `m` (and of `y`).

    `fweights` are integer repeat counts, `aweights` relative importance weights, per observation; the normalizer
    is the weighted count minus `ddof` (default 1, or 0 with `bias`), with the usual correction for `aweights`.
    A single variable gives a 0-d result. Integer inputs compute in the default float dtype.

    Raises:
      ValueError: `m` or `y` has more than 2 dimensions; a weight is not 1-d of the number of observations.
      RuntimeError: `fweights` is not an integer array.

    >>> import fluxion.numpy as jnp
    >>> jnp.cov(jnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    Array([[ 1., -1.],
           [-1.,  1.]], dtype=float32)
    """
    from .reductions import average, sum as _sum
    from .shape import atleast_2d, concatenate, squeeze
    from .linear import dot
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = arraylike_arg(m, "cov")
    if core.get_aval(m).ndim > 2:
        raise ValueError(f"m has more than 2 dimensions (shape {_shape(m)})")
    X = atleast_2d(m)
    if not rowvar and _shape(X)[0] != 1:
        X = st.transpose(X, (1, 0))
    if y is not None:
        y = arraylike_arg(y, "cov", 1)
        if core.get_aval(y).ndim > 2:
            raise ValueError(f"y has more than 2 dimensions (shape {_shape(y)})")
        y = atleast_2d(y)
        if not rowvar and _shape(y)[0] != 1:
            y = st.transpose(y, (1, 0))
        X, y = _promote_inexact_keep_shapes(X, y)
        X = concatenate([X, y], 0)
    else:
        X, = promote_args_inexact("cov", X)
    if ddof is None:
        ddof = 1 if not bias else 0
    n_obs = _shape(X)[1]
    w = None
    if fweights is not None:
        fw = arraylike_arg(fweights, "cov")
        if core.get_aval(fw).ndim > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if _shape(fw)[0] != n_obs:
            raise RuntimeError(f"incompatible numbers of samples and fweights: {n_obs} and {_shape(fw)[0]}")
        if not dtypes.is_integer(core.get_aval(fw).dtype):
            raise TypeError("fweights must be integer")
        w = fw
    if aweights is not None:
        aw = arraylike_arg(aweights, "cov")
        if core.get_aval(aw).ndim > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if _shape(aw)[0] != n_obs:
            raise RuntimeError(f"incompatible numbers of samples and aweights: {n_obs} and {_shape(aw)[0]}")
        from .ufuncs import multiply
        w = aw if w is None else multiply(w, aw)
    from .ufuncs import conj, multiply, subtract, true_divide
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        f = n_obs - ddof
    elif ddof == 0:
        f = w_sum
    elif aweights is None:
        f = subtract(w_sum, ddof)
    else:
        f = subtract(w_sum, true_divide(multiply(ddof, _sum(multiply(w, aweights))), w_sum))
    X = subtract(X, st.broadcast_in_dim(avg, _shape(X), (0,)))
    X_T = st.transpose(X if w is None else multiply(X, w), (1, 0))
    return squeeze(true_divide(dot(X, conj(X_T)), f))


def _promote_inexact_keep_shapes(*args):
    from .differences import _promote_inexact_no_broadcast
    return _promote_inexact_no_broadcast("cov", *args)


@staged_as_call("corrcoef")
def corrcoef(x, y=None, rowvar: bool = True):
    """Pearson correlation coefficients: `cov(x, y, rowvar)` normalized by the standard deviations, clipped to
    [-1, 1] (real and imaginary parts separately for complex input). A single variable gives `c / c` (1 or NaN).

    >>> import fluxion.numpy as jnp
    >>> jnp.corrcoef(jnp.array([1.0, 2.0, 3.0]), jnp.array([2.0, 4.0, 7.0]))[0, 1] > 0.99
    Array(True, dtype=bool)
    """
    from .shape import diag
    from .ufuncs import clip, real, sqrt, true_divide
    c = cov(x, y, rowvar)
    if core.get_aval(c).ndim == 0:
        return true_divide(c, c)
    dt = core.get_aval(c).dtype
    d = diag(c)
    stddev = ew.convert_element_type(sqrt(real(d)), dt)
    n = _shape(stddev)[0]
    c = true_divide(c, st.broadcast_in_dim(stddev, (n, n), (0,)))
    c = true_divide(c, st.broadcast_in_dim(stddev, (n, n), (1,)))
    if dtypes.is_complex(dt):
        return ew.complex(clip(ew.real(c), -1, 1), clip(ew.imag(c), -1, 1))
    return clip(c, -1, 1)


# ---------------------------------------------------------------------------------------------------------------
# NaN-ignoring reductions
# ---------------------------------------------------------------------------------------------------------------

@staged_as_call("nanprod")
def nanprod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None):
    """Product over `axis` treating NaNs as 1.

    >>> import fluxion.numpy as jnp
    >>> jnp.nanprod(jnp.array([2.0, jnp.nan, 3.0]))
    Array(6., dtype=float32)
    """
    check_out(out, "nanprod")
    from .reductions import prod
    a = arraylike_arg(a, "nanprod")
    return prod(_replace_nan(a, 1), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)


def _nanarg(name, fn, fill, a, axis, keepdims):
    from .reductions import all as _all
    from .ufuncs import isnan, where
    a = arraylike_arg(a, name)
    if not dtypes.is_inexact(core.get_aval(a).dtype):
        return fn(a, axis=axis, keepdims=keepdims)
    nan_mask = isnan(a)
    res = fn(_replace_nan(a, fill), axis=axis, keepdims=keepdims)
    return where(_all(nan_mask, axis=axis, keepdims=bool(keepdims)), -1, res)


@staged_as_call("_nanargmax")
def nanargmax(a, axis=None, out=None, keepdims=None):
    """Index of the maximum ignoring NaNs; -1 where a slice is all NaN (NumPy raises there).

    >>> import fluxion.numpy as jnp
    >>> jnp.nanargmax(jnp.array([[1.0, jnp.nan], [jnp.nan, jnp.nan]]), axis=1)
    Array([ 0, -1], dtype=int32)
    """
    check_out(out, "nanargmax")
    from .reductions import argmax
    return _nanarg("nanargmax", argmax, -np.inf, a, axis, keepdims)


@staged_as_call("_nanargmin")
def nanargmin(a, axis=None, out=None, keepdims=None):
    """Index of the minimum ignoring NaNs; -1 where a slice is all NaN (NumPy raises there).

    >>> import fluxion.numpy as jnp
    >>> jnp.nanargmin(jnp.array([jnp.nan, 2.0, 1.0]))
    Array(2, dtype=int32)
    """
    check_out(out, "nanargmin")
    from .reductions import argmin
    return _nanarg("nanargmin", argmin, np.inf, a, axis, keepdims)


@staged_as_call("nanvar")
def nanvar(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, where=None):
    """Variance over `axis` of the non-NaN elements, with `ddof` delta degrees of freedom; NaN where fewer than
    `ddof + 1` values remain. Complex input gives a real result.

    >>> import fluxion.numpy as jnp
    >>> jnp.nanvar(jnp.array([1.0, jnp.nan, 3.0]))
    Array(1., dtype=float32)
    """
    from .reductions import sum as _sum
    from .ufuncs import isnan, less_equal, logical_not, subtract, true_divide, where as jwhere
    check_out(out, "nanvar")
    a = arraylike_arg(a, "nanvar")
    if dtype is None:
        a, = promote_args_inexact("nanvar", a)
    else:
        dt = dtypes.canonicalize_dtype(dtype)
        if not dtypes.is_inexact(dt):
            raise ValueError(f"nanvar: dtype must be inexact, got {dt}")
        a = ew.convert_element_type(a, dt)
    from .reductions import nanmean
    mean = nanmean(a, axis=axis, keepdims=True, where=where)
    centered = jwhere(isnan(a), 0, subtract(a, mean))
    if dtypes.is_complex(core.get_aval(centered).dtype):
        sq = ew.real(ew.mul(centered, ew.conj(centered)))
    else:
        sq = ew.mul(centered, centered)
    count = _sum(logical_not(isnan(a)), axis=axis, keepdims=keepdims, where=where)
    count = subtract(count, ddof)
    total = _sum(sq, axis=axis, keepdims=keepdims, where=where)
    rdt = core.get_aval(total).dtype
    result = true_divide(total, ew.convert_element_type(count, rdt))
    return jwhere(less_equal(count, 0), Array(np.asarray(np.nan, rdt), True), result)


@staged_as_call("nanstd")
def nanstd(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, where=None):
    """Standard deviation of the non-NaN elements: `sqrt(nanvar(...))`.

    >>> import fluxion.numpy as jnp
    >>> jnp.nanstd(jnp.array([1.0, jnp.nan, 3.0]))
    Array(1., dtype=float32)
    """
    check_out(out, "nanstd")
    return ew.sqrt(nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where))


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def nanquantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False):
    """The `q`-th quantiles (q in [0, 1]) of the non-NaN elements along `axis` (an int, a tuple, or None for all).

    The result has `q`'s shape in front of the reduced shape, as in NumPy; a slice that is all NaN gives NaN.
    Methods: linear, lower, higher, midpoint, nearest (a tie takes the lower neighbour, as JAX; NumPy rounds half
    to even).

    Raises:
      ValueError: an unknown method, or `out`/`overwrite_input` given (JAX rejects them too).

    >>> import fluxion.numpy as jnp
    >>> jnp.nanquantile(jnp.array([1.0, jnp.nan, 3.0, 5.0]), 0.5)
    Array(3., dtype=float32)
    """
    return _quantile("nanquantile", a, q, axis, out, overwrite_input, method, keepdims, 1)


def nanpercentile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False):
    """`nanquantile` with `q` in percent.

    >>> import fluxion.numpy as jnp
    >>> jnp.nanpercentile(jnp.array([1.0, jnp.nan, 3.0]), jnp.array([0, 100]))
    Array([1., 3.], dtype=float32)
    """
    return _quantile("nanpercentile", a, q, axis, out, overwrite_input, method, keepdims, 100)


@staged_as_call("nanmedian")
def nanmedian(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """The median of the non-NaN elements along `axis` (NaN for an all-NaN slice).

    >>> import fluxion.numpy as jnp
    >>> jnp.nanmedian(jnp.array([[1.0, jnp.nan, 4.0], [jnp.nan, jnp.nan, jnp.nan]]), axis=1)
    Array([2.5, nan], dtype=float32)
    """
    return _quantile("nanmedian", a, 0.5, axis, out, overwrite_input, "linear", keepdims, 1)


def _quantile(name, a, q, axis, out, overwrite_input, method, keepdims, scale):
    """Quantiles ignoring NaNs: sort (NaNs go last), count the non-NaN entries `n` of each slice, then interpolate
    between the sorted entries at `q * (n - 1)`."""
    from .indexing import take_along_axis
    from .reductions import sum as _sum
    from .shape import reshape
    from .sorting import sort
    from .ufuncs import isnan, logical_not, where
    if out is not None:
        raise ValueError(f"{name}: the 'out' argument is not supported.")
    if overwrite_input:
        raise ValueError(f"{name}: the 'overwrite_input' argument is not supported.")
    if method not in _METHODS:
        raise ValueError(f"{name}: method must be one of {_METHODS}, got {method!r}")
    a, = promote_args_inexact(name, arraylike_arg(a, name))
    q = arraylike_arg(q, name, 1)
    dt = core.get_aval(a).dtype
    if dtypes.is_complex(dt):
        raise ValueError(f"{name} does not support complex input")
    q = ew.convert_element_type(q, dt)
    if scale != 1:  # times 1/scale, as XLA rewrites JAX's division by a constant (see `percentile`)
        q = ew.mul(q, Array(np.asarray(1 / scale, dt), True))
    nd = core.get_aval(a).ndim
    axes = canonicalize_axes(axis, nd)
    keep_shape = tuple(1 if i in axes else d for i, d in enumerate(_shape(a)))
    rest = [i for i in range(nd) if i not in axes]
    a = st.transpose(a, tuple(rest) + axes)
    batch = tuple(_shape(a)[:len(rest)])
    n_total = int(np.prod(_shape(a)[len(rest):], dtype=np.int64))
    a = reshape(a, batch + (n_total,))
    srt = sort(a, axis=-1)
    count = _sum(logical_not(isnan(a)), axis=-1)
    qshape = _shape(q)
    out_shape = qshape + batch
    cnt = st.broadcast_in_dim(ew.convert_element_type(count, dt), out_shape,
                              tuple(range(len(qshape), len(out_shape))))
    qb = st.broadcast_in_dim(q, out_shape, tuple(range(len(qshape))))
    last = ew.max(ew.sub(cnt, Array(np.asarray(1, dt), True)), Array(np.asarray(0, dt), True))
    pos = ew.mul(qb, last)
    lo = ew.floor(pos)
    hi = ew.ceil(pos)
    vals = st.broadcast_in_dim(srt, out_shape + (n_total,), tuple(range(len(qshape), len(out_shape) + 1)))
    idt = dtypes.default_int_dtype()

    def at(p):
        idx = ew.convert_element_type(p, idt)
        return take_along_axis(vals, st.expand_dims(idx, (len(out_shape),)), axis=-1)[..., 0]
    if method == "linear":
        v_lo, v_hi = at(lo), at(hi)
        res = ew.add(v_lo, ew.mul(ew.sub(v_hi, v_lo), ew.sub(pos, lo)))
    elif method == "lower":
        res = at(lo)
    elif method == "higher":
        res = at(hi)
    elif method == "midpoint":
        res = ew.mul(ew.add(at(lo), at(hi)), Array(np.asarray(0.5, dt), True))
    else:
        # JAX takes the lower neighbour on a tie (fraction <= 0.5); NumPy rounds the position half to even.
        res = at(ew.select_n(ew.le(ew.sub(pos, lo), Array(np.asarray(0.5, dt), True)), hi, lo))
    res = where(ew.eq(cnt, Array(np.zeros((), dt), True)), Array(np.asarray(np.nan, dt), True), res)
    if keepdims:
        res = st.reshape(res, qshape + keep_shape)
    return res

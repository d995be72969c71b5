"""Finite differences, integration and interpolation of sampled data: `diff`, `ediff1d`, `gradient`, `trapezoid`,
`unwrap`, `interp`.

All are compositions of slicing, arithmetic and (for `interp`) `searchsorted`, so they trace, batch and
differentiate like the functions they are built from.
"""

from __future__ import annotations

import operator

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..core import Array
from ..lax import elementwise as ew
from ..lax import structural as st
from .util import arraylike_arg, asarray_arg, canonicalize_axes, canonicalize_axis, promote_args_inexact, \
    promote_dtypes


def _shape(x) -> tuple:
    return core.get_aval(x).shape


def _sl(x, start, stop, axis):
    n = _shape(x)[axis]
    start = start + n if start < 0 else start
    stop = n if stop is None else (stop + n if stop < 0 else stop)
    return st.slice_in_dim(x, max(start, 0), max(stop, max(start, 0)), 1, axis)


@staged_as_call("diff")
def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The `n`-th discrete difference `a[i+1] - a[i]` along `axis` (bool arrays: `a[i+1] != a[i]`).

    `prepend`/`append` are joined to `a` along `axis` first; scalars are broadcast to one slice. The result keeps
    `a`'s dtype (after promotion with `prepend`/`append`) and has `n` fewer entries along `axis`.

    Raises:
      ValueError: `n` is negative or `a` is 0-d.

    >>> import fluxion.numpy as jnp
    >>> jnp.diff(jnp.array([1, 4, 9, 16]))
    Array([3, 5, 7], dtype=int32)
    >>> jnp.diff(jnp.array([1, 4, 9, 16]), n=2)
    Array([2, 2], dtype=int32)
    """
    arr = arraylike_arg(a, "diff")
    n = operator.index(n)
    if n == 0:
        return arr
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    if core.get_aval(arr).ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got shape {_shape(arr)}")
    nd = core.get_aval(arr).ndim
    axis = canonicalize_axis(axis, nd)
    parts = []
    for extra in (prepend, None, append):
        if extra is None:
            continue
        e = arraylike_arg(extra, "diff")
        if core.get_aval(e).ndim == 0:
            shape = list(_shape(arr))
            shape[axis] = 1
            e = st.broadcast_in_dim(e, tuple(shape), ())
        parts.append(e)
    if prepend is not None or append is not None:
        from .shape import concatenate
        pieces = ([parts[0]] if prepend is not None else []) + [arr] + ([parts[-1]] if append is not None else [])
        arr = concatenate(pieces, axis)
    is_bool = core.get_aval(arr).dtype == dtypes.bool_
    for _ in range(n):
        hi, lo = _sl(arr, 1, None, axis), _sl(arr, 0, -1, axis)
        arr = ew.ne(hi, lo) if is_bool else ew.sub(hi, lo)
    return arr


@staged_as_call("ediff1d")
def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive elements of the flattened `ary`, with optional values (cast to `ary`'s dtype)
    joined before and after.

    >>> import fluxion.numpy as jnp
    >>> jnp.ediff1d(jnp.array([1, 2, 4]), to_begin=0, to_end=jnp.array([9]))
    Array([0, 1, 2, 9], dtype=int32)
    """
    from .shape import concatenate, ravel
    arr = ravel(arraylike_arg(ary, "ediff1d"))
    result = ew.sub(_sl(arr, 1, None, 0), _sl(arr, 0, -1, 0))
    dt = core.get_aval(arr).dtype
    if to_begin is not None:
        result = concatenate([ravel(ew.convert_element_type(asarray_arg(to_begin), dt)), result])
    if to_end is not None:
        result = concatenate([result, ravel(ew.convert_element_type(asarray_arg(to_end), dt))])
    return result


@staged_as_call("gradient")
def gradient(f, *varargs, axis=None, edge_order=None):
    """Numerical gradient of sampled values: central differences inside, one-sided first differences at the ends.

    `varargs`: nothing (unit spacing), one scalar spacing for all axes, or one entry per axis (a scalar spacing or
    a 1-d array of coordinates of that axis' length; unevenly spaced coordinates use the second-order formula of
    Fornberg, "Generation of finite difference formulas on arbitrarily spaced grids", Math. Comp. 51 (1988)).
    Returns one array, or a list of arrays when several axes are differentiated.

    Raises:
      NotImplementedError: `edge_order` is given (as in JAX, only first-order edges are computed).
      ValueError: a wrong number of spacings, or an axis shorter than 2.

    >>> import fluxion.numpy as jnp
    >>> jnp.gradient(jnp.array([1.0, 4.0, 9.0, 16.0]))
    Array([3., 4., 6., 7.], dtype=float32)
    """
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    a, *spacing = _promote_inexact_no_broadcast("gradient", f, *varargs)
    nd = core.get_aval(a).ndim
    axes = canonicalize_axes(axis, nd)
    if not spacing:
        spacing = [1.0] * len(axes)
    elif len(spacing) == 1:
        spacing = spacing * len(axes)
    if len(spacing) != len(axes):
        raise ValueError("Spacing arguments must be a single scalar, or a scalar or array per differentiated axis; "
                         f"got {len(spacing)} for {len(axes)} axes")
    out = [_gradient_along_axis(a, h, ax) for ax, h in zip(axes, spacing)]
    return out[0] if len(out) == 1 else out


def _promote_inexact_no_broadcast(name, *args):
    """Common inexact dtype for all `args`, each keeping its own shape."""
    args = promote_dtypes(*[asarray_arg(x, name) for x in args])
    if not dtypes.is_inexact(core.get_aval(args[0]).dtype):
        dt = dtypes.default_float_dtype()
        args = [ew._convert_weak(x, dt, core.get_aval(x).weak_type) for x in args]
    return args


def _gradient_along_axis(a, h, axis):
    n = _shape(a)[axis]
    if n < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) "
                         f"elements are required along axis {axis}, got shape {_shape(a)}")
    dt = core.get_aval(a).dtype
    if isinstance(h, (int, float)):
        h = Array(np.asarray(h, dt), True)
    from .shape import concatenate
    if core.get_aval(h).ndim == 0:
        upper = ew.div(ew.sub(_sl(a, 1, 2, axis), _sl(a, 0, 1, axis)), h)
        lower = ew.div(ew.sub(_sl(a, -1, None, axis), _sl(a, -2, -1, axis)), h)
        mid = ew.div(ew.sub(_sl(a, 2, None, axis), _sl(a, 0, -2, axis)), ew.mul(h, Array(np.asarray(2, dt), True)))
        return concatenate([upper, mid, lower], axis)
    if core.get_aval(h).ndim != 1 or _shape(h)[0] != n:
        raise ValueError(f"gradient: the coordinates of axis {axis} must be 1-d of length {n}, got shape "
                         f"{_shape(h)}")
    dx = ew.sub(_sl(h, 1, None, 0), _sl(h, 0, -1, 0))
    def along(v):
        return st.broadcast_in_dim(v, _with_axis(_shape(a), axis, _shape(v)[0]), (axis,))
    upper = ew.div(ew.sub(_sl(a, 1, 2, axis), _sl(a, 0, 1, axis)), along(_sl(dx, 0, 1, 0)))
    lower = ew.div(ew.sub(_sl(a, -1, None, axis), _sl(a, -2, -1, axis)), along(_sl(dx, -1, None, 0)))
    if n == 2:
        return concatenate([upper, lower], axis)
    h1, h2 = along(_sl(dx, 0, -1, 0)), along(_sl(dx, 1, None, 0))
    # Second-order weights for f[i-1], f[i], f[i+1] with left step h1 and right step h2.
    denom = ew.mul(ew.mul(h1, h2), ew.add(h1, h2))
    w_lo = ew.neg(ew.div(ew.mul(h2, h2), denom))
    w_mid = ew.div(ew.mul(ew.sub(h2, h1), ew.add(h1, h2)), denom)
    w_hi = ew.div(ew.mul(h1, h1), denom)
    mid = ew.add(ew.add(ew.mul(w_lo, _sl(a, 0, -2, axis)), ew.mul(w_mid, _sl(a, 1, -1, axis))),
                 ew.mul(w_hi, _sl(a, 2, None, axis)))
    return concatenate([upper, mid, lower], axis)


def _with_axis(shape, axis, size):
    s = list(shape)
    s[axis] = size
    return tuple(s)


@staged_as_call("trapezoid")
def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """Integral of `y` along `axis` by the trapezoidal rule, with sample points `x` (1-d, or shaped like `y`) or
    the constant spacing `dx`.

    >>> import fluxion.numpy as jnp
    >>> jnp.trapezoid(jnp.array([1.0, 2.0, 3.0]))
    Array(4., dtype=float32)
    >>> jnp.trapezoid(jnp.array([1.0, 2.0, 3.0]), dx=0.5)
    Array(2., dtype=float32)
    """
    from .reductions import sum as _sum
    from .shape import moveaxis
    if x is None:
        y, = promote_args_inexact("trapezoid", y)
        dx_arr = dx
    else:
        y, x = _promote_inexact_no_broadcast("trapezoid", y, x)
        if core.get_aval(x).ndim == 1:
            dx_arr = diff(x)
        else:
            dx_arr = moveaxis(diff(x, axis=axis), axis, -1)
    y = moveaxis(y, axis, -1)
    from .ufuncs import add, multiply
    last = core.get_aval(y).ndim - 1
    pair_sums = add(_sl(y, 1, None, last), _sl(y, 0, -1, last))
    return multiply(0.5, _sum(multiply(dx_arr, pair_sums), axis=-1))


@staged_as_call("unwrap")
def unwrap(p, discont=None, axis: int = -1, period=2 * np.pi):
    """Unwraps phase angles: adds multiples of `period` so consecutive values along `axis` differ by at most
    `max(discont, period / 2)` (`discont` defaults to `period / 2`).

    Raises:
      ValueError: `p` is 0-d.

    >>> import fluxion.numpy as jnp
    >>> jnp.round(jnp.unwrap(jnp.array([0.0, 6.0, 6.5])), 4)
    Array([ 0.        , -0.2832    ,  0.21679999], dtype=float32)
    """
    from .reductions import cumsum
    from .shape import concatenate
    from .ufuncs import abs as _abs, add, greater, less, logical_and, equal, remainder, subtract, true_divide, where
    p, = promote_args_inexact("unwrap", p)
    if core.get_aval(p).ndim == 0:
        raise ValueError("unwrap requires input that is at least one dimensional")
    axis = canonicalize_axis(axis, core.get_aval(p).ndim)
    half = true_divide(period, 2)
    discont = half if discont is None else discont
    dd = diff(p, axis=axis)
    ddmod = subtract(remainder(add(dd, half), period), half)
    # A step of exactly +period/2 stays +period/2 rather than wrapping to -period/2, as in NumPy.
    ddmod = where(logical_and(equal(ddmod, -half), greater(dd, 0)), half, ddmod)
    ph_correct = where(less(_abs(dd), discont), 0, subtract(ddmod, dd))
    fixed = add(_sl(p, 1, None, axis), cumsum(ph_correct, axis=axis))
    return concatenate([_sl(p, 0, 1, axis), fixed], axis)


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolant through (`xp`, `fp`) evaluated at `x`.

    `xp` must be increasing (not checked, as in JAX); `left`/`right` (default `fp[0]`/`fp[-1]`) are used outside;
    with `period`, the coordinates are taken modulo the period and `left`/`right` are not allowed.

    Raises:
      ValueError: `xp`/`fp` are not 1-d of one length, or `period` is combined with `left`/`right`, or is zero.

    >>> import fluxion.numpy as jnp
    >>> jnp.interp(jnp.array([0.5, 2.0, 5.0]), jnp.array([0.0, 1.0, 3.0]), jnp.array([0.0, 10.0, 30.0]))
    Array([ 5., 20., 30.], dtype=float32)
    """
    from .sorting import argsort, searchsorted
    from .shape import concatenate
    from .ufuncs import abs as _abs, clip, remainder, where
    x, xp, fp = (arraylike_arg(v, "interp", i) for i, v in enumerate((x, xp, fp)))
    if core.get_aval(xp).ndim != 1 or core.get_aval(fp).ndim != 1:
        raise ValueError(f"xp and fp must be one-dimensional arrays, got shapes {_shape(xp)} and {_shape(fp)}")
    if _shape(xp)[0] != _shape(fp)[0]:
        raise ValueError(f"xp and fp must have the same length, got {_shape(xp)[0]} and {_shape(fp)[0]}")
    if _shape(xp)[0] == 0:
        raise ValueError("interp: xp and fp must not be empty")
    if dtypes.is_complex(core.get_aval(fp).dtype):
        fp, = promote_args_inexact("interp", fp)
        x, xp = _promote_inexact_no_broadcast("interp", x, xp)
    else:
        x, xp, fp = _promote_inexact_no_broadcast("interp", x, xp, fp)
    if period is not None:
        if left is not None or right is not None:
            raise ValueError("interp: period cannot be combined with left or right")
        per = _abs(asarray_arg(period))
        x = remainder(x, per)
        xp = remainder(xp, per)
        order = argsort(xp)
        xp, fp = xp[order], fp[order]
        xp = concatenate([ew.sub(xp[-1:], per), xp, ew.add(xp[:1], per)])
        fp = concatenate([fp[-1:], fp, fp[:1]])
    n = _shape(xp)[0]
    if n == 1:
        i = st.full(_shape(x), 1, dtypes.default_int_dtype())
        xp = concatenate([xp, xp])
        fp = concatenate([fp, fp])
        n = 2
    else:
        i = clip(searchsorted(xp, x, side="right"), 1, n - 1)
    from .indexing import take
    im1 = ew.sub(i, Array(np.asarray(1, core.get_aval(i).dtype), True))
    xp_lo, xp_hi, fp_lo, fp_hi = take(xp, im1), take(xp, i), take(fp, im1), take(fp, i)
    dx = ew.sub(xp_hi, xp_lo)
    df = ew.sub(fp_hi, fp_lo)
    delta = ew.sub(x, xp_lo)
    eps = Array(np.asarray(10 * dtypes.finfo(core.get_aval(dx).dtype).eps, core.get_aval(dx).dtype), True)
    dx0 = ew.le(_abs(dx), eps)
    safe_dx = where(dx0, 1, dx)
    slope = ew.div(delta, safe_dx)
    if dtypes.is_complex(core.get_aval(df).dtype):
        slope = ew.convert_element_type(slope, core.get_aval(df).dtype)
    f = where(dx0, fp_lo, ew.add(fp_lo, ew.mul(slope, df)))
    if period is None:
        lo_val = fp[0] if left is None else left
        hi_val = fp[-1] if right is None else right
        f = where(ew.lt(x, xp[0]), lo_val, f)
        f = where(ew.gt(x, xp[-1]), hi_val, f)
    return f


"""The `fluxion.numpy` functions that are `ufunc` objects in JAX (`jnp.add`, `jnp.maximum`, `jnp.negative`, ...).

Each wraps the plain function of `ufuncs.py` (calling it is calling that function) and adds NumPy's ufunc methods:
`reduce`, `accumulate`, `outer`, `at` and `reduceat`. Where a dedicated operation computes a method in one step,
the object uses it (`add.reduce` is `sum`, `add.accumulate` is `cumsum`, `add.at` a scatter-add, the bitwise and
logical reductions the `lax` reductions); the other methods fold the function with `lax.scan`/`fori_loop` (see
`ufunc.py`). Identities, `nin`, `nout` and `nargs` are JAX's.
"""

from __future__ import annotations

import numpy as np

from .. import core, dtypes
from ..lax import elementwise as ew
from ..lax import reductions as lred
from . import reductions as red
from . import ufuncs as uf
from .ufunc import ufunc
from .util import canonicalize_axes


def _sum(a, axis, dtype, keepdims, initial, where):
    return red.sum(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)


def _prod(a, axis, dtype, keepdims, initial, where):
    return red.prod(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)


def _extreme(fn):
    def reduce(a, axis, dtype, keepdims, initial, where):
        if dtype is not None:
            a = ew.convert_element_type(a, dtype)
        return fn(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
    return reduce


def _lax_fold(prim_fn, combine, identity, as_bool=False):
    """A reduction through the `lax` reduction `prim_fn` (and/or/xor): masked-out elements become `identity`, and
    `initial` is combined with the result by the ufunc's own function `combine`."""
    def reduce(a, axis, dtype, keepdims, initial, where):
        if as_bool:
            a = uf.not_equal(a, 0) if core.get_aval(a).dtype != np.bool_ else a
        elif dtype is not None:
            a = ew.convert_element_type(a, dtype)
        aval = core.get_aval(a)
        if where is not None:
            a = uf.where(where, a, np.asarray(identity).astype(aval.dtype))
        axes = canonicalize_axes(axis, aval.ndim)
        out = prim_fn(a, axes)
        if initial is not None:
            out = ew.convert_element_type(combine(out, initial), aval.dtype)
        if keepdims:
            from .shape import expand_dims
            out = expand_dims(out, axes)
        return ew._convert_weak(out, core.get_aval(out).dtype, False)
    return reduce


def _accumulating(fn):
    def accumulate(a, axis, dtype):
        return fn(a, axis=axis, dtype=dtype)
    return accumulate


def _scatter_at(method, bool_fn):
    """`ufunc.at` as one scatter (`a.at[indices].add(b)` etc.), which applies repeated indices once each. Bool
    arrays, where the scatter would compute in integers, take the generic loop of `bool_fn` instead."""
    def at(a, indices, b):
        from .util import asarray_arg
        a, b = asarray_arg(a, f"{method}.at"), asarray_arg(b, f"{method}.at")
        if dtypes.dtype_and_weak(a)[0] == np.bool_ or dtypes.dtype_and_weak(b)[0] == np.bool_:
            return bool_fn()._at_via_loop(a, indices, b)
        return getattr(a.at[indices], method)(b)
    return at


def _binary(func, identity, **methods):
    return ufunc(func, 2, 1, name=func.__name__, identity=identity, call=func, **methods)


add = _binary(uf.add, 0, reduce=_sum, accumulate=_accumulating(red.cumsum), at=_scatter_at("add", lambda: add))
multiply = _binary(uf.multiply, 1, reduce=_prod, accumulate=_accumulating(red.cumprod),
                   at=_scatter_at("multiply", lambda: multiply))
subtract = _binary(uf.subtract, None, at=_scatter_at("subtract", lambda: subtract))
maximum = _binary(uf.maximum, None, reduce=_extreme(red.max))
minimum = _binary(uf.minimum, None, reduce=_extreme(red.min))
bitwise_and = _binary(uf.bitwise_and, -1, reduce=_lax_fold(lred.reduce_and, uf.bitwise_and, -1))
bitwise_or = _binary(uf.bitwise_or, 0, reduce=_lax_fold(lred.reduce_or, uf.bitwise_or, 0))
bitwise_xor = _binary(uf.bitwise_xor, 0, reduce=_lax_fold(lred.reduce_xor, uf.bitwise_xor, 0))
logical_and = _binary(uf.logical_and, True, reduce=_lax_fold(lred.reduce_and, uf.logical_and, True, True))
logical_or = _binary(uf.logical_or, False, reduce=_lax_fold(lred.reduce_or, uf.logical_or, False, True))
logical_xor = _binary(uf.logical_xor, False, reduce=_lax_fold(lred.reduce_xor, uf.logical_xor, False, True))
logaddexp = _binary(uf.logaddexp, -np.inf)
logaddexp2 = _binary(uf.logaddexp2, -np.inf)
negative = ufunc(uf.negative, 1, 1, name="negative", call=uf.negative)

"""NumPy implementations of reductions, arg-reductions, dot_general and the cumulative reductions."""

from __future__ import annotations

import numpy as np

from ...lax import cumulative as cum
from ...lax import reductions as red
from . import minmax, register_impl


def reduce_sum(x, *, axes):
    x = np.asarray(x)
    if axes and all(x.shape[a] == 1 for a in axes):
        # One element per sum: XLA reshapes (a sum of one -0.0 is -0.0; NumPy adds it to +0.0).
        return x.reshape([n for k, n in enumerate(x.shape) if k not in axes]).copy()
    return np.sum(x, axis=axes, dtype=x.dtype)


register_impl(red.reduce_sum_p, reduce_sum)


def reduce_prod(x, *, axes):
    x = np.asarray(x)
    return np.prod(x, axis=axes, dtype=x.dtype)


register_impl(red.reduce_prod_p, reduce_prod)


def reduce_max(x, *, axes):
    x = np.asarray(x)
    if x.size == 0:
        return _empty_identity(x, axes, True)
    return minmax.reduce_max(x, axes)


register_impl(red.reduce_max_p, reduce_max)


def reduce_min(x, *, axes):
    x = np.asarray(x)
    if x.size == 0:
        return _empty_identity(x, axes, False)
    return minmax.reduce_min(x, axes)


register_impl(red.reduce_min_p, reduce_min)


def _empty_identity(x, axes, is_max):
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    if x.dtype.kind == "f" or x.dtype.name == "bfloat16":
        v = -np.inf if is_max else np.inf
    elif x.dtype == np.bool_:
        v = not is_max
    else:
        info = np.iinfo(x.dtype)
        v = info.min if is_max else info.max
    return np.full(shape, v, x.dtype)


def reduce_and(x, *, axes):
    return np.all(x, axis=axes) if np.result_type(x) == np.bool_ else np.bitwise_and.reduce(x, axis=axes)


register_impl(red.reduce_and_p, reduce_and)


def reduce_or(x, *, axes):
    return np.any(x, axis=axes) if np.result_type(x) == np.bool_ else np.bitwise_or.reduce(x, axis=axes)


register_impl(red.reduce_or_p, reduce_or)


def reduce_xor(x, *, axes):
    return np.bitwise_xor.reduce(np.asarray(x), axis=axes)


register_impl(red.reduce_xor_p, reduce_xor)


def argmax(x, *, axes, index_dtype):
    return np.argmax(x, axis=axes[0]).astype(index_dtype)


register_impl(red.argmax_p, argmax)


def argmin(x, *, axes, index_dtype):
    return np.argmin(x, axis=axes[0]).astype(index_dtype)


register_impl(red.argmin_p, argmin)


def dot_general(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    (lc, rc), (lb, rb) = dimension_numbers
    out_dtype = preferred_element_type if preferred_element_type is not None else lhs.dtype
    if lhs.dtype == np.bool_:
        lhs, rhs = lhs.astype(np.int32), rhs.astype(np.int32)
    elif (preferred_element_type is not None and np.dtype(out_dtype).kind in "iu"
          and np.dtype(out_dtype).itemsize > lhs.dtype.itemsize):
        # Accumulate in the (wider) requested integer type so products do not overflow.
        lhs, rhs = lhs.astype(out_dtype), rhs.astype(out_dtype)
    elif lhs.dtype.itemsize < 4 and lhs.dtype.kind == "f" or lhs.dtype.name == "bfloat16":
        # Accumulate half-precision products in float32, as XLA's CPU backend does.
        lhs, rhs = lhs.astype(np.float32), rhs.astype(np.float32)
    if not lb:
        # tensordot reshapes to 2-D and calls np.dot, which hands transposed layouts to BLAS without copies.
        res = np.tensordot(lhs, rhs, axes=(tuple(lc), tuple(rc)))
    else:
        l_free = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
        r_free = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
        batch_shape = [lhs.shape[i] for i in lb]
        m = int(np.prod([lhs.shape[i] for i in l_free], dtype=np.int64))
        n = int(np.prod([rhs.shape[i] for i in r_free], dtype=np.int64))
        k = int(np.prod([lhs.shape[i] for i in lc], dtype=np.int64))
        b = int(np.prod(batch_shape, dtype=np.int64))
        a = np.ascontiguousarray(np.transpose(lhs, list(lb) + l_free + list(lc))).reshape(b, m, k)
        c = np.ascontiguousarray(np.transpose(rhs, list(rb) + list(rc) + r_free)).reshape(b, k, n)
        res = np.matmul(a, c).reshape(batch_shape + [lhs.shape[i] for i in l_free] + [rhs.shape[i] for i in r_free])
    if out_dtype == np.bool_:
        return np.asarray(res) > 0
    return np.asarray(res).astype(out_dtype, copy=False)


register_impl(red.dot_general_p, dot_general)


def _cum(fn):
    def impl(x, *, axis, reverse=False):
        x = np.asarray(x)
        if reverse:
            x = np.flip(x, axis)
        out = fn(x, axis)
        if reverse:
            out = np.flip(out, axis)
        return np.ascontiguousarray(out).astype(x.dtype, copy=False)
    return impl


cumsum = _cum(lambda x, a: np.cumsum(x, axis=a, dtype=x.dtype))
register_impl(cum.cumsum_p, cumsum)
cumprod = _cum(lambda x, a: np.cumprod(x, axis=a, dtype=x.dtype))
register_impl(cum.cumprod_p, cumprod)
cummax = _cum(minmax.cumulative_max)  # XLA's signed zeros: a running maximum of -0 and +0 is +0
register_impl(cum.cummax_p, cummax)
cummin = _cum(minmax.cumulative_min)
register_impl(cum.cummin_p, cummin)
cumlogsumexp = _cum(lambda x, a: np.logaddexp.accumulate(x, axis=a))
register_impl(cum.cumlogsumexp_p, cumlogsumexp)

"""Maximum and minimum with XLA's signed zeros, for the NumPy paths (eager primitives and generated code).

XLA's `max`/`min` (IEEE 754-2019 `maximum`/`minimum`) propagate NaN and order -0 below +0: `max(-0., +0.)` is +0
and `min(+0., -0.)` is -0 in either operand order, and a max/min reduction follows the same rule. NumPy's
`maximum`/`minimum` propagate NaN but return one of two equal operands -- which one depends on the order and on
the SIMD path -- so a -0/+0 tie can come out with the wrong sign. The fused (Numba) tier calls LLVM's
`llvm.maximum`/`llvm.minimum`, which already follow XLA (see `compiler.fusion.mathlib`).

Each function here runs NumPy's ufunc and then repairs signs when the result holds a zero (the common case, no zero,
costs one comparison and one `any` more than the ufunc).
"""

from __future__ import annotations

import numpy as np


def floating(dt: np.dtype) -> bool:
    """Whether `dt` is a real floating-point dtype (bfloat16 included): the dtypes with signed zeros."""
    return dt.kind == "f" or dt.name == "bfloat16"


_INT_OF_SIZE = {2: np.int16, 4: np.int32, 8: np.int64}


def _fix_signs(r, x, y, combine):
    """Gives `r` (max or min of x and y) the sign bit `combine(sign(x), sign(y))` when it holds a zero.

    For operands that are not NaN, the sign of max(x, y) is the AND of their signs (it is negative only if both
    are; a zero maximum is -0 only if neither operand is +0) and the sign of min(x, y) is their OR. Setting every
    sign that way is branch-free (a masked repair of only the zeros is several times slower when zeros are
    frequent, as after a relu); it only runs when the result has a zero, the only case NumPy can get wrong.
    The sign of a NaN result may change (XLA leaves it unspecified too).
    """
    if not floating(r.dtype):
        return r
    is_max = combine is np.bitwise_and
    for a, b in ((x, y), (y, x)):
        if np.ndim(b) == 0 and np.ndim(a) != 0:  # a scalar bound: relu's max(x, 0.), a clip
            repair = scalar_bound_repair(is_max, b, r.dtype)
            if repair is not _GENERAL:
                return r if repair is None else repair(r)
    if not np.equal(r, 0).any():
        return r
    r = _writeable(r)
    it = _INT_OF_SIZE[r.dtype.itemsize]
    sign = it(np.iinfo(it).min)  # only the sign bit set
    signs = combine(np.asarray(x, r.dtype).view(it), np.asarray(y, r.dtype).view(it)) & sign
    bits = r.view(it)
    bits &= ~sign
    bits |= signs
    return r


def _writeable(r):
    return r if isinstance(r, np.ndarray) and r.ndim and r.flags.writeable else np.array(r, copy=True)


def positive_zeros(r):
    """`r` with -0 turned into +0 and every other value kept (in place when `r` is a writeable array)."""
    r = _writeable(r)
    np.add(r, r.dtype.type(0.0), out=r)  # -0 + 0 is +0 (round to nearest); x + 0 is x otherwise, NaN stays NaN
    return r


def negative_zeros(r):
    """`r` with +0 turned into -0 and every other value kept (in place when `r` is a writeable array)."""
    r = _writeable(r)
    np.negative(r, out=r)
    np.add(r, r.dtype.type(0.0), out=r)
    np.negative(r, out=r)
    return r


_GENERAL = object()


def scalar_bound_repair(is_max: bool, bound, dtype):
    """How to repair max/min(x, bound) for a scalar `bound`: None (nothing to repair: with a nonzero bound a zero
    result is x itself, never a tie), `positive_zeros` (max with +0, as in relu: never -0), `negative_zeros` (min
    with -0: never +0), or `_GENERAL` (min with +0 or max with -0: the tie's sign depends on x)."""
    b = np.asarray(bound, dtype)
    if b != 0:
        return None
    if is_max != bool(np.signbit(b)):
        return positive_zeros if is_max else negative_zeros
    return _GENERAL


def repair_for(is_max: bool, scalar_bound=None, dtype=None):
    """The function repairing a NumPy max/min result, for generated code: `f(r)` when one operand is the scalar
    `scalar_bound` (None if nothing needs repair), else `fix_maximum`/`fix_minimum` (`f(r, x, y)`). Returns
    (function or None, whether it takes the operands)."""
    if scalar_bound is not None:
        repair = scalar_bound_repair(is_max, scalar_bound, dtype)
        if repair is not _GENERAL:
            return repair, False
    return (fix_maximum if is_max else fix_minimum), True


def fix_maximum(r, x, y):
    """Repairs `r = np.maximum(x, y)` (in place when `r` is a writeable array) so -0/+0 ties give +0."""
    return _fix_signs(r, x, y, np.bitwise_and)


def fix_minimum(r, x, y):
    """Repairs `r = np.minimum(x, y)` (in place when `r` is a writeable array) so -0/+0 ties give -0."""
    return _fix_signs(r, x, y, np.bitwise_or)


def maximum(x, y):
    """Elementwise maximum as XLA computes it (NaN if either is NaN, +0 > -0)."""
    return fix_maximum(np.maximum(x, y), x, y)


def minimum(x, y):
    """Elementwise minimum as XLA computes it (NaN if either is NaN, -0 < +0)."""
    return fix_minimum(np.minimum(x, y), x, y)


def clamp(lo, x, hi):
    """`lax.clamp`: min(max(x, lo), hi) with XLA's signed zeros."""
    return minimum(maximum(x, lo), hi)


def _fix_reduction(r, x, axis, is_max: bool):
    if not floating(x.dtype):
        return r
    r = np.asarray(r)
    zero = r == 0
    if not zero.any():
        return r
    # A zero maximum is +0 if any element reduced into it is +0; a zero minimum is -0 if any is -0.
    if is_max:
        signed_zero = np.any((x == 0) & ~np.signbit(x), axis=axis)
        neg = ~signed_zero
    else:
        neg = np.any((x == 0) & np.signbit(x), axis=axis)
    return np.where(zero, np.where(np.reshape(neg, r.shape), r.dtype.type(-0.0), r.dtype.type(0.0)), r)


def reduce_max(x, axis):
    """`np.max(x, axis)` (non-empty) with XLA's signed zeros."""
    return _fix_reduction(np.max(x, axis=axis), x, axis, True)


def reduce_min(x, axis):
    """`np.min(x, axis)` (non-empty) with XLA's signed zeros."""
    return _fix_reduction(np.min(x, axis=axis), x, axis, False)


def _scatter(ufunc, is_max: bool):
    def combine(out, idx, upd):
        """`ufunc.at(out, idx, upd)` (in place) with XLA's signed zeros where the result is a zero."""
        if not floating(out.dtype):
            with np.errstate(all="ignore"):
                ufunc.at(out, idx, upd)
            return
        # Which positions hold (or receive) the zero that wins a tie: +0 for max, -0 for min.
        winner = (out == 0) & (np.signbit(out) != is_max)
        with np.errstate(all="ignore"):
            ufunc.at(out, idx, upd)
        zero = out == 0
        if not zero.any():
            return
        upd = np.asarray(upd)
        np.logical_or.at(winner, idx, (upd == 0) & (np.signbit(upd) != is_max))
        wins = winner if is_max else ~winner  # where the zero is +0
        np.copyto(out, np.where(wins, out.dtype.type(0.0), out.dtype.type(-0.0)), where=zero)
    return combine


scatter_maximum = _scatter(np.maximum, True)
scatter_minimum = _scatter(np.minimum, False)


def _accumulate(ufunc, combine):
    def fn(x, axis):
        """`ufunc.accumulate(x, axis)` with XLA's signed zeros: the sign of a running maximum is the running AND of
        the operands' sign bits (the running OR for a minimum), as for `_fix_signs`; set only when a zero occurs."""
        r = ufunc.accumulate(x, axis=axis)
        if not floating(r.dtype) or not np.equal(r, 0).any():
            return r
        it = _INT_OF_SIZE[r.dtype.itemsize]
        sign = it(np.iinfo(it).min)
        signs = combine.accumulate(np.ascontiguousarray(x).view(it), axis=axis) & sign
        bits = r.view(it)
        bits &= ~sign
        bits |= signs
        return r
    return fn


cumulative_max = _accumulate(np.maximum, np.bitwise_and)
cumulative_min = _accumulate(np.minimum, np.bitwise_or)


def maximum_into(x, y, out):
    """`maximum(x, y)` written into `out` (which may be `x`: the operands are read before it is written)."""
    np.copyto(out, maximum(x, y))
    return out


def minimum_into(x, y, out):
    """`minimum(x, y)` written into `out` (which may be `x`)."""
    np.copyto(out, minimum(x, y))
    return out

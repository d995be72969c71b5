"""NumPy implementations of the bit-level primitives: `reduce_precision`, `mulhi`, `optimization_barrier`."""

from __future__ import annotations

import numpy as np

from ...lax import barrier, integer, precision
from . import register_impl

_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _reduce_precision(x, *, exponent_bits, mantissa_bits):
    x = np.asarray(x)
    dt = x.dtype
    finfo = np.finfo(dt)
    src_m, src_e = int(finfo.nmant), int(finfo.iexp)
    nbits = 8 * dt.itemsize
    ut = _UINT[dt.itemsize]
    one = ut(1)
    bits = np.ascontiguousarray(x).view(ut).copy()
    if mantissa_bits < src_m:
        # Round the mantissa to nearest, ties to even: add half an ulp of the narrow format minus one, plus the
        # lowest kept bit, then truncate.
        shift = src_m - mantissa_bits
        last_kept = ut(one << ut(shift))
        bias = ut((last_kept >> one) - one)
        lowest = (bits & last_kept) >> ut(shift)
        bits = (bits + lowest + bias) & ~ut(last_kept - one)
    if exponent_bits < src_e:
        sign = ut(one << ut(nbits - 1))
        exp_mask = ut(((1 << src_e) - 1) << src_m)
        bias = (1 << (src_e - 1)) - 1
        narrow_bias = (1 << (exponent_bits - 1)) - 1
        exponent = bits & exp_mask
        overflow = exponent > ut((bias + narrow_bias) << src_m)
        underflow = exponent <= ut((bias - narrow_bias) << src_m)
        signed_zero = bits & sign
        bits = np.where(overflow, signed_zero | exp_mask, np.where(underflow, signed_zero, bits))
    out = bits.astype(ut).view(dt).reshape(x.shape)
    return np.where(np.isnan(x), x, out).astype(dt)  # NaN stays NaN, even with no mantissa bits left


def _mulhi(x, y):
    x, y = np.asarray(x), np.asarray(y)
    dt = np.result_type(x, y)
    n = 8 * dt.itemsize
    if n <= 32:
        wide = np.int64 if dt.kind == "i" else np.uint64
        prod = x.astype(wide) * y.astype(wide)
        return (prod >> n).astype(dt)
    # 64-bit operands: the exact product through Python integers (object arrays), then the high word.
    xs, ys = np.broadcast_arrays(x, y)
    hi = [(int(a) * int(b)) >> 64 for a, b in zip(xs.ravel(), ys.ravel())]
    if dt.kind == "u":
        return np.array(hi, dtype=np.uint64).reshape(xs.shape)
    return np.array([h & (2**64 - 1) for h in hi], dtype=np.uint64).view(np.int64).reshape(xs.shape)


def _optimization_barrier(*xs):
    return list(xs)


register_impl(precision.reduce_precision_p, _reduce_precision)
register_impl(integer.mulhi_p, _mulhi)
register_impl(barrier.optimization_barrier_p, _optimization_barrier)

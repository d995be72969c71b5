"""Plain-NumPy reference implementations of the `fluxion.lax` primitives, used only by the tests.

Each function takes and returns NumPy arrays and follows the XLA/`jax.lax` semantics the primitive documents,
written independently of fluxion's backend so the tests compare two implementations:

* no dtype promotion: results keep the operand dtype (comparisons give bool, `abs`/`real`/`imag` of complex give the
  real dtype);
* integer `div` truncates toward zero and `rem` takes the sign of the dividend (C semantics);
* shifts by an amount outside [0, bits) give 0 (`shift_left`, `shift_right_logical`) or the sign fill
  (`shift_right_arithmetic`);
* `round` with rounding_method 0 rounds half away from zero, 1 to nearest even;
* float -> integer conversion truncates, saturates at the integer range and maps NaN to 0;
* `dynamic_slice`/`dynamic_update_slice` clamp start indices so the window stays inside the operand;
* `pad` accepts negative low/high padding (cropping) and interior padding.

Floating-point math is evaluated in float64 (complex128) and rounded once to the operand dtype, so the reference is
at least as accurate as any float32 implementation. Semantics are taken from the XLA operation semantics page
(https://openxla.org/xla/operation_semantics) and the `jax.lax` documentation.
"""

from __future__ import annotations

import builtins
from typing import Sequence

import ml_dtypes
import numpy as np
import scipy.special as sp

_bf16 = np.dtype(ml_dtypes.bfloat16)


def _wide(x: np.ndarray) -> np.ndarray:
    """float64/complex128 copy of a floating or complex array (other dtypes unchanged)."""
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    if x.dtype.kind == "f" or x.dtype == _bf16:
        return x.astype(np.float64)
    return x


def _float_unary(fn):
    def op(x):
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            return np.asarray(fn(_wide(x))).astype(x.dtype)
    op.__name__ = getattr(fn, "__name__", "op")
    return op


def _real_dtype(dt: np.dtype) -> np.dtype:
    if dt == np.complex128:
        return np.dtype(np.float64)
    if dt == np.complex64:
        return np.dtype(np.float32)
    return dt


# --------------------------------------------------------------------------------------------------------------
# Elementwise: unary
# --------------------------------------------------------------------------------------------------------------

def neg(x):
    x = np.asarray(x)
    with np.errstate(over="ignore"):
        return np.negative(x).astype(x.dtype)  # integer negation wraps (-INT_MIN == INT_MIN)


def sign(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        w = _wide(x)
        mag = np.abs(w)
        return np.where(mag == 0, 0, w / np.where(mag == 0, 1, mag)).astype(x.dtype)
    if x.dtype.kind == "u":
        return (x != 0).astype(x.dtype)
    return np.sign(_wide(x)).astype(x.dtype)


floor = _float_unary(np.floor)
ceil = _float_unary(np.ceil)


def round(x, rounding_method: int = 0):  # noqa: A001
    x = np.asarray(x)
    w = _wide(x)
    if int(rounding_method) == 0:
        out = np.sign(w) * np.floor(np.abs(w) + 0.5)  # exact in float64 for every float32/16 input
    else:
        out = np.rint(w)
    return out.astype(x.dtype)


def is_finite(x):
    return np.isfinite(_wide(x))


exp = _float_unary(np.exp)
exp2 = _float_unary(np.exp2)
log = _float_unary(np.log)
log1p = _float_unary(np.log1p)
expm1 = _float_unary(np.expm1)
tanh = _float_unary(np.tanh)
logistic = _float_unary(lambda w: 1.0 / (1.0 + np.exp(-w)))
sin = _float_unary(np.sin)
cos = _float_unary(np.cos)
tan = _float_unary(np.tan)
asin = _float_unary(np.arcsin)
acos = _float_unary(np.arccos)
atan = _float_unary(np.arctan)
sinh = _float_unary(np.sinh)
cosh = _float_unary(np.cosh)
asinh = _float_unary(np.arcsinh)
acosh = _float_unary(np.arccosh)
atanh = _float_unary(np.arctanh)
sqrt = _float_unary(np.sqrt)
rsqrt = _float_unary(lambda w: 1.0 / np.sqrt(w))
cbrt = _float_unary(np.cbrt)
erf = _float_unary(sp.erf)
erfc = _float_unary(sp.erfc)
erf_inv = _float_unary(sp.erfinv)
lgamma = _float_unary(sp.gammaln)
digamma = _float_unary(sp.digamma)
conj = _float_unary(np.conj)


def square(x):
    x = np.asarray(x)
    with np.errstate(over="ignore"):
        if x.dtype.kind in "iu":
            return (x * x).astype(x.dtype)
        return np.square(_wide(x)).astype(x.dtype)


def abs(x):  # noqa: A001
    x = np.asarray(x)
    with np.errstate(over="ignore"):
        return np.abs(_wide(x)).astype(_real_dtype(x.dtype))


def real(x):
    x = np.asarray(x)
    return np.real(x).astype(_real_dtype(x.dtype))


def imag(x):
    x = np.asarray(x)
    return np.imag(x).astype(_real_dtype(x.dtype))


def bitwise_not(x):
    x = np.asarray(x)
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _unsigned_view(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def population_count(x):
    x = np.asarray(x)
    u = _unsigned_view(x).astype(np.uint64)
    count = np.zeros(x.shape, np.uint64)
    for b in range(8 * x.dtype.itemsize):
        count += (u >> np.uint64(b)) & np.uint64(1)
    return count.astype(x.dtype)


def clz(x):
    x = np.asarray(x)
    bits = 8 * x.dtype.itemsize
    u = _unsigned_view(x).astype(np.uint64)
    out = np.full(x.shape, bits, np.int64)
    for b in range(bits):  # the highest set bit decides; scanning upward keeps the last (highest) one
        out = np.where((u >> np.uint64(b)) & np.uint64(1), bits - 1 - b, out)
    return out.astype(x.dtype)


# --------------------------------------------------------------------------------------------------------------
# Elementwise: binary
# --------------------------------------------------------------------------------------------------------------

def _int_or_float(int_fn, float_fn):
    def op(x, y):
        x, y = np.asarray(x), np.asarray(y)
        dt = x.dtype
        with np.errstate(all="ignore"):
            if dt.kind in "iub":
                return np.asarray(int_fn(x, y)).astype(dt)
            return np.asarray(float_fn(_wide(x), _wide(y))).astype(dt)
    return op


add = _int_or_float(lambda x, y: x + y, np.add)
sub = _int_or_float(lambda x, y: x - y, np.subtract)
mul = _int_or_float(lambda x, y: x * y, np.multiply)


def _trunc_div(x, y):
    # x - fmod(x, y) is an exact multiple of y, so the floor division below is exact and truncates toward zero.
    return (x - np.fmod(x, y)) // y


div = _int_or_float(_trunc_div, np.true_divide)
rem = _int_or_float(np.fmod, np.fmod)


def max(x, y):  # noqa: A001
    x, y = np.asarray(x), np.asarray(y)
    return np.maximum(_wide(x), _wide(y)).astype(x.dtype)


def min(x, y):  # noqa: A001
    x, y = np.asarray(x), np.asarray(y)
    return np.minimum(_wide(x), _wide(y)).astype(x.dtype)


def atan2(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.arctan2(_wide(x), _wide(y)).astype(x.dtype)


def nextafter(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.nextafter(x, y).astype(x.dtype)


def _bool_or_bitwise(bool_fn, int_fn):
    def op(x, y):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype == np.bool_:
            return bool_fn(x, y)
        return int_fn(x, y).astype(x.dtype)
    return op


bitwise_and = _bool_or_bitwise(np.logical_and, np.bitwise_and)
bitwise_or = _bool_or_bitwise(np.logical_or, np.bitwise_or)
bitwise_xor = _bool_or_bitwise(np.logical_xor, np.bitwise_xor)


def _shift_amount(x: np.ndarray, y: np.ndarray):
    """(amount as uint64, in-range mask): an amount is in range if 0 <= y < bits (negative y is out of range)."""
    bits = 8 * x.dtype.itemsize
    y64 = np.asarray(y).astype(np.int64)
    in_range = (y64 >= 0) & (y64 < bits)
    return np.where(in_range, y64, 0).astype(np.uint64), in_range


def shift_left(x, y):
    x = np.asarray(x)
    amt, ok = _shift_amount(x, y)
    u = _unsigned_view(x).astype(np.uint64)
    mask = np.uint64((1 << (8 * x.dtype.itemsize)) - 1)
    out = ((u << amt) & mask).astype(np.dtype(f"u{x.dtype.itemsize}")).view(x.dtype)
    return np.where(ok, out, np.zeros((), x.dtype)).astype(x.dtype)


def shift_right_logical(x, y):
    x = np.asarray(x)
    amt, ok = _shift_amount(x, y)
    u = _unsigned_view(x).astype(np.uint64)
    out = (u >> amt).astype(np.dtype(f"u{x.dtype.itemsize}")).view(x.dtype)
    return np.where(ok, out, np.zeros((), x.dtype)).astype(x.dtype)


def shift_right_arithmetic(x, y):
    x = np.asarray(x)
    bits = 8 * x.dtype.itemsize
    amt, ok = _shift_amount(x, y)
    s = _unsigned_view(x).view(np.dtype(f"i{x.dtype.itemsize}")).astype(np.int64)  # the bits as a signed value
    out = np.where(ok, s >> amt.astype(np.int64), s >> (bits - 1))
    return out.astype(np.dtype(f"i{x.dtype.itemsize}")).view(x.dtype)


def _compare(fn):
    def op(x, y):
        return fn(_wide(np.asarray(x)), _wide(np.asarray(y)))
    return op


eq = _compare(np.equal)
ne = _compare(np.not_equal)
lt = _compare(np.less)
le = _compare(np.less_equal)
gt = _compare(np.greater)
ge = _compare(np.greater_equal)


def complex(x, y):  # noqa: A001
    x, y = np.asarray(x), np.asarray(y)
    out_dt = np.complex128 if x.dtype == np.float64 else np.complex64
    return (_wide(x) + 1j * _wide(y)).astype(out_dt)


def pow(x, y):  # noqa: A001
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(all="ignore"):
        yy = y.astype(np.float64) if y.dtype.kind in "iu" else _wide(y)
        return np.power(_wide(x), yy).astype(x.dtype)


def integer_pow(x, y: int):
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if x.dtype.kind in "iu":
            out = np.ones(x.shape, x.dtype)
            for _ in range(int(y)):  # repeated multiplication wraps like XLA's integer arithmetic
                out = (out * x).astype(x.dtype)
            return out
        return np.power(_wide(x), float(y) if x.dtype.kind != "c" else int(y)).astype(x.dtype)


def select_n(which, *cases):
    which = np.asarray(which)
    cases = [np.asarray(c) for c in cases]
    idx = which.astype(np.int64)
    shape = np.broadcast_shapes(which.shape, *[c.shape for c in cases])
    out = np.empty(shape, cases[0].dtype)
    idx = np.broadcast_to(idx, shape)
    for i, c in enumerate(cases):
        out = np.where(idx == i, np.broadcast_to(c, shape), out)
    return out.astype(cases[0].dtype)


def select(pred, on_true, on_false):
    return select_n(pred, on_false, on_true)


def clamp(lo, x, hi):
    lo, x, hi = np.asarray(lo), np.asarray(x), np.asarray(hi)
    return np.minimum(np.maximum(_wide(x), _wide(lo)), _wide(hi)).astype(x.dtype)


def convert_element_type(x, new_dtype):
    x = np.asarray(x)
    new = np.dtype(new_dtype)
    src = x.dtype
    if src.kind == "c" and new.kind != "c":
        x = np.real(x)  # complex -> real keeps the real part
        src = x.dtype
    if new == np.bool_:
        return _wide(x) != 0
    if new.kind in "iu" and (src.kind == "f" or src == _bf16):
        w = np.trunc(x.astype(np.float64))
        info = np.iinfo(new)
        w = np.where(np.isnan(w), 0, np.clip(w, float(info.min), float(info.max)))
        # float64 cannot hold int64/uint64 extremes exactly; clip in the integer domain after converting the rest.
        with np.errstate(invalid="ignore"):
            big = w >= float(info.max)
            small = w <= float(info.min)
            out = np.where(big | small, 0, w).astype(new)
        return np.where(big, info.max, np.where(small, info.min, out)).astype(new)
    with np.errstate(all="ignore"):
        return x.astype(new) if new.kind not in "fc" and new != _bf16 else _wide(x).astype(new)


def bitcast_convert_type(x, new_dtype):
    x = np.array(x, order="C")  # a C-contiguous copy that keeps 0-d arrays 0-d (unlike np.ascontiguousarray)
    new = np.dtype(new_dtype)
    a, b = x.dtype.itemsize, new.itemsize
    if a == b:
        return x.view(new)
    if a > b:
        return x.reshape(x.shape + (1,)).view(new).reshape(x.shape + (a // b,))
    return x.view(new).reshape(x.shape[:-1])


# --------------------------------------------------------------------------------------------------------------
# Structural
# --------------------------------------------------------------------------------------------------------------

def broadcast_in_dim(x, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    x = np.asarray(x)
    expanded = [1] * len(shape)
    for src, dst in enumerate(broadcast_dimensions):
        expanded[dst] = x.shape[src]
    return np.broadcast_to(x.reshape(expanded), tuple(shape)).copy()


def broadcast(x, sizes: Sequence[int]):
    x = np.asarray(x)
    return np.broadcast_to(x, tuple(sizes) + x.shape).copy()


def reshape(x, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None):
    x = np.asarray(x)
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return np.reshape(x, tuple(new_sizes))


def transpose(x, permutation: Sequence[int]):
    return np.transpose(np.asarray(x), tuple(permutation))


def squeeze(x, dimensions: Sequence[int]):
    return np.squeeze(np.asarray(x), axis=tuple(dimensions))


def expand_dims(x, dimensions: Sequence[int]):
    return np.expand_dims(np.asarray(x), tuple(dimensions))


def rev(x, dimensions: Sequence[int]):
    return np.flip(np.asarray(x), tuple(dimensions)) if len(dimensions) else np.asarray(x)


def concatenate(operands: Sequence, dimension: int):
    return np.concatenate([np.asarray(o) for o in operands], axis=dimension)


def pad(x, padding_value, padding_config: Sequence[tuple[int, int, int]]):
    x = np.asarray(x)
    pv = np.asarray(padding_value, x.dtype)
    out = x
    for axis, (lo, hi, interior) in enumerate(padding_config):
        n = out.shape[axis]
        core = n + builtins.max(n - 1, 0) * interior
        shape = list(out.shape)
        shape[axis] = builtins.max(lo, 0) + core + builtins.max(hi, 0)
        grown = np.full(shape, pv, x.dtype)
        idx = [builtins.slice(None)] * out.ndim
        idx[axis] = builtins.slice(builtins.max(lo, 0), builtins.max(lo, 0) + core, interior + 1)
        grown[tuple(idx)] = out
        crop = [builtins.slice(None)] * out.ndim
        crop[axis] = builtins.slice(-lo if lo < 0 else 0, shape[axis] + hi if hi < 0 else shape[axis])
        out = grown[tuple(crop)]
    return out


def slice(x, start_indices, limit_indices, strides=None):  # noqa: A001
    x = np.asarray(x)
    strides = strides or [1] * x.ndim
    return x[tuple(builtins.slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))].copy()


def slice_in_dim(x, start_index, limit_index, stride: int = 1, axis: int = 0):
    x = np.asarray(x)
    idx = [builtins.slice(None)] * x.ndim
    idx[axis] = builtins.slice(start_index, limit_index, stride)
    return x[tuple(idx)].copy()


def index_in_dim(x, index: int, axis: int = 0, keepdims: bool = True):
    x = np.asarray(x)
    out = np.take(x, [index], axis=axis)
    return out if keepdims else np.squeeze(out, axis)


def _clamped_starts(shape, starts, sizes):
    # As XLA's dynamic slices under JAX's default: a negative start counts from the end, then it is clamped.
    return [int(np.clip(int(s) + (d if int(s) < 0 else 0), 0, d - z)) for s, d, z in zip(starts, shape, sizes)]


def dynamic_slice(x, start_indices, slice_sizes):
    x = np.asarray(x)
    starts = _clamped_starts(x.shape, start_indices, slice_sizes)
    return x[tuple(builtins.slice(s, s + z) for s, z in zip(starts, slice_sizes))].copy()


def dynamic_update_slice(x, update, start_indices):
    x, update = np.asarray(x), np.asarray(update)
    starts = _clamped_starts(x.shape, start_indices, update.shape)
    out = x.copy()
    out[tuple(builtins.slice(s, s + z) for s, z in zip(starts, update.shape))] = update
    return out


def iota(dtype, size: int):
    return np.arange(size).astype(dtype)


def broadcasted_iota(dtype, shape, dimension: int):
    return broadcast_in_dim(np.arange(shape[dimension]).astype(dtype), shape, (dimension,))


def full(shape, fill_value, dtype=None):
    return np.full(tuple(shape), fill_value, dtype)


# --------------------------------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------------------------------

def _reduce_float_or_int(fn):
    def op(x, axes):
        x = np.asarray(x)
        axes = tuple(axes)
        with np.errstate(over="ignore"):
            if x.dtype.kind in "iu":
                return np.asarray(fn(x, axis=axes, dtype=x.dtype)).astype(x.dtype)
            return np.asarray(fn(_wide(x), axis=axes)).astype(x.dtype)
    return op


reduce_sum = _reduce_float_or_int(np.sum)
reduce_prod = _reduce_float_or_int(np.prod)


def _identity_for(dt: np.dtype, kind: str):
    if dt == np.bool_:
        return kind == "min"
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return info.min if kind == "max" else info.max
    return -np.inf if kind == "max" else np.inf


def reduce_max(x, axes):
    x = np.asarray(x)
    return np.max(_wide(x), axis=tuple(axes), initial=_identity_for(x.dtype, "max")).astype(x.dtype)


def reduce_min(x, axes):
    x = np.asarray(x)
    return np.min(_wide(x), axis=tuple(axes), initial=_identity_for(x.dtype, "min")).astype(x.dtype)


def _bitwise_reduce(bool_ufunc, int_ufunc, identity_bits):
    def op(x, axes):
        x = np.asarray(x)
        axes = tuple(axes)
        if x.dtype == np.bool_:
            return bool_ufunc.reduce(x, axis=axes, initial=bool(identity_bits))
        ident = np.array(-1 if identity_bits else 0).astype(x.dtype) if x.dtype.kind == "i" else (
            np.iinfo(x.dtype).max if identity_bits else 0)
        return int_ufunc.reduce(x, axis=axes, initial=ident).astype(x.dtype)
    return op


reduce_and = _bitwise_reduce(np.logical_and, np.bitwise_and, True)
reduce_or = _bitwise_reduce(np.logical_or, np.bitwise_or, False)
reduce_xor = _bitwise_reduce(np.logical_xor, np.bitwise_xor, False)


def argmax(x, axis: int, index_dtype=np.int32):
    return np.argmax(_wide(np.asarray(x)), axis=axis).astype(index_dtype)


def argmin(x, axis: int, index_dtype=np.int32):
    return np.argmin(_wide(np.asarray(x)), axis=axis).astype(index_dtype)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def dot_general(lhs, rhs, dimension_numbers, preferred_element_type=None):
    """Output dimensions: batch dims (in lhs order), then lhs free dims, then rhs free dims."""
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = tuple(lc), tuple(rc), tuple(lb), tuple(rb)
    letters = iter(_LETTERS)
    l_sub = [""] * lhs.ndim
    r_sub = [""] * rhs.ndim
    for a, b in zip(lb, rb):
        l_sub[a] = r_sub[b] = next(letters)
    for a, b in zip(lc, rc):
        l_sub[a] = r_sub[b] = next(letters)
    for i in range(lhs.ndim):
        if not l_sub[i]:
            l_sub[i] = next(letters)
    for i in range(rhs.ndim):
        if not r_sub[i]:
            r_sub[i] = next(letters)
    out_sub = ([l_sub[a] for a in lb] + [l_sub[i] for i in range(lhs.ndim) if i not in lc and i not in lb]
               + [r_sub[i] for i in range(rhs.ndim) if i not in rc and i not in rb])
    spec = f"{''.join(l_sub)},{''.join(r_sub)}->{''.join(out_sub)}"
    out_dt = np.dtype(preferred_element_type) if preferred_element_type is not None else lhs.dtype
    if lhs.dtype == np.bool_:
        return np.einsum(spec, lhs.astype(np.int64), rhs.astype(np.int64)).astype(bool).astype(out_dt)
    with np.errstate(over="ignore"):
        if lhs.dtype.kind in "iu":
            return np.einsum(spec, lhs.astype(out_dt), rhs.astype(out_dt)).astype(out_dt)
        return np.einsum(spec, _wide(lhs), _wide(rhs)).astype(out_dt)


def dot(lhs, rhs, preferred_element_type=None):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    contract = ((lhs.ndim - 1,), (0,))
    return dot_general(lhs, rhs, (contract, ((), ())), preferred_element_type)


# --------------------------------------------------------------------------------------------------------------
# Cumulative
# --------------------------------------------------------------------------------------------------------------

def _cumulative(ufunc):
    def op(x, axis: int = 0, reverse: bool = False):
        x = np.asarray(x)
        w = _wide(x) if x.dtype.kind not in "iub" else x
        if reverse:
            w = np.flip(w, axis)
        with np.errstate(over="ignore"):
            out = ufunc.accumulate(w, axis=axis, dtype=w.dtype if w.dtype != np.bool_ else None)
        if reverse:
            out = np.flip(out, axis)
        return np.asarray(out).astype(x.dtype)
    return op


cumsum = _cumulative(np.add)
cumprod = _cumulative(np.multiply)
cummax = _cumulative(np.maximum)
cummin = _cumulative(np.minimum)
cumlogsumexp = _cumulative(np.logaddexp)

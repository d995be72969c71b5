"""NumPy implementations of the elementwise primitives.

Each returns the dtype XLA would: integer division truncates toward zero, `rem` takes the sign of the dividend
(C `fmod`), shifts of out-of-range amounts give 0 (or the sign for arithmetic right shifts), and floating-point
errors never warn (they produce inf/nan as XLA does).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import scipy.special as sp

from ...lax import elementwise as ew
from . import complex_math, kernels, minmax, register_impl
from . import special as _special  # erf_inv evaluated as XLA does (bit-exact random.normal)

_ERR = dict(all="ignore")

QUIET_PRIMITIVES = frozenset({
    ew.exp_p, ew.exp2_p, ew.log_p, ew.log1p_p, ew.expm1_p, ew.tan_p, ew.asin_p, ew.acos_p, ew.sinh_p, ew.cosh_p,
    ew.acosh_p, ew.atanh_p, ew.sqrt_p, ew.rsqrt_p, ew.div_p, ew.rem_p, ew.pow_p, ew.integer_pow_p, ew.atan2_p,
})
"""The primitives whose NumPy implementations run with floating-point warnings silenced.

These can overflow, divide by zero or leave their domain; XLA then returns inf/nan quietly, and so must the
backend (NumPy would warn). Code generators that call NumPy directly for these primitives must silence warnings
the same way (the compiler imports this set).
"""


def _quiet(fn):
    def impl(*args, **params):
        with np.errstate(**_ERR):
            return fn(*args, **params)
    impl.__name__ = getattr(fn, "__name__", "impl")
    return impl


def _register(prim, fn) -> None:
    """Registers `fn` for `prim`, silencing floating-point warnings for the primitives in QUIET_PRIMITIVES."""
    register_impl(prim, _quiet(fn) if prim in QUIET_PRIMITIVES else fn)


def _same_dtype(fn):
    """Wraps a ufunc that may upcast (scipy on float16/bfloat16) so the result keeps the input's dtype."""
    def impl(x):
        with np.errstate(**_ERR):
            dt = np.result_type(x)
            if dt.itemsize < 4 and dt.kind == "f" or dt.name == "bfloat16":
                return np.asarray(fn(np.asarray(x, np.float32))).astype(dt)
            return np.asarray(fn(x)).astype(dt, copy=False)
    return impl


def _nan_parts_give_nan(fn):
    """`fn` for complex inputs as XLA computes it where a part is NaN: NaN (NaN + NaN j) even beside an infinite
    part, where NumPy follows C99 (|inf + nan j| = inf, log(inf + nan j) = inf + nan j, sqrt(nan + inf j) = inf +
    inf j). Real inputs are unchanged."""
    def impl(x):
        out = fn(x)
        if x.dtype.kind == "c":
            nan = np.isnan(x)  # either part
            if nan.any():
                out = np.where(nan, out.dtype.type(complex(np.nan, np.nan) if out.dtype.kind == "c" else np.nan), out)
        return out
    impl.__name__ = fn.__name__
    return impl


COMPLEX_NAN_PRIMITIVES = frozenset({ew.abs_p, ew.log_p, ew.log1p_p, ew.sqrt_p, ew.exp_p, ew.expm1_p, ew.sin_p,
                                    ew.cos_p, ew.tan_p, ew.sinh_p, ew.cosh_p, ew.tanh_p})
"""Primitives whose complex implementations give XLA's results where NumPy's ufuncs do not: NaN for any NaN part
(abs, log, log1p, sqrt), and XLA's formulas at infinite, NaN and zero parts (exp, expm1, sin, cos, tan, sinh,
cosh, tanh: see `complex_math`). Generated code calls the implementation, not the ufunc, for complex operands of these."""


def _complex_as_xla(real_fn, complex_fn):
    """`complex_fn` (from `complex_math`) for complex operands, `real_fn` otherwise."""
    def impl(x):
        return complex_fn(x) if (x.dtype if type(x) is np.ndarray else np.result_type(x)).kind == "c" else real_fn(x)
    impl.__name__ = getattr(real_fn, "__name__", "impl")
    return impl


# -- XLA's own float32 approximations (NumPy's differ in the last bits; float64 stays NumPy's) ----------------------

_register(ew.exp_p, _complex_as_xla(_special.exp, complex_math.exp))
_register(ew.tanh_p, _complex_as_xla(_special.tanh, complex_math.tanh))
_register(ew.log_p, _complex_as_xla(_special.log, _nan_parts_give_nan(np.log)))

# -- NumPy ufuncs that match XLA as they are ----------------------------------------------------------------------

_register(ew.neg_p, np.negative)
_register(ew.floor_p, np.floor)
_register(ew.ceil_p, np.ceil)
_register(ew.exp2_p, np.exp2)
_register(ew.log1p_p, _nan_parts_give_nan(np.log1p))
_register(ew.expm1_p, _complex_as_xla(np.expm1, complex_math.expm1))
_register(ew.sin_p, _complex_as_xla(np.sin, complex_math.sin))
_register(ew.cos_p, _complex_as_xla(np.cos, complex_math.cos))
_register(ew.tan_p, _complex_as_xla(np.tan, complex_math.tan))
_register(ew.asin_p, np.arcsin)
_register(ew.acos_p, np.arccos)
_register(ew.atan_p, np.arctan)
_register(ew.sinh_p, _complex_as_xla(np.sinh, complex_math.sinh))
_register(ew.cosh_p, _complex_as_xla(np.cosh, complex_math.cosh))
_register(ew.asinh_p, np.arcsinh)
_register(ew.acosh_p, np.arccosh)
_register(ew.atanh_p, np.arctanh)
_register(ew.sqrt_p, _nan_parts_give_nan(np.sqrt))
_register(ew.cbrt_p, np.cbrt)
_register(ew.abs_p, _nan_parts_give_nan(np.abs))
_register(ew.not_p, np.invert)
_register(ew.real_p, np.real)
_register(ew.imag_p, np.imag)
_register(ew.conj_p, np.conj)
_register(ew.square_p, np.square)


def _arithmetic(op: str, ufunc):
    """`ufunc(x, y)`, through the compiled broadcast kernel (kernels.binary) when an operand is large and the other
    repeats along rows or columns of it; the same values either way (bit for bit, up to the sign and payload of
    NaNs). Small operands cost one size test (the Array operators' fast path tests sizes itself and calls `ufunc`)."""
    binary, threshold = kernels.binary, kernels.BINARY_MIN_ELEMENTS

    def impl(x, y):
        try:
            large = x.size >= threshold or y.size >= threshold
        except AttributeError:  # a Python scalar
            large = False
        if large:
            out = binary(op, x, y)
            if out is not None:
                return out
        return ufunc(x, y)
    impl.__name__ = ufunc.__name__
    impl.small_operands, impl.large_from = ufunc, threshold  # for core.fast_binary_operator
    return impl


_register(ew.add_p, _arithmetic("add", np.add))
_register(ew.sub_p, _arithmetic("sub", np.subtract))
_multiply = _arithmetic("mul", np.multiply)
_register(ew.mul_p, _multiply)
_register(ew.max_p, minmax.maximum)  # XLA's signed zeros: max(-0., +0.) is +0 in either order
_register(ew.min_p, minmax.minimum)
_register(ew.atan2_p, np.arctan2)
_register(ew.and_p, np.bitwise_and)
_register(ew.or_p, np.bitwise_or)
_register(ew.xor_p, np.bitwise_xor)
_register(ew.eq_p, np.equal)
_register(ew.ne_p, np.not_equal)
_register(ew.lt_p, np.less)
_register(ew.le_p, np.less_equal)
_register(ew.gt_p, np.greater)
_register(ew.ge_p, np.greater_equal)

# -- special functions: SciPy, kept in the operand's dtype; erf_inv as XLA evaluates it (bit-exact random.normal) --

_register(ew.erf_p, _same_dtype(sp.erf))
_register(ew.erfc_p, _same_dtype(sp.erfc))
_register(ew.erf_inv_p, _special.erf_inv)
_register(ew.lgamma_p, _same_dtype(sp.gammaln))
_register(ew.digamma_p, _same_dtype(sp.digamma))


def _polygamma(m, x):
    # SciPy wants an integer order: other orders (fractional, negative) give NaN, as in JAX.
    dt = np.result_type(m, x)
    m, x = np.broadcast_arrays(np.asarray(m, np.float64), np.asarray(x, np.float64))
    valid = (m >= 0) & (m == np.floor(m))
    with np.errstate(**_ERR):
        out = sp.polygamma(np.where(valid, m, 0).astype(np.int64), x)
    return np.asarray(np.where(valid, out, np.nan)).astype(dt)


_register(ew.polygamma_p, _polygamma)


# -- implementations that differ from NumPy's defaults -----------------------------------------------------------

def _int_div(x, y):
    kind = np.result_type(x).kind
    if kind == "c":
        return complex_math.divide(x, y)
    if kind in "iu":
        y_safe = np.where(y == 0, 1, y)
        q = np.floor_divide(x, y_safe)
        fix = (np.remainder(x, y_safe) != 0) & ((x < 0) != (y_safe < 0))
        q = np.where(fix, q + 1, q)
        return np.where(y == 0, np.array(-1).astype(q.dtype), q).astype(np.result_type(x))
    return _true_divide(x, y)


def _repeated_divisor(x, y) -> np.ndarray | None:
    """The distinct values of the divisor `y` of `x / y` (`y` with each axis of stride 0 cut to one element) if `y`
    repeats over the quotient -- it has fewer elements than the quotient, or an axis of stride 0 (eager
    `broadcast_in_dim` returns such views) -- and both operands are float16/32/64 of one dtype; else None.

    Differs from JAX where `y` is the result of an eager `jnp.broadcast_to` (a view here, a materialized array in
    JAX, which then divides truly)."""
    dt = getattr(y, "dtype", None)
    if dt is None or dt.kind != "f" or getattr(x, "dtype", None) != dt:
        return None
    base = y[tuple(slice(0, 1) if s == 0 else slice(None) for s in y.strides)] if 0 in y.strides else y
    if base.size < y.size or y.size < x.size:
        return base
    if y.shape == x.shape or y.size == 0:
        return None
    # Neither operand holds the quotient's shape (x (2, 1) / y (1, 3)): y repeats if the quotient is larger.
    nd = max(x.ndim, y.ndim)
    xs, ys = (1,) * (nd - x.ndim) + x.shape, (1,) * (nd - y.ndim) + y.shape
    return base if math.prod(map(max, xs, ys)) > y.size else None


_divide_truly = _arithmetic("div", np.true_divide)


def _true_divide(x, y):
    """`x / y`, except that a repeated divisor (a row, a column, a scalar: `_repeated_divisor`) gives `x * (1 / y)`
    with the reciprocal rounded to the dtype, as XLA computes it (its simplifier rewrites `A / broadcast(B)` to
    `A * broadcast(1 / B)`), so eager quotients have JAX's bits where a true quotient can differ by one ulp.
    bfloat16 keeps the true quotient: XLA's bfloat16 quotients by a row are not those of a rounded reciprocal
    (compared with JAX 0.10)."""
    base = _repeated_divisor(x, y)
    if base is None:
        return _divide_truly(x, y)
    with np.errstate(**_ERR):
        recip = np.divide(base.dtype.type(1), base)
    return _multiply(x, recip if recip.shape == y.shape else np.broadcast_to(recip, y.shape))


_register(ew.div_p, _int_div)


def _rem(x, y):
    if np.result_type(x).kind in "iu":
        y_safe = np.where(y == 0, 1, y)
        return np.where(y == 0, x, np.fmod(x, y_safe)).astype(np.result_type(x))
    return np.fmod(x, y)


_register(ew.rem_p, _rem)


def _logistic(x):
    # XLA's expansion, 1 / (1 + exp(-x)), each operation rounded to x's dtype (exp by `special.exp`: XLA's bits for
    # float32, float16 and bfloat16). Large negative x: exp overflows to inf and the result is 0, where the exact
    # value is subnormal or below (XLA flushes those to zero too).
    dt = np.result_type(x)
    one = np.ones((), dt)
    with np.errstate(over="ignore"):
        return np.divide(one, np.add(one, _special.exp(np.negative(x)))).astype(dt, copy=False)


_register(ew.logistic_p, _logistic)


def _round(x, rounding_method=0):
    if rounding_method == 0:  # away from zero, as lax.RoundingMethod.AWAY_FROM_ZERO
        # `floor(|x| + 0.5)` would round 0.49999997 up (the sum rounds to 1.0); `x - trunc(x)` is exact. copysign
        # keeps the sign of zero (round(-0.0) and round(-0.3) are -0.0, as in XLA).
        dt = np.result_type(x)
        t = np.trunc(x)
        with np.errstate(**_ERR):
            up = np.abs(np.subtract(x, t)) >= np.asarray(0.5, dt)
        return np.copysign(np.where(up, t + np.sign(x), t), x).astype(dt)
    return np.round(x)


_register(ew.round_p, _round)


def _sign(x):
    # XLA's sign returns the operand itself for -0.0, +0.0 and NaN (NumPy's gives +0.0 for -0.0): copying the
    # operand's sign bit onto NumPy's result gives exactly that.
    if np.result_type(x).kind == "c":
        return complex_math.sign(x)  # NaN for a NaN part, as in XLA (NumPy's z / |z| gives +-1j beside an inf)
    out = np.sign(x)
    return np.copysign(out, x) if out.dtype.kind == "f" else out


_register(ew.sign_p, _sign)


def _is_finite(x):
    return np.isfinite(x)


_register(ew.is_finite_p, _is_finite)


def _rsqrt(x):
    if np.result_type(x).kind == "c":
        return complex_math.rsqrt(x)
    one = np.asarray(1, np.result_type(x))
    return one / np.sqrt(x)


_register(ew.rsqrt_p, _rsqrt)


def _integer_pow(x, *, y):
    if y == 0:
        return np.ones_like(x)
    dt = np.result_type(x)
    if y < 0 and dt.kind in "iu":
        return np.power(x, y)  # NumPy raises for negative integer powers of integers, as JAX does
    with np.errstate(over="ignore", invalid="ignore"):
        acc = np.asarray(ew.binary_power(x, abs(y), np.multiply))
        return np.divide(np.ones((), dt), acc) if y < 0 else acc


_register(ew.integer_pow_p, _integer_pow)


def _pow(x, y):
    return _special.power(x, y)


_register(ew.pow_p, _pow)


def _shift_left(x, y):
    bits = np.result_type(x).itemsize * 8
    out = np.left_shift(x, np.where((y < 0) | (y >= bits), 0, y).astype(np.result_type(x)))
    return np.where((y < 0) | (y >= bits), np.zeros((), np.result_type(x)), out)


_register(ew.shift_left_p, _shift_left)


def _shift_right_logical(x, y):
    dt = np.result_type(x)
    bits = dt.itemsize * 8
    udt = np.dtype(f"uint{bits}")
    ux = np.asarray(x).view(udt) if np.ndim(x) else np.asarray(x, dt).reshape(()).view(udt)
    safe = np.where((y < 0) | (y >= bits), 0, y).astype(udt)
    out = np.right_shift(ux, safe)
    out = np.where((y < 0) | (y >= bits), np.zeros((), udt), out)
    return np.asarray(out).view(dt) if np.ndim(out) else np.asarray(out).reshape(()).view(dt)[()]


_register(ew.shift_right_logical_p, _shift_right_logical)


def _shift_right_arithmetic(x, y):
    dt = np.result_type(x)
    bits = dt.itemsize * 8
    safe = np.where((y < 0) | (y >= bits), bits - 1, y).astype(dt)
    return np.right_shift(x, safe)


_register(ew.shift_right_arithmetic_p, _shift_right_arithmetic)


def _nextafter(x, y):
    return np.nextafter(x, y)


_register(ew.nextafter_p, _nextafter)


def _clz(x):
    dt = np.result_type(x)
    bits = dt.itemsize * 8
    ux = np.asarray(x).astype(np.uint64) & np.uint64((1 << bits) - 1)
    out = np.full(np.shape(ux), bits, dtype=np.int64)
    for b in range(bits):
        set_bit = ((ux >> np.uint64(bits - 1 - b)) & np.uint64(1)).astype(bool) & (out == bits)
        out = np.where(set_bit, b, out)
    return out.astype(dt)


_register(ew.clz_p, _clz)


def _population_count(x):
    dt = np.result_type(x)
    ux = np.asarray(x).astype(np.uint64) & np.uint64((1 << (dt.itemsize * 8)) - 1)
    return np.bitwise_count(ux).astype(dt)


_register(ew.population_count_p, _population_count)


def _saturating_float_to_int(x, dst):
    """XLA's float -> integer conversion: truncate toward zero, saturate at the integer range, NaN -> 0.

    The range test runs in float64 on the truncated value: clipping to `iinfo.max` in the source dtype does not
    work, because the bound itself rounds up to 2**bits there (2147483647 is 2147483648.0 in float32) and the
    cast of that out-of-range value wraps to INT_MIN. In float64 every bound up to 32 bits is exact, and for 64-bit
    targets `t >= float(max)` (max rounds to 2**63 or 2**64) is exactly the out-of-range test."""
    info = np.iinfo(dst)
    with np.errstate(**_ERR):
        t = np.trunc(np.asarray(x, np.float64))
        high = t >= float(info.max)
        low = t <= float(info.min)
        bad = high | low | np.isnan(t)
        out = np.where(bad, 0.0, t).astype(dst)
    out = np.where(high, np.array(info.max, dst), out)
    return np.where(low, np.array(info.min, dst), out).astype(dst)


def _convert_element_type(x, *, new_dtype, weak_type=False):
    src = np.result_type(x)
    if (src.kind in "fc" or src == ml_dtypes.bfloat16) and new_dtype.kind in "iu":
        return _saturating_float_to_int(np.real(x) if src.kind == "c" else x, new_dtype)
    if src.kind == "c" and new_dtype.kind != "c":
        return np.real(x).astype(new_dtype)
    if new_dtype == np.bool_:
        return np.asarray(x) != 0
    with np.errstate(**_ERR):
        return np.asarray(x).astype(new_dtype)


_register(ew.convert_element_type_p, _convert_element_type)


def _bitcast_convert_type(x, *, new_dtype):
    x = np.asarray(x)
    if not x.flags.c_contiguous:  # (np.ascontiguousarray would turn 0-d into 1-d)
        x = x.copy()
    new = np.dtype(new_dtype)
    a, b = x.dtype.itemsize, new.itemsize
    if a == b:
        return x.view(new)
    if a > b:  # each element becomes a trailing axis of a // b narrower elements
        return x.reshape(x.shape + (1,)).view(new).reshape(x.shape + (a // b,))
    return x.view(new).reshape(x.shape[:-1])


_register(ew.bitcast_convert_type_p, _bitcast_convert_type)


# Above this size a float select is computed with bit masks: NumPy's `where` branches per element and is several
# times slower than four vectorized passes when the predicate is unpredictable (measured: 3.8 ms vs 0.46 ms for
# 1e6 float32 with a random mask). The compiler's lowering of `select_n` uses the same function.
SELECT_BITS_MIN_ELEMENTS = 1 << 14
_INT_OF = {4: np.int32, 8: np.int64}


def select_bits_supported(dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind == "f" and dtype.itemsize in _INT_OF


def select_bits(pred: np.ndarray, on_false: np.ndarray, on_true: np.ndarray) -> np.ndarray:
    """`where(pred, on_true, on_false)` for same-shape float arrays, by bitwise selection (exact, branch-free): one
    pass of a compiled kernel once it is ready (kernels.py), else six NumPy passes computing the same bits."""
    out = kernels.select(pred, on_false, on_true)
    if out is not None:
        return out
    it = _INT_OF[on_true.dtype.itemsize]
    mask = np.negative(np.ascontiguousarray(pred).view(np.int8), dtype=np.int8).astype(it)  # 0 or all ones
    t = np.ascontiguousarray(on_true).view(it)
    f = np.ascontiguousarray(on_false).view(it)
    out = np.bitwise_and(t, mask)
    np.bitwise_or(out, np.bitwise_and(f, np.invert(mask, out=mask), out=mask), out=out)
    return out.view(on_true.dtype)


def _select_n(which, *cases):
    if len(cases) == 1:
        return cases[0]
    if np.result_type(which) == np.bool_:
        if (len(cases) == 2 and np.size(which) >= SELECT_BITS_MIN_ELEMENTS and type(which) is np.ndarray
                and type(cases[0]) is np.ndarray and type(cases[1]) is np.ndarray
                and cases[0].dtype == cases[1].dtype and select_bits_supported(cases[0].dtype)
                and which.shape == cases[0].shape == cases[1].shape):
            return select_bits(which, cases[0], cases[1])
        return np.where(which, cases[1], cases[0])
    return np.choose(np.asarray(which, np.int64), np.broadcast_arrays(*cases)) if np.ndim(which) else cases[int(which)]


_register(ew.select_n_p, _select_n)


_register(ew.clamp_p, minmax.clamp)


def _complex(x, y):
    # The parts are stored, not computed: x + 1j * y would turn an infinite y into nan + inf j (0 * inf) and lose
    # the sign of a -0 real part (-0 + 0 is +0); XLA's complex(0., inf) is exactly inf j.
    x, y = np.asarray(x), np.asarray(y)
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), np.complex128 if x.dtype == np.float64 else np.complex64)
    out.real = x
    out.imag = y
    return out


_register(ew.complex_p, _complex)

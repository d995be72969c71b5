"""NumPy's elementwise functions (`jnp.add`, `jnp.sin`, ...) as thin wrappers over lax primitives.

Each wrapper promotes its arguments with JAX's lattice and broadcasts them, then binds one primitive (or a short
composition). Transcendental functions of integers compute in the default float dtype, as in JAX.
"""

from __future__ import annotations

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..core import Array
from ..custom_derivatives import custom_jvp
from ..lax import elementwise as ew
from ..lax import structural as st
from .util import asarray_arg, broadcast_shapes, broadcast_to_shape, promote_args, promote_args_inexact


def _same_array_pair(x, y) -> bool:
    return (type(x) is Array and type(y) is Array and x._value.dtype == y._value.dtype
            and x._value.shape == y._value.shape)


def _binary(prim, name, x, y):
    if _same_array_pair(x, y):
        return prim.bind(x, y)
    x, y = promote_args(name, x, y)
    return prim.bind(x, y)


def add(x, y, /):
    """`x + y` elementwise, with NumPy broadcasting and JAX dtype promotion (bool inputs: logical or)."""
    if _same_array_pair(x, y) and x._value.dtype != np.bool_:
        return ew.add_p.bind(x, y)
    x, y = promote_args("add", x, y)
    if core.get_aval(x).dtype == dtypes.bool_:
        return ew.or_p.bind(x, y)
    return ew.add_p.bind(x, y)


def subtract(x, y, /):
    """`x - y` elementwise (broadcasting, promotion)."""
    return _binary(ew.sub_p, "subtract", x, y)


def multiply(x, y, /):
    """`x * y` elementwise (bool inputs: logical and)."""
    if _same_array_pair(x, y) and x._value.dtype != np.bool_:
        return ew.mul_p.bind(x, y)
    x, y = promote_args("multiply", x, y)
    if core.get_aval(x).dtype == dtypes.bool_:
        return ew.and_p.bind(x, y)
    return ew.mul_p.bind(x, y)


def true_divide(x, y, /):
    """`x / y` elementwise; integer inputs divide in the default float dtype."""
    if _same_array_pair(x, y) and dtypes.is_inexact(x._value.dtype):
        return ew.div_p.bind(x, y)
    x, y = promote_args_inexact("true_divide", x, y)
    return ew.div_p.bind(x, y)


divide = true_divide


@staged_as_call("floor_divide")
def floor_divide(x, y, /):
    """`x // y`: rounds toward negative infinity (Python semantics).

    Division by zero follows JAX: integers give the truncating quotient `lax.div` (-1 for signed, all ones for
    unsigned) moved down by one where the signs of `x` and 0 differ and the remainder is nonzero, so `5 // 0` and
    `-5 // 0` are -2 and `0 // 0` is -1; floats give +-inf or nan. Complex inputs raise TypeError."""
    x, y = promote_args("floor_divide", x, y)
    dt = core.get_aval(x).dtype
    if dt == dtypes.bool_:
        raise TypeError("floor_divide does not accept bool arrays")
    if dt.kind == "u":
        return ew.div(x, y)
    if dtypes.is_integer(dt):
        q = ew.div(x, y)
        fix = ew.bitwise_and(ew.ne(ew.sign(x), ew.sign(y)), ew.ne(ew.rem(x, y), _zero(x)))
        return ew.select_n(fix, q, ew.sub(q, _one(q)))
    if dtypes.is_complex(dt):
        raise TypeError("floor_divide does not support complex-valued inputs")
    return _float_divmod(x, y)[0]


def _float_divmod(x, y):
    """(x // y, x % y) for floats as CPython's float_divmod computes them: the quotient divides `x - fmod(x, y)`
    (exact where it matters) instead of flooring `x / y`, so `1.0 // 0.1` is 9.0, not floor(10.000000149) = 10."""
    mod = ew.rem(x, y)
    zero = _zero(x)
    exact = ew.select_n(ew.eq(y, zero), ew.sub(x, mod), x)
    div = ew.div(exact, y)
    fix = ew.bitwise_and(ew.ne(mod, zero), ew.ne(ew.sign(y), ew.sign(mod)))
    mod = ew.select_n(fix, mod, ew.add(mod, y))
    div = ew.select_n(fix, div, ew.sub(div, _one(div)))
    return ew.round(div), mod


def _int_divisor(x, y):
    """An integer divisor with zeros replaced by one: JAX defines `x % 0` (and `fmod(x, 0)`) as 0 for integers."""
    if dtypes.is_integer(core.get_aval(y).dtype):
        return ew.select_n(ew.eq(y, _zero(y)), y, _one(y))
    return y


@staged_as_call("remainder")
def remainder(x, y, /):
    """`x % y` with the sign of the divisor (Python/NumPy semantics); integer `x % 0` is 0 as in JAX."""
    x, y = promote_args("remainder", x, y)
    y = _int_divisor(x, y)
    r = ew.rem(x, y)
    zero = _zero(r)
    fix = ew.bitwise_and(ew.ne(r, zero), ew.ne(ew.lt(r, zero), ew.lt(y, _zero(y))))
    return ew.select_n(fix, r, ew.add(r, y))


mod = remainder


@staged_as_call("fmod")
def fmod(x, y, /):
    """C-style remainder (sign of the dividend); integer `fmod(x, 0)` is 0 as in JAX."""
    x, y = promote_args("fmod", x, y)
    return ew.rem(x, _int_divisor(x, y))


@staged_as_call("divmod")
def divmod(x, y, /):  # noqa: A001
    """`(x // y, x % y)` elementwise, each as `floor_divide` and `remainder` define it."""
    x, y = promote_args("divmod", x, y)
    if dtypes.is_float(core.get_aval(x).dtype):
        return _float_divmod(x, y)
    return floor_divide(x, y), remainder(x, y)


def _zero(x):
    return Array(np.zeros((), core.get_aval(x).dtype), True)


def _one(x):
    return Array(np.ones((), core.get_aval(x).dtype), True)


def _full_like(x, value):
    """An array of `x`'s shape and dtype filled with `value` (select_n needs cases of equal shapes)."""
    a = core.get_aval(x)
    return st.full(a.shape, value, a.dtype)


def power(x, y, /):
    """`x ** y` elementwise. A static Python integer exponent lowers to `integer_pow`."""
    if isinstance(y, int) and not isinstance(y, bool) and -(2 ** 31) <= y < 2 ** 31:
        x = asarray_arg(x, "power")
        dt = core.get_aval(x).dtype
        if dtypes.is_integer(dt) and y < 0:
            raise ValueError("Integers to negative integer powers are not allowed.")
        if dt == dtypes.bool_:
            x = ew._convert_weak(x, dtypes.default_int_dtype(), core.get_aval(x).weak_type)
        return ew.integer_pow(x, y)
    if _float_base_int_exponent(x, y):
        # As in JAX, no promotion here: lax.pow with the integer exponent keeps d/dx x**0 == 0 at x == 0 (a float
        # exponent gives 0 * 0**-1 = nan there).
        return ew.pow(*_broadcast_only("power", x, y))
    x, y = promote_args("power", x, y)
    dt = core.get_aval(x).dtype
    if dtypes.is_integer(dt):
        return _int_power(x, y)
    return ew.pow(x, y)


def _float_base_int_exponent(x, y) -> bool:
    arrays = (Array, core.Tracer, np.ndarray, np.generic)
    if not (isinstance(x, arrays) and isinstance(y, arrays)):
        return False
    return dtypes.is_inexact(dtypes.dtype_and_weak(x)[0]) and dtypes.is_integer(dtypes.dtype_and_weak(y)[0])


def _broadcast_only(name, *args):
    """The arguments as arrays broadcast to one shape, each keeping its dtype."""
    args = [asarray_arg(a, name) for a in args]
    shapes = [core.get_aval(a).shape for a in args]
    try:
        shape = broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{name}: incompatible shapes for broadcasting: "
                         + ", ".join(str(s) for s in shapes)) from None
    return [a if core.get_aval(a).shape == shape else broadcast_to_shape(a, shape) for a in args]


def _int_power(x, y):
    """Integer power by repeated squaring over the bits of y (y >= 0), as NumPy computes it."""
    a = core.get_aval(x)
    result = st.full(a.shape, 1, a.dtype)
    base = x
    exp = y
    bits = core.get_aval(x).dtype.itemsize * 8
    for _ in range(bits):
        odd = ew.ne(ew.bitwise_and(exp, _one(exp)), _zero(exp))
        result = ew.select_n(odd, result, ew.mul(result, base))
        base = ew.mul(base, base)
        exp = ew.shift_right_logical(exp, _one(exp))
    return result


float_power = power


def _unary(prim, name, x, inexact=True):
    x = asarray_arg(x, name)
    dt, weak = dtypes.dtype_and_weak(x)
    if inexact and not dtypes.is_inexact(dt):
        x = ew._convert_weak(x, dtypes.default_float_dtype(), weak)
    return prim.bind(x)


def negative(x, /): return _unary(ew.neg_p, "negative", x, inexact=False)
def positive(x, /): return asarray_arg(x, "positive")
def sign(x, /): return _unary(ew.sign_p, "sign", x, inexact=False)
def exp(x, /): return _unary(ew.exp_p, "exp", x)
def exp2(x, /): return _unary(ew.exp2_p, "exp2", x)
def expm1(x, /): return _unary(ew.expm1_p, "expm1", x)
def log(x, /): return _unary(ew.log_p, "log", x)
def log1p(x, /): return _unary(ew.log1p_p, "log1p", x)
def sqrt(x, /): return _unary(ew.sqrt_p, "sqrt", x)
def cbrt(x, /): return _unary(ew.cbrt_p, "cbrt", x)
def sin(x, /): return _unary(ew.sin_p, "sin", x)
def cos(x, /): return _unary(ew.cos_p, "cos", x)
def tan(x, /): return _unary(ew.tan_p, "tan", x)
def arcsin(x, /): return _unary(ew.asin_p, "arcsin", x)
def arccos(x, /): return _unary(ew.acos_p, "arccos", x)
def arctan(x, /): return _unary(ew.atan_p, "arctan", x)
def sinh(x, /): return _unary(ew.sinh_p, "sinh", x)
def cosh(x, /): return _unary(ew.cosh_p, "cosh", x)
def tanh(x, /): return _unary(ew.tanh_p, "tanh", x)
def arcsinh(x, /): return _unary(ew.asinh_p, "arcsinh", x)
@staged_as_call("arccosh")
def arccosh(x, /): return _unary(ew.acosh_p, "arccosh", x)
def arctanh(x, /): return _unary(ew.atanh_p, "arctanh", x)
def conjugate(x, /): return asarray_arg(x) if not dtypes.is_complex(core.get_aval(asarray_arg(x)).dtype) \
    else _unary(ew.conj_p, "conjugate", x)


asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh
conj = conjugate


def log2(x, /):
    x = _unary(ew.log_p, "log2", x)
    return ew.div(x, Array(np.asarray(np.log(2), core.get_aval(x).dtype), True))


def log10(x, /):
    x = _unary(ew.log_p, "log10", x)
    return ew.div(x, Array(np.asarray(np.log(10), core.get_aval(x).dtype), True))


def absolute(x, /):
    x = asarray_arg(x, "absolute")
    dt = core.get_aval(x).dtype
    if dt == dtypes.bool_ or dtypes.is_integer(dt) and dt.kind == "u":
        return x
    return ew.abs_p.bind(x)


abs = absolute  # noqa: A001


def fabs(x, /):
    return _unary(ew.abs_p, "fabs", x)


def square(x, /):
    x = asarray_arg(x, "square")
    return ew.integer_pow(x, 2)


def reciprocal(x, /):
    x = asarray_arg(x, "reciprocal")
    return ew.div(_one(x), x) if dtypes.is_inexact(core.get_aval(x).dtype) else ew.div(_one(x), x)


def _round_float(prim, name, x):
    x = asarray_arg(x, name)
    if not dtypes.is_inexact(core.get_aval(x).dtype):
        return x
    return prim.bind(x)


def floor(x, /): return _round_float(ew.floor_p, "floor", x)
def ceil(x, /): return _round_float(ew.ceil_p, "ceil", x)


@staged_as_call("trunc")
def trunc(x, /):
    x = asarray_arg(x, "trunc")
    if not dtypes.is_inexact(core.get_aval(x).dtype):
        return x
    return ew.select_n(ew.lt(x, _zero(x)), ew.floor(x), ew.ceil(x))


fix = trunc


@staged_as_call("rint")
def rint(x, /):
    x = asarray_arg(x, "rint")
    if not dtypes.is_inexact(core.get_aval(x).dtype):
        return x
    return ew.round(x, 1)


@staged_as_call("round")
def round(a, decimals: int = 0, out=None):  # noqa: A001
    """Rounds to `decimals` places, halves to even (NumPy semantics)."""
    a = asarray_arg(a, "round")
    dt = core.get_aval(a).dtype
    if not dtypes.is_inexact(dt):
        if decimals >= 0:
            return a
        f = Array(np.asarray(10 ** (-decimals), dt), True)
        return ew.mul(floor_divide(ew.add(a, ew.div(f, Array(np.asarray(2, dt), True))), f), f)
    if decimals == 0:
        return ew.round(a, 1)
    f = Array(np.asarray(10.0 ** decimals, dt), True)
    return ew.div(ew.round(ew.mul(a, f), 1), f)


around = round


def maximum(x, y, /): return _binary(ew.max_p, "maximum", x, y)
def minimum(x, y, /): return _binary(ew.min_p, "minimum", x, y)


@staged_as_call("fmax")
def fmax(x, y, /):
    x, y = promote_args("fmax", x, y)
    return ew.select_n(isnan(y), ew.select_n(isnan(x), ew.max(x, y), y), x)


@staged_as_call("fmin")
def fmin(x, y, /):
    x, y = promote_args("fmin", x, y)
    return ew.select_n(isnan(y), ew.select_n(isnan(x), ew.min(x, y), y), x)


def arctan2(x, y, /):
    x, y = promote_args_inexact("arctan2", x, y)
    return ew.atan2(x, y)


atan2 = arctan2


@staged_as_call("hypot")
def hypot(x, y, /):
    """sqrt(x**2 + y**2) elementwise without overflow or underflow: the larger magnitude times
    sqrt(1 + (smaller/larger)**2). As in JAX the result is inf where either input is +-inf (even against nan), 0
    where both are 0, and its gradient at (0, 0) is the maximum's tie split (0.5 each, not nan). Complex inputs
    raise ValueError."""
    x, y = promote_args_inexact("hypot", x, y)
    if dtypes.is_complex(core.get_aval(x).dtype):
        raise ValueError("jnp.hypot is not defined for complex inputs; pass their abs() instead")
    x, y = ew.abs(x), ew.abs(y)
    inf = ew.bitwise_or(isposinf(x), isposinf(y))
    big, small = ew.max(x, y), ew.min(x, y)
    zero = ew.eq(big, _zero(big))
    ratio = ew.div(small, ew.select_n(zero, big, _full_like(big, 1)))
    out = ew.select_n(zero, ew.mul(big, ew.sqrt(ew.add(_one(big), ew.mul(ratio, ratio)))), big)
    return ew.select_n(inf, out, _full_like(out, np.inf))


def _without_posinf(x):
    """`x` with +inf replaced by 0: the exponent differences in the logaddexp derivatives stay finite (inf - inf
    would be nan) where an input and the result are both +inf."""
    return ew.select_n(isposinf(x), x, _full_like(x, 0))


def _logaddexp_impl(x, y, exp_fn, log1p_exp_fn):
    amax = ew.max(x, y)
    delta = ew.sub(x, y)
    # Where both are the same infinity (or either is nan), delta is nan; x + y is then that infinity (or nan).
    return ew.select_n(isnan(delta), ew.add(amax, log1p_exp_fn(ew.neg(ew.abs(delta)))), ew.add(x, y))


def _make_logaddexp(exp_fn, log1p_exp_fn):
    """log(exp(x) + exp(y)) (or the base-2 version) with JAX's derivative: t_x * exp(x - out) + t_y * exp(y - out)
    (+inf taken as 0 in both), so at a tie the weights are 1/2 each, not a sum of the max's and |x - y|'s
    one-sided choices."""
    @custom_jvp
    def fn(x, y):
        return _logaddexp_impl(x, y, exp_fn, log1p_exp_fn)

    @fn.defjvp
    def _jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        out = fn(x, y)
        wx = exp_fn(ew.sub(_without_posinf(x), _without_posinf(out)))
        wy = exp_fn(ew.sub(_without_posinf(y), _without_posinf(out)))
        return out, ew.add(ew.mul(tx, wx), ew.mul(ty, wy))

    return fn


_logaddexp_e = _make_logaddexp(ew.exp, lambda d: ew.log1p(ew.exp(d)))
_logaddexp_2 = _make_logaddexp(
    ew.exp2, lambda d: ew.mul(Array(np.asarray(1 / np.log(2), core.get_aval(d).dtype), True), ew.log1p(ew.exp2(d))))


def logaddexp(x, y, /):
    """log(exp(x) + exp(y)) computed stably (its derivative as in JAX: the softmax weights of x and y)."""
    x, y = promote_args_inexact("logaddexp", x, y)
    return _logaddexp_e(x, y)


def logaddexp2(x, y, /):
    """log2(2**x + 2**y) computed stably (its derivative as in JAX)."""
    x, y = promote_args_inexact("logaddexp2", x, y)
    return _logaddexp_2(x, y)


@staged_as_call("copysign")
def copysign(x, y, /):
    x, y = promote_args_inexact("copysign", x, y)
    return ew.select_n(signbit(y), ew.abs(x), ew.neg(ew.abs(x)))


@staged_as_call("signbit")
def signbit(x, /):
    x = asarray_arg(x, "signbit")
    dt = core.get_aval(x).dtype
    if dtypes.is_integer(dt):
        return ew.lt(x, _zero(x))
    if dt == dtypes.bool_:
        return ew.ne(x, x)
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[dt.itemsize]
    return ew.lt(ew.bitcast_convert_type(x, bits), Array(np.zeros((), bits), True))


def nextafter(x, y, /):
    x, y = promote_args_inexact("nextafter", x, y)
    return ew.nextafter(x, y)


def ldexp(x, y, /):
    x = asarray_arg(x)
    x2, = promote_args_inexact("ldexp", x)
    return ew.mul(x2, exp2(ew.convert_element_type(asarray_arg(y), core.get_aval(x2).dtype)))


@staged_as_call("heaviside")
def heaviside(x, h, /):
    x, h = promote_args_inexact("heaviside", x, h)
    zero = _zero(x)
    return ew.select_n(ew.lt(x, zero), ew.select_n(ew.gt(x, zero), h, _one(x) if not core.get_aval(x).shape
                                                    else st.full(core.get_aval(x).shape, 1, core.get_aval(x).dtype)),
                       zero if not core.get_aval(x).shape else st.full(core.get_aval(x).shape, 0,
                                                                        core.get_aval(x).dtype))


@staged_as_call("sinc")
def sinc(x, /):
    x = promote_args_inexact("sinc", x)[0]
    pix = ew.mul(x, Array(np.asarray(np.pi, core.get_aval(x).dtype), True))
    is_zero = ew.eq(x, _zero(x))
    safe = ew.select_n(is_zero, pix, _one(x) if not core.get_aval(x).shape else
                       st.full(core.get_aval(x).shape, 1, core.get_aval(x).dtype))
    return ew.select_n(is_zero, ew.div(ew.sin(safe), safe), _one(x) if not core.get_aval(x).shape else
                       st.full(core.get_aval(x).shape, 1, core.get_aval(x).dtype))


def deg2rad(x, /):
    x = promote_args_inexact("deg2rad", x)[0]
    return ew.mul(x, Array(np.asarray(np.pi / 180, core.get_aval(x).dtype), True))


def rad2deg(x, /):
    x = promote_args_inexact("rad2deg", x)[0]
    return ew.mul(x, Array(np.asarray(180 / np.pi, core.get_aval(x).dtype), True))


radians, degrees = deg2rad, rad2deg


def real(x, /):
    x = asarray_arg(x)
    return ew.real(x) if dtypes.is_complex(core.get_aval(x).dtype) else x


def imag(x, /):
    x = asarray_arg(x)
    if dtypes.is_complex(core.get_aval(x).dtype):
        return ew.imag(x)
    a = core.get_aval(x)
    return st.full(a.shape, 0, a.dtype)


@staged_as_call("angle")
def angle(z, deg: bool = False):
    z = asarray_arg(z)
    a = core.get_aval(z)
    if dtypes.is_complex(a.dtype):
        out = ew.atan2(ew.imag(z), ew.real(z))
    else:
        z = promote_args_inexact("angle", z)[0]
        out = ew.atan2(_zero(z) if not a.shape else st.full(a.shape, 0, core.get_aval(z).dtype), z)
    return rad2deg(out) if deg else out


# -- comparisons and logic ------------------------------------------------------------------------------------------

def equal(x, y, /): return _binary(ew.eq_p, "equal", x, y)
def not_equal(x, y, /): return _binary(ew.ne_p, "not_equal", x, y)
def less(x, y, /): return _binary(ew.lt_p, "less", x, y)
def less_equal(x, y, /): return _binary(ew.le_p, "less_equal", x, y)
def greater(x, y, /): return _binary(ew.gt_p, "greater", x, y)
def greater_equal(x, y, /): return _binary(ew.ge_p, "greater_equal", x, y)


def _to_bool(x):
    x = asarray_arg(x)
    return x if core.get_aval(x).dtype == dtypes.bool_ else ew.ne(x, _zero(x))


def logical_and(x, y, /): return _binary(ew.and_p, "logical_and", _to_bool(x), _to_bool(y))
def logical_or(x, y, /): return _binary(ew.or_p, "logical_or", _to_bool(x), _to_bool(y))
def logical_xor(x, y, /): return _binary(ew.xor_p, "logical_xor", _to_bool(x), _to_bool(y))
def logical_not(x, /): return ew.not_p.bind(_to_bool(x))


def _int_binary(prim, name, x, y):
    x, y = promote_args(name, x, y)
    dt = core.get_aval(x).dtype
    if not (dtypes.is_integer(dt) or dt == dtypes.bool_):
        raise TypeError(f"{name} requires integer or bool arguments, got {dt.name}")
    return prim.bind(x, y)


def bitwise_and(x, y, /): return _int_binary(ew.and_p, "bitwise_and", x, y)
def bitwise_or(x, y, /): return _int_binary(ew.or_p, "bitwise_or", x, y)
def bitwise_xor(x, y, /): return _int_binary(ew.xor_p, "bitwise_xor", x, y)
def left_shift(x, y, /): return _int_binary(ew.shift_left_p, "left_shift", x, y)


def right_shift(x, y, /):
    x, y = promote_args("right_shift", x, y)
    dt = core.get_aval(x).dtype
    prim = ew.shift_right_logical_p if dt.kind == "u" else ew.shift_right_arithmetic_p
    return prim.bind(x, y)


def invert(x, /):
    x = asarray_arg(x, "invert")
    return ew.not_p.bind(x)


bitwise_not = bitwise_invert = invert
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def isnan(x, /):
    x = asarray_arg(x, "isnan")
    if not dtypes.is_inexact(core.get_aval(x).dtype):
        return st.full(core.get_aval(x).shape, False, dtypes.bool_)
    return ew.ne(x, x)


@staged_as_call("isinf")
def isinf(x, /):
    x = asarray_arg(x, "isinf")
    dt = core.get_aval(x).dtype
    if not dtypes.is_inexact(dt):
        return st.full(core.get_aval(x).shape, False, dtypes.bool_)
    if dtypes.is_complex(dt):
        return logical_or(isinf(ew.real(x)), isinf(ew.imag(x)))
    return ew.eq(ew.abs(x), Array(np.asarray(np.inf, dt), True))


def isposinf(x, /):
    x = asarray_arg(x)
    return ew.eq(x, Array(np.asarray(np.inf, core.get_aval(x).dtype), True)) if dtypes.is_inexact(
        core.get_aval(x).dtype) else st.full(core.get_aval(x).shape, False, dtypes.bool_)


def isneginf(x, /):
    x = asarray_arg(x)
    return ew.eq(x, Array(np.asarray(-np.inf, core.get_aval(x).dtype), True)) if dtypes.is_inexact(
        core.get_aval(x).dtype) else st.full(core.get_aval(x).shape, False, dtypes.bool_)


def isfinite(x, /):
    x = asarray_arg(x, "isfinite")
    dt = core.get_aval(x).dtype
    if not dtypes.is_inexact(dt):
        return st.full(core.get_aval(x).shape, True, dtypes.bool_)
    if dtypes.is_complex(dt):
        return logical_and(isfinite(ew.real(x)), isfinite(ew.imag(x)))
    return ew.is_finite(x)


@staged_as_call("nan_to_num")
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = asarray_arg(x)
    dt = core.get_aval(x).dtype
    if not dtypes.is_inexact(dt):
        return x
    info = dtypes.finfo(dt)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = where(isnan(x), Array(np.asarray(nan, dt), True), x)
    out = where(isposinf(out), Array(np.asarray(posinf, dt), True), out)
    return where(isneginf(out), Array(np.asarray(neginf, dt), True), out)


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """Elementwise `x if condition else y` (broadcasting, promotion of x and y)."""
    if x is None and y is None:
        from . import sorting
        return sorting.nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("Either both or neither of the x and y arguments should be provided to jnp.where, got "
                         f"{x} and {y}.")
    return _where(condition, x, y)


@staged_as_call("_where")
def _where(condition, x, y):
    condition = _to_bool(condition)
    x, y = promote_args("where", x, y)
    from .util import broadcast_shapes, broadcast_to_shape
    full_shape = broadcast_shapes(core.get_aval(condition).shape, core.get_aval(x).shape, core.get_aval(y).shape)
    condition, x, y = (broadcast_to_shape(v, full_shape) for v in (condition, x, y))
    return ew.select_n(condition, y, x)


@staged_as_call("clip")
def clip(arr, min=None, max=None, /, *, a_min=None, a_max=None):  # noqa: A002
    """Clips `arr` to [min, max] (either may be None)."""
    lo = min if min is not None else a_min
    hi = max if max is not None else a_max
    arr = asarray_arg(arr, "clip")
    if lo is not None:
        arr = maximum(arr, lo)
    if hi is not None:
        arr = minimum(arr, hi)
    return arr


# -- the eager fast path of Array's operators ------------------------------------------------------------------------
# `x + y` on two Arrays of one dtype is the commonest eager operation; core.fast_binary_operator gives Array a
# shortcut for exactly the case where the functions above would promote nothing and bind the primitive once,
# falling back to them (through ArrayOps) otherwise. Per operator, the dtypes for which that holds (see above:
# bool `+`/`*` are logical, integer `/` promotes to float, bool `-` is an error).

def _install_fast_operators():
    from ..array_methods import ArrayOps
    every = dtypes.supported_dtypes
    numeric = every - {dtypes.bool_}
    inexact = frozenset(d for d in every if dtypes.is_inexact(d))
    table = {
        "__add__": (ew.add_p, numeric), "__sub__": (ew.sub_p, numeric), "__mul__": (ew.mul_p, numeric),
        "__truediv__": (ew.div_p, inexact),
        "__eq__": (ew.eq_p, every), "__ne__": (ew.ne_p, every), "__lt__": (ew.lt_p, every),
        "__le__": (ew.le_p, every), "__gt__": (ew.gt_p, every), "__ge__": (ew.ge_p, every),
    }
    for name, (prim, ok) in table.items():
        setattr(Array, name, core.fast_binary_operator(prim, getattr(ArrayOps, name), ok))


_install_fast_operators()

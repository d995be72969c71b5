"""NumPy's elementwise functions (`jnp.add`, `jnp.sin`, ...) as thin wrappers over lax primitives.

Each wrapper promotes its arguments with JAX's lattice and broadcasts them, then binds one primitive (or a short
composition). Transcendental functions of integers compute in the default float dtype, as in JAX.

Conventions of every function here (the docstrings do not repeat them):

- Arguments are array-likes: fluxion Arrays, tracers, NumPy arrays and scalars, Python scalars. Other values
  raise TypeError naming the function. Differs from JAX: Python lists and tuples are accepted (converted as
  `jnp.asarray` would), where JAX raises TypeError.
- Binary functions broadcast with NumPy's rules (ValueError naming both shapes otherwise) and promote with JAX's
  type lattice, in which Python scalars are weakly typed: `float32_array * 2.0` stays float32 and
  `int8_array + 1` stays int8 (where NumPy 2 would overflow-check the scalar).
- Results are new immutable Arrays: there is no `out=`, `where=`, `casting=` or `dtype=` keyword, and no in-place
  update. Without x64 mode the default float dtype is float32 and the default integer dtype int32, as in JAX.
- Under `fluxion.jit` each function traces to the same primitives; shapes are static.
"""

from __future__ import annotations

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..config import config
from ..core import Array
from ..custom_derivatives import custom_jvp
from ..lax import elementwise as ew
from ..lax import structural as st
from .util import check_out, asarray_arg, broadcast_shapes, broadcast_to_shape, promote_args, promote_args_inexact


def _same_array_pair(x, y) -> bool:
    return (type(x) is Array and type(y) is Array and x._value.dtype == y._value.dtype
            and x._value.shape == y._value.shape)


def _binary(prim, name, x, y):
    if _same_array_pair(x, y):
        return prim.bind(x, y)
    x, y = promote_args(name, x, y)
    return prim.bind(x, y)


def add(x, y, /):
    """`x + y`, elementwise; for bool inputs the logical OR (as NumPy and JAX define `+` on bools).

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules (Python scalars are weakly typed).

    Returns:
        An array of the broadcast shape in the promoted dtype.

    Raises:
        ValueError: if the shapes do not broadcast.

    Integer overflow wraps around (int8: 127 + 1 == -128).

    >>> import fluxion.numpy as jnp
    >>> jnp.add(jnp.array([1, 2], dtype=jnp.int8), 100)
    Array([101, 102], dtype=int8)
    >>> jnp.add(jnp.array([True, False]), jnp.array([True, False]))
    Array([ True, False], dtype=bool)
    """
    if _same_array_pair(x, y) and x._value.dtype != np.bool_:
        return ew.add_p.bind(x, y)
    x, y = promote_args("add", x, y)
    if core.get_aval(x).dtype == dtypes.bool_:
        return ew.or_p.bind(x, y)
    return ew.add_p.bind(x, y)


def subtract(x, y, /):
    """`x - y`, elementwise.

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules (Python scalars are weakly typed).

    Returns:
        An array of the broadcast shape in the promoted dtype.

    Raises:
        ValueError: if the shapes do not broadcast.
        TypeError: for two bool arguments (as in NumPy and JAX).

    >>> import fluxion.numpy as jnp
    >>> jnp.subtract(jnp.array([5.0, 1.0]), 2)
    Array([ 3., -1.], dtype=float32)
    """
    return _binary(ew.sub_p, "subtract", x, y)


def multiply(x, y, /):
    """`x * y`, elementwise; for bool inputs the logical AND.

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules (Python scalars are weakly typed).

    Returns:
        An array of the broadcast shape in the promoted dtype.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.multiply(jnp.array([1.5, 2.0]), jnp.array([[2.0], [3.0]]))
    Array([[3. , 4. ],
           [4.5, 6. ]], dtype=float32)
    """
    if _same_array_pair(x, y) and x._value.dtype != np.bool_:
        return ew.mul_p.bind(x, y)
    x, y = promote_args("multiply", x, y)
    if core.get_aval(x).dtype == dtypes.bool_:
        return ew.and_p.bind(x, y)
    return ew.mul_p.bind(x, y)


def true_divide(x, y, /):
    """`x / y`, elementwise; integer and bool inputs divide in the default float dtype (float32). `jnp.divide` is the
    same function.

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules (Python scalars are weakly typed).

    Returns:
        An inexact array of the broadcast shape; division by zero gives +-inf or nan (no warning).

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.true_divide(jnp.array([1, 2, 3]), 2)
    Array([0.5, 1. , 1.5], dtype=float32)
    >>> jnp.divide(1.0, jnp.array([0.0]))
    Array([inf], dtype=float32)
    """
    if _same_array_pair(x, y) and dtypes.is_inexact(x._value.dtype):
        return ew.div_p.bind(x, y)
    x, y = promote_args_inexact("true_divide", x, y)
    return ew.div_p.bind(x, y)


divide = true_divide


@staged_as_call("floor_divide")
def floor_divide(x, y, /):
    """`x // y`, elementwise: the quotient rounded toward negative infinity (Python semantics).

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules (Python scalars are weakly typed).

    Returns:
        An array of the broadcast shape in the promoted dtype. Float quotients are computed from `x - fmod(x, y)`, as
        CPython does, so `1.0 // 0.1` is 9.0. Division by zero follows JAX: for integers the truncating quotient of
        `lax.div` (-1 for signed, all ones for unsigned) adjusted down by one where the signs differ, so `5 // 0` and
        `-5 // 0` are -2 and `0 // 0` is -1; floats give +-inf or nan.

    Raises:
        TypeError: for bool or complex inputs.
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.floor_divide(jnp.array([7, -7]), 2)
    Array([ 3, -4], dtype=int32)
    >>> jnp.floor_divide(jnp.array([1.0]), 0.1)
    Array([9.], dtype=float32)
    """
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
    """`x % y`, elementwise, with the sign of the divisor (Python/NumPy semantics). `jnp.mod` is the same function.

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules (Python scalars are weakly typed).

    Returns:
        An array of the broadcast shape in the promoted dtype; integer `x % 0` is 0, as in JAX.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.remainder(jnp.array([7, -7]), 3)
    Array([1, 2], dtype=int32)
    >>> jnp.mod(jnp.array([7.5]), -2.0)
    Array([-0.5], dtype=float32)
    """
    x, y = promote_args("remainder", x, y)
    y = _int_divisor(x, y)
    r = ew.rem(x, y)
    zero = _zero(r)
    fix = ew.bitwise_and(ew.ne(r, zero), ew.ne(ew.lt(r, zero), ew.lt(y, _zero(y))))
    return ew.select_n(fix, r, ew.add(r, y))


mod = remainder


@staged_as_call("fmod")
def fmod(x, y, /):
    """The C-style remainder of `x / y`, elementwise: it has the sign of the dividend `x`.

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules (Python scalars are weakly typed).

    Returns:
        An array of the broadcast shape in the promoted dtype; integer `fmod(x, 0)` is 0, as in JAX.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.fmod(jnp.array([7, -7]), 3)
    Array([ 1, -1], dtype=int32)
    """
    x, y = promote_args("fmod", x, y)
    return ew.rem(x, _int_divisor(x, y))


@staged_as_call("divmod")
def divmod(x, y, /):  # noqa: A001
    """`(x // y, x % y)`, elementwise, as `floor_divide` and `remainder` compute them.

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules (Python scalars are weakly typed).

    Returns:
        A pair of arrays of the broadcast shape in the promoted dtype.

    Raises:
        TypeError: for bool or complex inputs.
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.divmod(jnp.array([7, -7]), 3)
    (Array([ 2, -3], dtype=int32), Array([1, 2], dtype=int32))
    """
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
    """`x ** y`, elementwise. `jnp.pow` is the same function; `float_power` converts to an inexact dtype first.

    Args:
        x: the base, array-like.
        y: the exponent. A static Python int lowers to `lax.integer_pow` (exact repeated multiplication, and no
            promotion of `x`); a float `x` with an integer-array `y` is not promoted either (so the derivative at
            `x == 0` for `y == 0` is 0, as in JAX); otherwise both are broadcast and promoted with JAX's rules and
            integer powers are computed by repeated squaring.

    Returns:
        An array of the broadcast shape.

    Raises:
        ValueError: for an integer `x` with a negative static integer exponent.
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.power(jnp.array([2, 3]), 3)
    Array([ 8, 27], dtype=int32)
    >>> jnp.power(jnp.array([4.0, 9.0]), 0.5)
    Array([2., 3.], dtype=float32)
    """
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


def float_power(x, y, /):
    """`x ** y`, elementwise, computed in an inexact dtype.

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules; integer and bool results of the
            promotion become the default float dtype (float32), as in JAX (NumPy uses float64).

    Returns:
        An inexact array of the broadcast shape.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.float_power(jnp.array([2]), 3)
    Array([8.], dtype=float32)
    """
    x, y = promote_args_inexact("float_power", x, y)
    return ew.pow(x, y)


def _unary(prim, name, x, inexact=True):
    x = asarray_arg(x, name)
    dt, weak = dtypes.dtype_and_weak(x)
    if inexact and not dtypes.is_inexact(dt):
        x = ew._convert_weak(x, dtypes.default_float_dtype(), weak)
    return prim.bind(x)


def negative(x, /):
    """Negation `-x`, elementwise.

    Args:
        x: array-like of any numeric dtype (no conversion to float).

    Returns:
        An array of `x`'s shape and dtype.

    Unsigned integers wrap around modulo 2**bits, as in NumPy and JAX.

    >>> import fluxion.numpy as jnp
    >>> jnp.negative(jnp.array([1, -2, 0]))
    Array([-1,  2,  0], dtype=int32)
    """
    return _unary(ew.neg_p, "negative", x, inexact=False)
def positive(x, /):
    """`+x`: returns `x` as an array (no copy is needed, arrays are immutable).

    Args:
        x: array-like of any numeric dtype (no conversion to float).

    Returns:
        An array of `x`'s shape and dtype.

    >>> import fluxion.numpy as jnp
    >>> jnp.positive(jnp.array([1.5, -2.0]))
    Array([ 1.5, -2. ], dtype=float32)
    """
    return asarray_arg(x, "positive")
def sign(x, /):
    """The sign of `x`, elementwise: -1, 0 or +1 in `x`'s dtype (nan for nan).

    Args:
        x: array-like of any numeric dtype (no conversion to float).

    Returns:
        An array of `x`'s shape and dtype.

    For complex `x` the result is `x / |x|` (0 at 0), as in JAX and NumPy 2.

    >>> import fluxion.numpy as jnp
    >>> jnp.sign(jnp.array([-3.0, 0.0, 2.5]))
    Array([-1.,  0.,  1.], dtype=float32)
    """
    return _unary(ew.sign_p, "sign", x, inexact=False)
def exp(x, /):
    """The natural exponential `e**x`, elementwise.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.exp(jnp.array([0.0, 1.0]))   # XLA's float32 exp, as JAX's (NumPy's gives e one ulp high here)
    Array([1.       , 2.7182817], dtype=float32)
    """
    return _unary(ew.exp_p, "exp", x)
def exp2(x, /):
    """`2**x`, elementwise.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.exp2(jnp.array([0, 3, -1]))
    Array([1. , 8. , 0.5], dtype=float32)
    """
    return _unary(ew.exp2_p, "exp2", x)
def expm1(x, /):
    """`exp(x) - 1`, elementwise, accurate for `x` near zero.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.expm1(jnp.array([0.0, 1e-10]))
    Array([0.e+00, 1.e-10], dtype=float32)
    """
    # (Complex operands: the backend computes XLA's expm1, see backends/eager/complex_math.py.)
    return _unary(ew.expm1_p, "expm1", x)
def log(x, /):
    """The natural logarithm, elementwise.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    log(0) is -inf and the log of a negative real is nan (no warning is emitted, unlike NumPy).

    >>> import fluxion.numpy as jnp
    >>> jnp.log(jnp.array([1.0, 0.0, -1.0]))
    Array([  0., -inf,  nan], dtype=float32)
    """
    return _unary(ew.log_p, "log", x)
def log1p(x, /):
    """`log(1 + x)`, elementwise, accurate for `x` near zero.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.log1p(jnp.array([0.0, 1e-10]))
    Array([0.e+00, 1.e-10], dtype=float32)
    """
    return _unary(ew.log1p_p, "log1p", x)
def sqrt(x, /):
    """The non-negative square root, elementwise (nan for negative reals).

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.sqrt(jnp.array([4, 9, 2]))
    Array([2.       , 3.       , 1.4142135], dtype=float32)
    """
    return _unary(ew.sqrt_p, "sqrt", x)
def cbrt(x, /):
    """The real cube root, elementwise (negative for negative `x`).

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.cbrt(jnp.array([8.0, -27.0]))
    Array([ 2.       , -2.9999998], dtype=float32)
    """
    return _unary(ew.cbrt_p, "cbrt", x)
def sin(x, /):
    """Sine of `x` in radians, elementwise.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.sin(jnp.array([0.0, 1.0]))
    Array([0.      , 0.841471], dtype=float32)
    """
    return _unary(ew.sin_p, "sin", x)
def cos(x, /):
    """Cosine of `x` in radians, elementwise.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.cos(jnp.array([0.0, 1.0]))
    Array([1.       , 0.5403023], dtype=float32)
    """
    return _unary(ew.cos_p, "cos", x)
def tan(x, /):
    """Tangent of `x` in radians, elementwise.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.tan(jnp.array([0.0, 1.0]))
    Array([0.       , 1.5574077], dtype=float32)
    """
    return _unary(ew.tan_p, "tan", x)
def arcsin(x, /):
    """Inverse sine in radians, elementwise (nan outside [-1, 1] for real inputs).

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    `jnp.asin` is the same function (Array API name).

    >>> import fluxion.numpy as jnp
    >>> jnp.arcsin(jnp.array([0.0, 1.0]))
    Array([0.       , 1.5707964], dtype=float32)
    """
    return _unary(ew.asin_p, "arcsin", x)
def arccos(x, /):
    """Inverse cosine in radians, elementwise (nan outside [-1, 1] for real inputs).

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    `jnp.acos` is the same function (Array API name).

    >>> import fluxion.numpy as jnp
    >>> jnp.arccos(jnp.array([1.0, 0.0]))
    Array([0.       , 1.5707964], dtype=float32)
    """
    return _unary(ew.acos_p, "arccos", x)
def arctan(x, /):
    """Inverse tangent in radians, elementwise, in (-pi/2, pi/2).

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    `jnp.atan` is the same function (Array API name).

    >>> import fluxion.numpy as jnp
    >>> jnp.arctan(jnp.array([0.0, 1.0]))
    Array([0.       , 0.7853982], dtype=float32)
    """
    return _unary(ew.atan_p, "arctan", x)
def sinh(x, /):
    """Hyperbolic sine, elementwise.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.sinh(jnp.array([0.0, 1.0]))
    Array([0.       , 1.1752012], dtype=float32)
    """
    return _unary(ew.sinh_p, "sinh", x)
def cosh(x, /):
    """Hyperbolic cosine, elementwise.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.cosh(jnp.array([0.0, 1.0]))
    Array([1.       , 1.5430807], dtype=float32)
    """
    return _unary(ew.cosh_p, "cosh", x)
def tanh(x, /):
    """Hyperbolic tangent, elementwise.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.tanh(jnp.array([0.0, 1.0]))
    Array([0.       , 0.7615942], dtype=float32)
    """
    return _unary(ew.tanh_p, "tanh", x)
def arcsinh(x, /):
    """Inverse hyperbolic sine, elementwise.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    `jnp.asinh` is the same function.

    >>> import fluxion.numpy as jnp
    >>> jnp.arcsinh(jnp.array([0.0, 1.0]))
    Array([0.       , 0.8813736], dtype=float32)
    """
    return _unary(ew.asinh_p, "arcsinh", x)
@staged_as_call("arccosh")
def arccosh(x, /):
    """Inverse hyperbolic cosine, elementwise (nan below 1 for real inputs).

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    `jnp.acosh` is the same function.

    >>> import fluxion.numpy as jnp
    >>> jnp.arccosh(jnp.array([1.0, 2.0]))
    Array([0.      , 1.316958], dtype=float32)
    """
    return _unary(ew.acosh_p, "arccosh", x)
def arctanh(x, /):
    """Inverse hyperbolic tangent, elementwise (+-inf at +-1, nan beyond for real inputs).

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    `jnp.atanh` is the same function.

    >>> import fluxion.numpy as jnp
    >>> jnp.arctanh(jnp.array([0.0, 0.5]))
    Array([0.        , 0.54930615], dtype=float32)
    """
    return _unary(ew.atanh_p, "arctanh", x)
def conjugate(x, /):
    """Complex conjugate, elementwise; real inputs are returned unchanged (same dtype, as in JAX).

    Args:
        x: array-like of any dtype.

    Returns:
        An array of `x`'s shape and dtype. `jnp.conj` is the same function.

    >>> import fluxion.numpy as jnp
    >>> jnp.conjugate(jnp.array([1 + 2j, 3 - 1j]))
    Array([1.-2.j, 3.+1.j], dtype=complex64)
    >>> jnp.conj(jnp.array([1, 2]))
    Array([1, 2], dtype=int32)
    """
    return asarray_arg(x) if not dtypes.is_complex(core.get_aval(asarray_arg(x)).dtype) \
    else _unary(ew.conj_p, "conjugate", x)


asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh
conj = conjugate


def _by_real_constant(op, x, c: float):
    """`op(x, c)` (`ew.div` or `ew.mul`) for a real constant `c` rounded to `x`'s (real) dtype; complex `x` part by
    part, so log(0) = -inf + 0j stays -inf + 0j (a complex division by c + 0j would make the imaginary part nan)."""
    dt = core.get_aval(x).dtype
    if dtypes.is_complex(dt):
        c_arr = Array(np.asarray(c, dtypes.finfo(dt).dtype), True)
        return ew.complex(op(ew.real(x), c_arr), op(ew.imag(x), c_arr))
    return op(x, Array(np.asarray(c, dt), True))


def log2(x, /):
    """The base-2 logarithm, elementwise (computed as `log(x) / log(2)`, which, as in JAX, is the product with the
    reciprocal of `log(2)` rounded to the dtype).

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.log2(jnp.array([1, 8]))
    Array([0., 3.], dtype=float32)
    """
    x = _unary(ew.log_p, "log2", x)
    return _by_real_constant(ew.div, x, np.log(2))


def log10(x, /):
    """The base-10 logarithm, elementwise (computed as `log(x) * (1 / log(10))`, the constant computed in float64 and
    rounded once to the dtype, as JAX does).

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.log10(jnp.array([1.0, 100.0]))
    Array([0., 2.], dtype=float32)
    """
    x = _unary(ew.log_p, "log10", x)
    return _by_real_constant(ew.mul, x, 1 / np.log(10))


def absolute(x, /):
    """Absolute value (magnitude for complex), elementwise.

    Args:
        x: array-like of any dtype. Bool and unsigned inputs are returned unchanged.

    Returns:
        An array of `x`'s shape; `x`'s dtype, except that complex inputs give the matching real dtype
        (complex64 -> float32). The most negative signed integer maps to itself (two's complement wrap), as in
        NumPy. `jnp.abs` is the same function.

    >>> import fluxion.numpy as jnp
    >>> jnp.absolute(jnp.array([-2, 0, 3]))
    Array([2, 0, 3], dtype=int32)
    >>> jnp.abs(jnp.array([3 + 4j]))
    Array([5.], dtype=float32)
    """
    x = asarray_arg(x, "absolute")
    dt = core.get_aval(x).dtype
    if dt == dtypes.bool_ or dtypes.is_integer(dt) and dt.kind == "u":
        return x
    return ew.abs_p.bind(x)


abs = absolute  # noqa: A001


def fabs(x, /):
    """Absolute value for real inputs, elementwise, always in a floating dtype.

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    Raises:
        TypeError: for a complex `x` (as NumPy and JAX; `abs` gives the magnitude).

    >>> import fluxion.numpy as jnp
    >>> jnp.fabs(jnp.array([-2, 3]))
    Array([2., 3.], dtype=float32)
    """
    x = asarray_arg(x, "fabs")
    if dtypes.is_complex(core.get_aval(x).dtype):
        raise TypeError(f"fabs: complex input is not supported (got dtype {core.get_aval(x).dtype}); use abs for "
                        "the magnitude.")
    return _unary(ew.abs_p, "fabs", x)


def square(x, /):
    """`x * x`, elementwise (lowered to `integer_pow(x, 2)`).

    Args:
        x: array-like of any numeric dtype (no conversion to float); bool becomes the default int dtype, as in JAX.

    Returns:
        An array of `x`'s shape and dtype (int32 for bool).

    Integers wrap on overflow.

    >>> import fluxion.numpy as jnp
    >>> jnp.square(jnp.array([-3, 2]))
    Array([9, 4], dtype=int32)
    """
    x = asarray_arg(x, "square")
    if core.get_aval(x).dtype == dtypes.bool_:
        x = ew._convert_weak(x, dtypes.default_int_dtype(), core.get_aval(x).weak_type)
    return ew.integer_pow(x, 2)


def reciprocal(x, /):
    """`1 / x`, elementwise, in an inexact dtype.

    Args:
        x: array-like; integer and bool inputs are converted to the default float dtype (float32) first, as in JAX
            (`reciprocal(2)` is 0.5, `reciprocal(0)` is inf).

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    >>> import fluxion.numpy as jnp
    >>> jnp.reciprocal(jnp.array([2.0, 4.0]))
    Array([0.5 , 0.25], dtype=float32)
    """
    x = asarray_arg(x, "reciprocal")
    dt, weak = dtypes.dtype_and_weak(x)
    if not dtypes.is_inexact(dt):
        x = ew._convert_weak(x, dtypes.default_float_dtype(), weak)
    return ew.div(_one(x), x)


def _round_float(prim, name, x):
    x = asarray_arg(x, name)
    if not dtypes.is_inexact(core.get_aval(x).dtype):
        return x
    return prim.bind(x)


def floor(x, /):
    """The largest integer not greater than `x`, elementwise.

    Args:
        x: array-like of any numeric dtype (no conversion to float).

    Returns:
        An array of `x`'s shape and dtype.

    Integer and bool inputs are returned unchanged (same dtype); floats stay floats, as in JAX.

    >>> import fluxion.numpy as jnp
    >>> jnp.floor(jnp.array([-1.5, 0.5, 2.0]))
    Array([-2.,  0.,  2.], dtype=float32)
    """
    return _round_float(ew.floor_p, "floor", x)
def ceil(x, /):
    """The smallest integer not less than `x`, elementwise.

    Args:
        x: array-like of any numeric dtype (no conversion to float).

    Returns:
        An array of `x`'s shape and dtype.

    Integer and bool inputs are returned unchanged (same dtype); floats stay floats, as in JAX.

    >>> import fluxion.numpy as jnp
    >>> jnp.ceil(jnp.array([-1.5, 0.5, 2.0]))
    Array([-1.,  1.,  2.], dtype=float32)
    """
    return _round_float(ew.ceil_p, "ceil", x)


@staged_as_call("trunc")
def trunc(x, /):
    """Rounds toward zero, elementwise (drops the fractional part).

    Args:
        x: array-like of any numeric dtype (no conversion to float).

    Returns:
        An array of `x`'s shape and dtype.

    Integer and bool inputs are returned unchanged. `jnp.fix` is the same function.

    >>> import fluxion.numpy as jnp
    >>> jnp.trunc(jnp.array([-1.7, 1.7]))
    Array([-1.,  1.], dtype=float32)
    """
    x = asarray_arg(x, "trunc")
    if not dtypes.is_inexact(core.get_aval(x).dtype):
        return x
    return ew.select_n(ew.lt(x, _zero(x)), ew.floor(x), ew.ceil(x))


fix = trunc


@staged_as_call("rint")
def rint(x, /):
    """Rounds to the nearest integer, halves to even, elementwise.

    Args:
        x: array-like of any numeric dtype (no conversion to float).

    Returns:
        An array of `x`'s shape and dtype.

    Integer and bool inputs are returned unchanged; floats stay floats.

    >>> import fluxion.numpy as jnp
    >>> jnp.rint(jnp.array([0.5, 1.5, -2.5]))
    Array([ 0.,  2., -2.], dtype=float32)
    """
    x = asarray_arg(x, "rint")
    if not dtypes.is_inexact(core.get_aval(x).dtype):
        return x
    return ew.round(x, 1)


@staged_as_call("round")
def round(a, decimals: int = 0, out=None):  # noqa: A001
    """Rounds `a` to `decimals` decimal places, halves to even (NumPy semantics). `jnp.around` is the same function.

    Args:
        a: array-like.
        decimals: the number of decimals (negative values round to tens, hundreds, ...).
        out: must be None (NotImplementedError otherwise, as in JAX).

    Returns:
        An array of `a`'s shape and dtype. Integers are returned unchanged for `decimals >= 0`.

    >>> import fluxion.numpy as jnp
    >>> jnp.round(jnp.array([0.5, 1.5, 2.675]), 1)
    Array([0.5, 1.5, 2.7], dtype=float32)
    >>> jnp.round(jnp.array([0.5, 1.5, 2.5]))
    Array([0., 2., 2.], dtype=float32)
    >>> jnp.around(jnp.array([1234, 1250]), -2)
    Array([1200, 1300], dtype=int32)
    """
    check_out(out, "round")
    a = asarray_arg(a, "round")
    dt = core.get_aval(a).dtype
    if dtypes.issubdtype(dt, np.complexfloating):
        # As JAX: the real and imaginary parts are rounded separately.
        return ew.complex(round(ew.real(a), decimals), round(ew.imag(a), decimals))
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


def maximum(x, y, /):
    """Elementwise maximum of `x` and `y`.

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules.

    Returns:
        An array of the broadcast shape in the promoted dtype. A nan in either input propagates (use `fmax` to ignore
        nans).

    >>> import fluxion.numpy as jnp
    >>> jnp.maximum(jnp.array([1.0, 5.0]), 3)
    Array([3., 5.], dtype=float32)
    """
    return _binary(ew.max_p, "maximum", x, y)
def minimum(x, y, /):
    """Elementwise minimum of `x` and `y`.

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules.

    Returns:
        An array of the broadcast shape in the promoted dtype. A nan in either input propagates (use `fmin` to ignore
        nans).

    >>> import fluxion.numpy as jnp
    >>> jnp.minimum(jnp.array([1.0, 5.0]), 3)
    Array([1., 3.], dtype=float32)
    """
    return _binary(ew.min_p, "minimum", x, y)


@staged_as_call("fmax")
def fmax(x, y, /):
    """Elementwise maximum of `x` and `y` that ignores nans.

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules.

    Returns:
        An array of the broadcast shape in the promoted dtype. Where exactly one input is nan the other is returned; nan
        only where both are. Equal inputs give `y` (so `fmax(0., -0.)` is -0., as in JAX; `maximum` gives +0.).

    >>> import fluxion.numpy as jnp
    >>> jnp.fmax(jnp.array([1.0, jnp.nan, jnp.nan]), jnp.array([2.0, 0.0, jnp.nan]))
    Array([ 2.,  0., nan], dtype=float32)
    """
    x, y = promote_args("fmax", x, y)
    # x where it is the larger or y is nan, else y: ties (-0 and +0 included) give y, as JAX's formula does.
    return ew.select_n(greater(x, y) | isnan(y), y, x)


@staged_as_call("fmin")
def fmin(x, y, /):
    """Elementwise minimum of `x` and `y` that ignores nans.

    Args:
        x, y: array-likes, broadcast together and promoted with JAX's rules.

    Returns:
        An array of the broadcast shape in the promoted dtype. Where exactly one input is nan the other is returned; nan
        only where both are. Equal inputs give `y` (so `fmin(-0., 0.)` is 0., as in JAX; `minimum` gives -0.).

    >>> import fluxion.numpy as jnp
    >>> jnp.fmin(jnp.array([1.0, jnp.nan, jnp.nan]), jnp.array([2.0, 0.0, jnp.nan]))
    Array([ 1.,  0., nan], dtype=float32)
    """
    x, y = promote_args("fmin", x, y)
    return ew.select_n(less(x, y) | isnan(y), y, x)


def arctan2(x, y, /):
    """The angle of the point `(y, x) = (x1, x2)`: `arctan(x1 / x2)` with the quadrant chosen from both signs.

    Args:
        x: the y coordinate (numerator), array-like.
        y: the x coordinate (denominator), array-like. Both are broadcast and promoted to an inexact dtype
            (integers to float32).

    Returns:
        Angles in radians in [-pi, pi], of the broadcast shape. `jnp.atan2` is the same function.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.arctan2(jnp.array([1.0, -1.0]), jnp.array([0.0, 0.0]))
    Array([ 1.5707964, -1.5707964], dtype=float32)
    """
    x, y = promote_args_inexact("arctan2", x, y)
    return ew.atan2(x, y)


atan2 = arctan2


@staged_as_call("hypot")
def hypot(x, y, /):
    """`sqrt(x**2 + y**2)`, elementwise, without intermediate overflow or underflow: computed as the larger magnitude
    times `sqrt(1 + (smaller/larger)**2)`.

    Args:
        x, y: real array-likes, broadcast and promoted to an inexact dtype.

    Returns:
        An array of the broadcast shape. As in JAX the result is inf where either input is +-inf (even against nan) and
        0 where both are 0; its gradient at (0, 0) splits the tie of the maximum (0.5 each, not nan).

    Raises:
        ValueError: for complex inputs.
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.hypot(jnp.array([3.0, 1e30]), jnp.array([4.0, 1e30]))
    Array([5.0000000e+00, 1.4142135e+30], dtype=float32)
    """
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
    """`log(exp(x) + exp(y))`, elementwise, computed stably as `max(x, y) + log1p(exp(-|x - y|))`.

    Args:
        x, y: array-likes, broadcast and promoted to an inexact dtype.

    Returns:
        An array of the broadcast shape. Its derivative is JAX's: the softmax weights of `x` and `y` (1/2 each at a
        tie).

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.logaddexp(jnp.array([0.0, 1000.0]), jnp.array([0.0, 1000.0]))
    Array([6.9314718e-01, 1.0006932e+03], dtype=float32)
    """
    x, y = promote_args_inexact("logaddexp", x, y)
    return _logaddexp_e(x, y)


def logaddexp2(x, y, /):
    """`log2(2**x + 2**y)`, elementwise, computed stably (the base-2 `logaddexp`).

    Args:
        x, y: array-likes, broadcast and promoted to an inexact dtype.

    Returns:
        An array of the broadcast shape (derivative as in JAX).

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.logaddexp2(jnp.array([1.0, 3.0]), jnp.array([1.0, 3.0]))
    Array([2., 4.], dtype=float32)
    """
    x, y = promote_args_inexact("logaddexp2", x, y)
    return _logaddexp_2(x, y)


@staged_as_call("copysign")
def copysign(x, y, /):
    """`|x|` with the sign bit of `y`, elementwise (so a `-0.0` in `y` gives a negative result).

    Args:
        x, y: array-likes, broadcast and promoted to an inexact dtype (integers to float32).

    Returns:
        An array of the broadcast shape and promoted dtype.

    >>> import fluxion.numpy as jnp
    >>> jnp.copysign(jnp.array([1.0, 2.0, 3.0]), jnp.array([-1.0, 0.0, -0.0]))
    Array([-1.,  2., -3.], dtype=float32)
    """
    x, y = promote_args_inexact("copysign", x, y)
    return ew.select_n(signbit(y), ew.abs(x), ew.neg(ew.abs(x)))


@staged_as_call("signbit")
def signbit(x, /):
    """Whether the sign bit of `x` is set, elementwise (True for -0.0 and negative nans).

    Args:
        x: array-like of any dtype.

    Returns:
        A bool array of `x`'s shape. Integers: `x < 0`; bool: all False.

    >>> import fluxion.numpy as jnp
    >>> jnp.signbit(jnp.array([-1.0, -0.0, 0.0, 2.0]))
    Array([ True,  True, False, False], dtype=bool)
    """
    x = asarray_arg(x, "signbit")
    dt = core.get_aval(x).dtype
    if dtypes.is_integer(dt):
        return ew.lt(x, _zero(x))
    if dt == dtypes.bool_:
        return ew.ne(x, x)
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[dt.itemsize]
    return ew.lt(ew.bitcast_convert_type(x, bits), Array(np.zeros((), bits), True))


def nextafter(x, y, /):
    """The next representable floating value after `x` in the direction of `y`, elementwise.

    Args:
        x, y: array-likes, broadcast and promoted to an inexact dtype (integers to float32).

    Returns:
        An array of the broadcast shape and promoted dtype.

    >>> import fluxion.numpy as jnp
    >>> jnp.nextafter(jnp.float32(1.0), jnp.float32(2.0)) - 1.0
    Array(1.1920929e-07, dtype=float32)
    """
    x, y = promote_args_inexact("nextafter", x, y)
    return ew.nextafter(x, y)


def ldexp(x, y, /):
    """`x * 2**y`, elementwise.

    Args:
        x: mantissas, array-like (integers are converted to float32).
        y: integer exponents, array-like; converted to `x`'s float dtype and broadcast against `x`.

    Returns:
        An array of the broadcast shape in `x`'s inexact dtype.

    Unlike NumPy, `y` is not checked to be an integer: a float `y` is used as is.

    >>> import fluxion.numpy as jnp
    >>> jnp.ldexp(jnp.array([1.0, 3.0]), jnp.array([2, -1]))
    Array([4. , 1.5], dtype=float32)
    """
    x = asarray_arg(x)
    x2, = promote_args_inexact("ldexp", x)
    return ew.mul(x2, exp2(ew.convert_element_type(asarray_arg(y), core.get_aval(x2).dtype)))


@staged_as_call("heaviside")
def heaviside(x, h, /):
    """The Heaviside step: 0 where `x < 0`, `h` where `x == 0`, 1 where `x > 0`.

    Args:
        x: array-like.
        h: the value at zero, array-like; broadcast with `x`. Both are promoted to an inexact dtype.

    Returns:
        An array of the broadcast shape and promoted dtype; a nan in `x` gives nan (as NumPy and JAX).

    >>> import fluxion.numpy as jnp
    >>> jnp.heaviside(jnp.array([-1.0, 0.0, 2.0]), 0.5)
    Array([0. , 0.5, 1. ], dtype=float32)
    """
    x, h = promote_args_inexact("heaviside", x, h, rank_promotion=False)
    zero = _zero(x)
    step = ew.select_n(ew.lt(x, zero), ew.select_n(ew.gt(x, zero), h, _one(x) if not core.get_aval(x).shape
                                                    else st.full(core.get_aval(x).shape, 1, core.get_aval(x).dtype)),
                       zero if not core.get_aval(x).shape else st.full(core.get_aval(x).shape, 0,
                                                                        core.get_aval(x).dtype))
    return ew.select_n(ew.ne(x, x), step, x)  # x != x only for nan: it passes through


@staged_as_call("sinc")
def sinc(x, /):
    """The normalized sinc function `sin(pi x) / (pi x)`, elementwise, with `sinc(0) = 1`.

    Args:
        x: array-like; integers are converted to float32.

    Returns:
        An array of `x`'s shape in its inexact dtype. Its derivative at 0 is 0 (the 0 branch is selected
        without dividing by zero, so gradients stay finite).

    >>> import fluxion.numpy as jnp
    >>> jnp.sinc(jnp.array([0.0, 0.5, 1.0]))
    Array([ 1.0000000e+00,  6.3661975e-01, -2.7827534e-08], dtype=float32)
    """
    x = promote_args_inexact("sinc", x)[0]
    pix = ew.mul(x, Array(np.asarray(np.pi, core.get_aval(x).dtype), True))
    is_zero = ew.eq(x, _zero(x))
    safe = ew.select_n(is_zero, pix, _one(x) if not core.get_aval(x).shape else
                       st.full(core.get_aval(x).shape, 1, core.get_aval(x).dtype))
    return ew.select_n(is_zero, ew.div(ew.sin(safe), safe), _one(x) if not core.get_aval(x).shape else
                       st.full(core.get_aval(x).shape, 1, core.get_aval(x).dtype))


def deg2rad(x, /):
    """Converts degrees to radians, elementwise (`x * pi / 180`).

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    `jnp.radians` is the same function.

    >>> import fluxion.numpy as jnp
    >>> jnp.deg2rad(jnp.array([180.0, 90.0]))
    Array([3.1415927, 1.5707964], dtype=float32)
    """
    x = promote_args_inexact("deg2rad", x)[0]
    return ew.mul(x, Array(np.asarray(np.pi / 180, core.get_aval(x).dtype), True))


def rad2deg(x, /):
    """Converts radians to degrees, elementwise (`x * 180 / pi`).

    Args:
        x: array-like. Integer and bool inputs are first converted to the default float dtype (float32), as in JAX;
            floating and complex inputs keep their dtype.

    Returns:
        An array of `x`'s shape and (converted) dtype; a weakly typed input gives a weakly typed result.

    `jnp.degrees` is the same function.

    >>> import fluxion.numpy as jnp
    >>> jnp.rad2deg(jnp.array([0.0, 1.0]))
    Array([ 0.     , 57.29578], dtype=float32)
    """
    x = promote_args_inexact("rad2deg", x)[0]
    return ew.mul(x, Array(np.asarray(180 / np.pi, core.get_aval(x).dtype), True))


radians, degrees = deg2rad, rad2deg


def real(x, /):
    """The real part of `x`; real inputs are returned unchanged.

    Args:
        x: array-like of any dtype.

    Returns:
        For complex `x`, an array of the matching real dtype (complex64 -> float32); otherwise `x` itself as an
        array. Unlike NumPy there is no writable view: arrays are immutable.

    >>> import fluxion.numpy as jnp
    >>> jnp.real(jnp.array([1 + 2j, 3 - 4j]))
    Array([1., 3.], dtype=float32)
    """
    x = asarray_arg(x)
    return ew.real(x) if dtypes.is_complex(core.get_aval(x).dtype) else x


def imag(x, /):
    """The imaginary part of `x`; zeros of `x`'s dtype for real inputs.

    Args:
        x: array-like of any dtype.

    Returns:
        For complex `x`, an array of the matching real dtype; otherwise zeros of `x`'s shape and dtype.

    >>> import fluxion.numpy as jnp
    >>> jnp.imag(jnp.array([1 + 2j, 3 - 4j]))
    Array([ 2., -4.], dtype=float32)
    >>> jnp.imag(jnp.array([1.0, 2.0]))
    Array([0., 0.], dtype=float32)
    """
    x = asarray_arg(x)
    if dtypes.is_complex(core.get_aval(x).dtype):
        return ew.imag(x)
    a = core.get_aval(x)
    return st.full(a.shape, 0, a.dtype)


@staged_as_call("angle")
def angle(z, deg: bool = False):
    """The argument (phase angle) of complex `z`, elementwise: `arctan2(imag(z), real(z))`.

    Args:
        z: array-like; real inputs are promoted to an inexact dtype and give 0 or pi.
        deg: if True, return degrees instead of radians.

    Returns:
        A real floating array of `z`'s shape.

    >>> import fluxion.numpy as jnp
    >>> jnp.angle(jnp.array([1j, -1.0, 1.0]))
    Array([1.5707964, 3.1415927, 0.       ], dtype=float32)
    >>> jnp.angle(jnp.array([1j]), deg=True)
    Array([90.], dtype=float32)
    """
    z = asarray_arg(z)
    a = core.get_aval(z)
    if dtypes.is_complex(a.dtype):
        out = ew.atan2(ew.imag(z), ew.real(z))
    else:
        z = promote_args_inexact("angle", z)[0]
        out = ew.atan2(_zero(z) if not a.shape else st.full(a.shape, 0, core.get_aval(z).dtype), z)
    return rad2deg(out) if deg else out


# -- comparisons and logic ------------------------------------------------------------------------------------------

def equal(x, y, /):
    """`x == y`, elementwise.

    Args:
        x, y: array-likes, broadcast together and promoted to a common dtype with JAX's rules before comparing
            (a Python scalar is weakly typed, so `int8_array < 3` compares in int8).

    Returns:
        A bool array of the broadcast shape.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.equal(jnp.array([1, 2, 3]), 2)
    Array([False,  True, False], dtype=bool)
    """
    return _binary(ew.eq_p, "equal", x, y)
def not_equal(x, y, /):
    """`x != y`, elementwise (True where either side is nan).

    Args:
        x, y: array-likes, broadcast together and promoted to a common dtype with JAX's rules before comparing
            (a Python scalar is weakly typed, so `int8_array < 3` compares in int8).

    Returns:
        A bool array of the broadcast shape.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.not_equal(jnp.array([1, 2, 3]), 2)
    Array([ True, False,  True], dtype=bool)
    """
    return _binary(ew.ne_p, "not_equal", x, y)
def less(x, y, /):
    """`x < y`, elementwise.

    Args:
        x, y: array-likes, broadcast together and promoted to a common dtype with JAX's rules before comparing
            (a Python scalar is weakly typed, so `int8_array < 3` compares in int8).

    Returns:
        A bool array of the broadcast shape.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.less(jnp.array([1, 2, 3]), 2)
    Array([ True, False, False], dtype=bool)
    """
    return _binary(ew.lt_p, "less", x, y)
def less_equal(x, y, /):
    """`x <= y`, elementwise.

    Args:
        x, y: array-likes, broadcast together and promoted to a common dtype with JAX's rules before comparing
            (a Python scalar is weakly typed, so `int8_array < 3` compares in int8).

    Returns:
        A bool array of the broadcast shape.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.less_equal(jnp.array([1, 2, 3]), 2)
    Array([ True,  True, False], dtype=bool)
    """
    return _binary(ew.le_p, "less_equal", x, y)
def greater(x, y, /):
    """`x > y`, elementwise.

    Args:
        x, y: array-likes, broadcast together and promoted to a common dtype with JAX's rules before comparing
            (a Python scalar is weakly typed, so `int8_array < 3` compares in int8).

    Returns:
        A bool array of the broadcast shape.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.greater(jnp.array([1, 2, 3]), 2)
    Array([False, False,  True], dtype=bool)
    """
    return _binary(ew.gt_p, "greater", x, y)
def greater_equal(x, y, /):
    """`x >= y`, elementwise.

    Args:
        x, y: array-likes, broadcast together and promoted to a common dtype with JAX's rules before comparing
            (a Python scalar is weakly typed, so `int8_array < 3` compares in int8).

    Returns:
        A bool array of the broadcast shape.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.greater_equal(jnp.array([1, 2, 3]), 2)
    Array([False,  True,  True], dtype=bool)
    """
    return _binary(ew.ge_p, "greater_equal", x, y)


def _to_bool(x):
    x = asarray_arg(x)
    return x if core.get_aval(x).dtype == dtypes.bool_ else ew.ne(x, _zero(x))


def logical_and(x, y, /):
    """Logical AND of the truth values of `x` and `y`, elementwise.

    Args:
        x, y: array-likes of any dtype; nonzero values count as True. They are broadcast together.

    Returns:
        A bool array of the broadcast shape.

    >>> import fluxion.numpy as jnp
    >>> jnp.logical_and(jnp.array([1, 0, 2]), jnp.array([True, True, False]))
    Array([ True, False, False], dtype=bool)
    """
    return _binary(ew.and_p, "logical_and", _to_bool(x), _to_bool(y))
def logical_or(x, y, /):
    """Logical OR of the truth values of `x` and `y`, elementwise.

    Args:
        x, y: array-likes of any dtype; nonzero values count as True. They are broadcast together.

    Returns:
        A bool array of the broadcast shape.

    >>> import fluxion.numpy as jnp
    >>> jnp.logical_or(jnp.array([1, 0, 0]), jnp.array([False, True, False]))
    Array([ True,  True, False], dtype=bool)
    """
    return _binary(ew.or_p, "logical_or", _to_bool(x), _to_bool(y))
def logical_xor(x, y, /):
    """Logical XOR of the truth values of `x` and `y`, elementwise.

    Args:
        x, y: array-likes of any dtype; nonzero values count as True. They are broadcast together.

    Returns:
        A bool array of the broadcast shape.

    >>> import fluxion.numpy as jnp
    >>> jnp.logical_xor(jnp.array([1, 0, 2]), jnp.array([True, True, False]))
    Array([False,  True,  True], dtype=bool)
    """
    return _binary(ew.xor_p, "logical_xor", _to_bool(x), _to_bool(y))
def logical_not(x, /):
    """Logical NOT of the truth value of `x` (nonzero is True), elementwise.

    Args:
        x: array-like of any dtype.

    Returns:
        A bool array of `x`'s shape.

    >>> import fluxion.numpy as jnp
    >>> jnp.logical_not(jnp.array([0, 1, 2]))
    Array([ True, False, False], dtype=bool)
    """
    return ew.not_p.bind(_to_bool(x))


def _int_binary(prim, name, x, y):
    x, y = promote_args(name, x, y)
    dt = core.get_aval(x).dtype
    if not (dtypes.is_integer(dt) or dt == dtypes.bool_):
        raise TypeError(f"{name} requires integer or bool arguments, got {dt.name}")
    return prim.bind(x, y)


def bitwise_and(x, y, /):
    """Bitwise AND of integers (logical AND of bools), elementwise.

    Args:
        x, y: integer or bool array-likes, broadcast together and promoted with JAX's rules.

    Returns:
        An array of the broadcast shape in the promoted dtype.

    Raises:
        TypeError: if the promoted dtype is floating or complex.
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.bitwise_and(jnp.array([12, 10]), 6)
    Array([4, 2], dtype=int32)
    """
    return _int_binary(ew.and_p, "bitwise_and", x, y)
def bitwise_or(x, y, /):
    """Bitwise OR of integers (logical OR of bools), elementwise.

    Args:
        x, y: integer or bool array-likes, broadcast together and promoted with JAX's rules.

    Returns:
        An array of the broadcast shape in the promoted dtype.

    Raises:
        TypeError: if the promoted dtype is floating or complex.
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.bitwise_or(jnp.array([12, 10]), 6)
    Array([14, 14], dtype=int32)
    """
    return _int_binary(ew.or_p, "bitwise_or", x, y)
def bitwise_xor(x, y, /):
    """Bitwise XOR of integers (logical XOR of bools), elementwise.

    Args:
        x, y: integer or bool array-likes, broadcast together and promoted with JAX's rules.

    Returns:
        An array of the broadcast shape in the promoted dtype.

    Raises:
        TypeError: if the promoted dtype is floating or complex.
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.bitwise_xor(jnp.array([12, 10]), 6)
    Array([10, 12], dtype=int32)
    """
    return _int_binary(ew.xor_p, "bitwise_xor", x, y)
def left_shift(x, y, /):
    """Shifts the bits of `x` left by `y`, elementwise (`x * 2**y` modulo the width).

    Args:
        x, y: integer or bool array-likes, broadcast together and promoted with JAX's rules.

    Returns:
        An array of the broadcast shape in the promoted dtype.

    Raises:
        TypeError: if the promoted dtype is floating or complex.
        ValueError: if the shapes do not broadcast.
    Shifts by the bit width or more give 0, as in XLA. `jnp.bitwise_left_shift` is the same
    function.

    >>> import fluxion.numpy as jnp
    >>> jnp.left_shift(jnp.array([1, 3]), 2)
    Array([ 4, 12], dtype=int32)
    """
    return _int_binary(ew.shift_left_p, "left_shift", x, y)


def right_shift(x, y, /):
    """Shifts the bits of `x` right by `y`, elementwise: arithmetic (sign-filling) for signed integers,
    logical for unsigned ones.

    Args:
        x, y: integer array-likes, broadcast together and promoted with JAX's rules.

    Returns:
        An array of the broadcast shape in the promoted dtype. `jnp.bitwise_right_shift` is the same function.

    Raises:
        ValueError: if the shapes do not broadcast.

    Unlike `left_shift`, a float or complex argument is not rejected up front (the primitive fails on it instead).

    >>> import fluxion.numpy as jnp
    >>> jnp.right_shift(jnp.array([8, -8]), 2)
    Array([ 2, -2], dtype=int32)
    """
    x, y = promote_args("right_shift", x, y)
    dt = core.get_aval(x).dtype
    prim = ew.shift_right_logical_p if dt.kind == "u" else ew.shift_right_arithmetic_p
    return prim.bind(x, y)


def invert(x, /):
    """Bitwise NOT of integers (logical NOT of bools), elementwise.

    Args:
        x: integer or bool array-like.

    Returns:
        An array of `x`'s shape and dtype. `jnp.bitwise_not` and `jnp.bitwise_invert` are the same function.

    >>> import fluxion.numpy as jnp
    >>> jnp.invert(jnp.array([0, 5], dtype=jnp.uint8))
    Array([255, 250], dtype=uint8)
    >>> jnp.invert(jnp.array([True, False]))
    Array([False,  True], dtype=bool)
    """
    x = asarray_arg(x, "invert")
    return ew.not_p.bind(x)


bitwise_not = bitwise_invert = invert
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def isnan(x, /):
    """Whether `x` is nan, elementwise (all False for integer and bool inputs).

    Args:
        x: array-like of any dtype.

    Returns:
        A bool array of `x`'s shape.

    >>> import fluxion.numpy as jnp
    >>> jnp.isnan(jnp.array([1.0, jnp.nan, jnp.inf]))
    Array([False,  True, False], dtype=bool)
    """
    x = asarray_arg(x, "isnan")
    if not dtypes.is_inexact(core.get_aval(x).dtype):
        return st.full(core.get_aval(x).shape, False, dtypes.bool_)
    return ew.ne(x, x)


@staged_as_call("isinf")
def isinf(x, /):
    """Whether `x` is +inf or -inf, elementwise (complex: either part infinite).

    Args:
        x: array-like of any dtype.

    Returns:
        A bool array of `x`'s shape.

    >>> import fluxion.numpy as jnp
    >>> jnp.isinf(jnp.array([1.0, jnp.nan, -jnp.inf]))
    Array([False, False,  True], dtype=bool)
    """
    x = asarray_arg(x, "isinf")
    dt = core.get_aval(x).dtype
    if not dtypes.is_inexact(dt):
        return st.full(core.get_aval(x).shape, False, dtypes.bool_)
    if dtypes.is_complex(dt):
        return logical_or(isinf(ew.real(x)), isinf(ew.imag(x)))
    return ew.eq(ew.abs(x), Array(np.asarray(np.inf, dt), True))


def isposinf(x, /):
    """Whether `x` is +inf, elementwise (all False for integer and bool inputs).

    Args:
        x: array-like of any dtype.

    Returns:
        A bool array of `x`'s shape.

    >>> import fluxion.numpy as jnp
    >>> jnp.isposinf(jnp.array([jnp.inf, -jnp.inf, 0.0]))
    Array([ True, False, False], dtype=bool)
    """
    x = asarray_arg(x)
    return ew.eq(x, Array(np.asarray(np.inf, core.get_aval(x).dtype), True)) if dtypes.is_inexact(
        core.get_aval(x).dtype) else st.full(core.get_aval(x).shape, False, dtypes.bool_)


def isneginf(x, /):
    """Whether `x` is -inf, elementwise (all False for integer and bool inputs).

    Args:
        x: array-like of any dtype.

    Returns:
        A bool array of `x`'s shape.

    >>> import fluxion.numpy as jnp
    >>> jnp.isneginf(jnp.array([jnp.inf, -jnp.inf, 0.0]))
    Array([False,  True, False], dtype=bool)
    """
    x = asarray_arg(x)
    return ew.eq(x, Array(np.asarray(-np.inf, core.get_aval(x).dtype), True)) if dtypes.is_inexact(
        core.get_aval(x).dtype) else st.full(core.get_aval(x).shape, False, dtypes.bool_)


def isfinite(x, /):
    """Whether `x` is neither inf nor nan, elementwise (complex: both parts finite).

    Args:
        x: array-like of any dtype.

    Returns:
        A bool array of `x`'s shape.

    >>> import fluxion.numpy as jnp
    >>> jnp.isfinite(jnp.array([1.0, jnp.nan, jnp.inf]))
    Array([ True, False, False], dtype=bool)
    """
    x = asarray_arg(x, "isfinite")
    dt = core.get_aval(x).dtype
    if not dtypes.is_inexact(dt):
        return st.full(core.get_aval(x).shape, True, dtypes.bool_)
    if dtypes.is_complex(dt):
        return logical_and(isfinite(ew.real(x)), isfinite(ew.imag(x)))
    return ew.is_finite(x)


@staged_as_call("nan_to_num")
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Replaces nan, +inf and -inf in `x` with finite (or given) values.

    Args:
        x: array-like. Integer and bool inputs are returned unchanged.
        copy: accepted for NumPy compatibility and ignored (results are always new immutable arrays).
        nan: the value for nans (default 0.0).
        posinf: the value for +inf (default: the largest finite value of `x`'s dtype).
        neginf: the value for -inf (default: the most negative finite value of `x`'s dtype).

    Returns:
        An array of `x`'s shape and dtype.

    >>> import fluxion.numpy as jnp
    >>> jnp.nan_to_num(jnp.array([jnp.nan, jnp.inf, -jnp.inf, 1.0]))
    Array([ 0.0000000e+00,  3.4028235e+38, -3.4028235e+38,  1.0000000e+00],      dtype=float32)
    >>> jnp.nan_to_num(jnp.array([jnp.nan, jnp.inf]), nan=-1.0, posinf=9.0)
    Array([-1.,  9.], dtype=float32)
    """
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
    """Elementwise selection: `x` where `condition` is true, `y` elsewhere. With neither `x` nor `y`, the indices of the
    nonzero elements of `condition` (`nonzero`).

    Args:
        condition: array-like; nonzero values count as True.
        x, y: array-likes, broadcast with `condition` and promoted to one dtype with JAX's rules.
        size, fill_value: only for the one-argument form, as in `nonzero` (a static output size for use under jit).

    Returns:
        An array of the broadcast shape, or a tuple of index arrays for the one-argument form.

    Raises:
        TypeError: if exactly one of `x` and `y` is given (as JAX).
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.where(jnp.array([True, False, True]), jnp.array([1, 2, 3]), 0)
    Array([1, 0, 3], dtype=int32)
    >>> jnp.where(jnp.array([0, 3, 4]))
    (Array([1, 2], dtype=int32),)
    """
    if x is None and y is None:
        from . import sorting
        return sorting.nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        # JAX checks the operands are array-like first, so a lone None is a TypeError there.
        raise TypeError(f"jnp.where: got {'x' if y is None else 'y'} but {'y' if y is None else 'x'} is None; "
                        "give both x and y (elementwise selection) or neither (the indices of nonzero elements).")
    return _where(condition, x, y)


@staged_as_call("_where")
def _where(condition, x, y):
    condition = _to_bool(condition)
    x, y = promote_args("where", x, y, rank_promotion=False)
    from .util import broadcast_shapes, broadcast_to_shape
    full_shape = broadcast_shapes(core.get_aval(condition).shape, core.get_aval(x).shape, core.get_aval(y).shape)
    condition, x, y = (broadcast_to_shape(v, full_shape) for v in (condition, x, y))
    return ew.select_n(condition, y, x)


@staged_as_call("clip")
def clip(arr, /, min=None, max=None):  # noqa: A002
    """`arr` limited to the interval [min, max] elementwise (`minimum(maximum(arr, min), max)`).

    Args:
        arr: array-like.
        min, max: the bounds (array-likes broadcast against `arr`, or None for no bound), by position or keyword.
            NumPy's older keywords `a_min`/`a_max` raise TypeError, as in JAX 0.10 (which removed them).

    Returns:
        An array of the broadcast shape in the promoted dtype.

    Raises:
        ValueError: if the shapes do not broadcast.

    >>> import fluxion.numpy as jnp
    >>> jnp.clip(jnp.array([-2, 0, 5]), 0, 3)
    Array([0, 0, 3], dtype=int32)
    >>> jnp.clip(jnp.array([-2.0, 7.0]), None, 1.0)
    Array([-2.,  1.], dtype=float32)
    """
    lo, hi = min, max
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
    # Complex division is XLA's algorithm in the backend (eager/complex_math.py), not NumPy's ufunc.
    inexact = frozenset(d for d in every if dtypes.is_inexact(d) and np.dtype(d).kind != "c")
    table = {
        "__add__": (ew.add_p, numeric), "__sub__": (ew.sub_p, numeric), "__mul__": (ew.mul_p, numeric),
        "__truediv__": (ew.div_p, inexact),
        "__eq__": (ew.eq_p, every), "__ne__": (ew.ne_p, every), "__lt__": (ew.lt_p, every),
        "__le__": (ew.le_p, every), "__gt__": (ew.gt_p, every), "__ge__": (ew.ge_p, every),
    }
    fast = {name: core.fast_binary_operator(prim, getattr(ArrayOps, name), ok) for name, (prim, ok) in table.items()}

    def install(rank_promotion):
        # The shortcut leaves broadcasting to NumPy, so it would let rank promotion through: while the option is
        # "warn" or "raise", Array's operators take the full path (which checks it in promote_args) instead.
        for name in table:
            setattr(Array, name, fast[name] if rank_promotion == "allow" else getattr(ArrayOps, name))
    install(config.jax_numpy_rank_promotion)
    config.add_hook("jax_numpy_rank_promotion", install)


_install_fast_operators()

"""More elementwise functions: floating-point decomposition (`frexp`, `modf`, `spacing`), integer arithmetic
(`gcd`, `lcm`, `bitwise_count`), the Bessel function `i0`, `iscomplex`/`isreal`, and the Array-API name `pow`.
"""

from __future__ import annotations

import math

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..core import Array
from ..lax import control_flow as cf
from ..lax import elementwise as ew
from .ufuncs import power as pow  # noqa: F401  (the Array-API name of `power`)
from .util import arraylike_arg, promote_args, promote_args_inexact


def _c(x, v):
    return Array(np.asarray(v, core.get_aval(x).dtype), True)


def _int_bits(dt):
    return {2: np.int16, 4: np.int32, 8: np.int64}[np.dtype(dt).itemsize]


@staged_as_call("frexp")
def frexp(x, /):
    """Mantissa and exponent with `x == mantissa * 2**exponent`, 0.5 <= |mantissa| < 1 (mantissa `x` and exponent 0
    for zeros, infinities and NaN); subnormals are normalized first. The exponent is int32.

    Raises:
      TypeError: complex input.

    >>> import fluxion.numpy as jnp
    >>> jnp.frexp(jnp.array([8.0, -0.75, 0.0]))
    (Array([ 0.5 , -0.75,  0.  ], dtype=float32), Array([4, 0, 0], dtype=int32))
    """
    from .ufuncs import isfinite, logical_or, where
    x, = promote_args_inexact("frexp", arraylike_arg(x, "frexp"))
    dt = core.get_aval(x).dtype
    if dtypes.is_complex(dt):
        raise TypeError("frexp does not support complex-valued inputs")
    info = dtypes.finfo(dt)
    nmant, nexp, bias = int(info.nmant), int(info.nexp), int(info.maxexp) - 1
    idt = _int_bits(dt)
    # Subnormals: scale into the normal range first, then correct the exponent.
    tiny = ew.lt(ew.abs(x), _c(x, float(info.smallest_normal)))
    scale = nmant + 2
    xs = where(tiny, ew.mul(x, _c(x, 2.0 ** scale)), x)
    bits = ew.bitcast_convert_type(xs, idt)
    exp_field = ew.bitwise_and(ew.shift_right_logical(bits, _c(bits, nmant)), _c(bits, (1 << nexp) - 1))
    exponent = ew.sub(exp_field, _c(exp_field, bias - 1))
    exponent = where(tiny, ew.sub(exponent, _c(exponent, scale)), exponent)
    # Keep the sign and fraction bits; set the exponent field to that of 0.5.
    keep = ~(((1 << nexp) - 1) << nmant)
    mant_bits = ew.bitwise_or(ew.bitwise_and(bits, _c(bits, keep)),
                              _c(bits, (bias - 1) << nmant))
    mantissa = ew.bitcast_convert_type(mant_bits, dt)
    special = logical_or(ew.eq(x, _c(x, 0)), ew.not_p.bind(isfinite(x)))
    mantissa = where(special, x, mantissa)
    exponent = where(special, 0, ew.convert_element_type(exponent, np.int32))
    return mantissa, ew.convert_element_type(exponent, np.int32)


@staged_as_call("modf")
def modf(x, /, out=None):
    """Fractional and integral parts of `x`, both with the sign of `x` (integers compute in the default float).

    >>> import fluxion.numpy as jnp
    >>> jnp.modf(jnp.array([2.5, -1.25]))
    (Array([ 0.5 , -0.25], dtype=float32), Array([ 2., -1.], dtype=float32))
    """
    from .ufuncs import trunc
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
    x, = promote_args_inexact("modf", arraylike_arg(x, "modf"))
    whole = trunc(x)
    return ew.sub(x, whole), whole


def spacing(x, /):
    """Distance from `x` to the next representable value away from zero (negative for negative `x`; NaN for
    infinities), as NumPy defines it (JAX 0.10 returns a positive spacing for some negative float16 values).

    Raises:
      TypeError: complex input.

    >>> import fluxion.numpy as jnp
    >>> jnp.spacing(jnp.array([1.0, -1.0], dtype=jnp.float32))
    Array([ 1.1920929e-07, -1.1920929e-07], dtype=float32)
    """
    from .ufuncs import copysign, nextafter
    x, = promote_args_inexact("spacing", arraylike_arg(x, "spacing"))
    if dtypes.is_complex(core.get_aval(x).dtype):
        raise TypeError("spacing is not defined for complex inputs.")
    out = ew.sub(nextafter(x, copysign(_c(x, np.inf), x)), x)
    # JAX's result is strongly typed even for a Python scalar argument.
    return ew._convert_weak(out, core.get_aval(out).dtype, False)


def _int_args(name, x1, x2):
    x1, x2 = promote_args(name, arraylike_arg(x1, name), arraylike_arg(x2, name, 1), rank_promotion=False)
    dt = core.get_aval(x1).dtype
    if not dtypes.is_integer(dt) and dt != dtypes.bool_:
        raise ValueError(f"Arguments to jax.numpy.{name} must be integers.")
    return x1, x2


def gcd(x1, x2, /):
    """Greatest common divisor of |x1| and |x2| (gcd(0, 0) = 0), by Euclid's algorithm in a while loop.

    Raises:
      ValueError: non-integer arguments (as JAX).

    >>> import fluxion.numpy as jnp
    >>> jnp.gcd(jnp.array([12, -18, 0]), 8)
    Array([4, 2, 8], dtype=int32)
    """
    from .ufuncs import absolute, where
    from .util import broadcast_shapes, broadcast_to_shape
    x1, x2 = _int_args("gcd", x1, x2)
    shape = broadcast_shapes(core.get_aval(x1).shape, core.get_aval(x2).shape)
    a, b = broadcast_to_shape(absolute(x1), shape), broadcast_to_shape(absolute(x2), shape)

    def cond(c):
        from .reductions import any as _any
        return _any(ew.ne(c[1], _c(c[1], 0)))

    def body(c):
        a, b = c
        nz = ew.ne(b, _c(b, 0))
        safe_b = where(nz, b, 1)
        return where(nz, b, a), where(nz, ew.rem(a, safe_b), b)
    out = cf.while_loop(cond, body, (a, b))[0]
    # The loop carry is strongly typed; the result keeps the (weak) type of the promoted arguments.
    dt, weak = dtypes.dtype_and_weak(x1)
    return ew._convert_weak(out, dt, weak) if weak else out


def lcm(x1, x2, /):
    """Least common multiple of |x1| and |x2| (0 if either is 0).

    Raises:
      ValueError: non-integer arguments (as JAX).

    >>> import fluxion.numpy as jnp
    >>> jnp.lcm(jnp.array([4, 6, 0]), 6)
    Array([12,  6,  0], dtype=int32)
    """
    from .ufuncs import absolute, floor_divide, multiply, where
    x1, x2 = _int_args("lcm", x1, x2)
    d = gcd(x1, x2)
    zero = ew.eq(d, _c(d, 0))
    return where(zero, 0, multiply(absolute(x1), floor_divide(absolute(x2), where(zero, 1, d))))


def bitwise_count(x, /):
    """Number of 1 bits in |x| (uint8, as NumPy and JAX).

    Raises:
      TypeError: non-integer input.

    >>> import fluxion.numpy as jnp
    >>> jnp.bitwise_count(jnp.array([0, 7, -1], dtype=jnp.int8))
    Array([0, 3, 1], dtype=uint8)
    """
    from .ufuncs import absolute
    x = arraylike_arg(x, "bitwise_count")
    dt = core.get_aval(x).dtype
    if not (dtypes.is_integer(dt) or dt == dtypes.bool_):
        raise TypeError(f"bitwise_count requires integer or bool input, got {dt}")
    if dt == dtypes.bool_:
        return ew.convert_element_type(x, np.uint8)
    return ew.convert_element_type(ew.population_count(absolute(x)), np.uint8)


@staged_as_call("iscomplex")
def iscomplex(x):
    """True where `x` has a nonzero imaginary part (False everywhere for real input).

    >>> import fluxion.numpy as jnp
    >>> jnp.iscomplex(jnp.array([1 + 0j, 2j]))
    Array([False,  True], dtype=bool)
    """
    from .ufuncs import imag
    x = arraylike_arg(x, "iscomplex")
    i = imag(x)
    return _like_weak(ew.ne(i, _c(i, 0)), x)


@staged_as_call("isreal")
def isreal(x):
    """True where `x` has a zero imaginary part (True everywhere for real input).

    >>> import fluxion.numpy as jnp
    >>> jnp.isreal(jnp.array([1 + 0j, 2j]))
    Array([ True, False], dtype=bool)
    """
    from .ufuncs import imag
    x = arraylike_arg(x, "isreal")
    i = imag(x)
    return _like_weak(ew.eq(i, _c(i, 0)), x)


def _like_weak(out, x):
    """JAX keeps a Python scalar's weak type through these comparisons (a weakly typed bool)."""
    return ew._convert_weak(out, dtypes.bool_, True) if core.get_aval(x).weak_type else out


# Terms of the two expansions of the modified Bessel function I0 (Abramowitz & Stegun 9.6.12 and 9.7.1): the
# power series sum_k (x/2)^(2k) / (k!)^2 converges for all x and is used below _I0_SWITCH; above it the
# asymptotic series e^x / sqrt(2 pi x) * sum_k ((2k-1)!!)^2 / (k! (8x)^k) is accurate to rounding with these terms.
_I0_SWITCH = 30.0
_I0_SERIES_TERMS = 64
_I0_ASYMPTOTIC_TERMS = 18


@staged_as_call("i0")
def i0(x):
    """Modified Bessel function of the first kind of order zero, I0(x), for real `x` (integers compute in the
    default float). Differentiable (its derivative is I1 up to rounding).

    Reference: Abramowitz & Stegun, Handbook of Mathematical Functions, 9.6.12 and 9.7.1.

    Raises:
      ValueError: complex input.

    >>> import fluxion.numpy as jnp
    >>> jnp.i0(jnp.array([0.0]))
    Array([1.], dtype=float32)
    """
    from .ufuncs import where
    x, = promote_args_inexact("i0", arraylike_arg(x, "i0"))
    if dtypes.is_complex(core.get_aval(x).dtype):
        raise ValueError("i0 does not support complex dtype.")
    ax = ew.abs(x)
    small = ew.lt(ax, _c(ax, _I0_SWITCH))
    xs = where(small, ax, 0)
    q = ew.mul(ew.mul(xs, xs), _c(xs, 0.25))
    term = _c(xs, 1.0)
    total = term
    for k in range(1, _I0_SERIES_TERMS):
        term = ew.mul(term, ew.div(q, _c(q, float(k * k))))
        total = ew.add(total, term)
    xl = where(small, _I0_SWITCH, ax)
    inv8x = ew.div(_c(xl, 1.0), ew.mul(xl, _c(xl, 8.0)))
    term = _c(xl, 1.0)
    acc = term
    for k in range(1, _I0_ASYMPTOTIC_TERMS):
        term = ew.mul(term, ew.mul(inv8x, _c(xl, (2 * k - 1) ** 2 / k)))
        acc = ew.add(acc, term)
    # e^x / sqrt(2 pi x), with e^x split in two factors so that it does not overflow before the division.
    half = ew.exp(ew.mul(xl, _c(xl, 0.5)))
    large = ew.mul(ew.mul(half, ew.div(half, ew.sqrt(ew.mul(xl, _c(xl, 2 * math.pi))))), acc)
    return where(small, total, large)

"""Elementwise primitives: unary and binary math, comparisons, bitwise ops, `select_n`, conversions.

Operands of an n-ary elementwise primitive have one dtype and either the output's shape or rank 0 (a scalar is
broadcast, as JAX allows for literals: `add a 1.0:f32[]`). `fluxion.numpy` inserts explicit `broadcast_in_dim`
equations for any other broadcasting, so the rules here only ever handle "same shape or scalar".

The first section holds what the primitives share: the shape/dtype rule factory, the batching rule, the public
wrapper factories (lax-level: no dtype promotion; Python scalars adopt the other operand's dtype) and the JVP
helpers. Then each primitive has one block: its definition, public wrapper, JVP, transpose (if linear).

Each derivative rule is written in the algebraic form JAX uses (`d sqrt = t * (0.5 / ans)`, not `t / (2 * ans)`), in
JAX's operand order: float operations round differently for different forms, and the same form makes `grad` give
JAX's bits (`tests/lax/test_grad_bits.py`).
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np

from .. import core, dtypes
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, array_ops, batching
from ..interpreters.ad import Zero
from .utils import standard_primitive


# --------------------------------------------------------------------------------------------------------------
# Shared rules
# --------------------------------------------------------------------------------------------------------------

def _broadcast_shapes(name: str, avals) -> tuple:
    shape = ()
    for a in avals:
        if a.shape:
            if shape and a.shape != shape:
                shapes = ", ".join(str(x.shape) for x in avals)
                raise TypeError(f"{name} got incompatible shapes for broadcasting: {shapes}")
            shape = a.shape
    return shape


def _check_same_dtypes(name: str, avals) -> np.dtype:
    dt = avals[0].dtype
    for a in avals[1:]:
        if a.dtype != dt:
            got = ", ".join(x.dtype.name for x in avals)
            raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {got}. (Tip: jnp.{name} "
                            "and the operators promote dtypes; lax functions do not.)")
    return dt


_KIND_CHECKS: dict[str, Callable[[np.dtype], bool]] = {
    "float": dtypes.is_inexact,
    "int": lambda d: dtypes.is_integer(d) or d == dtypes.bool_,
    "any": lambda d: True,
    "num": lambda d: d != dtypes.bool_,
    "realfloat": lambda d: dtypes.is_float(d),
}


def _nary_abstract_eval(name: str, kind: str, out_dtype: Callable | None = None) -> Callable:
    """The shape/dtype rule of an n-ary elementwise op: one dtype of `kind`, same shapes or scalars."""
    check = _KIND_CHECKS[kind]

    def abstract_eval(*avals, **params):
        dt = _check_same_dtypes(name, avals)
        if not check(dt):
            raise TypeError(f"lax.{name} does not accept dtype {dt.name}")
        shape = _broadcast_shapes(name, avals)
        return ShapedArray(shape, out_dtype(dt) if out_dtype else dt)

    return abstract_eval


def _real_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dt == dtypes.complex128 else np.dtype(np.float32) if dt.kind == "c" else dt


def _bool_dtype(dt: np.dtype) -> np.dtype:
    return dtypes.bool_


def _elementwise_batch_rule(prim):
    """The batching rule of an elementwise primitive with same-shape-or-scalar operands."""
    def rule(vals, dims, **params):
        logical = [core.get_aval(v).shape if d is None else
                   core.get_aval(v).shape[:d] + core.get_aval(v).shape[d + 1:] for v, d in zip(vals, dims)]
        out_shape = builtins.max(logical, key=len)
        batched = [d for d in dims if d is not None]
        size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
        first = batched[0]
        simple = all(d == first for d in batched) and all(
            (shp == out_shape) if d is not None else (len(shp) == 0) for shp, d in zip(logical, dims))
        if simple:
            return prim.bind(*vals, **params), first
        from .structural import broadcast_in_dim
        new_vals = []
        for v, d, shp in zip(vals, dims, logical):
            if d is None:
                new_vals.append(v if len(shp) == 0 else
                                broadcast_in_dim(v, (size,) + out_shape, tuple(range(1, len(out_shape) + 1))))
            else:
                v = batching.moveaxis(v, d, 0, size)
                if len(shp) != len(out_shape):
                    v = broadcast_in_dim(v, (size,) + out_shape, (0,))
                new_vals.append(v)
        return prim.bind(*new_vals, **params), 0

    return rule


# Every primitive `_nary` made (sharding_rules.py gives them the elementwise sharding rule).
ELEMENTWISE_PRIMITIVES: list = []


def _nary(name: str, kind: str, out_dtype: Callable | None = None, weak_type="all"):
    """Creates an n-ary elementwise primitive with the shared shape/dtype rule and batching rule."""
    prim = standard_primitive(name, _nary_abstract_eval(name, kind, out_dtype), weak_type=weak_type)
    batching.primitive_batchers[prim] = _elementwise_batch_rule(prim)
    ELEMENTWISE_PRIMITIVES.append(prim)
    return prim

_PY_SCALARS = (builtins.bool, builtins.int, builtins.float, builtins.complex)


def _lift_scalars(*args):
    """Converts Python scalars among `args` to arrays of the dtype of the first array operand (weakly typed)."""
    ref = None
    for a in args:
        if not isinstance(a, _PY_SCALARS):
            ref = a
            break
    out = []
    for a in args:
        if isinstance(a, _PY_SCALARS) and not isinstance(a, np.generic):
            if ref is None:
                out.append(core.to_array(a))
            else:
                out.append(core.Array(np.asarray(a, dtype=core.get_aval(ref).dtype), True))
        elif isinstance(a, (np.ndarray, np.generic, list, tuple)):
            out.append(core.to_array(a))
        else:
            out.append(a)
    return out


def _check(prim, *args):
    """Runs the shape/dtype rule for a user-facing lax call (binding skips it eagerly, so wrappers validate)."""
    abstract_eval_rules[prim](*[core.get_aval(a) for a in args])


def _make_unary(prim):
    def op(x):
        (x,) = _lift_scalars(x)
        _check(prim, x)
        return prim.bind(x)
    op.__name__ = prim.name
    op.__doc__ = f"Elementwise `{prim.name}` (the `{prim.name}` primitive). Shape and dtype are preserved."
    return op


def _make_binary(prim):
    def op(x, y):
        x, y = _lift_scalars(x, y)
        _check(prim, x, y)
        return prim.bind(x, y)
    op.__name__ = prim.name
    op.__doc__ = (f"Elementwise `{prim.name}` of two arrays of one dtype and equal shapes (or scalars); no "
                  "promotion (use fluxion.numpy for NumPy-style promotion and broadcasting).")
    return op


def _bcast_like(t, ans):
    """Broadcasts a scalar tangent contribution to the output's shape."""
    ts, s = core.get_aval(t).shape, core.get_aval(ans).shape
    if ts == s:
        return t
    from .structural import broadcast_in_dim
    return broadcast_in_dim(t, s, ())


def _unbroadcast(ct, operand_aval: ShapedArray):
    """Sums a cotangent over the dimensions a scalar operand was broadcast along."""
    if type(ct) is Zero:
        return ct
    if core.get_aval(ct).shape == operand_aval.shape:
        return ct
    from .reductions import reduce_sum
    return reduce_sum(ct, tuple(range(core.get_aval(ct).ndim)))


def defjvp_broadcasting(prim, *jvp_rules: Callable | None) -> None:
    """Registers the JVP of an elementwise primitive whose operands may be scalars among arrays.

    Each rule is `rule(t, ans, *primals, **params)` (None: no derivative for that operand) giving its operand's
    contribution to the output tangent; a contribution of a scalar operand is broadcast to the output's shape
    before the contributions are summed (`ad.defjvp2` does the rest).
    """
    def broadcasting(rule):
        return lambda t, ans, *primals, **params: _bcast_like(rule(t, ans, *primals, **params), ans)

    ad.defjvp2(prim, *[None if r is None else broadcasting(r) for r in jvp_rules])


def _const(x, v):
    """The weakly typed scalar `v` in the dtype of `x` (an array, tracer or UndefinedPrimal)."""
    return core.Array(np.asarray(v, core.get_aval(x).dtype), True)


def _one(x):
    return _const(x, 1)


def _zeros_like(x):
    from .structural import full
    a = core.get_aval(x)
    return full(a.shape, 0, a.dtype)


# --------------------------------------------------------------------------------------------------------------
# Unary operations
# --------------------------------------------------------------------------------------------------------------

neg_p = _nary("neg", "num")
neg = _make_unary(neg_p)
ad.deflinear(neg_p, lambda ct, x: [neg(ct)])

sign_p = _nary("sign", "num")
sign = _make_unary(sign_p)
ad.defjvp_zero(sign_p)

floor_p = _nary("floor", "realfloat")
floor = _make_unary(floor_p)
ad.defjvp_zero(floor_p)

ceil_p = _nary("ceil", "realfloat")
ceil = _make_unary(ceil_p)
ad.defjvp_zero(ceil_p)

round_p = _nary("round", "realfloat")


def round(x, rounding_method: int = 0):  # noqa: A001
    """Rounds to the nearest integer; `rounding_method` 0 = away from zero (lax default), 1 = to nearest even."""
    (x,) = _lift_scalars(x)
    _check(round_p, x)
    return round_p.bind(x, rounding_method=int(rounding_method))


ad.defjvp_zero(round_p)

is_finite_p = _nary("is_finite", "realfloat", _bool_dtype, weak_type="never")
is_finite = _make_unary(is_finite_p)
ad.defjvp_zero(is_finite_p)

exp_p = _nary("exp", "float")
exp = _make_unary(exp_p)
ad.defjvp2(exp_p, lambda t, ans, x: mul(t, ans))

exp2_p = _nary("exp2", "float")
exp2 = _make_unary(exp2_p)
ad.defjvp2(exp2_p, lambda t, ans, x: mul(_const(x, np.log(2)), mul(t, ans)))

log_p = _nary("log", "float")
log = _make_unary(log_p)
ad.defjvp(log_p, lambda t, x: div(t, x))

log1p_p = _nary("log1p", "float")
log1p = _make_unary(log1p_p)
ad.defjvp(log1p_p, lambda t, x: div(t, add(x, _one(x))))

expm1_p = _nary("expm1", "float")
expm1 = _make_unary(expm1_p)
ad.defjvp2(expm1_p, lambda t, ans, x: mul(t, add(ans, _one(x))))

tanh_p = _nary("tanh", "float")
tanh = _make_unary(tanh_p)
# JAX's form, (t + t * ans) * (1 - ans): the same bits as JAX's gradients (t * (1 - ans**2) rounds differently).
ad.defjvp2(tanh_p, lambda t, ans, x: mul(add(t, mul(t, ans)), sub(_one(x), ans)))

logistic_p = _nary("logistic", "float")
logistic = _make_unary(logistic_p)
ad.defjvp2(logistic_p, lambda t, ans, x: mul(t, mul(ans, sub(_one(x), ans))))

sin_p = _nary("sin", "float")
sin = _make_unary(sin_p)
ad.defjvp(sin_p, lambda t, x: mul(t, cos(x)))

cos_p = _nary("cos", "float")
cos = _make_unary(cos_p)
ad.defjvp(cos_p, lambda t, x: neg(mul(t, sin(x))))

tan_p = _nary("tan", "float")
tan = _make_unary(tan_p)
ad.defjvp2(tan_p, lambda t, ans, x: mul(t, add(_one(x), square(ans))))

asin_p = _nary("asin", "float")
asin = _make_unary(asin_p)
ad.defjvp(asin_p, lambda t, x: mul(t, rsqrt(sub(_one(x), square(x)))))

acos_p = _nary("acos", "float")
acos = _make_unary(acos_p)
ad.defjvp(acos_p, lambda t, x: neg(mul(t, rsqrt(sub(_one(x), square(x))))))

atan_p = _nary("atan", "float")
atan = _make_unary(atan_p)
ad.defjvp(atan_p, lambda t, x: div(t, add(_one(x), square(x))))

sinh_p = _nary("sinh", "float")
sinh = _make_unary(sinh_p)
ad.defjvp(sinh_p, lambda t, x: mul(t, cosh(x)))

cosh_p = _nary("cosh", "float")
cosh = _make_unary(cosh_p)
ad.defjvp(cosh_p, lambda t, x: mul(t, sinh(x)))

asinh_p = _nary("asinh", "float")
asinh = _make_unary(asinh_p)
ad.defjvp(asinh_p, lambda t, x: mul(t, rsqrt(add(square(x), _one(x)))))

acosh_p = _nary("acosh", "float")
acosh = _make_unary(acosh_p)
ad.defjvp(acosh_p, lambda t, x: mul(t, rsqrt(sub(square(x), _one(x)))))  # x**2 - 1, as JAX (x >= 1)

atanh_p = _nary("atanh", "float")
atanh = _make_unary(atanh_p)
ad.defjvp(atanh_p, lambda t, x: mul(integer_pow(add(_one(x), x), -1), div(t, sub(_one(x), x))))

sqrt_p = _nary("sqrt", "float")
sqrt = _make_unary(sqrt_p)
ad.defjvp2(sqrt_p, lambda t, ans, x: mul(t, div(_const(x, 0.5), ans)))

rsqrt_p = _nary("rsqrt", "float")
rsqrt = _make_unary(rsqrt_p)
ad.defjvp2(rsqrt_p, lambda t, ans, x: mul(t, mul(_const(x, -0.5), div(ans, x))))

cbrt_p = _nary("cbrt", "realfloat")
cbrt = _make_unary(cbrt_p)
ad.defjvp2(cbrt_p, lambda t, ans, x: mul(t, mul(_const(x, 1 / 3), integer_pow(ans, -2))))

abs_p = _nary("abs", "num", _real_dtype)
abs = _make_unary(abs_p)  # noqa: A001  (mirrors lax.abs)


def _abs_jvp(t, x):
    # JAX's conventions at 0: the real derivative is +1 there (x >= 0 picks t, so grad(abs)(0.) == 1), and the
    # complex one divides by |x| with 0 replaced by 1, so it is 0 rather than nan.
    a = core.get_aval(x)
    if dtypes.is_complex(a.dtype):
        ans = convert_element_type(abs(x), a.dtype)
        zero = _zeros_like(ans)
        safe = select_n(eq(ans, zero), ans, add(zero, _one(ans)))
        return real(mul(t, div(conj(x), safe)))
    return select_n(ge(x, _zeros_like(x)), neg(t), t)


ad.defjvp(abs_p, _abs_jvp)

not_p = _nary("not", "int")
bitwise_not = _make_unary(not_p)
ad.defjvp_zero(not_p)

real_p = _nary("real", "float", _real_dtype)
real = _make_unary(real_p)
ad.deflinear(real_p, lambda ct, x: [convert_element_type(ct, x.aval.dtype)])

imag_p = _nary("imag", "float", _real_dtype)
imag = _make_unary(imag_p)
ad.deflinear(imag_p, lambda ct, x: [mul(complex(_zeros_like(ct), neg(ct)), _one(x))])

conj_p = _nary("conj", "float")
conj = _make_unary(conj_p)
ad.deflinear(conj_p, lambda ct, x: [conj(ct)])

square_p = _nary("square", "num")
square = _make_unary(square_p)
ad.defjvp(square_p, lambda t, x: mul(t, mul(_const(x, 2), x)))

erf_p = _nary("erf", "realfloat")
erf = _make_unary(erf_p)
ad.defjvp(erf_p, lambda t, x: mul(_const(x, 2 / np.sqrt(np.pi)), mul(t, exp(neg(square(x))))))

erfc_p = _nary("erfc", "realfloat")
erfc = _make_unary(erfc_p)
ad.defjvp(erfc_p, lambda t, x: mul(_const(x, -2 / np.sqrt(np.pi)), mul(t, exp(neg(square(x))))))

erf_inv_p = _nary("erf_inv", "realfloat")
erf_inv = _make_unary(erf_inv_p)
ad.defjvp2(erf_inv_p, lambda t, ans, x: mul(_const(x, np.sqrt(np.pi) / 2), mul(t, exp(square(ans)))))

lgamma_p = _nary("lgamma", "realfloat")
lgamma = _make_unary(lgamma_p)
ad.defjvp(lgamma_p, lambda t, x: mul(t, digamma(x)))

digamma_p = _nary("digamma", "realfloat")
digamma = _make_unary(digamma_p)
ad.defjvp(digamma_p, lambda t, x: mul(t, polygamma(_const(x, 1), x)))


# polygamma(m, x) takes the order as an operand, as JAX's primitive does (a traced or per-element order is fine).
polygamma_p = _nary("polygamma", "realfloat")
polygamma = _make_binary(polygamma_p)
polygamma.__doc__ = """The m-th derivative of digamma at x: psi^(m)(x), elementwise over m and x of one real floating
dtype (scalars broadcast). NaN where m is not a non-negative integer (as JAX). Differentiable in x (the derivative
is polygamma(m + 1, x)); the derivative in m raises ValueError, as in JAX."""


def _polygamma_jvp_m(t, ans, m, x):
    raise ValueError("polygamma gradient with respect to m is not supported")


defjvp_broadcasting(polygamma_p, _polygamma_jvp_m, lambda t, ans, m, x: mul(t, polygamma(add(m, _const(m, 1)), x)))

population_count_p = _nary("population_count", "int")
population_count = _make_unary(population_count_p)
ad.defjvp_zero(population_count_p)

clz_p = _nary("clz", "int")
clz = _make_unary(clz_p)
ad.defjvp_zero(clz_p)


integer_pow_p = standard_primitive("integer_pow")


def binary_power(x, y: int, mul_fn):
    """`x ** y` for an integer y >= 1 as `mul_fn` products in the order XLA (and JAX's `integer_pow` lowering)
    uses: binary exponentiation, x**3 = x * (x * x), x**4 = (x * x) * (x * x). Every backend computes `integer_pow`
    through it so floating-point results round as JAX's do (NumPy's `power` rounds differently)."""
    acc = None
    while y > 0:
        if y & 1:
            acc = x if acc is None else mul_fn(acc, x)
        y >>= 1
        if y > 0:
            x = mul_fn(x, x)
    return acc


def integer_pow(x, y: int):
    """`x ** y` for a static Python integer `y` (lowered to repeated multiplication by XLA)."""
    (x,) = _lift_scalars(x)
    _integer_pow_abstract_eval(core.get_aval(x), y=int(y))
    return integer_pow_p.bind(x, y=int(y))


def _integer_pow_abstract_eval(x, *, y):
    if x.dtype == dtypes.bool_:
        raise TypeError("lax.integer_pow does not accept bool")
    return ShapedArray(x.shape, x.dtype)


abstract_eval_rules[integer_pow_p] = _integer_pow_abstract_eval


def _integer_pow_jvp(t, x, *, y):
    if y == 0:
        return _zeros_like(t)
    if y == 1:
        return t
    # As JAX: y * x for y == 2 (no `integer_pow` of 1 in the derivative's program), y * x**(y - 1) otherwise.
    return mul(t, mul(_const(x, y), x if y == 2 else integer_pow(x, y - 1)))


ad.defjvp(integer_pow_p, _integer_pow_jvp)
batching.primitive_batchers[integer_pow_p] = _elementwise_batch_rule(integer_pow_p)


# --------------------------------------------------------------------------------------------------------------
# Binary arithmetic
# --------------------------------------------------------------------------------------------------------------

add_p = _nary("add", "num")
add = _make_binary(add_p)
array_ops.provide("add", add)  # AD adds tangents with it (interpreters cannot import lax)
defjvp_broadcasting(add_p, lambda tx, ans, x, y: tx, lambda ty, ans, x, y: ty)


def _add_transpose(ct, x, y):
    return [_unbroadcast(ct, x.aval) if ad.is_undefined_primal(x) else None,
            _unbroadcast(ct, y.aval) if ad.is_undefined_primal(y) else None]


ad.primitive_transposes[add_p] = _add_transpose

sub_p = _nary("sub", "num")
sub = _make_binary(sub_p)
defjvp_broadcasting(sub_p, lambda tx, ans, x, y: tx, lambda ty, ans, x, y: neg(ty))


def _sub_transpose(ct, x, y):
    return [_unbroadcast(ct, x.aval) if ad.is_undefined_primal(x) else None,
            _unbroadcast(neg(ct), y.aval) if ad.is_undefined_primal(y) and type(ct) is not Zero else None]


ad.primitive_transposes[sub_p] = _sub_transpose

mul_p = _nary("mul", "num")
mul = _make_binary(mul_p)
defjvp_broadcasting(mul_p, lambda tx, ans, x, y: mul(tx, y), lambda ty, ans, x, y: mul(x, ty))


def _mul_transpose(ct, x, y):
    if type(ct) is Zero:
        return [None, None]
    if ad.is_undefined_primal(x) and ad.is_undefined_primal(y):
        raise NotImplementedError("mul is not linear in both operands at once")
    if ad.is_undefined_primal(x):
        return [_unbroadcast(mul(ct, y), x.aval), None]
    return [None, _unbroadcast(mul(x, ct), y.aval)]


ad.primitive_transposes[mul_p] = _mul_transpose

div_p = _nary("div", "num")
div = _make_binary(div_p)
defjvp_broadcasting(div_p, lambda tx, ans, x, y: div(tx, y),
                    lambda ty, ans, x, y: mul(mul(neg(ty), x), integer_pow(y, -2)))


def _div_transpose(ct, x, y):
    if type(ct) is Zero or not ad.is_undefined_primal(x):
        return [None, None]
    if ad.is_undefined_primal(y):
        raise NotImplementedError("div is linear only in its numerator")
    return [_unbroadcast(div(ct, y), x.aval), None]


ad.primitive_transposes[div_p] = _div_transpose

rem_p = _nary("rem", "num")
rem = _make_binary(rem_p)


def _rem_jvp_y(t, ans, x, y):
    # rem(x, y) = x - y * trunc(x / y), so d/dy = -trunc(x / y).
    q = div(x, y)
    trunc = mul(sign(q), floor(abs(q)))
    return neg(mul(t, trunc))


defjvp_broadcasting(rem_p, lambda tx, ans, x, y: tx, _rem_jvp_y)


pow_p = standard_primitive("pow", weak_type="first")


def pow(x, y):  # noqa: A001
    """`x ** y` elementwise; `x` floating or complex, `y` of `x`'s dtype or an integer dtype."""
    x, y = _lift_scalars(x, y)
    _check(pow_p, x, y)
    return pow_p.bind(x, y)


def _pow_abstract_eval(x, y):
    if not dtypes.is_inexact(x.dtype):
        raise TypeError(f"lax.pow requires a floating or complex base, got {x.dtype.name}")
    if y.dtype != x.dtype and not dtypes.is_integer(y.dtype):
        raise TypeError(f"lax.pow requires the exponent to have the base's dtype or an integer dtype, got "
                        f"{x.dtype.name} and {y.dtype.name}")
    return ShapedArray(_broadcast_shapes("pow", [x, y]), x.dtype)


abstract_eval_rules[pow_p] = _pow_abstract_eval


def _pow_jvp_x(tx, ans, x, y):
    yf = y if core.get_aval(y).dtype == core.get_aval(x).dtype else convert_element_type(y, core.get_aval(x).dtype)
    # d/dx x^y = y * x^(y-1). As in JAX, an integer exponent y == 0 gives 0 (not 0 * inf at x == 0); a float
    # exponent keeps the plain formula, so d/dx x**0.0 at 0 is nan there too.
    dx = mul(yf, pow(x, sub(yf, _one(yf))))
    if dtypes.is_integer(core.get_aval(y).dtype):
        yb = yf if core.get_aval(yf).shape == core.get_aval(dx).shape else _bcast_like(yf, dx)
        dx = select_n(eq(yb, _zeros_like(yb)), dx, _zeros_like(dx))
    return mul(tx, dx)


def _pow_jvp_y(ty, ans, x, y):
    # d/dy x^y = log(x) x^y, with the convention 0 at x == 0 (as JAX).
    safe_log = select_n(eq(x, _zeros_like(x)), log(x), _zeros_like(x))
    return mul(ty, mul(safe_log, ans))


defjvp_broadcasting(pow_p, _pow_jvp_x, _pow_jvp_y)
batching.primitive_batchers[pow_p] = _elementwise_batch_rule(pow_p)


def _minmax_jvp(prim):
    def jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        out = prim.bind(x, y)
        # Ties split the gradient evenly, as JAX does.
        pick_x = select_n(eq(out, x), _zeros_like(out), _bcast_like(_one(out), out))
        pick_y = select_n(eq(out, y), _zeros_like(out), _bcast_like(_one(out), out))
        both = mul(pick_x, pick_y)
        wx = sub(pick_x, mul(both, _const(out, 0.5)))
        wy = sub(pick_y, mul(both, _const(out, 0.5)))
        t = Zero(core.get_aval(out))
        if type(tx) is not Zero:
            t = ad.add_tangents(t, mul(_bcast_like(tx, out), wx))
        if type(ty) is not Zero:
            t = ad.add_tangents(t, mul(_bcast_like(ty, out), wy))
        return out, t
    return jvp


max_p = _nary("max", "any")
max = _make_binary(max_p)  # noqa: A001
ad.primitive_jvps[max_p] = _minmax_jvp(max_p)

min_p = _nary("min", "any")
min = _make_binary(min_p)  # noqa: A001
ad.primitive_jvps[min_p] = _minmax_jvp(min_p)

atan2_p = _nary("atan2", "realfloat")
atan2 = _make_binary(atan2_p)
defjvp_broadcasting(atan2_p, lambda tx, ans, x, y: mul(tx, div(y, add(square(x), square(y)))),
                    lambda ty, ans, x, y: mul(ty, div(neg(x), add(square(x), square(y)))))

nextafter_p = _nary("nextafter", "realfloat")
nextafter = _make_binary(nextafter_p)
ad.defjvp_zero(nextafter_p)

complex_p = _nary("complex", "realfloat",
                   lambda d: dtypes.complex128 if d == dtypes.float64 else dtypes.complex64)
complex = _make_binary(complex_p)  # noqa: A001


def _complex_transpose(ct, x, y):
    return [_unbroadcast(real(ct), x.aval) if ad.is_undefined_primal(x) else None,
            _unbroadcast(neg(imag(ct)), y.aval) if ad.is_undefined_primal(y) else None]


ad.deflinear(complex_p, _complex_transpose)


# --------------------------------------------------------------------------------------------------------------
# Bitwise operations and comparisons (no derivative: integer or boolean results)
# --------------------------------------------------------------------------------------------------------------

and_p = _nary("and", "int")
bitwise_and = _make_binary(and_p)
ad.defjvp_zero(and_p)

or_p = _nary("or", "int")
bitwise_or = _make_binary(or_p)
ad.defjvp_zero(or_p)

xor_p = _nary("xor", "int")
bitwise_xor = _make_binary(xor_p)
ad.defjvp_zero(xor_p)

shift_left_p = _nary("shift_left", "int")
shift_left = _make_binary(shift_left_p)
ad.defjvp_zero(shift_left_p)

shift_right_logical_p = _nary("shift_right_logical", "int")
shift_right_logical = _make_binary(shift_right_logical_p)
ad.defjvp_zero(shift_right_logical_p)

shift_right_arithmetic_p = _nary("shift_right_arithmetic", "int")
shift_right_arithmetic = _make_binary(shift_right_arithmetic_p)
ad.defjvp_zero(shift_right_arithmetic_p)

eq_p = _nary("eq", "any", _bool_dtype, weak_type="never")
eq = _make_binary(eq_p)
ad.defjvp_zero(eq_p)

ne_p = _nary("ne", "any", _bool_dtype, weak_type="never")
ne = _make_binary(ne_p)
ad.defjvp_zero(ne_p)

lt_p = _nary("lt", "any", _bool_dtype, weak_type="never")
lt = _make_binary(lt_p)
ad.defjvp_zero(lt_p)

le_p = _nary("le", "any", _bool_dtype, weak_type="never")
le = _make_binary(le_p)
ad.defjvp_zero(le_p)

gt_p = _nary("gt", "any", _bool_dtype, weak_type="never")
gt = _make_binary(gt_p)
ad.defjvp_zero(gt_p)

ge_p = _nary("ge", "any", _bool_dtype, weak_type="never")
ge = _make_binary(ge_p)
ad.defjvp_zero(ge_p)


# --------------------------------------------------------------------------------------------------------------
# Conversions
# --------------------------------------------------------------------------------------------------------------

convert_element_type_p = standard_primitive(
    "convert_element_type", weak_type=lambda args, params: params.get("weak_type", False))


def convert_element_type(x, new_dtype) -> Any:
    """Casts `x` to `new_dtype` (canonicalized; float->int truncates and saturates, NaN -> 0)."""
    (x,) = _lift_scalars(x) if not isinstance(x, _PY_SCALARS) else (core.to_array(x),)
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    a = core.get_aval(x)
    if a.dtype == new_dtype and not a.weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=False)


def _convert_weak(x, new_dtype, weak_type: bool):
    """Internal: cast keeping track of weak typing (used by fluxion.numpy's promotion)."""
    a = core.get_aval(x)
    if a.dtype == new_dtype and a.weak_type == weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)


def _convert_element_type_abstract_eval(x, *, new_dtype, weak_type=False):
    return ShapedArray(x.shape, new_dtype)


abstract_eval_rules[convert_element_type_p] = _convert_element_type_abstract_eval


def _convert_element_type_jvp(primals, tangents, *, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    old = core.get_aval(x).dtype
    if type(t) is Zero or not dtypes.is_inexact(new_dtype) or not dtypes.is_inexact(old):
        return out, Zero(core.get_aval(out))
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_element_type_transpose(ct, x, *, new_dtype, weak_type=False):
    if type(ct) is Zero:
        return [None]
    old = x.aval.dtype
    return [convert_element_type_p.bind(ct, new_dtype=old, weak_type=x.aval.weak_type)]


ad.primitive_jvps[convert_element_type_p] = _convert_element_type_jvp
ad.primitive_transposes[convert_element_type_p] = _convert_element_type_transpose
batching.primitive_batchers[convert_element_type_p] = _elementwise_batch_rule(convert_element_type_p)

bitcast_convert_type_p = standard_primitive("bitcast_convert_type", weak_type="never")


def bitcast_convert_type(x, new_dtype):
    """Reinterprets the bits of `x` as `new_dtype` (sizes may differ: a trailing dimension is added/removed)."""
    (x,) = _lift_scalars(x)
    return bitcast_convert_type_p.bind(x, new_dtype=dtypes.canonicalize_dtype(new_dtype)
                                       if np.dtype(new_dtype).itemsize <= 4 or dtypes.x64_enabled()
                                       else np.dtype(new_dtype))


def _bitcast_convert_type_abstract_eval(x, *, new_dtype):
    a, b = x.dtype.itemsize, np.dtype(new_dtype).itemsize
    if a == b:
        return ShapedArray(x.shape, new_dtype)
    if a > b:
        return ShapedArray(x.shape + (a // b,), new_dtype)
    if not x.shape or x.shape[-1] != b // a:
        raise TypeError(f"bitcast_convert_type from {x.dtype.name} to {np.dtype(new_dtype).name} needs a last "
                        f"dimension of size {b // a}, got shape {x.shape}")
    return ShapedArray(x.shape[:-1], new_dtype)


abstract_eval_rules[bitcast_convert_type_p] = _bitcast_convert_type_abstract_eval
ad.defjvp_zero(bitcast_convert_type_p)


def _bitcast_convert_type_batch_rule(vals, dims, *, new_dtype):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0, core.get_aval(x).shape[d])
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), 0


batching.primitive_batchers[bitcast_convert_type_p] = _bitcast_convert_type_batch_rule


# --------------------------------------------------------------------------------------------------------------
# Selection
# --------------------------------------------------------------------------------------------------------------

def _select_n_weak_type(args, params):
    return all(getattr(a, "weak_type", False) for a in args[1:])


select_n_p = standard_primitive("select_n", weak_type=_select_n_weak_type)


def select_n(which, *cases):
    """Selects elementwise from `cases` by `which` (bool: False->cases[0], True->cases[1]; int: index)."""
    which, *cases = _lift_scalars(which, *cases)
    _check(select_n_p, which, *cases)
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """`on_true` where `pred` else `on_false` (the legacy form of `select_n(pred, on_false, on_true)`)."""
    return select_n(pred, on_false, on_true)


def _select_n_abstract_eval(which, *cases):
    if not cases:
        raise TypeError("select_n requires at least one case")
    dt = _check_same_dtypes("select_n", list(cases))
    if which.dtype != dtypes.bool_ and not dtypes.is_integer(which.dtype):
        raise TypeError(f"select_n's selector must be bool or integer, got {which.dtype.name}")
    shape = _broadcast_shapes("select_n", list(cases))
    if which.shape and which.shape != shape and shape:
        raise TypeError(f"select_n selector shape {which.shape} must be scalar or equal to the case shape {shape}")
    return ShapedArray(shape or which.shape, dt)


abstract_eval_rules[select_n_p] = _select_n_abstract_eval


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    _, *case_ts = tangents
    out = select_n_p.bind(which, *cases)
    if all(type(t) is Zero for t in case_ts):
        return out, Zero(core.get_aval(out))
    case_ts = [_bcast_like(ad.instantiate_zeros(t), out) for t in case_ts]
    return out, select_n_p.bind(which, *case_ts)


def _select_n_transpose(ct, which, *cases):
    if ad.is_undefined_primal(which):
        raise NotImplementedError("select_n is not linear in its selector")
    if type(ct) is Zero:
        return [None] * (len(cases) + 1)
    zeros = _zeros_like(ct)
    res = [None]
    for i, c in enumerate(cases):
        if ad.is_undefined_primal(c):
            branches = [zeros] * len(cases)
            branches[i] = ct
            res.append(_unbroadcast(select_n_p.bind(which, *branches), c.aval))
        else:
            res.append(None)
    return res


ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose
batching.primitive_batchers[select_n_p] = _elementwise_batch_rule(select_n_p)

clamp_p = standard_primitive("clamp", weak_type=lambda a, p: bool(getattr(a[1], "weak_type", False)))


def clamp(min, x, max):  # noqa: A002
    """Clamps `x` to [min, max] elementwise; bounds are scalars or have `x`'s shape."""
    lo, x, hi = _lift_scalars(min, x, max)
    _check(clamp_p, lo, x, hi)
    return clamp_p.bind(lo, x, hi)


def _clamp_abstract_eval(lo, x, hi):
    _check_same_dtypes("clamp", [lo, x, hi])
    for b in (lo, hi):
        if b.shape and b.shape != x.shape:
            raise TypeError(f"clamp bounds must be scalars or have the operand's shape {x.shape}, got {b.shape}")
    return ShapedArray(x.shape, x.dtype)


abstract_eval_rules[clamp_p] = _clamp_abstract_eval


def _clamp_jvp(primals, tangents):
    lo, x, hi = primals
    tlo, tx, thi = tangents
    out = clamp(lo, x, hi)
    t = Zero(core.get_aval(out))
    zeros = _zeros_like(out)
    if type(tx) is not Zero:
        inside = bitwise_and(gt(x, lo if core.get_aval(lo).shape else _bcast_like(lo, x)),
                             lt(x, hi if core.get_aval(hi).shape else _bcast_like(hi, x)))
        t = ad.add_tangents(t, select_n(inside, zeros, tx))
    if type(tlo) is not Zero:
        t = ad.add_tangents(t, select_n(lt(x, _bcast_like(lo, x)), zeros, _bcast_like(tlo, out)))
    if type(thi) is not Zero:
        t = ad.add_tangents(t, select_n(gt(x, _bcast_like(hi, x)), zeros, _bcast_like(thi, out)))
    return out, t


ad.primitive_jvps[clamp_p] = _clamp_jvp
batching.primitive_batchers[clamp_p] = _elementwise_batch_rule(clamp_p)

"""Elementwise primitives: unary and binary math, comparisons, bitwise ops, `select_n`, conversions.

Operands of an n-ary elementwise primitive have one dtype and either the output's shape or rank 0 (a scalar is
broadcast, as JAX allows for literals: `add a 1.0:f32[]`). `fluxion.numpy` inserts explicit `broadcast_in_dim`
equations for any other broadcasting, so the rules here only ever handle "same shape or scalar".
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np

from .. import core, dtypes
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, batching
from ..interpreters.ad import Zero
from .utils import standard_primitive


# --------------------------------------------------------------------------------------------------------------
# Shape/dtype rules
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


def _nary_rule(name: str, kind: str, out_dtype: Callable | None = None) -> Callable:
    check = _KIND_CHECKS[kind]

    def rule(*avals, **params):
        dt = _check_same_dtypes(name, avals)
        if not check(dt):
            raise TypeError(f"lax.{name} does not accept dtype {dt.name}")
        shape = _broadcast_shapes(name, avals)
        return ShapedArray(shape, out_dtype(dt) if out_dtype else dt)

    return rule


def _real_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dt == dtypes.complex128 else np.dtype(np.float32) if dt.kind == "c" else dt


def _bool_dtype(dt: np.dtype) -> np.dtype:
    return dtypes.bool_


# --------------------------------------------------------------------------------------------------------------
# Batching: same-shape-or-scalar operands
# --------------------------------------------------------------------------------------------------------------

def _elementwise_batch_rule(prim):
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


# --------------------------------------------------------------------------------------------------------------
# Definitions
# --------------------------------------------------------------------------------------------------------------

def _unop(name: str, kind: str = "float", out_dtype=None, weak_type="all"):
    prim = standard_primitive(name, _nary_rule(name, kind, out_dtype), weak_type=weak_type)
    batching.primitive_batchers[prim] = _elementwise_batch_rule(prim)
    return prim


def _binop(name: str, kind: str = "num", out_dtype=None, weak_type="all"):
    prim = standard_primitive(name, _nary_rule(name, kind, out_dtype), weak_type=weak_type)
    batching.primitive_batchers[prim] = _elementwise_batch_rule(prim)
    return prim


neg_p = _unop("neg", "num")
sign_p = _unop("sign", "num")
floor_p = _unop("floor", "realfloat")
ceil_p = _unop("ceil", "realfloat")
round_p = _unop("round", "realfloat")
is_finite_p = _unop("is_finite", "realfloat", _bool_dtype, weak_type="never")
exp_p = _unop("exp")
exp2_p = _unop("exp2")
log_p = _unop("log")
log1p_p = _unop("log1p")
expm1_p = _unop("expm1")
tanh_p = _unop("tanh")
logistic_p = _unop("logistic")
sin_p = _unop("sin")
cos_p = _unop("cos")
tan_p = _unop("tan")
asin_p = _unop("asin")
acos_p = _unop("acos")
atan_p = _unop("atan")
sinh_p = _unop("sinh")
cosh_p = _unop("cosh")
asinh_p = _unop("asinh")
acosh_p = _unop("acosh")
atanh_p = _unop("atanh")
sqrt_p = _unop("sqrt")
rsqrt_p = _unop("rsqrt")
cbrt_p = _unop("cbrt", "realfloat")
abs_p = _unop("abs", "num", _real_dtype)
not_p = _unop("not", "int")
real_p = _unop("real", "float", _real_dtype)
imag_p = _unop("imag", "float", _real_dtype)
conj_p = _unop("conj", "float")
square_p = _unop("square", "num")
erf_p = _unop("erf", "realfloat")
erfc_p = _unop("erfc", "realfloat")
erf_inv_p = _unop("erf_inv", "realfloat")
lgamma_p = _unop("lgamma", "realfloat")
digamma_p = _unop("digamma", "realfloat")
population_count_p = _unop("population_count", "int")


def _polygamma_rule(x, *, m):
    if not dtypes.is_float(x.dtype):
        raise TypeError(f"lax.polygamma requires a floating operand, got {x.dtype.name}")
    return ShapedArray(x.shape, x.dtype)


polygamma_p = standard_primitive("polygamma", _polygamma_rule)
batching.primitive_batchers[polygamma_p] = _elementwise_batch_rule(polygamma_p)
clz_p = _unop("clz", "int")

add_p = _binop("add")
sub_p = _binop("sub")
mul_p = _binop("mul")
div_p = _binop("div")
rem_p = _binop("rem")
max_p = _binop("max", "any")
min_p = _binop("min", "any")
atan2_p = _binop("atan2", "realfloat")
nextafter_p = _binop("nextafter", "realfloat")
and_p = _binop("and", "int")
or_p = _binop("or", "int")
xor_p = _binop("xor", "int")
shift_left_p = _binop("shift_left", "int")
shift_right_logical_p = _binop("shift_right_logical", "int")
shift_right_arithmetic_p = _binop("shift_right_arithmetic", "int")
eq_p = _binop("eq", "any", _bool_dtype, weak_type="never")
ne_p = _binop("ne", "any", _bool_dtype, weak_type="never")
lt_p = _binop("lt", "any", _bool_dtype, weak_type="never")
le_p = _binop("le", "any", _bool_dtype, weak_type="never")
gt_p = _binop("gt", "any", _bool_dtype, weak_type="never")
ge_p = _binop("ge", "any", _bool_dtype, weak_type="never")
complex_p = _binop("complex", "realfloat", lambda d: dtypes.complex128 if d == dtypes.float64 else dtypes.complex64)


def _pow_rule(x, y):
    if not dtypes.is_inexact(x.dtype):
        raise TypeError(f"lax.pow requires a floating or complex base, got {x.dtype.name}")
    if y.dtype != x.dtype and not dtypes.is_integer(y.dtype):
        raise TypeError(f"lax.pow requires the exponent to have the base's dtype or an integer dtype, got "
                        f"{x.dtype.name} and {y.dtype.name}")
    return ShapedArray(_broadcast_shapes("pow", [x, y]), x.dtype)


pow_p = standard_primitive("pow", _pow_rule, weak_type="first")
batching.primitive_batchers[pow_p] = _elementwise_batch_rule(pow_p)


def _integer_pow_rule(x, *, y):
    if x.dtype == dtypes.bool_:
        raise TypeError("lax.integer_pow does not accept bool")
    return ShapedArray(x.shape, x.dtype)


integer_pow_p = standard_primitive("integer_pow", _integer_pow_rule)
batching.primitive_batchers[integer_pow_p] = _elementwise_batch_rule(integer_pow_p)


def _convert_rule(x, *, new_dtype, weak_type=False):
    return ShapedArray(x.shape, new_dtype)


convert_element_type_p = standard_primitive(
    "convert_element_type", _convert_rule,
    weak_type=lambda args, params: params.get("weak_type", False))
batching.primitive_batchers[convert_element_type_p] = _elementwise_batch_rule(convert_element_type_p)


def _bitcast_rule(x, *, new_dtype):
    a, b = x.dtype.itemsize, np.dtype(new_dtype).itemsize
    if a == b:
        return ShapedArray(x.shape, new_dtype)
    if a > b:
        return ShapedArray(x.shape + (a // b,), new_dtype)
    if not x.shape or x.shape[-1] != b // a:
        raise TypeError(f"bitcast_convert_type from {x.dtype.name} to {np.dtype(new_dtype).name} needs a last "
                        f"dimension of size {b // a}, got shape {x.shape}")
    return ShapedArray(x.shape[:-1], new_dtype)


bitcast_convert_type_p = standard_primitive("bitcast_convert_type", _bitcast_rule,
                                            weak_type="never")


def _bitcast_batch(vals, dims, *, new_dtype):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0, core.get_aval(x).shape[d])
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), 0


batching.primitive_batchers[bitcast_convert_type_p] = _bitcast_batch
ad.defjvp_zero(bitcast_convert_type_p)


def _select_n_rule(which, *cases):
    if not cases:
        raise TypeError("select_n requires at least one case")
    dt = _check_same_dtypes("select_n", list(cases))
    if which.dtype != dtypes.bool_ and not dtypes.is_integer(which.dtype):
        raise TypeError(f"select_n's selector must be bool or integer, got {which.dtype.name}")
    shape = _broadcast_shapes("select_n", list(cases))
    if which.shape and which.shape != shape and shape:
        raise TypeError(f"select_n selector shape {which.shape} must be scalar or equal to the case shape {shape}")
    return ShapedArray(shape or which.shape, dt)


def _select_weak(args, params):
    return all(getattr(a, "weak_type", False) for a in args[1:])


select_n_p = standard_primitive("select_n", _select_n_rule, weak_type=_select_weak)
batching.primitive_batchers[select_n_p] = _elementwise_batch_rule(select_n_p)


def _clamp_rule(lo, x, hi):
    _check_same_dtypes("clamp", [lo, x, hi])
    for b in (lo, hi):
        if b.shape and b.shape != x.shape:
            raise TypeError(f"clamp bounds must be scalars or have the operand's shape {x.shape}, got {b.shape}")
    return ShapedArray(x.shape, x.dtype)


clamp_p = standard_primitive("clamp", _clamp_rule, weak_type=lambda a, p: bool(
    getattr(a[1], "weak_type", False)))
batching.primitive_batchers[clamp_p] = _elementwise_batch_rule(clamp_p)


# --------------------------------------------------------------------------------------------------------------
# Public wrappers (lax-level: no dtype promotion; Python scalars adopt the other operand's dtype)
# --------------------------------------------------------------------------------------------------------------

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
    """Runs the shape/dtype rule for a user-facing lax call (the eager path skips it for speed)."""
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


neg = _make_unary(neg_p)
sign = _make_unary(sign_p)
floor = _make_unary(floor_p)
ceil = _make_unary(ceil_p)
is_finite = _make_unary(is_finite_p)
exp = _make_unary(exp_p)
exp2 = _make_unary(exp2_p)
log = _make_unary(log_p)
log1p = _make_unary(log1p_p)
expm1 = _make_unary(expm1_p)
tanh = _make_unary(tanh_p)
logistic = _make_unary(logistic_p)
sin = _make_unary(sin_p)
cos = _make_unary(cos_p)
tan = _make_unary(tan_p)
asin = _make_unary(asin_p)
acos = _make_unary(acos_p)
atan = _make_unary(atan_p)
sinh = _make_unary(sinh_p)
cosh = _make_unary(cosh_p)
asinh = _make_unary(asinh_p)
acosh = _make_unary(acosh_p)
atanh = _make_unary(atanh_p)
sqrt = _make_unary(sqrt_p)
rsqrt = _make_unary(rsqrt_p)
cbrt = _make_unary(cbrt_p)
abs = _make_unary(abs_p)  # noqa: A001  (mirrors lax.abs)
bitwise_not = _make_unary(not_p)
real = _make_unary(real_p)
imag = _make_unary(imag_p)
conj = _make_unary(conj_p)
square = _make_unary(square_p)
erf = _make_unary(erf_p)
erfc = _make_unary(erfc_p)
erf_inv = _make_unary(erf_inv_p)
lgamma = _make_unary(lgamma_p)
digamma = _make_unary(digamma_p)
population_count = _make_unary(population_count_p)
clz = _make_unary(clz_p)

add = _make_binary(add_p)
sub = _make_binary(sub_p)
mul = _make_binary(mul_p)
div = _make_binary(div_p)
rem = _make_binary(rem_p)
max = _make_binary(max_p)  # noqa: A001
min = _make_binary(min_p)  # noqa: A001
atan2 = _make_binary(atan2_p)
nextafter = _make_binary(nextafter_p)
bitwise_and = _make_binary(and_p)
bitwise_or = _make_binary(or_p)
bitwise_xor = _make_binary(xor_p)
shift_left = _make_binary(shift_left_p)
shift_right_logical = _make_binary(shift_right_logical_p)
shift_right_arithmetic = _make_binary(shift_right_arithmetic_p)
eq = _make_binary(eq_p)
ne = _make_binary(ne_p)
lt = _make_binary(lt_p)
le = _make_binary(le_p)
gt = _make_binary(gt_p)
ge = _make_binary(ge_p)
complex = _make_binary(complex_p)  # noqa: A001


def pow(x, y):  # noqa: A001
    """`x ** y` elementwise; `x` floating or complex, `y` of `x`'s dtype or an integer dtype."""
    x, y = _lift_scalars(x, y)
    return pow_p.bind(x, y)


def integer_pow(x, y: int):
    """`x ** y` for a static Python integer `y` (lowered to repeated multiplication by XLA)."""
    (x,) = _lift_scalars(x)
    return integer_pow_p.bind(x, y=int(y))


def round(x, rounding_method: int = 0):  # noqa: A001
    """Rounds to the nearest integer; `rounding_method` 0 = away from zero (lax default), 1 = to nearest even."""
    (x,) = _lift_scalars(x)
    return round_p.bind(x, rounding_method=int(rounding_method))


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




def bitcast_convert_type(x, new_dtype):
    """Reinterprets the bits of `x` as `new_dtype` (sizes may differ: a trailing dimension is added/removed)."""
    (x,) = _lift_scalars(x)
    return bitcast_convert_type_p.bind(x, new_dtype=dtypes.canonicalize_dtype(new_dtype)
                                       if np.dtype(new_dtype).itemsize <= 4 or dtypes.x64_enabled()
                                       else np.dtype(new_dtype))


def select_n(which, *cases):
    """Selects elementwise from `cases` by `which` (bool: False->cases[0], True->cases[1]; int: index)."""
    which, *cases = _lift_scalars(which, *cases)
    _check(select_n_p, which, *cases)
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """`on_true` where `pred` else `on_false` (the legacy form of `select_n(pred, on_false, on_true)`)."""
    return select_n(pred, on_false, on_true)


def clamp(min, x, max):  # noqa: A002
    """Clamps `x` to [min, max] elementwise; bounds are scalars or have `x`'s shape."""
    lo, x, hi = _lift_scalars(min, x, max)
    return clamp_p.bind(lo, x, hi)


# --------------------------------------------------------------------------------------------------------------
# Differentiation rules
# --------------------------------------------------------------------------------------------------------------

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


def _one(x):
    return core.Array(np.ones((), core.get_aval(x).dtype), True)


def _const(x, v):
    return core.Array(np.asarray(v, core.get_aval(x).dtype), True)


ad.defjvp(neg_p, lambda t, x: neg(t))
ad.defjvp_zero(sign_p)
ad.defjvp_zero(floor_p)
ad.defjvp_zero(ceil_p)
ad.defjvp_zero(round_p)
ad.defjvp_zero(is_finite_p)
ad.defjvp2(exp_p, lambda t, ans, x: mul(t, ans))
ad.defjvp2(exp2_p, lambda t, ans, x: mul(t, mul(ans, _const(x, np.log(2)))))
ad.defjvp(log_p, lambda t, x: div(t, x))
ad.defjvp(log1p_p, lambda t, x: div(t, add(x, _one(x))))
ad.defjvp2(expm1_p, lambda t, ans, x: mul(t, add(ans, _one(x))))
ad.defjvp2(tanh_p, lambda t, ans, x: mul(t, sub(_one(x), square(ans))))
ad.defjvp2(logistic_p, lambda t, ans, x: mul(t, mul(ans, sub(_one(x), ans))))
ad.defjvp(sin_p, lambda t, x: mul(t, cos(x)))
ad.defjvp(cos_p, lambda t, x: neg(mul(t, sin(x))))
ad.defjvp2(tan_p, lambda t, ans, x: mul(t, add(_one(x), square(ans))))
ad.defjvp(asin_p, lambda t, x: mul(t, rsqrt(sub(_one(x), square(x)))))
ad.defjvp(acos_p, lambda t, x: neg(mul(t, rsqrt(sub(_one(x), square(x))))))
ad.defjvp(atan_p, lambda t, x: div(t, add(_one(x), square(x))))
ad.defjvp(sinh_p, lambda t, x: mul(t, cosh(x)))
ad.defjvp(cosh_p, lambda t, x: mul(t, sinh(x)))
ad.defjvp(asinh_p, lambda t, x: mul(t, rsqrt(add(square(x), _one(x)))))
ad.defjvp(acosh_p, lambda t, x: mul(t, rsqrt(mul(sub(x, _one(x)), add(x, _one(x))))))
ad.defjvp(atanh_p, lambda t, x: div(t, sub(_one(x), square(x))))
ad.defjvp2(sqrt_p, lambda t, ans, x: div(t, mul(_const(x, 2), ans)))
ad.defjvp2(rsqrt_p, lambda t, ans, x: mul(t, mul(_const(x, -0.5), div(ans, x))))
ad.defjvp2(cbrt_p, lambda t, ans, x: mul(t, div(_const(x, 1 / 3), square(ans))))
ad.defjvp_zero(not_p)
ad.defjvp(square_p, lambda t, x: mul(t, mul(_const(x, 2), x)))
ad.defjvp(erf_p, lambda t, x: mul(t, mul(_const(x, 2 / np.sqrt(np.pi)), exp(neg(square(x))))))
ad.defjvp(erfc_p, lambda t, x: mul(t, mul(_const(x, -2 / np.sqrt(np.pi)), exp(neg(square(x))))))
ad.defjvp2(erf_inv_p, lambda t, ans, x: mul(t, mul(_const(x, np.sqrt(np.pi) / 2), exp(square(ans)))))
ad.defjvp(lgamma_p, lambda t, x: mul(t, digamma(x)))
ad.defjvp(digamma_p, lambda t, x: mul(t, polygamma_p.bind(x, m=1)))
ad.defjvp(polygamma_p, lambda t, x, *, m: mul(t, polygamma_p.bind(x, m=m + 1)))


def polygamma(m, x):
    """The m-th derivative of digamma at x (m a non-negative static integer)."""
    (x,) = _lift_scalars(x)
    mv = core.concrete_value(m)
    if mv is None or np.ndim(mv) != 0:
        raise TypeError("lax.polygamma requires a static scalar integer order m")
    return polygamma_p.bind(x, m=int(mv))
ad.defjvp_zero(population_count_p)
ad.defjvp_zero(clz_p)


def _abs_jvp(t, x):
    a = core.get_aval(x)
    if dtypes.is_complex(a.dtype):
        ans = abs(x)
        return real(mul(conj(x), div(t, convert_element_type(ans, a.dtype))))
    return mul(t, sign(x))


ad.defjvp(abs_p, _abs_jvp)
ad.deflinear(real_p, lambda ct, x: [convert_element_type(ct, x.aval.dtype)])
ad.deflinear(imag_p, lambda ct, x: [mul(complex(_zeros_like(ct), neg(ct)), _one_c(x.aval))])
ad.deflinear(conj_p, lambda ct, x: [conj(ct)])


def _zeros_like(x):
    from .structural import full
    a = core.get_aval(x)
    return full(a.shape, 0, a.dtype)


def _one_c(aval):
    return core.Array(np.ones((), aval.dtype), True)


ad.deflinear(neg_p, lambda ct, x: [neg(ct)])


def _add_transpose(ct, x, y):
    return [_unbroadcast(ct, x.aval) if ad.is_undefined_primal(x) else None,
            _unbroadcast(ct, y.aval) if ad.is_undefined_primal(y) else None]


def _sub_transpose(ct, x, y):
    return [_unbroadcast(ct, x.aval) if ad.is_undefined_primal(x) else None,
            _unbroadcast(neg(ct), y.aval) if ad.is_undefined_primal(y) and type(ct) is not Zero else None]


def _add_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = add(x, y)
    if type(tx) is Zero:
        return out, _bcast_like(ty, out)
    if type(ty) is Zero:
        return out, _bcast_like(tx, out)
    return out, add(tx, ty)


def _sub_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = sub(x, y)
    if type(tx) is Zero:
        return out, _bcast_like(neg(ty), out)
    if type(ty) is Zero:
        return out, _bcast_like(tx, out)
    return out, sub(tx, ty)


ad.primitive_jvps[add_p] = _add_jvp
ad.primitive_transposes[add_p] = _add_transpose
ad.primitive_jvps[sub_p] = _sub_jvp
ad.primitive_transposes[sub_p] = _sub_transpose


def _mul_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = mul(x, y)
    t = Zero(core.get_aval(out))
    if type(tx) is not Zero:
        t = ad.add_tangents(t, _bcast_like(mul(tx, y), out))
    if type(ty) is not Zero:
        t = ad.add_tangents(t, _bcast_like(mul(x, ty), out))
    return out, t


def _mul_transpose(ct, x, y):
    if type(ct) is Zero:
        return [None, None]
    if ad.is_undefined_primal(x) and ad.is_undefined_primal(y):
        raise NotImplementedError("mul is not linear in both operands at once")
    if ad.is_undefined_primal(x):
        return [_unbroadcast(mul(ct, y), x.aval), None]
    return [None, _unbroadcast(mul(x, ct), y.aval)]


ad.primitive_jvps[mul_p] = _mul_jvp
ad.primitive_transposes[mul_p] = _mul_transpose


def _div_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = div(x, y)
    t = Zero(core.get_aval(out))
    if type(tx) is not Zero:
        t = ad.add_tangents(t, _bcast_like(div(tx, y), out))
    if type(ty) is not Zero:
        t = ad.add_tangents(t, _bcast_like(neg(mul(ty, div(out, y))), out))
    return out, t


def _div_transpose(ct, x, y):
    if type(ct) is Zero or not ad.is_undefined_primal(x):
        return [None, None]
    if ad.is_undefined_primal(y):
        raise NotImplementedError("div is linear only in its numerator")
    return [_unbroadcast(div(ct, y), x.aval), None]


ad.primitive_jvps[div_p] = _div_jvp
ad.primitive_transposes[div_p] = _div_transpose


def _rem_jvp_y(t, x, y):
    # rem(x, y) = x - y * trunc(x / y), so d/dy = -trunc(x / y).
    q = div(x, y)
    trunc = mul(sign(q), floor(abs(q)))
    return neg(mul(t, trunc))


ad.defjvp(rem_p, lambda t, x, y: _bcast_like(t, rem(x, y)), lambda t, x, y: _bcast_like(_rem_jvp_y(t, x, y),
                                                                                        rem(x, y)))


def _minmax_jvp(select_first):
    def jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        out = select_first.bind(x, y)
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


ad.primitive_jvps[max_p] = _minmax_jvp(max_p)
ad.primitive_jvps[min_p] = _minmax_jvp(min_p)
ad.defjvp(atan2_p,
          lambda t, x, y: _bcast_like(mul(t, div(y, add(square(x), square(y)))), atan2(x, y)),
          lambda t, x, y: _bcast_like(mul(t, div(neg(x), add(square(x), square(y)))), atan2(x, y)))
ad.defjvp_zero(nextafter_p)
for _p in (and_p, or_p, xor_p, shift_left_p, shift_right_logical_p, shift_right_arithmetic_p,
           eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
    ad.defjvp_zero(_p)


def _complex_transpose(ct, x, y):
    return [_unbroadcast(real(ct), x.aval) if ad.is_undefined_primal(x) else None,
            _unbroadcast(neg(imag(ct)), y.aval) if ad.is_undefined_primal(y) else None]


ad.deflinear(complex_p, _complex_transpose)


def _pow_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = pow(x, y)
    t = Zero(core.get_aval(out))
    if type(tx) is not Zero:
        ya = core.get_aval(y)
        yf = y if ya.dtype == core.get_aval(x).dtype else convert_element_type(y, core.get_aval(x).dtype)
        # d/dx x^y = y * x^(y-1); written with select so that y == 0 gives 0 rather than 0 * inf.
        dx = mul(yf, pow(x, sub(yf, _one(yf))))
        dx = select_n(eq(yf, _zeros_like(yf)), dx, _zeros_like(dx)) if core.get_aval(dx).shape == \
            core.get_aval(yf).shape else dx
        t = ad.add_tangents(t, _bcast_like(mul(tx, dx), out))
    if type(ty) is not Zero:
        # d/dy x^y = log(x) x^y, with the convention 0 at x == 0 (as JAX).
        safe_log = select_n(eq(x, _zeros_like(x)), log(x), _zeros_like(x))
        t = ad.add_tangents(t, _bcast_like(mul(ty, mul(safe_log, out)), out))
    return out, t


ad.primitive_jvps[pow_p] = _pow_jvp


def _integer_pow_jvp(t, x, *, y):
    if y == 0:
        return _zeros_like(t)
    d = mul(_const(x, y), integer_pow(x, y - 1)) if y != 1 else _bcast_like(_one(x), x)
    return mul(t, d)


ad.defjvp(integer_pow_p, _integer_pow_jvp)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    old = core.get_aval(x).dtype
    if type(t) is Zero or not dtypes.is_inexact(new_dtype) or not dtypes.is_inexact(old):
        return out, Zero(core.get_aval(out))
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type=False):
    if type(ct) is Zero:
        return [None]
    old = x.aval.dtype
    return [convert_element_type_p.bind(ct, new_dtype=old, weak_type=x.aval.weak_type)]


ad.primitive_jvps[convert_element_type_p] = _convert_jvp
ad.primitive_transposes[convert_element_type_p] = _convert_transpose


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

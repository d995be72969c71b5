"""Scalar forms of the primitives a fused kernel can compute: a table keyed by primitive object.

`scalar_expr(eqn, args)` returns Numba source computing one element of `eqn`'s output from the source `args` of
its operands' elements, cast to the output dtype, or None when the primitive (or this dtype combination) is not
fusible; such equations simply stay outside kernels.

Semantics follow the NumPy backend: NaN-propagating max/min, IEEE division (`error_model="numpy"`: x/0 is inf or
nan, no exception), integer arithmetic wrapping at the dtype's width (computed in 64 bits, then cast). float32
`exp`, `log`, `log1p`, `expm1`, `tanh`, `erf`, `erfc` and `logistic` use branch-free polynomial forms (`mathlib`,
within a few ulp of the exact function: `tests/compiler/test_mathlib.py`) because a call to the C library keeps LLVM
from vectorizing the loop (measured: 5.6 ms vs 0.33 ms for selu on 1e6 elements); float64 and the other
transcendental functions (sin, cos, ...) call the C library.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ....core import Primitive
from ....lax.elementwise import (abs_p, add_p, and_p, ceil_p, clamp_p, convert_element_type_p, cos_p, div_p, eq_p,
                                erf_p, erfc_p, exp_p, expm1_p, floor_p, ge_p, gt_p, integer_pow_p, is_finite_p, le_p, log1p_p, log_p,
                                logistic_p, lt_p, max_p, min_p, mul_p, ne_p, neg_p, not_p, or_p, rsqrt_p, select_n_p,
                                sign_p, sin_p, sqrt_p, square_p, sub_p, tanh_p, xor_p)
from ....lax import elementwise as ew
from ....lax.mul_add import mul_add_p
from ....lax.reductions import reduce_max_p, reduce_min_p, reduce_sum_p

# dtypes kernels handle (NumPy names); anything else (float16, bfloat16, complex, ...) stays on the NumPy path.
KERNEL_DTYPES = frozenset({"float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                           "bool"})


# The helpers generated kernel modules import from `mathlib` (the same line in every kernel's source).
MATHLIB_IMPORT = ("from fluxion._src.backends.compiler.fusion.mathlib import _erfcf, _erff, _expf, _expm1f, _fma, "
                  "_fmax, _fmin, _log1pf, _logf, _logistic, _logisticf, _select, _tanhf")


def dtype_ok(dt) -> bool:
    return np.dtype(dt).name in KERNEL_DTYPES


def np_type(dt) -> str:
    """Numba source naming the NumPy scalar type of `dt` (`np.float32`, `np.bool_`)."""
    name = np.dtype(dt).name
    return "np.bool_" if name == "bool" else f"np.{name}"


def numba_type(dt) -> str:
    """Numba source naming the Numba type of `dt` (`types.float32`, `types.boolean`)."""
    name = np.dtype(dt).name
    return "types.boolean" if name == "bool" else f"types.{name}"


def cast(dt, expr: str) -> str:
    return f"{np_type(dt)}({expr})"


def literal_source(raw) -> str:
    """Numba source for a scalar literal of its own dtype."""
    arr = np.asarray(raw)
    dt = arr.dtype
    v = arr.item()
    if dt == np.bool_:
        return "True" if v else "False"
    if dt.kind == "f":
        if v != v:
            text = "np.nan"
        elif v in (float("inf"), float("-inf")):
            text = "np.inf" if v > 0 else "-np.inf"
        else:
            text = repr(float(v))
        return cast(dt, text)
    return cast(dt, repr(int(v)))


Template = Callable[[list, list, np.dtype, dict], "str | None"]
TEMPLATES: dict[Primitive, Template] = {}


def _is_f(dt) -> bool:
    return np.dtype(dt).kind == "f"


def _is_int(dt) -> bool:
    return np.dtype(dt).kind in "iu"


def _reg(prim: Primitive, fn: Template) -> None:
    TEMPLATES[prim] = fn


def _arith(op: str, floats_only: bool = False) -> Template:
    def t(a, in_dts, out_dt, params):
        if floats_only and not _is_f(out_dt):
            return None
        if np.dtype(out_dt) == np.bool_:
            return None
        return f"({a[0]} {op} {a[1]})"
    return t


_reg(add_p, _arith("+"))
_reg(sub_p, _arith("-"))
_reg(mul_p, _arith("*"))
_reg(div_p, _arith("/", floats_only=True))


def _mul_add(a, in_dts, out_dt, params):
    """One fused multiply-add (`llvm.fma`), as XLA's contracted code computes it (float32/float64)."""
    return f"_fma({a[0]}, {a[1]}, {a[2]})" if np.dtype(out_dt) in (np.float32, np.float64) else None


_reg(mul_add_p, _mul_add)


def _neg(a, in_dts, out_dt, params):
    return None if np.dtype(out_dt) == np.bool_ else f"(-{a[0]})"


_reg(neg_p, _neg)


def _maxmin(which: str) -> Template:
    def t(a, in_dts, out_dt, params):
        if _is_f(out_dt):
            return f"_f{which}({a[0]}, {a[1]})"
        if np.dtype(out_dt) == np.bool_:
            return f"({a[0]} {'|' if which == 'max' else '&'} {a[1]})"
        return f"{which}({a[0]}, {a[1]})"
    return t


_reg(max_p, _maxmin("max"))
_reg(min_p, _maxmin("min"))


def _float_fn(f32: str, f64: str) -> Template:
    def t(a, in_dts, out_dt, params):
        dt = np.dtype(out_dt)
        if dt == np.float32:
            return f"{f32}({a[0]})"
        if dt == np.float64:
            return f"{f64}({a[0]})"
        return None
    return t


_reg(exp_p, _float_fn("_expf", "math.exp"))
_reg(log_p, _float_fn("_logf", "math.log"))
_reg(log1p_p, _float_fn("_log1pf", "math.log1p"))
_reg(expm1_p, _float_fn("_expm1f", "math.expm1"))
_reg(erf_p, _float_fn("_erff", "math.erf"))


def _erfc(a, in_dts, out_dt, params):
    # float64 stays with SciPy: the C library's erfc differs from it by hundreds of ulp in the far tail (x > 20).
    return f"_erfcf({a[0]})" if np.dtype(out_dt) == np.float32 else None


_reg(erfc_p, _erfc)
_reg(tanh_p, _float_fn("_tanhf", "math.tanh"))
_reg(sin_p, _float_fn("math.sin", "math.sin"))
_reg(cos_p, _float_fn("math.cos", "math.cos"))
_reg(sqrt_p, _float_fn("math.sqrt", "math.sqrt"))
_reg(logistic_p, _float_fn("_logisticf", "_logistic"))
_reg(floor_p, _float_fn("np.floor", "np.floor"))
_reg(ceil_p, _float_fn("np.ceil", "np.ceil"))


def _rsqrt(a, in_dts, out_dt, params):
    if not _is_f(out_dt):
        return None
    return f"({cast(out_dt, '1')} / math.sqrt({a[0]}))"


_reg(rsqrt_p, _rsqrt)


def _abs(a, in_dts, out_dt, params):
    if np.dtype(out_dt) == np.bool_ or np.dtype(out_dt).kind == "u":
        return None
    return f"abs({a[0]})"


_reg(abs_p, _abs)


def _sign(a, in_dts, out_dt, params):
    if _is_f(out_dt):  # +-1 for nonzero (including infinities), the operand itself for +-0 and NaN
        one, minus = cast(out_dt, "1.0"), cast(out_dt, "-1.0")
        return f"({one} if {a[0]} > 0 else ({minus} if {a[0]} < 0 else {a[0]}))"
    if np.dtype(out_dt).kind == "i":
        return f"(1 if {a[0]} > 0 else (-1 if {a[0]} < 0 else 0))"
    return None


_reg(sign_p, _sign)


def _square(a, in_dts, out_dt, params):
    return None if np.dtype(out_dt) == np.bool_ else f"({a[0]} * {a[0]})"


_reg(square_p, _square)


def _integer_pow(a, in_dts, out_dt, params):
    y = int(params["y"])
    if not 1 <= y <= 4 or np.dtype(out_dt) == np.bool_:
        return None
    return ew.binary_power(a[0], y, lambda u, v: f"({u} * {v})")  # XLA's multiplication order


_reg(integer_pow_p, _integer_pow)


def _cmp(op: str) -> Template:
    def t(a, in_dts, out_dt, params):
        return f"({a[0]} {op} {a[1]})"
    return t


for _p, _op in ((eq_p, "=="), (ne_p, "!="), (lt_p, "<"), (le_p, "<="), (gt_p, ">"), (ge_p, ">=")):
    _reg(_p, _cmp(_op))


def _bitwise(op: str) -> Template:
    def t(a, in_dts, out_dt, params):
        if np.dtype(out_dt) == np.bool_ or _is_int(out_dt):
            return f"({a[0]} {op} {a[1]})"
        return None
    return t


_reg(and_p, _bitwise("&"))
_reg(or_p, _bitwise("|"))
_reg(xor_p, _bitwise("^"))


def _not(a, in_dts, out_dt, params):
    if np.dtype(out_dt) == np.bool_:
        return f"(not {a[0]})"
    if _is_int(out_dt):
        return f"(~{a[0]})"
    return None


_reg(not_p, _not)


def _is_finite(a, in_dts, out_dt, params):
    return f"math.isfinite({a[0]})" if _is_f(in_dts[0]) else None


_reg(is_finite_p, _is_finite)


def _select_n(a, in_dts, out_dt, params):
    if len(a) != 3 or np.dtype(in_dts[0]) != np.bool_:
        return None
    return f"_select({a[0]}, {a[2]}, {a[1]})"


_reg(select_n_p, _select_n)


def _clamp(a, in_dts, out_dt, params):
    lo, x, hi = a
    if _is_f(out_dt):
        return f"_fmin(_fmax({x}, {lo}), {hi})"
    if _is_int(out_dt):
        return f"min(max({x}, {lo}), {hi})"
    return None


_reg(clamp_p, _clamp)


def _convert(a, in_dts, out_dt, params):
    src, dst = np.dtype(in_dts[0]), np.dtype(out_dt)
    if dst == np.bool_:
        return f"({a[0]} != 0)"
    if src.kind == "f" and dst.kind in "iu":
        return None  # saturating float->int conversion: left to the backend implementation
    return a[0]


_reg(convert_element_type_p, _convert)


# --------------------------------------------------------------------------------------------------------------
# Reductions: an accumulator's dtype, initial value and update
# --------------------------------------------------------------------------------------------------------------

REDUCTIONS = frozenset({reduce_sum_p, reduce_max_p, reduce_min_p})


def accumulator_dtype(prim: Primitive, dt) -> np.dtype:
    """The dtype fused kernels accumulate reduction `prim` of `dt` values in: float64 for float sums (float32 sums
    add float32 blocks into it: see `kernel.SUM_BLOCK`), 64-bit integers for integer sums (identical after the final
    cast), else `dt` itself."""
    dt = np.dtype(dt)
    if prim is reduce_sum_p:
        if dt.kind == "f":
            return np.dtype(np.float64)
        if dt.kind == "i":
            return np.dtype(np.int64)
        if dt.kind == "u":
            return np.dtype(np.uint64)
    return dt


def initial_value(prim: Primitive, dt) -> str:
    """Source of reduction `prim`'s identity in dtype `dt` (0, or the lowest/highest value for max/min)."""
    dt = np.dtype(dt)
    if prim is reduce_sum_p:
        return f"{np_type(dt)}(0)"
    is_max = prim is reduce_max_p
    if dt == np.bool_:
        return "False" if is_max else "True"
    if dt.kind == "f":
        return f"{np_type(dt)}({'-' if is_max else ''}np.inf)"
    info = np.iinfo(dt)
    return f"{np_type(dt)}({info.min if is_max else info.max})"


def combine(prim: Primitive, dt, acc: str, v: str) -> str:
    """Source of reduction `prim`'s accumulator `acc` updated with value `v` (NaN-propagating max/min for floats)."""
    dt = np.dtype(dt)
    if prim is reduce_sum_p:
        return f"{acc} + {v}"
    which = "max" if prim is reduce_max_p else "min"
    if dt.kind == "f":
        return f"_f{which}({acc}, {v})"
    if dt == np.bool_:
        return f"({acc} {'|' if which == 'max' else '&'} {v})"
    return f"{which}({acc}, {v})"


# --------------------------------------------------------------------------------------------------------------
# Elementwise equations
# --------------------------------------------------------------------------------------------------------------

def scalar_expr(eqn, args: list) -> str | None:
    """Source for one element of `eqn`'s (single) output, cast to its dtype; None if not fusible."""
    t = TEMPLATES.get(eqn.primitive)
    if t is None or eqn.primitive.multiple_results:
        return None
    out_dt = eqn.outvars[0].aval.dtype
    in_dts = [v.aval.dtype for v in eqn.invars]
    if not dtype_ok(out_dt) or not all(dtype_ok(d) for d in in_dts):
        return None
    expr = t(args, in_dts, out_dt, eqn.params)
    return None if expr is None else cast(out_dt, expr)


def fusible(eqn) -> bool:
    """Whether `eqn` has a scalar form (checked with placeholder operands)."""
    return scalar_expr(eqn, [f"_{k}" for k in range(len(eqn.invars))]) is not None

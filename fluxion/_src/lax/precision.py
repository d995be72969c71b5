"""`reduce_precision`: rounds floating-point values to a narrower format while keeping their dtype.

The result is the value the number would have in a float format with `exponent_bits` exponent bits and
`mantissa_bits` explicit mantissa bits (IEEE-style, with the usual bias), represented back in the operand's dtype:
the mantissa is rounded to nearest (ties to even), magnitudes beyond the narrower range become +-inf, those
below its smallest normal become +-0 (the narrower format is treated as having no subnormals, as XLA's
ReducePrecision does), and NaN stays NaN. `reduce_precision(x, 8, 7)` is a rounding of float32 to bfloat16
precision, `(5, 10)` to float16.

It is linear in the sense JAX uses: the JVP and the transpose apply the same rounding to the tangent/cotangent.
"""

from __future__ import annotations

from .. import core, dtypes
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, batching
from . import elementwise as ew
from .utils import standard_primitive

reduce_precision_p = standard_primitive("reduce_precision", weak_type="first")


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """`operand` rounded to a float format with the given exponent and mantissa widths (dtype unchanged).

    Raises:
      TypeError: a non-floating operand. ValueError: exponent_bits < 1 or mantissa_bits < 0.
    """
    (operand,) = ew._lift_scalars(operand)
    params = dict(exponent_bits=int(exponent_bits), mantissa_bits=int(mantissa_bits))
    _reduce_precision_abstract_eval(core.get_aval(operand), **params)
    return reduce_precision_p.bind(operand, **params)


def _reduce_precision_abstract_eval(x, *, exponent_bits, mantissa_bits):
    if not dtypes.is_float(x.dtype):
        raise TypeError(f"reduce_precision requires a real floating operand, got {x.dtype.name}")
    if exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be at least 1, got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(f"reduce_precision: mantissa_bits must be non-negative, got {mantissa_bits}")
    return ShapedArray(x.shape, x.dtype)


abstract_eval_rules[reduce_precision_p] = _reduce_precision_abstract_eval


def _reduce_precision_transpose(ct, x, **params):
    return [None if type(ct) is ad.Zero else reduce_precision_p.bind(ct, **params)]


ad.deflinear(reduce_precision_p, _reduce_precision_transpose)
batching.primitive_batchers[reduce_precision_p] = ew._elementwise_batch_rule(reduce_precision_p)

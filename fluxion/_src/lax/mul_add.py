"""The `mul_add` primitive: `x * y + z` with XLA's CPU rounding.

XLA's CPU compiler contracts a multiply feeding an add into one fused multiply-add (one rounding instead of two)
for float32/float64, and for float16 on CPUs with float16 arithmetic (AVX512-FP16); elsewhere 16-bit floats are
computed in float32 and rounded after every operation (see `backends.eager.special.mul_add`). Two callers need that
rounding to match JAX bit for bit: JAX's samplers, such as `uniform(minval, maxval)`, which ends in
`bits * (maxval - minval) + minval` (bound directly, so it survives jit, vmap and grad like any other op), and the
compiler's contraction pass (`backends.compiler.passes.contract`), which rewrites the multiply-adds of a jitted
program as XLA's code generator does. Eager `x * y + z` is two primitives and two roundings, as in JAX.
"""

from __future__ import annotations

from .. import core, dtypes
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import batching
from . import elementwise as ew
from .elementwise import _elementwise_batch_rule, defjvp_broadcasting
from .utils import standard_primitive

mul_add_p = standard_primitive("mul_add")


def mul_add(x, y, z):
    """`x * y + z` elementwise, rounded as XLA's CPU backend does (fused for float32/float64).

    Args:
      x, y, z: arrays of one floating dtype, of one shape or scalars.

    Returns:
      An array of the operands' dtype and broadcast shape.

    Raises:
      TypeError: the operands differ in dtype, are not floating, or have different non-scalar shapes.
    """
    _mul_add_abstract_eval(*(core.get_aval(v) for v in (x, y, z)))  # the eager path skips abstract evaluation
    return mul_add_p.bind(x, y, z)


def _mul_add_abstract_eval(x, y, z):
    if not (x.dtype == y.dtype == z.dtype) or not dtypes.is_float(x.dtype):
        raise TypeError(f"mul_add requires three operands of one floating dtype, got {x.dtype.name}, "
                        f"{y.dtype.name}, {z.dtype.name}")
    shape = ()
    for a in (x, y, z):
        if a.shape:
            if shape and a.shape != shape:
                raise TypeError(f"mul_add operands must have equal shapes or be scalars, got {x.shape}, "
                                f"{y.shape}, {z.shape}")
            shape = a.shape
    return ShapedArray(shape, x.dtype)


abstract_eval_rules[mul_add_p] = _mul_add_abstract_eval
defjvp_broadcasting(mul_add_p, lambda tx, ans, x, y, z: ew.mul(tx, y), lambda ty, ans, x, y, z: ew.mul(x, ty),
                    lambda tz, ans, x, y, z: tz)
batching.primitive_batchers[mul_add_p] = _elementwise_batch_rule(mul_add_p)

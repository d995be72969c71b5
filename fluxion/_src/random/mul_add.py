"""The `mul_add` primitive: `x * y + z` with XLA's CPU rounding, used where JAX's samplers compute `a * b + c`.

XLA's CPU compiler contracts a multiply feeding an add into one fused multiply-add (one rounding instead of two)
for float32/float64, and for float16 on CPUs with float16 arithmetic (AVX512-FP16); elsewhere 16-bit floats are
computed in float32 and rounded after every operation (see `backends.numpy.special.mul_add`). Samplers
such as `uniform(minval, maxval)` end in `bits * (maxval - minval) + minval`, so matching JAX bit for bit needs
that contraction; it is kept as its own primitive so that it survives jit, vmap and grad like any other op.
"""

from __future__ import annotations

from .. import dtypes
from ..core import ShapedArray
from ..interpreters import ad, batching
from ..lax import elementwise as ew
from ..lax.elementwise import _elementwise_batch_rule
from ..lax.utils import standard_primitive


def _mul_add_rule(x, y, z):
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


mul_add_p = standard_primitive("mul_add", _mul_add_rule)
batching.primitive_batchers[mul_add_p] = _elementwise_batch_rule(mul_add_p)


def _bcast(t, x, y, z):
    out_shape = max((getattr(v, "shape", ()) for v in (x, y, z)), key=len)
    if tuple(getattr(t, "shape", ())) == tuple(out_shape):
        return t
    from ..lax.structural import broadcast_in_dim
    return broadcast_in_dim(t, tuple(out_shape), ())


ad.defjvp(mul_add_p,
          lambda t, x, y, z: _bcast(ew.mul(t, y), x, y, z),
          lambda t, x, y, z: _bcast(ew.mul(x, t), x, y, z),
          lambda t, x, y, z: _bcast(t, x, y, z))


def mul_add(x, y, z):
    """`x * y + z` elementwise, rounded as XLA's CPU backend does (fused for float32/float64).

    Args:
      x, y, z: arrays of one floating dtype, of one shape or scalars.

    Returns:
      An array of the operands' dtype and broadcast shape.

    Raises:
      TypeError: the operands differ in dtype, are not floating, or have different non-scalar shapes.
    """
    from .. import core
    _mul_add_rule(*(core.get_aval(v) for v in (x, y, z)))  # the eager path skips abstract evaluation
    return mul_add_p.bind(x, y, z)

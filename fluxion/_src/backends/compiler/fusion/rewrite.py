"""Rewrites applied to a program before fusion planning (only on the fused tier, which has Numba kernels).

* A large dot product of two vectors, `dot_general(x, y)` contracting their only axis, becomes
  `reduce_sum(mul(x, y))`, which fusion turns into one chunked reduction kernel running on all idle cores. NumPy's
  BLAS computes such a product on one thread, limited by one core's memory bandwidth (measured on the 2-core
  benchmark machine for 1e7 float32: 0.83 ms through BLAS on one or two threads). On one thread the kernel is as
  fast as BLAS or faster -- it adds float32 blocks with 16-lane vector adds and combines the blocks in float64
  (`kernel.SUM_BLOCK`), so its result is also more accurate than `sdot`'s. Without Numba the product stays a BLAS
  call.
"""

from __future__ import annotations

from ....core import ClosedJaxpr, JaxprEqn, ShapedArray, Var
from ....lax.elementwise import mul_p
from ....lax.reductions import reduce_sum_p
from .. import contractions, ir
from . import check

# Vector dot products with at least this many elements become fused reductions.
DOT_REDUCE_MIN_ELEMENTS = 1 << 20
# In check mode (`check`) from this size, so small test programs exercise the rewrite.
CHECK_DOT_REDUCE_MIN_ELEMENTS = 64


def _vector_dot(e, min_elements: int) -> bool:
    return contractions.is_vector_dot(e) and ir.size(e.invars[0]) >= min_elements


def vector_dots_as_reductions(closed: ClosedJaxpr) -> ClosedJaxpr:
    """`closed` with large vector dot products written as a product and a sum (top level only)."""
    eqns = closed.jaxpr.eqns
    min_elements = CHECK_DOT_REDUCE_MIN_ELEMENTS if check.enabled() else DOT_REDUCE_MIN_ELEMENTS
    if not any(_vector_dot(e, min_elements) for e in eqns):
        return closed
    out = []
    for e in eqns:
        if not _vector_dot(e, min_elements):
            out.append(e)
            continue
        x, y = e.invars
        prod = Var(ShapedArray(x.aval.shape, x.aval.dtype))
        out.append(JaxprEqn(mul_p, [x, y], [prod], {}, e.source_info))
        out.append(JaxprEqn(reduce_sum_p, [prod], list(e.outvars), {"axes": (0,)}, e.source_info))
    return ir.with_eqns(closed, out)

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

from ....config import config
from ....core import ClosedJaxpr, JaxprEqn, ShapedArray, Var
from ....lax.elementwise import integer_pow_p, mul_p
from ....lax.reductions import reduce_sum_p
from ....lax.structural import iota_p
from .. import blas, contractions, ir
from . import check
from . import groups as groups_mod

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


# -- recomputing residuals -----------------------------------------------------------------------------------------
# At most this many equations are recomputed for one residual (the backward kernels gain one pass of arithmetic per
# equation and save a write and a read of the residual).
RECOMPUTE_MAX_EQNS = 12


def _cheap(e) -> bool:
    """Equations worth recomputing: arithmetic, comparisons, selections and conversions (`groups.exact`) and
    integer powers. Transcendental functions are not: the residual they produce is read instead (recomputing
    `tanh` inside the backward pass's column-reduction kernels measured several times slower than reading it)."""
    return groups_mod._ew_kind(e) and e.primitive is not iota_p and (
        groups_mod.exact(e) or e.primitive is integer_pow_p)


def _barrier(e) -> bool:
    """Equations that end a forward pass's fused region in practice: products and convolutions (a residual used
    only after one was written to memory by the forward kernel and read back by a backward one)."""
    return e.primitive in blas.BLAS_PRIMITIVES


class _Residuals:
    """Finds the large elementwise values read after a product that can be recomputed from values alive there."""

    def __init__(self, eqns, outvars):
        self.eqns = eqns
        self.producer = {v: i for i, e in enumerate(eqns) for v in e.outvars}
        self.last_use: dict = {}
        for j, e in enumerate(eqns):
            for v in e.invars:
                if type(v) is Var:
                    self.last_use[v] = j
        for v in outvars:
            if type(v) is Var:
                self.last_use[v] = len(eqns)
        # barriers_before[j]: how many barrier equations precede position j; last_barrier[j]: the position of the
        # last of them (-1 if none).
        self.barriers_before = [0]
        self.last_barrier = [-1]
        for i, e in enumerate(eqns):
            self.barriers_before.append(self.barriers_before[-1] + _barrier(e))
            self.last_barrier.append(i if _barrier(e) else self.last_barrier[-1])

    def late(self, v, j: int) -> bool:
        i = self.producer.get(v)
        return i is not None and self.barriers_before[j] > self.barriers_before[i + 1]

    def cone(self, v, j: int, alive_from: int) -> list[int] | None:
        """Producer equations (program order) recomputing `v` at position `j` from values read from memory there
        anyway (used at or after `alive_from`, the last product before `j`: read by it or by the kernels after it)
        plus at most one value the forward kernel will write for it, or None if `v` cannot be recomputed within
        `RECOMPUTE_MAX_EQNS` cheap elementwise steps (`_cheap`)."""
        out: list[int] = []
        seen: set = set()
        leaves: list = []

        def visit(x) -> bool:
            if type(x) is not Var or x in seen or x in leaves:  # (a leaf may be read twice: fma(-t, t, 1))
                return True
            i = self.producer.get(x)
            if i is None or self.last_use.get(x, -1) >= alive_from and x is not v:
                return True  # an input, a constant, or a value materialized for a use at or after `j` anyway
            e = self.eqns[i]
            if not _cheap(e) or len(out) >= RECOMPUTE_MAX_EQNS:
                # One value that is expensive to recompute may be read instead (`tanh(x)` in place of the two
                # residuals `1 - tanh(x)**2` and `(1 + tanh(x)) / 2` a tanh-based gelu keeps, a product's result
                # in place of `0.5 * x` and `3 * x**2`): it is written in place of the residual, and the
                # residuals sharing it cost one read between them.
                if x is v or leaves or e.primitive.multiple_results:
                    return False
                leaves.append(x)
                return True
            seen.add(x)
            for u in e.invars:
                if not visit(u):
                    return False
            out.append(i)
            return True

        return sorted(out) if visit(v) else None


def recompute_residuals(closed: ClosedJaxpr) -> ClosedJaxpr:
    """`closed` with large elementwise values that are read by elementwise equations after a product (the residuals
    a reverse-mode program keeps from its forward pass: `1 - tanh(x)**2`, `3 * x**2`, ...) recomputed next to
    those readers from values alive there anyway (top level only).

    The forward kernel then no longer writes the residual and the backward kernel no longer reads it -- two passes
    over memory traded for a few arithmetic operations in a kernel that runs anyway (as XLA's fusion duplicates
    cheap producers into consumers). Values are recomputed by the same operations, so results do not change.
    """
    from .. import passes
    j = closed.jaxpr
    eqns = list(j.eqns)
    if not any(_barrier(e) for e in eqns):
        return closed
    min_elements = 1 if check.enabled() else int(config.fluxion_fuse_min_elements)
    res = _Residuals(eqns, j.outvars)
    out: list = []
    clone_of: dict = {}
    changed = False
    for pos, e in enumerate(eqns):
        if groups_mod._ew_kind(e) and not e.primitive.multiple_results:
            shape = e.outvars[0].aval.shape
            new_invars = []
            for v in e.invars:
                if type(v) is Var and v.aval.shape == shape and ir.size(v) >= min_elements and res.late(v, pos):
                    got = clone_of.get(v)
                    if got is None:
                        cone = res.cone(v, pos, res.last_barrier[pos])
                        if cone:
                            for i in cone:
                                src = eqns[i]
                                if src.outvars[0] in clone_of:
                                    continue
                                ins = [clone_of.get(u, u) if type(u) is Var else u for u in src.invars]
                                outs = [Var(ShapedArray(o.aval.shape, o.aval.dtype)) for o in src.outvars]
                                out.append(src._replace(invars=ins, outvars=outs))
                                clone_of[src.outvars[0]] = outs[0]
                            got = clone_of[v]
                    if got is not None:
                        v = got
                        changed = True
                new_invars.append(v)
            e = e._replace(invars=new_invars)
        out.append(e)
    if not changed:
        return closed
    return passes.dce(ir.with_eqns(closed, out))

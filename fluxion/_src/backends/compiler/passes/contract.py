"""Multiply-add contraction: the products XLA's CPU code fuses into the sums that read them become `mul_add`.

JAX's CPU backend lets LLVM contract a floating multiply feeding an add or subtract of the same fused loop into one
fused multiply-add, rounded once. So under `jax.jit`, `a * b + c` is `fma(a, b, c)` and differs from the separately
rounded product and sum (NumPy's, and eager JAX's) on about a quarter of float32 inputs; every jitted multiply-add
(Adam's moments, `p - lr * g`, a normalization's scale and shift, an LSTM's `f * c + i * g`) carries that
rounding. This pass writes the same contractions into the program, measured against JAX 0.10.2 (float32 and
float64, 100,000 random triples per form, all equal after the pass):

* `a * b + c` and `c + a * b` -> `mul_add(a, b, c)`; `a * b - c` -> `mul_add(a, b, -c)`; `c - a * b` ->
  `mul_add(-a, b, c)`; a negated product `-(a * b)` counts as the product `(-a) * b`;
* `square(x)` and `integer_pow(x, 2)` are the product `x * x`;
* when both operands are products, the left one is fused (`a * b + c * d` -> `mul_add(a, b, c * d)`), unless only
  the right one may be;
* a chain contracts from the inside (`a * b + c * d + e * f` -> `mul_add(e, f, mul_add(a, b, c * d))`).

A product read more than once is fused into a reader when XLA would compute it there for that reader alone:
every other reader is an elementwise equation, and their loops are separate -- approximated as: the readers'
elementwise descendants never meet. XLA duplicates a cheap product into each loop that reads it, so `t + c` and
`t + d` returned separately are both contracted, and so is `t + c` beside `exp(t)`; in `(t + c) * (t + d)` the
two sums share a loop and neither is. A product that is also returned or read by a reduction or a matrix product is
stored once and read back, uncontracted. Nor is a product broadcast before the sum (XLA computes it before the
broadcast), or one of another shape or dtype than the sum.

Dtypes: float32 and float64, and float16 where XLA contracts it (CPUs with float16 arithmetic, see
`backends.eager.special.native_float16_fma`); bfloat16 and complex sums are left alone. Eager execution is not
affected (as in JAX, where each eager operation is its own program). Runs last in the pipeline, after CSE has
merged equal products (which changes their reader counts exactly as it does in XLA).
"""

from __future__ import annotations

import numpy as np

from ....core import ClosedJaxpr, Jaxpr, Literal, Var
from ....lax import elementwise as ew
from ....lax.mul_add import mul_add_p
from ....lax.reductions import reduce_max_p, reduce_min_p, reduce_prod_p, reduce_sum_p
from ....lax.structural import broadcast_in_dim_p, reshape_p
from ...eager.special import native_float16_fma
from .. import ir

# Equations XLA fuses into the loop of the elementwise equation reading them (what `region` follows).
_LOOP_FUSIBLE = frozenset(ew.ELEMENTWISE_PRIMITIVES) | {ew.select_n_p, ew.clamp_p, ew.convert_element_type_p,
                                                        mul_add_p, broadcast_in_dim_p, reshape_p}
# Reductions fuse their operand's loop too, but their result is a new fusion's input.
_REDUCTIONS = frozenset({reduce_sum_p, reduce_max_p, reduce_min_p, reduce_prod_p})
# Beyond this many descendants the region search stops and the product is left uncontracted.
_REGION_LIMIT = 256


def _contracts(dt: np.dtype) -> bool:
    dt = np.dtype(dt)
    return dt in (np.float32, np.float64) or (dt == np.float16 and native_float16_fma())


class _Program:
    """Producers and readers of one jaxpr's variables."""

    def __init__(self, jaxpr: Jaxpr):
        self.eqns = jaxpr.eqns
        self.producer: dict = {}
        self.readers: dict = {}  # var -> indices of reading equations, once per operand slot; -1 for an output
        for i, e in enumerate(jaxpr.eqns):
            for v in e.invars:
                if type(v) is Var:
                    self.readers.setdefault(v, []).append(i)
            for v in e.outvars:
                self.producer[v] = i  # the index of the equation computing v
        for v in jaxpr.outvars:
            if type(v) is Var:
                self.readers.setdefault(v, []).append(-1)
        self._regions: dict = {}

    def region(self, i: int) -> frozenset | None:
        """Equation `i` and the elementwise equations downstream of it (through fusible readers, into reductions
        but not past them); None when larger than `_REGION_LIMIT`."""
        if i in self._regions:
            return self._regions[i]
        seen = {i}
        stack = [i]
        while stack:
            e = self.eqns[stack.pop()]
            if e.primitive in _REDUCTIONS and len(seen) > 1:
                continue
            for v in e.outvars:
                for r in self.readers.get(v, ()):
                    if r < 0 or r in seen:
                        continue
                    p = self.eqns[r].primitive
                    if p in _LOOP_FUSIBLE or p in _REDUCTIONS:
                        seen.add(r)
                        stack.append(r)
            if len(seen) > _REGION_LIMIT:
                self._regions[i] = None
                return None
        out = frozenset(seen)
        self._regions[i] = out
        return out

    def only_reader_in_loop(self, v: Var, reader: int) -> bool:
        """Whether `reader` reads `v` once and XLA would compute `v` inside `reader`'s loop for it alone: every
        other reader of `v` is an elementwise equation of another loop (XLA then duplicates the cheap product into
        each). A program output or another kind of reader (a reduction, a product of matrices) makes XLA store `v`
        once and read it back (checked against JAX: `t + c` returned beside `t`, or beside `sum(t)`, is not
        contracted; beside `exp(t)` or `t * d`, it is)."""
        readers = self.readers.get(v, [])
        if readers.count(reader) != 1:
            return False
        if len(readers) == 1:
            return True
        mine = self.region(reader)
        if mine is None:
            return False
        for r in readers:
            if r == reader:
                continue
            if r < 0 or self.eqns[r].primitive not in _LOOP_FUSIBLE:
                return False
            theirs = self.region(r)
            if theirs is None or not mine.isdisjoint(theirs):
                return False
        return True

    def product(self, v, reader: int):
        """`(a, b, negated)` when `v` is a product (or a negated one) that `reader` may absorb, else None."""
        if type(v) is not Var or v not in self.producer or not self.only_reader_in_loop(v, reader):
            return None
        k = self.producer[v]
        e = self.eqns[k]
        negated = e.primitive is ew.neg_p
        if negated:
            inner = e.invars[0]
            if type(inner) is not Var or inner not in self.producer or not self.only_reader_in_loop(inner, k):
                return None
            e = self.eqns[self.producer[inner]]
        if e.primitive is ew.mul_p:
            a, b = e.invars
        elif e.primitive is ew.square_p or (e.primitive is ew.integer_pow_p and e.params["y"] == 2):
            a = b = e.invars[0]
        else:
            return None
        if a.aval.dtype != v.aval.dtype or b.aval.dtype != v.aval.dtype or e.outvars[0].aval.shape != v.aval.shape:
            return None
        return a, b, negated


def _negated(x, template, new_eqns: list):
    """`-x`: a literal negated, else a new `neg` equation (appended to `new_eqns`) built from `template`."""
    if type(x) is Literal:
        with np.errstate(all="ignore"):
            return ir.make_literal(np.negative(np.asarray(ir.literal_value(x), x.aval.dtype)), x.aval)
    out = Var(x.aval)
    new_eqns.append(template._replace(primitive=ew.neg_p, invars=[x], outvars=[out], params={}))
    return out


def _contract_one(prog: _Program, i: int, new_eqns: list):
    """The `mul_add` equation replacing equation `i` (appending the negations it reads to `new_eqns`), or None."""
    e = prog.eqns[i]
    if e.primitive not in (ew.add_p, ew.sub_p) or not _contracts(e.outvars[0].aval.dtype):
        return None
    out = e.outvars[0]
    x, y = e.invars
    if x.aval.dtype != out.aval.dtype or y.aval.dtype != out.aval.dtype:
        return None
    # (the product, the other operand, whether the product is subtracted), the left operand first
    choices = [(prog.product(x, i), y, False)]
    if x is not y:
        choices.append((prog.product(y, i), x, e.primitive is ew.sub_p))
    for k, (prod, addend, subtracted) in enumerate(choices):
        if prod is None:
            continue
        a, b, negated = prod
        if k == 0 and e.primitive is ew.sub_p:  # a * b - c == fma(a, b, -c)
            addend = _negated(addend, e, new_eqns)
        if negated != subtracted:  # c - a * b == fma(-a, b, c)
            a = _negated(a, e, new_eqns)
        return e._replace(primitive=mul_add_p, invars=[a, b, addend], params={})
    return None


def contract(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Rewrites the multiply-adds XLA's CPU code contracts into `mul_add` equations (recursively inside sub-jaxprs).

    Args:
      closed: the program (after CSE; see the module docstring for the forms and dtypes).

    Returns:
      An equivalent program up to rounding, rounded as JAX's jitted code; products read only by contracted sums are
      left for dead code elimination.
    """
    j = closed.jaxpr
    prog = _Program(j)
    eqns: list = []
    changed = False
    for i, e in enumerate(j.eqns):
        new_params = ir.map_sub_jaxprs(e.params, contract)
        if new_params is not e.params:
            e = e._replace(params=new_params)
            changed = True
        fused = _contract_one(prog, i, eqns)
        if fused is not None:
            e = fused
            changed = True
        eqns.append(e)
    if not changed:
        return closed
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns), closed.consts)

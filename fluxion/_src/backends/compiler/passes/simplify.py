"""Algebraic simplification: identities that autodiff and the numpy layer leave behind.

Rules (each applies only when the replacement has exactly the result's shape and dtype):

* `x + 0`, `0 + x`, `x - 0`, `x * 1`, `1 * x`, `x / 1`, `neg(neg(x))`, `integer_pow(x, 1)` -> `x`, where the
  constant may be a literal or a broadcast of one;
* `convert_element_type` to the operand's own dtype, `reshape`/`broadcast_in_dim` to the same shape, identity
  `transpose`, empty `squeeze`/`rev`/reductions, full `slice`, zero `pad`, single-operand
  `concatenate`, `stop_gradient`, `copy` -> the operand;
* a reduction over axes of extent 1 only -> `reshape` (as XLA: the sum of one `-0.0` stays `-0.0`);
* `x / broadcast(y)` -> `x * broadcast(1 / y)` and `x / c` -> `x * (1 / c)` for a literal `c` (float16/32/64): XLA's
  simplifier makes both rewrites, so JAX's quotients by a row, a column, a scalar or a constant carry the rounding
  of the reciprocal; with them fluxion's quotients have JAX's bits (a true quotient can differ by one ulp);
* as XLA, `x / sqrt(y)` -> `x * rsqrt(y)`, `x / rsqrt(y)` -> `x * sqrt(y)`, `x / exp(y)` -> `x * exp(-y)`,
  `(a / b) / (c / d)` -> `(a * d) / (b * c)`, `(a / b) / c` -> `a / (b * c)`, `a / (b / c)` -> `(a * c) / b`
  (float16/32/64);
* `transpose(transpose(x))`, `reshape(reshape(x))`, `broadcast_in_dim(broadcast_in_dim(x))` -> one equation;
* `select_n` with one case, identical cases or a literal predicate -> the chosen case;
* `transpose` swapping the two free axes of a matrix product `dot_general(a, b)` read by nothing else ->
  `dot_general(b, a)`: the product is computed in the layout its readers want. Autodiff writes the weight gradient
  of `x @ w` as `transpose(dot(transpose(g), x))`; without this rule the gradient is a transposed view that the
  next fused kernel (Adam's update) first copies element by element with strided reads.

Floating-point note: `x + 0.0 -> x` maps `-0.0` to `-0.0` where IEEE gives `+0.0`; XLA makes the same trade.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ....core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Primitive, ShapedArray, Var
from ....lax.elementwise import (add_p, convert_element_type_p, div_p, exp_p, integer_pow_p, mul_p, neg_p, rsqrt_p,
                                 select_n_p, sqrt_p, sub_p)
from ....lax.reductions import dot_general_p, reduce_max_p, reduce_min_p, reduce_prod_p, reduce_sum_p
from ....lax.structural import (broadcast_in_dim_p, concatenate_p, copy_p, pad_p, reshape_p, rev_p, slice_p, squeeze_p,
                               stop_gradient_p, transpose_p)
from .. import ir


def _same_type(a, b) -> bool:
    return a.aval.shape == b.aval.shape and a.aval.dtype == b.aval.dtype


class _Ctx:
    """What rules may ask about the program rewritten so far: producers of variables and scalar constants."""

    def __init__(self, uses: dict):
        self.producer: dict = {}
        self.uses = uses  # variable -> number of readers in the original program (outputs count as readers)

    def scalar(self, v) -> Any:
        """The scalar value of `v` if it is a literal or a broadcast of one, else None."""
        if type(v) is Literal:
            return ir.literal_value(v)
        e = self.producer.get(v)
        if e is not None and e.primitive is broadcast_in_dim_p and type(e.invars[0]) is Literal:
            return ir.literal_value(e.invars[0])
        return None

    def is_const(self, v, c) -> bool:
        s = self.scalar(v)
        if s is None:
            return False
        with np.errstate(all="ignore"):
            return bool(np.asarray(s) == c)


Rule = Callable[[_Ctx, JaxprEqn], Any]
"""Returns None (no change), an atom (the result), a new equation, or a list of new equations of which the last
computes the result (the others compute what it reads)."""


def _identity_operand(e: JaxprEqn):
    return e.invars[0]


def _binary_identity(left_unit: Any, right_unit: Any) -> Rule:
    def rule(ctx, e):
        x, y = e.invars
        out = e.outvars[0]
        if right_unit is not None and ctx.is_const(y, right_unit) and _same_type(x, out):
            return x
        if left_unit is not None and ctx.is_const(x, left_unit) and _same_type(y, out):
            return y
        return None
    return rule


def _neg(ctx, e):
    p = ctx.producer.get(e.invars[0])
    if p is not None and p.primitive is neg_p:
        return p.invars[0]
    return None


def _when(pred: Callable[[JaxprEqn], bool]) -> Rule:
    def rule(ctx, e):
        return e.invars[0] if pred(e) and _same_type(e.invars[0], e.outvars[0]) else None
    return rule


def _either(*rules: Rule) -> Rule:
    """The first of `rules` that applies."""
    def rule(ctx, e):
        for r in rules:
            res = r(ctx, e)
            if res is not None:
                return res
        return None
    return rule


def _transposed_product(ctx, e, perm: tuple):
    """`dot_general(b, a)` for `transpose(dot_general(a, b))` when the transpose swaps the product's two free axes
    (after its batch axes) and is the product's only reader, else None."""
    x = e.invars[0]
    p = ctx.producer.get(x)
    if p is None or p.primitive is not dot_general_p or ctx.uses.get(x, 0) != 1:
        return None
    (lc, rc), (lb, rb) = p.params["dimension_numbers"]
    lhs, rhs = p.invars
    nb = len(lb)
    if lhs.aval.ndim - nb - len(lc) != 1 or rhs.aval.ndim - nb - len(rc) != 1:
        return None
    if perm != tuple(range(nb)) + (nb + 1, nb):
        return None
    params = dict(p.params, dimension_numbers=((tuple(rc), tuple(lc)), (tuple(rb), tuple(lb))))
    prec = params.get("precision")
    if isinstance(prec, (tuple, list)) and len(prec) == 2:
        params["precision"] = (prec[1], prec[0])
    return p._replace(invars=[rhs, lhs], outvars=list(e.outvars), params=params)


def _transpose(ctx, e):
    perm = tuple(e.params["permutation"])
    if perm == tuple(range(len(perm))):
        return e.invars[0]
    swapped = _transposed_product(ctx, e, perm)
    if swapped is not None:
        return swapped
    p = ctx.producer.get(e.invars[0])
    if p is not None and p.primitive is transpose_p:
        inner = tuple(p.params["permutation"])
        composed = tuple(inner[k] for k in perm)
        if composed == tuple(range(len(composed))):
            return p.invars[0]
        return e._replace(invars=[p.invars[0]], params=dict(e.params, permutation=composed))
    return None


def _reshape(ctx, e):
    if e.params.get("dimensions") is not None:
        return None
    x = e.invars[0]
    if tuple(e.params["new_sizes"]) == x.aval.shape:
        return x
    p = ctx.producer.get(x)
    if p is not None and p.primitive is reshape_p and p.params.get("dimensions") is None:
        return e._replace(invars=[p.invars[0]])
    return None


def _broadcast(ctx, e):
    x = e.invars[0]
    dims = tuple(e.params["broadcast_dimensions"])
    if tuple(e.params["shape"]) == x.aval.shape and dims == tuple(range(x.aval.ndim)):
        return x
    p = ctx.producer.get(x)
    if p is not None and p.primitive is broadcast_in_dim_p:
        inner = tuple(p.params["broadcast_dimensions"])
        return e._replace(invars=[p.invars[0]], params=dict(e.params, broadcast_dimensions=tuple(dims[d] for d in inner)))
    return None


def _degenerate_reduction(ctx, e):
    """A reduction whose reduced axes all have extent 1 -> `reshape` (XLA's simplifier does the same, so a sum of
    one `-0.0` is `-0.0` in JAX, not the `+0.0` that adding it to the initial zero would give)."""
    axes = e.params["axes"]
    x = e.invars[0]
    if type(x) is Literal or not axes or any(x.aval.shape[a] != 1 for a in axes):
        return None
    if x.aval.dtype != e.outvars[0].aval.dtype:
        return None
    return e._replace(primitive=reshape_p, params={"new_sizes": e.outvars[0].aval.shape, "dimensions": None})


# Reductions over no axis are their operand; over axes of extent 1 only, a reshape.
_reduction = _either(_when(lambda e: not e.params["axes"]), _degenerate_reduction)


def _divide_by_repeated(ctx, e):
    """`x * (1 / c)` for `x / c` with a literal `c`; `x * (1 / y)` for `x / y` with `y` implicitly broadcast (a 0-d
    divisor of a larger quotient); `x * broadcast(1 / y)` for `x / broadcast(y)` when the broadcast repeats elements
    (one that only adds extent-1 axes is a reshape to XLA, and the quotient stays true). Real float16/32/64 only, and
    not when `x` is a literal (XLA folds a quotient of constants as a true quotient). bfloat16 is left out: XLA's
    bfloat16 quotients by a row are not products with a rounded reciprocal."""
    x, y = e.invars
    out = e.outvars[0]
    dt = out.aval.dtype
    if dt.kind != "f" or type(x) is Literal or y.aval.dtype != dt:
        return None
    if type(y) is Literal:
        return e._replace(primitive=mul_p, invars=[x, _reciprocal_literal(y)])
    if ir.size(y) < ir.size(out):
        recip = Var(y.aval)
        ctx.uses[recip] = 1
        return [_reciprocal(e, y, recip), e._replace(primitive=mul_p, invars=[x, recip])]
    p = ctx.producer.get(y)
    if p is None or p.primitive is not broadcast_in_dim_p or ir.size(p.invars[0]) == ir.size(y):
        return None
    base = p.invars[0]
    if type(base) is Literal:
        recip, first = _reciprocal_literal(base), []
    else:
        recip = Var(base.aval)
        ctx.uses[recip] = 1
        first = [_reciprocal(e, base, recip)]
    repeated = Var(y.aval)
    ctx.uses[repeated] = 1
    return first + [p._replace(invars=[recip], outvars=[repeated]), e._replace(primitive=mul_p, invars=[x, repeated])]


def _divide_by_computed(ctx, e):
    """XLA's rewrites of a quotient by a computed divisor, which change its rounding (checked against JAX 0.10 for
    float16/32/64): `x / sqrt(y)` -> `x * rsqrt(y)`, `x / rsqrt(y)` -> `x * sqrt(y)`, `x / exp(y)` ->
    `x * exp(-y)`, `(a / b) / (c / d)` -> `(a * d) / (b * c)`, `(a / b) / c` -> `a / (b * c)` and
    `a / (b / c)` -> `(a * c) / b`, whatever other readers the inner results have. The quotient rules above come
    first (XLA's order: `(a / b) / 3.0` is `(a / b) * (1 / 3)`)."""
    x, y = e.invars
    dt = e.outvars[0].aval.dtype
    if dt.kind != "f" or x.aval.dtype != dt or y.aval.dtype != dt:
        return None
    py = ctx.producer.get(y) if type(y) is not Literal else None
    if py is not None and py.primitive in _INVERSES:
        inv = _INVERSES[py.primitive]
        z = py.invars[0]
        first = []
        if inv is exp_p:  # exp(-z)
            negated = Var(z.aval)
            first.append(py._replace(primitive=neg_p, invars=[z], outvars=[negated], params={}))
            z = negated
        factor = Var(y.aval)
        ctx.uses[factor] = 1
        return first + [py._replace(primitive=inv, invars=[z], outvars=[factor], params={}),
                        e._replace(primitive=mul_p, invars=[x, factor])]
    px = ctx.producer.get(x) if type(x) is not Literal else None
    if (px is not None and px.primitive is div_p and py is not None and py.primitive is div_p
            and _same_type(px.invars[0], x) and _same_type(px.invars[1], x)
            and _same_type(py.invars[0], x) and _same_type(py.invars[1], x)):  # (a / b) / (c / d)
        (a, b), (c, d) = px.invars, py.invars
        ad, bc = Var(x.aval), Var(x.aval)
        ctx.uses[ad] = ctx.uses[bc] = 1
        return [e._replace(primitive=mul_p, invars=[a, d], outvars=[ad]),
                e._replace(primitive=mul_p, invars=[b, c], outvars=[bc]), e._replace(invars=[ad, bc])]
    if px is not None and px.primitive is div_p and _same_type(px.invars[1], y):  # (a / b) / c
        a, b = px.invars
        bc = Var(y.aval)
        ctx.uses[bc] = 1
        return [e._replace(primitive=mul_p, invars=[b, y], outvars=[bc]), e._replace(invars=[a, bc])]
    if py is not None and py.primitive is div_p and _same_type(py.invars[0], x):  # a / (b / c)
        b, c = py.invars
        ac = Var(x.aval)
        ctx.uses[ac] = 1
        return [e._replace(primitive=mul_p, invars=[x, c], outvars=[ac]), e._replace(invars=[ac, b])]
    return None


def _reciprocal(e: JaxprEqn, y, out: Var) -> JaxprEqn:
    """`out = 1 / y` (a division equation like `e`)."""
    return e._replace(invars=[ir.make_literal(1, ShapedArray((), y.aval.dtype, True)), y], outvars=[out])


def _reciprocal_literal(c: Literal) -> Literal:
    with np.errstate(all="ignore"):
        return ir.make_literal(np.divide(np.asarray(1, c.aval.dtype), np.asarray(ir.literal_value(c), c.aval.dtype)),
                               c.aval)


_INVERSES = {sqrt_p: rsqrt_p, rsqrt_p: sqrt_p, exp_p: exp_p}  # divisor's primitive -> its reciprocal's


def _select(ctx, e):
    which, *cases = e.invars
    out = e.outvars[0]
    if len(cases) == 1 and _same_type(cases[0], out):
        return cases[0]
    first = cases[0]
    if type(first) is not Literal and all(c is first for c in cases) and _same_type(first, out):
        return first
    if type(which) is Literal:
        i = int(np.clip(int(np.asarray(ir.literal_value(which))), 0, len(cases) - 1))
        if _same_type(cases[i], out):
            return cases[i]
    return None


def _slice(ctx, e):
    x = e.invars[0]
    strides = e.params.get("strides") or (1,) * x.aval.ndim
    full = (all(s == 0 for s in e.params["start_indices"]) and tuple(e.params["limit_indices"]) == x.aval.shape
            and all(s == 1 for s in strides))
    return x if full else None


RULES: dict[Primitive, Rule] = {
    add_p: _binary_identity(0, 0),
    sub_p: _binary_identity(None, 0),
    mul_p: _binary_identity(1, 1),
    div_p: _either(_binary_identity(None, 1), _divide_by_repeated, _divide_by_computed),
    neg_p: _neg,
    integer_pow_p: _when(lambda e: e.params["y"] == 1),
    convert_element_type_p: _when(lambda e: e.invars[0].aval.dtype == e.params["new_dtype"]),
    transpose_p: _transpose,
    reshape_p: _reshape,
    broadcast_in_dim_p: _broadcast,
    squeeze_p: _when(lambda e: not e.params["dimensions"]),
    rev_p: _when(lambda e: not e.params["dimensions"]),
    reduce_sum_p: _reduction,
    reduce_max_p: _reduction,
    reduce_min_p: _reduction,
    reduce_prod_p: _reduction,
    stop_gradient_p: _when(lambda e: True),
    copy_p: _when(lambda e: True),
    select_n_p: _select,
    slice_p: _slice,
    pad_p: _when(lambda e: all(tuple(c) == (0, 0, 0) for c in e.params["padding_config"])),
    concatenate_p: _when(lambda e: len(e.invars) == 1),
}


def simplify(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Applies the algebraic identities above until none applies (recursively inside sub-jaxprs).

    Args:
      closed: the program.

    Returns:
      An equivalent program; equations made dead by a rewrite are left for dead code elimination.
    """
    j = closed.jaxpr
    uses: dict = {}
    for eqn in j.eqns:
        for v in eqn.invars:
            uses[v] = uses.get(v, 0) + 1
    for v in j.outvars:
        uses[v] = uses.get(v, 0) + 1
    ctx = _Ctx(uses)
    ren = ir.Renamer()
    eqns: list = []
    changed = False

    def emit(eqn) -> None:
        """Simplifies `eqn` until no rule applies, then appends it; equations a rule adds before its result are
        simplified the same way first (and may rename what the later ones read, hence `ren.eqn` on each)."""
        nonlocal changed
        eqn = ren.eqn(eqn)
        rule = RULES.get(eqn.primitive)
        while rule is not None and not eqn.primitive.multiple_results:
            res = rule(ctx, eqn)
            if res is None:
                break
            changed = True
            if isinstance(res, list):  # equations computing what the last one reads come first
                for first in res[:-1]:
                    emit(first)
                res = res[-1]
            if isinstance(res, JaxprEqn):
                eqn = ren.eqn(res)
                rule = RULES.get(eqn.primitive)
                continue
            ren.set(eqn.outvars[0], res)
            if type(res) is not Literal:  # its readers now read `res`
                uses[res] = uses.get(res, 0) + uses.get(eqn.outvars[0], 0)
            return
        eqns.append(eqn)
        for v in eqn.outvars:
            ctx.producer[v] = eqn

    for eqn in j.eqns:
        new_params = ir.map_sub_jaxprs(eqn.params, simplify)
        if new_params is not eqn.params:
            eqn = eqn._replace(params=new_params)
            changed = True
        emit(eqn)
    if not changed:
        return closed
    return ClosedJaxpr(Jaxpr(j.constvars, j.invars, ren.outvars(j.outvars), eqns), closed.consts)

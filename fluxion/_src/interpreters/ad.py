"""Automatic differentiation: forward mode (JVP), linearization, and transposition (reverse mode).

Reverse mode is derived from forward mode (Autodidax, Part 4): `linearize` runs the JVP with the primal half
computed directly and the tangent half staged into a jaxpr (a `JaxprTrace` pushed *below* the JVP trace captures
exactly the operations that touch tangents); `backward_pass` then transposes that linear jaxpr. A new primitive
therefore needs a JVP rule, plus a transpose rule if it is linear.

Tangents may be the symbolic `Zero`, so untouched inputs cost nothing and integer inputs never get tangents.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import core, dtypes
from ..core import Literal, ShapedArray, Tracer
from . import array_ops
from . import partial_eval as pe

# Rule tables (one grep finds every rule of a primitive).
primitive_jvps: dict = {}        # prim -> rule(primals, tangents, **params) -> (primal_out, tangent_out)
primitive_transposes: dict = {}  # prim -> rule(cts, *args, **params) -> list of cotangents (None = no cotangent)


class Zero:
    """A symbolic zero tangent/cotangent of abstract value `aval`."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """Marks a linear input of an equation during transposition (its value is what we solve for)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x: Any) -> bool:
    return type(x) is UndefinedPrimal


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    return ShapedArray(aval.shape, aval.dtype, aval.weak_type, aval.sharding)  # (the type keeps its sharding)


def zeros_like_aval(aval: ShapedArray):
    return array_ops.full(aval.shape, 0, aval.dtype)


def instantiate_zeros(t: Any):
    return zeros_like_aval(t.aval) if type(t) is Zero else t


def add_tangents(a: Any, b: Any):
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    return array_ops.add(a, b)


def is_differentiable_dtype(dtype: np.dtype) -> bool:
    return dtypes.is_inexact(dtype)


# --------------------------------------------------------------------------------------------------------------
# Forward mode
# --------------------------------------------------------------------------------------------------------------

class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent", "_aval")

    def __init__(self, trace: "JVPTrace", primal: Any, tangent: Any):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent
        self._aval = None

    @property
    def aval(self) -> ShapedArray:
        # Computed once: nested AD asks a tracer for its aval many times, and each answer otherwise recurses
        # through every level of primals below it. (Primals are immutable, so the cache cannot go stale.)
        aval = self._aval
        if aval is None:
            aval = self._aval = core.get_aval(self.primal)
        return aval

    def _concrete_value(self):
        return core.concrete_value(self.primal)

    def __repr__(self) -> str:
        # As JAX prints the tracers of grad/jvp: the primal (a value or another tracer) and the tangent's type.
        p = self.primal
        primal = repr(p) if isinstance(p, Tracer) else str(np.asarray(core.concrete_value(p)))
        return f"GradTracer(primal={primal}, typeof(tangent)={core.get_aval(self.tangent).str_short()})"

    def _origin_description(self) -> str:
        p = self.primal
        return p._origin_description() if isinstance(p, Tracer) else ""


class JVPTrace(core.Trace):
    def pure(self, val):
        return JVPTracer(self, val, Zero(core.get_aval(val)))

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        for t in tangents:
            if type(t) is not Zero:
                break
        else:  # every tangent is a symbolic zero: only the primal is computed
            out = primitive.bind(*primals, **params)
            if primitive.multiple_results:
                return [JVPTracer(self, o, Zero(core.get_aval(o))) for o in out]
            return JVPTracer(self, out, Zero(core.get_aval(out)))
        rule = primitive_jvps.get(primitive)
        if rule is None:
            raise NotImplementedError(f"Differentiation rule for '{primitive.name}' not implemented "
                                      "(forward/reverse-mode autodiff of this primitive is unsupported)")
        primal_out, tangent_out = rule(primals, tangents, **params)
        if primitive.multiple_results:
            return [JVPTracer(self, p, t) for p, t in zip(primal_out, tangent_out)]
        return JVPTracer(self, primal_out, tangent_out)

    def process_custom_jvp_call(self, primitive, fun, jvp, tracers, *, symbolic_zeros=False):
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents):
            outs = primitive.bind_fun(fun, jvp, *primals)
            return [JVPTracer(self, o, Zero(core.get_aval(o))) for o in outs]
        tangents = [instantiate_zeros(t) for t in tangents]
        primals_out, tangents_out = jvp(primals, tangents)
        return [JVPTracer(self, p, t) for p, t in zip(primals_out, tangents_out)]

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, tracers, out_trees):
        from .custom import custom_lin_p
        primals = [t.primal for t in tracers]
        tangents = [t.tangent for t in tracers]
        if all(type(t) is Zero for t in tangents):
            outs = primitive.bind_fun(fun, fwd, bwd, *primals, out_trees=out_trees)
            return [JVPTracer(self, o, Zero(core.get_aval(o))) for o in outs]
        res, primals_out = fwd(*primals)
        tangents = [instantiate_zeros(t) for t in tangents]
        out_avals = [core.get_aval(p).strip_weak_type() for p in primals_out]
        tangents_out = custom_lin_p.bind(*res, *tangents, num_res=len(res), bwd=bwd, out_avals=tuple(out_avals),
                                         in_avals=tuple(core.get_aval(t) for t in tangents))
        return [JVPTracer(self, p, t) for p, t in zip(primals_out, tangents_out)]


def jvp_flat(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list, list]:
    """Forward mode on flat lists: returns (primal outputs, tangent outputs; tangents may be `Zero`)."""
    with core.new_main(JVPTrace) as main:
        trace = main.trace
        tracers = [JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
        outs = fun(*tracers)
        out_tracers = [core.full_raise(trace, o) for o in outs]
        return [t.primal for t in out_tracers], [t.tangent for t in out_tracers]


# --------------------------------------------------------------------------------------------------------------
# Linearization and transposition
# --------------------------------------------------------------------------------------------------------------

class LinearFunction:
    """The linear map produced by `linearize`: a jaxpr from input tangents to output tangents, with residuals."""

    def __init__(self, jaxpr: core.Jaxpr, consts: list, in_avals: list, out_zero: list[bool]):
        self.jaxpr = jaxpr
        self.consts = consts
        self.in_avals = in_avals
        self.out_zero = out_zero

    def __call__(self, *tangents):
        """Applies the linear map (forward): tangents in, tangents out."""
        return core.eval_jaxpr(self.jaxpr, self.consts, *tangents)

    def transpose(self, cotangents: Sequence[Any]) -> list:
        """Applies the transposed map: output cotangents in, input cotangents out (`Zero` where there is none)."""
        return backward_pass(self.jaxpr, self.consts, cotangents)


def linearize_flat(fun: Callable, primals: Sequence[Any]) -> tuple[list, LinearFunction]:
    """Evaluates `fun` at `primals` and stages its derivative there as a linear jaxpr.

    Returns:
      (primal outputs, LinearFunction).
    """
    builder = pe.JaxprBuilder()
    with core.new_main(pe.JaxprTrace, dynamic=False, payload=builder) as lin_main:
        lin_trace = lin_main.trace
        in_avals = [tangent_aval(core.get_aval(p)) for p in primals]
        tangent_in = [lin_trace.new_arg(a) for a in in_avals]
        primals_out, tangents_out = jvp_flat(fun, primals, tangent_in)
        out_zero = [type(t) is Zero for t in tangents_out]
        out_tracers = [core.full_raise(lin_trace, instantiate_zeros(t)) for t in tangents_out]
        jaxpr, consts = builder.to_jaxpr(out_tracers)
    return primals_out, LinearFunction(jaxpr, consts, in_avals, out_zero)


def backward_pass(jaxpr: core.Jaxpr, consts: Sequence[Any], cotangents: Sequence[Any]) -> list:
    """Transposes a linear jaxpr: propagates output cotangents back to its inputs.

    The jaxpr's invars are the linear inputs; constvars and literals are non-linear residuals. Equations whose
    inputs are all non-linear (they appear after batching or inside control-flow bodies) are evaluated forward
    first; every other equation is transposed. Returns one cotangent (or `Zero`) per invar.
    """
    primal_env = dict(zip(jaxpr.constvars, consts))
    linear_vars = set(jaxpr.invars)
    linear_eqns = []
    for eqn in jaxpr.eqns:
        # (Literals are never in linear_vars, and they hash like any object, so no Literal test is needed.)
        for v in eqn.invars:
            if v in linear_vars:
                linear_vars.update(eqn.outvars)
                linear_eqns.append(eqn)
                break
        else:
            ins = [v.val if type(v) is Literal else primal_env[v] for v in eqn.invars]
            outs = eqn.primitive.bind(*ins, **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
            primal_env.update(zip(eqn.outvars, outs))
    ct_env: dict = {}

    def write_ct(v, ct):
        if ct is None or type(ct) is Zero or v not in linear_vars:
            return
        prev = ct_env.get(v)
        ct_env[v] = ct if prev is None else add_tangents(prev, ct)

    for v, ct in zip(jaxpr.outvars, cotangents):
        write_ct(v, ct)

    transposes = primitive_transposes
    for eqn in reversed(linear_eqns):
        prim = eqn.primitive
        if prim.multiple_results:
            cts_out = [ct_env.pop(v, None) for v in eqn.outvars]
            if all(c is None for c in cts_out):
                continue
        else:
            ct = ct_env.pop(eqn.outvars[0], None)
            if ct is None:
                continue
        invals = [UndefinedPrimal(v.aval) if v in linear_vars else v.val if type(v) is Literal else primal_env[v]
                  for v in eqn.invars]
        rule = transposes.get(prim)
        if rule is None:
            exc = ValueError if prim.name in ("while", "custom_vmap_call") else NotImplementedError
            raise exc(transpose_missing_message(prim))
        if prim.multiple_results:
            cts = [Zero(v.aval) if c is None else c for v, c in zip(eqn.outvars, cts_out)]
            cts_in = rule(cts, *invals, **eqn.params)
        else:
            cts_in = rule(ct, *invals, **eqn.params)
        for v, x, ct_in in zip(eqn.invars, invals, cts_in):
            if type(x) is UndefinedPrimal:
                write_ct(v, ct_in)
    return [ct_env[v] if v in ct_env else Zero(v.aval) for v in jaxpr.invars]


# --------------------------------------------------------------------------------------------------------------
# Transformations of whole jaxprs (for primitives that carry one: calls, control flow)
# --------------------------------------------------------------------------------------------------------------

def jvp_jaxpr(closed: core.ClosedJaxpr, nonzeros: Sequence[bool], instantiate: bool | Sequence[bool]
              ) -> tuple[core.ClosedJaxpr, list[bool]]:
    """The JVP of a closed jaxpr, as a closed jaxpr.

    Args:
      closed: the program.
      nonzeros: per input, whether its tangent is nonzero (only those tangents are inputs of the result).
      instantiate: per output (or one bool for all), emit its tangent even when it is a symbolic zero.

    Returns:
      (jaxpr taking (primals..., nonzero tangents...) and returning (primals..., emitted tangents...), which output
      tangents are emitted).
    """
    n_in = len(closed.in_avals)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(closed.out_avals)
    out_nz: list[bool] = []

    def fun(*args):
        primals = list(args[:n_in])
        it = iter(args[n_in:])
        tangents = [next(it) if nz else Zero(a) for nz, a in zip(nonzeros, closed.in_avals)]
        p_out, t_out = jvp_flat(lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs), primals, tangents)
        out_nz.clear()
        ts = []
        for t, inst in zip(t_out, instantiate):
            if type(t) is Zero and not inst:
                out_nz.append(False)
            else:
                out_nz.append(True)
                ts.append(instantiate_zeros(t))
        return list(p_out) + ts

    in_avals = list(closed.in_avals) + [tangent_aval(a) for a, nz in zip(closed.in_avals, nonzeros) if nz]
    jaxpr, consts, _ = pe.trace_to_jaxpr(fun, in_avals)
    return core.ClosedJaxpr(jaxpr, consts), list(out_nz)


def transpose_jaxpr(closed: core.ClosedJaxpr, linear: Sequence[bool]) -> core.ClosedJaxpr:
    """The transpose of a closed jaxpr that is linear in the inputs marked `linear`.

    Returns a closed jaxpr taking (non-linear inputs..., output cotangents...) and returning one cotangent per
    linear input (zeros instantiated).
    """
    jaxpr = closed.jaxpr
    lin_vars = [v for v, lin in zip(jaxpr.invars, linear) if lin]
    nonlin_vars = [v for v, lin in zip(jaxpr.invars, linear) if not lin]
    rearranged = core.Jaxpr(jaxpr.constvars + nonlin_vars, lin_vars, jaxpr.outvars, jaxpr.eqns)
    n_nonlin = len(nonlin_vars)

    def fun(*args):
        nonlin, cts = args[:n_nonlin], args[n_nonlin:]
        res = backward_pass(rearranged, list(closed.consts) + list(nonlin), list(cts))
        return [instantiate_zeros(r) for r in res]

    in_avals = [v.aval for v in nonlin_vars] + [a.strip_weak_type() for a in closed.out_avals]
    j, consts, _ = pe.trace_to_jaxpr(fun, in_avals)
    return core.ClosedJaxpr(j, consts)


def transpose_missing_message(prim: core.Primitive) -> str:
    if prim.name == "while":
        return ("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
                "start/stop values. Try using lax.scan, or lax.fori_loop with constant start/stop.")
    if prim.name == "custom_vmap_call":
        return ("Reverse-mode differentiation does not work for custom_vmap functions: combine custom_vmap with "
                "custom_vjp (custom_vjp on the outside) to give them a reverse-mode rule.")
    if prim.name == "custom_lin":
        return "custom_lin should have been transposed"
    return (f"Transpose rule (for reverse-mode differentiation) for '{prim.name}' not implemented: the primitive "
            "is not linear in its differentiated operands.")


# --------------------------------------------------------------------------------------------------------------
# Rule registration helpers
# --------------------------------------------------------------------------------------------------------------

def defjvp(primitive: core.Primitive, *jvp_rules: Callable | None) -> None:
    """Registers a JVP from per-operand rules `rule(tangent, *primals, **params) -> tangent contribution`.

    `None` marks an operand that is not differentiable (its tangent is ignored).
    """

    def jvp(primals, tangents, **params):
        primal_out = primitive.bind(*primals, **params)
        total = None  # the sum so far; a symbolic Zero only if no operand contributes
        for rule, t in zip(jvp_rules, tangents):
            if rule is not None and type(t) is not Zero:
                term = rule(t, *primals, **params)
                total = term if total is None else add_tangents(total, term)
        return primal_out, Zero(core.get_aval(primal_out)) if total is None else total

    primitive_jvps[primitive] = jvp


def defjvp2(primitive: core.Primitive, *jvp_rules: Callable | None) -> None:
    """Like `defjvp`, but each rule also receives the primal output: `rule(t, ans, *primals, **params)`."""

    def jvp(primals, tangents, **params):
        ans = primitive.bind(*primals, **params)
        total = None  # as in defjvp
        for rule, t in zip(jvp_rules, tangents):
            if rule is not None and type(t) is not Zero:
                term = rule(t, ans, *primals, **params)
                total = term if total is None else add_tangents(total, term)
        return ans, Zero(core.get_aval(ans)) if total is None else total

    primitive_jvps[primitive] = jvp


def defjvp_zero(primitive: core.Primitive) -> None:
    """The output does not depend differentiably on any input (comparisons, integer ops, ...)."""

    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return out, [Zero(core.get_aval(o)) for o in out]
        return out, Zero(core.get_aval(out))

    primitive_jvps[primitive] = jvp


def deflinear(primitive: core.Primitive, transpose_rule: Callable) -> None:
    """A primitive linear in all its operands: its JVP applies it to the tangents; register its transpose."""

    def jvp(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        tangents = [instantiate_zeros(t) for t in tangents]
        return out, primitive.bind(*tangents, **params)

    primitive_jvps[primitive] = jvp
    primitive_transposes[primitive] = transpose_rule


def defbilinear(primitive: core.Primitive, lhs_rule: Callable, rhs_rule: Callable) -> None:
    """Registers the JVP and transpose of a primitive linear in each of its two operands separately.

    A product such as `dot_general` or `conv_general_dilated`: its JVP is the sum of the two partial applications,
    `prim(t_lhs, rhs) + prim(lhs, t_rhs)`; its transpose solves for whichever operand is the linear input of the
    equation being transposed, with `lhs_rule(ct, lhs, rhs, **params)` when `lhs` is the `UndefinedPrimal` and
    `rhs_rule(ct, lhs, rhs, **params)` when `rhs` is. (As in JAX's `ad.defbilinear`.)
    """
    defjvp(primitive, lambda t, lhs, rhs, **params: primitive.bind(t, rhs, **params),
           lambda t, lhs, rhs, **params: primitive.bind(lhs, t, **params))

    def transpose(ct, lhs, rhs, **params):
        if type(ct) is Zero:
            return [None, None]
        if is_undefined_primal(lhs) and is_undefined_primal(rhs):
            raise NotImplementedError(f"{primitive.name} is not linear in both operands at once")
        if is_undefined_primal(lhs):
            return [lhs_rule(ct, lhs, rhs, **params), None]
        return [None, rhs_rule(ct, lhs, rhs, **params)]

    primitive_transposes[primitive] = transpose


# Primitives declared to have no derivative at all (JAX has none either); differentiating through one raises the
# missing-rule error of `JVPTrace`. A declaration, unlike a missing rule, says the omission is deliberate: the rule
# coverage test (tests/core/test_primitive_rules.py) requires every primitive to have a JVP or to be declared here.
NON_DIFFERENTIABLE: set = set()


def defnondifferentiable(primitive: core.Primitive) -> None:
    """Declares that `primitive` has no JVP rule on purpose (as opposed to `defjvp_zero`: a zero derivative)."""
    if primitive in primitive_jvps:
        raise ValueError(f"'{primitive.name}' has a JVP rule; it cannot also be declared non-differentiable")
    NON_DIFFERENTIABLE.add(primitive)

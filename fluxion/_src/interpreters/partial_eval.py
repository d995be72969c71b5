"""Staging: tracing Python functions into jaxprs, and splitting jaxprs into known and unknown parts.

* `JaxprTrace` records every primitive applied to its tracers as a jaxpr equation. Pushed as the *dynamic* trace
  (by `jit`, `make_jaxpr` and control-flow primitives tracing their bodies), it captures every operation, even those
  on constants. Pushed as an ordinary level (by `linearize`), it captures only operations on its own tracers, which is
  how the tangent half of a JVP is staged out while the primal half is computed directly.
* `partial_eval_jaxpr` splits a jaxpr given which inputs are unknown; control-flow JVP rules use it to separate
  the primal computation from the (linear) tangent computation.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np

from .. import core, monitoring, profiler
from ..config import config
from ..source_info import Recorder
from ..core import (ClosedJaxpr, Jaxpr, JaxprEqn, Literal, ShapedArray, Tracer, Var, abstract_eval_rules)
from ..sharding import EXPLICIT_IN_USE


class DebugInfo:
    """What the user's traced function is called, where it is defined, and the names of its flat arguments."""

    __slots__ = ("traced_for", "func_name", "func_src", "arg_names")

    def __init__(self, traced_for: str, func_name: str, func_src: str, arg_names: Sequence[str]):
        self.traced_for = traced_for
        self.func_name = func_name
        self.func_src = func_src
        self.arg_names = list(arg_names)


class JaxprBuilder:
    """Accumulates the equations, constants and inputs of the jaxpr being traced.

    Each `JaxprTracer` carries its own jaxpr variable (`_var`), so recording an equation involves no lookups.
    """

    def __init__(self, debug_info: DebugInfo | None = None):
        self.eqns: list[JaxprEqn] = []
        self.constvar_for_id: dict[int, Var] = {}  # ids stay unique: `consts` keeps every constant alive
        self.consts: list[tuple[Var, Any]] = []
        self.invars: list[Var] = []
        self.debug_info = debug_info
        self.names = Recorder()  # the name stack relative to where this trace began

    def to_jaxpr(self, out_tracers: Sequence["JaxprTracer"]) -> tuple[Jaxpr, list]:
        outvars = [t._var for t in out_tracers]
        constvars = [v for v, _ in self.consts]
        consts = [c for _, c in self.consts]
        jaxpr = Jaxpr(constvars, self.invars, outvars, self.eqns)
        return jaxpr, consts

    def input_dependencies(self, tracer: "JaxprTracer") -> list[int]:
        """Indices of the jaxpr inputs that `tracer`'s value depends on (for error messages)."""
        var = tracer._var
        if type(var) is Literal:
            return []
        inputs = {v: i for i, v in enumerate(self.invars)}
        producer = {v: eqn for eqn in self.eqns for v in eqn.outvars}  # built here: only errors need it
        seen, stack, found = set(), [var], set()
        while stack:
            v = stack.pop()
            if v in seen or type(v) is Literal:
                continue
            seen.add(v)
            if v in inputs:
                found.add(inputs[v])
            eqn = producer.get(v)
            if eqn is not None:
                stack.extend(eqn.invars)
        return sorted(found)


class JaxprTracer(Tracer):
    __slots__ = ("_aval", "_var")

    def __init__(self, trace: "JaxprTrace", aval: ShapedArray, var: Any):
        self._trace = trace
        self._aval = aval
        self._var = var  # the jaxpr Var (or Literal) standing for this value in the builder's jaxpr

    @property
    def aval(self) -> ShapedArray:
        return self._aval

    def _origin_description(self) -> str:
        builder: JaxprBuilder = self._trace.main.payload
        info = builder.debug_info
        if info is None:
            return ("This value is abstract because it is being staged out by a transformation (a control-flow body "
                    "or linearization); its concrete value is not available in Python.")
        where = f"the function {info.func_name}"
        if info.func_src:
            where += f" defined at {info.func_src}"
        msg = f"The error occurred while tracing {where} for {info.traced_for}."
        deps = builder.input_dependencies(self)
        names = [info.arg_names[i] for i in deps if i < len(info.arg_names)]
        if names:
            quoted = ", ".join(names)
            plural = "s" if len(names) > 1 else ""
            msg += (f"\nThis concrete value was not available in Python because it depends on the value of the "
                    f"argument{plural} {quoted}.")
        return msg

    def __repr__(self) -> str:
        return f"JitTracer({self._aval})"  # as JAX prints the tracers of jit and make_jaxpr


def _is_literalable(val: Any) -> bool:
    raw = getattr(val, "_value", val)
    if isinstance(raw, (np.generic, np.ndarray)):
        return raw.ndim == 0
    return isinstance(raw, (bool, int, float, complex))


class JaxprTrace(core.Trace):
    """Records primitives applied to its tracers into the `JaxprBuilder` held by its main trace."""

    @property
    def builder(self) -> JaxprBuilder:
        return self.main.payload

    def new_arg(self, aval: ShapedArray) -> JaxprTracer:
        var = Var(aval)
        self.main.payload.invars.append(var)
        return JaxprTracer(self, aval, var)

    def pure(self, val: Any) -> JaxprTracer:
        b = self.main.payload
        if not isinstance(val, (core.Array, Tracer)):
            val = core.to_array(val)
        aval = core.get_aval(val)
        key = id(val)
        var = b.constvar_for_id.get(key)
        if var is not None:
            return JaxprTracer(self, aval, var)
        if type(val) is core.Array and _is_literalable(val):
            return JaxprTracer(self, aval, Literal(val, aval))
        var = Var(aval)
        b.constvar_for_id[key] = var
        b.consts.append((var, val))
        return JaxprTracer(self, aval, var)

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        avals = [t._aval for t in tracers]
        rule = abstract_eval_rules.get(primitive)
        if rule is None:
            raise NotImplementedError(f"Primitive '{primitive.name}' has no abstract evaluation rule, so it cannot "
                                      "be staged out by jit/make_jaxpr")
        out = rule(*avals, **params)
        if EXPLICIT_IN_USE[0]:
            out = core.type_outputs[0](primitive, avals, out, params)
        weak = primitive.weak_type_rule(avals, params)
        invars = [t._var for t in tracers]
        if not primitive.multiple_results:  # the common case, without the lists
            a = out.update(weak_type=weak) if out.weak_type != weak else out
            v = Var(a)
            b = self.main.payload
            b.eqns.append(JaxprEqn(primitive, invars, [v], dict(params), b.names.source_info()))
            return JaxprTracer(self, a, v)
        out_tracers = []
        outvars = []
        weaks = [weak] * len(out) if type(weak) is bool else weak
        for a, weak in zip(out, weaks):
            a = a.update(weak_type=weak) if a.weak_type != weak else a
            v = Var(a)
            out_tracers.append(JaxprTracer(self, a, v))
            outvars.append(v)
        b = self.main.payload
        b.eqns.append(JaxprEqn(primitive, invars, outvars, dict(params), b.names.source_info()))
        return out_tracers

    def process_custom_jvp_call(self, primitive, fun, jvp, tracers, *, symbolic_zeros=False):
        from .custom import stage_custom_jvp
        return stage_custom_jvp(self, fun, jvp, tracers)

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, tracers, out_trees):
        from .custom import stage_custom_vjp
        return stage_custom_vjp(self, fun, fwd, bwd, tracers, out_trees)


def trace_to_jaxpr(fun: Callable, in_avals: Sequence[ShapedArray], debug_info: DebugInfo | None = None,
                   ) -> tuple[Jaxpr, list, list]:
    """Traces `fun(*args)` (flat arguments and results) with abstract inputs into a jaxpr.

    Returns:
      (jaxpr, consts, out_avals). `consts` are the values of the jaxpr's constvars: concrete Arrays, or tracers of
      enclosing transformations the function closed over (callers pass those as explicit operands).
    """
    if config.jax_no_tracing:
        name = debug_info.func_name if debug_info is not None else getattr(fun, "__name__", repr(fun))
        raise RuntimeError(f"tracing function {name} to a jaxpr, but 'no_tracing' is set")
    builder = JaxprBuilder(debug_info)
    if debug_info is not None:  # a user's function (jit, make_jaxpr, ...): its staging is a compile event
        start, start_ns = time.time(), time.perf_counter_ns()
    with core.new_main(JaxprTrace, dynamic=True, payload=builder) as main:
        trace = JaxprTrace(main)
        in_tracers = [trace.new_arg(a) for a in in_avals]
        outs = fun(*in_tracers)
        out_tracers = [core.full_raise(trace, o) for o in outs]
        jaxpr, consts = builder.to_jaxpr(out_tracers)
    if debug_info is not None:
        monitoring.record_duration(monitoring.JAXPR_TRACE_EVENT, start, time.time(), fun_name=debug_info.func_name)
        profiler.record_span(f"trace {debug_info.func_name}", "compile", start_ns, time.perf_counter_ns())
    return jaxpr, consts, [t.aval for t in out_tracers]


def trace_to_closed_jaxpr(fun: Callable, in_avals: Sequence[ShapedArray], debug_info=None
                          ) -> tuple[ClosedJaxpr, list]:
    jaxpr, consts, out_avals = trace_to_jaxpr(fun, in_avals, debug_info)
    return ClosedJaxpr(jaxpr, consts), out_avals


def convert_constvars_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """Turns constvars into leading invars (closure conversion), so consts become explicit operands."""
    return Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns)


def trace_to_subjaxpr(fun: Callable, in_avals: Sequence[ShapedArray]) -> tuple[ClosedJaxpr, list, list]:
    """Traces a control-flow body; returns (closed jaxpr taking consts first, consts, out_avals).

    The consts are returned so the caller can pass them as explicit operands of its primitive: they may be tracers of
    enclosing transformations, which must see them as inputs.
    """
    jaxpr, consts, out_avals = trace_to_jaxpr(fun, in_avals)
    return ClosedJaxpr(convert_constvars_jaxpr(jaxpr), []), consts, out_avals


# --------------------------------------------------------------------------------------------------------------
# Partial evaluation of jaxprs (known / unknown split)
# --------------------------------------------------------------------------------------------------------------

def partial_eval_jaxpr(jaxpr: Jaxpr, unknowns: Sequence[bool], instantiate: bool | Sequence[bool] = False
                       ) -> tuple[Jaxpr, Jaxpr, list[bool], int]:
    """Splits `jaxpr` into the part computable from the known inputs and the part that needs the unknown ones.

    An equation is unknown if any of its inputs is. Known values that unknown equations use become *residuals*.

    Args:
      jaxpr: a jaxpr with no constvars.
      unknowns: per input, whether it is unknown.
      instantiate: per output (or one bool for all), force it to be an output of the unknown jaxpr.

    Returns:
      (jaxpr_known, jaxpr_unknown, out_unknowns, num_res) where jaxpr_known maps the known inputs to
      (known outputs..., residuals...) and jaxpr_unknown maps (residuals..., unknown inputs...) to the unknown outputs.
    """
    assert not jaxpr.constvars
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(jaxpr.outvars)
    unknown_vars: set = {v for v, u in zip(jaxpr.invars, unknowns) if u}
    known_eqns, unknown_eqns = [], []
    for eqn in jaxpr.eqns:
        if any(type(v) is not Literal and v in unknown_vars for v in eqn.invars):
            unknown_eqns.append(eqn)
            unknown_vars.update(eqn.outvars)
        else:
            known_eqns.append(eqn)

    def is_unknown(v):
        return type(v) is not Literal and v in unknown_vars

    out_unknowns = [is_unknown(v) or bool(inst) for v, inst in zip(jaxpr.outvars, instantiate)]
    # Residuals: known, non-literal variables read by unknown equations or forwarded to unknown outputs.
    residuals: list = []
    seen: set = set()

    def add_res(v):
        if type(v) is not Literal and v not in unknown_vars and v not in seen:
            seen.add(v)
            residuals.append(v)

    for eqn in unknown_eqns:
        for v in eqn.invars:
            add_res(v)
    for v, u in zip(jaxpr.outvars, out_unknowns):
        if u:
            add_res(v)

    known_invars = [v for v, u in zip(jaxpr.invars, unknowns) if not u]
    known_outs = [v for v, u in zip(jaxpr.outvars, out_unknowns) if not u]
    jaxpr_known = Jaxpr([], known_invars, known_outs + residuals, known_eqns)

    # The unknown jaxpr gets fresh variables for the residuals so it is self-contained.
    res_vars = [Var(v.aval) for v in residuals]
    rename = dict(zip(residuals, res_vars))

    def rn(v):
        return v if type(v) is Literal else rename.get(v, v)

    unknown_invars = res_vars + [v for v, u in zip(jaxpr.invars, unknowns) if u]
    new_eqns = [eqn._replace(invars=[rn(v) for v in eqn.invars]) for eqn in unknown_eqns]
    unknown_outs = [rn(v) for v, u in zip(jaxpr.outvars, out_unknowns) if u]
    jaxpr_unknown = Jaxpr([], unknown_invars, unknown_outs, new_eqns)
    return jaxpr_known, jaxpr_unknown, out_unknowns, len(residuals)


def partial_eval_closed_jaxpr(closed: ClosedJaxpr, unknowns: Sequence[bool], instantiate: bool | Sequence[bool]
                              ) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int]:
    """`partial_eval_jaxpr` for a closed jaxpr: its constants stay constants of the known part.

    Returns:
      (known: known inputs -> (known outputs..., residuals...), unknown: (residuals..., unknown inputs...) ->
      unknown outputs, out_unknowns, num_res).
    """
    n_consts = len(closed.jaxpr.constvars)
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(
        convert_constvars_jaxpr(closed.jaxpr), [False] * n_consts + list(unknowns), instantiate)
    known = Jaxpr(known.invars[:n_consts], known.invars[n_consts:], known.outvars, known.eqns)
    return ClosedJaxpr(known, closed.consts), ClosedJaxpr(unknown, []), out_unknowns, num_res


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None) -> Jaxpr:
    """Removes equations whose results are never used, unless they have side effects (`core.eqn_has_effects`)."""
    outvars = jaxpr.outvars if used_outputs is None else [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    live = {v for v in outvars if type(v) is not Literal}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in live for v in eqn.outvars) or core.eqn_has_effects(eqn):
            kept.append(eqn)
            live.update(v for v in eqn.invars if type(v) is not Literal)
    kept.reverse()
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, kept)

"""How every interpreter handles user-defined derivatives (`custom_jvp`, `custom_vjp`; the API is in
`fluxion._src.custom_derivatives`).

A custom-derivative call is dispatched to the top trace like a primitive (`bind_fun`), and each trace decides:
the evaluator calls the function; forward mode (`ad.JVPTrace`) calls the user's JVP rule, or for `custom_vjp` runs
`fwd` and stages `custom_lin`, a linear stand-in whose transpose calls `bwd`; batching vmaps the function and its
rules; staging (jit, control-flow bodies) records a `custom_jvp_call`/`custom_vjp_call` equation that keeps the
rules, so differentiating the staged program later still uses them.
"""

from __future__ import annotations

from .. import core
from ..core import Primitive, abstract_eval_rules
from . import ad, batching
from . import partial_eval as pe
from .ad import Zero


def _primitive(name: str, abstract_eval, weak_type="never") -> Primitive:
    prim = Primitive(name, multiple_results=True, weak_type=weak_type)
    abstract_eval_rules[prim] = abstract_eval
    return prim


def _as_value(x):
    return x if isinstance(x, (core.Array, core.Tracer)) else core.to_array(x)


class _CallPrimitive:
    """Dispatches a function-carrying call to the top trace (the analogue of `Primitive.bind`)."""

    def __init__(self, name: str, method: str):
        self.name = name
        self.method = method

    def bind_fun(self, *fun_and_rules_and_args, **kwargs):
        n_funs = 2 if self.method == "process_custom_jvp_call" else 3
        funs = fun_and_rules_and_args[:n_funs]
        args = fun_and_rules_and_args[n_funs:]
        trace = core.find_top_trace(args)
        tracers = [core.full_raise(trace, a) for a in args]
        return getattr(trace, self.method)(self, *funs, tracers, **kwargs)


custom_jvp_call = _CallPrimitive("custom_jvp_call", "process_custom_jvp_call")
custom_vjp_call = _CallPrimitive("custom_vjp_call", "process_custom_vjp_call")


# --------------------------------------------------------------------------------------------------------------
# custom_lin: the linear stand-in for a custom_vjp function's tangent map
# --------------------------------------------------------------------------------------------------------------

def _custom_lin_abstract_eval(*args, num_res, bwd, out_avals, in_avals):
    return list(out_avals)


custom_lin_p = _primitive("custom_lin", _custom_lin_abstract_eval)


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, in_avals):
    res = list(args[:num_res])
    cts = [ad.instantiate_zeros(c) for c in cts]
    cts_in = bwd(res, cts)
    out = [None] * num_res
    for c, a in zip(cts_in, in_avals):
        out.append(Zero(a) if c is None else _as_value(c))
    return out


ad.primitive_transposes[custom_lin_p] = _custom_lin_transpose


def _custom_lin_jvp(primals, tangents, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


ad.primitive_jvps[custom_lin_p] = _custom_lin_jvp


# --------------------------------------------------------------------------------------------------------------
# Staging (jit / control-flow bodies): equations that keep the rules
# --------------------------------------------------------------------------------------------------------------

def _call_abstract_eval(*args, call_jaxpr, **params):
    return list(call_jaxpr.out_avals)


def _call_weak_types(args, params) -> list[bool]:
    # The outputs are weakly typed exactly where the function's are (as when it runs eagerly, and as in JAX): a
    # custom rule must not change the dtype promotion of what follows it.
    return [a.weak_type for a in params["call_jaxpr"].out_avals]


custom_jvp_call_p = _primitive("custom_jvp_call", _call_abstract_eval, _call_weak_types)


def _custom_jvp_call_print_params(params):
    # As JAX prints it: the function's name first, the JVP rule by its name, num_consts only when nonzero.
    out = dict(params)
    if not out.get("num_consts"):
        out.pop("num_consts", None)
    rule = out.pop("jvp_jaxpr_fun")
    out["jvp"] = getattr(rule, "__name__", "jvp")
    out["name"] = getattr(rule, "primal_name", "fun")
    return out


core.param_print_rules[custom_jvp_call_p] = _custom_jvp_call_print_params
core.param_print_order[custom_jvp_call_p] = ("name", "call_jaxpr", "jvp", "num_consts", "symbolic_zeros")
custom_vjp_call_p = _primitive("custom_vjp_call", _call_abstract_eval, _call_weak_types)


def _trace_call(fun, tracers):
    avals = [t.aval for t in tracers]
    closed, consts, _ = pe.trace_to_subjaxpr(lambda *xs: fun(*xs), avals)
    return closed, consts


def stage_custom_jvp(trace, fun, jvp, tracers):
    closed, consts = _trace_call(fun, tracers)
    return custom_jvp_call_p.bind(*consts, *tracers, call_jaxpr=closed, jvp_jaxpr_fun=jvp, num_consts=len(consts),
                                  symbolic_zeros=False)


def stage_custom_vjp(trace, fun, fwd, bwd, tracers, out_trees):
    closed, consts = _trace_call(fun, tracers)
    return custom_vjp_call_p.bind(*consts, *tracers, call_jaxpr=closed, fwd_jaxpr_thunk=fwd, bwd=bwd,
                                  num_consts=len(consts), out_trees=out_trees, symbolic_zeros=False)


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros):
    args = primals[num_consts:]
    ts = [ad.instantiate_zeros(t) for t in tangents[num_consts:]]
    return jvp_jaxpr_fun(list(args), ts)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd_jaxpr_thunk, bwd, num_consts, out_trees,
                         symbolic_zeros):
    args = primals[num_consts:]
    ts = [ad.instantiate_zeros(t) for t in tangents[num_consts:]]
    res, outs = fwd_jaxpr_thunk(*args)
    out_avals = tuple(core.get_aval(o).strip_weak_type() for o in outs)
    t_out = custom_lin_p.bind(*res, *ts, num_res=len(res), bwd=bwd, out_avals=out_avals,
                              in_avals=tuple(core.get_aval(t) for t in ts))
    return outs, t_out


ad.primitive_jvps[custom_jvp_call_p] = _custom_jvp_call_jvp
ad.primitive_jvps[custom_vjp_call_p] = _custom_vjp_call_jvp


def _vmap_flat(fun, in_dims, size):
    def batched(*args):
        return batching.vmap_flat(lambda *xs: fun(*xs), list(args), list(in_dims), size)
    return batched


def _batch_staged_jvp(vals, dims, *, call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros):
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    vals = [batching.moveaxis(v, d, 0, size) for v, d in zip(vals, dims)]
    consts, args = vals[:num_consts], vals[num_consts:]

    def fun(*xs):
        return core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *consts, *xs)

    outs = custom_jvp_call.bind_fun(_vmap_flat(fun, [0] * len(args), size), _batched_jvp(jvp_jaxpr_fun, size),
                                    *args)
    return outs, [0] * len(outs)


def _batched_jvp(jvp, size):
    def bjvp(primals, tangents):
        n = len(primals)

        def flat(*xs):
            po, to = jvp(list(xs[:n]), list(xs[n:]))
            return list(po) + [ad.instantiate_zeros(t) for t in to]

        outs = batching.vmap_flat(flat, list(primals) + list(tangents), [0] * (2 * n), size)
        half = len(outs) // 2
        return outs[:half], outs[half:]
    return bjvp


def _batched_fwd_bwd(fwd, bwd, size):
    res_count: list = []

    def bfwd(*xs):
        def flat(*ys):
            res, outs = fwd(*ys)
            res_count[:] = [len(res)]
            return list(res) + list(outs)
        outs = batching.vmap_flat(flat, list(xs), [0] * len(xs), size)
        n = res_count[0]
        return outs[:n], outs[n:]

    def bbwd(res, cts):
        n = len(res)

        def flat(*ys):
            out = bwd(list(ys[:n]), list(ys[n:]))
            return [o for o in out]
        cts = [ad.instantiate_zeros(c) for c in cts]
        return batching.vmap_flat(flat, list(res) + list(cts), [0] * (n + len(cts)), size)

    return bfwd, bbwd


def _batch_staged_vjp(vals, dims, *, call_jaxpr, fwd_jaxpr_thunk, bwd, num_consts, out_trees, symbolic_zeros):
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    vals = [batching.moveaxis(v, d, 0, size) for v, d in zip(vals, dims)]
    consts, args = vals[:num_consts], vals[num_consts:]

    def fun(*xs):
        return core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *consts, *xs)

    bfwd, bbwd = _batched_fwd_bwd(fwd_jaxpr_thunk, bwd, size)
    outs = custom_vjp_call.bind_fun(_vmap_flat(fun, [0] * len(args), size), bfwd, bbwd, *args, out_trees=out_trees)
    return outs, [0] * len(outs)


batching.primitive_batchers[custom_jvp_call_p] = _batch_staged_jvp
batching.primitive_batchers[custom_vjp_call_p] = _batch_staged_vjp


def batch_custom_jvp(trace, primitive, fun, jvp, tracers):
    vals = [t.val for t in tracers]
    dims = [t.batch_dim for t in tracers]
    size = trace.axis_size
    vals = [batching.moveaxis(v, d, 0, size) for v, d in zip(vals, dims)]
    outs = custom_jvp_call.bind_fun(_vmap_flat(fun, [0] * len(vals), size), _batched_jvp(jvp, size), *vals)
    return [batching.BatchTracer(trace, o, 0) for o in outs]


def batch_custom_vjp(trace, primitive, fun, fwd, bwd, tracers, out_trees):
    vals = [t.val for t in tracers]
    dims = [t.batch_dim for t in tracers]
    size = trace.axis_size
    vals = [batching.moveaxis(v, d, 0, size) for v, d in zip(vals, dims)]
    bfwd, bbwd = _batched_fwd_bwd(fwd, bwd, size)
    outs = custom_vjp_call.bind_fun(_vmap_flat(fun, [0] * len(vals), size), bfwd, bbwd, *vals, out_trees=out_trees)
    return [batching.BatchTracer(trace, o, 0) for o in outs]

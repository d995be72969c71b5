"""User-defined derivatives: `custom_jvp`, `custom_vjp`, and `stop_gradient`.

A custom-derivative call is dispatched to the top trace like a primitive (`bind_fun`), and each trace decides:
the evaluator calls the function; forward mode calls the user's JVP rule (or, for `custom_vjp`, runs `fwd` and
stages a linear `custom_lin` whose transpose calls `bwd`); batching vmaps the function and its rules; staging
(jit, control-flow bodies) records an equation that keeps the rules, so differentiating the staged program later
still uses them.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from . import core
from .core import ClosedJaxpr, ShapedArray, abstract_eval_rules
from .interpreters import ad, batching
from .interpreters import partial_eval as pe
from .interpreters.ad import Zero
from .lax.utils import standard_primitive
from .tree_util import tree_flatten, tree_map, tree_unflatten


def _as_value(x):
    if isinstance(x, (core.Array, core.Tracer)):
        return x
    return core.to_array(x)


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


def _resolve_args(fun: Callable, args: tuple, kwargs: dict) -> tuple:
    if not kwargs:
        return args
    sig = inspect.signature(fun)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.args) + tuple(bound.kwargs.values())


def _split_static(fun: Callable, nondiff_argnums: tuple, args: tuple, kwargs: dict):
    """Separates non-differentiable arguments from the flattened differentiable ones.

    Returns (args, static {position: value}, flat dynamic leaves, their treedef, merge) where
    merge(dynamic values) rebuilds the full positional argument list.
    """
    args = _resolve_args(fun, args, kwargs)
    static = {i: args[i] for i in nondiff_argnums}
    dyn = [a for i, a in enumerate(args) if i not in static]
    flat, in_tree = tree_flatten(dyn)
    flat = [_as_value(x) for x in flat]

    def merge(dyn_vals):
        it = iter(dyn_vals)
        return [static[i] if i in static else next(it) for i in range(len(args))]

    return args, static, dyn, flat, in_tree, merge


class custom_jvp:
    """Gives `fun` a user-defined JVP rule (and, through linearization, its reverse mode).

    Usage::

        @custom_jvp
        def f(x, y): ...
        @f.defjvp
        def f_jvp(primals, tangents): ...  # returns (primal_out, tangent_out)

    Args:
      fun: the function (pytrees in and out).
      nondiff_argnums: positions of arguments that are not differentiated; they are passed first to the rule.
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """Defines the JVP from one rule per argument: rule(tangent, primal_out, *primals) -> contribution."""
        def jvp(primals, tangents):
            out = self(*primals)
            total = None
            for rule, t in zip(jvps, tangents):
                if rule is None:
                    continue
                contrib = rule(t, out, *primals)
                total = contrib if total is None else tree_map(lambda a, b: a + b, total, contrib)
            if total is None:
                total = tree_map(lambda o: o * 0, out)
            return out, total
        self.defjvp(jvp)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {getattr(self.fun, '__name__', self.fun)} "
                                 "using defjvp.")
        nd = self.nondiff_argnums
        args, static, dyn, flat, in_tree, merge = _split_static(self.fun, nd, args, kwargs)
        box: list = []

        def flat_fun(*xs):
            out = self.fun(*merge(tree_unflatten(in_tree, xs)))
            leaves, tree = tree_flatten(out)
            box[:] = [tree]
            return [_as_value(o) for o in leaves]

        def flat_jvp(primals, tangents):
            p = tree_unflatten(in_tree, primals)
            t = tree_unflatten(in_tree, tangents)
            nd_vals = [static[i] for i in nd]
            po, to = self.jvp(*nd_vals, tuple(p), tuple(t)) if nd else self.jvp(tuple(p), tuple(t))
            p_leaves, p_tree = tree_flatten(po)
            t_leaves, t_tree = tree_flatten(to)
            if p_tree != t_tree:
                raise TypeError(f"Custom JVP rule must produce primal and tangent outputs with equal container "
                                f"(pytree) structures, but got {p_tree} and {t_tree} respectively.")
            box[:] = [p_tree]
            t_leaves = [_as_value(v) if not isinstance(v, Zero) else v for v in t_leaves]
            fixed = []
            for pv, tv in zip(p_leaves, t_leaves):
                pa, ta = core.get_aval(_as_value(pv)), core.get_aval(tv)
                if pa.shape != ta.shape:
                    raise ValueError(f"Custom JVP rule returned a tangent of shape {ta.shape} for a primal output of "
                                     f"shape {pa.shape}; they must match.")
                fixed.append(tv if ta.dtype == pa.dtype or not np.issubdtype(pa.dtype, np.inexact) else
                             tv.astype(pa.dtype))
            return [_as_value(v) for v in p_leaves], fixed

        outs = custom_jvp_call.bind_fun(flat_fun, flat_jvp, *flat)
        return tree_unflatten(box[0], outs)


class custom_vjp:
    """Gives `fun` a user-defined VJP: `fwd(*args) -> (out, residuals)` and `bwd(residuals, ct) -> input cts`.

    Forward-mode differentiation (`jvp`, `jacfwd`) of a custom_vjp function is not supported (as in JAX).
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        self.fwd = fwd
        self.bwd = bwd

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {getattr(self.fun, '__name__', self.fun)} "
                                 "using defvjp.")
        nd = self.nondiff_argnums
        args, static, dyn, flat, in_tree, merge = _split_static(self.fun, nd, args, kwargs)
        out_box: list = []
        res_box: list = []

        def flat_fun(*xs):
            out = self.fun(*merge(tree_unflatten(in_tree, xs)))
            leaves, tree = tree_flatten(out)
            out_box[:] = [tree]
            return [_as_value(o) for o in leaves]

        def flat_fwd(*xs):
            out, res = self.fwd(*merge(tree_unflatten(in_tree, xs)))
            leaves, tree = tree_flatten(out)
            out_box[:] = [tree]
            r_leaves, r_tree = tree_flatten(res)
            res_box[:] = [r_tree]
            return [_as_value(r) for r in r_leaves], [_as_value(o) for o in leaves]

        def flat_bwd(res_flat, cts_flat):
            res = tree_unflatten(res_box[0], res_flat)
            ct = tree_unflatten(out_box[0], cts_flat)
            nd_vals = [static[i] for i in nd]
            cts_in = self.bwd(*nd_vals, res, ct) if nd else self.bwd(res, ct)
            if not isinstance(cts_in, tuple):
                raise TypeError(f"Custom VJP bwd rule must produce a tuple, got {type(cts_in).__name__}; return "
                                "one cotangent per (differentiable) argument, e.g. `return (g,)`.")
            leaves, tree = tree_flatten(list(cts_in), is_leaf=lambda x: x is None)
            expect = tree_flatten(dyn)[1]
            try:
                flat_cts = expect.flatten_up_to(list(cts_in))
            except ValueError as e:
                raise TypeError(f"Custom VJP bwd rule must produce cotangents matching the primal inputs' structure "
                                f"{expect}: {e}") from None
            del leaves, tree
            return [c if c is not None else None for c in flat_cts]

        outs = custom_vjp_call.bind_fun(flat_fun, flat_fwd, flat_bwd, *flat, out_trees=None)
        return tree_unflatten(out_box[0], outs)


# --------------------------------------------------------------------------------------------------------------
# custom_lin: the linear stand-in for a custom_vjp function's tangent map
# --------------------------------------------------------------------------------------------------------------

def _custom_lin_abstract_eval(*args, num_res, bwd, out_avals, in_avals):
    return list(out_avals)


custom_lin_p = standard_primitive("custom_lin", _custom_lin_abstract_eval, multiple_results=True, weak_type="never")


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


custom_jvp_call_p = standard_primitive("custom_jvp_call", _call_abstract_eval, multiple_results=True,
                                       weak_type="never")
custom_vjp_call_p = standard_primitive("custom_vjp_call", _call_abstract_eval, multiple_results=True,
                                       weak_type="never")


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


# --------------------------------------------------------------------------------------------------------------
# stop_gradient
# --------------------------------------------------------------------------------------------------------------

stop_gradient_p = standard_primitive("stop_gradient", lambda x: ShapedArray(x.shape, x.dtype), weak_type="first")
ad.defjvp_zero(stop_gradient_p)
batching.primitive_batchers[stop_gradient_p] = lambda vals, dims: (stop_gradient_p.bind(vals[0]), dims[0])


def stop_gradient(x: Any) -> Any:
    """The identity, with zero derivative: gradients do not flow through `x` (a pytree of arrays)."""
    def stop(v):
        v = _as_value(v)
        return stop_gradient_p.bind(v)
    return tree_map(stop, x)


del ClosedJaxpr, abstract_eval_rules

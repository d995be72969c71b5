"""User-defined derivatives, the public API: `custom_jvp`, `custom_vjp`, and `stop_gradient`.

These flatten the user's pytrees and rules and dispatch the call to the top trace (`interpreters.custom`, where
each interpreter's handling of custom derivatives lives: the evaluator calls the function; forward mode calls the
user's JVP rule, or for `custom_vjp` runs `fwd` and stages a linear `custom_lin` whose transpose calls `bwd`;
batching vmaps the function and its rules; staging records an equation that keeps the rules).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from . import core
from .interpreters.ad import Zero
from .interpreters.custom import custom_jvp_call, custom_vjp_call
from .lax.structural import stop_gradient_p
from .tree_util import tree_flatten, tree_map, tree_unflatten


def _as_value(x):
    if isinstance(x, (core.Array, core.Tracer)):
        return x
    return core.to_array(x)


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


def forward_attr(self, name: str) -> Any:
    """`__getattr__` of the custom-rule wrappers: attributes they lack come from the wrapped function, so wrappers
    stack (`custom_vjp(custom_vmap(f))` still has `def_vmap`), as in JAX."""
    fun = self.__dict__.get("fun")
    if fun is None:
        raise AttributeError(name)
    return getattr(fun, name)


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

    __getattr__ = forward_attr

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

        # (The names a staged custom_jvp_call prints, as JAX: the function's and its JVP rule's.)
        flat_jvp.__name__ = getattr(self.jvp, "__name__", "jvp")
        flat_jvp.primal_name = getattr(self.fun, "__name__", "fun")
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

    __getattr__ = forward_attr

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


def custom_gradient(fun: Callable) -> Callable:
    """`fun(*args) -> (out, vjp)` becomes a function returning `out` whose reverse-mode derivative is `vjp(ct)` (a
    tuple with one cotangent per argument), mirroring `jax.custom_gradient`.

    Built on `custom_vjp`: the residuals are the arguments, and the backward pass calls `fun` again to obtain the
    `vjp` closure (a Python closure cannot be carried as residual values), so `fun`'s forward computation runs twice
    under `grad`. Forward mode is not supported (as for `custom_vjp`).

    Examples:
      >>> import fluxion
      >>> import fluxion.numpy as jnp
      >>> @fluxion.custom_gradient
      ... def clipped_identity(x):
      ...     return x, lambda g: (jnp.clip(g, -1.0, 1.0),)
      >>> fluxion.grad(lambda x: 5.0 * clipped_identity(x))(2.0)
      Array(1., dtype=float32, weak_type=True)
    """
    def primal(*args):
        return fun(*args)[0]

    def fwd(*args):
        out, _ = fun(*args)
        return out, args

    def bwd(args, ct):
        _, vjp = fun(*args)
        cts = vjp(ct)
        return tuple(cts) if isinstance(cts, (tuple, list)) else (cts,)

    wrapped = custom_vjp(primal)
    wrapped.defvjp(fwd, bwd)
    functools.update_wrapper(wrapped, fun)
    return wrapped


# --------------------------------------------------------------------------------------------------------------
# stop_gradient
# --------------------------------------------------------------------------------------------------------------



def stop_gradient(x: Any) -> Any:
    """The identity, with zero derivative: gradients do not flow through `x` (a pytree of arrays)."""
    def stop(v):
        v = _as_value(v)
        return stop_gradient_p.bind(v)
    return tree_map(stop, x)


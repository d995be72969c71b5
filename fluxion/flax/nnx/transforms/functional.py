"""``nnx.vjp``, ``nnx.jvp`` and ``nnx.make_jaxpr``: fluxion's functional transforms over graph arguments.

Flax 0.12 offers these three without *graph updates* only: in its default
mode (graph mode with ``graph_updates=True``) ``vjp``/``jvp`` raise
``NotImplementedError`` and ``make_jaxpr`` raises ``ValueError``, and so do
these.  With ``graph_updates=False`` (or ``graph=False``) a Module argument
acts as the tree of its Variables: ``vjp``'s cotangent for a Module is a
Module of the same structure whose Variables hold the gradients (every
Variable, not only Params), ``jvp`` takes tangent Modules of that form, and
Variable values the function writes are written back to the caller's
objects (new attributes are not: that is what "no graph updates" means).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import fluxion

from ..graph import merge, split
from ..state import from_flat_state, to_flat_state
from ._extract import copy_state, flatten_tree, unflatten_tree

_MISSING: Any = object()


def _check_mode(name: str, graph: Any, graph_updates: Any) -> None:
    graph = True if graph is None else graph
    graph_updates = True if graph_updates is None else graph_updates
    if graph and graph_updates:
        raise NotImplementedError(f'graph-mode with graph_updates is not supported for nnx.{name}. '
                                  'Set graph=False or graph_updates=False.')


def _check_unbound(name: str, f: Any) -> None:
    from ..module import Module
    if isinstance(getattr(f, '__self__', None), Module):
        raise ValueError(f'nnx.{name} does not support bound methods. Use the decorator form @nnx.{name} or '
                         f'call nnx.{name}(MyClass.method)(instance, ...) with the unbound method.')


class _TreeArgs:
    """Arguments taken apart into ``(states, dyn)``: the Variables of their graph objects (one joint split, so
    sharing between arguments survives) and their array/number leaves; :meth:`rebuild` puts fresh objects
    back together inside the traced function."""

    def __init__(self, args: Any):
        self.spec, self.nodes, dyn = flatten_tree(args)
        self.graphdef, state = split(tuple(self.nodes))
        self.state = copy_state(state)
        self.dyn = list(dyn)

    def rebuild(self, state: Any, dyn: Any) -> tuple[Any, tuple]:
        fresh = merge(self.graphdef, copy_state(state))
        return unflatten_tree(self.spec, fresh, dyn), fresh

    def write_back(self, new_state: Any) -> None:
        """Stores the values of the traced call's Variables into the caller's Variables (same paths)."""
        live = dict(to_flat_state(split(tuple(self.nodes))[1]))
        for path, leaf in to_flat_state(new_state):
            target = live.get(path)
            if target is not None and hasattr(target, 'set_value'):
                target.set_value(leaf.get_value() if hasattr(leaf, 'get_value') else leaf)

    def like(self, state: Any, dyn: Any) -> Any:
        """The arguments' structure with ``state``/``dyn`` values: Modules of the same graph holding them."""
        return unflatten_tree(self.spec, merge(self.graphdef, state), dyn)


def _pure(f: Callable, tree: _TreeArgs, has_aux: bool) -> Callable:
    def pure(state: Any, dyn: Any) -> Any:
        args, fresh = tree.rebuild(state, dyn)
        out = f(*args)
        out, aux = out if has_aux else (out, None)
        new_state = split(fresh)[1]
        return out, (aux, from_flat_state([(p, v.get_value()) for p, v in to_flat_state(new_state)]))
    return pure


def vjp(f: Any = _MISSING, *primals: Any, has_aux: bool = False, reduce_axes: Any = (), graph: Any = None,
        graph_updates: Any = None) -> Any:
    """``fluxion.vjp`` over arguments holding Modules: ``(out, vjp_fn)`` or ``(out, vjp_fn, aux)``.

    ``vjp_fn(cotangent)`` returns one cotangent per primal; a Module's is a
    Module of the same graph whose Variables hold the gradients.  Without
    primals it returns the function to call with them (``nnx.vjp(f)(m, x)``);
    without ``f`` it is a decorator factory.

    Raises:
      NotImplementedError: graph mode with graph updates (the default), as in
        Flax; a non-empty ``reduce_axes``.
      ValueError: ``f`` is a bound Module method.
    """
    _check_mode('vjp', graph, graph_updates)
    if reduce_axes:
        raise NotImplementedError('reduce_axes argument to vjp is deprecated')
    if f is _MISSING:
        return functools.partial(vjp, has_aux=has_aux, graph=graph, graph_updates=graph_updates)
    _check_unbound('vjp', f)
    if not primals:
        return functools.partial(vjp, f, has_aux=has_aux, graph=graph, graph_updates=graph_updates)
    tree = _TreeArgs(primals)
    out, pullback, (aux, new_state) = fluxion.vjp(_pure(f, tree, has_aux), tree.state, tree.dyn, has_aux=True)
    tree.write_back(new_state)

    def vjp_fn(cotangent: Any) -> tuple:
        g_state, g_dyn = pullback(cotangent)
        return tuple(tree.like(g_state, g_dyn))

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def jvp(f: Any = _MISSING, primals: Any = _MISSING, tangents: Any = _MISSING, *, has_aux: bool = False,
        graph: Any = None, graph_updates: Any = None) -> Any:
    """``fluxion.jvp`` over arguments holding Modules: ``(out, tangent_out)`` (``(..., aux)`` with ``has_aux``).

    ``tangents`` has the structure of ``primals``; a Module's tangent is a
    Module of the same graph whose Variables hold the tangent values (e.g.
    ``nnx.map(lambda p, v: jnp.ones_like(v[...]), m)``).  Without
    primals/tangents it returns the function to call with them.

    Raises:
      NotImplementedError: graph mode with graph updates (the default), as in Flax.
      ValueError: the tangents' graph structure differs from the primals'.
    """
    _check_mode('jvp', graph, graph_updates)
    if f is _MISSING:
        return functools.partial(jvp, has_aux=has_aux, graph=graph, graph_updates=graph_updates)
    _check_unbound('jvp', f)
    if primals is _MISSING or tangents is _MISSING:
        return functools.partial(jvp, f, has_aux=has_aux, graph=graph, graph_updates=graph_updates)
    tree, t_tree = _TreeArgs(tuple(primals)), _TreeArgs(tuple(tangents))
    if t_tree.spec.treedef != tree.spec.treedef or t_tree.graphdef.root.__class__ is not tree.graphdef.root.__class__:
        raise ValueError('nnx.jvp: tangents must have the structure of primals')
    primal_paths = [p for p, _ in to_flat_state(tree.state)]
    tangent_paths = [p for p, _ in to_flat_state(t_tree.state)]
    if primal_paths != tangent_paths or len(tree.dyn) != len(t_tree.dyn):
        raise ValueError(f'nnx.jvp: tangents must have the structure of primals; state paths {primal_paths} '
                         f'vs {tangent_paths}')
    pure = _pure(f, tree, has_aux)

    def primal_out(state: Any, dyn: Any) -> Any:
        out, (aux, new_state) = pure(state, dyn)
        return out, (aux, new_state)

    (out, (aux, new_state)), (t_out, _) = fluxion.jvp(primal_out, (tree.state, tree.dyn),
                                                      (t_tree.state, t_tree.dyn))
    tree.write_back(new_state)
    return (out, t_out, aux) if has_aux else (out, t_out)


def make_jaxpr(f: Any = _MISSING, *, graph: Any = None, graph_updates: Any = None,
               static_argnums: Any = ()) -> Any:
    """``fluxion.make_jaxpr`` for functions of Modules: the jaxpr's inputs are the Variables of the graph
    arguments (joint split, sorted paths) followed by their array/number leaves.

    Static arguments (``static_argnums``) are fixed Python values, as in ``fluxion.make_jaxpr``.

    Raises:
      ValueError: ``graph_updates=True`` (the default), as in Flax; ``f`` is a bound Module method.
    """
    if f is _MISSING:
        return functools.partial(make_jaxpr, graph=graph, graph_updates=graph_updates,
                                 static_argnums=static_argnums)
    if graph_updates is None or graph_updates:
        raise ValueError('nnx.make_jaxpr does not support graph_updates=True.')
    _check_unbound('make_jaxpr', f)
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        n = len(args)
        fixed = {i % n: args[i] for i in static}
        traced = tuple(a for i, a in enumerate(args) if i not in fixed)
        tree = _TreeArgs((traced, kwargs))

        def pure(state: Any, dyn: Any) -> Any:
            (t_args, t_kwargs), _ = tree.rebuild(state, dyn)
            it = iter(t_args)
            call_args = [fixed[i] if i in fixed else next(it) for i in range(n)]
            return f(*call_args, **t_kwargs)

        return fluxion.make_jaxpr(pure)(tree.state, tree.dyn)

    return wrapper

"""``nnx.custom_vjp``: ``fluxion.custom_vjp`` for functions whose arguments include Modules.

A Module argument enters the underlying ``fluxion.custom_vjp`` as the
:class:`~fluxion.flax.nnx.State` of its Variables (all of them, or those a
``DiffState`` filter in ``nondiff_argnums`` selects; the rest is closed over).
Because Modules are mutable, the wrapped function also returns the state of
every argument after the call, so mutations made by ``f`` (or by ``fwd`` under
differentiation) reach the caller's Modules.  Hence, as in Flax 0.12's default
mode, ``bwd(*nondiff_args, residuals, (input_updates_g, out_g))`` receives the
cotangent of those input states (one State per Module argument, ``None`` for
the others) next to the output cotangent, and returns one tangent per
differentiated argument: a State (the differentiable state's paths) for a
Module, an array tree otherwise.  Residuals may hold Modules.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import fluxion

from ..graph import merge, split
from ..pytreelib import Pytree
from ..state import State, from_flat_state, split_state, to_flat_state
from ..variables import Variable
from ._extract import copy_state, flatten_tree, sub_state, unflatten_tree
from .autodiff import DiffState


def _is_node(x: Any) -> bool:
    return isinstance(x, (Pytree, Variable))


class CustomVjp:
    """The object :func:`custom_vjp` returns: call it like ``fun``; set the rule with :meth:`defvjp`."""

    def __init__(self, fun: Callable, nondiff_argnums: tuple):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.diff_filter: dict[int, Any] = {}
        for a in self.nondiff_argnums:
            if not isinstance(a, (int, DiffState)):
                raise TypeError(f'nondiff_argnums entries must be int or DiffState, got {type(a).__name__}')
            index = a.argnum if isinstance(a, DiffState) else a
            if index in self.diff_filter:
                raise ValueError(f'argnum {index} is repeated in nondiff_argnums')
            self.diff_filter[index] = a.filter if isinstance(a, DiffState) else False
        self.int_nondiff = tuple(sorted(a for a in self.nondiff_argnums if isinstance(a, int)))

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        """Sets the forward rule ``fwd(*args) -> (out, residuals)`` and ``bwd`` (see the module docstring)."""
        self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fwd is None or self.bwd is None:
            raise ValueError(f'custom_vjp {getattr(self.fun, "__name__", self.fun)!r}: call defvjp(fwd, bwd) '
                             'before calling it')
        if kwargs:
            bound = inspect.signature(self.fun).bind(*args, **kwargs)
            args = bound.args
        n = len(args)
        node_pos = [i for i, a in enumerate(args) if _is_node(a)]
        for i, a in enumerate(args):
            if self.diff_filter.get(i, True) is False and _is_node(a):
                raise TypeError('Passing integers to nondiff_argnums for graph nodes arguments in custom_vjp is '
                                f'not supported. Got False at path [{i}] for value {a!r}')
            if not _is_node(a) and flatten_tree(a)[1]:
                raise TypeError(f'custom_vjp: argument {i} is a pytree holding graph objects; pass Modules and '
                                'Variables as top-level arguments')
        graphdef, joint = split(tuple(args[i] for i in node_pos))
        diff_states, rest_states = {}, {}
        for k, i in enumerate(node_pos):
            if isinstance(args[i], Variable):
                diff_states[i], rest_states[i] = joint[k].copy(), State({})
                continue
            st = sub_state(joint, k)
            filt = self.diff_filter.get(i, True)
            if filt is True:
                diff_states[i], rest_states[i] = copy_state(st), State({})
            else:
                d, r = split_state(st, filt, ...)
                diff_states[i], rest_states[i] = copy_state(d), r
        pure_args = tuple(diff_states[i] if i in diff_states else a for i, a in enumerate(args))
        diff_positions = [i for i in range(n) if i not in self.int_nondiff]

        def rebuild(pure: tuple) -> tuple:
            flat = []
            for k, i in enumerate(node_pos):
                part = pure[i]
                if isinstance(part, Variable):
                    flat.append(((k,), part.copy()))
                    continue
                for p, v in to_flat_state(part):
                    flat.append(((k, *p), v.copy() if isinstance(v, Variable) else v))
                flat.extend(((k, *p), v) for p, v in to_flat_state(rest_states[i]))
            fresh = merge(graphdef, from_flat_state(flat)) if node_pos else ()
            call_args = list(pure)
            for k, i in enumerate(node_pos):
                call_args[i] = fresh[k]
            return tuple(call_args), fresh

        def states_after(fresh: tuple) -> tuple:
            if not node_pos:
                return tuple(None for _ in diff_positions)
            after = split(fresh)[1]
            by_pos = {i: after[k] for k, i in enumerate(node_pos)}
            return tuple(by_pos.get(i) for i in diff_positions)

        cell: dict = {}

        def primal(*pure: Any) -> tuple:
            call_args, fresh = rebuild(pure)
            out = self.fun(*call_args)
            return states_after(fresh), out

        def fwd(*pure: Any) -> tuple:
            call_args, fresh = rebuild(pure)
            out, residual = self.fwd(*call_args)
            res_spec, res_nodes, res_dyn = flatten_tree(residual)
            res_graphdef, res_state = split(tuple(res_nodes))
            cell['res'] = (res_spec, res_graphdef)
            return (states_after(fresh), out), (copy_state(res_state), res_dyn)

        def bwd(*rest: Any) -> tuple:
            *nondiff, (res_state, res_dyn), (updates_g, out_g) = rest
            res_spec, res_graphdef = cell['res']
            residual = unflatten_tree(res_spec, merge(res_graphdef, copy_state(res_state)), res_dyn)
            tangent = self.bwd(*nondiff, residual, (updates_g, out_g))
            if not isinstance(tangent, (tuple, list)) or len(tangent) != len(diff_positions):
                raise ValueError(f'custom_vjp bwd must return a tuple of {len(diff_positions)} tangents (one per '
                                 f'differentiated argument), got {tangent!r}')
            return tuple(_as_tangent(t, diff_states.get(i), i) for t, i in zip(tangent, diff_positions))

        inner = fluxion.custom_vjp(primal, nondiff_argnums=self.int_nondiff)
        inner.defvjp(fwd, bwd, symbolic_zeros=self.symbolic_zeros)
        updates, out = inner(*pure_args)
        for state, i in zip(updates, diff_positions):
            if i in diff_states:
                _write_back(args[i], state)
        return out


def _write_back(node: Any, state: Any) -> None:
    if isinstance(node, Variable):
        node.set_value(state.get_value() if isinstance(state, Variable) else state)
        return
    from ..graph import update
    update(node, state)


def _as_tangent(t: Any, diff_state: Any, argnum: int) -> Any:
    """The user's tangent for a graph argument, in the exact pytree form of its differentiable state."""
    if diff_state is None:
        return t
    if isinstance(diff_state, Variable):
        value = t.get_value() if isinstance(t, Variable) else t
        return diff_state.replace(value)
    if not isinstance(t, (State, dict)):
        raise ValueError(f'Expected State or Variable, got {type(t)} as the tangent of argument {argnum}')
    given = dict(to_flat_state(t if isinstance(t, State) else State(t)))
    flat = []
    for path, leaf in to_flat_state(diff_state):
        if path not in given:
            raise ValueError(f'custom_vjp bwd: the tangent of argument {argnum} lacks the path {path!r} of its '
                             'differentiable state')
        g = given.pop(path)
        g = g.get_value() if isinstance(g, Variable) else g
        flat.append((path, leaf.replace(g) if isinstance(leaf, Variable) else g))
    if given:
        raise ValueError(f'custom_vjp bwd: the tangent of argument {argnum} has paths {sorted(given, key=str)!r} '
                         'outside its differentiable state')
    return from_flat_state(flat)


def custom_vjp(fun: Any = None, *, nondiff_argnums: tuple = (), graph: Any = None,
               graph_updates: Any = None) -> Any:
    """A function of Modules (and arrays) with a user-defined VJP; usable as a decorator (with or without
    arguments).

    ``nondiff_argnums`` holds ints (non-differentiable non-graph arguments,
    passed first to ``bwd`` as in ``fluxion.custom_vjp``) and ``DiffState``
    entries (the Variables of that Module argument that get a tangent; the
    others are fixed).  See the module docstring for ``fwd``/``bwd``.

    Differences from Flax: only Flax's default (graph updates) form; Module
    arguments must be top-level arguments.

    Raises:
      ValueError: an argnum repeated in ``nondiff_argnums``; calling before
        :meth:`CustomVjp.defvjp`; a tangent that does not match its argument.
      TypeError: an int in ``nondiff_argnums`` names a Module argument (as in Flax).
    """
    if fun is None:
        return functools.partial(custom_vjp, nondiff_argnums=nondiff_argnums, graph=graph,
                                 graph_updates=graph_updates)
    if isinstance(getattr(fun, '__self__', None), Pytree):
        raise ValueError('nnx.custom_vjp does not support bound methods. Use the decorator form @nnx.custom_vjp '
                         'or call nnx.custom_vjp(MyClass.method)(instance, ...) with the unbound method.')
    return CustomVjp(fun, nondiff_argnums)

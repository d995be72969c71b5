"""``nnx.jit`` and ``nnx.eval_shape``: fluxion.jit / eval_shape over arguments that contain object graphs."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import fluxion

from ..graph import merge
from ..state import to_flat_state
from ..variables import Variable
from ._extract import (flatten_tree, merge_nodes, resolve_outputs, split_nodes, sync_all, unflatten_tree)


def _as_tuple(x: Any) -> tuple:
    if x is None:
        return ()
    if isinstance(x, (int, str)):
        return (x,)
    return tuple(x)


class JitWrapped:
    """The callable returned by :func:`jit`; one fluxion-jitted function per argument structure."""

    def __init__(self, fun: Any, static_argnums: Any, static_argnames: Any, donate_argnums: Any,
                 donate_argnames: Any, keep_unused: bool, inline: bool):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.static_argnums = _as_tuple(static_argnums)
        self.static_argnames = _as_tuple(static_argnames)
        self.jit_kwargs = {'keep_unused': keep_unused, 'inline': inline}
        self._cache: dict = {}

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # Decorating a method: bind ``self`` as the first positional argument.
        return self if obj is None else functools.partial(self, obj)

    def _split_static(self, args: tuple, kwargs: dict) -> tuple:
        n = len(args)
        static_pos = {i % n if n else i for i in self.static_argnums if -n <= i < n}
        dyn_args = tuple(_Slot() if i in static_pos else a for i, a in enumerate(args))
        static_args = tuple((i, args[i]) for i in sorted(static_pos))
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        static_kwargs = tuple(sorted((k, v) for k, v in kwargs.items() if k in self.static_argnames))
        return dyn_args, dyn_kwargs, static_args, static_kwargs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        dyn_args, dyn_kwargs, static_args, static_kwargs = self._split_static(args, kwargs)
        spec, nodes, dyn = flatten_tree((dyn_args, dyn_kwargs))
        graphdef, state = split_nodes(nodes)
        try:
            key = (spec.key(), graphdef, static_args, static_kwargs)
            hash(key)
        except TypeError as e:
            raise ValueError(f'nnx.jit: static arguments must be hashable ({e})') from None
        entry = self._cache.get(key)
        if entry is None:
            entry = self._cache[key] = self._make(spec, graphdef, static_args, static_kwargs)
        jitted, cell = entry
        out_state, out_dyn = jitted(state, dyn)
        out_spec, out_graphdef = cell['out']
        if out_graphdef is None:
            # Fast path: same graph structure in and out and no graph objects in the output, so the
            # new leaves pair up with the caller's Variables in flat order.
            _write_back(nodes, to_flat_state(state), to_flat_state(out_state))
            return unflatten_tree(out_spec, [], out_dyn)
        fresh_in, fresh_out = merge(out_graphdef, out_state)
        memo = sync_all(nodes, fresh_in)
        return unflatten_tree(out_spec, resolve_outputs(fresh_out, memo), out_dyn)

    def _make(self, spec: Any, graphdef: Any, static_args: tuple, static_kwargs: tuple) -> tuple:
        pure, cell = self._pure(spec, graphdef, static_args, static_kwargs)
        return fluxion.jit(pure, **self.jit_kwargs), cell

    def _pure(self, spec: Any, graphdef: Any, static_args: tuple, static_kwargs: tuple) -> tuple:
        """The function of (state, dynamic leaves) that merges fresh objects, calls ``fun`` and splits the result,
        with the cell where it records the output structure."""
        cell: dict = {}
        fun = self.fun

        def pure(state: Any, dyn: list) -> tuple:
            nodes = merge_nodes(graphdef, state)
            dyn_args, dyn_kwargs = unflatten_tree(spec, nodes, dyn)
            args = list(dyn_args)
            for i, v in static_args:
                args[i] = v
            out = fun(*args, **dyn_kwargs, **dict(static_kwargs))
            out_spec, out_nodes, out_dyn = flatten_tree(out)
            if not out_nodes:
                same_graphdef, same_state = split_nodes(list(nodes))
                if same_graphdef == graphdef:
                    cell['out'] = (out_spec, None)
                    return same_state, out_dyn
            out_graphdef, out_state = split_nodes([tuple(nodes), tuple(out_nodes)])
            # Static output leaves cannot leave a traced function: record them with the structure instead.
            cell['out'] = (out_spec, out_graphdef)
            return out_state, out_dyn

        return pure, cell


def _write_back(nodes: list, old: Any, new: Any) -> None:
    """Stores the traced function's new leaves into the caller's Variables (raw array attributes by path)."""
    from ..graph import _update_path
    for (path, leaf), (new_path, value) in zip(old, new):
        if path != new_path:
            raise AssertionError(f'nnx.jit: state paths out of step ({path} vs {new_path})')
        if isinstance(leaf, Variable):
            leaf.set_value(value.get_value() if isinstance(value, Variable) else value)
        else:
            _update_path(tuple(nodes), path, value)


class _Slot:
    """Placeholder for a static positional argument in the traced argument tree (a static leaf)."""

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _Slot)

    def __hash__(self) -> int:
        return hash(_Slot)


def jit(fun: Any = None, *, in_shardings: Any = None, out_shardings: Any = None,
        static_argnums: int | Sequence[int] | None = None, static_argnames: str | Sequence[str] | None = None,
        donate_argnums: Any = None, donate_argnames: Any = None, keep_unused: bool = False, device: Any = None,
        backend: Any = None, inline: bool = False, graph: Any = None, graph_updates: Any = None) -> Any:
    """``fluxion.jit`` for functions of Modules and other graph objects; usable as a decorator.

    Graph objects among the arguments (at any depth of their pytrees) are split
    into a static GraphDef (part of the cache key) and a State passed as traced
    input.  Inside, fresh objects are merged and handed to ``fun``; afterwards
    their state, and any structural change (new Variables, e.g. from ``sow``),
    is written back into the caller's objects.  Graph objects in the output are
    returned as well: an input object returned comes back as the caller's own
    object.  Arrays and Python numbers are traced; other leaves are static.

    Differences from Flax: sharding, device and donation options are accepted
    and ignored (one CPU device); ``graph``/``graph_updates`` modes are not
    offered (always graph mode with updates).

    Raises:
      ValueError: unhashable static arguments.
    """
    def wrap(f: Any) -> JitWrapped:
        return JitWrapped(f, static_argnums, static_argnames, donate_argnums, donate_argnames, keep_unused, inline)
    return wrap if fun is None else wrap(fun)


def eval_shape(f: Any, *args: Any, **kwargs: Any) -> Any:
    """The output of ``f(*args, **kwargs)`` with arrays replaced by ``fluxion.ShapeDtypeStruct``, without computing.

    Graph objects in the output come back with their Variables holding
    ShapeDtypeStructs (the abstract-model pattern
    ``nnx.eval_shape(lambda: Model(rngs=nnx.Rngs(0)))``).  The arguments are not modified.
    """
    spec, nodes, dyn = flatten_tree((args, kwargs))
    graphdef, state = split_nodes(nodes)
    cell: dict = {}

    def pure(state: Any, dyn: list) -> tuple:
        fresh = merge_nodes(graphdef, state)
        a, kw = unflatten_tree(spec, fresh, dyn)
        out = f(*a, **kw)
        out_spec, out_nodes, out_dyn = flatten_tree(out)
        out_graphdef, out_state = split_nodes(out_nodes)
        cell['out'] = (out_spec, out_graphdef)
        return out_state, out_dyn

    out_state, out_dyn = fluxion.eval_shape(pure, state, dyn)
    out_spec, out_graphdef = cell['out']
    return unflatten_tree(out_spec, merge(out_graphdef, out_state), out_dyn)


def jit_partial(fun: Any, *partial_args: Any, in_shardings: Any = None, out_shardings: Any = None,
                static_argnums: Any = None, static_argnames: Any = None, donate_argnums: Any = None,
                donate_argnames: Any = None, keep_unused: bool = False, device: Any = None, backend: Any = None,
                inline: bool = False, graph: Any = None, graph_updates: Any = None) -> Any:
    """:func:`jit` of ``fun`` with ``partial_args`` bound as its first positional arguments.

    The returned function takes the remaining arguments; Variable values the
    call writes (in the bound objects too) reach the caller's objects.  As in
    Flax 0.12 it is offered without graph updates only (``graph=False`` or
    ``graph_updates=False``).

    Raises:
      ValueError: graph mode with graph updates (the default), as in Flax; a
        ``StateSharding`` in ``in_shardings``/``out_shardings``.
    """
    graph = True if graph is None else graph
    graph_updates = True if graph_updates is None else graph_updates
    if graph and graph_updates:
        raise ValueError('`graph_updates` not supported by `jit_partial`')
    from ..spmd import StateSharding
    from fluxion import tree_util
    for name, shardings in (('in_shardings', in_shardings), ('out_shardings', out_shardings)):
        if any(isinstance(x, StateSharding) for x in tree_util.tree_leaves(
                shardings, is_leaf=lambda x: isinstance(x, StateSharding))):
            raise ValueError(f'`{name}` cannot contain `StateSharding` objects when `graph=False` or '
                             '`graph_updates=False`. Consider the following options:\n\n'
                             f'1. Drop the StateSharding from `{name}`.\n'
                             '2. Use nnx.jit with its default graph mode (it accepts StateSharding).')
    jitted = jit(fun, static_argnums=static_argnums, static_argnames=static_argnames, keep_unused=keep_unused,
                 inline=inline)

    @functools.wraps(fun)
    def bound(*args: Any, **kwargs: Any) -> Any:
        return jitted(*partial_args, *args, **kwargs)
    return bound

"""``nnx.pmap`` and ``nnx.shard_map``: fluxion's device-parallel maps over functions of Modules.

``pmap`` handles graph arguments exactly as ``nnx.vmap`` does (``in_axes``
entries per argument, :class:`~fluxion.flax.nnx.StateAxes` per Variable
filter, state written back on its axis), with ``fluxion.pmap`` doing the map
(so the mapped size is bounded by the device count).  ``shard_map`` gives each
argument a ``PartitionSpec`` (or, for a Module, a
:class:`~fluxion.flax.nnx.StateSharding` choosing a spec per Variable); the
Modules' Variables are split into blocks like arrays, the function sees its
block, and the updated blocks are put back together with the same specs.
"""

from __future__ import annotations

import functools
from typing import Any

import fluxion

from ..spmd import StateSharding
from ..state import from_flat_state, to_flat_state
from ..variables import Variable
from ._extract import flatten_tree, merge_nodes, split_nodes, sync_all, unflatten_tree
from .iteration import map_graph


def pmap(f: Any = None, *, axis_name: Any = None, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: Any = (), devices: Any = None, backend: Any = None, axis_size: Any = None,
         donate_argnums: Any = (), transform_metadata: Any = None, graph: Any = None,
         graph_updates: Any = None) -> Any:
    """``fluxion.pmap`` for functions of graph objects; usable as a decorator.

    Arguments, axes and write-back follow ``nnx.vmap``; collectives inside
    name ``axis_name``; ``static_broadcasted_argnums`` arguments are passed
    as they are (hashable Python values).

    Raises:
      ValueError: the mapped size exceeds the device count (fluxion.pmap's
        error), or ``nnx.vmap``'s errors for bad axes.
    """
    static = ((static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int)
              else tuple(static_broadcasted_argnums))

    def mapper(pure: Any, *, in_axes: Any, out_axes: Any, axis_name: Any, axis_size: Any) -> Any:
        return fluxion.pmap(pure, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes, axis_size=axis_size,
                            devices=devices, backend=backend)

    def wrap(fn: Any) -> Any:
        if not static:
            return map_graph(mapper, fn, in_axes, out_axes, axis_name, axis_size, 'pmap', transform_metadata)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            n = len(args)
            fixed = {i % n: args[i] for i in static}
            dyn_args = tuple(a for i, a in enumerate(args) if i not in fixed)
            axes = in_axes
            if isinstance(in_axes, (tuple, list)) and len(in_axes) == n:
                axes = tuple(a for i, a in enumerate(in_axes) if i not in fixed)

            def call(*inner: Any, **kw: Any) -> Any:
                it = iter(inner)
                return fn(*[fixed[i] if i in fixed else next(it) for i in range(n)], **kw)
            return map_graph(mapper, call, axes, out_axes, axis_name, axis_size, 'pmap', transform_metadata)(
                *dyn_args, **kwargs)
        return wrapper
    return wrap if f is None else wrap(f)


def _leaf_specs(args: tuple, in_specs: Any) -> tuple[list, list]:
    """Per graph object and per array leaf of ``args`` (flatten order), the spec of the argument holding it."""
    specs = tuple(in_specs) if isinstance(in_specs, (tuple, list)) else (in_specs,) * len(args)
    if len(specs) != len(args):
        raise ValueError(f'shard_map: in_specs has {len(specs)} entries for {len(args)} positional arguments')
    node_specs, dyn_specs = [], []
    for value, spec in zip(args, specs):
        _, nodes, dyn = flatten_tree(value)
        if isinstance(spec, StateSharding) and dyn:
            raise ValueError('shard_map: StateSharding can only be used for graph-object arguments')
        node_specs += [spec] * len(nodes)
        dyn_specs += [spec] * len(dyn)
    return node_specs, dyn_specs


def _spec_of(spec: Any, path: tuple, leaf: Any) -> Any:
    return spec.map_prefix(path, leaf) if isinstance(spec, StateSharding) else spec


def shard_map(f: Any = None, *, mesh: Any, in_specs: Any, out_specs: Any, axis_names: Any = frozenset(),
              check_vma: bool = True, graph: Any = None, graph_updates: Any = None) -> Any:
    """``fluxion.shard_map`` for functions of graph objects; usable as a decorator.

    ``in_specs`` has one entry per positional argument: a ``PartitionSpec``
    (for every leaf of the argument, a Module's Variables included), a
    :class:`StateSharding` (a spec per Variable of a Module argument) or None
    (replicated).  ``out_specs`` is a prefix of the output's tree.  The
    Variables' new blocks are reassembled with their input specs and written
    back to the caller's Modules.

    Differences from Flax: the output may not hold graph objects, and the
    function may not add or remove Variables.

    Raises:
      ValueError: ``in_specs`` of the wrong length, a StateSharding filter that
        matches no Variable, graph objects in the output or a changed graph
        structure; fluxion.shard_map's errors (indivisible dimensions, unknown axes).
    """
    def wrap(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any) -> Any:
            spec, nodes, dyn = flatten_tree(args)
            node_specs, dyn_specs = _leaf_specs(args, in_specs)
            graphdef, state = split_nodes(nodes)
            flat = list(to_flat_state(state))
            state_specs = [_spec_of(node_specs[p[0]], p[1:], leaf) for p, leaf in flat]
            values = [leaf.get_value() if isinstance(leaf, Variable) else leaf for _, leaf in flat]

            def pure(values: list, dyn: list) -> tuple:
                leaves = [(p, leaf.replace(v) if isinstance(leaf, Variable) else v)
                          for (p, leaf), v in zip(flat, values)]
                fresh = merge_nodes(graphdef, from_flat_state(leaves))
                out = fn(*unflatten_tree(spec, fresh, dyn))
                if flatten_tree(out)[1]:
                    raise ValueError('nnx.shard_map: the output may not hold graph objects (Modules/Variables)')
                new_graphdef, new_state = split_nodes(list(fresh))
                if new_graphdef != graphdef:
                    raise ValueError('nnx.shard_map: the function changed the graph structure of its arguments')
                return [leaf.get_value() if isinstance(leaf, Variable) else leaf
                        for _, leaf in to_flat_state(new_state)], out

            mapped = fluxion.shard_map(pure, mesh=mesh, in_specs=(state_specs, list(dyn_specs)),
                                       out_specs=(state_specs, out_specs), axis_names=axis_names,
                                       check_vma=check_vma)
            new_values, out = mapped(values, list(dyn))
            fresh = merge_nodes(graphdef, from_flat_state(
                [(p, leaf.replace(v) if isinstance(leaf, Variable) else v) for (p, leaf), v in zip(flat, new_values)]))
            sync_all(nodes, fresh)
            return out
        return wrapper
    return wrap if f is None else wrap(f)

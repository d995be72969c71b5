"""``nnx.vmap``, ``nnx.scan``, ``nnx.fori_loop``, ``nnx.while_loop`` over functions of object graphs.

Each graph argument's state is mapped (vmap) or sliced (scan) along the axis
given for that argument in ``in_axes``; :class:`StateAxes` gives different axes
to different parts of one object's state (e.g. ``{nnx.Param: 0, nnx.BatchStat: None}``),
and :class:`Carry` marks the loop-carried argument of ``scan``.  State changed
inside is written back to the caller's objects with the same axes.
"""

from __future__ import annotations

import functools
from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, random

from .. import filters as filterlib
from ..graph import merge
from ..state import State, from_flat_state, to_flat_state
from ..variables import Variable
from ._extract import (flatten_tree, merge_nodes, resolve_outputs, split_nodes, sync_all,
                       unflatten_tree)


class Carry:
    """Marker for ``scan``'s ``in_axes``/``out_axes``: this argument/output is the loop carry."""


class StateAxes:
    """Per-filter axes for one graph argument: ``StateAxes({nnx.Param: 0, ...: None})``.

    Each Variable takes the axis of the first filter that matches it.

    Raises:
      ValueError: a Variable matches no filter (when the axes are applied).
    """

    def __init__(self, filter_axes: Any, /):
        items = filter_axes.items() if hasattr(filter_axes, 'items') else filter_axes
        self._pairs = tuple(items)
        self.predicates = tuple(filterlib.to_predicate(f) for f, _ in self._pairs)

    @property
    def filters(self) -> tuple:
        return tuple(f for f, _ in self._pairs)

    @property
    def axes(self) -> tuple:
        return tuple(a for _, a in self._pairs)

    def axis_for(self, path: tuple, leaf: Any) -> Any:
        """The axis of the first filter matching ``(path, leaf)``."""
        for pred, (_, axis) in zip(self.predicates, self._pairs):
            if pred(path, leaf):
                return axis
        raise ValueError(f'StateAxes: no filter of {self.filters!r} matches the state at path {path!r}')

    def __repr__(self) -> str:
        return f'StateAxes({dict(self._pairs)!r})'


def _axis_for(spec: Any, path: tuple, leaf: Any) -> Any:
    return spec.axis_for(path, leaf) if isinstance(spec, StateAxes) else spec


def _moveaxis(x: Any, src: int, dst: int) -> Any:
    if src == dst:
        return x
    if str(getattr(x, 'dtype', '')).startswith('key<'):
        # Typed keys: move the axis of the raw key data (the trailing key-data axis stays last).
        data = random.key_data(x)
        ndim = data.ndim - 1
        return random.wrap_key_data(jnp.moveaxis(data, src % ndim, dst % ndim))
    return jnp.moveaxis(x, src, dst)


def _move_state(state: State, axis_of: Any, *, from_zero: bool) -> State:
    """Moves each leaf's mapped axis between position 0 and its own axis (None: unmapped)."""
    flat = []
    for path, leaf in to_flat_state(state):
        axis = axis_of(path, leaf)
        value = leaf.get_value() if isinstance(leaf, Variable) else leaf
        if axis is None:
            value = value[0] if from_zero else value
        elif from_zero:
            value = _moveaxis(value, 0, axis)
        flat.append((path, leaf.replace(value) if isinstance(leaf, Variable) else value))
    return from_flat_state(flat)


def _normalize_axes(axes: Any, n: int, what: str) -> tuple:
    if isinstance(axes, (list, tuple)):
        if len(axes) != n:
            raise ValueError(f'{what} has {len(axes)} entries but the function got {n} positional arguments')
        return tuple(axes)
    return (axes,) * n


def vmap(f: Any = None, *, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None, axis_size: Any = None,
         spmd_axis_name: Any = None, transform_metadata: Any = None, graph: Any = None,
         graph_updates: Any = None) -> Any:
    """``fluxion.vmap`` for functions of graph objects; usable as a decorator.

    ``in_axes`` has one entry per positional argument (or one for all): an int,
    None, or for a graph argument a :class:`StateAxes`.  The entry applies to
    every leaf of that argument (keyword arguments are mapped over axis 0).
    ``out_axes`` is one entry for the whole output or a tuple with one entry per
    element of a tuple output.  Objects created inside (``vmap`` over a
    constructor with split Rngs makes an ensemble) come out with their state
    stacked on their out axis; the state of input objects comes back on its in axis.
    ``transform_metadata={nnx.PARTITION_NAME: name}`` keeps sharding names in
    step: ``name`` leaves the mapped Variables' ``out_sharding`` inside and is
    inserted at their in/out axis after.

    Differences from Flax: state with a ``None`` axis that becomes batched
    inside is not an error: element 0 is kept.  ``in_axes`` entries are not
    nested prefixes inside an argument.

    Raises:
      ValueError: ``in_axes``/``out_axes`` lengths that do not match; no mapped
        input and no ``axis_size``.
    """
    def wrap(fn: Any) -> Any:
        return map_graph(fluxion.vmap, fn, in_axes, out_axes, axis_name, axis_size, 'vmap', transform_metadata)
    return wrap if f is None else wrap(f)


def map_graph(mapper: Any, fn: Any, in_axes: Any, out_axes: Any, axis_name: Any, axis_size: Any,
              name: str, transform_metadata: Any = None) -> Any:
    """``fn`` mapped by ``mapper`` (``fluxion.vmap`` or ``fluxion.pmap``, called as ``mapper(pure, in_axes=...,
    out_axes=0, axis_name=..., axis_size=...)``) with graph arguments handled as :func:`vmap` describes.

    With ``transform_metadata`` naming a ``PARTITION_NAME``, the mapped axis is taken out of the Variables'
    ``out_sharding`` inside and put back (at the in/out axis) after, as Flax does."""
    from .. import spmd
    lift = dict(transform_metadata or {})
    lift = lift if spmd.PARTITION_NAME in lift else None
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        arg_axes = _normalize_axes(in_axes, len(args), 'in_axes')
        spec, nodes, dyn = flatten_tree((args, kwargs))
        node_axes, dyn_axes = _leaf_axes(args, kwargs, arg_axes)
        graphdef, state = split_nodes(nodes)

        def in_axis_of(path: tuple, leaf: Any) -> Any:
            return _axis_for(node_axes[path[0]], path[1:], leaf)

        groups: dict = {}
        for path, leaf in to_flat_state(state):
            groups.setdefault(in_axis_of(path, leaf), []).append((path, leaf))
        group_keys = list(groups)
        group_states = [from_flat_state(groups[k]) for k in group_keys]
        cell: dict = {}

        def pure(group_states: list, dyn: list) -> tuple:
            flat = [pv for s in group_states for pv in to_flat_state(s)]
            if lift is not None:
                for path, leaf in flat:
                    axis = in_axis_of(path, leaf)
                    if isinstance(axis, int) and isinstance(leaf, Variable):
                        spmd.remove_axis(leaf, axis, lift)
            fresh = merge_nodes(graphdef, from_flat_state(flat))
            call_args, call_kwargs = unflatten_tree(spec, fresh, dyn)
            out = fn(*call_args, **call_kwargs)
            out_spec, out_nodes, out_dyn = flatten_tree(out)
            leaf_axes = _out_leaf_axes(out, out_axes)
            if lift is not None:
                _lift_out_metadata(fresh, out_nodes, in_axis_of, leaf_axes[0], lift)
            out_graphdef, out_state = split_nodes([tuple(fresh), tuple(out_nodes)])
            cell['out'] = (out_spec, out_graphdef, leaf_axes)
            return out_state, out_dyn

        size = axis_size
        if size is None and not any(a is not None for a in group_keys) and all(a is None for a in dyn_axes):
            raise ValueError(f'{name} must have at least one non-None value in in_axes (or give axis_size)')
        mapped = mapper(pure, in_axes=(list(group_keys), list(dyn_axes)), out_axes=0,
                        axis_name=axis_name, axis_size=size)
        out_state, out_dyn = mapped(group_states, dyn)
        out_spec, out_graphdef, (out_node_axes, out_dyn_axes) = cell['out']

        def out_axis_of(path: tuple, leaf: Any) -> Any:
            if path[0] == 0:
                return in_axis_of(path[1:], leaf)
            return _axis_for(out_node_axes[path[1]], path[2:], leaf)

        out_state = _move_state(out_state, out_axis_of, from_zero=True)
        out_dyn = [v[0] if a is None else _moveaxis(v, 0, a) for v, a in zip(out_dyn, out_dyn_axes)]
        fresh_in, fresh_out = merge(out_graphdef, out_state)
        memo = sync_all(nodes, fresh_in)
        return unflatten_tree(out_spec, resolve_outputs(fresh_out, memo), out_dyn)
    return wrapper


def _lift_out_metadata(fresh: Any, out_nodes: list, in_axis_of: Any, out_node_axes: list, lift: dict) -> None:
    """Puts the mapped axis back into the ``out_sharding`` of the Variables leaving a mapped function: inputs'
    at their in axis, outputs' at their out axis (each Variable once)."""
    from .. import spmd
    seen: set = set()
    _, in_state = split_nodes(list(fresh))
    pending = [(in_axis_of(p, v), v) for p, v in to_flat_state(in_state)]
    for k, node in enumerate(out_nodes):
        _, st = split_nodes([node])
        pending += [(_axis_for(out_node_axes[k], p[1:], v), v) for p, v in to_flat_state(st)]
    for axis, v in pending:
        if isinstance(axis, int) and isinstance(v, Variable) and id(v) not in seen:
            seen.add(id(v))
            spmd.add_axis(v, axis, lift)


def _leaf_axes(args: tuple, kwargs: dict, arg_axes: tuple) -> tuple[list, list]:
    """Per graph object and per dynamic leaf (in flatten order), the axis entry of the argument holding it."""
    node_axes, dyn_axes = [], []
    for value, axis in [*zip(args, arg_axes), *((v, 0) for v in kwargs.values())]:
        _, nodes, dyn = flatten_tree(value)
        node_axes += [axis] * len(nodes)
        if isinstance(axis, StateAxes) and dyn:
            raise ValueError('StateAxes can only be used for graph-object arguments')
        dyn_axes += [axis] * len(dyn)
    return node_axes, dyn_axes


def _out_leaf_axes(out: Any, out_axes: Any) -> tuple[list, list]:
    if isinstance(out_axes, (list, tuple)):
        if not isinstance(out, tuple) or len(out) != len(out_axes):
            raise ValueError(f'out_axes {out_axes!r} does not match the output structure')
        pairs = list(zip(out, out_axes))
    else:
        pairs = [(out, out_axes)]
    node_axes, dyn_axes = [], []
    for value, axis in pairs:
        _, nodes, dyn = flatten_tree(value)
        node_axes += [axis] * len(nodes)
        dyn_axes += [axis] * len(dyn)
    return node_axes, dyn_axes


def scan(f: Any = None, *, length: Any = None, reverse: bool = False, unroll: Any = 1,
         _split_transpose: bool = False, in_axes: Any = (Carry, 0), out_axes: Any = (Carry, 0),
         transform_metadata: Any = None, graph: Any = None, graph_updates: Any = None) -> Any:
    """``fluxion.lax.scan`` for functions of graph objects; usable as a decorator.

    ``in_axes`` has one entry per positional argument: :class:`Carry` (at most
    one: the loop carry, passed to and returned by ``f``), an int (the argument
    is sliced along that axis, one slice per step: e.g. a stack of layers' state
    made by ``vmap``), None (broadcast: the same value each step), or for graph
    arguments a :class:`StateAxes` of those.  Graph state with ``Carry``/None
    axes is carried across steps (so its updates, e.g. RNG counters, persist);
    sliced graph state is re-stacked after the loop.  ``out_axes`` is
    :class:`Carry`, an int (stack the per-step outputs on that axis), or a
    tuple of those for a tuple output; the ``Carry`` output must have the
    carry's structure.  ``transform_metadata={nnx.PARTITION_NAME: name}``
    takes the scanned axis out of sliced Variables' ``out_sharding`` for each
    step and puts it back after.

    Raises:
      ValueError: more than one Carry argument, a Carry output without a Carry
        input, None in ``out_axes``, no scanned input and no ``length``.
    """
    def wrap(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                raise ValueError('nnx.scan passes positional arguments only')
            arg_axes = _normalize_axes(in_axes, len(args), 'in_axes')
            carry_pos = [i for i, a in enumerate(arg_axes) if a is Carry]
            if len(carry_pos) > 1:
                raise ValueError(f'Only one Carry argument is allowed, got in_axes={arg_axes!r}')
            spec, nodes, dyn = flatten_tree(args)
            node_axes, dyn_axes = _leaf_axes(args, {}, arg_axes)
            graphdef, state = split_nodes(nodes)

            def in_axis_of(path: tuple, leaf: Any) -> Any:
                return _axis_for(node_axes[path[0]], path[1:], leaf)

            carried, sliced = [], []
            for path, leaf in to_flat_state(state):
                axis = in_axis_of(path, leaf)
                (carried if axis is None or axis is Carry else sliced).append((path, leaf))
            sliced_state = _move_to_front(from_flat_state(sliced), in_axis_of)
            carry_dyn = [(i, v) for i, (v, a) in enumerate(zip(dyn, dyn_axes)) if a is Carry or a is None]
            scan_dyn = [(i, _moveaxis(v, a, 0)) for i, (v, a) in enumerate(zip(dyn, dyn_axes))
                        if not (a is Carry or a is None)]
            carry_idx = [i for i, _ in carry_dyn]
            scan_idx = [i for i, _ in scan_dyn]
            carry_dyn_axes = [dyn_axes[i] for i in carry_idx]
            cell: dict = {}

            from .. import spmd
            lift = dict(transform_metadata or {})
            lift = lift if spmd.PARTITION_NAME in lift else None

            def body(carry: tuple, xs: tuple) -> tuple:
                c_vals, c_state = carry
                x_vals, x_state = xs
                if lift is not None:
                    # The scanned axis leaves the sliced Variables' out_sharding for the step, as in Flax.
                    for path, leaf in to_flat_state(x_state):
                        if isinstance(leaf, Variable):
                            spmd.remove_axis(leaf, in_axis_of(path, leaf), lift)
                values = [None] * len(dyn)
                for i, v in zip(carry_idx, c_vals):
                    values[i] = v
                for i, v in zip(scan_idx, x_vals):
                    values[i] = v
                flat = list(to_flat_state(c_state)) + list(to_flat_state(x_state))
                fresh = merge_nodes(graphdef, from_flat_state(flat))
                call_args = unflatten_tree(spec, fresh, values)
                out = fn(*call_args)
                carry_out, ys = _split_scan_output(out, out_axes)
                new_c_vals = list(c_vals)
                if carry_out is not _NO_CARRY:
                    if not carry_pos:
                        raise ValueError('out_axes has a Carry but in_axes has none')
                    _, _, carry_leaves = flatten_tree(carry_out)
                    slots = [k for k, a in enumerate(carry_dyn_axes) if a is Carry]
                    if len(carry_leaves) != len(slots):
                        raise ValueError(f'the carry returned by the scanned function has {len(carry_leaves)} '
                                         f'array leaves, expected {len(slots)}')
                    for k, leaf in zip(slots, carry_leaves):
                        new_c_vals[k] = leaf
                _, after = split_nodes(list(fresh))
                new_c, new_x = [], []
                for path, leaf in to_flat_state(after):
                    axis = in_axis_of(path, leaf)
                    (new_c if axis is None or axis is Carry else new_x).append((path, leaf))
                if lift is not None:
                    for path, leaf in new_x:
                        if isinstance(leaf, Variable):
                            spmd.add_axis(leaf, in_axis_of(path, leaf), lift)
                y_spec, y_nodes, y_leaves = flatten_tree(ys)
                if y_nodes:
                    raise ValueError('nnx.scan: graph objects in the stacked outputs are not supported')
                cell['ys'] = (y_spec, _ys_leaf_axes(ys, out_axes))
                return (new_c_vals, from_flat_state(new_c)), (y_leaves, from_flat_state(new_x))

            init = ([v for _, v in carry_dyn], from_flat_state(carried))
            xs = ([v for _, v in scan_dyn], sliced_state)
            if length is None and not scan_dyn and not sliced:
                raise ValueError('nnx.scan needs a scanned input (an int in in_axes) or `length`')
            (c_vals, c_state), (y_leaves, x_state) = lax.scan(body, init, xs, length=length, reverse=reverse,
                                                              unroll=unroll)
            x_state = _move_state(x_state, in_axis_of, from_zero=True)
            fresh = merge(graphdef, from_flat_state(list(to_flat_state(c_state)) + list(to_flat_state(x_state))))
            memo = sync_all(nodes, fresh)
            final = list(dyn)
            for i, v in zip(carry_idx, c_vals):
                final[i] = v
            final_args = unflatten_tree(spec, resolve_outputs(tuple(fresh), memo), final)
            carry_result = final_args[carry_pos[0]] if carry_pos else None
            y_spec, y_axes = cell['ys']
            ys = unflatten_tree(y_spec, [], [_moveaxis(v, 0, a) for v, a in zip(y_leaves, y_axes)])
            return _join_scan_output(carry_result, ys, out_axes)
        return wrapper
    return wrap if f is None else wrap(f)


_NO_CARRY = object()


def _move_to_front(state: State, axis_of: Any) -> State:
    flat = []
    for path, leaf in to_flat_state(state):
        value = leaf.get_value() if isinstance(leaf, Variable) else leaf
        value = _moveaxis(value, axis_of(path, leaf), 0)
        flat.append((path, leaf.replace(value) if isinstance(leaf, Variable) else value))
    return from_flat_state(flat)


def _split_scan_output(out: Any, out_axes: Any) -> tuple[Any, Any]:
    """``(carry_part, stacked_part)`` of the scanned function's output according to ``out_axes``."""
    if out_axes is Carry:
        return out, ()
    if out_axes is None:
        raise ValueError('nnx.scan: out_axes=None (broadcast outputs) is not supported')
    if isinstance(out_axes, int):
        return _NO_CARRY, out
    if not isinstance(out, tuple) or len(out) != len(out_axes):
        raise ValueError(f'out_axes {out_axes!r} does not match the scanned function output')
    carry = _NO_CARRY
    ys = []
    for value, axis in zip(out, out_axes):
        if axis is Carry:
            carry = value
        elif axis is None:
            raise ValueError('nnx.scan: out_axes=None (broadcast outputs) is not supported')
        else:
            ys.append(value)
    return carry, tuple(ys)


def _ys_leaf_axes(ys: Any, out_axes: Any) -> list:
    """The stacking axis of every leaf of the stacked outputs (one out axis per non-Carry output entry)."""
    if isinstance(out_axes, int):
        return [out_axes] * len(flatten_tree(ys)[2])
    axes = [a for a in out_axes if a is not Carry] if out_axes is not Carry else []
    result = []
    for value, axis in zip(ys, axes):
        result += [axis] * len(flatten_tree(value)[2])
    return result


def _join_scan_output(carry: Any, ys: Any, out_axes: Any) -> Any:
    if out_axes is Carry:
        return carry
    if isinstance(out_axes, int):
        return ys
    out, ys_iter = [], iter(ys)
    for axis in out_axes:
        out.append(carry if axis is Carry else next(ys_iter))
    return tuple(out)


def fori_loop(lower: int, upper: int, body_fun: Any, init_val: Any, *, unroll: Any = None, graph: Any = None,
              graph_updates: Any = None) -> Any:
    """``fluxion.lax.fori_loop`` where ``init_val`` may contain graph objects, updated in place.

    ``body_fun(i, val)`` must return a value of the same structure (the same
    objects); their state is the loop carry.
    """
    spec, nodes, dyn = flatten_tree(init_val)
    graphdef, state = split_nodes(nodes)

    def body(i: Any, carry: tuple) -> tuple:
        st, values = carry
        fresh = merge_nodes(graphdef, st)
        out = body_fun(i, unflatten_tree(spec, fresh, values))
        _, out_nodes, out_dyn = flatten_tree(out)
        _, new_state = split_nodes(out_nodes)
        return new_state, out_dyn

    kwargs = {} if unroll is None else {'unroll': unroll}
    final_state, final_dyn = lax.fori_loop(lower, upper, body, (state, dyn), **kwargs)
    sync_all(nodes, merge(graphdef, final_state))
    return unflatten_tree(spec, nodes, final_dyn)


def while_loop(cond_fun: Any, body_fun: Any, init_val: Any, *, graph: Any = None, graph_updates: Any = None) -> Any:
    """``fluxion.lax.while_loop`` where ``init_val`` may contain graph objects, updated in place."""
    spec, nodes, dyn = flatten_tree(init_val)
    graphdef, state = split_nodes(nodes)

    def cond(carry: tuple) -> Any:
        st, values = carry
        return cond_fun(unflatten_tree(spec, merge_nodes(graphdef, st), values))

    def body(carry: tuple) -> tuple:
        st, values = carry
        fresh = merge_nodes(graphdef, st)
        out = body_fun(unflatten_tree(spec, fresh, values))
        _, out_nodes, out_dyn = flatten_tree(out)
        _, new_state = split_nodes(out_nodes)
        return new_state, out_dyn

    final_state, final_dyn = lax.while_loop(cond, body, (state, dyn))
    sync_all(nodes, merge(graphdef, final_state))
    return unflatten_tree(spec, nodes, final_dyn)



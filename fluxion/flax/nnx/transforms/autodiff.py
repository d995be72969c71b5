"""``nnx.grad``, ``nnx.value_and_grad`` and ``nnx.remat`` over functions of object graphs."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import fluxion
from fluxion import tree_util

from ..graph import merge
from .compilation import JitWrapped
from ..state import State, filter_state, from_flat_state, to_flat_state
from ..variables import Param, Variable
from ._extract import (copy_state, flatten_tree, is_obj, merge_nodes, split_nodes, sub_state, sync_all,
                       unflatten_tree)


@dataclasses.dataclass(frozen=True)
class DiffState:
    """Differentiate argument ``argnum`` (a graph object) with respect to the Variables selected by ``filter``."""
    argnum: int
    filter: Any


def _normalize_argnums(argnums: Any) -> tuple[tuple[DiffState, ...], bool]:
    single = isinstance(argnums, (int, DiffState))
    items = (argnums,) if single else tuple(argnums)
    out = []
    for a in items:
        if isinstance(a, DiffState):
            out.append(a)
        elif isinstance(a, int):
            out.append(DiffState(a, Param))
        else:
            raise TypeError(f'argnums entries must be int or DiffState, got {type(a).__name__}')
    if len({d.argnum for d in out}) != len(out):
        raise ValueError(f'argnums must be unique, got {argnums!r}')
    return tuple(out), single


def _is_state_leaf(x: Any) -> bool:
    return isinstance(x, (State, Variable))


def _grad_impl(f: Any, argnums: Any, has_aux: bool, holomorphic: bool, allow_int: bool, return_value: bool) -> Any:
    diff_specs, single = _normalize_argnums(argnums)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        n = len(args)
        for d in diff_specs:
            if not -n <= d.argnum < n:
                raise ValueError(f'argnums {d.argnum} out of range for {n} positional arguments')
        diff_pos = [d.argnum % n for d in diff_specs]
        spec, nodes, dyn = flatten_tree((args, kwargs))
        graphdef, state = split_nodes(nodes)
        node_index: dict = {}
        for i, node in enumerate(nodes):
            node_index.setdefault(id(node), i)
        rest_flat = dict(to_flat_state(state))
        # Each differentiated argument keeps its pytree structure with every graph object replaced by
        # the State of its Variables selected by the filter (a Variable argument stays a Variable).
        diff_inputs, layouts = [], []
        for d, pos in zip(diff_specs, diff_pos):
            leaves, treedef = tree_util.tree_flatten(args[pos], is_leaf=is_obj)
            new_leaves, owners = [], []
            for leaf in leaves:
                if is_obj(leaf):
                    k = node_index[id(leaf)]
                    if isinstance(leaf, Variable):
                        rest_flat.pop((k,), None)
                        new_leaves.append(leaf.copy())
                    else:
                        wrt = filter_state(sub_state(state, k), d.filter)
                        for p, _v in to_flat_state(wrt):
                            rest_flat.pop((k, *p), None)
                        new_leaves.append(copy_state(wrt))
                    owners.append(k)
                else:
                    new_leaves.append(leaf)
                    owners.append(None)
            diff_inputs.append(tree_util.tree_unflatten(treedef, new_leaves))
            layouts.append((treedef, owners))
        rest = from_flat_state(rest_flat)
        cell: dict = {}

        def pure(*diffs: Any) -> Any:
            flat = dict(to_flat_state(rest))
            per_arg = []
            for value, (_, owners) in zip(diffs, layouts):
                leaves = tree_util.tree_leaves(value, is_leaf=_is_state_leaf)
                per_arg.append(leaves)
                for leaf, k in zip(leaves, owners):
                    if k is None:
                        continue
                    if isinstance(leaf, Variable):
                        flat[(k,)] = leaf
                    else:
                        flat.update(((k, *p), v) for p, v in to_flat_state(leaf))
            fresh = merge_nodes(graphdef, from_flat_state(flat))
            call_args, call_kwargs = unflatten_tree(spec, fresh, dyn)
            call_args = list(call_args)
            for pos, leaves, (treedef, owners) in zip(diff_pos, per_arg, layouts):
                call_args[pos] = tree_util.tree_unflatten(
                    treedef, [leaf if k is None else fresh[k] for leaf, k in zip(leaves, owners)])
            out = f(*call_args, **call_kwargs)
            loss, aux = out if has_aux else (out, None)
            out_graphdef, out_state = split_nodes(list(fresh))
            cell['graphdef'] = out_graphdef
            return loss, (aux, out_state)

        vg = fluxion.value_and_grad(pure, argnums=tuple(range(len(diff_inputs))), has_aux=True,
                                    holomorphic=holomorphic, allow_int=allow_int)
        (loss, (aux, out_state)), grads = vg(*diff_inputs)
        sync_all(nodes, merge(cell['graphdef'], out_state))
        grads = grads[0] if single else tuple(grads)
        if return_value:
            return ((loss, aux), grads) if has_aux else (loss, grads)
        return (grads, aux) if has_aux else grads

    return wrapper


def grad(f: Any = None, *, argnums: Any = 0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False, reduce_axes: Any = (), graph: Any = None, graph_updates: Any = None) -> Any:
    """Gradient of a scalar function of graph objects (and arrays); usable as a decorator.

    A differentiated argument that is a Module (or other graph object) is
    differentiated with respect to its ``Param`` Variables, or the Variables
    selected by ``DiffState(argnum, filter)``; its gradient is a
    :class:`~fluxion.flax.nnx.State` with the same paths and Variable types.
    A pytree holding graph objects (e.g. a list of modules) gives the same
    pytree with a State per object; arrays in it get ordinary gradients.  Mutations
    made by ``f`` (e.g. BatchNorm statistics, RNG counters) are written back
    to the caller's objects.  ``has_aux`` returns ``(grads, aux)``.

    Raises:
      ValueError/TypeError: bad ``argnums``; fluxion.grad's errors for
        non-scalar or non-float outputs.
    """
    def wrap(fn: Any) -> Any:
        return _grad_impl(fn, argnums, has_aux, holomorphic, allow_int, return_value=False)
    return wrap if f is None else wrap(f)


def value_and_grad(f: Any = None, *, argnums: Any = 0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False, reduce_axes: Any = (), graph: Any = None,
                   graph_updates: Any = None) -> Any:
    """Like :func:`grad` but returns ``(value, grads)`` (``((value, aux), grads)`` with ``has_aux``)."""
    def wrap(fn: Any) -> Any:
        return _grad_impl(fn, argnums, has_aux, holomorphic, allow_int, return_value=True)
    return wrap if f is None else wrap(f)


class _RematWrapped(JitWrapped):
    """``nnx.jit``'s graph handling around ``fluxion.checkpoint`` instead of ``fluxion.jit``."""

    def __init__(self, fun: Any, prevent_cse: bool, static_argnums: Any, policy: Any):
        super().__init__(fun, static_argnums, None, None, None, False, False)
        self.remat_kwargs = {'prevent_cse': prevent_cse, 'policy': policy}

    def _make(self, spec: Any, graphdef: Any, static_args: tuple, static_kwargs: tuple) -> tuple:
        pure, cell = self._pure(spec, graphdef, static_args, static_kwargs)
        return fluxion.checkpoint(pure, **self.remat_kwargs), cell


def remat(f: Any = None, *, prevent_cse: bool = True, static_argnums: Any = (), policy: Any = None,
          graph: Any = None, graph_updates: Any = None) -> Any:
    """Rematerialization (``fluxion.checkpoint``) for functions of graph objects; usable as a decorator.

    Values, gradients and module mutations are those of ``f``; reverse mode keeps only ``f``'s inputs (and what
    ``policy`` saves) and recomputes its intermediates. Graph objects are handled as by ``nnx.jit``.
    """
    def wrap(fn: Any) -> Any:
        return functools.wraps(fn)(_RematWrapped(fn, prevent_cse, static_argnums, policy))
    return wrap if f is None else wrap(f)

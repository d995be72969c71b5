"""Moving object graphs across a transform boundary: split on the way in, merge inside, sync on the way out.

A transform's arguments are flattened as pytrees whose leaves are graph
objects (Modules, Rngs, Variables ...), arrays/numbers (traced) and other
values (static).  All graph objects are split *together*, so sharing between
arguments survives.  After the traced call the fresh graph built inside is
split again; outside, :func:`sync` writes it back into the caller's original
objects (values, new/removed attributes, new submodules), which is how
mutations made in traced code become visible to the caller.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import tree_util

from ..pytreelib import Pytree
from ..graph import is_array, is_graph_node, merge, split
from ..state import State, from_flat_state, to_flat_state
from ..variables import Variable


def is_obj(x: Any) -> bool:
    return isinstance(x, (Pytree, Variable))


def is_dynamic(x: Any) -> bool:
    """Leaves traced by the underlying transform: arrays, NumPy arrays and Python numbers."""
    return is_array(x) or isinstance(x, (np.ndarray, np.generic, bool, int, float, complex))


class TreeSpec:
    """The static part of a flattened argument tree: its treedef and, per leaf, node/dynamic/static."""

    def __init__(self, treedef: Any, kinds: tuple):
        self.treedef = treedef
        self.kinds = kinds  # ('node', i) | ('dyn', i) | ('static', value)

    def key(self) -> tuple:
        return (self.treedef, tuple((k, v if k != 'static' else _hashable(v)) for k, v in self.kinds))


class _ById:
    """A static value that is not hashable: cached by identity."""

    def __init__(self, value: Any):
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _ById) and other.value is self.value


def _hashable(v: Any) -> Any:
    try:
        hash(v)
        return v
    except TypeError:
        return _ById(v)


def flatten_tree(tree: Any, whole: tuple = ()) -> tuple[TreeSpec, list, list]:
    """``(spec, graph_objects, dynamic_leaves)`` of an argument tree.

    Objects in ``whole`` (e.g. a list of modules passed to ``grad``) are kept
    as one graph node instead of being flattened as a pytree.
    """
    whole_ids = {id(w) for w in whole}

    def leaf_node(x: Any) -> bool:
        return is_obj(x) or id(x) in whole_ids

    leaves, treedef = tree_util.tree_flatten(tree, is_leaf=leaf_node)
    kinds, nodes, dyn = [], [], []
    for leaf in leaves:
        if leaf_node(leaf):
            kinds.append(('node', len(nodes)))
            nodes.append(leaf)
        elif is_dynamic(leaf):
            kinds.append(('dyn', len(dyn)))
            dyn.append(leaf)
        else:
            kinds.append(('static', leaf))
    return TreeSpec(treedef, tuple(kinds)), nodes, dyn


def unflatten_tree(spec: TreeSpec, nodes: Any, dyn: Any) -> Any:
    leaves = []
    for kind, v in spec.kinds:
        leaves.append(nodes[v] if kind == 'node' else dyn[v] if kind == 'dyn' else v)
    return tree_util.tree_unflatten(spec.treedef, leaves)


def split_nodes(nodes: list) -> tuple[Any, State]:
    """One GraphDef and State for a list of graph objects (paths start with the object's position)."""
    return split(tuple(nodes))


def copy_state(state: State) -> State:
    """The same paths with each Variable copied, so merging it does not alias the caller's Variables."""
    return from_flat_state([(p, v.copy() if isinstance(v, Variable) else v) for p, v in to_flat_state(state)])


def merge_nodes(graphdef: Any, *states: State) -> tuple:
    """Fresh graph objects from a GraphDef and states (Variables copied first)."""
    return merge(graphdef, *(copy_state(s) for s in states))


def sub_state(state: State, index: int) -> State:
    """The sub-State of the ``index``-th object of a joint split (empty if it has no leaves)."""
    return state[index] if index in state else State()


def prefix_state(index: int, state: State) -> list:
    return [((index, *p), v) for p, v in to_flat_state(state)]


_MISSING = object()


def sync(original: Any, fresh: Any, memo: dict) -> Any:
    """Makes ``original`` look like ``fresh`` in place and returns the object to use in its place.

    Variables take the fresh value and metadata; Objects, lists and dicts are
    updated attribute by attribute (recursively), keeping their identity;
    anything new is adopted as is.  ``memo`` maps fresh objects to the
    originals standing for them, so shared references stay shared.
    """
    if id(fresh) in memo:
        return memo[id(fresh)]
    if isinstance(fresh, Variable):
        if isinstance(original, Variable) and type(original) is type(fresh):
            original.copy_from(fresh)
            memo[id(fresh)] = original
            return original
        memo[id(fresh)] = fresh
        return fresh
    if isinstance(fresh, Pytree) and type(original) is type(fresh):
        memo[id(fresh)] = original
        ov, fv = vars(original), vars(fresh)
        for k in [k for k in ov if k not in fv]:
            del ov[k]
        for k, v in fv.items():
            ov[k] = sync(ov.get(k, _MISSING), v, memo)
        # The data/static status of each attribute follows the values.
        object.__setattr__(original, '_pytree__nodes', dict(fresh._nodes()))
        return original
    if isinstance(fresh, list) and is_graph_node(fresh) and type(original) is type(fresh):
        memo[id(fresh)] = original
        olds = list(original) + [_MISSING] * (len(fresh) - len(original))
        original[:] = [sync(o, f, memo) for o, f in zip(olds, fresh)]
        return original
    if isinstance(fresh, dict) and is_graph_node(fresh) and type(original) is type(fresh):
        memo[id(fresh)] = original
        new = {k: sync(original.get(k, _MISSING), v, memo) for k, v in fresh.items()}
        original.clear()
        original.update(new)
        return original
    if isinstance(fresh, tuple) and is_graph_node(fresh):
        olds = (tuple(original) if isinstance(original, tuple) and len(original) == len(fresh)
                else (_MISSING,) * len(fresh))
        values = [sync(o, f, memo) for o, f in zip(olds, fresh)]
        return type(fresh)(values) if type(fresh) is tuple else type(fresh)(*values)
    if isinstance(fresh, (Pytree, list, dict)) and is_graph_node(fresh):
        memo[id(fresh)] = fresh
    return fresh


def sync_all(originals: list, fresh: tuple, memo: dict | None = None) -> dict:
    """Syncs each original graph object with its fresh counterpart; returns the fresh-to-original memo."""
    memo = {} if memo is None else memo
    for o, f in zip(originals, fresh):
        sync(o, f, memo)
    return memo


def resolve_outputs(out_nodes: tuple, memo: dict) -> list:
    """Output graph objects: the caller's original where the output is an (updated) input, else the new one."""
    return [memo.get(id(n), n) if id(n) in memo else sync(_MISSING, n, memo) for n in out_nodes]

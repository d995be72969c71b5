"""Graph nodes inside pytrees: ``to_tree`` replaces every graph node and Variable of a pytree by a
:class:`NodeStates` (its GraphDef and State), ``from_tree`` turns them back into objects (mirrors
``flax.nnx.extract``).  All nodes of one call are split (merged) in one split (merge) context, so objects
shared between them stay shared.

Difference from Flax 0.12: ``prefix`` trees are broadcast against the pytree of
arguments, but ``PrefixMapping`` prefixes (``StateAxes``-like objects that map a
prefix per Variable) are not interpreted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from typing import Any, Callable

from fluxion import tree_util

from .contexts import MergeContext, SplitContext, merge_context, split_context
from .graph import GraphDef, iter_graph
from .pytreelib import Pytree
from .variables import Variable

_MISSING = object()


@dataclasses.dataclass(frozen=True)
class NodeStates:
    """One graph node of a pytree, taken apart: its GraphDef (``None`` for bare prefixes), its States, and
    static ``metadata``.  A pytree whose leaves are the States' leaves."""

    _graphdef: GraphDef | None
    states: tuple
    metadata: Any = None

    @property
    def graphdef(self) -> GraphDef:
        """The GraphDef.

        Raises:
          ValueError: this NodeStates has none.
        """
        if self._graphdef is None:
            raise ValueError('No graphdef available')
        return self._graphdef

    @property
    def state(self) -> Any:
        """The single State.

        Raises:
          ValueError: there is not exactly one.
        """
        if len(self.states) != 1:
            raise ValueError(f'Expected exactly one GraphDefState, got {len(self.states)}')
        return self.states[0]

    @classmethod
    def from_split(cls, graphdef: GraphDef | None, state: Any, /, *states: Any, metadata: Any = None) -> NodeStates:
        return cls(graphdef, (state, *states), metadata)

    @classmethod
    def from_states(cls, state: Any, *states: Any) -> NodeStates:
        return cls(None, (state, *states), None)

    @classmethod
    def from_prefixes(cls, prefixes: Any, /, *, metadata: Any = None) -> NodeStates:
        return cls(None, tuple(prefixes), metadata)


tree_util.register_pytree_with_keys(
    NodeStates,
    lambda n: (((tree_util.GetAttrKey('_graphdef'), n._graphdef), (tree_util.GetAttrKey('states'), n.states)),
               n.metadata),
    lambda metadata, children: NodeStates(children[0], children[1], metadata))


def _is_node(x: Any) -> bool:
    return isinstance(x, (Pytree, Variable))


def default_split_fn(ctx: SplitContext, path: tuple, prefix: Any, leaf: Any) -> NodeStates:
    """``NodeStates.from_split(*ctx.split(leaf))``: the default way :func:`to_tree` takes a node apart."""
    return NodeStates.from_split(*ctx.split(leaf))


def merge_tree_node(ctx: MergeContext, path: tuple, prefix: Any, leaf: Any) -> Any:
    """The default way :func:`from_tree` rebuilds a node.

    Raises:
      ValueError: ``leaf`` is not a :class:`NodeStates`.
    """
    if not isinstance(leaf, NodeStates):
        raise ValueError(f'Expected TreeNode, got {type(leaf)} at path {path}')
    return ctx.merge(leaf.graphdef, *leaf.states)


def is_tree_node(x: Any) -> bool:
    """True for :class:`NodeStates`."""
    return isinstance(x, NodeStates)


def _broadcast(prefix: Any, tree: Any, is_leaf: Callable, prefix_is_leaf: Callable) -> list:
    """The prefix value of every leaf of ``tree`` (``prefix`` is a tree prefix of ``tree``)."""
    out: list = []

    def add(p: Any, subtree: Any) -> None:
        out.extend([p] * len(tree_util.tree_leaves(subtree, is_leaf=is_leaf)))
    tree_util.tree_map(add, prefix, tree, is_leaf=lambda x: prefix_is_leaf(x) or is_leaf(x))
    return out


def check_consistent_aliasing(node: Any, prefix: Any, /, *, node_prefixes: dict | None = None) -> None:
    """Records the prefix of every Variable reachable from ``node`` in ``node_prefixes`` and checks that a
    Variable reached from several places always gets the same prefix.

    Raises:
      ValueError: a Variable has two different prefixes (the message lists its paths and prefixes).
    """
    node_prefixes = {} if node_prefixes is None else node_prefixes
    variables: dict[int, Any] = {}
    for path, value in iter_graph(node):
        if isinstance(value, Variable):
            variables[id(value)] = value
            node_prefixes.setdefault(id(value), []).append((path, prefix))
    messages = []
    for node_id, entries in node_prefixes.items():
        if len({p for _, p in entries}) > 1:
            lines = '\n'.join(f"  {'/'.join(map(str, path)) if path else '<root>'}: {p}" for path, p in entries)
            name = type(variables[node_id]).__name__ if node_id in variables else f'Node ID: {node_id}'
            messages.append(f'Node: {name}\n{lines}')
    if messages:
        raise ValueError('Inconsistent aliasing detected. The following nodes have different prefixes:\n'
                         + '\n'.join(messages))


def to_tree(tree: Any, /, *, prefix: Any = _MISSING, split_fn: Callable = default_split_fn,
            map_non_graph_nodes: bool = False, ctxtag: Hashable | None = None, check_aliasing: bool = True) -> Any:
    """``tree`` with each graph node (Module, Rngs, other Pytree objects) and Variable replaced by
    ``split_fn(ctx, path, prefix, node)`` (by default a :class:`NodeStates`), all in one split context.

    ``prefix`` is a tree prefix of ``tree`` giving each node a prefix value
    (passed to ``split_fn``); with ``check_aliasing`` a Variable shared by nodes
    with different prefixes is an error.  ``map_non_graph_nodes`` applies
    ``split_fn`` to the other leaves too.  ``ctxtag`` joins an update context.

    Raises:
      ValueError: inconsistent aliasing; ``prefix`` is not a prefix of ``tree``.
    """
    with split_context(ctxtag) as ctx:
        if prefix is _MISSING or prefix is None:
            return tree_util.tree_map(
                lambda x: split_fn(ctx, (), prefix, x) if map_non_graph_nodes or _is_node(x) else x,
                tree, is_leaf=_is_node)
        prefixes = _broadcast(prefix, tree, _is_node, lambda x: x is None or _is_node(x))
        leaves, treedef = tree_util.tree_flatten_with_path(tree, is_leaf=_is_node)
        node_prefixes: dict = {}
        out = []
        for (path, leaf), leaf_prefix in zip(leaves, prefixes):
            if _is_node(leaf):
                if check_aliasing:
                    check_consistent_aliasing(leaf, leaf_prefix, node_prefixes=node_prefixes)
                out.append(split_fn(ctx, path, leaf_prefix, leaf))
            else:
                out.append(split_fn(ctx, path, leaf_prefix, leaf) if map_non_graph_nodes else leaf)
        return tree_util.tree_unflatten(treedef, out)


def from_tree(tree: Any, /, *, prefix: Any = _MISSING, merge_fn: Callable = merge_tree_node,
              is_node_leaf: Callable = is_tree_node, is_leaf: Callable = is_tree_node,
              map_non_graph_nodes: bool = False, is_inner: bool | None = None,
              ctxtag: Hashable | None = None) -> Any:
    """The inverse of :func:`to_tree`: each :class:`NodeStates` (``is_node_leaf``) becomes
    ``merge_fn(ctx, path, prefix, leaf)`` (by default the merged object), all in one merge context, so nodes
    that were shared are shared again.

    Raises:
      ValueError: from ``merge_fn`` (the default rejects non-NodeStates leaves it is given).
    """
    with merge_context(ctxtag, is_inner) as ctx:
        def rebuild(path: tuple, p: Any, x: Any) -> Any:
            if map_non_graph_nodes or is_node_leaf(x) or isinstance(x, Variable):
                return merge_fn(ctx, path, p, x)
            return x
        if prefix is _MISSING or prefix is None:
            return tree_util.tree_map(lambda x: rebuild((), prefix, x), tree, is_leaf=is_leaf)
        prefixes = _broadcast(prefix, tree, is_leaf, lambda x: x is None or is_leaf(x))
        leaves, treedef = tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)
        return tree_util.tree_unflatten(treedef, [rebuild(path, p, x) for (path, x), p in zip(leaves, prefixes)])

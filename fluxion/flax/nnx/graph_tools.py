"""Whole-graph rewrites: ``as_pure`` (strip Variables to values) and ``recursive_map`` (rebuild a graph
bottom-up through a function); mirrors those functions of ``flax.nnx.graphlib``."""

from __future__ import annotations

from typing import Any, Callable

from fluxion import tree_util

from . import graph as graphlib
from .deprecations import deprecated
from .modes import resolve_graph
from .pytreelib import Pytree
from .variables import Variable


def as_pure(tree: Any) -> Any:
    """``tree`` with every :class:`Variable` replaced by its value (recursively, for Variables holding
    Variables); e.g. a State of Params becomes a State of arrays, for serialization or export.  Other leaves and
    the tree structure are kept."""

    def strip(x: Any) -> Any:
        return as_pure(x.get_value()) if isinstance(x, Variable) else x
    return tree_util.tree_map(strip, tree, is_leaf=lambda x: isinstance(x, Variable))


pure = deprecated(as_pure)


def _children(node: Any) -> list[tuple[Any, Any]]:
    if isinstance(node, (Pytree, dict, list, tuple)) or graphlib.is_graph_node(node):
        return graphlib._children(node)
    return []


def _set(node: Any, key: Any, old: Any, new: Any) -> None:
    if isinstance(node, Pytree):
        if isinstance(old, Variable) and isinstance(new, Variable):
            # As in Flax: a Variable replaced by a Variable is updated in place (value and metadata).
            old.update_from_state(new)
        else:
            setattr(node, key, new)
    elif isinstance(node, (list, dict)):
        node[key] = new
    else:
        raise ValueError(f"Cannot update key '{key}' for node of type '{type(node)}' because the node does not "
                         'support mutation.')


def _recursive_map_tree(f: Callable[[tuple, Any], Any], node: Any) -> Any:
    in_progress: dict[int, tuple] = {}
    seen: dict[int, tuple] = {}

    def visit(path: tuple, x: Any) -> Any:
        if isinstance(x, Pytree) and not type(x)._pytree__is_pytree:
            raise ValueError(f"Cannot use 'recursive_map' with graph=False on a '{type(x).__name__}' instance that "
                             f"has pytree=False. Found at path: {'/'.join(map(str, path))}.")
        if isinstance(x, Variable) or not tree_util.is_tree_node(type(x)):
            if isinstance(x, Variable):
                if id(x) in seen:
                    raise ValueError(f"Duplicate {type(x).__name__} found at paths:\n\n  - {seen[id(x)]}\n  - "
                                     f"{'/'.join(map(str, path))}\n\nTree mode (graph=False) does not support "
                                     'shared references.')
                seen[id(x)] = '/'.join(map(str, path))
            return f(path, x)
        if id(x) in in_progress:
            raise ValueError(f"Cycle detected for {type(x).__name__} at path '{'/'.join(map(str, path))}'. Cycles "
                             'are not supported with graph=False.')
        in_progress[id(x)] = path
        children, aux = tree_util.flatten_one_level_with_keys(x)
        new = [visit(path + (graphlib._path_entry(k),), child) for k, child in children]
        rebuilt = tree_util.tree_unflatten(tree_util.tree_structure(x, is_leaf=lambda y: y is not x), new)
        out = f(path, rebuilt)
        in_progress.pop(id(x), None)
        return out

    return visit((), node)


def recursive_map(f: Callable[[tuple, Any], Any], node: Any, /, *, graph: bool | None = None) -> Any:
    """Calls ``f(path, value)`` on every node, Variable and attribute value of a copy of the graph, children
    before parents (keys in sorted order), and stores each result in place of the value; returns ``f((), root)``.

    The copy has new nodes but shares the Variables (as Flax's ``clone(variables=False)``), so when ``f``
    returns a different Variable for a Variable, the shared Variable takes the new value and metadata in place
    (Flax's behaviour).  A shared object is visited once; its result is reused at later paths.

    With ``graph=False`` (tree mode, default ``set_graph_mode``'s value) the
    node is walked as a pytree instead: ``f`` sees the data children only,
    parents are rebuilt from the mapped children before ``f`` sees them, and
    shared Variables or cycles are errors.

    Raises:
      ValueError: a cycle reaches an object whose result is not ready yet, or a tuple would need a new element;
        in tree mode, a shared Variable, a cycle or a ``pytree=False`` object.

    Difference from Flax 0.12: Flax's internal ``_pytree__*`` attributes are not visited.
    """
    if not resolve_graph(graph):
        return _recursive_map_tree(f, node)
    gdef, flat = graphlib.flatten(node)
    node = graphlib._build(gdef.root, (), dict(flat), {})
    visited: set[int] = set()
    results: dict[int, Any] = {}

    def visit(x: Any, path: tuple) -> Any:
        if id(x) in visited:
            if id(x) in results:
                return results[id(x)]
            raise ValueError(f"Found cycle in the graph at path '{'/'.join(map(str, path))}'. Node of type "
                             f'{type(x)} has already been visited but has not been returned yet.')
        children = _children(x)
        if isinstance(x, (Pytree, Variable)) or graphlib.is_graph_node(x):
            visited.add(id(x))
        for key, value in children:
            new = visit(value, path + (key,))
            if new is not value:
                _set(x, key, value, new)
        out = f(path, x)
        results[id(x)] = out
        return out

    return visit(node, ())

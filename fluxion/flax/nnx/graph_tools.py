"""Whole-graph rewrites: ``as_pure`` (strip Variables to values) and ``recursive_map`` (rebuild a graph
bottom-up through a function); mirrors those functions of ``flax.nnx.graphlib``."""

from __future__ import annotations

from typing import Any, Callable

from fluxion import tree_util

from . import graph as graphlib
from .deprecations import deprecated
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


def recursive_map(f: Callable[[tuple, Any], Any], node: Any, /) -> Any:
    """Calls ``f(path, value)`` on every node, Variable and attribute value of a copy of the graph, children
    before parents (keys in sorted order), and stores each result in place of the value; returns ``f((), root)``.

    The copy has new nodes but shares the Variables (as Flax's ``clone(variables=False)``), so when ``f``
    returns a different Variable for a Variable, the shared Variable takes the new value and metadata in place
    (Flax's behaviour).  A shared object is visited once; its result is reused at later paths.

    Raises:
      ValueError: a cycle reaches an object whose result is not ready yet, or a tuple would need a new element.

    Difference from Flax 0.12: Flax's internal ``_pytree__*`` attributes are not visited; tree mode
    (``graph=False``) is not offered.
    """
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

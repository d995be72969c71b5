"""Flattening and path-wise mapping of nested dicts (mirrors ``flax.traverse_util``).

A nested dict such as ``{'Dense_0': {'kernel': k, 'bias': b}}`` is flattened
to ``{('Dense_0', 'kernel'): k, ('Dense_0', 'bias'): b}`` (or, with
``sep='/'``, to ``{'Dense_0/kernel': k, ...}``) and back. ``FrozenDict``
inputs are read like dicts; outputs are plain dicts.

Not mirrored: the deprecated ``Traversal`` classes (``ModelParamTraversal``
and friends).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Optional

from .core import FrozenDict

__all__ = ['empty_node', 'flatten_dict', 'path_aware_map', 'unflatten_dict']


class _EmptyNode:
    """Stands for an empty sub-dict in a flattened dict (see ``keep_empty_nodes``)."""

    def __repr__(self) -> str:
        return 'empty_node'


empty_node = _EmptyNode()


def _is_dict(x: Any) -> bool:
    return isinstance(x, (dict, FrozenDict))


def flatten_dict(xs: Mapping, keep_empty_nodes: bool = False,
                 is_leaf: Optional[Callable[[tuple, Any], bool]] = None,
                 sep: Optional[str] = None) -> dict:
    """Flattens a nested dict into ``{path: leaf}``.

    Args:
        xs: a dict or FrozenDict; values that are not dicts are leaves.
        keep_empty_nodes: keep empty sub-dicts as ``{path: empty_node}``
            (an empty ``xs`` still gives ``{}``); otherwise they vanish.
        is_leaf: ``is_leaf(path, value) -> bool`` to stop descending early.
        sep: join path names with ``sep`` into string keys instead of tuples.

    Raises:
        TypeError: ``xs`` is not a dict.
    """
    if not _is_dict(xs):
        raise TypeError(f'flatten_dict expects a dict or FrozenDict, got {type(xs).__name__}.')
    out: dict = {}

    def key(path: tuple) -> Any:
        return path if sep is None else sep.join(path)

    def walk(node: Any, path: tuple) -> None:
        if not _is_dict(node) or (is_leaf is not None and is_leaf(path, node)):
            out[key(path)] = node
            return
        if not node and keep_empty_nodes and path:
            out[key(path)] = empty_node
            return
        for name, value in node.items():
            walk(value, path + (name,))

    walk(xs, ())
    return out


def unflatten_dict(xs: Mapping, sep: Optional[str] = None) -> dict:
    """Inverse of :func:`flatten_dict`: ``{path: leaf}`` to a nested dict.

    ``empty_node`` values become ``{}``; with ``sep`` the string keys are
    split on it.

    Raises:
        TypeError: ``xs`` is not a dict.
    """
    if not isinstance(xs, dict):
        raise TypeError(f'unflatten_dict expects a dict, got {type(xs).__name__}.')
    out: dict = {}
    for path, value in xs.items():
        parts = path.split(sep) if sep is not None else path
        node = out
        for name in parts[:-1]:
            node = node.setdefault(name, {})
        node[parts[-1]] = {} if value is empty_node else value
    return out


def path_aware_map(f: Callable[[tuple, Any], Any], nested_dict: Mapping) -> dict:
    """Maps ``f(path, leaf)`` over the leaves of a nested dict (empty sub-dicts are kept).

    Example: zero every bias with
    ``path_aware_map(lambda p, x: 0 * x if p[-1] == 'bias' else x, params)``.
    """
    flat = flatten_dict(nested_dict, keep_empty_nodes=True)
    return unflatten_dict({path: value if value is empty_node else f(path, value)
                           for path, value in flat.items()})

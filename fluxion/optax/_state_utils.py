"""Finding and replacing entries of optimizer states by name (``optax.tree_utils``).

Optimizer states are nests of NamedTuples, dicts, tuples and lists. These
helpers look entries up by NamedTuple field name, NamedTuple class name or
dict key, wherever they sit in the nest, e.g. ``tree_get(state, 'count')`` or
``tree_set(state, learning_rate=0.1)`` on an ``inject_hyperparams`` state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Optional, Protocol, runtime_checkable

from fluxion import tree_util

KeyPath = tuple


@dataclasses.dataclass(frozen=True)
class NamedTupleKey:
    """Path entry for a NamedTuple field: the tuple's class name and the field name."""
    tuple_name: str
    name: str

    def __str__(self) -> str:
        return f'{self.tuple_name}.{self.name}'


def _is_named_tuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, '_fields')


def _children(path: KeyPath, node: Any) -> list[tuple[KeyPath, Any]]:
    """Direct children of a container node with their paths (empty for leaves)."""
    if _is_named_tuple(node):
        name = type(node).__name__
        return [((*path, NamedTupleKey(name, f)), getattr(node, f)) for f in node._fields]
    if isinstance(node, dict):
        # Sorted like pytree flattening, so results come in leaf order.
        keys = sorted(node, key=str)
        return [((*path, tree_util.DictKey(k)), node[k]) for k in keys]
    if isinstance(node, (list, tuple)):
        return [((*path, tree_util.SequenceKey(i)), c) for i, c in enumerate(node)]
    return []


def _has_key(node: Any, key: Any) -> bool:
    if _is_named_tuple(node):
        return key in node._fields or type(node).__name__ == key
    return isinstance(node, dict) and key in node


def _value_at_key(path: KeyPath, node: Any, key: Any) -> tuple[KeyPath, Any]:
    if _is_named_tuple(node):
        if type(node).__name__ == key:
            return path, node
        return (*path, NamedTupleKey(type(node).__name__, key)), getattr(node, key)
    return (*path, tree_util.DictKey(key)), node[key]


def _outermost_matches(path: KeyPath, node: Any, key: Any) -> list[tuple[KeyPath, Any]]:
    if _has_key(node, key):
        return [(path, node)]
    return [m for cp, c in _children(path, node) for m in _outermost_matches(cp, c, key)]


def _all_matches(tree: Any, key: Any, path: KeyPath = ()) -> list[tuple[KeyPath, Any]]:
    # First every outermost container holding the key, then (in the same
    # order) matches nested inside them, as optax orders its results.
    outer = _outermost_matches(path, tree, key)
    found = [_value_at_key(p, n, key) for p, n in outer]
    for p, n in outer:
        for cp, c in _children(p, n):
            found += _all_matches(c, key, cp)
    return found


def tree_get_all_with_path(tree: Any, key: Any,
                           filtering: Optional[Callable[[KeyPath, Any], bool]] = None
                           ) -> list[tuple[KeyPath, Any]]:
    """All ``(path, value)`` pairs whose NamedTuple field / class name or dict key is ``key``.

    Args:
        tree: the nest to search (typically an optimizer state).
        key: field name, NamedTuple class name or dict key.
        filtering: optional ``(path, value) -> bool`` to keep only some matches.

    Returns:
        A list of ``(key_path, value)``; paths use ``NamedTupleKey``,
        ``DictKey`` and ``SequenceKey`` entries.
    """
    found = _all_matches(tree, key)
    if filtering is not None:
        found = [(p, v) for p, v in found if filtering(p, v)]
    return found


def tree_get(tree: Any, key: Any, default: Optional[Any] = None,
             filtering: Optional[Callable[[KeyPath, Any], bool]] = None) -> Any:
    """The unique value named ``key`` in ``tree`` (``default`` if there is none).

    Raises:
        KeyError: if several entries match (use ``filtering`` to disambiguate).
    """
    found = tree_get_all_with_path(tree, key, filtering=filtering)
    if len(found) > 1:
        raise KeyError(f'tree_get: found {len(found)} values for {key!r} (at '
                       f'{[str(p) for p, _ in found]}); '
                       'pass `filtering` to select one.')
    return found[0][1] if found else default


def tree_set(tree: Any, filtering: Optional[Callable[[KeyPath, Any], bool]] = None, /,
             **kwargs: Any) -> Any:
    """Returns ``tree`` with every entry named like a keyword replaced by its value.

    Example: ``tree_set(state, learning_rate=0.1)``. A NamedTuple whose class
    name is a keyword is replaced as a whole.

    Raises:
        KeyError: if some keyword matches nothing (after ``filtering``).
    """
    for key in kwargs:
        if not tree_get_all_with_path(tree, key, filtering):
            raise KeyError(f'tree_set: no entry named {key!r} found'
                           + (' that passes `filtering`.' if filtering else '.'))

    def keep(path, value):
        return filtering is None or filtering(path, value)

    def rebuild(path, node):
        if _is_named_tuple(node):
            if type(node).__name__ in kwargs and keep(path, node):
                return kwargs[type(node).__name__]
            new = {}
            for (cp, c), f in zip(_children(path, node), node._fields):
                new[f] = kwargs[f] if f in kwargs and keep(cp, c) else rebuild(cp, c)
            return node._replace(**new)
        if isinstance(node, dict):
            return {k: kwargs[k] if k in kwargs and keep(cp, c) else rebuild(cp, c)
                    for (cp, c), k in zip(_children(path, node), sorted(node, key=str))}
        if isinstance(node, (list, tuple)):
            rebuilt = [rebuild(cp, c) for cp, c in _children(path, node)]
            return type(node)(rebuilt)
        return node

    return rebuild((), tree)


class _ParamsPlaceholder:
    """A pytree node without children, standing for "the params" in a state."""


tree_util.register_pytree_node(_ParamsPlaceholder, lambda x: ((), None),
                               lambda aux, children: _ParamsPlaceholder())


@runtime_checkable
class Initable(Protocol):
    """Anything with an ``init(params)`` method (a GradientTransformation)."""

    def init(self, params: Any) -> Any:
        ...


def tree_map_params(initable: Any, f: Callable[..., Any], state: Any, /, *rest: Any,
                    transform_non_params: Optional[Callable[..., Any]] = None,
                    is_leaf: Optional[Callable[[Any], bool]] = None) -> Any:
    """Applies ``f`` to the parts of an optimizer state shaped like the params.

    The positions are found by calling ``initable.init`` (or ``initable``) on a
    placeholder: wherever the placeholder reappears in the resulting state,
    that subtree of ``state`` (e.g. Adam's ``mu`` and ``nu``) is mapped with
    ``f`` (leafwise, together with the trees in ``rest``); other entries are
    kept or mapped with ``transform_non_params``.

    Returns:
        A state with the same structure.
    """
    placeholder = _ParamsPlaceholder()
    init = initable.init if isinstance(initable, Initable) else initable
    template = init(placeholder)

    def map_params(maybe_placeholder, value):
        if isinstance(maybe_placeholder, _ParamsPlaceholder):
            return tree_util.tree_map(f, value, *rest, is_leaf=is_leaf)
        if transform_non_params is not None:
            return transform_non_params(value)
        return value

    return tree_util.tree_map(map_params, template, state,
                              is_leaf=lambda v: isinstance(v, _ParamsPlaceholder))

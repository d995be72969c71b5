"""Flattening nested mappings to ``{path tuple: leaf}`` and back (mirrors ``flax.nnx.traversals``).

Works on any ``Mapping`` (States included), not only dicts; the empty-node
marker is the one of ``fluxion.flax.traverse_util``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Callable

from ..traverse_util import empty_node as empty_node

IsLeafCallable = Callable[[tuple, Mapping], bool]


def _walk(xs: Any, prefix: tuple, is_leaf: IsLeafCallable | None, out: list, keep_empty_nodes: bool) -> None:
    if not isinstance(xs, Mapping) or (is_leaf is not None and is_leaf(prefix, xs)):
        out.append((prefix, xs))
        return
    if not xs:
        if keep_empty_nodes and prefix:
            out.append((prefix, empty_node))
        return
    for key, value in xs.items():
        _walk(value, prefix + (key,), is_leaf, out, keep_empty_nodes)


def _check_mapping(xs: Any) -> None:
    if not isinstance(xs, Mapping):
        raise TypeError(f'expected Mapping; got {type(xs).__qualname__}')


def flatten_mapping(xs: Mapping, /, *, keep_empty_nodes: bool = False, is_leaf: IsLeafCallable | None = None,
                    sep: str | None = None) -> dict:
    """``{path: leaf}`` of a nested mapping, in iteration order (paths joined by ``sep`` if given).

    Empty sub-mappings are dropped, or kept as ``empty_node`` with
    ``keep_empty_nodes``; ``is_leaf(path, mapping)`` stops the descent.

    Raises:
      TypeError: ``xs`` is not a Mapping (Flax asserts instead).
    """
    _check_mapping(xs)
    out: list = []
    _walk(xs, (), is_leaf, out, keep_empty_nodes)
    return {(path if sep is None else sep.join(path)): value for path, value in out}


def flatten_to_sequence(xs: Mapping, /, *, is_leaf: IsLeafCallable | None = None) -> list[tuple[tuple, Any]]:
    """``[(path, leaf), ...]`` of a nested mapping, in iteration order (empty sub-mappings dropped).

    Raises:
      TypeError: ``xs`` is not a Mapping.
    """
    _check_mapping(xs)
    out: list = []
    _walk(xs, (), is_leaf, out, False)
    return out


def unflatten_mapping(xs: Any, /, *, sep: str | None = None) -> dict:
    """The nested dict of a ``{path: leaf}`` mapping or ``(path, leaf)`` sequence (``empty_node`` becomes ``{}``;
    with ``sep``, string paths are split on it).

    Raises:
      TypeError: ``xs`` is neither a Mapping nor an iterable of pairs.
    """
    if isinstance(xs, Mapping):
        xs = xs.items()
    if not isinstance(xs, Iterable):
        raise TypeError(f'expected Mapping or Iterable; got {type(xs).__qualname__}')
    result: dict = {}
    for path, value in xs:
        if sep is not None:
            path = path.split(sep)
        cursor = result
        for key in path[:-1]:
            cursor = cursor.setdefault(key, {})
        cursor[path[-1]] = {} if value is empty_node else value
    return result

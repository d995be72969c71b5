"""Filters: predicates over ``(path, value)`` that select parts of a module's state (mirrors ``flax.nnx.filterlib``).

A filter is any of: a Variable type (``nnx.Param``; matches instances of it),
a string (matches a variable whose ``tag`` equals it, e.g. an RNG stream name), ``...`` or ``True``
(everything), ``None`` or ``False`` (nothing), a callable ``(path, value) -> bool``,
a list/tuple (any of them), or one of the combinators below.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

Predicate = Callable[[tuple, Any], bool]
Filter = Any


def to_predicate(the_filter: Filter) -> Predicate:
    """Turns any filter spelling into a ``(path, value) -> bool`` predicate.

    Raises:
      TypeError: ``the_filter`` is none of the accepted spellings.
    """
    if isinstance(the_filter, str):
        return WithTag(the_filter)
    if isinstance(the_filter, type):
        return OfType(the_filter)
    if the_filter is Ellipsis or the_filter is True:
        return Everything()
    if the_filter is None or the_filter is False:
        return Nothing()
    if isinstance(the_filter, (list, tuple)):
        return Any_(*the_filter)
    if callable(the_filter):
        return the_filter
    raise TypeError(f'Invalid filter of type {type(the_filter).__name__}: {the_filter!r}')


def filters_to_predicates(filters: tuple) -> tuple:
    """Predicates for a sequence of filters; ``...`` may appear only last (it would shadow the rest)."""
    for i, f in enumerate(filters):
        if f is Ellipsis and i != len(filters) - 1:
            raise ValueError('`...` may only be the last filter')
    return tuple(to_predicate(f) for f in filters)


def _has_tag(x: Any) -> bool:
    from .variables import Variable
    if isinstance(x, Variable):
        return 'tag' in x._var_metadata
    # Other tagged objects (an RngStream carries its stream name as ``tag``), as Flax's WithTag accepts.
    return isinstance(getattr(x, 'tag', None), str)


@dataclasses.dataclass(frozen=True)
class WithTag:
    """Matches values whose ``tag`` attribute equals ``tag`` (RNG variables carry their stream name)."""
    tag: str

    def __call__(self, path: tuple, x: Any) -> bool:
        return _has_tag(x) and x.tag == self.tag


@dataclasses.dataclass(frozen=True)
class PathContains:
    """Matches values whose path contains ``key`` (``exact=False`` also matches substrings of str keys)."""
    key: Any
    exact: bool = True

    def __call__(self, path: tuple, x: Any) -> bool:
        if self.exact:
            return self.key in path
        return any(str(self.key) in str(p) for p in path)


@dataclasses.dataclass(frozen=True)
class OfType:
    """Matches instances of ``type`` (and, as in Flax, objects whose ``.type`` is a subclass of it)."""
    type: type

    def __call__(self, path: tuple, x: Any) -> bool:
        t = getattr(x, 'type', None)
        return isinstance(x, self.type) or (isinstance(t, type) and issubclass(t, self.type))

    def __repr__(self) -> str:
        return f'OfType({self.type.__name__})'


class Any_:
    """Matches when any of the given filters matches."""

    def __init__(self, *filters: Filter):
        self.predicates = tuple(to_predicate(f) for f in filters)

    def __call__(self, path: tuple, x: Any) -> bool:
        return any(p(path, x) for p in self.predicates)

    def __repr__(self) -> str:
        return f'Any({", ".join(map(repr, self.predicates))})'

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Any_) and self.predicates == other.predicates

    def __hash__(self) -> int:
        return hash(self.predicates)


class All:
    """Matches when all of the given filters match."""

    def __init__(self, *filters: Filter):
        self.predicates = tuple(to_predicate(f) for f in filters)

    def __call__(self, path: tuple, x: Any) -> bool:
        return all(p(path, x) for p in self.predicates)

    def __repr__(self) -> str:
        return f'All({", ".join(map(repr, self.predicates))})'

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, All) and self.predicates == other.predicates

    def __hash__(self) -> int:
        return hash(self.predicates)


class Not:
    """Matches when the given filter does not."""

    def __init__(self, collection_filter: Filter, /):
        self.predicate = to_predicate(collection_filter)

    def __call__(self, path: tuple, x: Any) -> bool:
        return not self.predicate(path, x)

    def __repr__(self) -> str:
        return f'Not({self.predicate!r})'

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Not) and self.predicate == other.predicate

    def __hash__(self) -> int:
        return hash(self.predicate)


class Everything:
    """Matches every value (the filter ``...``)."""

    def __call__(self, path: tuple, x: Any) -> bool:
        return True

    def __repr__(self) -> str:
        return 'Everything()'

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Everything)

    def __hash__(self) -> int:
        return hash(Everything)


class Nothing:
    """Matches no value (the filter ``None``/``False``)."""

    def __call__(self, path: tuple, x: Any) -> bool:
        return False

    def __repr__(self) -> str:
        return 'Nothing()'

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Nothing)

    def __hash__(self) -> int:
        return hash(Nothing)

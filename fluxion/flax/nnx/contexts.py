"""Split, merge and update contexts: the bookkeeping that lets a transform return *the same* objects it was
given, updated (mirrors the context part of ``flax.nnx.graphlib``).

An update context (``nnx.update_context(tag)``) sees four calls, two outside
the transform and two inside::

    outside  (1) split_context(tag).split(node)   records outer object -> index
    inside   (2) merge_context(tag, inner=True)   records index -> inner object
    inside   (3) split_context(tag).split(...)    tags inner objects with their outer index
    outside  (4) merge_context(tag, inner=False)  reuses the outer objects, updated in place

so after (4) the outer objects hold the values *and* the structure (new
attributes, removed attributes, new references) the transform left.  Without a
tag, a split (merge) context shares its reference table between its calls, so
an object split in one call is a reference in the next (and merges back to one
object).

Difference from Flax 0.12: no static-cache fast path (``cached_partial``
caching of graph traversals).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from collections.abc import Hashable, Iterator
from typing import Any, Callable

from . import graph as graphlib
from .state import from_flat_state, split_state


@dataclasses.dataclass
class _GraphContext(threading.local):
    update_stacks: dict = dataclasses.field(default_factory=dict)
    split_stack: list = dataclasses.field(default_factory=list)
    merge_stack: list = dataclasses.field(default_factory=list)


_CONTEXT = _GraphContext()


@dataclasses.dataclass(eq=False)
class UpdateContext:
    """The tables of one ``update_context``: outer objects by index (from split (1)) and, between merge (2) and
    split (3), the inner objects' outer indices.  Equal to every other UpdateContext and hash 0, so it can sit
    in static (hashed) transform arguments."""

    tag: Hashable
    outer_ref_outer_index: graphlib.RefMap | None = None
    outer_index_outer_ref: dict | None = None
    outer_index_inner_ref: dict | None = None
    inner_ref_outer_index: graphlib.RefMap | None = None

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, UpdateContext)

    def flatten_end(self, ref_index: graphlib.RefMap) -> None:
        if self.outer_ref_outer_index is None:
            # Split (1): remember the outer objects.
            self.outer_ref_outer_index = ref_index
            self.outer_index_outer_ref = {index: obj for obj, index in ref_index.items()}
        else:
            # Split (3): the inner tables have served their purpose.
            self.outer_index_inner_ref = None
            self.inner_ref_outer_index = None

    def unflatten_end(self, index_ref: dict, inner_merge: bool) -> None:
        if inner_merge:
            # Merge (2): inner object -> the outer index it was built from.
            self.outer_index_inner_ref = index_ref
            refs = graphlib.RefMap()
            for index, obj in index_ref.items():
                refs.add(obj, index)
            self.inner_ref_outer_index = refs


class _UpdateContextManager:
    def __init__(self, tag: Hashable):
        self.tag = tag

    def __enter__(self) -> UpdateContext:
        ctx = UpdateContext(self.tag)
        _CONTEXT.update_stacks.setdefault(self.tag, []).append(ctx)
        return ctx

    def __exit__(self, *exc: Any) -> None:
        stack = _CONTEXT.update_stacks[self.tag]
        ctx = stack.pop()
        ctx.outer_ref_outer_index = ctx.outer_index_outer_ref = None
        ctx.outer_index_inner_ref = ctx.inner_ref_outer_index = None
        if not stack:
            del _CONTEXT.update_stacks[self.tag]

    def __call__(self, f: Callable) -> Callable:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return f(*args, **kwargs)
        return wrapper


def update_context(tag: Hashable) -> _UpdateContextManager:
    """Opens an :class:`UpdateContext` named ``tag`` (a context manager, or a decorator that opens one around
    each call); see the module docstring for the four split/merge calls it coordinates."""
    return _UpdateContextManager(tag)


def current_update_context(tag: Hashable) -> UpdateContext:
    """The innermost open :class:`UpdateContext` for ``tag``.

    Raises:
      ValueError: no update context with that tag is open.
    """
    stack = _CONTEXT.update_stacks.get(tag)
    if not stack:
        raise ValueError(f'No update context found for tag {tag!r}.')
    return stack[-1]


def _split_flat(flat: Any, filters: tuple) -> tuple:
    state = from_flat_state(flat)
    if not filters:
        return (state,)
    states = split_state(state, *filters)
    return states if isinstance(states, tuple) else (states,)


@dataclasses.dataclass
class SplitContext:
    """The object :func:`split_context` yields: ``ctx.split(node, *filters)`` and ``ctx.flatten(node)`` share
    one reference table for the whole context."""

    ctxtag: Hashable | None
    ref_index: graphlib.RefMap
    is_inner: bool | None

    def _outer(self) -> Any:
        if self.ctxtag is None:
            return None
        return current_update_context(self.ctxtag).inner_ref_outer_index

    def split(self, node: Any, *filters: Any) -> tuple:
        """``(graphdef, state, ...)`` as :func:`nnx.split`, within this context's reference table."""
        gdef, flat = graphlib.flatten(node, ref_index=self.ref_index, ref_outer_index=self._outer())
        return (gdef, *_split_flat(flat, filters))

    def flatten(self, node: Any, *filters: Any, with_paths: bool = True) -> tuple:
        """``(graphdef, flat_state, ...)`` (or ``(graphdef, leaves)`` with ``with_paths=False``).

        Raises:
          ValueError: filters with ``with_paths=False``.
        """
        if not with_paths and filters:
            raise ValueError('Cannot use filters with with_paths=False')
        gdef, flat = graphlib.flatten(node, ref_index=self.ref_index, ref_outer_index=self._outer())
        if not with_paths:
            return gdef, list(flat.leaves)
        if not filters:
            return gdef, flat
        return (gdef, *(s.flat_state() for s in _split_flat(flat, filters)))


@contextlib.contextmanager
def split_context(ctxtag: Hashable | None = None) -> Iterator[SplitContext]:
    """Yields a :class:`SplitContext`; with ``ctxtag``, takes part in that tag's update context.

    Raises:
      ValueError: ``ctxtag`` names no open update context.
    """
    ctx = current_update_context(ctxtag) if ctxtag is not None else None
    is_inner = ctx.outer_ref_outer_index is not None if ctx is not None else None
    split_ctx = SplitContext(ctxtag, graphlib.RefMap(), is_inner)
    _CONTEXT.split_stack.append(split_ctx)
    try:
        yield split_ctx
    finally:
        _CONTEXT.split_stack.pop()
        if ctxtag is not None:
            current_update_context(ctxtag).flatten_end(split_ctx.ref_index)


@dataclasses.dataclass
class MergeContext:
    """The object :func:`merge_context` yields: ``ctx.merge(graphdef, state, ...)`` and ``ctx.unflatten`` share
    one index table for the whole context (the Variables of the states are copied)."""

    ctxtag: Hashable | None
    index_ref: dict
    is_inner: bool | None

    def _outer(self) -> Any:
        if self.ctxtag is None or self.is_inner:
            return None
        return current_update_context(self.ctxtag).outer_index_outer_ref

    def merge(self, graphdef: graphlib.GraphDef, state: Any, /, *states: Any) -> Any:
        """The node of ``graphdef`` and the states (as :func:`nnx.merge`, within this context)."""
        flat = graphlib._flat_of((state, *states))
        return graphlib._build(graphdef.root, (), flat, self.index_ref, self._outer(), copy=True)

    def unflatten(self, graphdef: graphlib.GraphDef, flat_state: Any, /, *flat_states: Any) -> Any:
        """The node of ``graphdef`` and a FlatState (or ``(path, leaf)`` list), within this context."""
        flat: dict = {}
        for fs in (flat_state, *flat_states):
            flat.update(fs)
        return graphlib._build(graphdef.root, (), flat, self.index_ref, self._outer(), copy=True)


@contextlib.contextmanager
def merge_context(ctxtag: Hashable | None = None, inner: bool | None = None) -> Iterator[MergeContext]:
    """Yields a :class:`MergeContext`; with ``ctxtag``, takes part in that tag's update context as the inner
    (``inner=True``, inside the transform) or the final outer merge.

    Raises:
      ValueError: ``ctxtag`` without ``inner``, or naming no open update context.
    """
    if ctxtag is not None:
        if inner is None:
            raise ValueError('inner_merge must be specified when using ctxtag')
        current_update_context(ctxtag)
    merge_ctx = MergeContext(ctxtag, {}, inner)
    _CONTEXT.merge_stack.append(merge_ctx)
    try:
        yield merge_ctx
    finally:
        _CONTEXT.merge_stack.pop()
        if ctxtag is not None:
            current_update_context(ctxtag).unflatten_end(merge_ctx.index_ref, inner)

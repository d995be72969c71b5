"""State: the nested, dict-like container of a module's variables (mirrors ``flax.nnx.statelib``).

A :class:`State` maps attribute names (and list indices) to either a nested
State or a leaf (normally a :class:`~fluxion.flax.nnx.Variable`).  It is a
fluxion pytree with keys in sorted order, so it flows through
``fluxion.jit``/``grad``/``vmap``.  :class:`FlatState` is the flat view: a
sorted sequence of ``(path_tuple, leaf)`` pairs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from fluxion import tree_util

from . import filters as filterlib
from .variables import Variable


def _sort_key(k: Any) -> tuple:
    # Ints (list indices) and strs may share a level; order ints first, each numerically/lexically.
    return (0, k, '') if isinstance(k, int) else (1, 0, str(k))


class State(MutableMapping):
    """A nested mapping from keys to sub-States or leaves; ``state.key`` reads like ``state['key']``."""

    def __init__(self, mapping: Mapping | Iterator | None = None, /):
        data: dict = {}
        if mapping is not None:
            items = mapping.items() if isinstance(mapping, Mapping) else mapping
            for k, v in items:
                data[k] = State(v) if isinstance(v, Mapping) and not isinstance(v, State) else v
        object.__setattr__(self, '_mapping', data)

    # -- mapping protocol -------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        return self._mapping[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, Mapping) and not isinstance(value, State):
            value = State(value)
        self._mapping[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._mapping[key]

    def __iter__(self) -> Iterator:
        return iter(self._mapping)

    def __len__(self) -> int:
        return len(self._mapping)

    def __getattr__(self, key: str) -> Any:
        if key.startswith('__'):
            raise AttributeError(key)
        try:
            return self._mapping[key]
        except KeyError:
            raise AttributeError(f"No attribute '{key}' in State") from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __repr__(self) -> str:
        return f'State({self.to_dict_repr()!r})'

    def to_dict_repr(self) -> dict:
        """Nested plain dicts (for display)."""
        return {k: (v.to_dict_repr() if isinstance(v, State) else v) for k, v in self._mapping.items()}

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, State) and self._mapping == other._mapping

    # -- flat views -------------------------------------------------------
    def flat_state(self) -> FlatState:
        """The sorted ``(path, leaf)`` pairs of this state."""
        return to_flat_state(self)

    @classmethod
    def from_flat_path(cls, flat: Any, /) -> State:
        """Rebuilds a nested State from ``(path, leaf)`` pairs or a ``{path: leaf}`` dict."""
        return from_flat_state(flat)

    def to_pure_dict(self, extract_fn: Any = None) -> dict:
        """A plain nested dict with each Variable replaced by its value (or ``extract_fn(path, var)``)."""
        return to_pure_dict(self, extract_fn)

    def replace_by_pure_dict(self, pure_dict: dict, replace_fn: Any = None) -> None:
        """Sets, in place, the values of the variables at the paths of ``pure_dict``."""
        replace_by_pure_dict(self, pure_dict, replace_fn)

    def split(self, first: Any, /, *filters: Any) -> Any:
        """Partitions the leaves by filters (each leaf goes to the first that matches); one State per filter."""
        return split_state(self, first, *filters)

    def filter(self, first: Any, /, *filters: Any) -> Any:
        """Like :meth:`split` but leaves matching no filter are dropped instead of raising."""
        return filter_state(self, first, *filters)

    @staticmethod
    def merge(state: State, /, *states: State) -> State:
        """The union of states (later ones win on equal paths)."""
        return merge_state(state, *states)

    def map(self, f: Any) -> State:
        """A new State with ``f(path, leaf)`` at every leaf."""
        return map_state(f, self)


def _flatten_state(s: State) -> tuple:
    keys = tuple(sorted(s._mapping, key=_sort_key))
    return tuple(s._mapping[k] for k in keys), keys


def _flatten_state_with_keys(s: State) -> tuple:
    keys = tuple(sorted(s._mapping, key=_sort_key))
    return tuple((tree_util.DictKey(k), s._mapping[k]) for k in keys), keys


def _unflatten_state(keys: tuple, children: Any) -> State:
    new = State()
    new._mapping.update(zip(keys, children))
    return new


tree_util.register_pytree_with_keys(State, _flatten_state_with_keys, _unflatten_state, _flatten_state)


class FlatState(list):
    """A sorted list of ``(path, leaf)`` pairs with ``paths``/``leaves`` views."""

    @property
    def paths(self) -> tuple:
        return tuple(p for p, _ in self)

    @property
    def leaves(self) -> list:
        return [v for _, v in self]

    def to_nested_state(self) -> State:
        """The nested :class:`State` of these pairs."""
        return from_flat_state(self)

    def __repr__(self) -> str:
        return f'FlatState({list.__repr__(self)})'


def _iter_flat(state: Any, prefix: tuple) -> Iterator[tuple]:
    if isinstance(state, (State, dict)):
        for k in sorted(state.keys(), key=_sort_key):
            yield from _iter_flat(state[k], prefix + (k,))
    else:
        yield prefix, state


def to_flat_state(state: State | Mapping, /) -> FlatState:
    """The sorted ``(path, leaf)`` pairs of a (nested) state (a State, dict, or other mapping such as a
    ``GraphState`` at the top)."""
    if isinstance(state, Mapping) and not isinstance(state, (State, dict)):
        state = {k: state[k] for k in state}
    return FlatState(_iter_flat(state, ()))


def from_flat_state(flat: Any, /) -> State:
    """Rebuilds a nested :class:`State` from ``(path, leaf)`` pairs or a ``{path: leaf}`` mapping."""
    items = flat.items() if isinstance(flat, Mapping) else flat
    root = State()
    for path, leaf in items:
        node = root
        for k in path[:-1]:
            if k not in node._mapping:
                node._mapping[k] = State()
            node = node._mapping[k]
        if path:
            node._mapping[path[-1]] = leaf
    return root


def to_pure_dict(state: State, /, extract_fn: Any = None) -> dict:
    """A plain nested dict of the state's values (Variables unwrapped)."""
    out: dict = {}
    for path, leaf in to_flat_state(state):
        node = out
        for k in path[:-1]:
            node = node.setdefault(k, {})
        if extract_fn is not None:
            node[path[-1]] = extract_fn(path, leaf)
        else:
            node[path[-1]] = leaf.get_value() if isinstance(leaf, Variable) else leaf
    return out


def replace_by_pure_dict(state: State, pure_dict: dict, /, replace_fn: Any = None) -> None:
    """Writes the values of ``pure_dict`` into the variables of ``state`` at the same paths.

    Raises:
      ValueError: a path of ``pure_dict`` is not in ``state``.
    """
    flat = dict(to_flat_state(state))
    for path, value in to_flat_state(pure_dict):
        if path not in flat:
            # Checkpoints may carry int keys as strings; try that spelling before failing.
            alt = tuple(int(k) if isinstance(k, str) and k.isdigit() else k for k in path)
            if alt not in flat:
                raise ValueError(f'key in pure_dict not available in state: {path}')
            path = alt
        leaf = flat[path]
        if replace_fn is not None:
            new = replace_fn(path, leaf, value)
        elif isinstance(leaf, Variable):
            leaf.set_value(value)
            continue
        else:
            new = value
        _set_path(state, path, new)


def _set_path(state: State, path: tuple, value: Any) -> None:
    node = state
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def restore_int_paths(pure_dict: dict, /) -> dict:
    """Converts digit-string keys (as JSON/orbax produce) back to ints, recursively."""
    out = {}
    for k, v in pure_dict.items():
        k = int(k) if isinstance(k, str) and k.isdigit() else k
        out[k] = restore_int_paths(v) if isinstance(v, dict) else v
    return out


def split_state(state: State, first: Any, /, *filters: Any) -> Any:
    """Partitions a state by filters; returns one State, or a tuple of States for several filters.

    Raises:
      ValueError: a leaf matches none of the filters (end with ``...`` to catch the rest).
    """
    all_filters = (first, *filters)
    predicates = filterlib.filters_to_predicates(all_filters)
    buckets: list[list] = [[] for _ in predicates]
    for path, leaf in to_flat_state(state):
        for i, pred in enumerate(predicates):
            if pred(path, leaf):
                buckets[i].append((path, leaf))
                break
        else:
            raise ValueError(f'Non-exhaustive filters, got a leaf at path {path!r} matching none of '
                             f'{all_filters!r}; add `...` as the last filter to catch the rest')
    states = tuple(from_flat_state(b) for b in buckets)
    return states[0] if len(states) == 1 else states


def filter_state(state: State, first: Any, /, *filters: Any) -> Any:
    """Like :func:`split_state` but leaves matching no filter are dropped."""
    all_filters = (first, *filters)
    predicates = filterlib.filters_to_predicates(all_filters)
    buckets: list[list] = [[] for _ in predicates]
    for path, leaf in to_flat_state(state):
        for i, pred in enumerate(predicates):
            if pred(path, leaf):
                buckets[i].append((path, leaf))
                break
    states = tuple(from_flat_state(b) for b in buckets)
    return states[0] if len(states) == 1 else states


def merge_state(state: State, /, *states: State) -> State:
    """The union of the given states' leaves (later states win on equal paths)."""
    flat: dict = {}
    for s in (state, *states):
        flat.update(to_flat_state(s))
    return from_flat_state(sorted(flat.items(), key=lambda kv: tuple(map(_sort_key, kv[0]))))


def map_state(f: Any, state: State) -> State:
    """A new State with ``f(path, leaf)`` at every leaf."""
    return from_flat_state([(p, f(p, v)) for p, v in to_flat_state(state)])

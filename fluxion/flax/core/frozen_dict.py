"""An immutable dict that is a pytree (mirrors ``flax.core.frozen_dict``).

Flax 0.12 returns plain dicts from ``init``; ``FrozenDict`` remains for code
that still freezes its variables. It flattens like a dict (children in sorted
key order), so ``tree_util`` functions treat both the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, KeysView, Mapping, ValuesView
from typing import Any, TypeVar

from fluxion import tree_util

K = TypeVar('K')
V = TypeVar('V')


class FrozenKeysView(KeysView):
    """``FrozenDict.keys()``: a keys view printed as ``frozen_dict_keys([...])`` (Flax's text)."""

    def __repr__(self) -> str:
        return f'frozen_dict_keys({list(self)})'


class FrozenValuesView(ValuesView):
    """``FrozenDict.values()``: a values view printed as ``frozen_dict_values([...])``."""

    def __repr__(self) -> str:
        return f'frozen_dict_values({list(self)})'


class FrozenDict(Mapping):
    """An immutable mapping; nested dicts are frozen as well.

    Args:
        *args, **kwargs: anything ``dict(...)`` accepts.
    """

    __slots__ = ('_dict', '_hash')

    def __init__(self, *args: Any, **kwargs: Any):
        self._dict = {k: _freeze_value(v) for k, v in dict(*args, **kwargs).items()}
        self._hash = None

    def __getitem__(self, key):
        value = self._dict[key]
        return value

    def __setitem__(self, key, value):
        raise ValueError('FrozenDict is immutable; use .copy({key: value}) to get an updated copy.')

    def __contains__(self, key) -> bool:
        return key in self._dict

    def __iter__(self) -> Iterator:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._dict)

    def __repr__(self) -> str:
        return self.pretty_repr()

    def keys(self) -> FrozenKeysView:
        return FrozenKeysView(self)

    def values(self) -> FrozenValuesView:
        return FrozenValuesView(self)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple((k, self._dict[k]) for k in sorted(self._dict, key=str)))
        return self._hash

    def __eq__(self, other) -> bool:
        if isinstance(other, FrozenDict):
            return self._dict == other._dict
        return NotImplemented

    def __reduce__(self):
        return FrozenDict, (self.unfreeze(),)

    def copy(self, add_or_replace: Mapping | None = None) -> 'FrozenDict':
        """Returns a new FrozenDict with ``add_or_replace`` merged in."""
        return type(self)({**self._dict, **(add_or_replace or {})})

    def pop(self, key) -> tuple['FrozenDict', Any]:
        """Returns ``(copy without key, value of key)``; raises KeyError if absent."""
        value = self._dict[key]
        rest = {k: v for k, v in self._dict.items() if k != key}
        return type(self)(rest), value

    def unfreeze(self) -> dict:
        """Returns a mutable deep copy made of plain dicts."""
        return unfreeze(self)

    def pretty_repr(self, num_spaces: int = 4) -> str:
        """``FrozenDict({...})`` with one ``key: value,`` line per entry, nested dicts indented.

        Keys are printed with ``str`` (unquoted) and values with ``repr``, as
        Flax does; entries keep their insertion order.
        """
        # Nested FrozenDicts are plain dicts inside a Flax FrozenDict, so they print as ``{...}``.
        return f'FrozenDict({_pretty_dict(unfreeze(self), num_spaces)})'


def _freeze_value(value: Any) -> Any:
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, dict):
        return FrozenDict(value)
    return value


def freeze(xs: Mapping) -> FrozenDict:
    """Returns a (nested) FrozenDict with the contents of ``xs``."""
    return FrozenDict(xs)


def unfreeze(x: Any) -> Any:
    """Turns (nested) FrozenDicts and dicts into nested plain dicts.

    Leaves are not copied; non-mapping values are returned unchanged.
    """
    if isinstance(x, (FrozenDict, dict)):
        return {k: unfreeze(v) for k, v in x.items()}
    return x


def copy(x: Mapping, add_or_replace: Mapping | None = None) -> Mapping:
    """Returns a copy of ``x`` (dict or FrozenDict) with entries replaced."""
    if isinstance(x, FrozenDict):
        return x.copy(add_or_replace)
    if isinstance(x, dict):
        out = dict(x)
        out.update(add_or_replace or {})
        return out
    raise TypeError(f'copy expects a dict or FrozenDict, got {type(x).__name__}.')


def pop(x: Mapping, key) -> tuple[Mapping, Any]:
    """Returns ``(x without key, x[key])`` for a dict or FrozenDict."""
    if isinstance(x, FrozenDict):
        return x.pop(key)
    if isinstance(x, dict):
        rest = dict(x)
        value = rest.pop(key)
        return rest, value
    raise TypeError(f'pop expects a dict or FrozenDict, got {type(x).__name__}.')


def _indent(text: str, num_spaces: int) -> str:
    pad = ' ' * num_spaces
    return ''.join(pad + line for line in text.splitlines(keepends=True))


def _pretty_dict(x: Any, num_spaces: int) -> str:
    # Only plain dicts are expanded (a FrozenDict inside a dict prints as its repr), as in Flax.
    if not isinstance(x, dict):
        return repr(x)
    rep = ''.join(f'{key}: {_pretty_dict(value, num_spaces)},\n' for key, value in x.items())
    return '{\n' + _indent(rep, num_spaces) + '}' if rep else '{}'


def pretty_repr(x: Any, num_spaces: int = 4) -> str:
    """Flax's indented text of a (Frozen)dict: ``{\n    key: value,\n}``; other values give ``repr(x)``.

    Keys print with ``str``, values with ``repr`` (multi-line values are
    indented with their entry).
    """
    if isinstance(x, FrozenDict):
        return x.pretty_repr(num_spaces)
    return _pretty_dict(x, num_spaces)


def _flatten_with_keys(fd: FrozenDict):
    keys = tuple(sorted(fd._dict))
    return tuple((tree_util.DictKey(k), fd._dict[k]) for k in keys), keys


def _flatten(fd: FrozenDict):
    keys = tuple(sorted(fd._dict))
    return tuple(fd._dict[k] for k in keys), keys


def _unflatten(keys, children):
    out = FrozenDict.__new__(FrozenDict)
    out._dict = dict(zip(keys, children))
    out._hash = None
    return out


tree_util.register_pytree_with_keys(FrozenDict, _flatten_with_keys, _unflatten, _flatten)

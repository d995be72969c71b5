"""Random-number streams stored in the module graph (mirrors ``flax.nnx.rnglib``).

:class:`Rngs` holds named :class:`RngStream` objects.  Each stream keeps a key
(:class:`RngKey`) and a counter (:class:`RngCount`); calling the stream returns
``fluxion.random.fold_in(key, count)`` and increments the counter, so
``Rngs(0).params()`` gives the same key as Flax for the same seed.  A missing
stream name falls back to the ``default`` stream.  Because the key and counter
are Variables, they are state: ``nnx.jit`` carries counter updates out of traced code.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion import random

from . import filters as filterlib
from .graph import Object
from .variables import Variable


class RngState(Variable):
    """Base type of the RNG variables (they carry the stream name as their ``tag``)."""


class RngCount(RngState):
    """The number of keys drawn from a stream so far (uint32, one per key in a split stream)."""


class RngKey(RngState):
    """The base key of a stream (a typed key array)."""


def _as_key(key: Any, argname: str) -> Any:
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return random.key(int(key))
    dtype = getattr(key, 'dtype', None)
    if dtype is not None and str(dtype) == 'uint32':
        return random.wrap_key_data(key)
    if dtype is not None and str(dtype).startswith('key<'):
        return key
    raise ValueError(f'Invalid rng value for {argname}: {key!r}, expected an int seed, a typed key '
                     f'array or uint32 raw key data')


class RngStream(Object):
    """One named random stream: ``stream()`` returns a fresh key; ``stream.key``/``stream.count`` are its state."""

    def __init__(self, key: Any, *, tag: str):
        key = _as_key(key, tag)
        self.tag = tag
        self.key = RngKey(key, tag=tag)
        self.count = RngCount(jnp.zeros(key.shape, dtype=jnp.uint32), tag=tag)

    def __call__(self) -> Any:
        key = random.fold_in(self.key[...], self.count[...])
        self.count[...] = self.count[...] + 1
        return key

    def split(self, k: int | tuple[int, ...]) -> RngStream:
        """A new stream whose key is ``split(self(), k)`` (shape ``k``), for vmapped/scanned code."""
        return type(self)(random.split(self(), k), tag=self.tag)

    def fork(self, *, split: Any = None) -> RngStream:
        """A new stream seeded by one key from this stream (split to shape ``split`` if given)."""
        key = self()
        if split is not None:
            key = random.split(key, split)
        return type(self)(key, tag=self.tag)

    def broadcast(self, k: int | tuple[int, ...]) -> RngStream:
        """A new stream whose key is one key from this stream repeated to shape ``k``."""
        key = self()
        shape = (k,) if isinstance(k, int) else tuple(k)
        # Broadcast the raw key data (fluxion's broadcast_to does not take typed key arrays).
        data = random.key_data(key)
        return type(self)(random.wrap_key_data(jnp.broadcast_to(data, shape + data.shape)), tag=self.tag)

    def __repr__(self) -> str:
        return f'RngStream(tag={self.tag!r}, key={self.key!r}, count={self.count!r})'


# Samplers bound to a stream: ``rngs.normal((2,))`` draws with ``rngs.default()``.
_SAMPLERS = ('bernoulli', 'bits', 'categorical', 'cauchy', 'choice', 'exponential', 'gumbel', 'laplace',
             'logistic', 'normal', 'permutation', 'randint', 'truncated_normal', 'uniform')


def _bind_sampler(name: str) -> Any:
    sampler = getattr(random, name)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        stream = self.default if isinstance(self, Rngs) else self
        return sampler(stream(), *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f'``fluxion.random.{name}`` with the next key of this stream.'
    return method


for _name in _SAMPLERS:
    setattr(RngStream, _name, _bind_sampler(_name))


class Rngs(Object):
    """A set of named :class:`RngStream` objects: ``Rngs(0)``, ``Rngs(params=0, dropout=1)``.

    ``rngs.name()`` (or ``rngs['name']()``) draws the next key of that stream,
    falling back to ``default``; ``rngs()`` draws from ``default``.

    Raises:
      AttributeError/KeyError: the stream is missing and there is no ``default``.
    """

    def __init__(self, default: Any = None, **rngs: Any):
        if default is not None:
            if isinstance(default, Mapping):
                rngs = {**default, **rngs}
            else:
                rngs['default'] = default
        for tag, key in rngs.items():
            if isinstance(key, RngStream):
                key = key.key.get_value()
            object.__setattr__(self, tag, RngStream(key, tag=tag))

    def _get_stream(self, name: str, error: type) -> RngStream:
        streams = vars(self)
        if name in streams:
            return streams[name]
        if 'default' in streams:
            return streams['default']
        raise error(f"No RngStream named '{name}' found in Rngs.")

    def __getitem__(self, name: str) -> RngStream:
        return self._get_stream(name, KeyError)

    def __getattr__(self, name: str) -> RngStream:
        if name.startswith('__'):
            raise AttributeError(name)
        return self._get_stream(name, AttributeError)

    def __call__(self) -> Any:
        return self.default()

    def __iter__(self):
        return (name for name, s in vars(self).items() if isinstance(s, RngStream))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: Any) -> bool:
        return name in vars(self)

    def items(self):
        """The ``(name, RngStream)`` pairs."""
        return ((name, s) for name, s in vars(self).items() if isinstance(s, RngStream))

    def _map_streams(self, spec: Any, method: str) -> Rngs:
        if spec is None or isinstance(spec, (int, tuple)):
            spec = {...: spec}
        predicates = [(filterlib.to_predicate(f), v) for f, v in spec.items()]
        new: dict = {}
        for name, stream in self.items():
            for pred, arg in predicates:
                if pred((), stream.key):
                    new[name] = stream if arg is None else getattr(stream, method)(arg)
                    break
            else:
                new[name] = stream
        return Rngs(**new)

    def split(self, k: Any) -> Rngs:
        """New Rngs whose selected streams are split to shape ``k`` (an int/tuple, or ``{filter: k}``)."""
        return self._map_streams(k, 'split')

    def broadcast(self, k: Any) -> Rngs:
        """New Rngs whose selected streams hold one key broadcast to shape ``k``."""
        return self._map_streams(k, 'broadcast')

    def fork(self, /, *, split: Any = None) -> Rngs:
        """New Rngs with one fresh key drawn from every stream (split per ``split`` if given)."""
        spec = {} if split is None else ({...: split} if isinstance(split, (int, tuple)) else split)
        predicates = [(filterlib.to_predicate(f), v) for f, v in spec.items()]
        new = {}
        for name, stream in self.items():
            for pred, arg in predicates:
                if pred((), stream.key):
                    new[name] = stream.fork(split=arg)
                    break
            else:
                new[name] = stream.fork()
        return Rngs(**new)

    def __repr__(self) -> str:
        return f'Rngs({", ".join(f"{n}={s!r}" for n, s in self.items())})'


for _name in _SAMPLERS:
    setattr(Rngs, _name, _bind_sampler(_name))


def _streams(node: Any) -> list[tuple[tuple, RngStream]]:
    from .graph import iter_graph
    return [(p, v) for p, v in iter_graph(node) if isinstance(v, RngStream)]


def _selected(pred: Any, path: tuple, stream: RngStream) -> bool:
    return pred((*path, 'key'), stream.key) and pred((*path, 'count'), stream.count)


class SplitBackups(list):
    """The streams' previous keys and counters; ``restore_rngs`` (or leaving a ``with`` block) puts them back."""

    def __enter__(self) -> SplitBackups:
        return self

    def __exit__(self, *exc: Any) -> None:
        restore_rngs(self)


def reseed(node: Any, /, *, policy: str = 'scalars_only', **stream_keys: Any) -> None:
    """Resets the named streams found anywhere in ``node``: new key from the seed, counter to zero.

    With ``policy='match_shape'`` a scalar seed for a split stream is split to the stream's key shape.

    Raises:
      ValueError: an unknown ``policy``.
    """
    if policy not in ('scalars_only', 'match_shape'):
        raise ValueError(f"policy must be 'scalars_only' or 'match_shape', got {policy!r}")
    for _, stream in _streams(node):
        if stream.tag in stream_keys:
            key = _as_key(stream_keys[stream.tag], stream.tag)
            if policy == 'match_shape' and stream.key.shape != key.shape:
                key = random.split(key, stream.key.shape)
            stream.key.set_value(key)
            stream.count.set_value(jnp.zeros(stream.key.shape, dtype=jnp.uint32))


def split_rngs(node: Any = None, /, *, splits: Any, only: Any = ..., squeeze: bool = False) -> Any:
    """Splits the keys of the streams in ``node`` (those matching ``only``) to shape ``splits``, in place.

    Each selected stream draws one key, splits it into ``splits`` keys and
    restarts its counter (with the split shape).  Returns :class:`SplitBackups`
    that :func:`restore_rngs` (or a ``with`` block) undoes.  Used as a
    decorator (``@nnx.split_rngs(splits=5)``), the streams in the function's
    arguments are split for the duration of the call: this is how a vmapped or
    scanned function gets one key per element.

    Raises:
      ValueError: ``squeeze=True`` with ``splits != 1``.
    """
    if node is None:
        def decorator(f: Any) -> Any:
            @functools.wraps(f)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                with split_rngs((args, kwargs), splits=splits, only=only, squeeze=squeeze):
                    return f(*args, **kwargs)
            return wrapper
        return decorator
    if squeeze and splits != 1:
        raise ValueError('squeeze=True is only supported for splits=1')
    pred = filterlib.to_predicate(only)
    backups = SplitBackups()
    for path, stream in _streams(node):
        if not _selected(pred, path, stream):
            continue
        key = stream()
        backups.append((stream, stream.key.get_value(), stream.count.get_value()))
        key = random.split(key, splits)
        if squeeze:
            key = key[0]
        stream.key.set_value(key)
        stream.count.set_value(jnp.zeros(key.shape, dtype=jnp.uint32))
    return backups


def restore_rngs(backups: Any, /) -> None:
    """Undoes :func:`split_rngs`/:func:`fork_rngs`: puts back each stream's key and counter."""
    for stream, key, count in backups:
        stream.key.set_value(key)
        stream.count.set_value(count)


def fork_rngs(node: Any, /, *, split: Any = None) -> Any:
    """Replaces each stream's key in ``node`` by a freshly drawn key (split per ``split``); returns a backup."""
    spec = {} if split is None else ({...: split} if isinstance(split, (int, tuple)) else split)
    predicates = [(filterlib.to_predicate(f), v) for f, v in spec.items()]
    backup = SplitBackups()
    for path, stream in _streams(node):
        arg = next((v for p, v in predicates if _selected(p, path, stream)), None)
        key = stream()
        backup.append((stream, stream.key.get_value(), stream.count.get_value()))
        if arg is not None:
            key = random.split(key, arg)
        stream.key.set_value(key)
        stream.count.set_value(jnp.zeros(key.shape, dtype=jnp.uint32))
    return backup

"""`PRNGSequence`: an iterator of random keys split from one key (Haiku semantics, same key bits).

Each `next(seq)` splits the internal key into `(new_internal_key, subkey)` with `random.split(key, 2)` and returns
the subkey; `reserve(n)` splits `n + 1` ways at once and queues the `n` subkeys. These are the rules of
`haiku.PRNGSequence` (blocks of `hk.config` `rng_reserve_size` keys, default 1), so the same seed yields the same keys as Haiku on JAX.
"""

from __future__ import annotations

import collections
from typing import Any, Iterator

import numpy as np

from fluxion import random

from .config import get_config

__all__ = ["PRNGSequence", "is_prng_key", "is_int_seed", "assert_is_prng_key"]


def _is_typed_key(x: Any) -> bool:
    # New-style keys (`random.key`) carry a dtype printed as `key<impl>`; raw keys are uint32 arrays.
    return str(getattr(x, "dtype", "")).startswith("key<")


def is_prng_key(x: Any) -> bool:
    """True if `x` is a single PRNG key: a raw `uint32[2]` key or a scalar typed key."""
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        return False
    if _is_typed_key(x):
        return tuple(x.shape) == ()
    return tuple(x.shape) == (2,) and np.dtype(x.dtype) == np.uint32


def assert_is_prng_key(key: Any) -> None:
    """Raises ValueError (Haiku's wording) unless `key` is a single PRNG key."""
    if not hasattr(key, "shape") or not hasattr(key, "dtype"):
        raise ValueError(f"The provided key is not a JAX PRNGKey but a {type(key)}:\n{key}")
    if not is_prng_key(key):
        expected = "()" if _is_typed_key(key) else "(2,)"
        exp_dtype = key.dtype if _is_typed_key(key) else "uint32"
        raise ValueError("Provided key did not have expected shape and/or dtype: "
                         f"expected=(shape={expected}, dtype={exp_dtype}), "
                         f"actual=(shape={tuple(key.shape)}, dtype={key.dtype})")


def is_int_seed(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (int, np.integer)):
        return True
    # A scalar int32 array is treated as a seed, as Haiku does.
    return hasattr(x, "shape") and tuple(x.shape) == () and str(getattr(x, "dtype", "")) == "int32"


class PRNGSequence(Iterator[Any]):
    """Iterator of random keys.

    >>> seq = PRNGSequence(42)          # or PRNGSequence(random.PRNGKey(42))
    >>> k1, k2 = next(seq), next(seq)   # distinct keys
    >>> ks = seq.take(3)                # a tuple of 3 more keys

    Args:
        key_or_seed: an int seed (-> `random.PRNGKey(seed)`), a PRNG key, or a `(key, subkeys)` internal state.

    Raises:
        ValueError: if `key_or_seed` is none of those.
    """

    __slots__ = ("_key", "_subkeys")

    def __init__(self, key_or_seed: Any):
        if isinstance(key_or_seed, tuple):
            key, subkeys = key_or_seed
            assert_is_prng_key(key)
            for subkey in subkeys:
                assert_is_prng_key(subkey)
            self._key = key
            self._subkeys = collections.deque(subkeys)
            return
        if is_int_seed(key_or_seed):
            key_or_seed = random.PRNGKey(key_or_seed)
        else:
            assert_is_prng_key(key_or_seed)
        self._key = key_or_seed
        self._subkeys: collections.deque = collections.deque()

    def reserve(self, num: int) -> None:
        """Splits `num` more keys at once and queues them (one `split(key, num + 1)`)."""
        if num > 0:
            new_keys = tuple(random.split(self._key, num + 1))
            self._key = new_keys[0]
            self._subkeys.extend(new_keys[1:])

    def reserve_up_to_full(self) -> None:
        """Tops the queue up to `hk.config` `rng_reserve_size` keys, so that stateful control flow
        (`hk.scan`, `hk.cond`, ...) always carries the same number of keys in and out."""
        self.reserve(get_config().rng_reserve_size - len(self._subkeys))

    @property
    def internal_state(self) -> tuple:
        """`(key, queued_subkeys)`; pass it back to the constructor to resume the sequence."""
        return self._key, tuple(self._subkeys)

    def replace_internal_state(self, state: tuple) -> None:
        key, subkeys = state
        assert_is_prng_key(key)
        for subkey in subkeys:
            assert_is_prng_key(subkey)
        self._key = key
        self._subkeys = collections.deque(subkeys)

    def peek(self) -> Any:
        """The key `next()` would return, without consuming it."""
        if not self._subkeys:
            self.reserve(get_config().rng_reserve_size)
        return self._subkeys[0]

    def __next__(self) -> Any:
        if not self._subkeys:
            self.reserve(get_config().rng_reserve_size)
        return self._subkeys.popleft()

    next = __next__

    def take(self, num: int) -> tuple:
        """The next `num` keys as a tuple (splitting only what the queue lacks, in one go)."""
        self.reserve(max(num - len(self._subkeys), 0))
        return tuple(next(self) for _ in range(num))

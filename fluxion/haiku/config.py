"""Global options of `fluxion.haiku` (`hk.config`, mirrors `haiku.config`).

Options:
    rng_reserve_size: how many keys `next_rng_key()` splits off at once when its queue is empty (default 1).
        Larger blocks change which keys are drawn, exactly as in Haiku.
    module_auto_repr: when False, modules use Python's default `repr` instead of `Name(name='...')`.
    check_jax_usage: accepted for compatibility; fluxion performs no such check (Haiku's check detects raw JAX
        transforms inside transformed functions, which fluxion does not trace for).
    restore_flatmap: accepted for compatibility; fluxion has no legacy FlatMap type, so it has no effect.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Iterator

__all__ = ["Config", "get_config", "context", "set"]


@dataclasses.dataclass
class Config:
    check_jax_usage: bool = False
    module_auto_repr: bool = True
    restore_flatmap: bool = False
    rng_reserve_size: int = 1


class _Storage(threading.local):
    def __init__(self):
        self.config = Config()


_STORAGE = _Storage()


def get_config() -> Config:
    """This thread's configuration object."""
    return _STORAGE.config


def _write(**overrides) -> None:
    config = get_config()
    for name, value in overrides.items():
        if not hasattr(config, name):
            raise TypeError(f"Unknown Haiku config option {name!r}")
        setattr(config, name, value)


def set(*, check_jax_usage: bool | None = None, module_auto_repr: bool | None = None,  # noqa: A001 (Haiku's name)
        restore_flatmap: bool | None = None, rng_reserve_size: int | None = None) -> None:
    """Sets the given options (None leaves an option unchanged)."""
    _write(**{k: v for k, v in locals().items() if v is not None})


@contextlib.contextmanager
def context(*, check_jax_usage: bool | None = None, module_auto_repr: bool | None = None,
            restore_flatmap: bool | None = None, rng_reserve_size: int | None = None) -> Iterator[None]:
    """Sets the given options for the duration of a `with` block."""
    overrides = {k: v for k, v in locals().items() if v is not None}
    config = get_config()
    previous = {name: getattr(config, name) for name in overrides}
    _write(**overrides)
    try:
        yield
    finally:
        _write(**previous)


def module_auto_repr(enabled: bool) -> bool:
    """Sets `module_auto_repr`; returns the previous value."""
    config = get_config()
    previous, config.module_auto_repr = config.module_auto_repr, enabled
    return previous


def check_jax_usage(enabled: bool = True) -> bool:
    """Sets `check_jax_usage` (no effect in fluxion, see above); returns the previous value."""
    config = get_config()
    previous, config.check_jax_usage = config.check_jax_usage, enabled
    return previous


def rng_reserve_size(size: int) -> int:
    """Sets `rng_reserve_size`; returns the previous value.

    Raises:
        ValueError: `size <= 0`.
    """
    if size <= 0:
        raise ValueError(f"RNG reserve size needs to be more than 0, got {size}.")
    config = get_config()
    previous, config.rng_reserve_size = config.rng_reserve_size, size
    return previous

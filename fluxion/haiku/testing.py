"""Test helpers (`hk.testing`)."""

from __future__ import annotations

import functools
from typing import Any, Callable

from fluxion import random

from ._transform import transform_with_state

__all__ = ["transform_and_run"]


def transform_and_run(f: Callable | None = None, seed: int | None = 42, run_apply: bool = True,
                      jax_transform: Callable[[Callable], Callable] | None = None, *,
                      map_rng: Callable[[Any], Any] | None = None) -> Callable:
    """Decorator for tests: runs `f` (which may create modules) through `transform_with_state`'s `init` and, with
    `run_apply`, `apply`, returning what `f` returns in the last of those runs.

    Args:
        seed: init gets `PRNGKey(seed)`, apply `PRNGKey(seed + 1)` (None: no keys).
        jax_transform: applied to `init` and `apply` (e.g. `fluxion.jit`).
        map_rng: applied to the key before each of init and apply.
    """
    if f is None:
        return functools.partial(transform_and_run, seed=seed, run_apply=run_apply, jax_transform=jax_transform,
                                 map_rng=map_rng)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        t = transform_with_state(lambda: f(*args, **kwargs))
        init, apply = t.init, t.apply
        if jax_transform is not None:
            init, apply = jax_transform(init), jax_transform(apply)
        init_key = apply_key = None
        if seed is not None:
            init_key, apply_key = random.PRNGKey(seed), random.PRNGKey(seed + 1)
            if map_rng is not None:
                init_key, apply_key = map_rng(init_key), map_rng(apply_key)
        params, state = init(init_key)
        if not run_apply:
            return None
        out, _ = apply(params, state, apply_key)
        return out

    return wrapper

"""Sampling sub-trajectories for model learning."""

from __future__ import annotations

from typing import Any, Optional

import fluxion
import fluxion.numpy as jnp
from fluxion import random

from ._checks import RLaxInputError

__all__ = ["extract_subsequences", "sample_start_indices"]


def extract_subsequences(trajectories: Any, start_indices: Any, subsequence_len: int = 1,
                         max_valid_start_idx: Optional[int] = None) -> Any:
    """Slices `subsequence_len` consecutive steps from each start index of each batch entry.

    Args:
        trajectories: `[T, B, ...]`. start_indices: int `[B, num_subsequences]`.
        max_valid_start_idx: if given, checks that `T >= max_valid_start_idx + subsequence_len`.

    Returns:
        `[subsequence_len, B, num_subsequences, ...]`.

    Raises:
        RLaxInputError (an AssertionError, as RLax raises): trajectories shorter than `max_valid_start_idx + subsequence_len` (as RLax).
    """
    if max_valid_start_idx is not None and trajectories.shape[0] < max_valid_start_idx + subsequence_len:
        raise RLaxInputError(f"extract_subsequences: expected len >= {max_valid_start_idx + subsequence_len}, but "
                             f"trajectories length is: {trajectories.shape[0]}.")
    batch_size, num_subs = start_indices.shape
    time_idx = jnp.arange(subsequence_len)[:, None, None] * jnp.ones((subsequence_len, batch_size, num_subs),
                                                                     dtype=jnp.int32) + start_indices
    return trajectories[time_idx, jnp.arange(batch_size)[None, :, None], ...]


def sample_start_indices(rng_key: Any, batch_size: int, num_start_indices: int, max_valid_start_idx: int) -> Any:
    """For each of `batch_size` rows, `num_start_indices` distinct start indices in `[0, max_valid_start_idx]`
    (`random.choice` without replacement on one split key per row, so draws match RLax's for the same key).

    Returns:
        int `[batch_size, num_start_indices]`.
    """
    window = jnp.arange(max_valid_start_idx + 1)
    choose = fluxion.vmap(lambda k, entries: random.choice(k, entries, shape=(num_start_indices,), replace=False))
    return choose(random.split(rng_key, batch_size), jnp.tile(window, (batch_size, 1)))

"""Cumulants (pseudo-rewards) for auxiliary control tasks (Jaderberg et al. 2017, "UNREAL",
https://arxiv.org/abs/1611.05397)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp

from ._checks import check

__all__ = ["pixel_control_rewards", "feature_control_rewards"]


def pixel_control_rewards(observations: Any, cell_size: int) -> Any:
    """Mean absolute change of each `cell_size x cell_size` cell (over channels) between consecutive frames.

    Args:
        observations: float `[T + 1, H, W, C]` with H and W multiples of `cell_size`.

    Returns:
        `[T, H // cell_size, W // cell_size]`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("pixel_control_rewards", [("observations", observations, 4, "float")])
    h, w = observations.shape[1] // cell_size, observations.shape[2] // cell_size
    diff = jnp.abs(observations[1:] - observations[:-1])
    diff = diff.reshape((-1, h, cell_size, w, cell_size, observations.shape[3]))
    return diff.mean(axis=(2, 4, 5))


def feature_control_rewards(features: Any, cumulant_type: str = "absolute_change", discount: Any = None) -> Any:
    """Per-feature cumulants from a `[T + 1, F]` feature sequence, giving `[T, F]`:

    `feature`: f_{t+1}; `absolute_change`: |f_{t+1} - f_t|; `increase`: f_{t+1} - f_t; `decrease`: f_t - f_{t+1};
    `potential`: discount f_{t+1} - f_t (potential-based shaping, Ng et al. 1999).

    Raises:
        RLaxInputError: wrong rank or dtype. ValueError: unknown `cumulant_type`.
    """
    check("feature_control_rewards", [("features", features, 2, "float")])
    nxt, cur = features[1:], features[:-1]
    table = {"feature": lambda: nxt, "absolute_change": lambda: jnp.abs(nxt - cur), "increase": lambda: nxt - cur,
             "decrease": lambda: cur - nxt, "potential": lambda: discount * nxt - cur}
    if cumulant_type not in table:
        raise ValueError(f"feature_control_rewards: unknown cumulant_type {cumulant_type!r} "
                         f"(expected one of {sorted(table)})")
    return table[cumulant_type]()

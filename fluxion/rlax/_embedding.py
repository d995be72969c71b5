"""Agent-input embedding."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import nn

from ._checks import check_rank

__all__ = ["embed_oar"]


def embed_oar(features: Any, action: Any, reward: Any, num_actions: int) -> Any:
    """Concatenates observation features, the one-hot previous action and `tanh(reward)` (as in R2D2/IMPALA agents).

    Args:
        features: `[batch, F]`. action: int `[batch]`. reward: `[batch]`.

    Returns:
        `[batch, F + num_actions + 1]`.

    Raises:
        RLaxInputError: wrong ranks.
    """
    check_rank("embed_oar", [("features", features, 2), ("action", action, 1), ("reward", reward, 1)])
    return jnp.concatenate([features, nn.one_hot(action, num_actions), jnp.tanh(reward)[:, None]], axis=-1)

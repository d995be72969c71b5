"""Pixel-control auxiliary loss (Jaderberg et al. 2017, "UNREAL", https://arxiv.org/abs/1611.05397)."""

from __future__ import annotations

import functools
from typing import Any

import fluxion
import fluxion.numpy as jnp

from ._checks import check
from ._general_value_functions import pixel_control_rewards
from ._value_learning import q_lambda

__all__ = ["pixel_control_loss"]


def pixel_control_loss(observations: Any, actions: Any, action_values: Any, discount_factor: Any,
                       cell_size: int) -> Any:
    """Spatial Q(1) losses for pixel control: every cell's Q-values learn, with `q_lambda(lambda_=1)`, to predict
    the discounted sum of that cell's `pixel_control_rewards`.

    Args:
        observations: float `[T + 1, H, W, C]`. actions: int `[T]`. action_values: float
            `[T + 1, H // cell_size, W // cell_size, A]`. discount_factor: float scalar or `[T]`.

    Returns:
        `0.5 * td_error^2` per time step and cell: `[T, H // cell_size, W // cell_size]`.

    Raises:
        RLaxInputError: wrong rank or dtype. ValueError: action_values' spatial shape does not match the
        pseudo-rewards', or `discount_factor` has rank > 1.
    """
    check("pixel_control_loss", [("observations", observations, 4, "float"), ("actions", actions, 1, "int"),
                                 ("action_values", action_values, 4, "float")])
    seq_len, num_actions = actions.shape[0], action_values.shape[-1]
    cells_q = tuple(action_values.shape[1:-1])
    pseudo_rewards = pixel_control_rewards(observations, cell_size)
    cells = tuple(pseudo_rewards.shape[1:])
    if cells != cells_q:
        raise ValueError(f"pixel_control_loss: action_values have spatial shape {cells_q}, but the pseudo-rewards "
                         f"derived from the observations have shape {cells}")
    q_tm1 = jnp.reshape(action_values[:-1], (seq_len, -1, num_actions))
    q_t = jnp.reshape(action_values[1:], (seq_len, -1, num_actions))
    r_t = jnp.reshape(pseudo_rewards, (seq_len, -1))
    a_tm1 = jnp.reshape(jnp.tile(actions[:, None, None], (1,) + cells), (seq_len, -1))
    discount_factor = jnp.asarray(discount_factor)
    if discount_factor.ndim == 0:
        discount_t = jnp.tile(jnp.reshape(discount_factor, (1,)), a_tm1.shape)
    elif discount_factor.ndim == 1:
        discount_t = jnp.reshape(jnp.tile(discount_factor[:, None, None], (1,) + cells), (seq_len, -1))
    else:
        raise ValueError(f"pixel_control_loss: `discount_factor` must be a scalar or rank 1, got shape "
                         f"{tuple(discount_factor.shape)}")
    # One Q(lambda=1) sequence per cell: map over the flattened cell axis.
    td_error = fluxion.vmap(functools.partial(q_lambda, lambda_=1.0), in_axes=1, out_axes=1)(
        q_tm1, a_tm1, r_t, discount_t, q_t)
    return jnp.reshape(0.5 * td_error ** 2, (seq_len,) + cells)

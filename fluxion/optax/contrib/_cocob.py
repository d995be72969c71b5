r"""COCOB-Backprop (Orabona & Tommasi, "Training Deep Networks without Learning
Rates Through Coin Betting", NeurIPS 2017, arXiv:1705.07795, Algorithm 2)."""

from __future__ import annotations

from typing import Any, NamedTuple

import fluxion.numpy as jnp
from fluxion import tree_util

from .._base import GradientTransformation, MaskOrFn, ScalarOrSchedule, Updates, require_params
from .._combine import chain
from .._transform import add_decayed_weights, scale_by_learning_rate
from .._tree_math import tree_ones_like, tree_scale, tree_zeros_like


class COCOBState(NamedTuple):
    """State of COCOB: initial params, negated gradient sum, max |g| (``scale``),
    sum of |g| (``subgradients``) and the betting ``reward``."""
    init_particles: Updates
    cumulative_gradients: Updates
    scale: Updates
    subgradients: Updates
    reward: Updates


def scale_by_cocob(alpha: Any = 100.0, eps: Any = 1e-8) -> GradientTransformation:
    r"""Coin-betting step: the new point is
    :math:`x_0 + \frac{\theta}{L \max(G + L, \alpha L)}(L + R)` with
    :math:`\theta = -\sum g`, :math:`L = \max |g|` (from ``eps``), :math:`G = \sum |g|`
    and the reward :math:`R`; the update is the difference to the current params.

    Returns:
        State ``COCOBState``. Requires ``params``.
    """

    def init_fn(params):
        zeros = tree_zeros_like(params)
        return COCOBState(init_particles=params, cumulative_gradients=zeros,
                          scale=tree_scale(eps, tree_ones_like(params)), subgradients=zeros,
                          reward=zeros)

    def update_fn(updates, state, params=None):
        require_params(params, 'scale_by_cocob')
        m = tree_util.tree_map
        scale = m(lambda L, g: jnp.maximum(L, jnp.abs(g)), state.scale, updates)
        subgrads = m(lambda G, g: G + jnp.abs(g), state.subgradients, updates)
        reward = m(lambda R, g, p, p0: jnp.maximum(R - g * (p - p0), 0),
                   state.reward, updates, params, state.init_particles)
        cumulative = m(lambda C, g: C - g, state.cumulative_gradients, updates)
        new_updates = m(
            lambda p, p0, C, L, G, R: -p + (p0 + C / (L * jnp.maximum(G + L, alpha * L)) * (L + R)),
            params, state.init_particles, cumulative, scale, subgrads, reward)
        return new_updates, COCOBState(state.init_particles, cumulative, scale, subgrads, reward)

    return GradientTransformation(init_fn, update_fn)


def cocob(learning_rate: ScalarOrSchedule = 1.0, alpha: Any = 100.0, eps: Any = 1e-8,
          weight_decay: Any = 0.0, mask: MaskOrFn = None) -> GradientTransformation:
    """COCOB with L2 weight decay on the gradient; ``learning_rate`` scales the
    gradient fed to the bettor (keep 1).

    Returns:
        ``chain(add_decayed_weights, scale_by_learning_rate(flip_sign=False),
        scale_by_cocob)``.
    """
    return chain(add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate, flip_sign=False),
                 scale_by_cocob(alpha, eps))

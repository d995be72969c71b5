"""Exponential moving averages of the mean and second moment of (trees of) arrays, with bias correction
(as in Adam, Kingma & Ba 2015)."""

from __future__ import annotations

import dataclasses
from typing import Any

import fluxion.numpy as jnp
from fluxion import lax, tree_util

__all__ = ["EmaMoments", "EmaState", "create_ema"]


@dataclasses.dataclass(frozen=True)
class EmaMoments:
    """Debiased mean and variance (same tree structure as the tracked values, scalar leaves)."""
    mean: Any
    variance: Any


@dataclasses.dataclass(frozen=True)
class EmaState:
    """Biased first (`mu`) and second (`nu`) moment averages and `decay ** num_updates` (`decay_product`)."""
    mu: Any
    nu: Any
    decay_product: Any

    def debiased_moments(self) -> EmaMoments:
        """`mean = mu / (1 - decay_product)`, `variance = max(0, nu / (1 - decay_product) - mean^2)`."""
        tiny = jnp.finfo(jnp.asarray(self.decay_product).dtype).tiny
        debias = 1. / jnp.maximum(1 - self.decay_product, tiny)
        mean = tree_util.tree_map(lambda m: m * debias, self.mu)
        variance = tree_util.tree_map(lambda m2, m: jnp.maximum(0., m2 * debias - jnp.square(m)), self.nu, mean)
        return EmaMoments(mean=mean, variance=variance)


tree_util.register_dataclass(EmaMoments, data_fields=["mean", "variance"], meta_fields=[])
# Leaves in sorted field-name order, the order chex dataclasses flatten in (same tree_leaves as RLax).
tree_util.register_dataclass(EmaState, data_fields=["decay_product", "mu", "nu"], meta_fields=[])


def create_ema(decay: float = 0.999, pmean_axis_name: Any = None):
    """`(init_state, update_moments)` tracking the mean of every leaf (averaged over all its elements, and over
    devices with `pmean_axis_name`).

    `init_state(tree)` gives zero moments and `decay_product = 1`; `update_moments(tree, state)` returns
    `(debiased EmaMoments, new EmaState)`.
    """

    def init_state(template_tree):
        zeros = tree_util.tree_map(lambda x: jnp.zeros_like(jnp.mean(x)), template_tree)
        return EmaState(mu=zeros, nu=zeros, decay_product=jnp.ones([], dtype=jnp.float32))

    def _update(moment, value):
        mean = jnp.mean(value)
        if pmean_axis_name is not None:
            mean = lax.pmean(mean, axis_name=pmean_axis_name)
        return decay * moment + (1 - decay) * mean

    def update_moments(tree, state):
        mu = tree_util.tree_map(_update, state.mu, tree)
        nu = tree_util.tree_map(_update, state.nu, tree_util.tree_map(jnp.square, tree))
        state = EmaState(mu=mu, nu=nu, decay_product=state.decay_product * decay)
        return state.debiased_moments(), state

    return init_state, update_moments

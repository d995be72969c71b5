"""Sampled policy targets and the distillation loss on them (as used in Muesli-style policy improvement)."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import fluxion.numpy as jnp
from fluxion import tree_util

from ._checks import check_equal_shape, maybe_stop_gradient

__all__ = ["PolicyTarget", "constant_policy_targets", "zero_policy_targets", "sampled_policy_distillation_loss"]


@dataclasses.dataclass(frozen=True)
class PolicyTarget:
    """Sampled actions `[num_samples, ...batch]` and their weights (a pytree, like RLax's chex dataclass)."""
    actions: Any
    weights: Any


tree_util.register_dataclass(PolicyTarget, data_fields=["actions", "weights"], meta_fields=[])


def constant_policy_targets(distribution: Any, rng_key: Any, num_samples: int,
                            weights_scale: float = 1.) -> PolicyTarget:
    """`num_samples` actions drawn from `distribution`, each with weight `weights_scale`.

    `distribution` is any object with the distrax interface used here: `sample(seed=, sample_shape=)` and
    `batch_shape` (fluxion has no distrax; pass an object that provides these).
    """
    actions = distribution.sample(seed=rng_key, sample_shape=(num_samples,))
    return PolicyTarget(actions=actions,
                        weights=weights_scale * jnp.ones((num_samples,) + tuple(distribution.batch_shape)))


zero_policy_targets = functools.partial(constant_policy_targets, weights_scale=0.0)


def sampled_policy_distillation_loss(distribution: Any, policy_targets: PolicyTarget,
                                     stop_target_gradients: bool = True) -> Any:
    """`-mean(weights * log pi(actions))` with log-probabilities floored at the dtype's most negative finite value.

    `distribution` needs `log_prob(actions)`.

    Raises:
        RLaxInputError: the weights and log-probabilities differ in shape.
    """
    weights = maybe_stop_gradient(stop_target_gradients, policy_targets.weights)
    actions = maybe_stop_gradient(stop_target_gradients, policy_targets.actions)
    log_probs = distribution.log_prob(actions)
    check_equal_shape("sampled_policy_distillation_loss", [("weights", weights), ("log_probs", log_probs)])
    return -jnp.mean(weights * jnp.maximum(log_probs, jnp.finfo(log_probs.dtype).min))

"""Exploration: action noise for continuous control and NGU's episodic-novelty intrinsic reward.

Noise draws use `fluxion.random.normal` with the action's shape, so a given key yields the same noise as RLax.
Dirichlet noise reproduces JAX's `random.dirichlet` draw (a softmax of log-Gamma samples from the Marsaglia-Tsang
method, one split key per element) from fluxion's public `random` and `lax`, so it is also key-for-key identical.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, nn, random, tree_util

from ._checks import RLaxInputError, check, check_float, check_rank
from ._episodic_memory import knn_query

__all__ = ["add_gaussian_noise", "add_ornstein_uhlenbeck_noise", "add_dirichlet_noise", "IntrinsicRewardState",
           "episodic_memory_intrinsic_rewards"]


def add_gaussian_noise(key: Any, action: Any, stddev: float) -> Any:
    """`action + stddev * N(0, 1)` of the action's shape (Lillicrap et al. 2016, "DDPG").

    Raises:
        RLaxInputError: non-float `action`.
    """
    check_float("add_gaussian_noise", "action", action)
    return action + random.normal(key, shape=action.shape) * stddev


def add_ornstein_uhlenbeck_noise(key: Any, action: Any, noise_tm1: Any, damping: float, stddev: float) -> Any:
    """`action + noise_t` with Ornstein-Uhlenbeck noise `noise_t = (1 - damping) noise_tm1 + stddev N(0, 1)`
    (Uhlenbeck & Ornstein 1930; used by DDPG). Returns the noisy action (recover `noise_t` as the difference).

    Args:
        action, noise_tm1: float vectors of the same length.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("add_ornstein_uhlenbeck_noise", [("action", action, 1, "float"), ("noise_tm1", noise_tm1, 1, "float")])
    noise_t = (1. - damping) * noise_tm1 + random.normal(key, shape=action.shape) * stddev
    return action + noise_t


def _log_gamma_one(key: Any, alpha: Any) -> Any:
    """log of one Gamma(alpha, 1) sample (Marsaglia & Tsang 2000, "A simple method for generating gamma variables").

    alpha < 1 is boosted to alpha + 1 and corrected by `U^(1/alpha)`, added in log space so that tiny alphas do not
    underflow. The key schedule (split into loop key and boost key; per attempt split into three; normal draws
    retried until `v > 0`) is JAX's, which makes the sample identical for the same key.
    """
    dtype = alpha.dtype
    zero, one = jnp.zeros((), dtype), jnp.ones((), dtype)
    third = jnp.asarray(1. / 3., dtype)
    boost = alpha >= one
    alpha_orig = alpha
    alpha = jnp.where(boost, alpha, alpha + one)
    d = alpha - third
    c = third / jnp.sqrt(d)

    def reject(state):
        _, x2, v3, u = state
        squeeze = u >= one - jnp.asarray(0.0331, dtype) * (x2 * x2)
        return squeeze & (jnp.log(u) >= x2 * jnp.asarray(0.5, dtype) + d * (one - v3 + jnp.log(v3)))

    def propose(state):
        def next_normal(kxv):
            k, sub = random.split(kxv[0])
            x = random.normal(sub, (), dtype=dtype)
            return k, x, one + x * c

        k, x_key, u_key = random.split(state[0], 3)
        _, x, v = lax.while_loop(lambda kxv: kxv[2] <= zero, next_normal, (x_key, zero, -one))
        return k, x * x, v * v * v, random.uniform(u_key, (), dtype=dtype)

    key, boost_key = random.split(key)
    # The initial state (U = 2) always fails the acceptance test, so at least one proposal is drawn.
    _, _, v3, _ = lax.while_loop(reject, propose, (key, zero, one, 2 * one))
    # log(1 - U) = -Exponential(1); negation is exact, so this is JAX's -exponential(key) bit for bit.
    log_u = jnp.log1p(-random.uniform(boost_key, (), dtype=dtype))
    log_boost = jnp.where(boost | (log_u == 0), zero, log_u * (one / alpha_orig))
    return jnp.log(d) + jnp.log(v3) + log_boost


def add_dirichlet_noise(key: Any, prior: Any, dirichlet_alpha: float, dirichlet_fraction: float) -> Any:
    """Mixes Dirichlet noise into a batch of priors, as AlphaZero does at the search root (Silver et al. 2018):
    `(1 - dirichlet_fraction) * prior + dirichlet_fraction * Dir(dirichlet_alpha, ..., dirichlet_alpha)`, one draw per
    row.

    Args:
        prior: float `[batch, num_actions]` probabilities. dirichlet_alpha, dirichlet_fraction: Python floats.

    Returns:
        `[batch, num_actions]`, identical to RLax's for the same key.

    Raises:
        RLaxInputError: `prior` not rank 2, or non-float alpha/fraction.
    """
    check_rank("add_dirichlet_noise", [("prior", prior, 2)])
    check("add_dirichlet_noise", [("dirichlet_alpha", dirichlet_alpha, None, "float"),
                                  ("dirichlet_fraction", dirichlet_fraction, None, "float")])
    batch_size, num_actions = prior.shape
    alphas = jnp.full((batch_size * num_actions,), dirichlet_alpha, dtype=jnp.float32)
    # One key per element, in row-major order, then a log-Gamma sample each; normalising gives the Dirichlet draw.
    keys = random.split(key, int(np.prod((batch_size, num_actions))))
    log_gamma = fluxion.vmap(_log_gamma_one)(keys, alphas).reshape(batch_size, num_actions)
    noise = nn.softmax(log_gamma, axis=-1)
    return (1 - dirichlet_fraction) * prior + dirichlet_fraction * noise


@dataclasses.dataclass
class IntrinsicRewardState:
    """Episodic memory (`[max_memory_size, dim]`, empty rows are +inf), the next write slot, and the running sum and
    count of squared neighbour distances (a pytree, like RLax's chex dataclass)."""
    memory: Any
    next_memory_index: Any = 0
    distance_sum: Any = 0
    distance_count: Any = 0


# Leaves in sorted field-name order, as chex dataclasses flatten (same tree_leaves as RLax).
tree_util.register_dataclass(IntrinsicRewardState,
                             data_fields=["distance_count", "distance_sum", "memory", "next_memory_index"],
                             meta_fields=[])


def episodic_memory_intrinsic_rewards(embeddings: Any, num_neighbors: int, reward_scale: float,
                                      intrinsic_reward_state: Optional[IntrinsicRewardState] = None,
                                      constant: float = 1e-3, epsilon: float = 1e-4, cluster_distance: float = 8e-3,
                                      max_similarity: float = 8., max_memory_size: int = 30_000):
    """Episodic novelty reward of Never Give Up (Badia et al. 2020, https://arxiv.org/abs/2002.06038, Alg. 1).

    For each embedding, the `num_neighbors` nearest memory entries (squared distances `d`, normalised by their running
    mean) give a kernel similarity `s = sqrt(sum eps / (max(d / mean - cluster_distance, 0) + eps)) + constant`; the
    reward is `reward_scale / s`, or 0 when `s > max_similarity`. The embeddings are then written into the memory as a
    ring buffer. A fresh state holds `num_neighbors` zero rows so that the first lookups are well defined.

    Args:
        embeddings: float `[batch, dim]`.

    Returns:
        `(rewards [batch], new IntrinsicRewardState)`.

    Raises:
        RLaxInputError (an AssertionError, as RLax raises): the given state's memory is not `[max_memory_size, dim]`.
    """
    check_rank("episodic_memory_intrinsic_rewards", [("embeddings", embeddings, 2)])
    dim = embeddings.shape[-1]
    if not intrinsic_reward_state:
        memory = jnp.full((max_memory_size, dim), jnp.inf)
        memory = memory.at[:num_neighbors, :].set(jnp.zeros((num_neighbors, dim)))
        intrinsic_reward_state = IntrinsicRewardState(memory=memory)
    elif tuple(intrinsic_reward_state.memory.shape) != (max_memory_size, dim):
        raise RLaxInputError(f"episodic_memory_intrinsic_rewards: memory shape "
                             f"{tuple(intrinsic_reward_state.memory.shape)} must be {(max_memory_size, dim)}")
    state = intrinsic_reward_state
    sq_distances = knn_query(state.memory, embeddings, num_neighbors).neighbor_neg_distances
    start = state.next_memory_index % state.memory.shape[0]
    slots = (jnp.arange(embeddings.shape[0]) + start) % state.memory.shape[0]
    memory = jnp.asarray(state.memory).at[slots].set(embeddings)

    # The "distances" are the negated squared distances returned by the query, exactly as RLax accumulates them.
    distance_sum = state.distance_sum + jnp.sum(sq_distances)
    distance_count = state.distance_count + sq_distances.size
    rate = sq_distances / (distance_sum / distance_count + constant)
    rate = jnp.maximum(rate - cluster_distance, jnp.zeros_like(rate))
    similarity = jnp.sqrt(jnp.sum(epsilon / (rate + epsilon), axis=-1)) + constant
    reward = jnp.where(similarity > max_similarity, 0, jnp.ones_like(embeddings[..., 0]) / similarity)
    # RLax advances the write index by `start + batch % max_memory_size` (operator precedence); kept for parity.
    new_state = IntrinsicRewardState(memory=memory, next_memory_index=start + embeddings.shape[0] % max_memory_size,
                                     distance_sum=distance_sum, distance_count=distance_count)
    return reward * reward_scale, new_state

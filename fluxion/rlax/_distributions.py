"""Discrete action distributions: `greedy`, `epsilon_greedy`, `softmax` (RLax's `DiscreteDistribution`).

Each returns a named tuple of functions `(sample, probs, logprob, entropy, kl)`. Sampling uses
`random.categorical` on the log-probabilities with a leading sample axis of size 1 -- the draw RLax makes through
distrax -- so a given key selects the same action. Invalid probabilities (non-finite or negative) sample -1.
Greedy probabilities split the mass evenly between tied maxima.
"""

from __future__ import annotations

import collections
from typing import Any

import fluxion.numpy as jnp
from fluxion import nn, random

__all__ = ["DiscreteDistribution", "categorical_sample", "greedy", "epsilon_greedy", "softmax",
           "categorical_kl_divergence"]

DiscreteDistribution = collections.namedtuple("DiscreteDistribution", ["sample", "probs", "logprob", "entropy",
                                                                       "kl"])


def _mul_exp(x: Any, logp: Any) -> Any:
    # x * exp(logp), defined as 0 where exp(logp) == 0 even if x is -inf (0 * log 0 = 0 in entropies).
    p = jnp.exp(logp)
    return jnp.where(p == 0, 0.0, x) * p


def _sample_from_log_probs(key: Any, log_probs: Any, valid: Any) -> Any:
    draws = random.categorical(key, log_probs, axis=-1, shape=(1,) + log_probs.shape[:-1])
    draws = jnp.where(valid, draws, -jnp.ones_like(draws))
    return draws.reshape(draws.shape[1:])


def _log_prob_of(sample: Any, log_probs: Any) -> Any:
    n = log_probs.shape[-1]
    one_hot = nn.one_hot(sample, n, dtype=log_probs.dtype)
    # Select rather than multiply so that log(0) = -inf in unselected entries never meets a 0 (no NaN).
    picked = jnp.sum(jnp.where(one_hot == 0, jnp.zeros((), log_probs.dtype), log_probs), axis=-1)
    return jnp.where((sample < 0) | (sample > n - 1), -jnp.inf, picked)


def _entropy_of(log_probs: Any) -> Any:
    return -jnp.sum(_mul_exp(log_probs, log_probs), axis=-1)


def _from_probs(probs_of):
    """A DiscreteDistribution whose parameters map to (unnormalized) probabilities via `probs_of`."""

    def normalized(*params):
        p = probs_of(*params)
        return p / p.sum(axis=-1, keepdims=True)

    def sample_fn(key, *params):
        p = normalized(*params)
        valid = jnp.all(jnp.isfinite(p), axis=-1) & jnp.all(p >= 0, axis=-1)
        return _sample_from_log_probs(key, jnp.log(p), valid)

    def logprob_fn(sample, *params):
        return _log_prob_of(sample, jnp.log(normalized(*params)))

    def entropy_fn(*params):
        return _entropy_of(jnp.log(normalized(*params)))

    return sample_fn, normalized, logprob_fn, entropy_fn


def _greedy_probs(preferences: Any) -> Any:
    best = preferences == preferences.max(axis=-1, keepdims=True)
    return best / best.sum(axis=-1, keepdims=True)


def categorical_sample(key: Any, probs: Any) -> Any:
    """One action index per row of `probs` (normalized first); -1 where the probabilities are invalid."""
    return _from_probs(lambda p: jnp.asarray(p))[0](key, probs)


def greedy() -> DiscreteDistribution:
    """Argmax of the preferences, ties broken uniformly at random.

    Functions: `sample(key, preferences)`, `probs(preferences)`, `logprob(sample, preferences)`,
    `entropy(preferences)`; `kl` is None.
    """
    sample, probs, logprob, entropy = _from_probs(_greedy_probs)
    return DiscreteDistribution(sample, probs, logprob, entropy, None)


def epsilon_greedy(epsilon: float | None = None) -> DiscreteDistribution:
    """Greedy with probability `1 - epsilon`, uniform with probability `epsilon`:
    `probs = (1 - eps) * greedy_probs + eps / num_actions`.

    Functions take `epsilon` as an optional last argument overriding the one given here, e.g.
    `sample(key, preferences, epsilon=0.1)`; `kl` is None.
    """

    def probs_of(preferences, epsilon=epsilon):
        greedy_p = _greedy_probs(preferences)
        return (1 - epsilon) * greedy_p + epsilon * (jnp.ones_like(greedy_p) / greedy_p.shape[-1])

    sample, probs, logprob, entropy = _from_probs(probs_of)

    def sample_fn(key, preferences, epsilon=epsilon):
        return sample(key, preferences, epsilon)

    def probs_fn(preferences, epsilon=epsilon):
        return probs(preferences, epsilon)

    def logprob_fn(sample_, preferences, epsilon=epsilon):
        return logprob(sample_, preferences, epsilon)

    def entropy_fn(preferences, epsilon=epsilon):
        return entropy(preferences, epsilon)

    return DiscreteDistribution(sample_fn, probs_fn, logprob_fn, entropy_fn, None)


def categorical_kl_divergence(p_logits: Any, q_logits: Any, temperature: float = 1.) -> Any:
    """`KL(softmax(p/T) || softmax(q/T)) = sum p (log p - log q)` over the last axis."""
    log_p = nn.log_softmax(p_logits / temperature, axis=-1)
    log_q = nn.log_softmax(q_logits / temperature, axis=-1)
    return jnp.sum(_mul_exp(log_p - log_q, log_p), axis=-1)


def softmax(temperature: float = 1.) -> DiscreteDistribution:
    """`pi(a) = softmax(logits / temperature)[a]`.

    Functions: `sample(key, logits)`, `probs(logits)`, `logprob(sample, logits)`, `entropy(logits)`,
    `kl(p_logits, q_logits)`.
    """

    def log_probs(logits):
        return nn.log_softmax(logits / temperature, axis=-1)

    def sample_fn(key, logits):
        lp = log_probs(logits)
        p = nn.softmax(lp, axis=-1)
        valid = jnp.all(jnp.isfinite(p), axis=-1) & jnp.all(p >= 0, axis=-1)
        return _sample_from_log_probs(key, lp, valid)

    def probs_fn(logits):
        return nn.softmax(log_probs(logits), axis=-1)

    def logprob_fn(sample, logits):
        return _log_prob_of(sample, log_probs(logits))

    def entropy_fn(logits):
        return _entropy_of(nn.log_softmax(log_probs(logits), axis=-1))

    def kl_fn(p_logits, q_logits):
        return categorical_kl_divergence(p_logits, q_logits, temperature)

    return DiscreteDistribution(sample_fn, probs_fn, logprob_fn, entropy_fn, kl_fn)

"""Discrete action distributions: `greedy`, `epsilon_greedy`, `softmax` (RLax's `DiscreteDistribution`).

Each returns a named tuple of functions `(sample, probs, logprob, entropy, kl)`. Sampling uses
`random.categorical` on the log-probabilities with a leading sample axis of size 1 -- the draw RLax makes through
distrax -- so a given key selects the same action. Invalid probabilities (non-finite or negative) sample -1.
Greedy probabilities split the mass evenly between tied maxima.

Continuous policies (`gaussian_diagonal`, `squashed_gaussian`) return a `ContinuousDistribution` named tuple
`(sample, prob, logprob, entropy, kl_to_standard_normal, kl)` with the formulas of a diagonal Gaussian
(RLax builds them on distrax's MultivariateNormalDiag; samples are `mu + sigma * random.normal(key, mu.shape)`,
the same draw for the same key).
"""

from __future__ import annotations

import collections
import math
from typing import Any

import fluxion.numpy as jnp
from fluxion import nn, random

__all__ = ["DiscreteDistribution", "ContinuousDistribution", "categorical_sample", "greedy", "epsilon_greedy",
           "softmax", "clipped_entropy_softmax", "categorical_kl_divergence", "categorical_cross_entropy",
           "categorical_importance_sampling_ratios", "gaussian_diagonal", "squashed_gaussian",
           "multivariate_normal_kl_divergence"]

DiscreteDistribution = collections.namedtuple("DiscreteDistribution", ["sample", "probs", "logprob", "entropy",
                                                                       "kl"])
ContinuousDistribution = collections.namedtuple("ContinuousDistribution", ["sample", "prob", "logprob", "entropy",
                                                                           "kl_to_standard_normal", "kl"])
DiscreteDistribution.__doc__ = """A discrete policy as a tuple of pure functions, what `greedy`, `epsilon_greedy` and
`softmax` return: `sample(key, preferences, ...)` draws int32 actions, `probs(preferences, ...)` the (..., A)
probabilities, `logprob(sample, preferences, ...)` and `entropy(preferences, ...)` their log-probability and
entropy, `kl(p, q)` the KL divergence between two preference arrays. Fields as in RLax."""
ContinuousDistribution.__doc__ = """A continuous policy as a tuple of pure functions, what `gaussian_diagonal` and
`squashed_gaussian` return: `sample(key, params)`, `prob(sample, params)`, `logprob(sample, params)`,
`entropy(params)`, `kl_to_standard_normal(params)` and `kl(params_p, params_q)`; `params` holds the mean and the
standard deviation (or its pre-activation) per action dimension. Fields as in RLax."""


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


def categorical_cross_entropy(labels: Any, logits: Any) -> Any:
    """`H(p, q) = -sum p log q` over the last axis, with `p = labels / sum(labels)` and `q = softmax(logits)`.

    Entries with `p == 0` contribute 0 even where `log q` is `-inf`.
    """
    p = labels / jnp.sum(labels, axis=-1, keepdims=True)
    log_q = nn.log_softmax(logits, axis=-1)
    return -jnp.sum(jnp.where(p == 0, jnp.zeros((), log_q.dtype), log_q) * p, axis=-1)


def clipped_entropy_softmax(temperature: float = 1., entropy_clip: float = 1.) -> DiscreteDistribution:
    """`softmax(temperature)` whose entropy is capped at `entropy_clip * log(num_actions)`.

    `sample`, `probs` and `logprob` accept (and ignore) an `action_spec` argument, as in RLax.
    """
    base = softmax(temperature)

    def sample_fn(key, logits, action_spec=None):
        del action_spec
        return base.sample(key, logits)

    def probs_fn(logits, action_spec=None):
        del action_spec
        return base.probs(logits)

    def logprob_fn(sample, logits, action_spec=None):
        del action_spec
        return base.logprob(sample, logits)

    def entropy_fn(logits):
        return jnp.minimum(base.entropy(logits), entropy_clip * jnp.log(logits.shape[-1]))

    return DiscreteDistribution(sample_fn, probs_fn, logprob_fn, entropy_fn, base.kl)


def categorical_importance_sampling_ratios(pi_logits_t: Any, mu_logits_t: Any, a_t: Any) -> Any:
    """`pi(a_t) / mu(a_t)` for categorical policies given by logits (computed as `exp(log pi - log mu)`)."""
    log_pi = _log_prob_of(a_t, nn.log_softmax(pi_logits_t, axis=-1))
    log_mu = _log_prob_of(a_t, nn.log_softmax(mu_logits_t, axis=-1))
    return jnp.exp(log_pi - log_mu)


_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _diag_gaussian_logprob(x, mu, sigma):
    z = (x - mu) / sigma
    return jnp.sum(-0.5 * jnp.square(z) - jnp.log(sigma) - _HALF_LOG_2PI, axis=-1)


def _diag_gaussian_entropy(sigma):
    return jnp.sum(0.5 + _HALF_LOG_2PI + jnp.log(sigma), axis=-1)


def _diag_gaussian_kl(mu_0, sigma_0, mu_1, sigma_1):
    # KL(N0 || N1) = sum log(s1 / s0) + 0.5 (-d + sum (s0 / s1)^2 + sum ((mu1 - mu0) / s1)^2).
    d = mu_0.shape[-1]
    log_det_diff = jnp.sum(jnp.log(jnp.abs(sigma_1)), axis=-1) - jnp.sum(jnp.log(jnp.abs(sigma_0)), axis=-1)
    ratio = jnp.sum(jnp.square(sigma_0 / sigma_1), axis=-1)
    mahalanobis = jnp.sum(jnp.square((mu_1 - mu_0) / sigma_1), axis=-1)
    return log_det_diff + 0.5 * (-d + ratio + mahalanobis)


def multivariate_normal_kl_divergence(mu_0: Any, sigma_0: Any, mu_1: Any, sigma_1: Any) -> Any:
    """`KL(N(mu_0, diag(sigma_0^2)) || N(mu_1, diag(sigma_1^2)))` over the last axis (sigmas are standard
    deviations, broadcast against the means)."""
    sigma_0 = jnp.ones_like(mu_0) * sigma_0
    sigma_1 = jnp.ones_like(mu_1) * sigma_1
    return _diag_gaussian_kl(mu_0, sigma_0, mu_1, sigma_1)


def _normal_draw(key, mu):
    return random.normal(key, shape=mu.shape, dtype=mu.dtype)


def gaussian_diagonal(sigma: Any = None) -> ContinuousDistribution:
    """Diagonal Gaussian policy `N(mu, diag(sigma^2))`, event axis last.

    Functions: `sample(key, mu, sigma=sigma)`, `prob(sample, mu, sigma=sigma)`, `logprob(...)`,
    `entropy(mu, sigma=sigma)`, `kl_to_standard_normal(mu, sigma=sigma)`, `kl(mu_0, sigma_0, mu_1, sigma_1)`;
    `sigma` broadcasts against `mu`.
    """

    def full(mu, s):
        return jnp.ones_like(mu) * s

    def sample_fn(key, mu, sigma=sigma):
        return mu + full(mu, sigma) * _normal_draw(key, mu)

    def logprob_fn(sample, mu, sigma=sigma):
        return _diag_gaussian_logprob(sample, mu, full(mu, sigma))

    def prob_fn(sample, mu, sigma=sigma):
        return jnp.exp(logprob_fn(sample, mu, sigma))

    def entropy_fn(mu, sigma=sigma):
        return _diag_gaussian_entropy(full(mu, sigma))

    def kl_to_standard_normal_fn(mu, sigma=sigma):
        return _diag_gaussian_kl(mu, full(mu, sigma), jnp.zeros_like(mu), jnp.ones_like(mu))

    def kl_fn(mu_0, sigma_0, mu_1, sigma_1):
        return _diag_gaussian_kl(mu_0, full(mu_0, sigma_0), mu_1, full(mu_1, sigma_1))

    return ContinuousDistribution(sample_fn, prob_fn, logprob_fn, entropy_fn, kl_to_standard_normal_fn, kl_fn)


def _tanh_log_det(x):
    # log(1 - tanh(x)^2) in a form that stays finite for large |x|.
    return 2. * (math.log(2.) - x - nn.softplus(-2. * x))


def squashed_gaussian(sigma_min: float = -4, sigma_max: float = 0.) -> ContinuousDistribution:
    """Tanh-squashed diagonal Gaussian policy for bounded actions (as in SAC, Haarnoja et al. 2018).

    The pre-squash Gaussian has mean `tanh(mu)` and scale `exp(sigma_min + (sigma_max - sigma_min)(tanh(sigma) + 1)
    / 2)`; samples are `tanh(x)`, or with an `action_spec` (any object with `minimum`/`maximum`)
    `minimum + (maximum - minimum) (tanh(x) + 1) / 2`. `prob`/`logprob` use the change of variables through that
    map; `entropy`, `kl_to_standard_normal` and `kl` are those of the pre-squash Gaussian (as RLax).

    Functions: `sample(key, mu, sigma, action_spec)`, `prob(sample, mu, sigma, action_spec)`,
    `logprob(sample, mu, sigma, action_spec)`, `entropy(mu, sigma)`, `kl_to_standard_normal(mu, sigma)`,
    `kl(mu_0, sigma_0, mu_1, sigma_1)`.
    """

    def loc_scale(mu, sigma):
        scale = jnp.exp(sigma_min + 0.5 * (sigma_max - sigma_min) * (jnp.tanh(sigma) + 1.))
        return jnp.tanh(mu), scale

    def affine(action_spec):
        if action_spec is None:
            return None
        return 0.5 * (action_spec.maximum - action_spec.minimum), action_spec.minimum

    def sample_fn(key, mu, sigma, action_spec):
        loc, scale = loc_scale(mu, sigma)
        y = jnp.tanh(loc + scale * _normal_draw(key, loc))
        spec = affine(action_spec)
        return y if spec is None else spec[0] * (y + 1.) + spec[1]

    def logprob_fn(sample, mu, sigma, action_spec):
        loc, scale = loc_scale(mu, sigma)
        spec = affine(action_spec)
        log_det = 0.
        if spec is not None:
            sample = (sample - spec[1]) / spec[0] - 1.
            log_det = jnp.sum(jnp.log(jnp.abs(spec[0])) * jnp.ones_like(sample), axis=-1)
        x = jnp.arctanh(sample)
        return _diag_gaussian_logprob(x, loc, scale) - jnp.sum(_tanh_log_det(x), axis=-1) - log_det

    def prob_fn(sample, mu, sigma, action_spec):
        return jnp.exp(logprob_fn(sample, mu, sigma, action_spec))

    def entropy_fn(mu, sigma):
        return _diag_gaussian_entropy(loc_scale(mu, sigma)[1])

    def kl_to_standard_normal_fn(mu, sigma):
        loc, scale = loc_scale(mu, sigma)
        return _diag_gaussian_kl(loc, scale, jnp.zeros_like(mu), jnp.ones_like(mu))

    def kl_fn(mu_0, sigma_0, mu_1, sigma_1):
        return _diag_gaussian_kl(*loc_scale(mu_0, sigma_0), *loc_scale(mu_1, sigma_1))

    return ContinuousDistribution(sample_fn, prob_fn, logprob_fn, entropy_fn, kl_to_standard_normal_fn, kl_fn)

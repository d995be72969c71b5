r"""Perturbed optimizers: smoothing a function by random perturbations
(Berthet et al., "Learning with Differentiable Perturbed Optimizers",
NeurIPS 2020, arXiv:2002.08676).

``make_perturbed_fun(f)(key, x)`` estimates :math:`\mathbb{E}_Z[f(x + \sigma Z)]`
by Monte Carlo; its gradient is the score-function estimator (through the
"magic box" :math:`e^{\ell - \mathrm{sg}(\ell)}`, Foerster et al. 2018), so
``f`` itself may be piecewise constant (e.g. an argmax).
"""

from __future__ import annotations

from typing import Any, Callable

import fluxion
import fluxion.numpy as jnp
import fluxion.random as jrandom
from fluxion import lax, tree_util

from ._tree_math import tree_add_scale, tree_scale, tree_sum
from ._tree_random import tree_random_like


class Normal:
    """Standard normal noise: ``sample`` and the unnormalised ``log_prob`` :math:`-z^2/2`."""

    def sample(self, key: Any, sample_shape: tuple = (), dtype: Any = float) -> Any:
        return jrandom.normal(key, sample_shape, dtype)

    def log_prob(self, inputs: Any) -> Any:
        return -0.5 * inputs ** 2


class Gumbel:
    """Standard Gumbel noise: ``sample`` and ``log_prob`` :math:`-z - e^{-z}`."""

    def sample(self, key: Any, sample_shape: tuple = (), dtype: Any = float) -> Any:
        return jrandom.gumbel(key, sample_shape, dtype)

    def log_prob(self, inputs: Any) -> Any:
        return -inputs - jnp.exp(-inputs)


def _magicbox(x: Any) -> Any:
    """1 in the forward pass, with the gradient of ``x``."""
    return jnp.exp(x - lax.stop_gradient(x))


def make_perturbed_fun(fun: Callable[[Any], Any], num_samples: int = 1000, sigma: Any = 0.1,
                       noise: Any = None, use_baseline: bool = True) -> Callable[[Any, Any], Any]:
    """Returns ``(key, x) -> mean over samples of fun(x + sigma * Z)``.

    Args:
        fun: pytree -> pytree.
        num_samples: Monte Carlo samples (one key split each, as in optax).
        sigma: noise scale.
        noise: an object with ``sample(key, shape, dtype)`` and ``log_prob``
            (default :class:`Gumbel`).
        use_baseline: subtract ``fun(x)`` as a control variate in the gradient.
    """
    noise = Gumbel() if noise is None else noise

    def estimate(key, x):
        baseline = fun(lax.stop_gradient(x)) if use_baseline else None

        def one_sample(k):
            z = tree_random_like(k, x, sampler=noise.sample)
            shifted = lax.stop_gradient(tree_util.tree_map(lambda xi, zi: xi + sigma * zi, x, z))
            z = tree_util.tree_map(lambda xi, yi: (yi - xi) / sigma, x, shifted)
            box = _magicbox(tree_sum(tree_util.tree_map(noise.log_prob, z)))
            out = tree_scale(box, fun(shifted))
            if use_baseline:
                out = tree_add_scale(out, 1 - box, baseline)
            return out

        outs = fluxion.vmap(one_sample)(jrandom.split(key, num_samples))
        return tree_util.tree_map(lambda o: jnp.mean(o, axis=0), outs)

    return estimate

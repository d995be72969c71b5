r"""Differentially private SGD (Abadi et al., "Deep Learning with Differential
Privacy", CCS 2016, arXiv:1607.00133): per-example clipping plus Gaussian noise."""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple, Optional

import fluxion.random as jrandom
from fluxion import tree_util

from .._accumulation import trace
from .._base import GradientTransformation, ScalarOrSchedule, identity
from .._clipping import per_example_global_norm_clip
from .._combine import chain
from .._transform import scale_by_learning_rate
from .._tree_random import canonicalize_key


class DifferentiallyPrivateAggregateState(NamedTuple):
    """State: the PRNG key for the noise."""
    rng_key: Any


def differentially_private_aggregate(l2_norm_clip: Any, noise_multiplier: Any, key: Any = None,
                                     *, seed: Optional[int] = None) -> GradientTransformation:
    r"""Aggregates per-example gradients privately.

    Input leaves carry a leading batch axis of size :math:`B`. Each example's
    gradient is clipped to global norm :math:`C` (``l2_norm_clip``), the clipped
    gradients are summed, Gaussian noise with std :math:`\sigma C`
    (``noise_multiplier`` :math:`\sigma`) is added, and the result divided by
    :math:`B`. Noise draws equal optax's for the same key.

    Returns:
        State ``DifferentiallyPrivateAggregateState(rng_key)``.

    Raises:
        ValueError: if both ``key`` and ``seed`` are given, or (at update) the
            leaves lack a common batch axis.
    """
    if seed is not None:
        warnings.warn('differentially_private_aggregate: "seed" is deprecated, pass "key".',
                      DeprecationWarning, stacklevel=2)
        if key is not None:
            raise ValueError('differentially_private_aggregate: pass only one of `seed` and '
                             '`key`.')
        key = jrandom.key(seed)
    if key is None:
        warnings.warn('differentially_private_aggregate: no key given, using key(0).',
                      stacklevel=2)
        key = jrandom.key(0)
    key = canonicalize_key(key)
    noise_std = l2_norm_clip * noise_multiplier

    def init_fn(params):
        del params
        return DifferentiallyPrivateAggregateState(rng_key=key)

    def update_fn(updates, state, params=None):
        del params
        leaves, treedef = tree_util.tree_flatten(updates)
        batch = leaves[0].shape[0]
        clipped, _ = per_example_global_norm_clip(leaves, l2_norm_clip)
        keys = jrandom.split(state.rng_key, len(leaves) + 1)
        noised = [(g + noise_std * jrandom.normal(keys[i + 1], g.shape, g.dtype)) / batch
                  for i, g in enumerate(clipped)]
        return (tree_util.tree_unflatten(treedef, noised),
                DifferentiallyPrivateAggregateState(rng_key=keys[0]))

    return GradientTransformation(init_fn, update_fn)


def dpsgd(learning_rate: ScalarOrSchedule, l2_norm_clip: Any, noise_multiplier: Any, seed: int,
          momentum: Optional[Any] = None, nesterov: bool = False) -> GradientTransformation:
    """DP-SGD: ``chain(differentially_private_aggregate, trace | identity, lr)``.

    ``update`` expects per-example gradients (leading batch axis).
    """
    with warnings.catch_warnings():
        # dpsgd's `seed` is its public argument; only the inner alias is deprecated.
        warnings.simplefilter('ignore', DeprecationWarning)
        aggregate = differentially_private_aggregate(l2_norm_clip=l2_norm_clip,
                                                     noise_multiplier=noise_multiplier, seed=seed)
    return chain(aggregate,
                 trace(decay=momentum, nesterov=nesterov) if momentum is not None else identity(),
                 scale_by_learning_rate(learning_rate))

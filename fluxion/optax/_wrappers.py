"""Wrappers that decide *whether* or *how* an inner transformation is applied.

``apply_if_finite``, ``conditionally_mask`` / ``conditionally_transform``,
``flatten``, ``freeze`` / ``selective_transform`` and the small constraint
and noise transformations (``keep_params_nonnegative``, ``zero_nans``,
``add_noise``). Decisions that depend on array values use ``lax.cond`` so the
wrapped update stays traceable under ``fluxion.jit``.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple, Optional, Protocol, Union

import numpy as np

import fluxion.numpy as jnp
import fluxion.random as jrandom
from fluxion import lax, tree_util

from . import _numerics
from ._base import (EmptyState, GradientTransformation, GradientTransformationExtraArgs,
                    OptState, require_params, set_to_zero, with_extra_args_support)
from ._combine import partition
from ._masking import masked
from ._tree_math import tree_add_scale, tree_zeros_like
from ._tree_random import canonicalize_key, tree_random_like


class ConditionFn(Protocol):
    """``should_transform_fn(step, **extra_args) -> bool scalar``."""

    def __call__(self, step: Any, **extra_args: Any) -> Any:
        ...


class ApplyIfFiniteState(NamedTuple):
    """State of :func:`apply_if_finite`.

    Attributes:
        notfinite_count: consecutive steps with a non-finite update (int32).
        last_finite: whether the last update was finite (bool).
        total_notfinite: total number of non-finite steps (int32).
        inner_state: state of the wrapped transformation.
    """
    notfinite_count: Any
    last_finite: Any
    total_notfinite: Any
    inner_state: Any


def apply_if_finite(inner: GradientTransformation, max_consecutive_errors: int
                    ) -> GradientTransformationExtraArgs:
    """Skips steps whose incoming updates contain NaN or inf.

    On such a step the returned updates are zeros and the inner state is kept,
    unless more than ``max_consecutive_errors`` bad steps happened in a row, in
    which case the inner update runs anyway (so the NaNs propagate and the
    problem becomes visible).

    Returns:
        State ``ApplyIfFiniteState(notfinite_count, last_finite, total_notfinite,
        inner_state)``.
    """
    inner = with_extra_args_support(inner)

    def init_fn(params):
        return ApplyIfFiniteState(notfinite_count=jnp.zeros([], jnp.int32),
                                  last_finite=jnp.array(True, jnp.bool_),
                                  total_notfinite=jnp.zeros([], jnp.int32),
                                  inner_state=inner.init(params))

    def update_fn(updates, state, params=None, **extra_args):
        flags = [jnp.all(jnp.isfinite(x)) for x in tree_util.tree_leaves(updates)]
        isfinite = jnp.all(jnp.stack(flags)) if flags else jnp.array(True)
        notfinite_count = jnp.where(isfinite, jnp.zeros([], jnp.int32),
                                    _numerics.safe_increment(state.notfinite_count))
        updates, inner_state = lax.cond(
            jnp.logical_or(isfinite, notfinite_count > max_consecutive_errors),
            lambda _: inner.update(updates, state.inner_state, params, **extra_args),
            lambda _: (tree_zeros_like(updates), state.inner_state),
            None)
        total = jnp.where(isfinite, state.total_notfinite,
                          _numerics.safe_increment(state.total_notfinite))
        return updates, ApplyIfFiniteState(notfinite_count=notfinite_count, last_finite=isfinite,
                                           total_notfinite=total, inner_state=inner_state)

    return GradientTransformationExtraArgs(init_fn, update_fn)


class ConditionallyTransformState(NamedTuple):
    """State of :func:`conditionally_transform`: ``inner_state`` and int32 ``step``."""
    inner_state: Any
    step: Any


def conditionally_transform(inner: GradientTransformation, should_transform_fn: ConditionFn,
                            forward_extra_args: bool = False
                            ) -> GradientTransformationExtraArgs:
    """Runs ``inner`` only on steps where ``should_transform_fn(step)`` is True.

    On other steps the updates pass through unchanged and the inner state is
    kept. ``step`` counts calls (0, 1, ...).

    Args:
        inner: the transformation to apply conditionally.
        should_transform_fn: ``step -> bool``; also receives the extra args when
            ``forward_extra_args``.

    Returns:
        State ``ConditionallyTransformState(inner_state, step)``.
    """
    inner = with_extra_args_support(inner)

    def init_fn(params):
        return ConditionallyTransformState(inner_state=inner.init(params),
                                           step=jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None, **extra_args):
        cond_kwargs = extra_args if forward_extra_args else {}
        updates, inner_state = lax.cond(
            should_transform_fn(state.step, **cond_kwargs),
            lambda _: inner.update(updates, state.inner_state, params, **extra_args),
            lambda _: (updates, state.inner_state), None)
        return updates, ConditionallyTransformState(inner_state,
                                                    _numerics.safe_increment(state.step))

    return GradientTransformationExtraArgs(init_fn, update_fn)


class ConditionallyMaskState(NamedTuple):
    """State of :func:`conditionally_mask`: int32 ``step`` and ``inner_state``."""
    step: Any
    inner_state: OptState


def conditionally_mask(inner: GradientTransformation, should_transform_fn: ConditionFn,
                       forward_extra_args: bool = False) -> GradientTransformationExtraArgs:
    """Like :func:`conditionally_transform`, but skipped steps return zero updates.

    Returns:
        State ``ConditionallyMaskState(step, inner_state)``.
    """
    inner = with_extra_args_support(inner)

    def init_fn(params):
        return ConditionallyMaskState(step=jnp.zeros([], jnp.int32), inner_state=inner.init(params))

    def update_fn(updates, state, params=None, **extra_args):
        cond_kwargs = extra_args if forward_extra_args else {}
        updates, inner_state = lax.cond(
            should_transform_fn(state.step, **cond_kwargs),
            lambda _: inner.update(updates, state.inner_state, params, **extra_args),
            lambda _: (tree_zeros_like(updates), state.inner_state), None)
        return updates, ConditionallyMaskState(step=_numerics.safe_increment(state.step),
                                               inner_state=inner_state)

    return GradientTransformationExtraArgs(init_fn, update_fn)


def flatten(inner: GradientTransformation) -> GradientTransformationExtraArgs:
    """Runs ``inner`` on one flat vector holding all leaves concatenated.

    Useful for optimizers that are cheaper on one large array. The inner state
    is built for the flat vector; updates are split and reshaped back.

    Returns:
        A transformation whose state is ``inner``'s state for the flat vector.
    """
    inner = with_extra_args_support(inner)

    def to_flat(tree):
        return jnp.concatenate([jnp.reshape(x, [-1]) for x in tree_util.tree_leaves(tree)])

    def from_flat(like, flat):
        leaves, treedef = tree_util.tree_flatten(like)
        offsets = np.cumsum([np.size(x) for x in leaves])[:-1]
        pieces = jnp.split(flat, [int(o) for o in offsets])
        return tree_util.tree_unflatten(
            treedef, [jnp.reshape(p, x.shape) for p, x in zip(pieces, leaves)])

    def init_fn(params):
        return inner.init(to_flat(params))

    def update_fn(updates, state, params=None, **extra_args):
        flat_params = None if params is None else to_flat(params)
        flat_updates, state = inner.update(to_flat(updates), state, flat_params, **extra_args)
        return from_flat(updates, flat_updates), state

    return GradientTransformationExtraArgs(init_fn, update_fn)


def freeze(mask: Union[bool, Any]) -> GradientTransformation:
    """Zeroes the updates where ``mask`` is True (a bool or a pytree of bools).

    Returns:
        ``masked(set_to_zero(), mask)``; state ``MaskedState(EmptyState())``.
    """
    return masked(set_to_zero(), mask)


def selective_transform(optimizer: GradientTransformation, *,
                        freeze_mask: Union[bool, Any]) -> GradientTransformation:
    """Applies ``optimizer`` to leaves where ``freeze_mask`` is False, zeros elsewhere.

    Args:
        optimizer: the optimizer of the trained leaves.
        freeze_mask: static bool or pytree of bools (True = frozen).

    Returns:
        ``partition({'train': optimizer, 'freeze': set_to_zero()}, labels)``.
    """

    def labels(params):
        del params
        return tree_util.tree_map(lambda m: 'freeze' if m else 'train', freeze_mask)

    return partition({'train': optimizer, 'freeze': set_to_zero()}, param_labels=labels)


NonNegativeParamsState = EmptyState


def keep_params_nonnegative() -> GradientTransformation:
    """Modifies updates so that ``params + updates >= 0``: where the sum would be
    negative the update becomes ``-params`` (the parameter lands on 0).

    Returns:
        A stateless transformation that requires ``params``.
    """

    def update_fn(updates, state, params=None):
        require_params(params, 'keep_params_nonnegative')
        updates = tree_util.tree_map(
            lambda p, u: None if p is None else jnp.where(p + u < 0.0, -p, u),
            params, updates, is_leaf=lambda x: x is None)
        return updates, state

    return GradientTransformation(lambda params: NonNegativeParamsState(), update_fn)


class ZeroNansState(NamedTuple):
    """State of :func:`zero_nans`: per leaf, whether the last update had a NaN."""
    found_nan: Any


def zero_nans() -> GradientTransformation:
    """Replaces NaNs in the updates by 0 and records, per leaf, whether one was found.

    Returns:
        State ``ZeroNansState(found_nan)`` (a pytree of bool scalars).
    """

    def init_fn(params):
        return ZeroNansState(found_nan=tree_util.tree_map(
            lambda p: jnp.array(False, dtype=jnp.bool_), params))

    def update_fn(updates, state, params=None):
        del params, state
        found = tree_util.tree_map(lambda u: jnp.any(jnp.isnan(u)), updates)
        updates = tree_util.tree_map(lambda u: jnp.where(jnp.isnan(u), jnp.zeros_like(u), u),
                                     updates)
        return updates, ZeroNansState(found_nan=found)

    return GradientTransformation(init_fn, update_fn)


class AddNoiseState(NamedTuple):
    """State of :func:`add_noise`: int32 ``count`` and the PRNG key ``rng_key``."""
    count: Any
    rng_key: Any


def add_noise(eta: Any, gamma: Any, key: Any = None, *, seed: Optional[int] = None
              ) -> GradientTransformation:
    r"""Adds annealed Gaussian noise (Neelakantan et al. 2015, arXiv:1511.06807).

    :math:`u_t = g_t + \sigma_t \xi_t`, :math:`\sigma_t^2 = \eta / t^{\gamma}`,
    :math:`\xi_t \sim N(0, I)` drawn from a fresh split of the state's key (the
    same draws as optax for the same key).

    Args:
        eta: initial variance. gamma: decay exponent.
        key: PRNG key or int seed (None: seed 0, with a warning as in optax).
        seed: deprecated alias of ``key``.

    Returns:
        State ``AddNoiseState(count, rng_key)``.

    Raises:
        ValueError: if both ``key`` and ``seed`` are given.
    """
    if seed is not None:
        warnings.warn('add_noise: "seed" is deprecated, pass "key".', DeprecationWarning,
                      stacklevel=2)
        if key is not None:
            raise ValueError('add_noise: pass only one of `seed` and `key`.')
        key = seed
    if key is None:
        warnings.warn('add_noise: no key given, using seed 0.', stacklevel=2)
        key = 0

    def init_fn(params):
        del params
        return AddNoiseState(count=jnp.zeros([], jnp.int32), rng_key=canonicalize_key(key))

    def update_fn(updates, state, params=None):
        del params
        count_inc = _numerics.safe_increment(state.count)
        stddev = jnp.sqrt(eta / count_inc ** gamma)
        rng_key, sample_key = jrandom.split(state.rng_key)
        noise = tree_random_like(sample_key, updates, sampler=jrandom.normal)
        return tree_add_scale(updates, stddev, noise), AddNoiseState(count=count_inc,
                                                                     rng_key=rng_key)

    return GradientTransformation(init_fn, update_fn)

r"""Sharpness-aware minimization (Foret et al., ICLR 2021, arXiv:2010.01412).

The adversarial optimizer (typically ``chain(normalize(), sgd(rho))``) moves
the parameters uphill for ``sync_period - 1`` steps; at the last step the
outer optimizer is applied, with the gradient at the adversarial point, to
the cached starting parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import fluxion.numpy as jnp
from fluxion import tree_util

from .._base import EmptyState, GradientTransformation, GradientTransformationExtraArgs, OptState
from .._tree_math import tree_norm
from .._update import apply_updates

NormalizeState = EmptyState


def normalize() -> GradientTransformation:
    """Divides all updates by their global norm (no epsilon: a zero gradient gives NaN)."""

    def update_fn(updates, state, params=None):
        del params
        g_norm = tree_norm(updates)
        return tree_util.tree_map(lambda g: g / g_norm, updates), state

    return GradientTransformation(lambda params: NormalizeState(), update_fn)


class SAMState(NamedTuple):
    """State of :func:`sam`: step within the cycle, both optimizer states, cached params."""
    steps_since_sync: Any
    opt_state: OptState
    adv_state: OptState
    cache: Optional[Any]


def sam(optimizer: GradientTransformation, adv_optimizer: GradientTransformation,
        sync_period: int = 2, reset_state: bool = True, opaque_mode: bool = False,
        batch_axis_name: Optional[str] = None) -> GradientTransformationExtraArgs:
    """SAM as a gradient transformation.

    In the default (transparent) mode every call is one step: the first
    ``sync_period - 1`` calls return adversarial (ascent) updates and the last
    returns the outer update that brings the params back to the cache and
    applies ``optimizer``. In ``opaque_mode`` a single call runs the whole
    cycle, evaluating gradients with ``update(..., grad_fn=grad_fn)``, where
    ``grad_fn(params, i)`` returns the gradient at ``params``.

    Args:
        batch_axis_name: in opaque mode, average adversarial gradients over this
            mapped axis (``lax.pmean``).

    Returns:
        State ``SAMState(steps_since_sync, opt_state, adv_state, cache)``.

    Raises:
        ValueError: if ``sync_period < 1``, or (opaque mode) no ``grad_fn``.
    """
    if sync_period < 1:
        raise ValueError(f'sam: sync_period must be >= 1, got {sync_period}.')

    def init_fn(params):
        return SAMState(steps_since_sync=jnp.zeros((), jnp.int32), opt_state=optimizer.init(params),
                        adv_state=adv_optimizer.init(params),
                        cache=None if opaque_mode else params)

    def pick(cond, if_true, if_false):
        return tree_util.tree_map(lambda t, f: cond * t + (1 - cond) * f, if_true, if_false)

    def transparent_update(updates, state, params=None, *,
                           grad_fn: Optional[Callable[[Any, int], Any]] = None):
        del grad_fn
        first = state.steps_since_sync == 0
        last = state.steps_since_sync == sync_period - 1
        adv_updates, adv_state = adv_optimizer.update(updates, state.adv_state, params)
        adv_updates = tree_util.tree_map(lambda x: -x, adv_updates)
        opt_updates, opt_state = optimizer.update(updates, state.opt_state, state.cache)
        opt_updates = tree_util.tree_map(lambda c, p, u: c - p + u, state.cache, params,
                                         opt_updates)
        cache = pick(first, params, state.cache)
        new_updates = pick(last, opt_updates, adv_updates)
        adv_keep = adv_optimizer.init(params) if reset_state else state.adv_state
        adv_state = pick(last, adv_keep, adv_state)
        opt_state = pick(last, opt_state, state.opt_state)
        return new_updates, SAMState(steps_since_sync=(state.steps_since_sync + 1) % sync_period,
                                     adv_state=adv_state, opt_state=opt_state, cache=cache)

    def opaque_update(updates, state, params=None, *,
                      grad_fn: Optional[Callable[[Any, int], Any]] = None):
        if grad_fn is None:
            raise ValueError('sam: opaque_mode=True needs update(..., grad_fn=grad_fn).')
        from fluxion import lax  # noqa: PLC0415  (pmean only needed with batch_axis_name)
        adv_params, adv_updates, adv_state = params, updates, state.adv_state
        for i in range(sync_period - 1):
            adv_updates, adv_state = adv_optimizer.update(adv_updates, adv_state, adv_params)
            adv_updates = tree_util.tree_map(lambda x: -x, adv_updates)
            adv_params = apply_updates(adv_params, adv_updates)
            adv_updates = grad_fn(adv_params, i)
            if batch_axis_name is not None:
                adv_updates = lax.pmean(adv_updates, axis_name=batch_axis_name)
        if reset_state:
            adv_state = adv_optimizer.init(params)
        new_updates, opt_state = optimizer.update(adv_updates, state.opt_state, params)
        return new_updates, SAMState(steps_since_sync=jnp.zeros((), jnp.int32),
                                     adv_state=adv_state, opt_state=opt_state, cache=None)

    return GradientTransformationExtraArgs(init_fn,
                                           opaque_update if opaque_mode else transparent_update)

"""Lookahead (Zhang, Lucas, Hinton & Ba, NeurIPS 2019, arXiv:1907.08610)."""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

import fluxion.numpy as jnp
from fluxion import tree_util

from ._base import GradientTransformation, OptState, Params


class LookaheadState(NamedTuple):
    """State of :func:`lookahead`: the fast optimizer's state and int32 ``steps_since_sync``."""
    fast_state: OptState
    steps_since_sync: Any


class LookaheadParams(NamedTuple):
    """The two parameter copies lookahead works on: ``fast`` and ``slow``."""
    fast: Params
    slow: Params

    @classmethod
    def init_synced(cls, params: Params) -> 'LookaheadParams':
        """Both copies start equal to ``params``."""
        return cls(fast=params, slow=params)


def lookahead(fast_optimizer: GradientTransformation, sync_period: int, slow_step_size: Any,
              reset_state: bool = False) -> GradientTransformation:
    r"""Wraps ``fast_optimizer`` so that every ``sync_period`` steps the slow weights
    move towards the fast ones and the fast weights are reset to them.

    At a sync step (fast weights :math:`\phi` after the fast update):
    :math:`\theta_{slow} \leftarrow \theta_{slow} + \alpha(\phi - \theta_{slow})`
    and :math:`\phi \leftarrow \theta_{slow}`. ``params`` passed to ``update``
    and the returned updates are :class:`LookaheadParams`; apply them with
    ``apply_updates`` and evaluate the model with ``params.slow``.

    Args:
        fast_optimizer: the inner optimizer.
        sync_period: number of fast steps between syncs (>= 1).
        slow_step_size: :math:`\alpha`.
        reset_state: re-initialise the fast optimizer's state at each sync.

    Returns:
        State ``LookaheadState(fast_state, steps_since_sync)``.

    Raises:
        ValueError: if ``sync_period < 1``.
    """
    if sync_period < 1:
        raise ValueError(f'lookahead: sync_period must be >= 1, got {sync_period}.')

    def init_fn(params):
        fast = getattr(params, 'fast', None)
        if fast is None:
            logging.warning('lookahead: `params` has no `fast` attribute; assuming only the '
                            'fast parameters were passed to init.')
            fast = params
        return LookaheadState(fast_state=fast_optimizer.init(fast),
                              steps_since_sync=jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None):
        if not isinstance(params, LookaheadParams):
            raise TypeError('lookahead: `params` must be a LookaheadParams(fast, slow), got '
                            f'{type(params).__name__}.')
        updates, fast_state = fast_optimizer.update(updates, state.fast_state, params.fast)
        sync = state.steps_since_sync == sync_period - 1
        # Distance from the slow weights to where the fast weights would land.
        diff = tree_util.tree_map(lambda f, u, s: f + u - s, params.fast, updates, params.slow)
        slow_updates = tree_util.tree_map(lambda d: slow_step_size * sync * d, diff)
        fast_updates = tree_util.tree_map(lambda u, d: u - sync * (1 - slow_step_size) * d,
                                          updates, diff)
        if reset_state:
            fresh = fast_optimizer.init(params.fast)
            fast_state = tree_util.tree_map(lambda cur, new: (1 - sync) * cur + sync * new,
                                            fast_state, fresh)
        return (LookaheadParams(fast=fast_updates, slow=slow_updates),
                LookaheadState(fast_state, (state.steps_since_sync + 1) % sync_period))

    return GradientTransformation(init_fn, update_fn)

"""Reduce the learning rate when a monitored loss stops improving (as Keras'
and PyTorch's ``ReduceLROnPlateau``), as a gradient transformation."""

from __future__ import annotations

from typing import Any, NamedTuple

import fluxion.numpy as jnp
from fluxion import lax, tree_util

from .. import _numerics
from .._base import GradientTransformationExtraArgs
from .._tree_math import tree_dtype


class ReduceLROnPlateauState(NamedTuple):
    """State: current ``scale``, ``best_value``, ``plateau_count``, ``cooldown_count``,
    accumulation ``count`` and the running ``avg_value``."""
    scale: Any
    best_value: Any
    plateau_count: Any
    cooldown_count: Any
    count: Any
    avg_value: Any


def reduce_on_plateau(factor: float = 0.1, patience: int = 10, rtol: float = 1e-4,
                      atol: float = 0.0, cooldown: int = 0, accumulation_size: int = 1,
                      min_scale: Any = 0.0) -> GradientTransformationExtraArgs:
    """Multiplies updates by a scale that is cut by ``factor`` on plateaus.

    Pass the loss as ``update(..., value=loss)``. Values are averaged over
    ``accumulation_size`` calls; the average improves if it is below
    ``(1 - rtol) * best - atol``. After ``patience`` evaluations without
    improvement the scale is multiplied by ``factor`` (not below ``min_scale``)
    and ``cooldown`` evaluations are skipped.

    Returns:
        State ``ReduceLROnPlateauState``.

    Raises:
        ValueError: if ``factor`` is not in (0, 1), a tolerance is negative,
            both are 0, or ``rtol > 1``.
    """
    if not 0.0 < factor < 1.0:
        raise ValueError(f'reduce_on_plateau: factor must be in (0, 1), got {factor}.')
    if rtol < 0.0 or atol < 0.0:
        raise ValueError(f'reduce_on_plateau: rtol and atol must be >= 0, got rtol={rtol}, '
                         f'atol={atol}.')
    if rtol == 0.0 and atol == 0.0:
        raise ValueError('reduce_on_plateau: at least one of rtol and atol must be positive.')
    if rtol > 1.0:
        raise ValueError(f'reduce_on_plateau: rtol must be <= 1, got {rtol}.')

    def init_fn(params):
        low = tree_dtype(params, 'lowest')
        high = tree_dtype(params, 'highest')
        return ReduceLROnPlateauState(
            scale=jnp.asarray(1.0, dtype=low), best_value=jnp.asarray(float('inf'), dtype=high),
            plateau_count=jnp.asarray(0, jnp.int32), cooldown_count=jnp.asarray(0, jnp.int32),
            count=jnp.asarray(0, jnp.int32), avg_value=jnp.asarray(0.0, high))

    def evaluate(state):
        avg = state.avg_value
        improved = avg < (1 - rtol) * state.best_value - atol
        best = jnp.where(improved, avg.astype(state.best_value.dtype), state.best_value)
        plateau = jnp.where(improved, 0, _numerics.safe_increment(state.plateau_count))

        def cooling():
            return jnp.asarray(0, jnp.int32), state.scale, state.cooldown_count - 1

        def watching():
            hit = plateau == patience
            return (jnp.where(hit, 0, plateau).astype(jnp.int32),
                    jnp.maximum(jnp.where(hit, state.scale * factor, state.scale),
                                min_scale).astype(state.scale.dtype),
                    jnp.where(hit, cooldown, 0).astype(jnp.int32))

        plateau, scale, cool = lax.cond(state.cooldown_count > 0, cooling, watching)
        return ReduceLROnPlateauState(scale=scale, best_value=best.astype(state.best_value.dtype),
                                      plateau_count=plateau, cooldown_count=cool,
                                      count=jnp.asarray(0, jnp.int32),
                                      avg_value=jnp.asarray(0.0, avg.dtype))

    def update_fn(updates, state, params=None, *, value, **extra_args):
        del params, extra_args
        new_count = _numerics.safe_increment(state.count)
        avg = (state.count * state.avg_value
               + jnp.asarray(value).astype(state.avg_value.dtype)) / new_count
        state = state._replace(avg_value=avg.astype(state.avg_value.dtype), count=new_count)
        state = lax.cond(new_count == accumulation_size, evaluate, lambda s: s, state)
        return tree_util.tree_map(lambda g: state.scale * g, updates), state

    return GradientTransformationExtraArgs(init_fn, update_fn)

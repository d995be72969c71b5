"""Applying updates to parameters."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import tree_util

from ._base import Params, Updates
from ._tree_math import tree_where


def _is_none(x: Any) -> bool:
    return x is None


def apply_updates(params: Params, updates: Updates) -> Params:
    """Returns ``params + updates`` leafwise, keeping each parameter's dtype.

    The sum is cast back to the parameter dtype so that, e.g., float32 updates
    do not silently promote bfloat16 parameters. ``None`` parameters stay None.

    Args:
        params: pytree of parameter arrays.
        updates: pytree of the same structure (as returned by ``update``).

    Returns:
        The new parameters, same structure, shapes and dtypes as ``params``.

    Raises:
        ValueError: if the two trees have different structures.
    """
    return tree_util.tree_map(
        lambda p, u: None if p is None else jnp.asarray(p + u).astype(jnp.asarray(p).dtype),
        params, updates, is_leaf=_is_none)


def incremental_update(new_tensors: Params, old_tensors: Params,
                       step_size: Any) -> Params:
    """Polyak averaging: ``step_size * new + (1 - step_size) * old`` leafwise.

    Typically used to keep an exponential moving average of parameters
    (target networks, EMA weights).

    Args:
        new_tensors: latest values.
        old_tensors: running average, same structure.
        step_size: scalar in [0, 1]; 1 returns ``new_tensors``.

    Returns:
        The updated average.
    """
    return tree_util.tree_map(
        lambda new, old: None if new is None else step_size * new + (1.0 - step_size) * old,
        new_tensors, old_tensors, is_leaf=_is_none)


def periodic_update(new_tensors: Params, old_tensors: Params, steps: Any,
                    update_period: Any) -> Params:
    """Returns ``new_tensors`` every ``update_period`` steps, else ``old_tensors``.

    Args:
        new_tensors: candidate values.
        old_tensors: current values, same structure.
        steps: integer step counter (scalar, may be traced).
        update_period: integer period.

    Returns:
        ``new_tensors`` when ``steps % update_period == 0``, else ``old_tensors``.
    """
    # A select on each leaf is equivalent to optax's lax.cond and stays
    # traceable without needing control flow.
    return tree_where(jnp.mod(steps, update_period) == 0, new_tensors, old_tensors)

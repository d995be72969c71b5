r"""Momentum-style accumulators: ``trace`` (heavy ball / Nesterov) and ``ema``."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import fluxion.numpy as jnp
from fluxion import tree_util

from . import _numerics
from ._base import GradientTransformation, Params
from ._tree_math import tree_bias_correction, tree_cast, tree_update_moment, tree_zeros_like


class TraceState(NamedTuple):
    """State of :func:`trace`: the momentum buffer ``trace``."""
    trace: Params


def trace(decay: Any, nesterov: bool = False,
          accumulator_dtype: Optional[Any] = None) -> GradientTransformation:
    r"""Momentum: :math:`t_k = g_k + \mu\, t_{k-1}`, update :math:`t_k`.

    Polyak's heavy-ball method (1964) in the form used by Sutskever et al.
    2013; with ``nesterov=True`` the update is :math:`g_k + \mu\, t_k`
    (Nesterov 1983). This matches PyTorch's ``SGD(momentum=mu, dampening=0)``,
    whose buffer also starts at 0 here (PyTorch initialises it to
    :math:`g_1`, which gives the same first step).

    Args:
        decay: momentum coefficient :math:`\mu`.
        nesterov: use Nesterov momentum.
        accumulator_dtype: dtype of the buffer (None: parameter dtype).

    Returns:
        A transformation with state ``TraceState(trace)``.
    """
    accumulator_dtype = _numerics.canonicalize_dtype(accumulator_dtype)

    def accumulate(g, t):
        return g + decay * t

    def init_fn(params):
        return TraceState(trace=tree_zeros_like(params, dtype=accumulator_dtype))

    def update_fn(updates, state, params=None):
        del params
        new_trace = tree_util.tree_map(
            lambda g, t: None if g is None else accumulate(g, t),
            updates, state.trace, is_leaf=lambda g: g is None)
        if nesterov:
            updates = tree_util.tree_map(accumulate, updates, new_trace)
        else:
            updates = new_trace
        return updates, TraceState(trace=tree_cast(new_trace, accumulator_dtype))

    return GradientTransformation(init_fn, update_fn)


class EmaState(NamedTuple):
    """State of :func:`ema`: step ``count`` (int32) and the average ``ema``."""
    count: Any
    ema: Params


def ema(decay: Any, debias: bool = True,
        accumulator_dtype: Optional[Any] = None) -> GradientTransformation:
    r"""Exponential moving average :math:`e_t = (1-d) g_t + d\, e_{t-1}`.

    Args:
        decay: the decay :math:`d`.
        debias: return :math:`e_t / (1 - d^t)` (Kingma & Ba 2014 bias
            correction) instead of :math:`e_t`.
        accumulator_dtype: dtype of the stored average.

    Returns:
        A transformation with state ``EmaState(count, ema)``.
    """
    accumulator_dtype = _numerics.canonicalize_dtype(accumulator_dtype)

    def init_fn(params):
        return EmaState(count=jnp.zeros([], jnp.int32),
                        ema=tree_zeros_like(params, dtype=accumulator_dtype))

    def update_fn(updates, state, params=None):
        del params
        new_ema = tree_update_moment(updates, state.ema, decay, 1)
        count_inc = _numerics.safe_increment(state.count)
        updates = tree_bias_correction(new_ema, decay, count_inc) if debias else new_ema
        return updates, EmaState(count=count_inc, ema=tree_cast(new_ema, accumulator_dtype))

    return GradientTransformation(init_fn, update_fn)

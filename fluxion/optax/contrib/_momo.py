r"""MoMo: momentum models for adaptive learning rates (Schaipp, Ohana, Eickenberg,
Defazio & Gower, ICML 2024, arXiv:2305.07583).

The step size is a Polyak-type truncation of a model of the loss built from
momentum averages of the values, gradients and :math:`\langle g, x\rangle`;
the loss must be passed as ``update(..., value=loss)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax, tree_util

from .. import _numerics
from .._base import GradientTransformationExtraArgs, ScalarOrSchedule, Updates, require_params
from .._tree_math import tree_dtype, tree_norm, tree_vdot, tree_zeros_like

# Threshold below which the momentum norm is treated as 0 (optax uses the
# float64 machine epsilon, whatever the dtype).
_TINY = np.finfo(float).eps


def _check_value(value: Any, name: str) -> None:
    if value is None:
        raise ValueError(f'{name}: pass the current loss as update(..., value=loss).')


class MomoState(NamedTuple):
    """State of :func:`momo`: gradient EMA, loss EMA ``barf``, EMA ``gamma`` of
    :math:`\\langle g, x\\rangle`, lower bound ``lb`` and ``count``."""
    exp_avg: Updates
    barf: Any
    gamma: Any
    lb: Any
    count: Any


def momo(learning_rate: ScalarOrSchedule = 1.0, beta: Any = 0.9, lower_bound: Any = 0.0,
         weight_decay: Any = 0.0, adapt_lower_bound: bool = False
         ) -> GradientTransformationExtraArgs:
    r"""MoMo (SGD with momentum form): step :math:`\tau_t = \min(\alpha_t, h_t/\|d_t\|^2)`
    along the gradient EMA :math:`d_t`, where
    :math:`h_t = \max((1+\alpha\lambda)(\bar f_t - f_* - \gamma_t) + \langle d_t, x_t\rangle, 0)`.

    Args:
        learning_rate: the cap :math:`\alpha_t` (float or schedule).
        beta: momentum of the averages (the first step uses no averaging).
        lower_bound: :math:`f_*`, a lower bound of the loss.
        weight_decay: :math:`\lambda` (applied in closed form).
        adapt_lower_bound: estimate :math:`f_*` online (MoMo*).

    Returns:
        State ``MomoState``. Requires ``params`` and ``value``.
    """

    def init_fn(params):
        dtype = tree_dtype(params, 'lowest')
        return MomoState(tree_zeros_like(params), jnp.zeros([], dtype=dtype),
                         jnp.zeros([], dtype=dtype), jnp.array(lower_bound, dtype=dtype),
                         jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None, *, value, **extra_args):
        del extra_args
        require_params(params, 'momo')
        _check_value(value, 'momo')
        bt = jnp.where(state.count == 0, 0.0, beta)
        barf = bt * state.barf + (1 - bt) * jnp.asarray(value, dtype=state.barf.dtype)
        exp_avg = tree_util.tree_map(lambda m, g: bt * m + (1 - bt) * g, state.exp_avg, updates)
        gamma = bt * state.gamma + (1 - bt) * tree_vdot(updates, params)
        sq_norm = tree_norm(exp_avg, squared=True)
        iprod = tree_vdot(exp_avg, params)
        alpha = learning_rate(state.count) if callable(learning_rate) else learning_rate
        shrink = 1 + alpha * weight_decay
        if adapt_lower_bound:
            cap = shrink * (barf - gamma) + iprod
            lb = lax.cond(cap < shrink * state.lb,
                          lambda: jnp.maximum(cap / (2 * shrink), lower_bound),
                          lambda: state.lb)
        else:
            lb = state.lb
        t1 = jnp.maximum(shrink * (barf - lb - gamma) + iprod, 0.0) / sq_norm
        t1 = jnp.where(sq_norm <= _TINY, 0.0, t1)
        tau = jnp.minimum(alpha, t1)
        step = tree_util.tree_map(lambda m, p: -(alpha * weight_decay) / shrink * p - tau * m,
                                  exp_avg, params)
        new_lb = (jnp.maximum(barf + iprod - gamma - 0.5 * tau * sq_norm, lower_bound)
                  if adapt_lower_bound else state.lb)
        return step, MomoState(exp_avg=exp_avg, barf=barf, gamma=gamma, lb=new_lb,
                               count=_numerics.safe_increment(state.count))

    return GradientTransformationExtraArgs(init_fn, update_fn)


class MomoAdamState(NamedTuple):
    """State of :func:`momo_adam`: :class:`MomoState` plus the second moment ``exp_avg_sq``."""
    exp_avg: Updates
    exp_avg_sq: Updates
    barf: Any
    gamma: Any
    lb: Any
    count: Any


def momo_adam(learning_rate: ScalarOrSchedule = 1e-2, b1: Any = 0.9, b2: Any = 0.999,
              eps: Any = 1e-8, lower_bound: Any = 0.0, weight_decay: Any = 0.0,
              adapt_lower_bound: bool = False) -> GradientTransformationExtraArgs:
    r"""MoMo-Adam: the MoMo step size in Adam's preconditioned geometry
    (:math:`D_t = \epsilon + \sqrt{v_t/(1-\beta_2^t)}`), with bias corrections.

    Returns:
        State ``MomoAdamState``. Requires ``params`` and ``value``.
    """

    def init_fn(params):
        dtype = tree_dtype(params, 'lowest')
        return MomoAdamState(tree_zeros_like(params), tree_zeros_like(params),
                             jnp.zeros([], dtype=dtype), jnp.zeros([], dtype=dtype),
                             jnp.array(lower_bound, dtype=dtype), jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None, *, value, **extra_args):
        del extra_args
        require_params(params, 'momo_adam')
        _check_value(value, 'momo_adam')
        count_inc = _numerics.safe_increment(state.count)
        barf = b1 * state.barf + (1 - b1) * jnp.asarray(value, dtype=state.barf.dtype)
        exp_avg = tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.exp_avg, updates)
        exp_avg_sq = tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g,
                                        state.exp_avg_sq, updates)
        bc2 = jnp.asarray(1 - b2 ** count_inc, dtype=barf.dtype)
        precond = tree_util.tree_map(lambda v: eps + jnp.sqrt(v / bc2), exp_avg_sq)
        sq_norm = tree_vdot(exp_avg, tree_util.tree_map(lambda m, d: m / d, exp_avg, precond))
        gamma = b1 * state.gamma + (1 - b1) * tree_vdot(updates, params)
        iprod = tree_vdot(exp_avg, params)
        alpha = learning_rate(state.count) if callable(learning_rate) else learning_rate
        bc1 = jnp.asarray(1 - b1 ** count_inc, dtype=barf.dtype)
        shrink = 1 + alpha * weight_decay
        if adapt_lower_bound:
            cap = shrink * (barf - gamma) + iprod
            lb = jnp.where(cap < shrink * bc1 * state.lb,
                           jnp.maximum(cap / (2 * bc1 * shrink), lower_bound), state.lb)
        else:
            lb = state.lb
        t1 = jnp.maximum(shrink * (barf - bc1 * lb - gamma) + iprod, 0.0) / sq_norm
        t1 = jnp.where(sq_norm <= _TINY, 0.0, t1)
        tau = jnp.minimum(alpha / bc1, t1)
        step = tree_util.tree_map(
            lambda m, d, p: -(alpha * weight_decay) / shrink * p - tau * m / d,
            exp_avg, precond, params)
        new_lb = (jnp.maximum((barf + iprod - gamma - 0.5 * tau * sq_norm) / bc1, lower_bound)
                  if adapt_lower_bound else state.lb)
        return step, MomoAdamState(exp_avg=exp_avg, exp_avg_sq=exp_avg_sq, barf=barf,
                                   gamma=gamma, lb=new_lb, count=count_inc)

    return GradientTransformationExtraArgs(init_fn, update_fn)

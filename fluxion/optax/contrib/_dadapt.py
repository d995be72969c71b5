r"""Learning-rate-free Adam variants that estimate the distance to the solution.

D-Adaptation (Defazio & Mishchenko, ICML 2023, arXiv:2301.07733) and Prodigy
(Mishchenko & Defazio, 2023, arXiv:2306.06101): the step size is
:math:`d_t\,\eta_t`, where the estimate :math:`d_t` of :math:`\|x_0 - x_*\|`
grows monotonically from ``estim_lr0``.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import fluxion.numpy as jnp
from fluxion import tree_util

from .. import _numerics
from .._base import GradientTransformationExtraArgs, ScalarOrSchedule, Updates, require_params
from .._tree_math import tree_dtype, tree_sum, tree_vdot, tree_zeros_like


class DAdaptAdamWState(NamedTuple):
    """State of :func:`dadapt_adamw`."""
    exp_avg: Updates
    exp_avg_sq: Updates
    grad_sum: Updates
    estim_lr: Any
    numerator_weighted: Any
    count: Any


def dadapt_adamw(learning_rate: ScalarOrSchedule = 1.0, betas: tuple = (0.9, 0.999),
                 eps: Any = 1e-8, estim_lr0: Any = 1e-6, weight_decay: Any = 0.0
                 ) -> GradientTransformationExtraArgs:
    r"""D-Adapted AdamW (Defazio & Mishchenko 2023, Algorithm 4).

    ``learning_rate`` multiplies the adapted step (keep it at 1, or use a
    schedule). Weight decay is decoupled and scaled by the adapted step.

    Returns:
        State ``DAdaptAdamWState``. Requires ``params``.
    """
    beta1, beta2 = betas

    def init_fn(params):
        dtype = tree_dtype(params, 'lowest')
        return DAdaptAdamWState(tree_zeros_like(params), tree_zeros_like(params),
                                tree_zeros_like(params), jnp.asarray(estim_lr0, dtype=dtype),
                                jnp.zeros([], dtype=dtype), jnp.zeros([], jnp.int32))

    def update_fn(updates, state, params=None, **extra_args):
        del extra_args
        require_params(params, 'dadapt_adamw')
        sb2 = beta2 ** 0.5
        sched = learning_rate(state.count) if callable(learning_rate) else learning_rate
        count_inc = _numerics.safe_increment(state.count)
        bias = (1 - beta2 ** count_inc) ** 0.5 / (1 - beta1 ** count_inc)
        dlr = (state.estim_lr * sched * bias).astype(state.numerator_weighted.dtype)
        s_weighted = tree_util.tree_map(lambda s, v: s / (jnp.sqrt(v) + eps),
                                        state.grad_sum, state.exp_avg_sq)
        numerator_acc = tree_vdot(updates, s_weighted)
        exp_avg = tree_util.tree_map(lambda m, g: beta1 * m + (1 - beta1) * dlr * g,
                                     state.exp_avg, updates)
        exp_avg_sq = tree_util.tree_map(lambda v, g: beta2 * v + (1 - beta2) * g * g,
                                        state.exp_avg_sq, updates)
        grad_sum = tree_util.tree_map(lambda s, g: sb2 * s + (1 - sb2) * dlr * g,
                                      state.grad_sum, updates)
        grad_sum_l1 = tree_sum(tree_util.tree_map(jnp.abs, grad_sum))
        numerator = sb2 * state.numerator_weighted + (1 - sb2) * dlr * numerator_acc
        estim_lr = jnp.maximum(state.estim_lr, numerator / ((1 - sb2) * grad_sum_l1))
        step = tree_util.tree_map(
            lambda m, v, p: -weight_decay * dlr * p - m / (jnp.sqrt(v) + eps),
            exp_avg, exp_avg_sq, params)
        return step, DAdaptAdamWState(exp_avg, exp_avg_sq, grad_sum, estim_lr, numerator,
                                      count_inc)

    return GradientTransformationExtraArgs(init_fn, update_fn)


class ProdigyState(NamedTuple):
    """State of :func:`prodigy`."""
    exp_avg: Updates
    exp_avg_sq: Updates
    grad_sum: Updates
    params0: Updates
    estim_lr: Any
    numerator_weighted: Any
    count: Any


def prodigy(learning_rate: ScalarOrSchedule = 1.0, betas: tuple = (0.9, 0.999),
            beta3: Optional[Any] = None, eps: Any = 1e-8, estim_lr0: Any = 1e-6,
            estim_lr_coef: Any = 1.0, weight_decay: Any = 0.0, safeguard_warmup: bool = False
            ) -> GradientTransformationExtraArgs:
    r"""Prodigy (Mishchenko & Defazio 2023, Algorithm 4 in its Adam form).

    The gradients are scaled by :math:`d_t` before Adam's moments; :math:`d_t`
    is the running max of ``estim_lr_coef`` times
    :math:`\sum \lambda_i d_i \langle g_i, x_0 - x_i\rangle / \|\sum \lambda_i d_i g_i\|_1`
    (EMAs with ``beta3``, default :math:`\sqrt{\beta_2}`). The returned update
    already includes the descent sign and the step size.

    Returns:
        State ``ProdigyState``. Requires ``params``.
    """
    beta1, beta2 = betas
    if beta3 is None:
        beta3 = beta2 ** 0.5

    def init_fn(params):
        dtype = tree_dtype(params, 'lowest')
        return ProdigyState(tree_zeros_like(params), tree_zeros_like(params),
                            tree_zeros_like(params), params, jnp.asarray(estim_lr0, dtype=dtype),
                            jnp.zeros((), dtype=dtype), jnp.zeros((), jnp.int32))

    def update_fn(updates, state, params=None, **extra_args):
        del extra_args
        require_params(params, 'prodigy')
        count_inc = _numerics.safe_increment(state.count)
        sched = learning_rate(state.count) if callable(learning_rate) else learning_rate
        d = state.estim_lr
        bias = (1 - beta2 ** count_inc) ** 0.5 / (1 - beta1 ** count_inc)
        dlr = jnp.asarray(d * sched * bias, dtype=d.dtype)
        dg = tree_util.tree_map(lambda g: d * g, updates)
        numerator_acc = tree_vdot(updates, tree_util.tree_map(lambda p0, p: p0 - p,
                                                              state.params0, params))
        exp_avg = tree_util.tree_map(lambda m, x: beta1 * m + (1 - beta1) * x, state.exp_avg, dg)
        exp_avg_sq = tree_util.tree_map(lambda v, x: beta2 * v + (1 - beta2) * x * x,
                                        state.exp_avg_sq, dg)
        sum_weight = d if safeguard_warmup else dlr
        grad_sum = tree_util.tree_map(lambda s, x: beta3 * s + sum_weight * x / estim_lr0,
                                      state.grad_sum, dg)
        numerator = beta3 * state.numerator_weighted + d / estim_lr0 * dlr * numerator_acc
        denominator = tree_sum(tree_util.tree_map(jnp.abs, grad_sum))
        estim_lr = jnp.maximum(d, estim_lr_coef * numerator / denominator)
        step = tree_util.tree_map(
            lambda m, v, p: -weight_decay * dlr * p - dlr * m / (jnp.sqrt(v) + estim_lr * eps),
            exp_avg, exp_avg_sq, params)
        return step, ProdigyState(exp_avg, exp_avg_sq, grad_sum, state.params0, estim_lr,
                                  numerator, count_inc)

    return GradientTransformationExtraArgs(init_fn, update_fn)

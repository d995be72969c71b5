r"""ACProp (Zhuang et al., "Momentum Centering and Asynchronous Update for
Adaptive Gradient Methods", NeurIPS 2021, arXiv:2110.05454)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import tree_util

from .. import _numerics
from .._base import GradientTransformation, MaskOrFn, ScalarOrSchedule
from .._combine import chain
from .._moments import ScaleByBeliefState
from .._transform import add_decayed_weights, scale_by_learning_rate
from .._tree_math import (tree_bias_correction, tree_update_moment,
                          tree_update_moment_per_elem_norm, tree_zeros_like)


def scale_by_acprop(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-16, eps_root: Any = 1e-16
                    ) -> GradientTransformation:
    r"""Asynchronous centering: the *current* gradient is divided by the root of
    the *previous* belief variance :math:`s_{t-1}` (EMA of :math:`(g - m)^2`,
    bias corrected; 1 at the first step), decoupling numerator and denominator.

    Returns:
        State ``ScaleByBeliefState(count, mu, nu)`` (shared with AdaBelief).
    """

    def init_fn(params):
        return ScaleByBeliefState(count=jnp.zeros([], jnp.int32), mu=tree_zeros_like(params),
                                  nu=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        mu = tree_update_moment(updates, state.mu, b1, 1)
        error = tree_util.tree_map(lambda g, m: g - m, updates, state.mu)
        nu = tree_update_moment_per_elem_norm(error, state.nu, b2, 2)
        nu = tree_util.tree_map(lambda v: v + eps_root, nu)
        count_inc = _numerics.safe_increment(state.count)
        first = state.count == 0
        t = jnp.where(first, count_inc, state.count)
        nu_hat = tree_util.tree_map(lambda x: jnp.where(first, 1, x),
                                    tree_bias_correction(state.nu, b2, t))
        out = tree_util.tree_map(lambda g, v: g / (jnp.sqrt(v) + eps), updates, nu_hat)
        return out, ScaleByBeliefState(count=count_inc, mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)


def acprop(learning_rate: ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-16,
           eps_root: Any = 1e-16, weight_decay: Any = 0.0, mask: MaskOrFn = None
           ) -> GradientTransformation:
    """ACProp: ``chain(scale_by_acprop, add_decayed_weights, scale_by_learning_rate)``."""
    return chain(scale_by_acprop(b1=b1, b2=b2, eps=eps, eps_root=eps_root),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))

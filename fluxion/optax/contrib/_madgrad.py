r"""MADGRAD (Defazio & Jelassi, "Adaptivity without Compromise: A Momentumized,
Adaptive, Dual Averaged Gradient Method", JMLR 2022, arXiv:2101.11075)."""

from __future__ import annotations

from typing import Any, NamedTuple

import fluxion.numpy as jnp
from fluxion import tree_util

from .. import _numerics
from .._base import GradientTransformation, ScalarOrSchedule, Updates, require_params
from .._combine import chain
from .._transform import add_decayed_weights
from .._tree_math import tree_zeros_like


class MadgradState(NamedTuple):
    """State of MADGRAD: ``count``, weighted sums of squared gradients and of
    gradients (``s``), and the initial point ``x0``."""
    count: Any
    grad_sum_sq: Updates
    s: Updates
    x0: Any


def scale_by_madgrad(learning_rate: ScalarOrSchedule, momentum: float = 0.9, eps: float = 1e-6
                     ) -> GradientTransformation:
    r"""Dual averaging with cube-root scaling: with :math:`\lambda_k = (\eta + \epsilon)\sqrt{k+1}`,
    :math:`v_k = \sum \lambda_i g_i^2`, :math:`s_k = \sum \lambda_i g_i`,
    :math:`z = x_0 - s_k/(\sqrt[3]{v_k} + \epsilon)` and the new point
    :math:`(1-c) z + c\,x_k` (:math:`c` = ``momentum``). Returns the difference
    to the current params (already a descent step).

    Returns:
        State ``MadgradState``. Requires ``params``.
    """

    def init_fn(params):
        return MadgradState(count=jnp.zeros([], jnp.int32), grad_sum_sq=tree_zeros_like(params),
                            s=tree_zeros_like(params), x0=params)

    def update_fn(updates, state, params=None):
        require_params(params, 'scale_by_madgrad')
        lr = learning_rate(state.count) if callable(learning_rate) else learning_rate
        lamb = (lr + eps) * jnp.sqrt(state.count + 1)
        grad_sum_sq = tree_util.tree_map(lambda v, g: v + (lamb * g ** 2).astype(g.dtype),
                                         state.grad_sum_sq, updates)
        s = tree_util.tree_map(lambda si, g: si + (lamb * g).astype(g.dtype), state.s, updates)
        z = tree_util.tree_map(lambda x0, si, v: x0 - si / (jnp.cbrt(v) + eps),
                               state.x0, s, grad_sum_sq)
        out = tree_util.tree_map(lambda zi, x: (1 - momentum) * zi + momentum * x - x, z, params)
        return out, MadgradState(count=_numerics.safe_increment(state.count),
                                 grad_sum_sq=grad_sum_sq, s=s, x0=state.x0)

    return GradientTransformation(init_fn, update_fn)


def madgrad(learning_rate: ScalarOrSchedule, momentum: float = 0.9, weight_decay: float = 0.0,
            eps: float = 1e-6) -> GradientTransformation:
    """MADGRAD with L2 weight decay added to the gradient first."""
    return chain(add_decayed_weights(weight_decay),
                 scale_by_madgrad(learning_rate=learning_rate, momentum=momentum, eps=eps))

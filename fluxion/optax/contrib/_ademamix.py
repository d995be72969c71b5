r"""AdEMAMix (Pagliardini, Ablin & Grangier, "The AdEMAMix Optimizer: Better,
Faster, Older", 2024, arXiv:2409.03152) and its simplified form.

Adam's numerator is a mixture of a fast EMA :math:`m_1` (decay :math:`\beta_1`)
and a slow EMA :math:`m_2` (decay :math:`\beta_3`), weighted by :math:`\alpha`.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import fluxion.numpy as jnp
from fluxion import tree_util

from .. import _numerics
from .._base import GradientTransformation, MaskOrFn, ScalarOrSchedule, Updates
from .._combine import chain
from .._transform import add_decayed_weights, scale_by_learning_rate
from .._tree_math import (tree_add_scale, tree_bias_correction, tree_div, tree_mul, tree_sub,
                          tree_update_moment, tree_update_moment_per_elem_norm, tree_zeros_like)


class ScaleByAdemamixState(NamedTuple):
    """State of AdEMAMix: ``count``, ``count_m2`` (for schedules of b3/alpha), ``m1``, ``m2``, ``nu``."""
    count: Any
    count_m2: Any
    m1: Updates
    m2: Updates
    nu: Updates


def scale_by_ademamix(b1: Any = 0.9, b2: Any = 0.999, b3: ScalarOrSchedule = 0.9999,
                      alpha: ScalarOrSchedule = 6.0, eps: Any = 1e-8, eps_root: Any = 0.0,
                      mu_dtype: Optional[Any] = None) -> GradientTransformation:
    r""":math:`u_t = (\hat m_{1,t} + \alpha m_{2,t})/(\sqrt{\hat\nu_t + \epsilon_{root}} + \epsilon)`
    (the slow EMA :math:`m_2` is not bias corrected). ``b3`` and ``alpha`` may
    be schedules (the paper warms them up).

    Returns:
        State ``ScaleByAdemamixState``.
    """
    mu_dtype = _numerics.canonicalize_dtype(mu_dtype)

    def init_fn(params):
        return ScaleByAdemamixState(count=jnp.zeros([], jnp.int32),
                                    count_m2=jnp.zeros([], jnp.int32),
                                    m1=tree_zeros_like(params, dtype=mu_dtype),
                                    m2=tree_zeros_like(params, dtype=mu_dtype),
                                    nu=tree_zeros_like(params, dtype=mu_dtype))

    def update_fn(updates, state, params=None):
        del params
        c_b3 = b3(state.count_m2) if callable(b3) else b3
        c_alpha = alpha(state.count_m2) if callable(alpha) else alpha
        m1 = tree_update_moment(updates, state.m1, b1, 1)
        m2 = tree_update_moment(updates, state.m2, c_b3, 1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = _numerics.safe_increment(state.count)
        m1_hat = tree_bias_correction(m1, b1, count_inc)
        nu_hat = tree_bias_correction(nu, b2, count_inc)
        out = tree_util.tree_map(
            lambda a, b, v: (a + c_alpha * b) / (jnp.sqrt(v + eps_root) + eps), m1_hat, m2, nu_hat)
        return out, ScaleByAdemamixState(count=count_inc,
                                         count_m2=_numerics.safe_increment(state.count_m2),
                                         m1=m1, m2=m2, nu=nu)

    return GradientTransformation(init_fn, update_fn)


def ademamix(learning_rate: ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.999,
             b3: ScalarOrSchedule = 0.9999, alpha: ScalarOrSchedule = 5.0, eps: Any = 1e-8,
             eps_root: Any = 0.0, mu_dtype: Optional[Any] = None, weight_decay: Any = 0.0,
             mask: MaskOrFn = None) -> GradientTransformation:
    """AdEMAMix: ``chain(scale_by_ademamix, add_decayed_weights, scale_by_learning_rate)``.

    Note the default ``alpha`` is 5 here and 6 in :func:`scale_by_ademamix` (as in optax).
    """
    return chain(scale_by_ademamix(b1=b1, b2=b2, b3=b3, alpha=alpha, eps=eps, eps_root=eps_root,
                                   mu_dtype=mu_dtype),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))


class ScaleBySimplifiedAdEMAMixState(NamedTuple):
    """State of simplified AdEMAMix: step ``t``, accumulator ``m``, second moment ``n``."""
    t: Any
    m: Updates
    n: Updates


def scale_by_simplified_ademamix(b1: Any = 0.99, b2: Any = 0.95, alpha: ScalarOrSchedule = 0.0,
                                 eps: Any = 1e-8, eps_root: Any = 0.0) -> GradientTransformation:
    r"""Simplified AdEMAMix (Morwani et al. 2024, arXiv:2502.02431):
    :math:`m_t = \beta_1 m_{t-1} + g_t` (undamped), :math:`n_t` the EMA of
    :math:`g^2` and :math:`u_t = (m_t + \alpha g_t)/(\sqrt{\hat n_t + \epsilon_{root}} + \epsilon)`.

    Returns:
        State ``ScaleBySimplifiedAdEMAMixState(t, m, n)``.
    """

    def init_fn(params):
        return ScaleBySimplifiedAdEMAMixState(t=jnp.array(0, jnp.int32), m=tree_zeros_like(params),
                                              n=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        c_alpha = alpha(state.t) if callable(alpha) else alpha
        m = tree_add_scale(updates, b1, state.m)
        sq = tree_mul(updates, updates)
        n = tree_add_scale(sq, b2, tree_sub(state.n, sq))
        t = _numerics.safe_increment(state.t)
        n_hat = tree_bias_correction(n, b2, t)
        out = tree_div(tree_add_scale(m, c_alpha, updates),
                       tree_util.tree_map(lambda x: jnp.sqrt(x + eps_root) + eps, n_hat))
        return out, ScaleBySimplifiedAdEMAMixState(t=t, m=m, n=n)

    return GradientTransformation(init_fn, update_fn)


def simplified_ademamix(learning_rate: ScalarOrSchedule, b1: Any = 0.99, b2: Any = 0.95,
                        alpha: ScalarOrSchedule = 0.0, eps: Any = 1e-8, eps_root: Any = 0.0,
                        weight_decay: Any = 0.0, mask: MaskOrFn = None) -> GradientTransformation:
    """Simplified AdEMAMix with decoupled weight decay and the learning rate."""
    return chain(scale_by_simplified_ademamix(b1=b1, b2=b2, alpha=alpha, eps=eps,
                                              eps_root=eps_root),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))

r"""ADOPT (Taniguchi et al., "ADOPT: Modified Adam Can Converge with Any
:math:`\beta_2` with the Optimal Rate", NeurIPS 2024, arXiv:2411.02853)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import fluxion.numpy as jnp
from fluxion import tree_util

from .. import _numerics
from .._base import GradientTransformation, GradientTransformationExtraArgs, ScalarOrSchedule
from .._combine import chain
from .._transform import ScaleByAdamState, scale_by_learning_rate
from .._tree_math import (tree_cast, tree_update_moment, tree_update_moment_per_elem_norm,
                          tree_zeros_like)


def _quarter_power(count: Any) -> Any:
    return count ** 0.25


def scale_by_adopt(b1: Any = 0.9, b2: Any = 0.9999, eps: Any = 1e-6,
                   mu_dtype: Optional[Any] = None, *, nesterov: bool = False,
                   use_clipping: bool = True,
                   clip_value_fn: Callable[[Any], Any] = _quarter_power
                   ) -> GradientTransformation:
    r"""ADOPT: normalise the gradient by the *previous* second moment, then
    apply momentum: :math:`m_t = \beta_1 m_{t-1} + (1-\beta_1)\,
    \mathrm{clip}(g_t/\max(\sqrt{v_{t-1}}, \epsilon), c_t)`,
    :math:`v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2`. At the first step
    :math:`v_1 = g_1^2` and the momentum update is skipped (:math:`m_1 = 0`).
    The clip bound :math:`c_t` is ``clip_value_fn(t - 1)`` (default
    :math:`(t-1)^{1/4}`, as in the paper's stabilised variant).

    Returns:
        State ``ScaleByAdamState(count, mu, nu)``.
    """
    mu_dtype = _numerics.canonicalize_dtype(mu_dtype)

    def init_fn(params):
        return ScaleByAdamState(count=jnp.zeros([], jnp.int32),
                                mu=tree_zeros_like(params, dtype=mu_dtype),
                                nu=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        started = state.count > 0
        b2_ = jnp.where(started, b2, 0)
        b1_ = jnp.where(started, b1, 1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, b2_, 2)
        if use_clipping:
            bound = clip_value_fn(state.count)
            normed = tree_util.tree_map(
                lambda g, v: jnp.clip(g / jnp.maximum(jnp.sqrt(v), eps), -bound, bound),
                updates, state.nu)
        else:
            normed = tree_util.tree_map(lambda g, v: g / jnp.maximum(jnp.sqrt(v), eps),
                                        updates, state.nu)
        mu = tree_update_moment(normed, state.mu, b1_, 1)
        out = tree_update_moment(normed, mu, b1_, 1) if nesterov else mu
        return out, ScaleByAdamState(count=_numerics.safe_increment(state.count),
                                     mu=tree_cast(mu, mu_dtype), nu=nu)

    return GradientTransformation(init_fn, update_fn)


def adopt(learning_rate: ScalarOrSchedule, b1: Any = 0.9, b2: Any = 0.9999, eps: Any = 1e-6,
          mu_dtype: Optional[Any] = None, *, nesterov: bool = False, use_clipping: bool = True,
          clip_value_fn: Callable[[Any], Any] = _quarter_power
          ) -> GradientTransformationExtraArgs:
    """ADOPT: ``chain(scale_by_adopt, scale_by_learning_rate)``."""
    return chain(scale_by_adopt(b1=b1, b2=b2, eps=eps, mu_dtype=mu_dtype, nesterov=nesterov,
                                use_clipping=use_clipping, clip_value_fn=clip_value_fn),
                 scale_by_learning_rate(learning_rate))

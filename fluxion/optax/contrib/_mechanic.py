r"""Mechanic: a learning-rate tuner wrapping any optimizer (Cutkosky, Defazio &
Mehta, "Mechanic: A Learning Rate Tuner", NeurIPS 2023, arXiv:2306.00144,
Algorithm 1)."""

from __future__ import annotations

from typing import Any, NamedTuple

import fluxion.numpy as jnp
from fluxion import lax, tree_util

from .. import _numerics
from .._base import (GradientTransformation, GradientTransformationExtraArgs, OptState, Updates,
                     require_params, with_extra_args_support)
from .._tree_math import tree_dtype, tree_norm, tree_vdot


class MechanicState(NamedTuple):
    """State of :func:`mechanize`: the base state, ``count``, the per-beta
    statistics ``r, m, v, s`` (shape ``(num_betas,)``) and the reference point ``x0``."""
    base_optimizer_state: OptState
    count: Any
    r: Any
    m: Any
    v: Any
    s: Any
    x0: Updates


def mechanize(base_optimizer: GradientTransformation, weight_decay: Any = 0.01,
              eps: Any = 1e-8, s_init: Any = 1e-6, num_betas: int = 6
              ) -> GradientTransformationExtraArgs:
    r"""Scales the base optimizer's updates by a learned factor :math:`s = \sum_j s_j`.

    The base updates define a direction :math:`\Delta`; the parameters are
    :math:`x_0 + s\Delta` with :math:`s_j` chosen by coin-betting learners
    with decays :math:`\beta_j = 1 - 10^{-j}`, :math:`j = 1..` ``num_betas``.

    Returns:
        State ``MechanicState``. Requires ``params``.
    """
    base_optimizer = with_extra_args_support(base_optimizer)

    def init_fn(params):
        dtype = tree_dtype(params, 'lowest')
        zeros = jnp.zeros([num_betas], dtype=dtype)
        return MechanicState(base_optimizer_state=base_optimizer.init(params),
                             count=jnp.zeros([], jnp.int32), r=zeros, m=zeros, v=zeros,
                             s=jnp.ones([num_betas], dtype=dtype) * s_init, x0=params)

    def update_fn(updates, state, params=None, **extra_args):
        require_params(params, 'mechanize')
        base_updates, base_state = base_optimizer.update(updates, state.base_optimizer_state,
                                                         params, **extra_args)
        x0 = lax.cond(state.count == 0, lambda: params, lambda: state.x0)
        s_sum = jnp.sum(state.s)
        grad_norm = tree_norm(updates)
        param_norm = tree_norm(params)
        grads = tree_util.tree_map(
            lambda g, p: g + weight_decay * s_sum * grad_norm / (param_norm + eps) * p,
            updates, params)
        delta_prev = tree_util.tree_map(lambda x, x0i: (x0i - x) / (s_sum + eps), params, x0)
        delta = tree_util.tree_map(lambda d, u: d - u, delta_prev, base_updates)
        h = tree_vdot(grads, delta_prev)
        clipped_h = jnp.clip(jnp.ones_like(state.m) * h, -state.m, state.m)
        betas = jnp.array([1.0 - 0.1 ** j for j in range(1, num_betas + 1)], dtype=state.s.dtype)
        m = jnp.maximum(betas * state.m, jnp.abs(h) + eps)
        v = betas ** 2 * state.v + h ** 2
        r = betas * state.r + clipped_h * state.s
        wealth = s_init / num_betas * m + jnp.maximum(0.0, r)
        s = wealth / (jnp.sqrt(v) + eps)
        new_params = tree_util.tree_map(lambda x0i, d: x0i - jnp.sum(s) * d, x0, delta)
        out = tree_util.tree_map(lambda n, p: n - p, new_params, params)
        return out, MechanicState(base_optimizer_state=base_state,
                                  count=_numerics.safe_increment(state.count), r=r, m=m, v=v,
                                  s=s, x0=x0)

    return GradientTransformationExtraArgs(init_fn, update_fn)

r"""Parameter-free step sizes from distances travelled: DoG and DoWG.

DoG: Ivgi, Hinder & Carmon, "DoG is SGD's Best Friend", ICML 2023
(arXiv:2302.12022). DoWG: Khaled, Mishchenko & Jin, "DoWG Unleashed",
NeurIPS 2023 (arXiv:2305.16284). Both use global (all-parameter) norms.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, Optional

import fluxion.numpy as jnp

from .._base import (GradientTransformation, MaskOrFn, ScalarOrSchedule, identity,
                     require_params)
from .._combine import chain
from .._transform import add_decayed_weights, scale_by_learning_rate
from .._tree_math import tree_dtype, tree_norm, tree_scale, tree_sub


class DoGState(NamedTuple):
    """State of DoG: first-step flag, initial params, max distance, sum of squared grad norms."""
    is_init_step: Any
    init_params: Any
    max_dist: Any
    sum_sq_norm_grads: Any


def scale_by_dog(init_step: tuple, eps: Any = 1e-8) -> GradientTransformation:
    r"""DoG step size :math:`\eta_t = \bar r_t / \sqrt{\sum_{i\le t}\|g_i\|^2 + \epsilon}`,
    :math:`\bar r_t = \max(r_\epsilon, \max_{i \le t}\|x_i - x_0\|)`.

    Args:
        init_step: ``('distance', r_eps)``, ``('heuristic', c)`` for
            :math:`r_\epsilon = c(1+\|x_0\|)`, or ``('learning_rate', eta0)``
            to use ``eta0`` at the first step (and :math:`r_\epsilon = 0`).
        eps: stabiliser in the root.

    Returns:
        State ``DoGState``. Requires ``params``.

    Raises:
        ValueError: at init, for an unknown ``init_step`` kind.
    """
    kind, init_value = init_step

    def init_fn(params):
        dtype = tree_dtype(params, 'lowest')
        if kind == 'distance':
            r_eps = init_value
        elif kind == 'heuristic':
            r_eps = init_value * (1 + tree_norm(params))
        elif kind == 'learning_rate':
            r_eps = 0.0
        else:
            raise ValueError(f"scale_by_dog: unknown init_step kind {kind!r}; expected "
                             "'distance', 'learning_rate' or 'heuristic'.")
        return DoGState(is_init_step=jnp.asarray(True), init_params=params,
                        max_dist=jnp.asarray(r_eps, dtype=dtype),
                        sum_sq_norm_grads=jnp.asarray(0.0, dtype=dtype))

    def update_fn(updates, state, params=None):
        require_params(params, 'scale_by_dog')
        max_dist = jnp.maximum(state.max_dist, tree_norm(tree_sub(state.init_params, params)))
        sum_sq = state.sum_sq_norm_grads + tree_norm(updates, squared=True)
        lr = max_dist / jnp.sqrt(sum_sq + eps)
        if kind == 'learning_rate':
            lr = jnp.where(state.is_init_step, init_value, lr)
        return tree_scale(lr, updates), DoGState(is_init_step=jnp.asarray(False),
                                                 init_params=state.init_params,
                                                 max_dist=max_dist, sum_sq_norm_grads=sum_sq)

    return GradientTransformation(init_fn, update_fn)


def dog(learning_rate: ScalarOrSchedule = 1.0,
        init_step: tuple[Literal['distance', 'learning_rate', 'heuristic'], Any] = (
            'heuristic', 1e-6),
        eps: Any = 1e-8, weight_decay: Optional[Any] = None, mask: MaskOrFn = None
        ) -> GradientTransformation:
    """DoG: ``chain(add_decayed_weights | identity, scale_by_dog, scale_by_learning_rate)``."""
    return chain(add_decayed_weights(weight_decay, mask) if weight_decay is not None
                 else identity(),
                 scale_by_dog(init_step, eps), scale_by_learning_rate(learning_rate))


class DoWGState(NamedTuple):
    """State of DoWG: initial params, weighted sum of squared grad norms, distance estimate."""
    init_params: Any
    weighted_sq_norm_grads: Any
    estim_sq_dist: Any


def scale_by_dowg(init_estim_sq_dist: Optional[Any] = None, eps: Any = 1e-4
                  ) -> GradientTransformation:
    r"""DoWG step size :math:`\eta_t = \bar r_t^2 / (\sqrt{\sum_i \bar r_i^2 \|g_i\|^2} + \epsilon)`
    with :math:`\bar r_t^2` the running max of :math:`\|x_t - x_0\|^2` (from
    ``init_estim_sq_dist``, default ``eps``).

    Returns:
        State ``DoWGState``. Requires ``params``.
    """

    def init_fn(params):
        dtype = tree_dtype(params, 'lowest')
        start = eps if init_estim_sq_dist is None else init_estim_sq_dist
        return DoWGState(init_params=params, estim_sq_dist=jnp.asarray(start, dtype=dtype),
                         weighted_sq_norm_grads=jnp.asarray(0.0, dtype=dtype))

    def update_fn(updates, state, params=None):
        require_params(params, 'scale_by_dowg')
        sq_dist = jnp.maximum(state.estim_sq_dist,
                              tree_norm(tree_sub(state.init_params, params), squared=True))
        weighted = sq_dist * tree_norm(updates, squared=True) + state.weighted_sq_norm_grads
        lr = sq_dist / (jnp.sqrt(weighted) + eps)
        return tree_scale(lr, updates), state._replace(estim_sq_dist=sq_dist,
                                                       weighted_sq_norm_grads=weighted)

    return GradientTransformation(init_fn, update_fn)


def dowg(learning_rate: ScalarOrSchedule = 1.0, init_estim_sq_dist: Optional[Any] = None,
         eps: Any = 1e-4, weight_decay: Optional[Any] = None, mask: MaskOrFn = None
         ) -> GradientTransformation:
    """DoWG: ``chain(add_decayed_weights | identity, scale_by_dowg, scale_by_learning_rate)``."""
    return chain(add_decayed_weights(weight_decay, mask) if weight_decay is not None
                 else identity(),
                 scale_by_dowg(init_estim_sq_dist, eps), scale_by_learning_rate(learning_rate))

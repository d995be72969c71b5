r"""Step-size rules that are not moment estimates.

Rprop, Polyak step sizes, optimistic gradients, DoG-style distance over
gradients, update-norm normalisation, gradient centralisation and
``apply_every``. State layouts are optax 0.2.x's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import fluxion.numpy as jnp
from fluxion import tree_util

from . import _numerics
from ._base import (GradientTransformation, GradientTransformationExtraArgs, Updates,
                    init_empty_state, require_params)
from ._tree_math import tree_cast, tree_full_like, tree_norm, tree_scale, tree_zeros_like


class ScaleByRpropState(NamedTuple):
    """State of Rprop: per-element ``step_sizes`` and the previous step ``prev_updates``."""
    step_sizes: Updates
    prev_updates: Updates


def scale_by_rprop(learning_rate: Any, eta_minus: Any = 0.5, eta_plus: Any = 1.2,
                   min_step_size: Any = 1e-6, max_step_size: Any = 50.0
                   ) -> GradientTransformation:
    r"""Resilient backpropagation (Riedmiller & Braun, ICNN 1993), the iRprop- variant.

    Each element keeps its own step size, multiplied by ``eta_plus`` when the
    gradient keeps its sign and by ``eta_minus`` when it flips (clipped to
    ``[min_step_size, max_step_size]``). The step is
    ``step_size * sign(g)``, or 0 right after a sign flip. The returned update
    has the *ascent* sign (chain with ``scale(-1)``, as :func:`rprop` does).

    Difference from optax 0.2.8: optax returns the step computed at the
    *previous* call (so its first update is all zeros and every update lags
    one step; google-deepmind/optax PR #1725). Here the current step is
    returned, as in the paper and ``torch.optim.Rprop``; the state is the same.

    Args:
        learning_rate: initial step size of every element.

    Returns:
        State ``ScaleByRpropState(step_sizes, prev_updates)``.
    """

    def init_fn(params):
        return ScaleByRpropState(step_sizes=tree_full_like(params, learning_rate),
                                 prev_updates=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        agreement = tree_util.tree_map(lambda g, p: g * p, updates, state.prev_updates)
        step_sizes = tree_util.tree_map(
            lambda s, size: jnp.where(
                s == 0, size,
                jnp.clip(size * jnp.where(s > 0, eta_plus, eta_minus), min_step_size,
                         max_step_size)),
            agreement, state.step_sizes)
        steps = tree_util.tree_map(
            lambda s, g, size: jnp.where(s < 0, jnp.zeros_like(g), size * jnp.sign(g)),
            agreement, updates, step_sizes)
        return steps, ScaleByRpropState(step_sizes=step_sizes, prev_updates=steps)

    return GradientTransformation(init_fn, update_fn)


def scale_by_polyak(f_min: Any = 0.0, max_learning_rate: Any = 1.0, eps: Any = 0.0,
                    variant: str = 'sps') -> GradientTransformationExtraArgs:
    r"""Polyak step size (Loizou et al., "Stochastic Polyak Step-size", AISTATS 2021).

    Multiplies the gradient by
    :math:`\min\big((f(\theta) - f^*) / (\|g\|^2 + \epsilon),\ \eta_{max}\big)`
    (0 when :math:`\|g\|^2 + \epsilon` is below float64 machine epsilon, as in optax).
    ``variant='sps+'`` clips the gap :math:`f - f^*` at 0 (Garrigos et al.
    2023). The loss value must be passed as ``update(..., value=loss)``.

    Returns:
        A stateless GradientTransformationExtraArgs.

    Raises:
        ValueError: for an unknown ``variant``; TypeError if ``value`` is missing.
    """
    if variant not in ('sps', 'sps+'):
        raise ValueError(f"scale_by_polyak: unknown variant={variant!r}; expected 'sps' "
                         "or 'sps+'.")

    def update_fn(updates, state, params=None, *, value, **extra_args):
        del params, extra_args
        grad_sq_norm = tree_norm(updates, squared=True)
        gap = jnp.asarray(value - f_min).astype(grad_sq_norm.dtype)
        if variant == 'sps+':
            gap = jnp.maximum(gap, 0.0)
        tiny = np.finfo(float).eps
        step = jnp.where(grad_sq_norm + eps <= tiny, jnp.asarray(0.0),
                         jnp.minimum(gap / (grad_sq_norm + eps), max_learning_rate))
        return tree_scale(step, updates), state

    return GradientTransformationExtraArgs(init_empty_state, update_fn)


class ScaleByOptimisticGradientState(NamedTuple):
    """State of the optimistic gradient: first-step flag and previous gradient."""
    is_initial_step: Any
    previous_gradient: Updates


def scale_by_optimistic_gradient(alpha: Any = 1.0, beta: Any = 1.0) -> GradientTransformation:
    r"""Optimistic gradient (Mokhtari, Ozdaglar & Pattathil, AISTATS 2020).

    :math:`u_t = (\alpha + \beta) g_t - \beta g_{t-1}`, with
    :math:`g_0 = g_1` so the first step is :math:`\alpha g_1`. Used for
    min-max games (optimistic gradient descent / OGDA).

    Returns:
        State ``ScaleByOptimisticGradientState(is_initial_step, previous_gradient)``.
    """

    def init_fn(params):
        return ScaleByOptimisticGradientState(is_initial_step=jnp.array(True),
                                              previous_gradient=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        new_updates = tree_util.tree_map(
            lambda g, prev: (alpha + beta) * g - beta * jnp.where(state.is_initial_step, g, prev),
            updates, state.previous_gradient)
        return new_updates, ScaleByOptimisticGradientState(is_initial_step=jnp.array(False),
                                                           previous_gradient=updates)

    return GradientTransformation(init_fn, update_fn)


class ScaleByDistanceOverGradientsState(NamedTuple):
    """State of layer-wise DoG: max distance, gradient sum of squares, initial params."""
    max_dist: Any
    grad_sum_of_squares: Any
    init_params: Any


def scale_by_distance_over_gradients(reps_rel: Any = 1e-6, eps: Any = 1e-8,
                                     param_dtype: Any = jnp.float32,
                                     global_scale: Any = 1.0) -> GradientTransformation:
    r"""Layer-wise "Distance over Gradients" (Ivgi, Hinder & Carmon, ICML 2023).

    For each leaf: :math:`\bar r_t = \max(\bar r_{t-1}, \|\theta_t - \theta_0\|)`
    (starting at ``reps_rel * (1 + ||theta_0||)``), :math:`G_t = G_{t-1} + \|g_t\|^2`,
    and :math:`u_t = s\,\bar r_t / \sqrt{G_t + \epsilon}\; g_t`. The update has the
    gradient's sign (chain with a negative scale for descent).

    Returns:
        State ``ScaleByDistanceOverGradientsState(max_dist, grad_sum_of_squares,
        init_params)``; ``grad_sum_of_squares`` leaves have shape ``(1,)`` as in
        optax. Requires ``params``.
    """

    def l2(x, y=0.0):
        return jnp.sqrt(jnp.sum(jnp.square(x - y)))

    def init_fn(params):
        return ScaleByDistanceOverGradientsState(
            max_dist=tree_util.tree_map(lambda x: reps_rel * (1 + l2(x)), params),
            grad_sum_of_squares=tree_util.tree_map(lambda x: jnp.zeros(1), params),
            init_params=tree_cast(params, param_dtype))

    def update_fn(updates, state, params=None):
        require_params(params, 'scale_by_distance_over_gradients')
        max_dist = tree_util.tree_map(lambda d, x, y: jnp.maximum(d, l2(x, y)),
                                      state.max_dist, params, state.init_params)
        g_sos = tree_util.tree_map(lambda s, g: s + jnp.sum(jnp.square(g)),
                                   state.grad_sum_of_squares, updates)
        updates = tree_util.tree_map(
            lambda g, d, s: global_scale * (d / jnp.sqrt(s + eps)) * g, updates, max_dist, g_sos)
        return updates, ScaleByDistanceOverGradientsState(max_dist, g_sos, state.init_params)

    return GradientTransformation(init_fn, update_fn)


def normalize_by_update_norm(scale_factor: Any = 1.0, eps: Any = 1e-6
                             ) -> GradientTransformation:
    r"""Divides all updates by their global norm: :math:`u \cdot s/(\|u\| + \epsilon)`.

    Returns:
        A stateless transformation.
    """

    def update_fn(updates, state, params=None):
        del params
        g_norm = (tree_norm(updates) + eps) / scale_factor
        return tree_util.tree_map(lambda g: g / g_norm, updates), state

    return GradientTransformation(init_empty_state, update_fn)


def centralize() -> GradientTransformation:
    """Gradient centralisation (Yong et al., ECCV 2020, arXiv:2004.01461).

    Subtracts from every leaf with ndim > 1 its mean over all axes except the
    first; vectors and scalars pass through.

    Returns:
        A stateless transformation.
    """

    def centre(g):
        if g.ndim > 1:
            return g - jnp.mean(g, axis=tuple(range(1, g.ndim)), keepdims=True)
        return g

    def update_fn(updates, state, params=None):
        del params
        return tree_util.tree_map(centre, updates), state

    return GradientTransformation(init_empty_state, update_fn)


class ApplyEvery(NamedTuple):
    """State of :func:`apply_every`: ``count`` (mod k) and the accumulator ``grad_acc``."""
    count: Any
    grad_acc: Updates


def apply_every(k: int = 1) -> GradientTransformation:
    """Accumulates updates and emits their sum every ``k`` steps (zeros otherwise).

    Superseded by :class:`MultiSteps`, which also skips the inner optimizer's
    state update in between; kept for optax compatibility.

    Returns:
        State ``ApplyEvery(count, grad_acc)``.
    """

    def init_fn(params):
        return ApplyEvery(count=jnp.zeros([], jnp.int32), grad_acc=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        c = state.count % k
        keep = c != 0
        grad_acc = tree_util.tree_map(lambda g, acc: keep * acc + g, updates, state.grad_acc)
        emit = c == k - 1
        updates = tree_util.tree_map(lambda acc: emit * acc, grad_acc)
        return updates, ApplyEvery(count=_numerics.safe_increment(state.count) % k,
                                   grad_acc=grad_acc)

    return GradientTransformation(init_fn, update_fn)

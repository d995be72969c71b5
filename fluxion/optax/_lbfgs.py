r"""L-BFGS: limited-memory quasi-Newton preconditioning (Nocedal 1980; Liu & Nocedal 1989).

The preconditioner applies the inverse-Hessian approximation built from the
last ``memory_size`` pairs :math:`s_k = \theta_{k+1} - \theta_k`,
:math:`y_k = g_{k+1} - g_k` with the two-loop recursion (Nocedal & Wright,
*Numerical Optimization*, Algorithm 7.4). The memory is a ring buffer of
stacked pytrees; the loops are ``lax.scan`` so the update is traceable.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Union

import fluxion.numpy as jnp
from fluxion import lax, tree_util

from . import _numerics
from ._base import (GradientTransformation, GradientTransformationExtraArgs, Params,
                    ScalarOrSchedule, identity, require_params)
from ._combine import chain
from ._linesearch import scale_by_zoom_linesearch
from ._transform import scale, scale_by_learning_rate
from ._tree_math import (tree_add_scale, tree_cast_like, tree_norm, tree_real, tree_scale,
                         tree_sub, tree_vdot, tree_zeros_like)


class ScaleByLBFGSState(NamedTuple):
    """State of :func:`scale_by_lbfgs`.

    Attributes:
        count: int32 number of updates so far.
        params, updates: parameters and gradient of the previous call.
        diff_params_memory, diff_updates_memory: ring buffers of :math:`s_k`
            and :math:`y_k` (each leaf stacked on a leading ``memory_size`` axis).
        weights_memory: :math:`\\rho_k = 1/\\langle y_k, s_k\\rangle` (0 if undefined).
    """
    count: Any
    params: Params
    updates: Params
    diff_params_memory: Any
    diff_updates_memory: Any
    weights_memory: Any


def _two_loop(updates, s_mem, y_mem, rhos, identity_scale, memory_idx):
    """Two-loop recursion: returns ``H_k @ updates`` for the stored pairs."""
    memory_size = rhos.shape[0]
    # Oldest-to-newest order of the ring buffer, starting at the slot to overwrite next.
    order = (memory_idx + jnp.arange(memory_size)) % memory_size

    def pick(tree, i):
        return tree_util.tree_map(lambda x: x[i], tree)

    def backward(vec, i):
        s_i, y_i = pick(s_mem, i), pick(y_mem, i)
        alpha = rhos[i] * tree_real(tree_vdot(s_i, vec))
        return tree_cast_like(tree_add_scale(vec, -alpha, y_i), vec), alpha

    vec, alphas = lax.scan(backward, updates, order, reverse=True)
    vec = tree_scale(identity_scale, vec)

    def forward(vec, i_alpha):
        i, alpha = i_alpha
        s_i, y_i = pick(s_mem, i), pick(y_mem, i)
        beta = rhos[i] * tree_real(tree_vdot(y_i, vec))
        return tree_cast_like(tree_add_scale(vec, alpha - beta, s_i), vec), beta

    vec, _ = lax.scan(forward, vec, (order, alphas))
    return vec


def scale_by_lbfgs(memory_size: int = 10, scale_init_precond: bool = True
                   ) -> GradientTransformation:
    r"""Preconditions updates with the L-BFGS inverse-Hessian approximation.

    Each call records the pair :math:`(s, y)` between the previous and current
    params/gradients, then returns :math:`H_k g_k` (two-loop recursion). With
    ``scale_init_precond`` the initial matrix is :math:`\gamma I`,
    :math:`\gamma = \langle s, y\rangle/\langle y, y\rangle` (Nocedal & Wright
    eq. 7.20), and at the first step :math:`\min(1, 1/\|g\|)`. The result is
    not negated: chain with a negative scale or a line search (see :func:`lbfgs`).

    Args:
        memory_size: number of stored pairs (>= 1).
        scale_init_precond: use the scaled initial matrix (else the identity).

    Returns:
        State ``ScaleByLBFGSState``. Requires ``params``.

    Raises:
        ValueError: if ``memory_size < 1``.
    """
    if memory_size < 1:
        raise ValueError(f'scale_by_lbfgs: memory_size must be >= 1, got {memory_size}.')

    def init_fn(params):
        stacked = tree_util.tree_map(
            lambda x: jnp.zeros((memory_size, *jnp.shape(x)), dtype=jnp.asarray(x).dtype), params)
        return ScaleByLBFGSState(count=jnp.asarray(0, dtype=jnp.int32),
                                 params=tree_zeros_like(params), updates=tree_zeros_like(params),
                                 diff_params_memory=stacked, diff_updates_memory=stacked,
                                 weights_memory=jnp.zeros(memory_size))

    def update_fn(updates, state, params=None):
        require_params(params, 'scale_by_lbfgs')
        memory_idx = state.count % memory_size
        prev_idx = (state.count - 1) % memory_size
        started = state.count > 0
        s = tree_sub(params, state.params)
        y = tree_sub(updates, state.updates)
        sy = tree_real(tree_vdot(y, s))
        rho = jnp.where(sy == 0.0, 0.0, 1.0 / sy)
        s, y, rho = tree_util.tree_map(lambda x: jnp.where(started, x, jnp.zeros_like(x)),
                                       (s, y, rho))
        s_mem, y_mem, rhos = tree_util.tree_map(
            lambda mem, new: mem.at[prev_idx].set(new),
            (state.diff_params_memory, state.diff_updates_memory, state.weights_memory),
            (s, y, rho))
        if scale_init_precond:
            yy = tree_norm(y, squared=True)
            gamma = jnp.where(yy > 0.0, tree_real(tree_vdot(y, s)) / yy, 1.0)
            first = jnp.minimum(1.0, 1.0 / tree_norm(lax.stop_gradient(updates)))
            gamma = jnp.where(started, gamma, first)
        else:
            gamma = 1.0
        direction = _two_loop(updates, s_mem, y_mem, rhos, gamma, memory_idx)
        return direction, ScaleByLBFGSState(
            count=_numerics.safe_increment(state.count), params=params, updates=updates,
            diff_params_memory=s_mem, diff_updates_memory=y_mem, weights_memory=rhos)

    return GradientTransformation(init_fn, update_fn)


_DEFAULT = object()


def lbfgs(learning_rate: Optional[ScalarOrSchedule] = None, memory_size: int = 10,
          scale_init_precond: bool = True,
          linesearch: Union[GradientTransformation, None, Any] = _DEFAULT
          ) -> GradientTransformationExtraArgs:
    """L-BFGS with a line search (by default a zoom line search for the strong Wolfe
    conditions, at most 20 steps, initial guess 1), as in optax.

    Use with ``value_and_grad_from_state`` and pass ``value=``, ``grad=`` and
    ``value_fn=`` to ``update``::

        opt = lbfgs()
        value_and_grad = value_and_grad_from_state(f)
        value, grad = value_and_grad(params, state=state)
        updates, state = opt.update(grad, state, params, value=value, grad=grad, value_fn=f)

    Args:
        learning_rate: None (direction scaled by -1) or a float / schedule.
        memory_size, scale_init_precond: see :func:`scale_by_lbfgs`.
        linesearch: a line-search transformation, or None for no line search.

    Returns:
        ``chain(scale_by_lbfgs, scale(-1) | scale_by_learning_rate, linesearch)``.
    """
    if linesearch is _DEFAULT:
        linesearch = scale_by_zoom_linesearch(max_linesearch_steps=20,
                                              initial_guess_strategy='one')
    base_scaling = scale(-1.0) if learning_rate is None else scale_by_learning_rate(learning_rate)
    return chain(scale_by_lbfgs(memory_size=memory_size, scale_init_precond=scale_init_precond),
                 base_scaling, identity() if linesearch is None else linesearch)

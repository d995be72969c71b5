r"""Sophia (Liu et al., "Sophia: A Scalable Stochastic Second-order Optimizer for
Language Model Pre-training", ICLR 2024, arXiv:2305.14342), with the
Hutchinson estimator of the Hessian diagonal (Hutchinson 1989)."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import fluxion
import fluxion.numpy as jnp
import fluxion.random as jrandom
from fluxion import lax, tree_util

from .. import _numerics
from .._base import (GradientTransformation, GradientTransformationExtraArgs, MaskOrFn,
                     ScalarOrSchedule, Updates, with_extra_args_support)
from .._combine import chain
from .._transform import add_decayed_weights, scale_by_learning_rate
from .._tree_math import (tree_bias_correction, tree_cast, tree_dtype, tree_update_moment,
                          tree_zeros_like)
from .._tree_random import tree_random_like


class HutchinsonState(NamedTuple):
    """State of the Hutchinson estimator: its PRNG key."""
    key: Any


def hutchinson_estimator_diag_hessian(random_seed: Optional[Any] = None
                                      ) -> GradientTransformationExtraArgs:
    r"""Unbiased estimate :math:`u \odot (H u)` of the Hessian diagonal, :math:`u` Rademacher.

    ``update(updates, state, params, obj_fn=f)`` ignores ``updates`` and
    returns the estimate at ``params`` (one Hessian-vector product, by
    forward-over-reverse differentiation of ``obj_fn``).

    Args:
        random_seed: a PRNG key (default ``random.PRNGKey(0)``).

    Returns:
        State ``HutchinsonState(key)``.

    Raises:
        ValueError: at update, without ``params`` or ``obj_fn``.
    """

    def init_fn(params):
        del params
        return HutchinsonState(key=random_seed if random_seed is not None else jrandom.PRNGKey(0))

    def update_fn(updates, state, params=None, obj_fn=None, **extra_args):
        del updates, extra_args
        if params is None:
            raise ValueError('hutchinson_estimator_diag_hessian: `params` must be passed.')
        if obj_fn is None:
            raise ValueError('hutchinson_estimator_diag_hessian: pass update(..., obj_fn=f).')
        key, subkey = jrandom.split(state.key)
        signs = tree_random_like(subkey, params, jrandom.rademacher, dtype=jnp.float32)
        signs = tree_cast(signs, tree_dtype(params, 'lowest'))
        hvp = fluxion.jvp(fluxion.grad(obj_fn), (params,), (signs,))[1]
        return tree_util.tree_map(lambda h, r: h * r, hvp, signs), HutchinsonState(key=key)

    return GradientTransformationExtraArgs(init_fn, update_fn)


class SophiaState(NamedTuple):
    """State of Sophia: ``count``, momentum ``mu``, Hessian-diagonal EMA ``nu`` and
    the estimator's state."""
    count: Any
    mu: Updates
    nu: Updates
    hessian_fn_state: Any


def scale_by_sophia(b1: Any = 0.965, b2: Any = 0.99, eps: Any = 1e-8, gamma: Any = 0.01,
                    clip_threshold: Optional[Any] = 1.0, update_interval: int = 10,
                    hessian_diagonal_fn: Optional[GradientTransformation] = None,
                    mu_dtype: Optional[Any] = None, verbose: bool = False,
                    print_win_rate_every_n_steps: int = 0) -> GradientTransformationExtraArgs:
    r"""Sophia's clipped, Hessian-preconditioned momentum:
    :math:`\mathrm{clip}(\hat m_t / \max(\gamma h_t, \epsilon), \rho)`, where
    :math:`h` is an EMA (decay ``b2``) of the Hessian-diagonal estimate,
    refreshed every ``update_interval`` steps (at steps 0, k, 2k, ..., after
    computing the update). Extra args (e.g. ``obj_fn``) go to the estimator.

    Args:
        verbose, print_win_rate_every_n_steps: accepted for optax compatibility;
            the win rate is not printed.

    Returns:
        State ``SophiaState``. Requires ``params``.
    """
    del verbose, print_win_rate_every_n_steps
    mu_dtype = _numerics.canonicalize_dtype(mu_dtype)
    estimator = with_extra_args_support(hessian_diagonal_fn if hessian_diagonal_fn is not None
                                        else hutchinson_estimator_diag_hessian())

    def init_fn(params):
        return SophiaState(count=jnp.zeros([], jnp.int32),
                           mu=tree_zeros_like(params, dtype=mu_dtype), nu=tree_zeros_like(params),
                           hessian_fn_state=estimator.init(params))

    def update_fn(updates, state, params=None, **hess_fn_kwargs):
        if params is None:
            raise ValueError('sophia: `params` must be passed to update.')
        count_inc = _numerics.safe_increment(state.count)
        grads = updates
        mu = tree_update_moment(updates, state.mu, b1, 1)
        mu_hat = tree_bias_correction(mu, b1, count_inc)
        out = tree_util.tree_map(lambda m, h: m / jnp.maximum(gamma * h, eps), mu_hat, state.nu)
        if clip_threshold is not None:
            out = tree_util.tree_map(lambda u: jnp.clip(u, -clip_threshold, clip_threshold), out)

        def refresh(est_state, nu):
            diag, est_state = estimator.update(grads, est_state, params=params, **hess_fn_kwargs)
            return est_state, tree_update_moment(diag, nu, b2, 1)

        est_state, nu = lax.cond(jnp.equal(state.count % update_interval, 0), refresh,
                                 lambda h, n: (h, n), state.hessian_fn_state, state.nu)
        return out, SophiaState(count=count_inc, mu=tree_cast(mu, mu_dtype), nu=nu,
                                hessian_fn_state=est_state)

    return GradientTransformationExtraArgs(init_fn, update_fn)


def sophia(learning_rate: ScalarOrSchedule, b1: Any = 0.965, b2: Any = 0.99, eps: Any = 1e-8,
           weight_decay: Any = 1e-4, weight_decay_mask: MaskOrFn = None, gamma: Any = 0.01,
           clip_threshold: Optional[Any] = 1.0, update_interval: int = 10,
           hessian_diagonal_fn: Optional[GradientTransformation] = None,
           mu_dtype: Optional[Any] = None, verbose: bool = False,
           print_win_rate_every_n_steps: int = 0) -> GradientTransformationExtraArgs:
    """Sophia: ``chain(scale_by_sophia, add_decayed_weights, scale_by_learning_rate)``.

    Call ``update(grads, state, params, obj_fn=loss_fn)`` (``obj_fn`` of params only).
    """
    return chain(scale_by_sophia(b1=b1, b2=b2, eps=eps, gamma=gamma,
                                 clip_threshold=clip_threshold, update_interval=update_interval,
                                 hessian_diagonal_fn=hessian_diagonal_fn, mu_dtype=mu_dtype,
                                 verbose=verbose,
                                 print_win_rate_every_n_steps=print_win_rate_every_n_steps),
                 add_decayed_weights(weight_decay, mask=weight_decay_mask),
                 scale_by_learning_rate(learning_rate))



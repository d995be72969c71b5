"""V-trace (Espeholt et al. 2018, "IMPALA", https://arxiv.org/abs/1802.01561, eq. 1).

With clipped ratios `rho'_s = min(rho_bar, rho_s)` and traces `c_s = lambda * min(1, rho_s)`, the error at time s is
`v_s^trace - V(x_s) = sum_t (prod_{i<t} g_i c_i) rho'_t (r_t + g_t V(x_{t+1}) - V(x_t))`, computed backwards as
`e_s = rho'_s delta_s + g_s c_s e_{s+1}` (a reverse `lax.scan`); time steps with `sample_mask` 0 pass the
accumulator through unchanged.

Leaky V-trace (Zahavy et al. 2020, "A Self-Tuning Actor-Critic Algorithm", https://arxiv.org/abs/2002.12928) mixes
the clipped and unclipped ratios, `alpha * min(rho_bar, rho) + (1 - alpha) * rho` (alpha = 1 is V-trace).
"""

from __future__ import annotations

import collections
from typing import Any

import fluxion.numpy as jnp
from fluxion import lax

from ._checks import check, check_equal_shape, maybe_stop_gradient

__all__ = ["vtrace", "leaky_vtrace", "vtrace_td_error_and_advantage", "leaky_vtrace_td_error_and_advantage",
           "VTraceOutput"]


VTraceOutput = collections.namedtuple("vtrace_output", ["errors", "pg_advantage", "q_estimate"])


def _check_vtrace(fn, v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_, sample_mask):
    check(fn, [("v_tm1", v_tm1, 1, "float"), ("v_t", v_t, 1, "float"), ("r_t", r_t, 1, "float"),
               ("discount_t", discount_t, 1, "float"), ("rho_tm1", rho_tm1, 1, "float"),
               ("lambda_", lambda_, {0, 1}, "float"), ("sample_mask", sample_mask, 1, "bool")])
    check_equal_shape(fn, [("v_tm1", v_tm1), ("v_t", v_t), ("r_t", r_t), ("discount_t", discount_t),
                           ("rho_tm1", rho_tm1), ("sample_mask", sample_mask)])


def _default_mask(rho_tm1, sample_mask):
    return jnp.ones_like(rho_tm1, dtype=jnp.bool_) if sample_mask is None else sample_mask


def _leaky(alpha, clipped, rho):
    # alpha = 1 keeps the clipped ratio exactly (no arithmetic), so V-trace proper is bit-identical to RLax's.
    if isinstance(alpha, (int, float)) and alpha == 1:
        return clipped
    return (1 - alpha) * rho + alpha * clipped


def _vtrace_errors(fn, v_tm1, v_t, r_t, discount_t, rho_tm1, alpha, lambda_, clip_rho_threshold,
                   stop_target_gradients, sample_mask):
    sample_mask = _default_mask(rho_tm1, sample_mask)
    _check_vtrace(fn, v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_, sample_mask)
    c_tm1 = _leaky(alpha, jnp.minimum(1.0, rho_tm1), rho_tm1) * lambda_
    clipped_rhos = _leaky(alpha, jnp.minimum(clip_rho_threshold, rho_tm1), rho_tm1)
    td_errors = clipped_rhos * (r_t + discount_t * v_t - v_tm1)

    def body(acc, xs):
        delta, g, learnable, c = xs
        acc = learnable * (delta + g * c * acc) + (1.0 - learnable) * acc
        return acc, acc

    mask = sample_mask.astype(td_errors.dtype)
    _, errors = lax.scan(body, jnp.zeros((), td_errors.dtype), (td_errors, discount_t, mask, c_tm1), reverse=True)
    if isinstance(stop_target_gradients, bool) and not stop_target_gradients:
        return errors
    return maybe_stop_gradient(stop_target_gradients, errors + v_tm1) - v_tm1


def vtrace(v_tm1: Any, v_t: Any, r_t: Any, discount_t: Any, rho_tm1: Any, lambda_: Any = 1.0,
           clip_rho_threshold: float = 1.0, stop_target_gradients: bool = True, sample_mask: Any = None) -> Any:
    """V-trace errors `v^trace - v_tm1` along a trajectory.

    Args:
        v_tm1: values at t-1 (float, length T). v_t: values at t. r_t: rewards. discount_t: discounts.
        rho_tm1: importance ratios pi/mu of the actions at t-1. lambda_: float scalar or length-T vector.
        clip_rho_threshold: rho_bar. sample_mask: bool length-T vector of learnable steps (default all).

    Returns:
        Float vector of length T. With `stop_target_gradients` the gradient flows only through `-v_tm1`.

    Raises:
        RLaxInputError: wrong rank/dtype, or the length-T inputs differ in shape.
    """
    return _vtrace_errors("vtrace", v_tm1, v_t, r_t, discount_t, rho_tm1, 1.0, lambda_, clip_rho_threshold,
                          stop_target_gradients, sample_mask)


def leaky_vtrace(v_tm1: Any, v_t: Any, r_t: Any, discount_t: Any, rho_tm1: Any, alpha_: float = 1.0,
                 lambda_: Any = 1.0, clip_rho_threshold: float = 1.0, stop_target_gradients: bool = True,
                 sample_mask: Any = None) -> Any:
    """Leaky V-trace errors: `vtrace` with ratios and traces leaking the unclipped ratio by `1 - alpha_`.

    Args and errors as for `vtrace`; `alpha_` in [0, 1] (1 gives V-trace).
    """
    return _vtrace_errors("leaky_vtrace", v_tm1, v_t, r_t, discount_t, rho_tm1, alpha_, lambda_,
                          clip_rho_threshold, stop_target_gradients, sample_mask)


def _errors_and_advantage(fn, v_tm1, v_t, r_t, discount_t, rho_tm1, alpha, lambda_, clip_rho_threshold,
                          clip_pg_rho_threshold, stop_target_gradients, sample_mask):
    sample_mask = _default_mask(rho_tm1, sample_mask)
    _check_vtrace(fn, v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_, sample_mask)
    lambda_ = jnp.ones_like(discount_t) * lambda_
    errors = _vtrace_errors(fn, v_tm1, v_t, r_t, discount_t, rho_tm1, alpha, lambda_, clip_rho_threshold,
                            stop_target_gradients, sample_mask)
    targets_tm1 = errors + v_tm1
    # Bootstrap for the Q estimate at t: the lambda-mix of the next V-trace target and value; v_t at the end.
    q_bootstrap = jnp.concatenate([lambda_[:-1] * targets_tm1[1:] + (1 - lambda_[:-1]) * v_tm1[1:], v_t[-1:]],
                                  axis=0)
    q_estimate = r_t + discount_t * q_bootstrap
    pg_rho = _leaky(alpha, jnp.minimum(clip_pg_rho_threshold, rho_tm1), rho_tm1)
    return VTraceOutput(errors=errors, pg_advantage=pg_rho * (q_estimate - v_tm1), q_estimate=q_estimate)


def vtrace_td_error_and_advantage(v_tm1: Any, v_t: Any, r_t: Any, discount_t: Any, rho_tm1: Any,
                                  lambda_: Any = 1.0, clip_rho_threshold: float = 1.0,
                                  clip_pg_rho_threshold: float = 1.0, stop_target_gradients: bool = True,
                                  sample_mask: Any = None) -> VTraceOutput:
    """V-trace errors plus the IMPALA policy-gradient advantage (Espeholt et al. 2018, eq. 4):
    `q_s = r_s + g_s (lambda v^trace_{s+1} + (1 - lambda) V(x_{s+1}))` (`v_t` at the last step) and
    `pg_advantage = min(clip_pg_rho_threshold, rho) (q_s - v_tm1)`.

    Returns:
        `VTraceOutput(errors, pg_advantage, q_estimate)` (RLax's namedtuple, typename `vtrace_output`), each `(T,)`.

    Raises:
        RLaxInputError: as for `vtrace`.
    """
    return _errors_and_advantage("vtrace_td_error_and_advantage", v_tm1, v_t, r_t, discount_t, rho_tm1, 1.0,
                                 lambda_, clip_rho_threshold, clip_pg_rho_threshold, stop_target_gradients,
                                 sample_mask)


def leaky_vtrace_td_error_and_advantage(v_tm1: Any, v_t: Any, r_t: Any, discount_t: Any, rho_tm1: Any,
                                        alpha: float = 1.0, lambda_: Any = 1.0, clip_rho_threshold: float = 1.0,
                                        clip_pg_rho_threshold: float = 1.0, stop_target_gradients: bool = True,
                                        sample_mask: Any = None) -> VTraceOutput:
    """`vtrace_td_error_and_advantage` with leaky ratios (`alpha` as in `leaky_vtrace`, also for the pg ratio)."""
    return _errors_and_advantage("leaky_vtrace_td_error_and_advantage", v_tm1, v_t, r_t, discount_t, rho_tm1,
                                 alpha, lambda_, clip_rho_threshold, clip_pg_rho_threshold, stop_target_gradients,
                                 sample_mask)

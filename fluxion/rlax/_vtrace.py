"""V-trace (Espeholt et al. 2018, "IMPALA", https://arxiv.org/abs/1802.01561, eq. 1).

With clipped ratios `rho'_s = min(rho_bar, rho_s)` and traces `c_s = lambda * min(1, rho_s)`, the error at time s is
`v_s^trace - V(x_s) = sum_t (prod_{i<t} g_i c_i) rho'_t (r_t + g_t V(x_{t+1}) - V(x_t))`, computed backwards as
`e_s = rho'_s delta_s + g_s c_s e_{s+1}` (a reverse `lax.scan`); time steps with `sample_mask` 0 pass the
accumulator through unchanged.
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import lax

from ._checks import check, check_equal_shape, maybe_stop_gradient

__all__ = ["vtrace"]


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
    if sample_mask is None:
        sample_mask = jnp.ones_like(rho_tm1, dtype=jnp.bool_)
    check("vtrace", [("v_tm1", v_tm1, 1, "float"), ("v_t", v_t, 1, "float"), ("r_t", r_t, 1, "float"),
                     ("discount_t", discount_t, 1, "float"), ("rho_tm1", rho_tm1, 1, "float"),
                     ("lambda_", lambda_, {0, 1}, "float"), ("sample_mask", sample_mask, 1, "bool")])
    check_equal_shape("vtrace", [("v_tm1", v_tm1), ("v_t", v_t), ("r_t", r_t), ("discount_t", discount_t),
                                 ("rho_tm1", rho_tm1), ("sample_mask", sample_mask)])
    c_tm1 = jnp.minimum(1.0, rho_tm1) * lambda_
    clipped_rhos = jnp.minimum(clip_rho_threshold, rho_tm1)
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

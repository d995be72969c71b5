"""Policy-gradient losses: REINFORCE and entropy over a trajectory with softmax policies, deterministic policy
gradients, the all-action losses of Srinivasan et al. 2018 ("Actor-Critic Policy Optimization in Partially
Observable Multiagent Environments", https://arxiv.org/abs/1810.09026), and PPO's clipped surrogate."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import nn

from ._checks import check, maybe_stop_gradient
from ._distributions import softmax
from ._losses import l2_loss

__all__ = ["policy_gradient_loss", "entropy_loss", "dpg_loss", "qpg_loss", "rm_loss", "rpg_loss",
           "clipped_surrogate_pg_loss"]


def policy_gradient_loss(logits_t: Any, a_t: Any, adv_t: Any, w_t: Any, use_stop_gradient: bool = True) -> Any:
    """REINFORCE loss (Williams 1992): `mean_t(-log pi(a_t | logits_t) * adv_t * w_t)`.

    Args:
        logits_t: float `(T, num_actions)`. a_t: int `(T,)`. adv_t: float `(T,)` advantages (gradient stopped
            when `use_stop_gradient`). w_t: float `(T,)` per-step weights.

    Returns:
        A float scalar.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("policy_gradient_loss", [("logits_t", logits_t, 2, "float"), ("a_t", a_t, 1, "int"),
                                   ("adv_t", adv_t, 1, "float"), ("w_t", w_t, 1, "float")])
    log_pi_a_t = softmax().logprob(a_t, logits_t)
    adv_t = maybe_stop_gradient(use_stop_gradient, adv_t)
    return jnp.mean(-log_pi_a_t * adv_t * w_t)


def entropy_loss(logits_t: Any, w_t: Any) -> Any:
    """Negative weighted mean entropy of softmax policies (Williams & Peng 1991): `-mean_t(H(pi_t) w_t)`.

    Args:
        logits_t: float `(T, num_actions)`. w_t: float `(T,)`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("entropy_loss", [("logits_t", logits_t, 2, "float"), ("w_t", w_t, 1, "float")])
    return -jnp.mean(softmax().entropy(logits_t) * w_t)


def _clip_by_l2_norm(x: Any, max_norm: float) -> Any:
    # x * max_norm / max(|x|, max_norm), with the square root kept off zero so its gradient stays finite.
    sum_sq = jnp.sum(jnp.vdot(x, x))
    nonzero = sum_sq > 0
    norm = jnp.where(nonzero, jnp.sqrt(jnp.where(nonzero, sum_sq, jnp.ones_like(sum_sq))), sum_sq)
    return x * max_norm / jnp.maximum(norm, max_norm)


def dpg_loss(a_t: Any, dqda_t: Any, dqda_clipping: Any = None, use_stop_gradient: bool = True) -> Any:
    """Deterministic policy gradient loss (Silver et al. 2014): `0.5 (stop(a_t + dqda_t) - a_t)^2` elementwise,
    whose gradient w.r.t. the action is `-dqda_t`; `dqda_clipping` clips `dqda_t` to that L2 norm first.

    Args:
        a_t, dqda_t: float vectors `(action_dim,)`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("dpg_loss", [("a_t", a_t, 1, "float"), ("dqda_t", dqda_t, 1, "float")])
    if dqda_clipping is not None:
        dqda_t = _clip_by_l2_norm(dqda_t, dqda_clipping)
    target = maybe_stop_gradient(use_stop_gradient, dqda_t + a_t)
    return l2_loss(target - a_t)


def _policy_and_advantages(logits_t: Any, q_t: Any, use_stop_gradient: bool = True):
    policy_t = nn.softmax(logits_t, axis=1)
    q_t = maybe_stop_gradient(use_stop_gradient, q_t)
    baseline_t = jnp.sum(policy_t * q_t, axis=1)
    return policy_t, q_t - baseline_t[:, None]


def _check_all_action(fn: str, logits_t: Any, q_t: Any) -> None:
    check(fn, [("logits_t", logits_t, 2, "float"), ("q_t", q_t, 2, "float")])


def qpg_loss(logits_t: Any, q_t: Any, use_stop_gradient: bool = True) -> Any:
    """Q-based policy gradient (Srinivasan et al. 2018): `mean_t sum_a -pi_t(a) (q_t(a) - <pi_t, q_t>)`.

    Args:
        logits_t, q_t: float `(T, A)`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    _check_all_action("qpg_loss", logits_t, q_t)
    policy_t, advantage_t = _policy_and_advantages(logits_t, q_t)
    advantage_t = maybe_stop_gradient(use_stop_gradient, advantage_t)
    return jnp.mean(jnp.sum(-policy_t * advantage_t, axis=1), axis=0)


def rm_loss(logits_t: Any, q_t: Any, use_stop_gradient: bool = True) -> Any:
    """Regret-matching policy gradient (Srinivasan et al. 2018): `mean_t sum_a -pi_t(a) relu(advantage_t(a))`.

    Raises:
        RLaxInputError: wrong rank or dtype (logits_t, q_t float `(T, A)`).
    """
    _check_all_action("rm_loss", logits_t, q_t)
    policy_t, advantage_t = _policy_and_advantages(logits_t, q_t)
    regret_t = maybe_stop_gradient(use_stop_gradient, nn.relu(advantage_t))
    return jnp.mean(jnp.sum(-policy_t * regret_t, axis=1), axis=0)


def rpg_loss(logits_t: Any, q_t: Any, use_stop_gradient: bool = True) -> Any:
    """Regret policy gradient (Srinivasan et al. 2018): `mean_t sum_a relu(q_t(a) - <pi_t, q_t>)`; the gradient flows
    through the baseline's policy.

    Raises:
        RLaxInputError: wrong rank or dtype (logits_t, q_t float `(T, A)`).
    """
    _check_all_action("rpg_loss", logits_t, q_t)
    _, advantage_t = _policy_and_advantages(logits_t, q_t, use_stop_gradient)
    return jnp.mean(jnp.sum(nn.relu(advantage_t), axis=1), axis=0)


def clipped_surrogate_pg_loss(prob_ratios_t: Any, adv_t: Any, epsilon: Any, use_stop_gradient: bool = True) -> Any:
    """PPO's clipped surrogate loss (Schulman et al. 2017, https://arxiv.org/abs/1707.06347, eq. 7):
    `-mean_t min(r_t A_t, clip(r_t, 1 - epsilon, 1 + epsilon) A_t)`.

    Args:
        prob_ratios_t, adv_t: float `(T,)`. epsilon: clipping range (scalar).

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("clipped_surrogate_pg_loss", [("prob_ratios_t", prob_ratios_t, 1, "float"), ("adv_t", adv_t, 1, "float")])
    adv_t = maybe_stop_gradient(use_stop_gradient, adv_t)
    clipped = jnp.clip(prob_ratios_t, 1. - epsilon, 1. + epsilon)
    return -jnp.mean(jnp.fmin(prob_ratios_t * adv_t, clipped * adv_t))

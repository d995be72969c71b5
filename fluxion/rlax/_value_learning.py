"""Temporal-difference errors for one transition (value learning).

Each function returns the TD error `target - prediction`; the target is wrapped in `stop_gradient` unless
`stop_target_gradients=False`, as in RLax, so that `grad(0.5 * td_error**2)` is the semi-gradient update.
Equations from Sutton & Barto, "Reinforcement Learning: An Introduction" (2nd ed., 2018), and the cited papers.
"""

from __future__ import annotations

from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import nn

from ._base import batched_index
from ._checks import check, maybe_stop_gradient
from ._distributions import categorical_cross_entropy
from ._losses import huber_loss
from ._multistep import general_off_policy_returns_from_action_values, general_off_policy_returns_from_q_and_v
from ._multistep import lambda_returns

__all__ = ["td_learning", "td_lambda", "sarsa", "expected_sarsa", "sarsa_lambda", "q_learning", "double_q_learning",
           "persistent_q_learning", "qv_learning", "qv_max", "q_lambda", "retrace", "retrace_continuous",
           "categorical_l2_project", "categorical_td_learning", "categorical_q_learning",
           "categorical_double_q_learning", "quantile_regression_loss", "quantile_q_learning",
           "quantile_expected_sarsa"]


def td_learning(v_tm1: Any, r_t: Any, discount_t: Any, v_t: Any, stop_target_gradients: bool = True) -> Any:
    """TD(0) error (Sutton 1988): `r_t + discount_t * v_t - v_tm1`.

    Args:
        v_tm1, r_t, discount_t, v_t: float scalars (rank 0).

    Returns:
        The TD error, a float scalar.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("td_learning", [("v_tm1", v_tm1, 0, "float"), ("r_t", r_t, 0, "float"),
                          ("discount_t", discount_t, 0, "float"), ("v_t", v_t, 0, "float")])
    target = maybe_stop_gradient(stop_target_gradients, r_t + discount_t * v_t)
    return target - v_tm1


def td_lambda(v_tm1: Any, r_t: Any, discount_t: Any, v_t: Any, lambda_: Any,
              stop_target_gradients: bool = True) -> Any:
    """TD(lambda) errors along a trajectory: `G^lambda_t - v_tm1` with `G^lambda` from `lambda_returns`.

    Args:
        v_tm1, r_t, discount_t, v_t: float vectors of length T.
        lambda_: float scalar or vector of length T.

    Returns:
        Float vector of length T.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("td_lambda", [("v_tm1", v_tm1, 1, "float"), ("r_t", r_t, 1, "float"),
                        ("discount_t", discount_t, 1, "float"), ("v_t", v_t, 1, "float"),
                        ("lambda_", lambda_, {0, 1}, "float")])
    target = maybe_stop_gradient(stop_target_gradients, lambda_returns(r_t, discount_t, v_t, lambda_))
    return target - v_tm1


def _check_transition(fn: str, q_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any, extra: list) -> None:
    check(fn, [("q_tm1", q_tm1, 1, "float"), ("a_tm1", a_tm1, 0, "int"), ("r_t", r_t, 0, "float"),
               ("discount_t", discount_t, 0, "float")] + extra)


def sarsa(q_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any, q_t: Any, a_t: Any,
          stop_target_gradients: bool = True) -> Any:
    """SARSA error (Rummery & Niranjan 1994): `r_t + discount_t * q_t[a_t] - q_tm1[a_tm1]`.

    Args:
        q_tm1, q_t: float vectors `(num_actions,)`; a_tm1, a_t: int scalars; r_t, discount_t: float scalars.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    _check_transition("sarsa", q_tm1, a_tm1, r_t, discount_t, [("q_t", q_t, 1, "float"), ("a_t", a_t, 0, "int")])
    target = maybe_stop_gradient(stop_target_gradients, r_t + discount_t * q_t[a_t])
    return target - q_tm1[a_tm1]


def expected_sarsa(q_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any, q_t: Any, probs_a_t: Any,
                   stop_target_gradients: bool = True) -> Any:
    """Expected SARSA error (van Seijen et al. 2009): `r_t + discount_t * <q_t, probs_a_t> - q_tm1[a_tm1]`.

    Args:
        probs_a_t: float vector `(num_actions,)`, the policy at time t; others as for `sarsa`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    _check_transition("expected_sarsa", q_tm1, a_tm1, r_t, discount_t,
                      [("q_t", q_t, 1, "float"), ("probs_a_t", probs_a_t, 1, "float")])
    target = maybe_stop_gradient(stop_target_gradients, r_t + discount_t * jnp.dot(q_t, probs_a_t))
    return target - q_tm1[a_tm1]


def q_learning(q_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any, q_t: Any,
               stop_target_gradients: bool = True) -> Any:
    """Q-learning error (Watkins 1989): `r_t + discount_t * max_a q_t[a] - q_tm1[a_tm1]`.

    Args:
        q_tm1: float `(num_actions,)` Q-values at t-1. a_tm1: int scalar action taken at t-1.
        r_t: float scalar reward. discount_t: float scalar discount (0 at episode end). q_t: float
        `(num_actions,)` Q-values at t (e.g. from a target network).

    Returns:
        The TD error, a float scalar (batch with `vmap`).

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    _check_transition("q_learning", q_tm1, a_tm1, r_t, discount_t, [("q_t", q_t, 1, "float")])
    target = maybe_stop_gradient(stop_target_gradients, r_t + discount_t * jnp.max(q_t))
    return target - q_tm1[a_tm1]


def double_q_learning(q_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any, q_t_value: Any, q_t_selector: Any,
                      stop_target_gradients: bool = True) -> Any:
    """Double Q-learning error (van Hasselt 2010): the action is selected with `q_t_selector` and evaluated
    with `q_t_value`: `r_t + discount_t * q_t_value[argmax q_t_selector] - q_tm1[a_tm1]`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    _check_transition("double_q_learning", q_tm1, a_tm1, r_t, discount_t,
                      [("q_t_value", q_t_value, 1, "float"), ("q_t_selector", q_t_selector, 1, "float")])
    target = r_t + discount_t * q_t_value[jnp.argmax(q_t_selector)]
    return maybe_stop_gradient(stop_target_gradients, target) - q_tm1[a_tm1]


def sarsa_lambda(q_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any, q_t: Any, a_t: Any, lambda_: Any,
                 stop_target_gradients: bool = True) -> Any:
    """SARSA(lambda) errors along a trajectory (Sutton & Barto 2018, sec. 12.7): the lambda-return bootstrapping on
    `q_t[a_t]`, minus `q_tm1[a_tm1]`.

    Args:
        q_tm1, q_t: float `(T, A)`. a_tm1, a_t: int `(T,)`. r_t, discount_t: float `(T,)`.
        lambda_: float scalar or `(T,)`.

    Returns:
        Float vector `(T,)`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("sarsa_lambda", [("q_tm1", q_tm1, 2, "float"), ("a_tm1", a_tm1, 1, "int"), ("r_t", r_t, 1, "float"),
                           ("discount_t", discount_t, 1, "float"), ("q_t", q_t, 2, "float"),
                           ("a_t", a_t, 1, "int"), ("lambda_", lambda_, {0, 1}, "float")])
    target = lambda_returns(r_t, discount_t, batched_index(q_t, a_t), lambda_)
    return maybe_stop_gradient(stop_target_gradients, target) - batched_index(q_tm1, a_tm1)


def persistent_q_learning(q_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any, q_t: Any, action_gap_scale: float,
                          stop_target_gradients: bool = True) -> Any:
    """Persistent Q-learning error (Bellemare et al. 2016, "Increasing the Action Gap",
    https://arxiv.org/abs/1512.04860): the bootstrap mixes `max q_t` and `q_t[a_tm1]`,
    `r_t + discount_t ((1 - s) max q_t + s q_t[a_tm1]) - q_tm1[a_tm1]` with `s = action_gap_scale` in [0, 1].

    Raises:
        RLaxInputError: wrong rank or dtype (shapes as for `q_learning`).
    """
    _check_transition("persistent_q_learning", q_tm1, a_tm1, r_t, discount_t, [("q_t", q_t, 1, "float")])
    bootstrap = (1. - action_gap_scale) * jnp.max(q_t) + action_gap_scale * q_t[a_tm1]
    target = maybe_stop_gradient(stop_target_gradients, r_t + discount_t * bootstrap)
    return target - q_tm1[a_tm1]


def qv_learning(q_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any, v_t: Any,
                stop_target_gradients: bool = True) -> Any:
    """QV-learning error (Wiering & van Hasselt 2007): the Q-value bootstraps on a state value,
    `r_t + discount_t v_t - q_tm1[a_tm1]`.

    Args:
        q_tm1: float `(A,)`. a_tm1: int scalar. r_t, discount_t, v_t: float scalars.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    _check_transition("qv_learning", q_tm1, a_tm1, r_t, discount_t, [("v_t", v_t, 0, "float")])
    target = maybe_stop_gradient(stop_target_gradients, r_t + discount_t * v_t)
    return target - q_tm1[a_tm1]


def qv_max(v_tm1: Any, r_t: Any, discount_t: Any, q_t: Any, stop_target_gradients: bool = True) -> Any:
    """QVMAX error (Wiering & van Hasselt 2009): a state value bootstraps on the greedy Q-value,
    `r_t + discount_t max q_t - v_tm1`.

    Args:
        v_tm1, r_t, discount_t: float scalars. q_t: float `(A,)`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("qv_max", [("v_tm1", v_tm1, 0, "float"), ("r_t", r_t, 0, "float"), ("discount_t", discount_t, 0, "float"),
                     ("q_t", q_t, 1, "float")])
    target = maybe_stop_gradient(stop_target_gradients, r_t + discount_t * jnp.max(q_t))
    return target - v_tm1


def q_lambda(q_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any, q_t: Any, lambda_: Any,
             stop_target_gradients: bool = True) -> Any:
    """Peng's (scalar `lambda_`) or Watkins' (per-step `lambda_`) Q(lambda) errors (Sutton & Barto 2018, sec. 12.10):
    the lambda-return bootstrapping on `max_a q_t`, minus `q_tm1[a_tm1]`.

    Args:
        q_tm1, q_t: float `(T, A)`. a_tm1: int `(T,)`. r_t, discount_t: float `(T,)`. lambda_: float scalar or `(T,)`.

    Returns:
        Float vector `(T,)`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("q_lambda", [("q_tm1", q_tm1, 2, "float"), ("a_tm1", a_tm1, 1, "int"), ("r_t", r_t, 1, "float"),
                       ("discount_t", discount_t, 1, "float"), ("q_t", q_t, 2, "float"),
                       ("lambda_", lambda_, {0, 1}, "float")])
    target = lambda_returns(r_t, discount_t, jnp.max(q_t, axis=-1), lambda_)
    return maybe_stop_gradient(stop_target_gradients, target) - batched_index(q_tm1, a_tm1)


def retrace(q_tm1: Any, q_t: Any, a_tm1: Any, a_t: Any, r_t: Any, discount_t: Any, pi_t: Any, mu_t: Any,
            lambda_: float, eps: float = 1e-8, stop_target_gradients: bool = True) -> Any:
    """Retrace errors (Munos et al. 2016, https://arxiv.org/abs/1606.02647) with traces
    `c_t = lambda min(1, pi_t(a_t) / (mu_t + eps))`, via `general_off_policy_returns_from_action_values`.

    Args:
        q_tm1, q_t: float `(T, A)`. a_tm1, a_t: int `(T,)`. r_t, discount_t: float `(T,)`.
        pi_t: float `(T, A)` target-policy probabilities. mu_t: float `(T,)` behaviour probabilities of `a_t`.
        lambda_: scalar trace coefficient. eps: added to `mu_t` to avoid division by zero.

    Returns:
        Float vector `(T,)`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("retrace", [("q_tm1", q_tm1, 2, "float"), ("q_t", q_t, 2, "float"), ("a_tm1", a_tm1, 1, "int"),
                      ("a_t", a_t, 1, "int"), ("r_t", r_t, 1, "float"), ("discount_t", discount_t, 1, "float"),
                      ("pi_t", pi_t, 2, "float"), ("mu_t", mu_t, 1, "float")])
    c_t = jnp.minimum(1.0, batched_index(pi_t, a_t) / (mu_t + eps)) * lambda_
    target = general_off_policy_returns_from_action_values(q_t, a_t, r_t, discount_t, c_t, pi_t)
    return maybe_stop_gradient(stop_target_gradients, target) - batched_index(q_tm1, a_tm1)


def retrace_continuous(q_tm1: Any, q_t: Any, v_t: Any, r_t: Any, discount_t: Any, log_rhos: Any, lambda_: Any,
                       stop_target_gradients: bool = True) -> Any:
    """Retrace for continuous actions (Munos et al. 2016): traces `c_t = lambda min(1, exp(log_rhos))` and returns
    from `general_off_policy_returns_from_q_and_v`.

    Args:
        q_tm1: float `(K,)` Q-values of the taken actions at times 0..K-1. q_t, log_rhos: float `(K - 1,)` at
            times 1..K-1. v_t, r_t, discount_t: float `(K,)` at times 1..K. lambda_: scalar or vector.

    Returns:
        Float vector `(K,)`.

    Raises:
        RLaxInputError: wrong rank or dtype, or misaligned lengths.
    """
    check("retrace_continuous", [("q_tm1", q_tm1, 1, "float"), ("q_t", q_t, 1, "float"), ("r_t", r_t, 1, "float"),
                                 ("discount_t", discount_t, 1, "float"), ("log_rhos", log_rhos, 1, "float"),
                                 ("lambda_", lambda_, {0, 1}, "float")])
    c_t = jnp.minimum(1.0, jnp.exp(log_rhos)) * lambda_
    target = general_off_policy_returns_from_q_and_v(q_t, v_t, r_t, discount_t, c_t)
    return maybe_stop_gradient(stop_target_gradients, target) - q_tm1


def categorical_l2_project(z_p: Any, probs: Any, z_q: Any) -> Any:
    """Projects the categorical distribution `(z_p, probs)` onto the support `z_q` (Bellemare et al. 2017,
    "A Distributional Perspective on RL", https://arxiv.org/abs/1707.06887, eq. 7): each atom of `z_p`, clipped to
    `[z_q[0], z_q[-1]]`, splits its mass between its neighbours in `z_q` linearly (the Cramer-distance projection).

    Args:
        z_p: float `(kp,)` source atoms. probs: float `(kp,)`. z_q: float `(kq,)` increasing target atoms.

    Returns:
        Float `(kq,)` probabilities on `z_q`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("categorical_l2_project", [("z_p", z_p, 1, "float"), ("probs", probs, 1, "float"),
                                     ("z_q", z_q, 1, "float")])
    z_p = jnp.clip(z_p, z_q[0], z_q[-1])[None, :]
    gap_up = (jnp.roll(z_q, -1) - z_q)[:, None]    # z_q[i+1] - z_q[i] (wraps to <= 0 at the end)
    gap_down = (z_q - jnp.roll(z_q, 1))[:, None]   # z_q[i] - z_q[i-1] (wraps to <= 0 at the start)
    inv_up = jnp.where(gap_up > 0, 1. / gap_up, jnp.zeros_like(gap_up))
    inv_down = jnp.where(gap_down > 0, 1. / gap_down, jnp.zeros_like(gap_down))
    delta = z_p - z_q[:, None]                     # (kq, kp)
    above = (delta >= 0.).astype(probs.dtype)
    # Distance from target atom i in units of the adjacent gap on the side where the source atom lies.
    scaled = above * delta * inv_up - (1. - above) * delta * inv_down
    return jnp.sum(jnp.clip(1. - scaled, 0., 1.) * probs[None, :], axis=-1)


def categorical_td_learning(v_atoms_tm1: Any, v_logits_tm1: Any, r_t: Any, discount_t: Any, v_atoms_t: Any,
                            v_logits_t: Any, stop_target_gradients: bool = True) -> Any:
    """Distributional TD learning for state values (Bellemare et al. 2017): the cross-entropy between the projected
    target distribution `(r_t + discount_t v_atoms_t, softmax(v_logits_t))` and `softmax(v_logits_tm1)`.

    Args:
        v_atoms_tm1, v_logits_tm1, v_atoms_t, v_logits_t: float `(num_atoms,)`. r_t, discount_t: float scalars.

    Returns:
        The loss, a float scalar.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("categorical_td_learning",
          [("v_atoms_tm1", v_atoms_tm1, 1, "float"), ("v_logits_tm1", v_logits_tm1, 1, "float"),
           ("r_t", r_t, 0, "float"), ("discount_t", discount_t, 0, "float"), ("v_atoms_t", v_atoms_t, 1, "float"),
           ("v_logits_t", v_logits_t, 1, "float")])
    target = categorical_l2_project(r_t + discount_t * v_atoms_t, nn.softmax(v_logits_t), v_atoms_tm1)
    return categorical_cross_entropy(maybe_stop_gradient(stop_target_gradients, target), v_logits_tm1)


def _categorical_q_loss(q_atoms_tm1, q_logits_tm1, a_tm1, r_t, discount_t, q_atoms_t, p_target_z,
                        stop_target_gradients):
    target = categorical_l2_project(r_t + discount_t * q_atoms_t, p_target_z, q_atoms_tm1)
    return categorical_cross_entropy(maybe_stop_gradient(stop_target_gradients, target), q_logits_tm1[a_tm1])


def _check_categorical_q(fn, q_atoms_tm1, q_logits_tm1, a_tm1, r_t, discount_t, q_atoms_t, q_logits_t, extra):
    check(fn, [("q_atoms_tm1", q_atoms_tm1, 1, "float"), ("q_logits_tm1", q_logits_tm1, 2, "float"),
               ("a_tm1", a_tm1, 0, "int"), ("r_t", r_t, 0, "float"), ("discount_t", discount_t, 0, "float"),
               ("q_atoms_t", q_atoms_t, 1, "float"), ("q_logits_t", q_logits_t, 2, "float")] + extra)


def categorical_q_learning(q_atoms_tm1: Any, q_logits_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any,
                           q_atoms_t: Any, q_logits_t: Any, stop_target_gradients: bool = True) -> Any:
    """C51 Q-learning loss (Bellemare et al. 2017): the greedy action at t maximises the mean of each action's
    distribution; its distribution, shifted by `r_t + discount_t z`, is projected onto `q_atoms_tm1` and compared to
    `softmax(q_logits_tm1[a_tm1])` by cross-entropy.

    Args:
        q_atoms_tm1, q_atoms_t: float `(num_atoms,)`. q_logits_tm1, q_logits_t: float `(A, num_atoms)`.
        a_tm1: int scalar. r_t, discount_t: float scalars.

    Returns:
        The loss, a float scalar.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    _check_categorical_q("categorical_q_learning", q_atoms_tm1, q_logits_tm1, a_tm1, r_t, discount_t, q_atoms_t,
                         q_logits_t, [])
    q_t_probs = nn.softmax(q_logits_t)
    greedy = jnp.argmax(jnp.sum(q_t_probs * q_atoms_t[None, :], axis=1))
    return _categorical_q_loss(q_atoms_tm1, q_logits_tm1, a_tm1, r_t, discount_t, q_atoms_t, q_t_probs[greedy],
                               stop_target_gradients)


def categorical_double_q_learning(q_atoms_tm1: Any, q_logits_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any,
                                  q_atoms_t: Any, q_logits_t: Any, q_t_selector: Any,
                                  stop_target_gradients: bool = True) -> Any:
    """Double C51 loss: as `categorical_q_learning`, but the action at t is `argmax q_t_selector` (float `(A,)`)
    (van Hasselt 2010; Bellemare et al. 2017).

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    _check_categorical_q("categorical_double_q_learning", q_atoms_tm1, q_logits_tm1, a_tm1, r_t, discount_t,
                         q_atoms_t, q_logits_t, [("q_t_selector", q_t_selector, 1, "float")])
    p_target_z = nn.softmax(q_logits_t[jnp.argmax(q_t_selector)])
    return _categorical_q_loss(q_atoms_tm1, q_logits_tm1, a_tm1, r_t, discount_t, q_atoms_t, p_target_z,
                               stop_target_gradients)


def quantile_regression_loss(dist_src: Any, tau_src: Any, dist_target: Any, huber_param: float = 0.,
                             stop_target_gradients: bool = True) -> Any:
    """Quantile (Huber) regression loss (Dabney et al. 2018, "Distributional RL with Quantile Regression",
    https://arxiv.org/abs/1710.10044): `sum_i mean_j |tau_i - 1[delta_ij < 0]| L(delta_ij)` with
    `delta_ij = dist_target[j] - dist_src[i]` and `L` the absolute value (or Huber loss if `huber_param > 0`).

    Args:
        dist_src, tau_src: float `(N,)`. dist_target: float `(M,)`.
        stop_target_gradients: stops the gradient of the indicator only (it has none anyway); the target values
            themselves are not stopped here, as in RLax.

    Returns:
        The loss, a float scalar.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("quantile_regression_loss", [("dist_src", dist_src, 1, "float"), ("tau_src", tau_src, 1, "float"),
                                       ("dist_target", dist_target, 1, "float")])
    delta = dist_target[None, :] - dist_src[:, None]
    below = maybe_stop_gradient(stop_target_gradients, (delta < 0.).astype(jnp.float32))
    weight = jnp.abs(tau_src[:, None] - below)
    loss = huber_loss(delta, huber_param) if huber_param > 0. else jnp.abs(delta)
    return jnp.sum(jnp.mean(loss * weight, axis=-1))


def _check_quantile(fn, dist_q_tm1, tau_q_tm1, a_tm1, r_t, discount_t, extra):
    check(fn, [("dist_q_tm1", dist_q_tm1, 2, "float"), ("tau_q_tm1", tau_q_tm1, 1, "float"),
               ("a_tm1", a_tm1, 0, "int"), ("r_t", r_t, 0, "float"), ("discount_t", discount_t, 0, "float")] + extra)


def quantile_q_learning(dist_q_tm1: Any, tau_q_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any,
                        dist_q_t_selector: Any, dist_q_t: Any, huber_param: float = 0.,
                        stop_target_gradients: bool = True) -> Any:
    """QR-DQN loss (Dabney et al. 2018): the action at t maximises the mean of `dist_q_t_selector`; the target
    quantiles `r_t + discount_t dist_q_t[:, a_t]` regress `dist_q_tm1[:, a_tm1]` at levels `tau_q_tm1`.

    Args:
        dist_q_tm1, dist_q_t_selector, dist_q_t: float `(num_quantiles, A)`. tau_q_tm1: float `(num_quantiles,)`.
        a_tm1: int scalar. r_t, discount_t: float scalars.

    Returns:
        The loss, a float scalar.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    _check_quantile("quantile_q_learning", dist_q_tm1, tau_q_tm1, a_tm1, r_t, discount_t,
                    [("dist_q_t_selector", dist_q_t_selector, 2, "float"), ("dist_q_t", dist_q_t, 2, "float")])
    a_t = jnp.argmax(jnp.mean(dist_q_t_selector, axis=0))
    target = maybe_stop_gradient(stop_target_gradients, r_t + discount_t * dist_q_t[:, a_t])
    return quantile_regression_loss(dist_q_tm1[:, a_tm1], tau_q_tm1, target, huber_param)


def quantile_expected_sarsa(dist_q_tm1: Any, tau_q_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any, dist_q_t: Any,
                            probs_a_t: Any, huber_param: float = 0., stop_target_gradients: bool = True) -> Any:
    """Quantile expected SARSA: the quantile regression loss against each action's target quantiles
    `r_t + discount_t dist_q_t[:, a]`, averaged with the policy `probs_a_t` (both stopped by default).

    Args:
        dist_q_tm1, dist_q_t: float `(num_quantiles, A)`. tau_q_tm1: float `(num_quantiles,)`. a_tm1: int scalar.
        r_t, discount_t: float scalars. probs_a_t: float `(A,)`.

    Returns:
        The loss, a float scalar.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    _check_quantile("quantile_expected_sarsa", dist_q_tm1, tau_q_tm1, a_tm1, r_t, discount_t,
                    [("dist_q_t", dist_q_t, 2, "float"), ("probs_a_t", probs_a_t, 1, "float")])
    target = maybe_stop_gradient(stop_target_gradients, r_t + discount_t * dist_q_t)
    probs_a_t = maybe_stop_gradient(stop_target_gradients, probs_a_t)
    # One regression per target action (columns of `target`); huber_param stays a Python number (static).
    per_action = fluxion.vmap(lambda src, tau, tgt: quantile_regression_loss(src, tau, tgt, huber_param),
                              in_axes=(None, None, 1))(dist_q_tm1[:, a_tm1], tau_q_tm1, target)
    return jnp.dot(per_action, probs_a_t)

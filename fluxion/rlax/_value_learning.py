"""Temporal-difference errors for one transition (value learning).

Each function returns the TD error `target - prediction`; the target is wrapped in `stop_gradient` unless
`stop_target_gradients=False`, as in RLax, so that `grad(0.5 * td_error**2)` is the semi-gradient update.
Equations from Sutton & Barto, "Reinforcement Learning: An Introduction" (2nd ed., 2018), and the cited papers.
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp

from ._checks import check, maybe_stop_gradient
from ._multistep import lambda_returns

__all__ = ["td_learning", "td_lambda", "sarsa", "expected_sarsa", "q_learning", "double_q_learning"]


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

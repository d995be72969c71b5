"""Multi-step return targets along a trajectory of length T (inputs indexed t = 1..T).

Equations (Sutton & Barto 2018, ch. 7 and 12):

* lambda-return:    `G_t = r_{t+1} + g_{t+1} [(1 - l_{t+1}) v_{t+1} + l_{t+1} G_{t+1}]`, with `G_T`
  bootstrapping on `v_T` (computed backwards with a reverse `lax.scan`);
* n-step return:    the same recursion iterated n times from `v_{t+n}` (lambda = 1 gives
  `r_{t+1} + g_{t+1} (r_{t+2} + ... + g_{t+n} v_{t+n})`), sequences padded past T with the last value;
* discounted return: `G_t = r_{t+1} + g_{t+1} G_{t+1}` bootstrapping on `v_t` (scalar or vector).

Targets do not stop gradients unless `stop_target_gradients=True` (RLax's default for these functions).
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import lax

from ._base import batched_index
from ._checks import check, check_equal_shape, maybe_stop_gradient

__all__ = ["lambda_returns", "n_step_bootstrapped_returns", "discounted_returns",
           "truncated_generalized_advantage_estimation", "general_off_policy_returns_from_action_values",
           "general_off_policy_returns_from_q_and_v"]


def lambda_returns(r_t: Any, discount_t: Any, v_t: Any, lambda_: Any = 1., stop_target_gradients: bool = False) -> Any:
    """Truncated lambda-returns `G_0..G_{T-1}`.

    Args:
        r_t, discount_t, v_t: float vectors of length T.
        lambda_: float scalar or length-T vector.

    Returns:
        Float vector of length T.

    Raises:
        RLaxInputError: wrong rank/dtype, or r_t, discount_t, v_t of different shapes.
    """
    check("lambda_returns", [("r_t", r_t, 1, "float"), ("discount_t", discount_t, 1, "float"),
                             ("v_t", v_t, 1, "float"), ("lambda_", lambda_, {0, 1}, "float")])
    check_equal_shape("lambda_returns", [("r_t", r_t), ("discount_t", discount_t), ("v_t", v_t)])
    lambda_ = jnp.ones_like(discount_t) * lambda_

    def body(acc, xs):
        r, g, v, lam = xs
        acc = r + g * ((1 - lam) * v + lam * acc)
        return acc, acc

    _, returns = lax.scan(body, v_t[-1], (r_t, discount_t, v_t, lambda_), reverse=True)
    return maybe_stop_gradient(stop_target_gradients, returns)


def n_step_bootstrapped_returns(r_t: Any, discount_t: Any, v_t: Any, n: int, lambda_t: Any = 1.,
                                stop_target_gradients: bool = False) -> Any:
    """n-step bootstrapped returns at times 0..T-1 (with optional lambda mixing, as in RLax).

    Args:
        r_t, discount_t, v_t: float vectors of length T.
        n: number of rewards accumulated before bootstrapping (a Python int >= 1).
        lambda_t: float scalar or length-T vector.

    Raises:
        RLaxInputError: wrong rank/dtype/shapes. ValueError: n < 1.
    """
    check("n_step_bootstrapped_returns", [("r_t", r_t, 1, "float"), ("discount_t", discount_t, 1, "float"),
                                          ("v_t", v_t, 1, "float"), ("lambda_t", lambda_t, {0, 1}, "float")])
    check_equal_shape("n_step_bootstrapped_returns", [("r_t", r_t), ("discount_t", discount_t), ("v_t", v_t)])
    if int(n) < 1:
        raise ValueError(f"n_step_bootstrapped_returns: `n` must be >= 1, got {n}")
    seq_len = r_t.shape[0]
    lambda_t = jnp.ones_like(discount_t) * lambda_t
    last = v_t[-1:]
    pad = n - 1
    # Bootstrap values shifted by n, and every sequence padded to length T + n - 1 (zero reward, unit discount).
    targets = jnp.concatenate([v_t[n - 1:]] + [last] * min(pad, seq_len))
    r_t = jnp.concatenate([r_t, jnp.zeros(pad, r_t.dtype)])
    discount_t = jnp.concatenate([discount_t, jnp.ones(pad, discount_t.dtype)])
    lambda_t = jnp.concatenate([lambda_t, jnp.ones(pad, lambda_t.dtype)])
    v_t = jnp.concatenate([v_t] + [last] * pad)
    for i in reversed(range(n)):
        r_ = r_t[i:i + seq_len]
        g_ = discount_t[i:i + seq_len]
        l_ = lambda_t[i:i + seq_len]
        v_ = v_t[i:i + seq_len]
        targets = r_ + g_ * ((1. - l_) * v_ + l_ * targets)
    return maybe_stop_gradient(stop_target_gradients, targets)


def discounted_returns(r_t: Any, discount_t: Any, v_t: Any, stop_target_gradients: bool = False) -> Any:
    """Discounted returns `G_t = r_{t+1} + g_{t+1} G_{t+1}`, bootstrapping on `v_t`.

    Args:
        r_t, discount_t: float vectors of length T. v_t: float scalar or length-T vector (only the last
            element is used as the bootstrap).

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("discounted_returns", [("r_t", r_t, 1, "float"), ("discount_t", discount_t, 1, "float"),
                                 ("v_t", v_t, {0, 1}, "float")])
    bootstrapped_v = jnp.ones_like(discount_t) * v_t
    return lambda_returns(r_t, discount_t, bootstrapped_v, lambda_=1., stop_target_gradients=stop_target_gradients)


def _reverse_accumulate(deltas: Any, decays: Any) -> Any:
    """`e_t = delta_t + decay_t e_{t+1}` backwards from `e_T = 0` (the shared shape of GAE and IS-corrected TD)."""

    def body(acc, xs):
        delta, decay = xs
        acc = delta + decay * acc
        return acc, acc

    _, out = lax.scan(body, jnp.zeros((), deltas.dtype), (deltas, decays), reverse=True)
    return out


def truncated_generalized_advantage_estimation(r_t: Any, discount_t: Any, lambda_: Any, values: Any,
                                               stop_target_gradients: bool = False) -> Any:
    """Truncated GAE (Schulman et al. 2016, https://arxiv.org/abs/1506.02438; as used by PPO):
    `A_t = delta_t + g_{t+1} lambda_{t+1} A_{t+1}` with `delta_t = r_{t+1} + g_{t+1} v_{t+1} - v_t`, `A_T = 0`.

    Args:
        r_t, discount_t: float vectors of length T (times 1..T). lambda_: scalar or length-T vector.
        values: float vector of length T + 1 (times 0..T).

    Returns:
        Float vector of length T, the advantages at times 0..T-1.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("truncated_generalized_advantage_estimation",
          [("r_t", r_t, 1, "float"), ("values", values, 1, "float"), ("discount_t", discount_t, 1, "float")])
    lambda_ = jnp.ones_like(discount_t) * lambda_
    deltas = r_t + discount_t * values[1:] - values[:-1]
    return maybe_stop_gradient(stop_target_gradients, _reverse_accumulate(deltas, discount_t * lambda_))


def general_off_policy_returns_from_action_values(q_t: Any, a_t: Any, r_t: Any, discount_t: Any, c_t: Any,
                                                  pi_t: Any, stop_target_gradients: bool = False) -> Any:
    """Off-policy returns from action values (Munos et al. 2016, "Safe and Efficient Off-Policy RL",
    https://arxiv.org/abs/1606.02647): `G_t = r_{t+1} + g_{t+1} (E_pi q_{t+1} - c_{t+1} q_{t+1}(a_{t+1}) +
    c_{t+1} G_{t+1})`. The trace `c` selects the algorithm (importance sampling, Q(lambda), tree backup, Retrace).

    Args:
        q_t: float `(K, A)`. a_t: int `(K,)`. r_t, discount_t, c_t: float `(K,)`. pi_t: float `(K, A)` target probs.

    Returns:
        Float vector `(K,)`.

    Raises:
        RLaxInputError: wrong rank/dtype, or the time axes differ.
    """
    fn = "general_off_policy_returns_from_action_values"
    check(fn, [("q_t", q_t, 2, "float"), ("a_t", a_t, 1, "int"), ("r_t", r_t, 1, "float"),
               ("discount_t", discount_t, 1, "float"), ("c_t", c_t, 1, "float"), ("pi_t", pi_t, 2, "float")])
    check_equal_shape(fn, [("q_t[..., 0]", q_t[..., 0]), ("a_t", a_t), ("r_t", r_t), ("discount_t", discount_t),
                           ("c_t", c_t), ("pi_t[..., 0]", pi_t[..., 0])])
    expected_q_t = jnp.sum(pi_t * q_t, axis=-1)
    # The last step's Q-value and trace never enter the returns.
    q_a_t = batched_index(q_t, a_t)[:-1]
    return general_off_policy_returns_from_q_and_v(q_a_t, expected_q_t, r_t, discount_t, c_t[:-1],
                                                   stop_target_gradients)


def general_off_policy_returns_from_q_and_v(q_t: Any, v_t: Any, r_t: Any, discount_t: Any, c_t: Any,
                                            stop_target_gradients: bool = False) -> Any:
    """Off-policy returns from Q-values of the taken actions and state values (Munos et al. 2016):
    `G_t = r_{t+1} + g_{t+1} (v_{t+1} - c_{t+1} q_{t+1} + c_{t+1} G_{t+1})`, starting from
    `G_{K-1} = r_K + g_K v_K`.

    Args:
        q_t, c_t: float `(K - 1,)`. v_t, r_t, discount_t: float `(K,)`.

    Returns:
        Float vector `(K,)`.

    Raises:
        RLaxInputError: wrong rank/dtype, or lengths that do not line up as above.
    """
    fn = "general_off_policy_returns_from_q_and_v"
    check(fn, [("q_t", q_t, 1, "float"), ("v_t", v_t, 1, "float"), ("r_t", r_t, 1, "float"),
               ("discount_t", discount_t, 1, "float"), ("c_t", c_t, 1, "float")])
    check_equal_shape(fn, [("q_t", q_t), ("v_t[:-1]", v_t[:-1]), ("r_t[:-1]", r_t[:-1]),
                           ("discount_t[:-1]", discount_t[:-1]), ("c_t", c_t)])
    last = r_t[-1] + discount_t[-1] * v_t[-1]

    def body(acc, xs):
        r, g, c, v, q = xs
        acc = r + g * (v - c * q + c * acc)
        return acc, acc

    _, returns = lax.scan(body, last, (r_t[:-1], discount_t[:-1], c_t, v_t[:-1], q_t), reverse=True)
    returns = jnp.concatenate([returns, last[None]], axis=0)
    return maybe_stop_gradient(stop_target_gradients, returns)

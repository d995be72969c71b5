"""Value-transformed ("non-linear") Bellman targets: returns are built in the raw value space and mapped back.

With an invertible squashing `h` (a `TxPair(apply=h, apply_inv=h^-1)`), the target for a transformed value function
is `h(T h^-1(v))`, where `T` is any return operator (lambda-returns, n-step, Retrace). Pohlen et al. 2018,
"Observe and Look Further" (https://arxiv.org/abs/1805.11593); the categorical two-hot pairs follow MuZero
(Schrittwieser et al. 2020, https://arxiv.org/abs/1911.08265) and Hessel et al. 2021 ("Muesli").
"""

from __future__ import annotations

import collections
import functools
from typing import Any, Callable

import fluxion.numpy as jnp

from . import _transforms as tx
from ._base import batched_index, one_hot
from ._checks import check
from ._multistep import general_off_policy_returns_from_action_values, lambda_returns, n_step_bootstrapped_returns

__all__ = ["TxPair", "IDENTITY_PAIR", "SIGNED_LOGP1_PAIR", "SIGNED_HYPERBOLIC_PAIR", "HYPERBOLIC_SIN_PAIR",
           "DISCOUNT_TRANSFORM_PAIR", "twohot_pair", "compose_tx", "muzero_pair", "unbiased_transform_pair",
           "transformed_lambda_returns", "transformed_general_off_policy_returns_from_action_values",
           "transformed_n_step_returns", "transformed_q_lambda", "transformed_retrace",
           "transformed_n_step_q_learning"]

TxPair = collections.namedtuple("TxPair", ["apply", "apply_inv"])
TxPair.__doc__ = """An invertible value transformation `h` as a pair of elementwise functions: `apply` (h) and
`apply_inv` (its inverse), used by the transformed Bellman targets (Pohlen et al. 2018, "Observe and Look
Further"). Fields as in RLax."""

IDENTITY_PAIR = TxPair(tx.identity, tx.identity)
SIGNED_LOGP1_PAIR = TxPair(tx.signed_logp1, tx.signed_expm1)
SIGNED_HYPERBOLIC_PAIR = TxPair(tx.signed_hyperbolic, tx.signed_parabolic)
HYPERBOLIC_SIN_PAIR = TxPair(tx.hyperbolic_arcsin, tx.hyperbolic_sin)
# Maps a discount in [0, 1) to a horizon-like quantity -log(1 - g) and back.
DISCOUNT_TRANSFORM_PAIR = TxPair(lambda x: -jnp.log(1 - x), lambda x: 1 - jnp.exp(-x))


def twohot_pair(min_value: float, max_value: float, num_bins: int) -> TxPair:
    """Scalar <-> two-hot probabilities on `num_bins` uniform bins in `[min_value, max_value]`."""
    kw = dict(min_value=min_value, max_value=max_value, num_bins=num_bins)
    return TxPair(functools.partial(tx.transform_to_2hot, **kw), functools.partial(tx.transform_from_2hot, **kw))


def compose_tx(*tx_list: TxPair) -> TxPair:
    """The pair applying `tx_list` left to right (inverse: their inverses right to left)."""

    def apply_fn(x):
        for pair in tx_list:
            x = pair.apply(x)
        return x

    def apply_inv_fn(x):
        for pair in reversed(tx_list):
            x = pair.apply_inv(x)
        return x

    return TxPair(apply_fn, apply_inv_fn)


def muzero_pair(min_value: float, max_value: float, num_bins: int, tx_pair: TxPair) -> TxPair:
    """MuZero's value encoding: squash with `tx_pair`, then two-hot on a uniform support."""
    return compose_tx(tx_pair, twohot_pair(min_value, max_value, num_bins))


def _to_2hot_on_bins(scalar: Any, bins: Any) -> Any:
    # Two-hot on an arbitrary increasing support: the first bin >= scalar is the upper neighbour.
    num_bins = bins.shape[0]
    scalar = jnp.clip(scalar, bins[0], bins[-1])
    upper = jnp.argmax(scalar[..., None] <= bins.reshape(1, -1), axis=-1)
    upper_value, lower_value = bins[upper], bins[upper - 1]
    p_lower = (upper_value - scalar) / (upper_value - lower_value)
    return (one_hot(upper - 1, num_bins) * p_lower[..., None]
            + one_hot(upper, num_bins) * (1 - p_lower)[..., None])


def _from_2hot_on_bins(probs: Any, bins: Any) -> Any:
    return jnp.sum(probs * bins[None], axis=-1)


def unbiased_transform_pair(min_value: float, max_value: float, num_bins: int, tx_pair: TxPair) -> TxPair:
    """Two-hot on the non-uniform support `tx_pair.apply_inv(linspace(min_value, max_value, num_bins))`.

    Encoding the raw scalar directly on the transformed grid keeps the decoded expectation unbiased (no squashing
    inside the expectation), as in Hessel et al. 2021, "Muesli" (https://arxiv.org/abs/2104.06159).
    """
    bins = tx_pair.apply_inv(jnp.linspace(min_value, max_value, num_bins))
    return compose_tx(IDENTITY_PAIR, TxPair(functools.partial(_to_2hot_on_bins, bins=bins),
                                            functools.partial(_from_2hot_on_bins, bins=bins)))


def _transform_values(build_targets: Callable, *value_argnums: int) -> Callable:
    """Wraps `build_targets(*args)` into `f(tx_pair, *args)`: value arguments go through `apply_inv`, the returned
    targets through `apply`."""

    @functools.wraps(build_targets)
    def wrapped(tx_pair, *args, **kwargs):
        args = list(args)
        for i in value_argnums:
            args[i] = tx_pair.apply_inv(args[i])
        return tx_pair.apply(build_targets(*args, **kwargs))

    wrapped.__doc__ = (f"`{build_targets.__name__}` in a transformed value space: `tx_pair.apply` of the targets "
                       f"built from `tx_pair.apply_inv` of the value argument(s) at positions {value_argnums} "
                       f"(after `tx_pair`). Arguments otherwise as for `{build_targets.__name__}`.")
    return wrapped


transformed_lambda_returns = _transform_values(lambda_returns, 2)
transformed_general_off_policy_returns_from_action_values = _transform_values(
    general_off_policy_returns_from_action_values, 0)
transformed_n_step_returns = _transform_values(n_step_bootstrapped_returns, 2)


def transformed_q_lambda(q_tm1: Any, a_tm1: Any, r_t: Any, discount_t: Any, q_t: Any, lambda_: Any,
                         stop_target_gradients: bool = True, tx_pair: TxPair = IDENTITY_PAIR) -> Any:
    """Q(lambda) errors with transformed values (Pohlen et al. 2018): the target is
    `transformed_lambda_returns(tx_pair, r_t, discount_t, max_a q_t, lambda_)`.

    Args:
        q_tm1, q_t: float `(T, A)`. a_tm1: int `(T,)`. r_t, discount_t: float `(T,)`. lambda_: scalar or `(T,)`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("transformed_q_lambda", [("q_tm1", q_tm1, 2, "float"), ("a_tm1", a_tm1, 1, "int"),
                                   ("r_t", r_t, 1, "float"), ("discount_t", discount_t, 1, "float"),
                                   ("q_t", q_t, 2, "float"), ("lambda_", lambda_, {0, 1}, "float")])
    target = transformed_lambda_returns(tx_pair, r_t, discount_t, jnp.max(q_t, axis=-1), lambda_,
                                        stop_target_gradients)
    return target - batched_index(q_tm1, a_tm1)


def transformed_retrace(q_tm1: Any, q_t: Any, a_tm1: Any, a_t: Any, r_t: Any, discount_t: Any, pi_t: Any, mu_t: Any,
                        lambda_: float, eps: float = 1e-8, stop_target_gradients: bool = True,
                        tx_pair: TxPair = IDENTITY_PAIR) -> Any:
    """Retrace errors (Munos et al. 2016) with transformed values; arguments as for `retrace`.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("transformed_retrace", [("q_tm1", q_tm1, 2, "float"), ("q_t", q_t, 2, "float"),
                                  ("a_tm1", a_tm1, 1, "int"), ("a_t", a_t, 1, "int"), ("r_t", r_t, 1, "float"),
                                  ("discount_t", discount_t, 1, "float"), ("pi_t", pi_t, 2, "float"),
                                  ("mu_t", mu_t, 1, "float")])
    c_t = jnp.minimum(1.0, batched_index(pi_t, a_t) / (mu_t + eps)) * lambda_
    target = transformed_general_off_policy_returns_from_action_values(tx_pair, q_t, a_t, r_t, discount_t, c_t,
                                                                       pi_t, stop_target_gradients)
    return target - batched_index(q_tm1, a_tm1)


def transformed_n_step_q_learning(q_tm1: Any, a_tm1: Any, target_q_t: Any, a_t: Any, r_t: Any, discount_t: Any,
                                  n: int, stop_target_gradients: bool = True, tx_pair: TxPair = IDENTITY_PAIR) -> Any:
    """n-step Q-learning errors with transformed values (as in R2D2, Kapturowski et al. 2019): the target is the
    transformed n-step return bootstrapping on `target_q_t[a_t]`.

    Args:
        q_tm1, target_q_t: float `(T, A)`. a_tm1, a_t: int `(T,)`. r_t, discount_t: float `(T,)`. n: Python int.

    Raises:
        RLaxInputError: wrong rank or dtype.
    """
    check("transformed_n_step_q_learning", [("q_tm1", q_tm1, 2, "float"), ("target_q_t", target_q_t, 2, "float"),
                                            ("a_tm1", a_tm1, 1, "int"), ("a_t", a_t, 1, "int"),
                                            ("r_t", r_t, 1, "float"), ("discount_t", discount_t, 1, "float")])
    target = transformed_n_step_returns(tx_pair, r_t, discount_t, batched_index(target_q_t, a_t), n,
                                        stop_target_gradients=stop_target_gradients)
    return target - batched_index(q_tm1, a_tm1)

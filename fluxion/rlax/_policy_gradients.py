"""Policy-gradient and entropy losses over a trajectory of T steps with softmax policies."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp

from ._checks import check, maybe_stop_gradient
from ._distributions import softmax

__all__ = ["policy_gradient_loss", "entropy_loss"]


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

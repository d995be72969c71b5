"""Elementwise losses: on TD errors (L2, Huber), likelihood-based, and expectile regression."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp

from ._checks import check_equal_shape, check_float

__all__ = ["l2_loss", "huber_loss", "likelihood", "log_loss", "expectile_loss"]


def l2_loss(predictions: Any, targets: Any = None) -> Any:
    """`0.5 * (predictions - targets)**2` elementwise (targets default to 0, i.e. an L2 penalty).

    The 1/2 factor follows Bishop, "Pattern Recognition and Machine Learning", so the gradient is the error.

    Raises:
        RLaxInputError: non-float inputs.
    """
    if targets is None:
        targets = jnp.zeros_like(predictions)
    check_float("l2_loss", "predictions", predictions)
    check_float("l2_loss", "targets", targets)
    return 0.5 * (predictions - targets) ** 2


def huber_loss(x: Any, delta: float = 1.) -> Any:
    """Huber (1964) loss: `0.5 x^2` for `|x| <= delta`, `0.5 delta^2 + delta (|x| - delta)` beyond.

    Raises:
        RLaxInputError: non-float `x`.
    """
    check_float("huber_loss", "x", x)
    abs_x = jnp.abs(x)
    quadratic = jnp.minimum(abs_x, delta)
    # `abs_x - quadratic` equals max(abs_x - delta, 0) without doubling the gradient at |x| = delta.
    linear = abs_x - quadratic
    return 0.5 * quadratic ** 2 + delta * linear


def likelihood(predictions: Any, targets: Any) -> Any:
    """Bernoulli likelihood `p^y (1 - p)^(1 - y)` of targets `y` under predicted probabilities `p`, defined as 1
    where `p == y` is exactly 0 or 1 (avoiding `0^0`).

    Raises:
        RLaxInputError: non-float inputs.
    """
    check_float("likelihood", "predictions", predictions)
    check_float("likelihood", "targets", targets)
    values = predictions ** targets * (1. - predictions) ** (1. - targets)
    exact = ((targets == 1) & (predictions == 1)) | ((targets == 0) & (predictions == 0))
    return jnp.where(exact, 1, values)


def log_loss(predictions: Any, targets: Any) -> Any:
    """Binary log loss `-log likelihood(predictions, targets)`.

    Raises:
        RLaxInputError: non-float inputs.
    """
    check_float("log_loss", "predictions", predictions)
    check_float("log_loss", "targets", targets)
    return -jnp.log(likelihood(predictions, targets))


def expectile_loss(predictions: Any, targets: Any, expectile: float) -> Any:
    """Asymmetric squared loss `|tau - 1[u < 0]| u^2` with `u = targets - predictions` and `tau = expectile`
    (Newey & Powell 1987; used by IQL, Kostrikov et al. 2021).

    Raises:
        RLaxInputError: predictions and targets differ in shape.
    """
    check_equal_shape("expectile_loss", [("predictions", predictions), ("targets", targets)])
    diff = targets - predictions
    weight = jnp.abs(expectile - (diff < 0))
    return weight * diff ** 2

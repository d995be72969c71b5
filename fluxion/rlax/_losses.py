"""Elementwise losses on TD errors."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp

from ._checks import RLaxInputError, _dtype

__all__ = ["l2_loss", "huber_loss"]


def _check_float(fn: str, name: str, x: Any) -> None:
    if not jnp.issubdtype(_dtype(x), jnp.floating):
        raise RLaxInputError(f"{fn}: `{name}` must have a floating dtype, got {_dtype(x)}")


def l2_loss(predictions: Any, targets: Any = None) -> Any:
    """`0.5 * (predictions - targets)**2` elementwise (targets default to 0, i.e. an L2 penalty).

    The 1/2 factor follows Bishop, "Pattern Recognition and Machine Learning", so the gradient is the error.

    Raises:
        RLaxInputError: non-float inputs.
    """
    if targets is None:
        targets = jnp.zeros_like(predictions)
    _check_float("l2_loss", "predictions", predictions)
    _check_float("l2_loss", "targets", targets)
    return 0.5 * (predictions - targets) ** 2


def huber_loss(x: Any, delta: float = 1.) -> Any:
    """Huber (1964) loss: `0.5 x^2` for `|x| <= delta`, `0.5 delta^2 + delta (|x| - delta)` beyond.

    Raises:
        RLaxInputError: non-float `x`.
    """
    _check_float("huber_loss", "x", x)
    abs_x = jnp.abs(x)
    quadratic = jnp.minimum(abs_x, delta)
    # `abs_x - quadratic` equals max(abs_x - delta, 0) without doubling the gradient at |x| = delta.
    linear = abs_x - quadratic
    return 0.5 * quadratic ** 2 + delta * linear

"""Invertible squashing functions for value targets and the categorical "two-hot" encoding of scalars.

`signed_hyperbolic` is h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x from Pohlen et al. 2018, "Observe and Look Further"
(https://arxiv.org/abs/1805.11593); `signed_parabolic` is its closed-form inverse (same paper, Proposition A.2).
The two-hot encoding spreads a scalar over its two nearest bins of a uniform support (Schrittwieser et al. 2020,
"MuZero", https://arxiv.org/abs/1911.08265, Appendix F).
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import nn

from ._base import one_hot
from ._checks import check_float

__all__ = ["identity", "sigmoid", "logit", "signed_logp1", "signed_expm1", "signed_hyperbolic", "signed_parabolic",
           "hyperbolic_sin", "hyperbolic_arcsin", "power", "transform_to_2hot", "transform_from_2hot"]


def identity(x: Any) -> Any:
    """`x` unchanged (float only). Raises RLaxInputError for non-float `x`."""
    check_float("identity", "x", x)
    return x


def sigmoid(x: Any) -> Any:
    """`1 / (1 + exp(-x))`. Raises RLaxInputError for non-float `x`."""
    check_float("sigmoid", "x", x)
    return nn.sigmoid(x)


def logit(x: Any) -> Any:
    """Inverse of `sigmoid`: `log(x / (1 - x))` for x in (0, 1). Raises RLaxInputError for non-float `x`."""
    check_float("logit", "x", x)
    return -jnp.log(1. / x - 1.)


def signed_logp1(x: Any) -> Any:
    """`sign(x) log(1 + |x|)`. Raises RLaxInputError for non-float `x`."""
    check_float("signed_logp1", "x", x)
    return jnp.sign(x) * jnp.log1p(jnp.abs(x))


def signed_expm1(x: Any) -> Any:
    """Inverse of `signed_logp1`: `sign(x) (exp(|x|) - 1)`. Raises RLaxInputError for non-float `x`."""
    check_float("signed_expm1", "x", x)
    return jnp.sign(x) * jnp.expm1(jnp.abs(x))


def signed_hyperbolic(x: Any, eps: float = 1e-3) -> Any:
    """`h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x` (Pohlen et al. 2018). Raises RLaxInputError for non-float."""
    check_float("signed_hyperbolic", "x", x)
    return jnp.sign(x) * (jnp.sqrt(jnp.abs(x) + 1) - 1) + eps * x


def signed_parabolic(x: Any, eps: float = 1e-3) -> Any:
    """Inverse of `signed_hyperbolic` with the same `eps`:
    `sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1)`. Raises RLaxInputError for non-float."""
    check_float("signed_parabolic", "x", x)
    # Evaluated as sqrt(.)/(2 eps) - 1/(2 eps), RLax's order: the subtraction cancels digits in float32, and the
    # same order gives the same rounding.
    root = jnp.sqrt(1 + 4 * eps * (eps + 1 + jnp.abs(x))) / 2 / eps - 1 / 2 / eps
    return jnp.sign(x) * (jnp.square(root) - 1)


def hyperbolic_sin(x: Any) -> Any:
    """`sinh(x)` (float only)."""
    check_float("hyperbolic_sin", "x", x)
    return jnp.sinh(x)


def hyperbolic_arcsin(x: Any) -> Any:
    """`arcsinh(x)`, the inverse of `hyperbolic_sin` (float only)."""
    check_float("hyperbolic_arcsin", "x", x)
    return jnp.arcsinh(x)


def power(x: Any, p: float) -> Any:
    """`sign(x) ((|x| / sqrt(p) + 1)^p - 1) / sqrt(p)`: slope 1 at the origin, growth like |x|^p.

    Raises RLaxInputError for non-float `x`."""
    check_float("power", "x", x)
    q = jnp.sqrt(p)
    return jnp.sign(x) * (jnp.power(jnp.abs(x) / q + 1., p) - 1) / q


def transform_to_2hot(scalar: Any, min_value: float, max_value: float, num_bins: int) -> Any:
    """Two-hot encoding on `num_bins` evenly spaced bins from `min_value` to `max_value`.

    The scalar (clipped to the range) puts weight on its two neighbouring bins in proportion to closeness, so
    `transform_from_2hot` recovers it (up to the 1e-5 guard RLax adds to the bin width).

    Args:
        scalar: float array `[...]`.

    Returns:
        Array `[..., num_bins]` of `scalar`'s dtype.
    """
    scalar = jnp.clip(scalar, min_value, max_value)
    position = (scalar - min_value) / (max_value - min_value) * (num_bins - 1)
    lower, upper = jnp.floor(position), jnp.ceil(position)
    lower_value = lower / (num_bins - 1.) * (max_value - min_value) + min_value
    upper_value = upper / (num_bins - 1.) * (max_value - min_value) + min_value
    p_lower = (upper_value - scalar) / (upper_value - lower_value + 1e-5)
    p_upper = 1 - p_lower
    return (one_hot(lower, num_bins, dtype=scalar.dtype) * p_lower[..., None]
            + one_hot(upper, num_bins, dtype=scalar.dtype) * p_upper[..., None])


def transform_from_2hot(probs: Any, min_value: float, max_value: float, num_bins: int) -> Any:
    """Expected value of the bin distribution `probs` `[..., num_bins]` over the uniform support: `[...]`."""
    support = jnp.linspace(min_value, max_value, num_bins).astype(probs.dtype)
    return jnp.sum(probs * support[None], axis=-1)

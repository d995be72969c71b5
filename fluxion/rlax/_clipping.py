"""Gradient clipping that leaves the forward value untouched."""

from __future__ import annotations

from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import tree_util

from ._checks import check_float

__all__ = ["clip_gradient"]


@fluxion.custom_vjp
def _clip_gradient(x, gradient_min, gradient_max):
    return x


def _fwd(x, gradient_min, gradient_max):
    return x, (gradient_min, gradient_max)


def _bwd(bounds, g):
    lo, hi = bounds
    # The bounds are hyper-parameters: they receive zero cotangents.
    return (tree_util.tree_map(lambda t: jnp.clip(t, lo, hi), g), jnp.zeros_like(lo), jnp.zeros_like(hi))


_clip_gradient.defvjp(_fwd, _bwd)


def clip_gradient(x: Any, gradient_min: float, gradient_max: float) -> Any:
    """Identity in the forward pass; the backward pass clips the incoming gradient to `[gradient_min, gradient_max]`.

    Raises:
        RLaxInputError: non-float `x`.
    """
    check_float("clip_gradient", "x", x)
    return _clip_gradient(x, jnp.asarray(gradient_min, jnp.float32), jnp.asarray(gradient_max, jnp.float32))

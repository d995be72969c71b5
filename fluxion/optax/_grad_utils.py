"""Small differentiable-programming utilities: ``scale_gradient`` and ``multi_normal``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import fluxion
import fluxion.numpy as jnp
import fluxion.random as jrandom
from fluxion import lax, tree_util


@fluxion.custom_vjp
def _scale_gradient(inputs: Any, scale: Any) -> Any:
    del scale
    return inputs


def _scale_gradient_fwd(inputs, scale):
    return inputs, scale


def _scale_gradient_bwd(scale, g):
    return tree_util.tree_map(lambda x: x * scale, g), None


_scale_gradient.defvjp(_scale_gradient_fwd, _scale_gradient_bwd)


def scale_gradient(inputs: Any, scale: Any) -> Any:
    """Identity in the forward pass; multiplies the gradient by ``scale`` in the backward pass.

    ``scale == 0`` is ``stop_gradient``; ``scale == 1`` returns ``inputs``.
    """
    if isinstance(scale, (int, float)) and scale == 1.0:
        return inputs
    if isinstance(scale, (int, float)) and scale == 0.0:
        return lax.stop_gradient(inputs)
    return _scale_gradient(inputs, scale)


class MultiNormalDiagFromLogScale:
    """Diagonal Gaussian parameterised by mean ``loc`` and ``log_scale``."""

    def __init__(self, loc: Any, log_scale: Any):
        self._log_scale = jnp.asarray(log_scale)
        self._scale = jnp.exp(self._log_scale)
        self._mean = jnp.asarray(loc)
        self._param_shape = tuple(np.broadcast_shapes(self._mean.shape, self._scale.shape))

    def sample(self, shape: tuple, key: Any) -> Any:
        """Draws ``shape + param_shape`` samples (same draws as optax for the same key)."""
        return jrandom.normal(key, shape=tuple(shape) + self._param_shape) * self._scale + \
            self._mean

    def log_prob(self, x: Any) -> Any:
        """Log-density of ``x``, summed over the parameter axes."""
        z = (x - self._mean) / self._scale
        logpdf = -0.5 * z ** 2 - jnp.log(self._scale) - 0.5 * math.log(2 * math.pi)
        return jnp.sum(logpdf, axis=[-(i + 1) for i in range(len(self._param_shape))])

    @property
    def log_scale(self) -> Any:
        return self._log_scale

    @property
    def params(self) -> list:
        return [self._mean, self._log_scale]


def multi_normal(loc: Any, log_scale: Any) -> MultiNormalDiagFromLogScale:
    """A :class:`MultiNormalDiagFromLogScale` (used by Monte-Carlo gradient estimators)."""
    return MultiNormalDiagFromLogScale(loc=loc, log_scale=log_scale)

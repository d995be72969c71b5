"""Dropout (mirrors ``flax.linen.stochastic``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import fluxion.numpy as jnp
from fluxion import lax, random

from .module import Module, compact, merge_param

Array = Any
PRNGKey = Any


class Dropout(Module):
    """Zeroes each input element with probability ``rate`` and rescales the rest.

    In training mode (``deterministic=False``) the output is
    ``where(keep, x / (1 - rate), 0)`` with ``keep ~ Bernoulli(1 - rate)``
    drawn from the ``rng_collection`` PRNG stream (``'dropout'``): pass
    ``rngs={'dropout': key}`` to ``apply``. In deterministic mode the input is
    returned unchanged.

    Attributes:
        rate: probability of dropping an element (not the keep rate).
        broadcast_dims: axes along which one mask value is shared, e.g.
            ``(1,)`` to drop whole time steps of ``[batch, time, features]``.
        deterministic: may instead be passed at call time.
        rng_collection: name of the PRNG stream to draw from.
    """

    rate: float
    broadcast_dims: Sequence[int] = ()
    deterministic: Optional[bool] = None
    rng_collection: str = 'dropout'

    @compact
    def __call__(self, inputs: Array, deterministic: Optional[bool] = None,
                 rng: Optional[PRNGKey] = None) -> Array:
        """Applies dropout; returns an array of the shape and dtype of ``inputs``.

        Args:
            inputs: any array.
            deterministic: overrides nothing: give it here or as a field, not both.
            rng: an explicit key instead of ``make_rng(rng_collection)``.

        Raises:
            ValueError: ``deterministic`` given twice or not at all.
            InvalidRngError: training mode without a ``'dropout'`` stream.
        """
        deterministic = merge_param('deterministic', self.deterministic, deterministic)
        if self.rate == 0.0 or deterministic:
            return inputs
        if self.rate == 1.0:
            return jnp.zeros_like(inputs)
        keep_prob = 1.0 - self.rate
        if rng is None:
            rng = self.make_rng(self.rng_collection)
        mask_shape = list(inputs.shape)
        for dim in self.broadcast_dims:
            mask_shape[dim] = 1
        keep = random.bernoulli(rng, p=keep_prob, shape=mask_shape)
        keep = jnp.broadcast_to(keep, inputs.shape)
        return lax.select(keep, inputs / keep_prob, jnp.zeros_like(inputs))

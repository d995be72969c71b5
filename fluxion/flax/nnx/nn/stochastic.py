"""Dropout (mirrors ``flax.nnx.nn.stochastic``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import fluxion.numpy as jnp
from fluxion import lax, random

from ..module import Module
from ..rngs import Rngs, RngStream


class Dropout(Module):
    """Zeroes each element with probability ``rate`` and scales the rest by ``1 / (1 - rate)``.

    The mask is drawn with one key from the stream ``rng_collection``
    (``'dropout'``, falling back to ``default``).  Given ``rngs`` at construction,
    the layer keeps its own stream forked from it (attribute ``rngs``), as Flax
    does; ``rngs`` passed to a call (Rngs, RngStream or a key) takes precedence.
    ``broadcast_dims`` share one mask value along those axes.  With
    ``deterministic`` (constructor, call, or ``model.eval()``) the input is
    returned unchanged.  Srivastava et al. 2014, "Dropout".

    Raises:
      ValueError: not deterministic and no rngs available.
      TypeError: ``rngs`` of another type.
    """

    def __init__(self, rate: float, *, broadcast_dims: Sequence[int] = (), deterministic: Any = False,
                 rng_collection: str = 'dropout', rngs: Any = None):
        self.rate = rate
        self.broadcast_dims = broadcast_dims
        self.deterministic = deterministic
        self.rng_collection = rng_collection
        if isinstance(rngs, Rngs):
            self.rngs = rngs[rng_collection].fork()
        elif isinstance(rngs, RngStream):
            self.rngs = rngs.fork()
        elif rngs is None:
            self.rngs = None
        else:
            raise TypeError(f'rngs must be a Rngs, RngStream or None, but got {type(rngs)}.')

    def __call__(self, inputs: Any, *, deterministic: Any = None, rngs: Any = None) -> Any:
        deterministic = self.deterministic if deterministic is None else deterministic
        if deterministic is None:
            raise ValueError('No `deterministic` argument was provided to Dropout: pass it to the constructor '
                             'or the call, or use model.eval()/model.train().')
        if self.rate == 0.0 or deterministic:
            return inputs
        if self.rate == 1.0:
            return jnp.zeros_like(inputs)
        rngs = self.rngs if rngs is None else rngs
        if rngs is None:
            raise ValueError('`deterministic` is False, but no `rngs` argument was provided to Dropout as either '
                             'a __call__ argument or class attribute.')
        if isinstance(rngs, Rngs):
            key = rngs[self.rng_collection]()
        elif isinstance(rngs, RngStream):
            key = rngs()
        elif hasattr(rngs, 'dtype'):
            key = rngs
        else:
            raise TypeError(f'rngs must be a Rngs, RngStream or key array, but got {type(rngs)}.')
        keep_prob = 1.0 - self.rate
        shape = list(inputs.shape)
        for dim in self.broadcast_dims:
            shape[dim] = 1
        mask = jnp.broadcast_to(random.bernoulli(key, p=keep_prob, shape=shape), inputs.shape)
        return lax.select(mask, inputs / keep_prob, jnp.zeros_like(inputs))

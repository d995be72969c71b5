"""``nnx.EMA``: an exponential moving average of a model's Variables (mirrors ``flax.nnx.training.ema``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp

from ..pytreelib import Pytree, data
from ..graph import merge, split, state
from ..state import from_flat_state, merge_state, to_flat_state
from ..variables import Variable


def _copy_variables(st: Any) -> Any:
    flat = []
    for path, v in to_flat_state(st):
        if not isinstance(v, Variable):
            raise TypeError(f"EMA only supports Variable leaves, got {type(v).__name__} at path "
                            f"'{'/'.join(map(str, path))}'. Use the `only` filter to select Variable leaves.")
        flat.append((path, type(v)(jnp.copy(v.get_value()), **v.get_metadata())))
    return from_flat_state(flat)


class EMA(Pytree):
    """Shadow copies (``params``) of the Variables of ``params`` selected by ``only``, averaged by :meth:`update`.

    ``update(model)`` sets each shadow ``ema = decay * ema + (1 - decay) * value``;
    ``apply_to(model)`` returns a model (same structure) that uses the shadow Variables.

    Raises:
      TypeError: a selected leaf is not a Variable.
    """

    def __init__(self, params: Any, decay: float, *, only: Any = ..., graph: Any = None):
        self.decay = decay
        self.filter = only
        self.params = data(_copy_variables(state(params, only)))

    def update(self, updates: Any) -> None:
        """``ema = decay * ema + (1 - decay) * value`` for each tracked Variable of ``updates`` (same paths)."""
        new = dict(to_flat_state(state(updates, self.filter)))
        for path, ema in to_flat_state(self.params):
            value = new[path]
            value = value.get_value() if isinstance(value, Variable) else value
            ema[...] = self.decay * ema[...] + (1.0 - self.decay) * value

    def apply_to(self, model: Any) -> Any:
        """A model with ``model``'s structure whose tracked Variables are the EMA's (shared, not copied)."""
        graphdef, st = split(model)
        return merge(graphdef, merge_state(st, self.params))

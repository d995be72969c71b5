"""``nnx.Optimizer``: an optax-style transformation and its state, stored as NNX state
(mirrors ``flax.nnx.training.optimizer``, 0.12 API: the model is passed to ``update``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import tree_util
from fluxion.optax import apply_updates

from ..pytreelib import Pytree, data
from ..graph import state, update
from ..variables import Param, Variable


class OptState(Variable):
    """Any optimizer state (the step counter)."""


class OptArray(OptState):
    """Optimizer state for a plain array leaf of the transformation's state (e.g. Adam's ``count``)."""


class OptVariable(OptState):
    """Optimizer state mirroring a model Variable (e.g. Adam's ``mu``/``nu``); keeps its metadata."""


def _is_var(x: Any) -> bool:
    return isinstance(x, Variable)


def to_opt_state(tree: Any) -> Any:
    """Wraps each leaf of an optimizer state: Variables become OptVariable (metadata kept), arrays OptArray."""
    def wrap(x: Any) -> Any:
        if isinstance(x, Variable):
            return OptVariable(x.get_value(), **x.get_metadata())
        return OptArray(x)
    return tree_util.tree_map(wrap, tree, is_leaf=_is_var)


def _pure(tree: Any) -> Any:
    return tree_util.tree_map(lambda v: v.get_value() if isinstance(v, Variable) else v, tree, is_leaf=_is_var)


class Optimizer(Pytree):
    """Holds ``tx`` (a ``fluxion.optax`` GradientTransformation), its state for the Variables of ``model``
    matching ``wrt``, and a ``step`` counter.

    ``update(model, grads)`` computes ``tx.update(grads, opt_state, params)``,
    applies the updates to the model's ``wrt`` Variables in place, stores the
    new optimizer state, increments ``step`` and returns the updates.  Extra
    keyword arguments go to ``tx.update`` (for ``GradientTransformationExtraArgs``).

    Raises:
      TypeError: ``wrt`` not given (required since Flax 0.11), or ``update``
        called without ``grads``; reading ``optimizer.model`` (0.11+ has none).
    """

    def __init__(self, model: Any, tx: Any, *, wrt: Any = None, graph: Any = None):
        if wrt is None:
            raise TypeError('Missing required argument `wrt`. As of Flax 0.11.0 the `wrt` argument is required, '
                            'e.g. nnx.Optimizer(model, tx, wrt=nnx.Param).')
        self.step = OptState(jnp.array(0, dtype=jnp.uint32))
        self.tx = tx
        self.opt_state = data(to_opt_state(tx.init(state(model, wrt))))
        self.wrt = wrt

    def __getattr__(self, name: str) -> Any:
        if name == 'model':
            raise AttributeError(f"{type(self).__name__} does not have attribute 'model' since Flax 0.11.0. "
                                 'Use nnx.ModelAndOptimizer to keep the model inside the optimizer.')
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def update(self, model: Any, grads: Any = None, /, **kwargs: Any) -> Any:
        """Applies one step of ``tx`` to ``model``'s ``wrt`` Variables in place; returns the updates."""
        if grads is None:
            raise TypeError('Missing required argument `grads`: call optimizer.update(model, grads).')
        params = _pure(state(model, self.wrt))
        grad_arrays = _pure(state(grads, self.wrt) if hasattr(grads, 'flat_state') else grads)
        opt_arrays = _pure(self.opt_state)
        updates, new_opt_state = self.tx.update(grad_arrays, opt_arrays, params, **_pure(kwargs))
        update(model, apply_updates(params, updates))
        # The new optimizer state has the structure of the old one: write its leaves into the Variables.
        holders = tree_util.tree_leaves(self.opt_state, is_leaf=_is_var)
        values = tree_util.tree_leaves(_pure(new_opt_state))
        if len(holders) != len(values):
            raise ValueError('the optimizer state changed structure during update')
        for holder, value in zip(holders, values):
            holder.set_value(value)
        self.step[...] = self.step[...] + 1
        return updates


class ModelAndOptimizer(Optimizer):
    """Deprecated in Flax: an Optimizer that keeps ``model`` and whose ``update(grads)`` updates it."""

    def __init__(self, model: Any, tx: Any, *, wrt: Any = Param):
        super().__init__(model, tx, wrt=wrt)
        self.model = model

    def update(self, grads: Any, /, **kwargs: Any) -> Any:  # type: ignore[override]
        """Applies one step to the stored model."""
        return super().update(self.model, grads, **kwargs)

"""``TrainState``: parameters, optimizer and step in one pytree (mirrors ``flax.training.train_state``).

Typical use::

    state = TrainState.create(apply_fn=model.apply, params=variables['params'],
                              tx=optax.adam(1e-3))

    @fluxion.jit
    def train_step(state, batch):
        grads = fluxion.grad(loss_fn)(state.params, batch)
        return state.apply_gradients(grads=grads)

``step``, ``params`` and ``opt_state`` are pytree children (traced by
``jit``/``grad``); ``apply_fn`` and ``tx`` are static fields, so a new jit
compilation happens only when they change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fluxion import optax

from .. import struct

Array = Any
PyTree = Any


class TrainState(struct.PyTreeNode):
    """A simple training state for one optimizer and one parameter tree.

    Subclass it to carry more fields (e.g. ``batch_stats``) and pass them to
    :meth:`create` / :meth:`apply_gradients` as keyword arguments.

    Attributes:
        step: number of :meth:`apply_gradients` calls so far (int, an array under jit).
        apply_fn: usually ``model.apply`` (static).
        params: the parameters being optimized.
        tx: the optimizer, an ``optax``-style ``GradientTransformation`` (static).
        opt_state: ``tx``'s state for ``params``.
    """

    step: int | Array
    apply_fn: Callable[..., Any] = struct.field(pytree_node=False)
    params: PyTree = struct.field(pytree_node=True)
    tx: Any = struct.field(pytree_node=False)
    opt_state: PyTree = struct.field(pytree_node=True)

    def apply_gradients(self, *, grads: PyTree, **kwargs: Any) -> 'TrainState':
        """Applies one optimizer update; returns the new state with ``step + 1``.

        Args:
            grads: gradients with the structure of ``params``.
            **kwargs: other fields to replace at the same time.

        Returns:
            ``self.replace(step=step + 1, params=new_params, opt_state=new_opt_state, **kwargs)``.
        """
        updates, new_opt_state = self.tx.update(grads, self.opt_state, self.params)
        new_params = optax.apply_updates(self.params, updates)
        return self.replace(step=self.step + 1, params=new_params, opt_state=new_opt_state,
                            **kwargs)

    @classmethod
    def create(cls, *, apply_fn: Callable[..., Any], params: PyTree, tx: Any,
               **kwargs: Any) -> 'TrainState':
        """Builds a state at step 0, initializing the optimizer with ``tx.init(params)``.

        Args:
            apply_fn: the function computing the model (usually ``model.apply``).
            params: the parameters to optimize.
            tx: a ``GradientTransformation`` (``init``/``update`` pair).
            **kwargs: values of extra fields declared by a subclass.
        """
        return cls(step=0, apply_fn=apply_fn, params=params, tx=tx,
                   opt_state=tx.init(params), **kwargs)

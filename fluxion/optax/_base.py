"""Core types of fluxion.optax: gradient transformations and their states.

A *gradient transformation* is a pair of pure functions ``(init, update)``:

* ``init(params) -> state`` builds the optimizer state for a pytree of
  parameters;
* ``update(updates, state, params=None) -> (new_updates, new_state)`` maps a
  pytree of gradients (or already transformed updates) to new updates.

Optimizers are built by chaining such pairs (see :func:`fluxion.optax.chain`).
The layout of every state object mirrors optax 0.2.x exactly (same NamedTuple
names, field names and field order) so code that indexes into optimizer
states, e.g. ``opt_state[0].mu['params']``, runs unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, Optional, Protocol, Union, runtime_checkable

import fluxion.numpy as jnp
from fluxion import tree_util

# Type aliases. States, parameters and updates are arbitrary nests of arrays.
PyTree = Any
ArrayTree = Union[Any, Iterable['ArrayTree'], Mapping[Any, 'ArrayTree']]
"""A pytree of arrays: an array, or nested lists, tuples, dicts (or registered nodes) of arrays."""
OptState = ArrayTree
"""The state of a gradient transformation: a pytree of arrays, usually NamedTuples such as ``ScaleByAdamState``."""
Params = ArrayTree
"""Model parameters: a pytree of arrays, the structure ``updates`` and ``grads`` share."""
Updates = Params
"""Updates (gradients on the way in, steps on the way out): a pytree shaped like the parameters."""
Shape = tuple
Schedule = Callable[[Any], Any]
"""A schedule: a function from the step count (an int32 scalar) to a value, usually a learning rate."""
ScheduleState = Any
ScalarOrSchedule = Union[float, Any, Schedule]
"""A hyperparameter given either as a constant (float or scalar array) or as a ``Schedule`` of the step count."""
MaskOrFn = Optional[Union[Any, Callable[[Params], Any]]]
"""A mask for ``masked``/weight decay: None (all parameters), a pytree of booleans shaped like the parameters (a
prefix of them), or a function from the parameters to such a pytree."""

NO_PARAMS_MSG = (
    'This transformation needs the current parameter values, but `params` was '
    'not passed to `update(updates, state, params)`.'
)


def require_params(params: Optional[Params], name: str) -> None:
    """Raises a clear error when a transformation that needs params gets None.

    Args:
        params: the ``params`` argument received by an ``update`` function.
        name: name of the transformation, used in the error message.

    Raises:
        ValueError: if ``params`` is None.
    """
    if params is None:
        raise ValueError(f'{name}: {NO_PARAMS_MSG}')


class TransformInitFn(Protocol):
    """Signature of ``GradientTransformation.init``: ``params -> state``."""

    def __call__(self, params: Params) -> OptState:
        ...


class TransformUpdateFn(Protocol):
    """Signature of ``GradientTransformation.update``."""

    def __call__(self, updates: Updates, state: OptState,
                 params: Optional[Params] = None) -> tuple[Updates, OptState]:
        ...


class TransformUpdateExtraArgsFn(Protocol):
    """Signature of an ``update`` that accepts extra keyword arguments."""

    def __call__(self, updates: Updates, state: OptState,
                 params: Optional[Params] = None,
                 **extra_args: Any) -> tuple[Updates, OptState]:
        ...


@runtime_checkable
class StatefulSchedule(Protocol):
    """A schedule that carries its own state (used by inject_hyperparams).

    ``init() -> state``, ``update(state, **extra_args) -> state`` and
    ``__call__(state, **extra_args) -> value``.
    """

    def init(self) -> ScheduleState:
        ...

    def update(self, state: ScheduleState, **extra_args: Any) -> ScheduleState:
        ...

    def __call__(self, state: ScheduleState, **extra_args: Any) -> Any:
        ...


class GradientTransformation(NamedTuple):
    """A pair of pure functions ``(init, update)`` defining an optimizer step.

    Attributes:
        init: ``init(params) -> state``.
        update: ``update(updates, state, params=None) -> (updates, state)``.
    """
    init: TransformInitFn
    update: TransformUpdateFn


class GradientTransformationExtraArgs(GradientTransformation):
    """A GradientTransformation whose ``update`` accepts ``**extra_args``.

    Extra keyword arguments (e.g. ``value=loss``) are forwarded by
    :func:`fluxion.optax.chain` to every inner transformation; transformations
    that do not need them simply ignore them.
    """
    update: TransformUpdateExtraArgsFn


class EmptyState(NamedTuple):
    """State of stateless transformations: a NamedTuple with no fields."""


def init_empty_state(params: Params) -> EmptyState:
    """``init`` function of stateless transformations; ignores ``params``."""
    del params
    return EmptyState()


def identity() -> GradientTransformation:
    """Returns a stateless transformation that leaves updates unchanged."""

    def update_fn(updates, state, params=None):
        del params
        return updates, state

    return GradientTransformation(init_empty_state, update_fn)


def set_to_zero() -> GradientTransformation:
    """Returns a stateless transformation that replaces every update with 0.

    Combined with :func:`fluxion.optax.multi_transform` this freezes parameters.
    Each zero array keeps the shape and dtype of the update it replaces.
    """

    def update_fn(updates, state, params=None):
        del params
        return tree_util.tree_map(jnp.zeros_like, updates), state

    return GradientTransformation(init_empty_state, update_fn)


def stateless(f: Callable[[Updates, Optional[Params]], Updates]
              ) -> GradientTransformation:
    """Builds a stateless transformation from ``f(updates, params) -> updates``.

    Args:
        f: function applied to the whole updates pytree (and params, or None).

    Returns:
        A GradientTransformation whose state is ``EmptyState()``.
    """

    def update_fn(updates, state, params=None):
        del state
        return f(updates, params), EmptyState()

    return GradientTransformation(init_empty_state, update_fn)


def stateless_with_tree_map(f: Callable[[Any, Any], Any]
                            ) -> GradientTransformation:
    """Builds a stateless transformation applying ``f(update, param)`` leafwise.

    Args:
        f: function of one update array and the matching parameter array (or
            None when ``update`` is called without params).

    Returns:
        A GradientTransformation whose state is ``EmptyState()``.
    """

    def update_fn(updates, state, params=None):
        del state
        if params is None:
            return tree_util.tree_map(lambda u: f(u, None), updates), EmptyState()
        return tree_util.tree_map(f, updates, params), EmptyState()

    return GradientTransformation(init_empty_state, update_fn)


def with_extra_args_support(tx: GradientTransformation
                            ) -> GradientTransformationExtraArgs:
    """Wraps ``tx`` so that its ``update`` accepts and ignores ``**extra_args``.

    Args:
        tx: any GradientTransformation. Returned unchanged if it already is a
            GradientTransformationExtraArgs.

    Returns:
        A GradientTransformationExtraArgs with the same ``init``.

    Raises:
        TypeError: if ``tx`` has no ``init``/``update`` attributes.
    """
    if isinstance(tx, GradientTransformationExtraArgs):
        return tx
    if not (hasattr(tx, 'init') and hasattr(tx, 'update')):
        raise TypeError(
            'Expected a GradientTransformation (an object with `init` and '
            f'`update`), got {type(tx).__name__}.')

    def update(updates, state, params=None, **extra_args):
        del extra_args
        return tx.update(updates, state, params)

    return GradientTransformationExtraArgs(tx.init, update)


"""Storing hyperparameters in the optimizer state (``inject_hyperparams``).

Wrapping an optimizer factory lets numeric hyperparameters (and schedules)
live in ``opt_state.hyperparams``, where they can be read for logging or
modified between steps, e.g. ``opt_state.hyperparams['learning_rate'] = 0.1``.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Optional, Union

import numpy as np

import fluxion
import fluxion.numpy as jnp

from . import _numerics
from ._base import (GradientTransformation, GradientTransformationExtraArgs, OptState,
                    Schedule, StatefulSchedule, with_extra_args_support)
from ._tree_math import tree_dtype


class InjectHyperparamsState(NamedTuple):
    """Older optax state layout: ``count``, ``hyperparams``, ``inner_state``."""
    count: Any
    hyperparams: dict[str, Any]
    inner_state: OptState


class InjectStatefulHyperparamsState(NamedTuple):
    """State of :func:`inject_hyperparams` (optax >= 0.2.3 layout).

    Attributes:
        count: int32 number of updates.
        hyperparams: current value of every numeric or scheduled hyperparameter.
        hyperparams_states: state of each scheduled hyperparameter.
        inner_state: state of the wrapped optimizer.
    """
    count: Any
    hyperparams: dict[str, Any]
    hyperparams_states: dict[str, Any]
    inner_state: OptState


class WrappedScheduleState(NamedTuple):
    """State of a :class:`WrappedSchedule`: the int32 step count."""
    count: Any


class WrappedSchedule:
    """Turns a plain schedule ``count -> value`` into a StatefulSchedule."""

    def __init__(self, schedule_fn: Schedule):
        self.schedule_fn = schedule_fn

    def init(self) -> WrappedScheduleState:
        return WrappedScheduleState(count=jnp.zeros([], jnp.int32))

    def update(self, state: WrappedScheduleState, **extra_args: Any) -> WrappedScheduleState:
        del extra_args
        return WrappedScheduleState(count=_numerics.safe_increment(state.count))

    def __call__(self, state: WrappedScheduleState, **extra_args: Any) -> Any:
        del extra_args
        return self.schedule_fn(state.count)


def _convert_floats(x: Any, dtype: Any) -> Any:
    """Casts floating hyperparameters to ``dtype``; leaves others alone.

    Strongly typed arrays keep their dtype (the user chose it); Python floats
    and weakly typed arrays follow the parameters' dtype.
    """
    if isinstance(x, fluxion.Array) and not getattr(x, 'weak_type', False):
        return x
    is_float = (isinstance(x, float) if not hasattr(x, 'dtype')
                else jnp.issubdtype(x.dtype, jnp.floating))
    return jnp.asarray(x, dtype=dtype) if is_float else x


def inject_hyperparams(inner_factory: Callable[..., GradientTransformation],
                       static_args: Union[str, Iterable[str]] = (),
                       hyperparam_dtype: Optional[Any] = None
                       ) -> Callable[..., GradientTransformationExtraArgs]:
    """Wraps an optimizer factory so its hyperparameters live in the state.

    Example: ``inject_hyperparams(adam)(learning_rate=schedule)``; then
    ``state.hyperparams['learning_rate']`` holds the current rate.

    Numeric arguments (ints, floats, arrays) become entries of
    ``hyperparams``; callables become schedules evaluated at every step;
    booleans, ``static_args`` and other objects are passed through unchanged.

    Args:
        inner_factory: function returning a GradientTransformation (e.g. adam).
        static_args: names of arguments never to inject.
        hyperparam_dtype: dtype of floating hyperparameters (default: the
            highest dtype among the params).

    Returns:
        A factory with the same signature whose transformations have state
        :class:`InjectStatefulHyperparamsState`.

    Raises:
        ValueError: if ``static_args`` names unknown parameters.
    """
    static_args = {static_args} if isinstance(static_args, str) else set(static_args)
    signature = inspect.signature(inner_factory)
    unknown = static_args - set(signature.parameters)
    if unknown:
        raise ValueError(
            f'inject_hyperparams: static_args {sorted(unknown)} are not parameters of '
            f'{getattr(inner_factory, "__name__", inner_factory)}; its parameters are '
            f'{list(signature.parameters)}.')

    @functools.wraps(inner_factory)
    def wrapped(*args: Any, **kwargs: Any) -> GradientTransformationExtraArgs:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        sched_hps, numeric_hps, other_hps = {}, {}, {}
        for name, value in bound.arguments.items():
            if name in static_args or isinstance(value, bool):
                other_hps[name] = value
            elif isinstance(value, StatefulSchedule):
                sched_hps[name] = value
            elif callable(value):
                sched_hps[name] = WrappedSchedule(value)
            elif isinstance(value, (int, float, np.ndarray, np.generic, fluxion.Array)):
                numeric_hps[name] = value
            else:
                other_hps[name] = value

        def dtype_for(params):
            if hyperparam_dtype is not None:
                return hyperparam_dtype
            return tree_dtype(params, 'highest')

        def init_fn(params):
            dtype = dtype_for(params)
            hparams = {k: jnp.asarray(_convert_floats(v, dtype)) for k, v in numeric_hps.items()}
            hparams_states = {k: f.init() for k, f in sched_hps.items()}
            hparams.update({k: _convert_floats(f(hparams_states[k]), dtype)
                            for k, f in sched_hps.items()})
            return InjectStatefulHyperparamsState(
                count=jnp.zeros([], jnp.int32), hyperparams=hparams,
                hyperparams_states=hparams_states,
                inner_state=inner_factory(**other_hps, **hparams).init(params))

        def update_fn(updates, state, params=None, **extra_args):
            dtype = dtype_for(params)
            hparams = {k: _convert_floats(v, dtype) for k, v in state.hyperparams.items()}
            hparams.update({
                k: _convert_floats(f(state.hyperparams_states[k], **extra_args), dtype)
                for k, f in sched_hps.items()})
            hparams_states = {k: f.update(state.hyperparams_states[k], **extra_args)
                              for k, f in sched_hps.items()}
            updates, inner_state = with_extra_args_support(
                inner_factory(**other_hps, **hparams)).update(
                    updates, state.inner_state, params, **extra_args)
            return updates, InjectStatefulHyperparamsState(
                count=_numerics.safe_increment(state.count), hyperparams=hparams,
                hyperparams_states=hparams_states, inner_state=inner_state)

        return GradientTransformationExtraArgs(init_fn, update_fn)

    return wrapped


def inject_stateful_hyperparams(inner_factory: Callable[..., GradientTransformation],
                                static_args: Union[str, Iterable[str]] = (),
                                hyperparam_dtype: Optional[Any] = None
                                ) -> Callable[..., GradientTransformationExtraArgs]:
    """Deprecated alias of :func:`inject_hyperparams` (which handles stateful
    schedules too); warns with a DeprecationWarning."""
    warnings.warn('inject_stateful_hyperparams is deprecated, use inject_hyperparams.',
                  DeprecationWarning, stacklevel=2)
    return inject_hyperparams(inner_factory, static_args, hyperparam_dtype)

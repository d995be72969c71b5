"""Transformations that record measurements of the updates without changing them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Optional

from ._accumulation import ema
from ._base import (GradientTransformation, GradientTransformationExtraArgs, OptState, stateless,
                    with_extra_args_support)
from ._combine import chain


class SnapshotState(NamedTuple):
    """State of :func:`snapshot`: ``{measure_name: measurement}``."""
    measurement: dict


def snapshot(measure_name: str, measure: Callable[[Any], Any]) -> GradientTransformation:
    """Stores ``measure(updates)`` in the state under ``measure_name``; updates pass through.

    ``init`` stores ``measure(params)``.

    Returns:
        State ``SnapshotState({measure_name: value})``.
    """

    def init_fn(params):
        return SnapshotState({measure_name: measure(params)})

    def update_fn(updates, state, params=None):
        del params, state
        return updates, SnapshotState({measure_name: measure(updates)})

    return GradientTransformation(init_fn, update_fn)


class MonitorState(NamedTuple):
    """State of :func:`monitor`: latest ``measurements`` and each measure's state."""
    measurements: dict
    measure_states: tuple


def monitor(measures: dict) -> GradientTransformationExtraArgs:
    """Records several measurements of the updates; updates pass through.

    Args:
        measures: name -> either a function ``updates -> value`` or a
            transformation whose *output updates* are taken as the measurement
            (e.g. :func:`measure_with_ema`).

    Returns:
        State ``MonitorState(measurements, measure_states)``; ``measurements``
        is empty after ``init``.
    """
    txs = {}
    for name, measure in measures.items():
        if callable(measure):
            tx = stateless(lambda u, _, m=measure: m(u))
        else:
            tx = measure
        txs[name] = with_extra_args_support(tx)
    names = tuple(txs)

    def init_fn(params):
        return MonitorState({}, tuple(txs[n].init(params) for n in names))

    def update_fn(updates, state, params=None, **extra_args):
        measurements, new_states = {}, []
        for i, name in enumerate(names):
            measurements[name], s = txs[name].update(updates, state.measure_states[i], params,
                                                     **extra_args)
            new_states.append(s)
        return updates, MonitorState(measurements, tuple(new_states))

    return GradientTransformationExtraArgs(init_fn, update_fn)


def measure_with_ema(measure: Callable[[Any], Any], decay: Any, debias: bool = True,
                     accumulator_dtype: Optional[Any] = None) -> GradientTransformationExtraArgs:
    """A transformation whose output is an EMA of ``measure(updates)``.

    Meant as a measure for :func:`monitor` (it replaces the updates by the
    measurement).

    Returns:
        ``chain(stateless(measure), ema(...))``; state ``(EmptyState(), EmaState)``.
    """
    base_ema = ema(decay, debias, accumulator_dtype)

    def init_for_measurement(params) -> OptState:
        return base_ema.init(measure(params))

    return chain(stateless(lambda updates, _: measure(updates)),
                 base_ema._replace(init=init_for_measurement))

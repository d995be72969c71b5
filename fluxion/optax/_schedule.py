r"""Learning-rate schedules: functions ``step_count -> value``.

Schedules accept a Python int or an integer array (possibly traced under
``fluxion.jit``) and return a scalar. Formulas follow optax 0.2.x.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any, Optional

import fluxion.numpy as jnp

from ._base import Schedule

_log = logging.getLogger(__name__)


def constant_schedule(value: Any) -> Schedule:
    """Returns a schedule that always returns ``value``."""
    return lambda count: value


def polynomial_schedule(init_value: Any, end_value: Any, power: Any,
                        transition_steps: int, transition_begin: int = 0) -> Schedule:
    r"""Polynomial interpolation from ``init_value`` to ``end_value``.

    .. math::
        v(t) = (v_0 - v_1)\,(1 - s/T)^{p} + v_1, \quad
        s = \mathrm{clip}(t - t_0, 0, T).

    Args:
        init_value: value before ``transition_begin``.
        end_value: value after ``transition_begin + transition_steps``.
        power: exponent :math:`p` (1 is linear).
        transition_steps: :math:`T`; a value <= 0 gives a constant schedule.
        transition_begin: :math:`t_0`; negative values are treated as 0.

    Returns:
        The schedule.
    """
    if transition_steps <= 0:
        _log.info('polynomial_schedule: transition_steps <= 0, using the constant '
                  'schedule init_value.')
        return lambda count: init_value
    if transition_begin < 0:
        _log.info('polynomial_schedule: negative transition_begin, using 0.')
        transition_begin = 0

    def schedule(count):
        count = jnp.clip(count - transition_begin, 0, transition_steps)
        frac = 1 - count / transition_steps
        return (init_value - end_value) * (frac ** power) + end_value

    return schedule


def linear_schedule(init_value: Any, end_value: Any, transition_steps: int,
                    transition_begin: int = 0) -> Schedule:
    """Linear interpolation (:func:`polynomial_schedule` with ``power=1``)."""
    return polynomial_schedule(init_value=init_value, end_value=end_value, power=1,
                               transition_steps=transition_steps,
                               transition_begin=transition_begin)


def piecewise_constant_schedule(init_value: Any,
                                boundaries_and_scales: Optional[dict[int, float]] = None
                                ) -> Schedule:
    """Multiplies the value by ``scale`` once the step passes each boundary.

    Args:
        init_value: initial value.
        boundaries_and_scales: ``{step: scale}``; from ``count >= step`` on, the
            value is multiplied by ``scale`` (cumulatively).

    Returns:
        The schedule.

    Raises:
        ValueError: if a scale is negative.
    """
    if boundaries_and_scales is not None:
        if not all(s >= 0.0 for s in boundaries_and_scales.values()):
            raise ValueError('piecewise_constant_schedule: scales must be non-negative, got '
                             f'{boundaries_and_scales}.')
        items = sorted(boundaries_and_scales.items())
    else:
        items = []

    def schedule(count):
        v = init_value
        for threshold, s in items:
            # indicator is 1 before the boundary and 0 from the boundary on.
            indicator = jnp.maximum(0.0, jnp.sign(threshold - count))
            v = v * indicator + (1 - indicator) * s * v
        return v

    return schedule


def exponential_decay(init_value: Any, transition_steps: int, decay_rate: float,
                      transition_begin: int = 0, staircase: bool = False,
                      end_value: Optional[Any] = None) -> Schedule:
    r"""Exponential decay :math:`v_0\, r^{(t - t_0)/T}` (constant before :math:`t_0`).

    Args:
        init_value: :math:`v_0`.
        transition_steps: :math:`T`; <= 0 gives a constant schedule.
        decay_rate: :math:`r`; 0 gives a constant schedule.
        transition_begin: :math:`t_0`; negative values are treated as 0.
        staircase: use ``floor((t - t_0) / T)`` as the exponent.
        end_value: lower (if r < 1) or upper (if r > 1) bound of the value.

    Returns:
        The schedule.
    """
    if transition_steps <= 0:
        _log.info('exponential_decay: transition_steps <= 0, using the constant '
                  'schedule init_value.')
        return lambda count: init_value
    if decay_rate == 0:
        _log.info('exponential_decay: decay_rate == 0, using the constant schedule '
                  'init_value.')
        return lambda count: init_value
    if transition_begin < 0:
        _log.info('exponential_decay: negative transition_begin, using 0.')
        transition_begin = 0
    bound = None
    if end_value is not None:
        bound = jnp.maximum if decay_rate < 1.0 else jnp.minimum

    def schedule(count):
        decreased_count = count - transition_begin
        p = decreased_count / transition_steps
        if staircase:
            p = jnp.floor(p)
        value = jnp.where(decreased_count <= 0, init_value,
                          init_value * jnp.power(decay_rate, p))
        if bound is not None:
            value = bound(value, end_value)
        return value

    return schedule


def cosine_decay_schedule(init_value: Any, decay_steps: int, alpha: Any = 0.0,
                          exponent: Any = 1.0) -> Schedule:
    r"""Cosine decay (Loshchilov & Hutter, SGDR, ICLR 2017).

    .. math::
        v(t) = v_0 \left[(1-\alpha)\left(\tfrac{1}{2}(1 + \cos(\pi\,\min(t, T)/T))\right)^{e}
        + \alpha\right].

    Args:
        init_value: :math:`v_0`.
        decay_steps: :math:`T` (> 0).
        alpha: final value as a fraction of ``init_value``.
        exponent: :math:`e`.

    Returns:
        The schedule.

    Raises:
        ValueError: if ``decay_steps <= 0``.
    """
    if not decay_steps > 0:
        raise ValueError(f'cosine_decay_schedule: decay_steps must be > 0, got {decay_steps}.')
    # Python ints become floats so the division below is a float division.
    steps = float(decay_steps) if isinstance(decay_steps, int) else decay_steps

    def schedule(count):
        count = float(count) if isinstance(count, int) else count
        count = jnp.minimum(count, steps)
        cosine = 0.5 * (1 + jnp.cos(jnp.pi * count / steps))
        return init_value * ((1 - alpha) * cosine ** exponent + alpha)

    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """Concatenates schedules: ``schedules[i+1]`` starts at ``boundaries[i]``.

    Each later schedule sees the step count relative to its own boundary.

    Args:
        schedules: n schedules.
        boundaries: n - 1 increasing step boundaries.

    Returns:
        The joined schedule.
    """

    def schedule(step):
        output = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:]):
            output = jnp.where(step < boundary, output, later(step - boundary))
        return output

    return schedule


def warmup_constant_schedule(init_value: Any, peak_value: Any, warmup_steps: int) -> Schedule:
    """Linear warmup from ``init_value`` to ``peak_value``, then constant."""
    return linear_schedule(init_value=init_value, end_value=peak_value,
                           transition_steps=warmup_steps)


def warmup_cosine_decay_schedule(init_value: Any, peak_value: Any, warmup_steps: int,
                                 decay_steps: int, end_value: Any = 0.0,
                                 exponent: Any = 1.0) -> Schedule:
    """Linear warmup to ``peak_value``, then cosine decay to ``end_value``.

    Args:
        init_value: value at step 0.
        peak_value: value at ``warmup_steps``.
        warmup_steps: length of the warmup.
        decay_steps: total length *including* the warmup.
        end_value: value from ``decay_steps`` on.
        exponent: exponent of the cosine.

    Returns:
        The schedule.
    """
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    return join_schedules(
        [linear_schedule(init_value=init_value, end_value=peak_value,
                         transition_steps=warmup_steps),
         cosine_decay_schedule(init_value=peak_value, decay_steps=decay_steps - warmup_steps,
                               alpha=alpha, exponent=exponent)],
        [warmup_steps])


def warmup_exponential_decay_schedule(init_value: Any, peak_value: Any, warmup_steps: int,
                                      transition_steps: int, decay_rate: Any,
                                      transition_begin: int = 0, staircase: bool = False,
                                      end_value: Optional[Any] = None) -> Schedule:
    """Linear warmup to ``peak_value``, then :func:`exponential_decay`."""
    return join_schedules(
        [linear_schedule(init_value=init_value, end_value=peak_value,
                         transition_steps=warmup_steps),
         exponential_decay(init_value=peak_value, transition_steps=transition_steps,
                           decay_rate=decay_rate, transition_begin=transition_begin,
                           staircase=staircase, end_value=end_value)],
        [warmup_steps])


def sgdr_schedule(cosine_kwargs: Iterable[dict[str, Any]]) -> Schedule:
    """Warm restarts: a sequence of :func:`warmup_cosine_decay_schedule` cycles.

    Args:
        cosine_kwargs: keyword arguments of each cycle's
            ``warmup_cosine_decay_schedule``.

    Returns:
        The schedule.
    """
    boundaries, schedules, step = [], [], 0
    for kwargs in cosine_kwargs:
        schedules.append(warmup_cosine_decay_schedule(**kwargs))
        step += kwargs['decay_steps']
        boundaries.append(step)
    return join_schedules(schedules, boundaries[:-1])

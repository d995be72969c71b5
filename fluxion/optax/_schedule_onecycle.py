r"""Piecewise-interpolated schedules and the one-cycle policy (Smith & Topin,
"Super-Convergence", 2017, arXiv:1708.07120)."""

from __future__ import annotations

from typing import Any, Optional

import fluxion.numpy as jnp

from ._base import Schedule


def _linear(start: Any, end: Any, pct: Any) -> Any:
    return (end - start) * pct + start


def _cosine(start: Any, end: Any, pct: Any) -> Any:
    return end + (start - end) / 2.0 * (jnp.cos(jnp.pi * pct) + 1)


def piecewise_interpolate_schedule(interpolate_type: str, init_value: Any,
                                   boundaries_and_scales: Optional[dict[int, float]] = None
                                   ) -> Schedule:
    """A schedule that moves between values by linear or cosine interpolation.

    The value at boundary ``b_k`` is ``init_value`` times the product of the
    scales of all boundaries up to ``b_k``; between boundaries it is
    interpolated (from step 0 for the first one), and it stays at the last
    value after the last boundary.

    Args:
        interpolate_type: 'linear' or 'cosine'.
        init_value: value at step 0.
        boundaries_and_scales: ``{step: scale}`` with non-negative scales.

    Raises:
        ValueError: for an unknown interpolation or a negative scale.
    """
    if interpolate_type == 'linear':
        interpolate = _linear
    elif interpolate_type == 'cosine':
        interpolate = _cosine
    else:
        raise ValueError("piecewise_interpolate_schedule: interpolate_type must be 'linear' or "
                         f"'cosine', got {interpolate_type!r}.")
    if boundaries_and_scales:
        boundaries, scales = zip(*sorted(boundaries_and_scales.items()))
        if any(s < 0.0 for s in scales):
            raise ValueError('piecewise_interpolate_schedule: scales must be non-negative, got '
                             f'{list(scales)}.')
    else:
        boundaries, scales = (), ()

    def schedule(count):
        bounds = jnp.stack((0,) + boundaries)
        values = jnp.cumprod(jnp.stack((init_value,) + scales))
        sizes = jnp.maximum(bounds[1:] - bounds[:-1], 1)
        inside = jnp.logical_and(bounds[:-1] <= count, count < bounds[1:])
        pct = (count - bounds[:-1]) / sizes
        return inside.dot(interpolate(values[:-1], values[1:], pct)) + \
            (bounds[-1] <= count) * values[-1]

    return schedule


def _check_steps(transition_steps: int, name: str) -> None:
    if transition_steps <= 0:
        raise ValueError(f'{name}: transition_steps must be positive, got {transition_steps}.')


def linear_onecycle_schedule(transition_steps: int, peak_value: Any, pct_start: float = 0.3,
                             pct_final: float = 0.85, div_factor: float = 25.0,
                             final_div_factor: float = 1e4) -> Schedule:
    """One-cycle with linear pieces: from ``peak/div_factor`` up to ``peak`` at
    ``pct_start``, back down at ``pct_final``, then to
    ``peak/(div_factor*final_div_factor)`` at ``transition_steps``.

    Raises:
        ValueError: if ``transition_steps <= 0``.
    """
    _check_steps(transition_steps, 'linear_onecycle_schedule')
    return piecewise_interpolate_schedule(
        'linear', peak_value / div_factor,
        {int(pct_start * transition_steps): div_factor,
         int(pct_final * transition_steps): 1.0 / div_factor,
         transition_steps: 1.0 / final_div_factor})


def cosine_onecycle_schedule(transition_steps: int, peak_value: Any, pct_start: float = 0.3,
                             div_factor: float = 25.0, final_div_factor: float = 1e4
                             ) -> Schedule:
    """One-cycle with cosine pieces: up to ``peak`` at ``pct_start``, then down
    to ``peak/(div_factor*final_div_factor)`` at ``transition_steps``.

    Raises:
        ValueError: if ``transition_steps <= 0``.
    """
    _check_steps(transition_steps, 'cosine_onecycle_schedule')
    return piecewise_interpolate_schedule(
        'cosine', peak_value / div_factor,
        {int(pct_start * transition_steps): div_factor,
         int(transition_steps): 1.0 / (div_factor * final_div_factor)})

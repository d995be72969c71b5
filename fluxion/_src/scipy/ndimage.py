"""`fluxion.scipy.ndimage`: interpolation of an N-d array at arbitrary coordinates (mirrors `jax.scipy.ndimage`).

`map_coordinates` evaluates a separable spline of order 0 (nearest sample) or 1 (multilinear) at each query point:
along every axis a coordinate picks one or two sample indices with weights; out-of-range indices are mapped back
into the array by the boundary `mode`; the result sums the 2^N (or 1) weighted corner samples. It is built from
`fluxion.numpy` gathers, so it is differentiable in the input values and (for order 1) in the coordinates, jittable
and vmappable.
"""

from __future__ import annotations

import functools
import itertools
import operator
from typing import Any, Callable, Sequence

from ... import numpy as jnp
from .. import dtypes


def _mirror(index, size: int):
    """Reflection about the edge samples (d c b | a b c d | c b a): a triangle wave of period 2(size - 1)."""
    if size == 1:
        return jnp.zeros_like(index)
    period = size - 1
    return jnp.abs((index + period) % (2 * period) - period)


def _reflect(index, size: int):
    """Reflection about the edges between samples (c b a | a b c | c b a): the half-integer mirror of `_mirror`,
    evaluated on the doubled grid so it stays in integers."""
    return (_mirror(2 * index + 1, 2 * size + 1) - 1) // 2


_MODES: dict[str, Callable] = {
    "constant": lambda index, size: index,  # out-of-range samples are replaced by cval below
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round_half_away(x):
    return jnp.sign(x) * jnp.floor(jnp.abs(x) + 0.5)


def _nodes(coord, order: int):
    """(integer index, weight) pairs of the 1-D interpolation kernel at `coord`."""
    if dtypes.is_integer(coord.dtype):
        return [(coord.astype("int32"), 1)]
    if order == 0:
        return [(_round_half_away(coord).astype("int32"), 1)]
    lower = jnp.floor(coord)
    frac = coord - lower
    index = lower.astype("int32")
    return [(index, 1 - frac), (index + 1, frac)]


def map_coordinates(input: Any, coordinates: Sequence[Any], order: int, mode: str = "constant",  # noqa: A002
                    cval: Any = 0.0) -> Any:
    """The values of `input` (N-d) interpolated at the points `coordinates` (a length-N sequence of arrays of one
    common shape, the sample's index along each axis); the result has that shape and `input`'s dtype (integer
    inputs are rounded half away from zero).

    `order` 0 takes the nearest sample (halves round away from zero), 1 interpolates multilinearly. `mode` says
    how samples outside the array are found: "constant" (the value `cval`), "nearest" (the edge sample), "wrap"
    (periodic), "mirror" (reflected about the edge samples) or "reflect" (reflected about the array's edges).
    As in JAX, "constant" and "wrap" behave as SciPy's "grid-constant" and "grid-wrap" (SciPy's own "constant" and
    "wrap" treat the boundary differently), and orders above 1 (SciPy's spline prefilter) are not implemented.

    Raises:
      ValueError: if len(coordinates) != input.ndim. NotImplementedError: for an unknown mode or order > 1.
    """
    values = jnp.asarray(input)
    coords = [jnp.asarray(c) for c in coordinates]
    if len(coords) != values.ndim:
        raise ValueError(f"map_coordinates: coordinates must be a sequence of length input.ndim, got "
                         f"{len(coords)} for an input of shape {values.shape}")
    if mode not in _MODES:
        raise NotImplementedError(f"map_coordinates: mode {mode!r} is not supported; the modes are {sorted(_MODES)}")
    if order not in (0, 1):
        raise NotImplementedError(f"map_coordinates: only order 0 (nearest) and 1 (linear) are supported, got "
                                  f"{order!r}")
    fix = _MODES[mode]
    per_axis = []
    for coord, size in zip(coords, values.shape):
        per_axis.append([(fix(index, size), (index >= 0) & (index < size) if mode == "constant" else None, weight)
                         for index, weight in _nodes(coord, order)])
    cval = jnp.asarray(cval, dtype=values.dtype)
    terms = []
    for corner in itertools.product(*per_axis):
        indices, valids, weights = zip(*corner)
        sample = values[tuple(indices)]
        if mode == "constant":
            sample = jnp.where(functools.reduce(operator.and_, valids), sample, cval)
        terms.append(functools.reduce(operator.mul, weights) * sample)
    result = functools.reduce(operator.add, terms)
    if dtypes.is_integer(values.dtype):
        result = _round_half_away(result)
    return jnp.asarray(result).astype(values.dtype)

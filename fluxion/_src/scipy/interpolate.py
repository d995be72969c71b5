"""`fluxion.scipy.interpolate`: interpolation on a rectilinear grid (mirrors `jax.scipy.interpolate`)."""

from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np

from ... import numpy as jnp
from .. import dtypes
from ..tree_util import register_pytree_node_class

_METHODS = ("linear", "nearest")


def _check_method(method: str) -> None:
    if method not in _METHODS:
        raise ValueError(f"RegularGridInterpolator: method must be 'linear' or 'nearest', got {method!r}")


@register_pytree_node_class
class RegularGridInterpolator:
    """Interpolates `values` given on the grid `points` (a length-N sequence of strictly increasing 1-D arrays; the
    first N axes of `values` follow them, further axes are carried along) at arbitrary query points.

    Calling it with `xi` of shape (..., N) (or a tuple of N broadcastable coordinate arrays) returns shape
    `xi.shape[:-1] + values.shape[N:]`: for "linear" the multilinear interpolant of the cell containing each point
    (cells at the edges extend outward), for "nearest" the closest grid value (ties go to the lower one). Points
    outside the grid get `fill_value` (NaN by default; None extrapolates linearly). Integer values are promoted to
    the default float dtype.

    It is a pytree (grid, values, fill_value as leaves), so it can cross `jit` and `grad` differentiates the values.
    As in JAX, a decreasing grid axis is not supported and `bounds_error=True` raises, since a traced point cannot
    raise an error.

    Raises:
      ValueError: for an unknown method, more grid axes than `values` has dimensions, a grid axis whose length does
      not match `values`, a fill value of another kind than `values`, or query points of the wrong dimension.
      NotImplementedError: for bounds_error=True.
    """

    def __init__(self, points: Sequence[Any], values: Any, method: str = "linear", bounds_error: bool = False,
                 fill_value: Any = np.nan):
        _check_method(method)
        if bounds_error:
            raise NotImplementedError("RegularGridInterpolator: bounds_error=True cannot be checked on traced "
                                      "points; use the fill_value")
        values = jnp.asarray(values)
        if not dtypes.is_inexact(values.dtype):
            values = values.astype(dtypes.default_float_dtype())
        grid = tuple(jnp.asarray(p) for p in points)
        if len(grid) > values.ndim:
            raise ValueError(f"RegularGridInterpolator: there are {len(grid)} point arrays but values has "
                             f"{values.ndim} dimensions")
        for i, g in enumerate(grid):
            if g.ndim != 1 or g.shape[0] != values.shape[i]:
                raise ValueError(f"RegularGridInterpolator: points[{i}] must be 1-D with {values.shape[i]} entries "
                                 f"(values.shape[{i}]), got shape {g.shape}")
        if fill_value is not None:
            fill_value = jnp.asarray(fill_value)
            if not np.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError(f"RegularGridInterpolator: fill_value of dtype {fill_value.dtype} cannot be "
                                 f"combined with values of dtype {values.dtype}")
        self.method, self.bounds_error = method, bounds_error
        self.grid, self.values, self.fill_value = grid, values, fill_value

    def tree_flatten(self):
        return (self.grid, self.values, self.fill_value), (self.method, self.bounds_error)

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.grid, obj.values, obj.fill_value = children
        obj.method, obj.bounds_error = aux
        return obj

    def _query_points(self, xi):
        n = len(self.grid)
        if isinstance(xi, (tuple, list)):
            coords = jnp.broadcast_arrays(*[jnp.asarray(c) for c in xi])
            xi = jnp.stack(coords, axis=-1)
        xi = jnp.asarray(xi)
        if xi.ndim == 1 and n > 1 and xi.shape[0] == n:  # one point given as a vector
            xi = xi[None]
        elif n == 1 and (xi.ndim == 0 or xi.shape[-1] != 1):
            xi = xi[..., None]
        if xi.shape[-1] != n:
            raise ValueError(f"RegularGridInterpolator: the query points have dimension {xi.shape[-1]}, but the "
                             f"grid has dimension {n}")
        return xi

    def __call__(self, xi: Any, method: str | None = None) -> Any:
        method = self.method if method is None else method
        _check_method(method)
        xi = self._query_points(xi)
        lead = xi.shape[:-1]
        pts = xi.reshape(-1, xi.shape[-1])
        n = len(self.grid)
        cells, fracs = [], []
        outside = jnp.zeros(pts.shape[0], dtype=bool)
        for d, g in enumerate(self.grid):
            x = pts[:, d]
            # The cell [g[i], g[i+1]] holding x; points beyond either end use the edge cell (linear extrapolation).
            i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.shape[0] - 2)
            cells.append(i)
            fracs.append((x - g[i]) / (g[i + 1] - g[i]))
            outside = outside | (x < g[0]) | (x > g[-1])
        tail = (None,) * (self.values.ndim - n)
        if method == "nearest":
            result = self.values[tuple(jnp.where(t <= 0.5, i, i + 1) for i, t in zip(cells, fracs))]
        else:
            result = 0
            for upper in itertools.product((False, True), repeat=n):
                weight = 1
                for up, t in zip(upper, fracs):
                    weight = weight * (t if up else 1 - t)
                corner = tuple(i + 1 if up else i for up, i in zip(upper, cells))
                result = result + self.values[corner] * weight[(slice(None),) + tail]
        result = jnp.asarray(result).astype(self.values.dtype)
        if self.fill_value is not None:
            result = jnp.where(outside[(slice(None),) + tail], self.fill_value.astype(self.values.dtype), result)
        return result.reshape(lead + self.values.shape[n:])

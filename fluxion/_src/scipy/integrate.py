"""`fluxion.scipy.integrate`: numerical integration of sampled data (mirrors `jax.scipy.integrate`)."""

from __future__ import annotations

from typing import Any

from ... import numpy as jnp
from .. import dtypes
from ..numpy.util import canonicalize_axis


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """The integral of samples `y` along `axis` by the composite trapezoidal rule:
    sum_i (y[i] + y[i+1]) / 2 * (x[i+1] - x[i]), or with constant spacing `dx` when `x` is None.

    `x` may be 1-D (the sample points along `axis`) or broadcastable with `y`. Integer inputs give the default
    float dtype.

    Raises:
      ValueError: if `axis` is out of range, or a 1-D `x` does not have y.shape[axis] points.
    """
    y = jnp.asarray(y)
    if not dtypes.is_inexact(y.dtype):
        y = y.astype(dtypes.default_float_dtype())
    axis = canonicalize_axis(axis, y.ndim)
    y = jnp.moveaxis(y, axis, -1)
    if x is None:
        return jnp.sum(y[..., 1:] + y[..., :-1], axis=-1) * (jnp.asarray(dx) * 0.5)
    x = jnp.asarray(x)
    if x.ndim == 1:
        if x.shape[0] != y.shape[-1]:
            raise ValueError(f"trapezoid: x has {x.shape[0]} points but y has {y.shape[-1]} along axis {axis}")
        spacing = x[1:] - x[:-1]
    else:
        xm = jnp.moveaxis(x, axis, -1)
        spacing = xm[..., 1:] - xm[..., :-1]
    return 0.5 * jnp.sum(spacing * (y[..., 1:] + y[..., :-1]), axis=-1)

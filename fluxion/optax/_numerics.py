"""Numerically careful helpers shared by the transformations."""

from __future__ import annotations

import functools
from typing import Any, Optional, Union

import numpy as np

import fluxion
import fluxion.numpy as jnp


def canonicalize_dtype(dtype: Optional[Any]) -> Optional[Any]:
    """Maps a requested dtype to the one arrays will really have (or None).

    With 64-bit mode disabled, float64 becomes float32, int64 becomes int32...

    Args:
        dtype: any dtype-like object, or None.

    Returns:
        The canonical dtype, or None when ``dtype`` is None.
    """
    if dtype is None:
        return None
    return fluxion.dtypes.canonicalize_dtype(dtype)


def is_complex(x: Any) -> bool:
    """True if ``x`` (an array or tracer) has a complex dtype."""
    return bool(jnp.issubdtype(jnp.result_type(x), jnp.complexfloating))


def abs_sq(x: Any) -> Any:
    """Returns ``|x|**2`` elementwise; for real ``x`` this is ``x * x``.

    Args:
        x: a real or complex array.

    Returns:
        A real array with the shape of ``x``.

    Raises:
        TypeError: if ``x`` is not an array.
    """
    if not hasattr(x, 'dtype') or not hasattr(x, 'shape'):
        raise TypeError(f'abs_sq expects an array, got {type(x).__name__}.')
    if is_complex(x):
        return (jnp.conj(x) * x).real
    return x * x


def safe_norm(x: Any, min_norm: Any, ord: Optional[Union[int, float, str]] = None,  # noqa: A002
              axis: Union[None, int, tuple[int, ...]] = None,
              keepdims: bool = False) -> Any:
    """Returns ``max(norm(x), min_norm)`` with a finite gradient at ``x = 0``.

    ``jnp.maximum(jnp.linalg.norm(x), min_norm)`` has a NaN gradient at 0
    because the norm's derivative ``x / |x|`` is evaluated even when the other
    branch is selected. Replacing ``x`` by ones where the norm is too small
    keeps both branches finite.

    Args:
        x: array.
        min_norm: lower bound of the result.
        ord, axis, keepdims: as in ``jnp.linalg.norm``.

    Returns:
        The clipped norm (a scalar when ``axis`` is None).
    """
    norm_fn = _euclidean_norm if ord is None else functools.partial(jnp.linalg.norm, ord=ord)
    norm = norm_fn(x, axis=axis, keepdims=True)
    x = jnp.where(norm <= min_norm, jnp.ones_like(x), x)
    norm = norm if keepdims else jnp.squeeze(norm, axis=axis)
    masked_norm = norm_fn(x, axis=axis, keepdims=keepdims)
    return jnp.where(norm <= min_norm, min_norm, masked_norm)


def _euclidean_norm(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``jnp.linalg.norm(x, axis=axis)`` for ``ord=None`` (2-norm / Frobenius)."""
    return jnp.sqrt(jnp.sum(abs_sq(x), axis=axis, keepdims=keepdims))


def safe_root_mean_squares(x: Any, min_rms: Any) -> Any:
    """Returns ``max(sqrt(mean(|x|**2)), min_rms)`` with a finite gradient at 0.

    Args:
        x: array.
        min_rms: lower bound of the result.

    Returns:
        A scalar.
    """
    rms = jnp.sqrt(jnp.mean(abs_sq(x)))
    x = jnp.where(rms <= min_rms, jnp.ones_like(x), x)
    return jnp.where(rms <= min_rms, min_rms, jnp.sqrt(jnp.mean(abs_sq(x))))


def safe_increment(count: Any) -> Any:
    """Returns ``count + 1``, saturating at the dtype's maximum instead of wrapping.

    Step counters are int32; without saturation they would wrap to a negative
    value after 2**31 - 1 steps and break bias corrections and schedules.

    Args:
        count: an integer or floating scalar array.

    Returns:
        An array of the same dtype.

    Raises:
        ValueError: if ``count`` is neither integer nor floating.
    """
    count = jnp.asarray(count)
    dtype = count.dtype
    if jnp.issubdtype(dtype, jnp.integer):
        max_value = np.iinfo(dtype).max
    elif jnp.issubdtype(dtype, jnp.floating):
        max_value = jnp.finfo(dtype).max
    else:
        raise ValueError(
            f'safe_increment: `count` must have an integer or floating dtype, '
            f'got {dtype}.')
    one = jnp.ones([], dtype=dtype)
    max_value = jnp.asarray(max_value, dtype=dtype)
    return jnp.where(count < max_value, count + one, max_value)


# Historical optax name, kept as an alias.
safe_int32_increment = safe_increment

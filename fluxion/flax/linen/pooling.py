"""Pooling functions over channels-last inputs (mirrors ``flax.linen.pooling``).

Inputs are ``(*batch, spatial..., features)`` with one window size per spatial
dimension; zero or more batch dimensions are accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Optional, Union

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax

Array = Any
Padding = Union[str, Sequence[tuple[int, int]]]


def pool(inputs: Array, init: Any, reduce_fn: Callable[[Any, Any], Any],
         window_shape: Sequence[int], strides: Optional[Sequence[int]],
         padding: Padding) -> Array:
    """Reduces each window with ``reduce_fn`` (via ``lax.reduce_window``).

    Args:
        inputs: ``(*batch, spatial..., features)``; at least
            ``len(window_shape) + 1`` dimensions.
        init: the reduction's identity (0 for sums, -inf for max).
        reduce_fn: binary reduction, e.g. ``lax.add`` or ``lax.max``.
        window_shape: window size per spatial dimension.
        strides: step per spatial dimension (default: 1).
        padding: ``'SAME'``, ``'VALID'`` or ``(low, high)`` per spatial dimension.

    Returns:
        ``(*batch, pooled spatial..., features)``.

    Raises:
        ValueError: on mismatched lengths of ``window_shape``, ``strides`` and
            ``padding`` or too few input dimensions.
    """
    window_shape = tuple(window_shape)
    strides = tuple(strides) if strides is not None else (1,) * len(window_shape)
    if len(strides) != len(window_shape):
        raise ValueError(f'strides {strides} and window_shape {window_shape} must have the '
                         'same length.')
    num_batch = inputs.ndim - (len(window_shape) + 1)
    if num_batch < 0:
        raise ValueError(f'pool with window_shape {window_shape} needs inputs with at least '
                         f'{len(window_shape) + 1} dimensions, got shape {tuple(inputs.shape)}.')
    single = num_batch == 0
    if single:
        inputs = inputs[None]
        num_batch = 1
    dims = (1,) * num_batch + window_shape + (1,)
    full_strides = (1,) * num_batch + strides + (1,)
    if not isinstance(padding, str):
        padding = tuple(tuple(p) for p in padding)
        if len(padding) != len(window_shape) or any(len(p) != 2 for p in padding):
            raise ValueError(f'padding must hold one (low, high) pair per window dimension '
                             f'({len(window_shape)}), got {padding}.')
        padding = ((0, 0),) * num_batch + padding + ((0, 0),)
    y = lax.reduce_window(inputs, init, reduce_fn, dims, full_strides, padding)
    return y[0] if single else y


def avg_pool(inputs: Array, window_shape: Sequence[int],
             strides: Optional[Sequence[int]] = None, padding: Padding = 'VALID',
             count_include_pad: bool = True) -> Array:
    """Averages each window.

    Args:
        count_include_pad: if True, padded zeros count in the divisor (the
            divisor is always ``prod(window_shape)``); if False, only real
            input elements are counted.
        Other arguments: see :func:`pool`.
    """
    y = pool(inputs, 0.0, lax.add, window_shape, strides, padding)
    if count_include_pad:
        return y / np.prod(window_shape)
    ones_shape = tuple(inputs.shape[:-1]) + (1,)
    if len(ones_shape) - 2 == len(window_shape):
        ones_shape = (1,) + ones_shape[1:]
    counts = pool(jnp.ones(ones_shape), 0.0, lax.add, window_shape, strides, padding)
    return y / counts


def max_pool(inputs: Array, window_shape: Sequence[int],
             strides: Optional[Sequence[int]] = None, padding: Padding = 'VALID') -> Array:
    """Takes the maximum of each window (padding counts as -inf). See :func:`pool`."""
    return pool(inputs, -jnp.inf, lax.max, window_shape, strides, padding)


def min_pool(inputs: Array, window_shape: Sequence[int],
             strides: Optional[Sequence[int]] = None, padding: Padding = 'VALID') -> Array:
    """Takes the minimum of each window (padding counts as +inf). See :func:`pool`."""
    return pool(inputs, jnp.inf, lax.min, window_shape, strides, padding)

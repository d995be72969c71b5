"""Array helpers shared by the RL functions: indexing by action, one-hot, masking, and a device-aware sum."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax

__all__ = ["batched_index", "one_hot", "lhs_broadcast", "replace_masked", "AllSum"]


def batched_index(values: Any, indices: Any, keepdims: bool = False) -> Any:
    """`values[..., indices]` per leading position: picks one entry of the last axis for every index.

    Args:
        values: array `[..., D]`. indices: integer array `[...]` (the leading shape of `values`).
        keepdims: keep a trailing axis of size 1.

    Returns:
        Array `[...]` (or `[..., 1]` with `keepdims`).
    """
    picked = jnp.take_along_axis(values, jnp.asarray(indices)[..., None], axis=-1)
    return picked if keepdims else jnp.squeeze(picked, axis=-1)


def one_hot(indices: Any, num_classes: int, dtype: Any = jnp.float32) -> Any:
    """One-hot encoding along a new last axis of size `num_classes` (out-of-range indices give all zeros)."""
    indices = jnp.asarray(indices)
    return (indices[..., None] == jnp.arange(num_classes)).astype(dtype)


def lhs_broadcast(source: Any, target: Any) -> Any:
    """Reshapes `source` to `source.shape + (1,) * extra` so it broadcasts against `target` from the left.

    Raises:
        ValueError: a dimension of `source` is neither 1 nor the matching leading dimension of `target`.
    """
    src_shape, tgt_shape = tuple(np.shape(source)), tuple(np.shape(target))
    lead = tgt_shape[:len(src_shape)]
    if len(lead) != len(src_shape) or any(s not in (1, t) for s, t in zip(src_shape, lead)):
        raise ValueError(f"lhs_broadcast: source shape {src_shape} is not compatible with target shape {tgt_shape}")
    return jnp.reshape(source, src_shape + (1,) * (len(tgt_shape) - len(src_shape)))


def replace_masked(data: Any, replacement: Optional[Any], mask: Any) -> Any:
    """`replacement` (zeros if None) where `mask` is set, `data` elsewhere; `mask`'s shape is a prefix of `data`'s.

    Raises:
        ValueError: `mask`'s shape is not a left-broadcastable prefix of `data`'s (see `lhs_broadcast`).
    """
    if replacement is None:
        replacement = jnp.zeros_like(data)
    return jnp.where(lhs_broadcast(mask, data), replacement, data)


class AllSum:
    """`jnp.sum(x, axis)`, then `lax.psum` over the named mapped axis when `axis_name` is given (inside pmap)."""

    def __init__(self, axis_name: Optional[str] = None):
        self._axis_name = axis_name

    def __call__(self, x: Any, axis: Optional[Union[int, Sequence[int]]] = None) -> Any:
        total = jnp.sum(x, axis=axis)
        return lax.psum(total, axis_name=self._axis_name) if self._axis_name else total

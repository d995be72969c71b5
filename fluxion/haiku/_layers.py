"""Parameter-free and embedding layers: `Embed`, `Reshape`, `Flatten`, `max_pool`, `avg_pool`, `MaxPool`,
`AvgPool`."""

from __future__ import annotations

import enum
import warnings
from typing import Any, Callable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax, nn

from . import initializers
from ._base import get_parameter
from ._module import Module

__all__ = ["EmbedLookupStyle", "Embed", "Reshape", "Flatten", "max_pool", "avg_pool", "MaxPool", "AvgPool"]


class EmbedLookupStyle(enum.Enum):
    """How `Embed` looks ids up: by indexing (`ARRAY_INDEX`) or a one-hot matmul (`ONE_HOT`)."""

    ARRAY_INDEX = 1
    ONE_HOT = 2


class Embed(Module):
    """A `(vocab_size, embed_dim)` table `embeddings` (default init: truncated normal, stddev 1).

    Raises:
        ValueError: neither `embedding_matrix` nor both sizes given, or sizes inconsistent with the matrix;
            non-integer ids at call time.
    """

    def __init__(self, vocab_size: int | None = None, embed_dim: int | None = None, embedding_matrix: Any = None,
                 w_init: Callable | None = None, lookup_style: str | EmbedLookupStyle = "ARRAY_INDEX",
                 name: str | None = None, precision: Any = None):
        super().__init__(name=name)
        if embedding_matrix is None and not (vocab_size and embed_dim):
            raise ValueError("hk.Embed must be supplied either with an initial `embedding_matrix` or with "
                             "`embed_dim` and `vocab_size`.")
        if embedding_matrix is not None:
            matrix = jnp.asarray(embedding_matrix)
            if vocab_size and matrix.shape[0] != vocab_size:
                raise ValueError(f"An `embedding_matrix` was supplied but the `vocab_size` of {vocab_size} was not "
                                 f"consistent with its shape {matrix.shape}.")
            if embed_dim and matrix.shape[1] != embed_dim:
                raise ValueError(f"An `embedding_matrix` was supplied but the `embed_dim` of {embed_dim} was not "
                                 f"consistent with its shape {matrix.shape}.")
            w_init = lambda _, __: matrix  # noqa: E731
            vocab_size, embed_dim = matrix.shape
        self.vocab_size = vocab_size
        self.embed_dim = embed_dim
        self.lookup_style = lookup_style
        self.precision = precision
        self.w_init = w_init or initializers.TruncatedNormal()

    @property
    def embeddings(self) -> Any:
        return get_parameter("embeddings", [self.vocab_size, self.embed_dim], init=self.w_init)

    def __call__(self, ids: Any, lookup_style: Any = None, precision: Any = None) -> Any:
        """ids (int, any shape) -> `ids.shape + (embed_dim,)`."""
        ids = jnp.asarray(ids)
        if not jnp.issubdtype(ids.dtype, jnp.integer):
            raise ValueError("hk.Embed's __call__ method must take an array of integer dtype but was called with "
                             f"an array of {ids.dtype}")
        style = lookup_style or self.lookup_style
        if isinstance(style, str):
            style = EmbedLookupStyle[style.upper()]
        if style == EmbedLookupStyle.ARRAY_INDEX:
            return jnp.asarray(self.embeddings)[ids]
        one_hot = nn.one_hot(ids, self.vocab_size)
        return jnp.dot(one_hot, self.embeddings, precision=self.precision if precision is None else precision)


class Reshape(Module):
    """Reshapes all but the first `preserve_dims` axes to `output_shape` (one -1 allowed).

    Raises:
        ValueError: `preserve_dims == 0`; more than one -1.
    """

    def __init__(self, output_shape: Sequence[int], preserve_dims: int = 1, name: str | None = None):
        super().__init__(name=name)
        if preserve_dims == 0:
            raise ValueError("Argument preserve_dims should be non-zero.")
        if list(output_shape).count(-1) > 1:
            raise ValueError("-1 can only occur once in `output_shape`.")
        self.output_shape = tuple(output_shape)
        self.preserve_dims = preserve_dims

    def __call__(self, inputs: Any) -> Any:
        if inputs.ndim <= self.preserve_dims:
            return inputs
        shape = self.output_shape
        if -1 in shape:
            n = int(np.prod(inputs.shape[self.preserve_dims:]))
            m = abs(int(np.prod(shape)))
            shape = tuple(n // m if k == -1 else k for k in shape)
        return jnp.reshape(inputs, tuple(inputs.shape[:self.preserve_dims]) + shape)


class Flatten(Reshape):
    """Flattens all but the first `preserve_dims` axes: `(N, H, W, C) -> (N, H*W*C)`."""

    def __init__(self, preserve_dims: int = 1, name: str | None = None):
        super().__init__(output_shape=(-1,), preserve_dims=preserve_dims, name=name)


def _window(x: Any, size: int | Sequence[int], channel_axis: int | None) -> tuple[int, ...]:
    if isinstance(size, int):
        if channel_axis and not 0 <= abs(channel_axis) < x.ndim:
            raise ValueError(f"Invalid channel axis {channel_axis} for {x.shape}")
        if channel_axis and channel_axis < 0:
            channel_axis = x.ndim + channel_axis
        return (1,) + tuple(size if d != channel_axis else 1 for d in range(1, x.ndim))
    if len(size) < x.ndim:
        return (1,) * (x.ndim - len(size)) + tuple(size)
    if len(size) != x.ndim:
        raise ValueError(f"window/stride {tuple(size)} has more dimensions than the input {x.shape}")
    return tuple(size)


def _pool_args(value: Any, window_shape: Any, strides: Any, padding: str, channel_axis: int | None):
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"Invalid padding '{padding}', must be 'SAME' or 'VALID'.")
    if any(isinstance(s, int) and s != 1 for s in (window_shape, strides)):
        warnings.warn("Passing an int (other than 1) for `window_shape` or `strides` infers the wrong shape under "
                      "vmap; pass a full unbatched size such as (3, 3, 1).", DeprecationWarning, stacklevel=3)
    value = jnp.asarray(value)
    return value, _window(value, window_shape, channel_axis), _window(value, strides, channel_axis)


def max_pool(value: Any, window_shape: int | Sequence[int], strides: int | Sequence[int], padding: str,
             channel_axis: int | None = -1) -> Any:
    """Max pooling; `window_shape`/`strides` cover trailing axes (leading ones get 1).

    Raises:
        ValueError: padding other than 'SAME'/'VALID'; bad channel axis.
    """
    value, window, stride = _pool_args(value, window_shape, strides, padding, channel_axis)
    return lax.reduce_window(value, -jnp.inf, lax.max, window, stride, padding)


def avg_pool(value: Any, window_shape: int | Sequence[int], strides: int | Sequence[int], padding: str,
             channel_axis: int | None = -1) -> Any:
    """Average pooling; with 'SAME' padding each output is divided by the number of in-bounds elements."""
    value, window, stride = _pool_args(value, window_shape, strides, padding, channel_axis)
    pooled = lax.reduce_window(value, 0., lax.add, window, stride, padding)
    if padding == "VALID":
        return pooled / np.prod(window)
    shape = [v if w != 1 else 1 for v, w in zip(value.shape, window)]
    counts = lax.reduce_window(jnp.ones(shape, value.dtype), 0., lax.add, window, stride, padding)
    return pooled / counts


class MaxPool(Module):
    """Module form of `max_pool`."""

    def __init__(self, window_shape: int | Sequence[int], strides: int | Sequence[int], padding: str,
                 channel_axis: int | None = -1, name: str | None = None):
        super().__init__(name=name)
        self.window_shape, self.strides, self.padding, self.channel_axis = window_shape, strides, padding, \
            channel_axis

    def __call__(self, value: Any) -> Any:
        return max_pool(value, self.window_shape, self.strides, self.padding, self.channel_axis)


class AvgPool(Module):
    """Module form of `avg_pool`."""

    def __init__(self, window_shape: int | Sequence[int], strides: int | Sequence[int], padding: str,
                 channel_axis: int | None = -1, name: str | None = None):
        super().__init__(name=name)
        self.window_shape, self.strides, self.padding, self.channel_axis = window_shape, strides, padding, \
            channel_axis

    def __call__(self, value: Any) -> Any:
        return avg_pool(value, self.window_shape, self.strides, self.padding, self.channel_axis)

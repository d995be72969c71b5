"""`Linear`, `Sequential`, `Bias`, `dropout`, `to_module`, `one_hot`, `multinomial`, `BatchApply`, `expand_apply`."""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import nn, random, tree_util

from . import initializers
from ._base import get_parameter
from ._module import Module

__all__ = ["Linear", "Sequential", "Bias", "dropout", "to_module", "one_hot", "multinomial", "BatchApply",
           "expand_apply"]


class Linear(Module):
    """`y = x @ w + b` over the last axis of `x`.

    Parameters: `w` of shape `(input_size, output_size)` (default init: truncated normal with stddev
    `1 / sqrt(input_size)`), `b` of shape `(output_size,)` (default zeros), both in the input's dtype.
    """

    def __init__(self, output_size: int, with_bias: bool = True, w_init: Callable | None = None,
                 b_init: Callable | None = None, name: str | None = None):
        super().__init__(name=name)
        self.input_size = None
        self.output_size = output_size
        self.with_bias = with_bias
        self.w_init = w_init
        self.b_init = b_init or jnp.zeros

    def __call__(self, inputs: Any, *, precision: Any = None) -> Any:
        """inputs `(..., input_size)` -> `(..., output_size)`.

        Raises:
            ValueError: scalar input.
        """
        if not jnp.shape(inputs):
            raise ValueError("Input must not be scalar.")
        inputs = jnp.asarray(inputs)
        input_size = self.input_size = inputs.shape[-1]
        dtype = inputs.dtype
        w_init = self.w_init
        if w_init is None:
            w_init = initializers.TruncatedNormal(stddev=1. / np.sqrt(input_size))
        w = get_parameter("w", [input_size, self.output_size], dtype, init=w_init)
        out = jnp.dot(inputs, w, precision=precision)
        if self.with_bias:
            b = get_parameter("b", [self.output_size], dtype, init=self.b_init)
            out = out + jnp.broadcast_to(b, out.shape)
        return out


class Sequential(Module):
    """Calls `layers` in order; extra arguments go to the first layer only."""

    def __init__(self, layers: Iterable[Callable[..., Any]], name: str | None = None):
        super().__init__(name=name)
        self.layers = tuple(layers)

    def __call__(self, inputs: Any, *args, **kwargs) -> Any:
        out = inputs
        for i, layer in enumerate(self.layers):
            out = layer(out, *args, **kwargs) if i == 0 else layer(out)
        return out


def dropout(rng: Any, rate: float, x: Any, broadcast_dims: Sequence[int] = ()) -> Any:
    """Zeroes each element of `x` with probability `rate` and scales the rest by `1 / (1 - rate)`.

    Args:
        rng: a PRNG key.
        rate: drop probability in [0, 1).
        x: the input array.
        broadcast_dims: axes along which the same mask is used.

    Raises:
        ValueError: `rate` outside [0, 1); a broadcast dimension beyond `x.ndim`.
    """
    if isinstance(rate, (int, float)):
        if rate < 0 or rate >= 1:
            raise ValueError("rate must be in [0, 1).")
        if rate == 0.0:
            return x
    shape = list(x.shape)
    for dim in broadcast_dims:
        if dim > len(shape):
            raise ValueError(f"Broadcast dimension does not exist. Got dimension {dim} for shape {shape}.")
        shape[dim] = 1
    keep_rate = 1.0 - rate
    keep = jnp.broadcast_to(random.bernoulli(rng, keep_rate, shape=tuple(shape)), x.shape)
    return keep * x / keep_rate


def to_module(f: Callable[..., Any]) -> type:
    """Wraps a function into a Module class named after the function (so it gets a name scope)."""

    class ToModuleWrapper(Module):
        def __init__(self, name: str | None = None):
            if name is None:
                name = f.__name__
            elif not isinstance(name, str):
                raise TypeError(f"Expected a string name as the first argument to the module constructor, got: "
                                f"{name}. `hk.to_module` returns a class: `mod = hk.to_module(fn)(); mod(x)`.")
            super().__init__(name=name)

        def __call__(self, *a, **k):
            return f(*a, **k)

    functools.update_wrapper(ToModuleWrapper.__call__, f)
    return ToModuleWrapper


def one_hot(indices: Any, num_classes: int, dtype: Any = jnp.float32) -> Any:
    """`indices.shape + (num_classes,)` array with 1 at each index (all zeros for out-of-range indices)."""
    return nn.one_hot(indices, num_classes, dtype=dtype)


def multinomial(rng: Any, logits: Any, num_samples: int) -> Any:
    """`num_samples` draws from the categorical distribution `softmax(logits)` over the last axis.

    Returns:
        int array `logits.shape[:-1] + (num_samples,)`, drawn with `random.categorical` exactly as Haiku does
        (so the same key gives the same samples).
    """
    shape = (num_samples,) + tuple(logits.shape[:-1]) if num_samples != 1 else None
    samples = random.categorical(rng, logits, shape=shape)
    return jnp.moveaxis(samples, 0, -1) if num_samples != 1 else samples[..., None]


def _bias_shape(input_shape: Sequence[int], bias_dims: Sequence[int] | None) -> tuple:
    rank = len(input_shape)
    if bias_dims is None:
        return tuple(input_shape[1:])
    if not bias_dims:
        return ()
    shape = [1] * rank
    for dim in bias_dims:
        dim = dim % rank if dim < 0 else dim
        if dim == 0:
            raise ValueError("Cannot apply bias across the minibatch dimension.")
        if dim >= rank:
            raise ValueError(f"Dimension {dim} (bias_dims={tuple(bias_dims)!r}) out of range for input of rank "
                             f"{rank}.")
        shape[dim] = input_shape[dim]
    # Leading 1s are dropped: broadcasting supplies them (Haiku's parameter shape).
    start = next((d for d in range(1, rank) if shape[d] != 1), rank)
    return tuple(shape[start:])


class Bias(Module):
    """Adds a learned bias `b` (default zeros) to `inputs [B, ...]`.

    `b` has shape `inputs.shape[1:]` by default; with `bias_dims` only those axes get their own values (e.g.
    `bias_dims=[-1]` on `[B, H, W, C]` gives `b` of shape `(C,)`); `bias_dims=[]` gives a scalar.

    Raises:
        ValueError: inputs of rank < 2; inputs whose trailing shape differs from `output_size`; a bias dimension
            of 0 or out of range.
    """

    def __init__(self, output_size: Sequence[int] | None = None, bias_dims: Sequence[int] | None = None,
                 b_init: Callable | None = None, name: str | None = None):
        super().__init__(name=name)
        self.output_size = None if output_size is None else tuple(output_size)
        self.bias_dims = bias_dims
        self.b_init = b_init or jnp.zeros
        self.bias_shape = None

    def __call__(self, inputs: Any, multiplier: Any = None) -> Any:
        """`inputs + b` (times `multiplier` if given)."""
        inputs = jnp.asarray(inputs)
        if inputs.ndim < 2:
            raise ValueError(f"Input tensor must have at least 2 dimensions (found: {inputs.ndim}).")
        if self.output_size is not None and self.output_size != tuple(inputs.shape[1:]):
            raise ValueError(f"Input shape must be {(-1,) + self.output_size} not {inputs.shape}")
        self.bias_shape = _bias_shape(inputs.shape, self.bias_dims)
        self.input_size = inputs.shape[1:]
        b = jnp.broadcast_to(get_parameter("b", self.bias_shape, inputs.dtype, init=self.b_init), inputs.shape)
        if multiplier is not None:
            b = b * multiplier
        return inputs + b


def _merge_leading(x: Any, num_dims: int) -> Any:
    if jnp.ndim(x) < num_dims:
        return x
    return jnp.reshape(x, (int(np.prod(x.shape[:num_dims])),) + tuple(x.shape[num_dims:]))


class BatchApply:
    """Calls `f` with the first `num_dims` axes of every (rank >= num_dims) argument merged into one, then splits
    the outputs' leading axis back: e.g. a `Linear` over `[T, B, D]` inputs.

    Raises:
        ValueError: no argument has at least `num_dims` dimensions.
    """

    def __init__(self, f: Callable[..., Any], num_dims: int = 2):
        self._f = f
        self.num_dims = num_dims

    def __call__(self, *args, **kwargs) -> Any:
        leaves = tree_util.tree_leaves((args, kwargs))
        example = next((x for x in leaves if jnp.ndim(x) >= self.num_dims), None)
        if example is None:
            raise ValueError(f"BatchApply requires at least one input with ndim >= {self.num_dims}.")
        lead = tuple(example.shape[:self.num_dims])
        args, kwargs = tree_util.tree_map(lambda x: _merge_leading(x, self.num_dims), (args, kwargs))
        outputs = self._f(*args, **kwargs)
        return tree_util.tree_map(lambda x: jnp.reshape(x, lead + tuple(x.shape[1:])), outputs)


def expand_apply(f: Callable[..., Any], axis: int = 0) -> Callable[..., Any]:
    """Wraps `f` to add a size-1 axis at `axis` to every input and remove it from every output (e.g. to call a
    batched module on one example).

    Raises:
        ValueError: `axis` other than 0 or -1.
    """
    if axis not in (0, -1):
        raise ValueError("expand_apply currently only supports axis=0 or axis=-1.")

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        args, kwargs = tree_util.tree_map(lambda t: jnp.expand_dims(t, axis), (args, kwargs))
        return tree_util.tree_map(lambda t: jnp.squeeze(t, axis=axis), f(*args, **kwargs))

    return wrapper

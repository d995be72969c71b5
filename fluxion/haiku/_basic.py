"""`Linear`, `Sequential`, `dropout` and `to_module`."""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import random

from . import initializers
from ._base import get_parameter
from ._module import Module

__all__ = ["Linear", "Sequential", "dropout", "to_module"]


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

"""Normalization: `ExponentialMovingAverage`, `EMAParamsTree`, `BatchNorm` (with state), `LayerNorm`, `RMSNorm`,
`InstanceNorm`, `GroupNorm`.

`BatchNorm` keeps its running statistics in two `ExponentialMovingAverage` submodules named `mean_ema` and
`var_ema`, each with state `counter` (int32), `hidden` and `average` -- Haiku's state tree
(`batch_norm/~/mean_ema: {counter, hidden, average}`). Training normalizes with the batch mean and
`var = E[x^2] - E[x]^2` and updates the averages; evaluation uses the averages.
"""

from __future__ import annotations

import collections.abc
import re
from typing import Any, Callable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax

from . import initializers
from ._base import get_parameter, get_state, set_state
from ._module import Module
from ._utils import get_channel_index

__all__ = ["ExponentialMovingAverage", "EMAParamsTree", "BatchNorm", "LayerNorm", "RMSNorm", "InstanceNorm",
           "GroupNorm"]


class ExponentialMovingAverage(Module):
    """`hidden <- decay * hidden + (1 - decay) * value`; `average = hidden / (1 - decay^counter)` when
    `zero_debias` (bias correction of Kingma & Ba 2015), else `hidden`.

    Raises:
        ValueError: negative `warmup_length`, or warmup combined with zero debiasing.
    """

    def __init__(self, decay: float, zero_debias: bool = True, warmup_length: int = 0, name: str | None = None):
        super().__init__(name=name)
        if warmup_length < 0:
            raise ValueError(f"`warmup_length` is {warmup_length}, but should be non-negative.")
        if warmup_length and zero_debias:
            raise ValueError("Zero debiasing does not make sense when warming up the value of the average to an "
                             "initial value. Set zero_debias=False if setting warmup_length to a non-zero value.")
        self.decay = decay
        self.warmup_length = warmup_length
        self.zero_debias = zero_debias

    def initialize(self, shape: Sequence[int], dtype: Any = jnp.float32) -> None:
        """Creates the `hidden` and `average` state (zeros) without updating it."""
        get_state("hidden", shape, dtype, init=jnp.zeros)
        get_state("average", shape, dtype, init=jnp.zeros)

    def __call__(self, value: Any, update_stats: bool = True) -> Any:
        """Folds `value` into the average and returns the new average (state updated if `update_stats`)."""
        value = jnp.asarray(value)
        counter = get_state("counter", (), jnp.int32, init=initializers.Constant(-self.warmup_length))
        counter = counter + 1
        decay = lax.convert_element_type(self.decay, value.dtype)
        if self.warmup_length > 0:
            decay = lax.select(counter <= 0, jnp.zeros_like(decay), decay)
        one = jnp.ones([], value.dtype)
        hidden = get_state("hidden", value.shape, value.dtype, init=jnp.zeros)
        hidden = hidden * decay + value * (one - decay)
        average = hidden
        if self.zero_debias:
            average = average / (one - jnp.power(decay, counter))
        if update_stats:
            set_state("counter", counter)
            set_state("hidden", hidden)
            set_state("average", average)
        return average

    @property
    def average(self) -> Any:
        return get_state("average")


class BatchNorm(Module):
    """Batch normalization (Ioffe & Szegedy 2015) with moving statistics kept as Haiku state.

    Parameters `scale`/`offset` have the input's shape with the reduced axes set to 1 (e.g. `(1, C)` for
    `(N, C)` input, `(1, 1, 1, C)` for NHWC).

    Raises:
        ValueError: `scale_init`/`offset_init` given while not creating that parameter; `scale`/`offset` passed
            at call time while also created; `cross_replica_axis_index_groups` without `cross_replica_axis`.
    """

    def __init__(self, create_scale: bool, create_offset: bool, decay_rate: float, eps: float = 1e-5,
                 scale_init: Callable | None = None, offset_init: Callable | None = None,
                 axis: Sequence[int] | None = None, cross_replica_axis: Any = None,
                 cross_replica_axis_index_groups: Any = None, data_format: str = "channels_last",
                 name: str | None = None):
        super().__init__(name=name)
        if not create_scale and scale_init is not None:
            raise ValueError("Cannot set `scale_init` if `create_scale=False`")
        if not create_offset and offset_init is not None:
            raise ValueError("Cannot set `offset_init` if `create_offset=False`")
        if cross_replica_axis is None and cross_replica_axis_index_groups is not None:
            raise ValueError("`cross_replica_axis` name must be specified if `cross_replica_axis_index_groups` "
                             "are used.")
        self.create_scale = create_scale
        self.create_offset = create_offset
        self.eps = eps
        self.scale_init = scale_init or jnp.ones
        self.offset_init = offset_init or jnp.zeros
        self.axis = axis
        self.cross_replica_axis = cross_replica_axis
        self.cross_replica_axis_index_groups = cross_replica_axis_index_groups
        self.channel_index = get_channel_index(data_format)
        self.mean_ema = ExponentialMovingAverage(decay_rate, name="mean_ema")
        self.var_ema = ExponentialMovingAverage(decay_rate, name="var_ema")

    def __call__(self, inputs: Any, is_training: bool, test_local_stats: bool = False, scale: Any = None,
                 offset: Any = None) -> Any:
        """Normalizes `inputs`; with `is_training` uses batch statistics and updates the moving averages."""
        if self.create_scale and scale is not None:
            raise ValueError("Cannot pass `scale` at call time if `create_scale=True`.")
        if self.create_offset and offset is not None:
            raise ValueError("Cannot pass `offset` at call time if `create_offset=True`.")
        channel_index = self.channel_index % inputs.ndim
        axis = list(self.axis) if self.axis is not None else [i for i in range(inputs.ndim) if i != channel_index]
        if is_training or test_local_stats:
            mean = jnp.mean(inputs, axis, keepdims=True)
            mean_of_squares = jnp.mean(jnp.square(inputs), axis, keepdims=True)
            if self.cross_replica_axis:
                mean = lax.pmean(mean, axis_name=self.cross_replica_axis,
                                 axis_index_groups=self.cross_replica_axis_index_groups)
                mean_of_squares = lax.pmean(mean_of_squares, axis_name=self.cross_replica_axis,
                                            axis_index_groups=self.cross_replica_axis_index_groups)
            var = mean_of_squares - jnp.square(mean)
        else:
            mean = self.mean_ema.average.astype(inputs.dtype)
            var = self.var_ema.average.astype(inputs.dtype)
        if is_training:
            self.mean_ema(mean)
            self.var_ema(var)
        w_shape = [1 if i in axis else inputs.shape[i] for i in range(inputs.ndim)]
        w_dtype = inputs.dtype
        if self.create_scale:
            scale = get_parameter("scale", w_shape, w_dtype, self.scale_init)
        elif scale is None:
            scale = np.ones([], dtype=w_dtype)
        if self.create_offset:
            offset = get_parameter("offset", w_shape, w_dtype, self.offset_init)
        elif offset is None:
            offset = np.zeros([], dtype=w_dtype)
        eps = lax.convert_element_type(self.eps, var.dtype)
        inv = scale * lax.rsqrt(var + eps)
        return (inputs - mean) * inv + offset


def _to_axes(axis: Any) -> Any:
    if isinstance(axis, slice):
        return axis
    if isinstance(axis, int):
        return (axis,)
    if isinstance(axis, collections.abc.Iterable) and all(isinstance(a, int) for a in axis):
        return tuple(axis)
    raise ValueError(f"`axis` should be an int, slice or iterable of ints. Got: {axis}")


def _abs_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if isinstance(axis, slice):
        return tuple(range(ndim)[axis])
    return tuple(sorted({a % ndim for a in axis}))


def _param_shape(param_axis: Any, inputs: Any) -> tuple[int, ...]:
    axes = _abs_axes(param_axis, inputs.ndim)
    if axes == (inputs.ndim - 1,):
        return (inputs.shape[-1],)
    return tuple(inputs.shape[i] if i in axes else 1 for i in range(inputs.ndim))


class LayerNorm(Module):
    """Layer normalization (Ba et al. 2016) over `axis`; `scale`/`offset` of shape `(C,)` by default.

    Raises:
        ValueError: bad `axis`; inits given for parameters that are not created; call-time scale/offset clash.
    """

    def __init__(self, axis: Any, create_scale: bool, create_offset: bool, eps: float = 1e-5,
                 scale_init: Callable | None = None, offset_init: Callable | None = None,
                 use_fast_variance: bool = False, name: str | None = None, *, param_axis: Any = None):
        super().__init__(name=name)
        if not create_scale and scale_init is not None:
            raise ValueError("Cannot set `scale_init` if `create_scale=False`.")
        if not create_offset and offset_init is not None:
            raise ValueError("Cannot set `offset_init` if `create_offset=False`.")
        self.axis = _to_axes(axis)
        self.eps = eps
        self.create_scale = create_scale
        self.create_offset = create_offset
        self.scale_init = scale_init or jnp.ones
        self.offset_init = offset_init or jnp.zeros
        self.use_fast_variance = use_fast_variance
        self.param_axis = (-1,) if param_axis is None else _to_axes(param_axis)

    def __call__(self, inputs: Any, scale: Any = None, offset: Any = None) -> Any:
        inputs = jnp.asarray(inputs)
        if self.create_scale and scale is not None:
            raise ValueError("Cannot pass `scale` at call time if `create_scale=True`.")
        if self.create_offset and offset is not None:
            raise ValueError("Cannot pass `offset` at call time if `create_offset=True`.")
        axis = _abs_axes(self.axis, inputs.ndim)
        mean = jnp.mean(inputs, axis=axis, keepdims=True)
        if self.use_fast_variance:
            variance = jnp.mean(jnp.square(inputs), axis=axis, keepdims=True) - jnp.square(mean)
        else:
            variance = jnp.var(inputs, axis=axis, keepdims=True)
        param_shape = _param_shape(self.param_axis, inputs)
        if self.create_scale:
            scale = get_parameter("scale", param_shape, inputs.dtype, init=self.scale_init)
        elif scale is None:
            scale = np.array(1., dtype=inputs.dtype)
        if self.create_offset:
            offset = get_parameter("offset", param_shape, inputs.dtype, init=self.offset_init)
        elif offset is None:
            offset = np.array(0., dtype=inputs.dtype)
        eps = lax.convert_element_type(self.eps, variance.dtype)
        inv = scale * lax.rsqrt(variance + eps)
        return inv * (inputs - mean) + offset


class RMSNorm(Module):
    """Root-mean-square normalization (Zhang & Sennrich 2019): `x * scale / sqrt(mean(x^2) + eps)`."""

    def __init__(self, axis: Any, eps: float = 1e-5, scale_init: Callable | None = None, name: str | None = None,
                 create_scale: bool = True, *, param_axis: Any = None):
        super().__init__(name=name)
        if not create_scale and scale_init is not None:
            raise ValueError("Cannot set `scale_init` if `create_scale=False`.")
        self.axis = _to_axes(axis)
        self.eps = eps
        self.create_scale = create_scale
        self.scale_init = scale_init or jnp.ones
        self.param_axis = (-1,) if param_axis is None else _to_axes(param_axis)

    def __call__(self, inputs: Any) -> Any:
        inputs = jnp.asarray(inputs)
        axis = _abs_axes(self.axis, inputs.ndim) if isinstance(self.axis, slice) else self.axis
        if self.create_scale:
            scale = get_parameter("scale", _param_shape(self.param_axis, inputs), inputs.dtype,
                                  init=self.scale_init)
            scale = jnp.broadcast_to(scale, inputs.shape)
        else:
            scale = 1.
        mean_squared = jnp.broadcast_to(jnp.mean(jnp.square(inputs), axis=axis, keepdims=True), inputs.shape)
        return inputs * scale * lax.rsqrt(mean_squared + self.eps)


class InstanceNorm(LayerNorm):
    """Instance normalization (Ulyanov et al. 2016): `LayerNorm` over the spatial axes of each example and
    channel, with per-channel `scale`/`offset`."""

    def __init__(self, create_scale: bool, create_offset: bool, eps: float = 1e-5,
                 scale_init: Callable | None = None, offset_init: Callable | None = None,
                 data_format: str = "channels_last", name: str | None = None):
        param_axis = get_channel_index(data_format)
        axis = slice(2, None) if param_axis == 1 else slice(1, -1)
        super().__init__(axis=axis, create_scale=create_scale, create_offset=create_offset, eps=eps,
                         scale_init=scale_init, offset_init=offset_init, param_axis=param_axis, name=name)


def _to_rank(x: Any, ndim: int) -> Any:
    x = jnp.asarray(x)
    return jnp.reshape(x, (1,) * (ndim - x.ndim) + tuple(x.shape))


class GroupNorm(Module):
    """Group normalization (Wu & He 2018): channels are split into `groups`; each example is normalized over
    `axis` (default all non-batch axes) within each group. `scale`/`offset` have shape `(C,)` (channels-last) or
    `(C, 1, ..., 1)` (channels-first).

    Raises:
        ValueError: bad `axis`; inits given for parameters that are not created; channels not divisible by
            `groups`; a call with a different rank than the first one; call-time scale/offset clash.
    """

    def __init__(self, groups: int, axis: Any = slice(1, None), create_scale: bool = True,
                 create_offset: bool = True, eps: float = 1e-5, scale_init: Callable | None = None,
                 offset_init: Callable | None = None, data_format: str = "channels_last",
                 name: str | None = None):
        super().__init__(name=name)
        if isinstance(axis, slice):
            self.axis = axis
        elif isinstance(axis, int):
            self.axis = (axis,)
        elif isinstance(axis, collections.abc.Iterable) and all(isinstance(a, int) for a in axis):
            self.axis = tuple(axis)
        else:
            raise ValueError("`axis` should be an int, slice or iterable of ints.")
        if not create_scale and scale_init is not None:
            raise ValueError("Cannot set `scale_init` if `create_scale=False`.")
        if not create_offset and offset_init is not None:
            raise ValueError("Cannot set `offset_init` if `create_offset=False`.")
        self.groups = groups
        self.eps = eps
        self.data_format = data_format
        self.channel_index = get_channel_index(data_format)
        self.create_scale = create_scale
        self.create_offset = create_offset
        self.scale_init = scale_init or jnp.ones
        self.offset_init = offset_init or jnp.zeros
        self.rank = None

    def __call__(self, x: Any, scale: Any = None, offset: Any = None) -> Any:
        """x `[N, ..., C]` (or `[N, C, ...]`) -> same shape."""
        x = jnp.asarray(x)
        if self.rank is not None and x.ndim != self.rank:
            raise ValueError("The rank of the inputs cannot change between calls, the original call was "
                             f"rank={self.rank} but this call was rank={x.ndim}.")
        if self.create_scale and scale is not None:
            raise ValueError("Cannot pass `scale` at call time if `create_scale=True`.")
        if self.create_offset and offset is not None:
            raise ValueError("Cannot pass `offset` at call time if `create_offset=True`.")
        channels = x.shape[self.channel_index]
        if channels % self.groups != 0:
            raise ValueError("The number of channels must be divisible by the number of groups, was "
                             f"channels={channels}, groups={self.groups}")
        if self.rank is None:
            self._initialize(x, channels)
        if self.channel_index == -1:
            params_shape = (channels,)
        else:
            params_shape = (channels,) + (1,) * (self.rank - 2)
        if self.create_scale:
            scale = get_parameter("scale", params_shape, x.dtype, self.scale_init)
        if self.create_offset:
            offset = get_parameter("offset", params_shape, x.dtype, self.offset_init)
        grouped = jnp.reshape(x, self.group_shape)
        mean = jnp.mean(grouped, self.axis, keepdims=True)
        var = jnp.var(grouped, self.axis, keepdims=True)
        x = jnp.reshape((grouped - mean) * lax.rsqrt(var + self.eps), self.first_input_shape)
        if scale is not None:
            x = x * _to_rank(scale, x.ndim)
        if offset is not None:
            x = x + _to_rank(offset, x.ndim)
        return x

    def _initialize(self, x: Any, channels: int) -> None:
        # The channel axis is split into (groups, channels // groups): reduction axes after it shift by one.
        self.rank = x.ndim
        if isinstance(self.axis, slice):
            self.axis = tuple(range(self.rank))[self.axis]
        if self.channel_index == -1:
            self.axis = tuple(a if a != self.rank - 1 else a + 1 for a in self.axis)
            self.group_shape = (-1,) + tuple(x.shape[1:-1]) + (self.groups, channels // self.groups)
        else:
            self.axis = tuple(a if a == 0 else a + 1 for a in self.axis)
            self.group_shape = (-1, self.groups, channels // self.groups) + tuple(x.shape[2:])
        self.first_input_shape = (-1,) + tuple(x.shape[1:])


def _sanitized(key: str, tilde: str) -> str:
    return key.replace("/", "__").replace("~", tilde)


class EMAParamsTree(Module):
    """An `ExponentialMovingAverage` of every leaf of a `{module: {name: array}}` tree (e.g. parameters, for
    Polyak averaging); the averages live in submodules named after the leaf (`/` -> `__`, `~` -> `_tilde_`).
    Leaves whose `module/name` matches `ignore_regex` are returned unchanged."""

    def __init__(self, decay: float, zero_debias: bool = True, warmup_length: int = 0, ignore_regex: str = "",
                 name: str | None = None):
        super().__init__(name=name)
        self.decay = decay
        self.zero_debias = zero_debias
        self.warmup_length = warmup_length
        self.ignore_regex = ignore_regex

    def __call__(self, tree: Any, update_stats: bool = True) -> dict:
        def maybe_ema(key, value):
            if self.ignore_regex and re.match(self.ignore_regex, key):
                return value
            ema = ExponentialMovingAverage(self.decay, self.zero_debias, self.warmup_length,
                                           name=_sanitized(key, "_tilde_"))
            return ema(value, update_stats=update_stats)

        return {module_name: {k: maybe_ema(f"{module_name}/{k}", v) for k, v in bundle.items()}
                for module_name, bundle in tree.items()}

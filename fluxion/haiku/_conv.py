"""N-d convolutions and transposed convolutions (`ConvND`, `Conv1D/2D/3D`, `ConvNDTranspose`, ...).

Parameter names and shapes follow Haiku: `w` is `kernel_shape + (in_channels // feature_group_count, out)` for a
convolution and `kernel_shape + (out, in_channels)` for a transposed one; `b` is `(out,)` for channels-last data
(`(out, 1, ..., 1)` for channels-first). The default `w` init is a truncated normal with stddev
`1 / sqrt(fan_in)`, fan_in being the product of all kernel dimensions but the output one.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax

from . import initializers, pad
from ._base import get_parameter
from ._module import Module
from ._utils import get_channel_index, int_tuple, replicate, spatial_letters

__all__ = ["ConvND", "Conv1D", "Conv2D", "Conv3D", "ConvNDTranspose", "Conv1DTranspose", "Conv2DTranspose",
           "Conv3DTranspose", "DepthwiseConvND", "DepthwiseConv1D", "DepthwiseConv2D", "DepthwiseConv3D",
           "SeparableDepthwiseConv2D"]


def _dimension_numbers(n: int, channels_last: bool, transpose: bool) -> tuple[str, str, str]:
    """String dimension numbers, e.g. ("NHWC", "HWIO", "NHWC"); a transposed kernel is "HWOI"."""
    sp = spatial_letters(n)
    image = f"N{sp}C" if channels_last else f"NC{sp}"
    kernel = sp + ("OI" if transpose else "IO")
    return image, kernel, image


def _normalize_padding(padding: Any, n: int, kernel_shape: Sequence[int], rate: Sequence[int]) -> Any:
    if isinstance(padding, str):
        return padding.upper()
    if pad.is_padfn(padding):
        return pad.create_from_padfn(padding, kernel_shape, rate, n)
    return pad.create_from_tuple(padding, n)


def _check_rank(inputs: Any, n: int, what: str) -> bool:
    allowed = [n + 1, n + 2]
    if inputs.ndim not in allowed:
        raise ValueError(f"Input to {what} needs to have rank in {allowed}, but input has shape {inputs.shape}.")
    return inputs.ndim == n + 1


def _add_bias(module: Any, out: Any, dtype: Any) -> Any:
    if not module.with_bias:
        return out
    if module.channel_index == -1:
        bias_shape = (module.output_channels,)
    else:
        bias_shape = (module.output_channels,) + (1,) * module.num_spatial_dims
    b = get_parameter("b", bias_shape, dtype, init=module.b_init)
    return out + jnp.broadcast_to(b, out.shape)


class ConvND(Module):
    """N-d convolution over `(N, *spatial, C)` (or channels-first) inputs; unbatched inputs are accepted.

    Raises (at call):
        ValueError: input rank not `num_spatial_dims + 1/2`; channels not divisible by `feature_group_count`;
            `mask` shape differs from `w`.
    """

    def __init__(self, num_spatial_dims: int, output_channels: int, kernel_shape: int | Sequence[int],
                 stride: int | Sequence[int] = 1, rate: int | Sequence[int] = 1, padding: Any = "SAME",
                 with_bias: bool = True, w_init: Callable | None = None, b_init: Callable | None = None,
                 data_format: str = "channels_last", mask: Any = None, feature_group_count: int = 1,
                 name: str | None = None):
        super().__init__(name=name)
        if num_spatial_dims <= 0:
            raise ValueError("We only support convolution operations for `num_spatial_dims` greater than 0, "
                             f"received num_spatial_dims={num_spatial_dims}.")
        self.num_spatial_dims = num_spatial_dims
        self.output_channels = output_channels
        self.kernel_shape = replicate(kernel_shape, num_spatial_dims, "kernel_shape")
        self.with_bias = with_bias
        self.stride = replicate(stride, num_spatial_dims, "strides")
        self.w_init = w_init
        self.b_init = b_init or jnp.zeros
        self.mask = mask
        self.feature_group_count = feature_group_count
        self.lhs_dilation = (1,) * num_spatial_dims
        self.kernel_dilation = replicate(rate, num_spatial_dims, "kernel_dilation")
        self.data_format = data_format
        self.channel_index = get_channel_index(data_format)
        self.dimension_numbers = _dimension_numbers(num_spatial_dims, self.channel_index == -1, transpose=False)
        self.padding = _normalize_padding(padding, num_spatial_dims, self.kernel_shape, self.kernel_dilation)

    def __call__(self, inputs: Any, *, precision: Any = None) -> Any:
        inputs = jnp.asarray(inputs)
        unbatched = _check_rank(inputs, self.num_spatial_dims, "ConvND")
        if unbatched:
            inputs = jnp.expand_dims(inputs, axis=0)
        in_channels = inputs.shape[self.channel_index]
        if in_channels % self.feature_group_count != 0:
            raise ValueError(f"Inputs channels {in_channels} should be a multiple of feature_group_count "
                             f"{self.feature_group_count}")
        w_shape = self.kernel_shape + (in_channels // self.feature_group_count, self.output_channels)
        if self.mask is not None and tuple(self.mask.shape) != w_shape:
            raise ValueError(f"Mask needs to have the same shape as weights. Shapes are: {self.mask.shape}, "
                             f"{w_shape}")
        w_init = self.w_init
        if w_init is None:
            w_init = initializers.TruncatedNormal(stddev=1. / np.sqrt(np.prod(w_shape[:-1])))
        w = get_parameter("w", w_shape, inputs.dtype, init=w_init)
        if self.mask is not None:
            w = w * self.mask
        out = lax.conv_general_dilated(inputs, w, window_strides=int_tuple(self.stride), padding=self.padding,
                                       lhs_dilation=self.lhs_dilation,
                                       rhs_dilation=int_tuple(self.kernel_dilation),
                                       dimension_numbers=self.dimension_numbers,
                                       feature_group_count=self.feature_group_count, precision=precision)
        out = _add_bias(self, out, inputs.dtype)
        return jnp.squeeze(out, axis=0) if unbatched else out


class Conv1D(ConvND):
    """1-d convolution (default data format NWC)."""

    def __init__(self, output_channels: int, kernel_shape: int | Sequence[int], stride: int | Sequence[int] = 1,
                 rate: int | Sequence[int] = 1, padding: Any = "SAME", with_bias: bool = True,
                 w_init: Callable | None = None, b_init: Callable | None = None, data_format: str = "NWC",
                 mask: Any = None, feature_group_count: int = 1, name: str | None = None):
        super().__init__(1, output_channels, kernel_shape, stride, rate, padding, with_bias, w_init, b_init,
                         data_format, mask, feature_group_count, name=name)


class Conv2D(ConvND):
    """2-d convolution (default data format NHWC)."""

    def __init__(self, output_channels: int, kernel_shape: int | Sequence[int], stride: int | Sequence[int] = 1,
                 rate: int | Sequence[int] = 1, padding: Any = "SAME", with_bias: bool = True,
                 w_init: Callable | None = None, b_init: Callable | None = None, data_format: str = "NHWC",
                 mask: Any = None, feature_group_count: int = 1, name: str | None = None):
        super().__init__(2, output_channels, kernel_shape, stride, rate, padding, with_bias, w_init, b_init,
                         data_format, mask, feature_group_count, name=name)


class Conv3D(ConvND):
    """3-d convolution (default data format NDHWC)."""

    def __init__(self, output_channels: int, kernel_shape: int | Sequence[int], stride: int | Sequence[int] = 1,
                 rate: int | Sequence[int] = 1, padding: Any = "SAME", with_bias: bool = True,
                 w_init: Callable | None = None, b_init: Callable | None = None, data_format: str = "NDHWC",
                 mask: Any = None, feature_group_count: int = 1, name: str | None = None):
        super().__init__(3, output_channels, kernel_shape, stride, rate, padding, with_bias, w_init, b_init,
                         data_format, mask, feature_group_count, name=name)


def compute_adjusted_padding(input_size: int, output_size: int, kernel_size: int, stride: int, padding: str,
                             dilation: int = 1) -> tuple[int, int]:
    """Explicit (low, high) padding that makes a transposed convolution produce exactly `output_size`.

    Raises:
        ValueError: `input_size` inconsistent with `output_size` for this padding; unknown padding.
    """
    kernel_size = (kernel_size - 1) * dilation + 1
    if padding == "VALID":
        expected = (output_size - kernel_size + stride) // stride
        before = 0
    elif padding == "SAME":
        expected = (output_size + stride - 1) // stride
        before = max(0, (input_size - 1) * stride + kernel_size - output_size) // 2
    else:
        raise ValueError(f"`padding` must be 'VALID' or 'SAME'. Passed: {padding}.")
    if input_size != expected:
        raise ValueError(f"The expected input size with the current set of input parameters is {expected} which "
                         f"doesn't match the actual input size {input_size}.")
    expanded_input_size = (input_size - 1) * stride + 1
    padded_out_size = output_size + kernel_size - 1
    pad_before = kernel_size - 1 - before
    return pad_before, padded_out_size - expanded_input_size - pad_before


class ConvNDTranspose(Module):
    """N-d transposed convolution; `w` has shape `kernel_shape + (output_channels, input_channels)`."""

    def __init__(self, num_spatial_dims: int, output_channels: int, kernel_shape: int | Sequence[int],
                 stride: int | Sequence[int] = 1, output_shape: int | Sequence[int] | None = None,
                 padding: Any = "SAME", with_bias: bool = True, w_init: Callable | None = None,
                 b_init: Callable | None = None, data_format: str = "channels_last", mask: Any = None,
                 name: str | None = None):
        super().__init__(name=name)
        if num_spatial_dims <= 0:
            raise ValueError("We only support convolution operations for `num_spatial_dims` greater than 0, "
                             f"received num_spatial_dims={num_spatial_dims}.")
        self.num_spatial_dims = num_spatial_dims
        self.output_channels = output_channels
        self.kernel_shape = replicate(kernel_shape, num_spatial_dims, "kernel_shape")
        self.output_shape = output_shape
        if output_shape is not None:
            self.output_shape = replicate(output_shape, num_spatial_dims, "output_shape")
            if not isinstance(padding, str):
                raise ValueError("When specifying `output_shape`, ensure that paddding is 'VALID' or 'SAME'.")
        self.with_bias = with_bias
        self.stride = replicate(stride, num_spatial_dims, "strides")
        self.w_init = w_init
        self.b_init = b_init or jnp.zeros
        self.mask = mask
        self.padding = _normalize_padding(padding, num_spatial_dims, self.kernel_shape, (1,) * num_spatial_dims)
        self.data_format = data_format
        self.channel_index = get_channel_index(data_format)
        self.dimension_numbers = _dimension_numbers(num_spatial_dims, self.channel_index == -1, transpose=True)

    def __call__(self, inputs: Any, *, precision: Any = None) -> Any:
        inputs = jnp.asarray(inputs)
        unbatched = _check_rank(inputs, self.num_spatial_dims, "ConvNDTranspose")
        if unbatched:
            inputs = jnp.expand_dims(inputs, axis=0)
        in_channels = inputs.shape[self.channel_index]
        w_shape = self.kernel_shape + (self.output_channels, in_channels)
        if self.mask is not None and tuple(self.mask.shape) != w_shape:
            raise ValueError(f"Mask needs to have the same shape as weights. Shapes are: {self.mask.shape}, "
                             f"{w_shape}")
        w_init = self.w_init
        if w_init is None:
            w_init = initializers.TruncatedNormal(stddev=1. / np.sqrt(np.prod(self.kernel_shape + (in_channels,))))
        w = get_parameter("w", w_shape, inputs.dtype, init=w_init)
        if self.mask is not None:
            w = w * self.mask
        padding = self.padding
        if self.output_shape is not None:
            spatial = inputs.shape[2:] if self.channel_index == 1 else inputs.shape[1:-1]
            padding = [compute_adjusted_padding(i, o, k, s, self.padding)
                       for i, o, k, s in zip(spatial, self.output_shape, self.kernel_shape, self.stride)]
        out = lax.conv_transpose(inputs, w, strides=int_tuple(self.stride), padding=padding,
                                 dimension_numbers=self.dimension_numbers, precision=precision)
        out = _add_bias(self, out, inputs.dtype)
        return jnp.squeeze(out, axis=0) if unbatched else out


class Conv1DTranspose(ConvNDTranspose):
    """1-d transposed convolution (default NWC)."""

    def __init__(self, output_channels: int, kernel_shape: int | Sequence[int], stride: int | Sequence[int] = 1,
                 output_shape: int | Sequence[int] | None = None, padding: Any = "SAME", with_bias: bool = True,
                 w_init: Callable | None = None, b_init: Callable | None = None, data_format: str = "NWC",
                 mask: Any = None, name: str | None = None):
        super().__init__(1, output_channels, kernel_shape, stride, output_shape, padding, with_bias, w_init,
                         b_init, data_format, mask, name=name)


class Conv2DTranspose(ConvNDTranspose):
    """2-d transposed convolution (default NHWC)."""

    def __init__(self, output_channels: int, kernel_shape: int | Sequence[int], stride: int | Sequence[int] = 1,
                 output_shape: int | Sequence[int] | None = None, padding: Any = "SAME", with_bias: bool = True,
                 w_init: Callable | None = None, b_init: Callable | None = None, data_format: str = "NHWC",
                 mask: Any = None, name: str | None = None):
        super().__init__(2, output_channels, kernel_shape, stride, output_shape, padding, with_bias, w_init,
                         b_init, data_format, mask, name=name)


class Conv3DTranspose(ConvNDTranspose):
    """3-d transposed convolution (default NDHWC)."""

    def __init__(self, output_channels: int, kernel_shape: int | Sequence[int], stride: int | Sequence[int] = 1,
                 output_shape: int | Sequence[int] | None = None, padding: Any = "SAME", with_bias: bool = True,
                 w_init: Callable | None = None, b_init: Callable | None = None, data_format: str = "NDHWC",
                 mask: Any = None, name: str | None = None):
        super().__init__(3, output_channels, kernel_shape, stride, output_shape, padding, with_bias, w_init,
                         b_init, data_format, mask, name=name)


class DepthwiseConvND(Module):
    """Depthwise convolution: each input channel is convolved with its own `channel_multiplier` filters
    (`feature_group_count = in_channels`).

    Parameters: `w` of shape `kernel_shape + (1, channel_multiplier * C)` (default truncated normal, stddev
    `1 / sqrt(prod(kernel_shape))`), `b` of shape `(channel_multiplier * C,)` channels-last or
    `(channel_multiplier * C, 1, 1)` channels-first (Haiku's shape, whatever the number of spatial dims).
    Unlike `ConvND`, inputs must be batched.
    """

    def __init__(self, channel_multiplier: int, kernel_shape: int | Sequence[int], num_spatial_dims: int,
                 data_format: str, stride: int | Sequence[int] = 1, rate: int | Sequence[int] = 1,
                 padding: Any = "SAME", with_bias: bool = True, w_init: Callable | None = None,
                 b_init: Callable | None = None, name: str | None = None):
        super().__init__(name=name)
        self.num_spatial_dims = num_spatial_dims
        self.kernel_shape = replicate(kernel_shape, num_spatial_dims, "kernel_shape")
        self.lhs_dilation = (1,) * num_spatial_dims
        self.rhs_dilation = replicate(rate, num_spatial_dims, "rhs_dilation")
        self.channel_multiplier = channel_multiplier
        self.padding = _normalize_padding(padding, num_spatial_dims, self.kernel_shape, self.rhs_dilation)
        self.stride = replicate(stride, num_spatial_dims, "strides")
        self.data_format = data_format
        self.channel_index = get_channel_index(data_format)
        self.with_bias = with_bias
        self.w_init = w_init
        self.b_init = b_init or jnp.zeros
        self.dn = _dimension_numbers(num_spatial_dims, self.channel_index == -1, transpose=False)

    def __call__(self, inputs: Any) -> Any:
        inputs = jnp.asarray(inputs)
        channels = inputs.shape[self.channel_index]
        w_shape = self.kernel_shape + (1, self.channel_multiplier * channels)
        w_init = self.w_init
        if w_init is None:
            w_init = initializers.TruncatedNormal(stddev=1. / np.sqrt(np.prod(w_shape[:-1])))
        w = get_parameter("w", w_shape, inputs.dtype, init=w_init)
        out = lax.conv_general_dilated(inputs, w, window_strides=int_tuple(self.stride), padding=self.padding,
                                       lhs_dilation=self.lhs_dilation, rhs_dilation=int_tuple(self.rhs_dilation),
                                       dimension_numbers=self.dn, feature_group_count=channels)
        if self.with_bias:
            b_shape = (self.channel_multiplier * channels,)
            if self.channel_index != -1:
                b_shape += (1, 1)
            b = get_parameter("b", b_shape, inputs.dtype, init=self.b_init)
            out = out + jnp.broadcast_to(b, out.shape)
        return out


def _depthwise(n: int, default_format: str, doc: str) -> type:
    # The 1/2/3-d classes differ only in `num_spatial_dims` and the default data format.
    def __init__(self, channel_multiplier: int, kernel_shape: int | Sequence[int],
                 stride: int | Sequence[int] = 1, rate: int | Sequence[int] = 1, padding: Any = "SAME",
                 with_bias: bool = True, w_init: Callable | None = None, b_init: Callable | None = None,
                 data_format: str = default_format, name: str | None = None):
        DepthwiseConvND.__init__(self, channel_multiplier, kernel_shape, n, data_format, stride, rate, padding,
                                 with_bias, w_init, b_init, name=name)

    return type(f"DepthwiseConv{n}D", (DepthwiseConvND,), {"__init__": __init__, "__doc__": doc,
                                                          "__module__": __name__})


DepthwiseConv1D = _depthwise(1, "NWC", "1-d depthwise convolution (default NWC).")
DepthwiseConv2D = _depthwise(2, "NHWC", "2-d depthwise convolution (default NHWC).")
DepthwiseConv3D = _depthwise(3, "NDHWC", "3-d depthwise convolution (default NDHWC).")


class SeparableDepthwiseConv2D(Module):
    """A `k_h x k_w` depthwise convolution factored into a `k_h x 1` depthwise convolution with
    `channel_multiplier` (no bias) followed by a `1 x k_w` one with multiplier 1 (with bias).
    """

    def __init__(self, channel_multiplier: int, kernel_shape: int | Sequence[int], stride: int | Sequence[int] = 1,
                 padding: Any = "SAME", with_bias: bool = True, w_init: Callable | None = None,
                 b_init: Callable | None = None, data_format: str = "NHWC", name: str | None = None):
        super().__init__(name=name)
        kernel_shape = replicate(kernel_shape, 2, "kernel_shape")
        self._conv1 = DepthwiseConv2D(channel_multiplier, [kernel_shape[0], 1], stride=stride, padding=padding,
                                      with_bias=False, w_init=w_init, b_init=b_init, data_format=data_format)
        self._conv2 = DepthwiseConv2D(1, [1, kernel_shape[1]], stride=1, padding=padding, with_bias=with_bias,
                                      w_init=w_init, b_init=b_init, data_format=data_format)

    def __call__(self, inputs: Any) -> Any:
        return self._conv2(self._conv1(inputs))

"""`MobileNetV1` (Howard et al. 2017, "MobileNets: Efficient Convolutional Neural Networks for Mobile Vision
Applications") with Haiku's module layout: `conv2_d` (+ `batch_norm`) stem, then blocks
`mobile_net_v1_block[_i]` of a 3x3 `depthwise_conv` and a 1x1 `pointwise_conv` (each followed by batch norm and
relu), global average pooling and a `logits` Linear.
"""

from __future__ import annotations

from typing import Any, Sequence

import fluxion.numpy as jnp
from fluxion import nn

from .._basic import Linear
from .._conv import Conv2D, DepthwiseConv2D
from .._layers import Flatten
from .._module import Module
from .._norm import BatchNorm

__all__ = ["MobileNetV1Block", "MobileNetV1"]


def _bn() -> BatchNorm:
    return BatchNorm(create_scale=True, create_offset=True, decay_rate=0.999)


class MobileNetV1Block(Module):
    """Depthwise-separable block: 3x3 depthwise conv (stride `stride`, padding 1) and 1x1 conv to `channels`."""

    def __init__(self, channels: int, stride: int, use_bn: bool = True, name: str | None = None):
        super().__init__(name=name)
        self.channels = channels
        self.stride = stride
        self.use_bn = use_bn
        self.with_bias = not use_bn

    def __call__(self, inputs: Any, is_training: bool) -> Any:
        depthwise = DepthwiseConv2D(channel_multiplier=1, kernel_shape=3, stride=self.stride,
                                    padding=((1, 1), (1, 1)), with_bias=self.with_bias, name="depthwise_conv")
        pointwise = Conv2D(output_channels=self.channels, kernel_shape=(1, 1), stride=1, padding="VALID",
                           with_bias=self.with_bias, name="pointwise_conv")
        out = depthwise(inputs)
        if self.use_bn:
            out = _bn()(out, is_training)
        out = pointwise(nn.relu(out))
        if self.use_bn:
            out = _bn()(out, is_training)
        return nn.relu(out)


class MobileNetV1(Module):
    """MobileNet v1 over NHWC images: `inputs [N, H, W, C]`, `is_training` -> logits `[N, num_classes]`.

    Raises:
        ValueError: `strides` and `channels` of different lengths.
    """

    def __init__(self, strides: Sequence[int] = (1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1),
                 channels: Sequence[int] = (64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024),
                 num_classes: int = 1000, use_bn: bool = True, name: str | None = None):
        super().__init__(name=name)
        if len(strides) != len(channels):
            raise ValueError("`strides` and `channels` must have the same length.")
        self.strides = strides
        self.channels = channels
        self.use_bn = use_bn
        self.with_bias = not use_bn
        self.num_classes = num_classes

    def __call__(self, inputs: Any, is_training: bool) -> Any:
        out = Conv2D(output_channels=32, kernel_shape=(3, 3), stride=2, padding="VALID",
                     with_bias=self.with_bias)(inputs)
        if self.use_bn:
            out = _bn()(out, is_training)
        out = nn.relu(out)
        for channels, stride in zip(self.channels, self.strides):
            out = MobileNetV1Block(channels, stride, self.use_bn)(out, is_training)
        out = Flatten()(jnp.mean(out, axis=(1, 2)))
        return Linear(self.num_classes, name="logits")(out)

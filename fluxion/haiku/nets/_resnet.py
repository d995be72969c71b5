"""`nets.ResNet` and `ResNet18/34/50/101/152/200` (He et al. 2016, v1; v2 with `resnet_v2=True`).

Module names follow Haiku: `res_net18/~/initial_conv`, `res_net18/~/initial_batchnorm`,
`res_net18/~/block_group_<g>/~/block_<b>/~/conv_<i>` / `batchnorm_<i>` / `shortcut_conv` / `shortcut_batchnorm`,
`res_net18/~/logits` (zero-initialised). Batch-norm statistics are state (use `transform_with_state`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import fluxion.numpy as jnp
from fluxion import nn

from .._basic import Linear
from .._conv import Conv2D
from .._layers import max_pool
from .._module import Module
from .._norm import BatchNorm

__all__ = ["ResNet", "ResNet18", "ResNet34", "ResNet50", "ResNet101", "ResNet152", "ResNet200"]


def _conv(channels: int, kernel: int, stride: int, name: str) -> Conv2D:
    return Conv2D(output_channels=channels, kernel_shape=kernel, stride=stride, with_bias=False, padding="SAME",
                  name=name)


class BlockV1(Module):
    """Post-activation residual block: (conv -> bn -> relu) x2 or x3 (bottleneck), plus the shortcut."""

    def __init__(self, channels: int, stride: Any, use_projection: bool, bn_config: Mapping[str, Any],
                 bottleneck: bool, name: str | None = None):
        super().__init__(name=name)
        self.use_projection = use_projection
        bn_config = dict(bn_config)
        bn_config.setdefault("create_scale", True)
        bn_config.setdefault("create_offset", True)
        bn_config.setdefault("decay_rate", 0.999)
        if use_projection:
            self.proj_conv = _conv(channels, 1, stride, "shortcut_conv")
            self.proj_batchnorm = BatchNorm(name="shortcut_batchnorm", **bn_config)
        div = 4 if bottleneck else 1
        layers = [(_conv(channels // div, 1 if bottleneck else 3, 1 if bottleneck else stride, "conv_0"),
                   BatchNorm(name="batchnorm_0", **bn_config)),
                  (_conv(channels // div, 3, stride if bottleneck else 1, "conv_1"),
                   BatchNorm(name="batchnorm_1", **bn_config))]
        if bottleneck:
            # The last batch norm of a bottleneck block starts at zero scale (Goyal et al. 2017).
            layers.append((_conv(channels, 1, 1, "conv_2"),
                           BatchNorm(name="batchnorm_2", scale_init=jnp.zeros, **bn_config)))
        self.layers = tuple(layers)

    def __call__(self, inputs: Any, is_training: bool, test_local_stats: bool) -> Any:
        out = shortcut = inputs
        if self.use_projection:
            shortcut = self.proj_batchnorm(self.proj_conv(shortcut), is_training, test_local_stats)
        for i, (conv_i, bn_i) in enumerate(self.layers):
            out = bn_i(conv_i(out), is_training, test_local_stats)
            if i < len(self.layers) - 1:
                out = nn.relu(out)
        return nn.relu(out + shortcut)


class BlockV2(Module):
    """Pre-activation residual block (He et al. 2016b): (bn -> relu -> conv) repeated, plus the shortcut."""

    def __init__(self, channels: int, stride: Any, use_projection: bool, bn_config: Mapping[str, Any],
                 bottleneck: bool, name: str | None = None):
        super().__init__(name=name)
        self.use_projection = use_projection
        bn_config = dict(bn_config)
        bn_config.setdefault("create_scale", True)
        bn_config.setdefault("create_offset", True)
        if use_projection:
            self.proj_conv = _conv(channels, 1, stride, "shortcut_conv")
        div = 4 if bottleneck else 1
        layers = [(_conv(channels // div, 1 if bottleneck else 3, 1 if bottleneck else stride, "conv_0"),
                   BatchNorm(name="batchnorm_0", **bn_config)),
                  (_conv(channels // div, 3, stride if bottleneck else 1, "conv_1"),
                   BatchNorm(name="batchnorm_1", **bn_config))]
        if bottleneck:
            layers.append((_conv(channels, 1, 1, "conv_2"), BatchNorm(name="batchnorm_2", **bn_config)))
        self.layers = tuple(layers)

    def __call__(self, inputs: Any, is_training: bool, test_local_stats: bool) -> Any:
        x = shortcut = inputs
        for i, (conv_i, bn_i) in enumerate(self.layers):
            x = nn.relu(bn_i(x, is_training, test_local_stats))
            if i == 0 and self.use_projection:
                shortcut = self.proj_conv(x)
            x = conv_i(x)
        return x + shortcut


class BlockGroup(Module):
    """`num_blocks` blocks; the first one has the stride and (optionally) the projection shortcut."""

    def __init__(self, channels: int, num_blocks: int, stride: Any, bn_config: Mapping[str, Any], resnet_v2: bool,
                 bottleneck: bool, use_projection: bool, name: str | None = None):
        super().__init__(name=name)
        block_cls = BlockV2 if resnet_v2 else BlockV1
        self.blocks = [block_cls(channels=channels, stride=1 if i else stride, use_projection=(i == 0 and
                                 use_projection), bottleneck=bottleneck, bn_config=bn_config, name=f"block_{i}")
                       for i in range(num_blocks)]

    def __call__(self, inputs: Any, is_training: bool, test_local_stats: bool) -> Any:
        out = inputs
        for block in self.blocks:
            out = block(out, is_training, test_local_stats)
        return out


def _check_length(length: int, value: Sequence[Any], name: str) -> None:
    if len(value) != length:
        raise ValueError(f"`{name}` must be of length {length} not {len(value)}")


class ResNet(Module):
    """ResNet on NHWC images: `(N, H, W, C) -> (N, num_classes)` logits.

    Raises:
        ValueError: `blocks_per_group`, `channels_per_group` or `strides` not of length 4.
    """

    CONFIGS = {
        18: dict(blocks_per_group=(2, 2, 2, 2), bottleneck=False, channels_per_group=(64, 128, 256, 512),
                 use_projection=(False, True, True, True)),
        34: dict(blocks_per_group=(3, 4, 6, 3), bottleneck=False, channels_per_group=(64, 128, 256, 512),
                 use_projection=(False, True, True, True)),
        50: dict(blocks_per_group=(3, 4, 6, 3), bottleneck=True, channels_per_group=(256, 512, 1024, 2048),
                 use_projection=(True, True, True, True)),
        101: dict(blocks_per_group=(3, 4, 23, 3), bottleneck=True, channels_per_group=(256, 512, 1024, 2048),
                  use_projection=(True, True, True, True)),
        152: dict(blocks_per_group=(3, 8, 36, 3), bottleneck=True, channels_per_group=(256, 512, 1024, 2048),
                  use_projection=(True, True, True, True)),
        200: dict(blocks_per_group=(3, 24, 36, 3), bottleneck=True, channels_per_group=(256, 512, 1024, 2048),
                  use_projection=(True, True, True, True)),
    }
    BlockGroup = BlockGroup
    BlockV1 = BlockV1
    BlockV2 = BlockV2

    def __init__(self, blocks_per_group: Sequence[int], num_classes: int, bn_config: Mapping[str, Any] | None = None,
                 resnet_v2: bool = False, bottleneck: bool = True,
                 channels_per_group: Sequence[int] = (256, 512, 1024, 2048),
                 use_projection: Sequence[bool] = (True, True, True, True),
                 logits_config: Mapping[str, Any] | None = None, name: str | None = None,
                 initial_conv_config: Mapping[str, Any] | None = None, strides: Sequence[int] = (1, 2, 2, 2)):
        super().__init__(name=name)
        self.resnet_v2 = resnet_v2
        bn_config = dict(bn_config or {})
        for k, v in (("decay_rate", 0.9), ("eps", 1e-5), ("create_scale", True), ("create_offset", True)):
            bn_config.setdefault(k, v)
        logits_config = dict(logits_config or {})
        logits_config.setdefault("w_init", jnp.zeros)
        logits_config.setdefault("name", "logits")
        _check_length(4, blocks_per_group, "blocks_per_group")
        _check_length(4, channels_per_group, "channels_per_group")
        _check_length(4, strides, "strides")
        conv_config = dict(initial_conv_config or {})
        for k, v in (("output_channels", 64), ("kernel_shape", 7), ("stride", 2), ("with_bias", False),
                     ("padding", "SAME"), ("name", "initial_conv")):
            conv_config.setdefault(k, v)
        self.initial_conv = Conv2D(**conv_config)
        if not resnet_v2:
            self.initial_batchnorm = BatchNorm(name="initial_batchnorm", **bn_config)
        self.block_groups = [BlockGroup(channels=channels_per_group[i], num_blocks=blocks_per_group[i], stride=s,
                                        bn_config=bn_config, resnet_v2=resnet_v2, bottleneck=bottleneck,
                                        use_projection=use_projection[i], name=f"block_group_{i}")
                             for i, s in enumerate(strides)]
        if resnet_v2:
            self.final_batchnorm = BatchNorm(name="final_batchnorm", **bn_config)
        self.logits = Linear(num_classes, **logits_config)

    def __call__(self, inputs: Any, is_training: bool, test_local_stats: bool = False) -> Any:
        out = self.initial_conv(inputs)
        if not self.resnet_v2:
            out = nn.relu(self.initial_batchnorm(out, is_training, test_local_stats))
        out = max_pool(out, window_shape=(1, 3, 3, 1), strides=(1, 2, 2, 1), padding="SAME")
        for group in self.block_groups:
            out = group(out, is_training, test_local_stats)
        if self.resnet_v2:
            out = nn.relu(self.final_batchnorm(out, is_training, test_local_stats))
        out = jnp.mean(out, axis=(1, 2))
        return self.logits(out)


def _preset(depth: int):
    class Preset(ResNet):
        def __init__(self, num_classes: int, bn_config: Mapping[str, Any] | None = None, resnet_v2: bool = False,
                     logits_config: Mapping[str, Any] | None = None, name: str | None = None,
                     initial_conv_config: Mapping[str, Any] | None = None, strides: Sequence[int] = (1, 2, 2, 2)):
            super().__init__(num_classes=num_classes, bn_config=bn_config, initial_conv_config=initial_conv_config,
                             resnet_v2=resnet_v2, strides=strides, logits_config=logits_config, name=name,
                             **ResNet.CONFIGS[depth])

    Preset.__name__ = Preset.__qualname__ = f"ResNet{depth}"
    Preset.__doc__ = f"ResNet-{depth} (`ResNet.CONFIGS[{depth}]`); default module name `res_net{depth}`."
    return Preset


ResNet18 = _preset(18)
ResNet34 = _preset(34)
ResNet50 = _preset(50)
ResNet101 = _preset(101)
ResNet152 = _preset(152)
ResNet200 = _preset(200)

"""Common networks (`hk.nets`): `MLP`, the `ResNet` family, `MobileNetV1`, `VectorQuantizer(EMA)`."""

from ._mlp import MLP as MLP
from ._mobilenet import MobileNetV1 as MobileNetV1
from ._resnet import ResNet as ResNet
from ._resnet import ResNet18 as ResNet18
from ._resnet import ResNet34 as ResNet34
from ._resnet import ResNet50 as ResNet50
from ._resnet import ResNet101 as ResNet101
from ._resnet import ResNet152 as ResNet152
from ._resnet import ResNet200 as ResNet200
from ._vqvae import VectorQuantizer as VectorQuantizer
from ._vqvae import VectorQuantizerEMA as VectorQuantizerEMA

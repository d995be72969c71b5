"""Initializers (mirrors ``flax.nnx.initializers``): those of ``fluxion.nn.initializers`` plus
``zeros_init()``/``ones_init()``, as re-exported by ``fluxion.flax.linen.initializers``."""

from fluxion.flax.linen.initializers import Initializer as Initializer
from fluxion.flax.linen.initializers import constant as constant
from fluxion.flax.linen.initializers import delta_orthogonal as delta_orthogonal
from fluxion.flax.linen.initializers import glorot_normal as glorot_normal
from fluxion.flax.linen.initializers import glorot_uniform as glorot_uniform
from fluxion.flax.linen.initializers import he_normal as he_normal
from fluxion.flax.linen.initializers import he_uniform as he_uniform
from fluxion.flax.linen.initializers import kaiming_normal as kaiming_normal
from fluxion.flax.linen.initializers import kaiming_uniform as kaiming_uniform
from fluxion.flax.linen.initializers import lecun_normal as lecun_normal
from fluxion.flax.linen.initializers import lecun_uniform as lecun_uniform
from fluxion.flax.linen.initializers import normal as normal
from fluxion.flax.linen.initializers import ones as ones
from fluxion.flax.linen.initializers import ones_init as ones_init
from fluxion.flax.linen.initializers import orthogonal as orthogonal
from fluxion.flax.linen.initializers import truncated_normal as truncated_normal
from fluxion.flax.linen.initializers import uniform as uniform
from fluxion.flax.linen.initializers import variance_scaling as variance_scaling
from fluxion.flax.linen.initializers import xavier_normal as xavier_normal
from fluxion.flax.linen.initializers import xavier_uniform as xavier_uniform
from fluxion.flax.linen.initializers import zeros as zeros
from fluxion.flax.linen.initializers import zeros_init as zeros_init

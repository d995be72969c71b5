"""Activation functions (re-exported from ``fluxion.nn``) and the ``PReLU`` layer.

Mirrors ``flax.linen.activation``: the functions are exactly those of
``fluxion.nn`` (``jax.nn``), plus ``tanh`` from ``fluxion.numpy`` and
``normalize`` as Flax's alias of ``standardize``.
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion.nn import celu as celu
from fluxion.nn import elu as elu
from fluxion.nn import gelu as gelu
from fluxion.nn import glu as glu
from fluxion.nn import hard_sigmoid as hard_sigmoid
from fluxion.nn import hard_silu as hard_silu
from fluxion.nn import hard_swish as hard_swish
from fluxion.nn import hard_tanh as hard_tanh
from fluxion.nn import leaky_relu as leaky_relu
from fluxion.nn import log_sigmoid as log_sigmoid
from fluxion.nn import log_softmax as log_softmax
from fluxion.nn import logsumexp as logsumexp
from fluxion.nn import one_hot as one_hot
from fluxion.nn import relu as relu
from fluxion.nn import relu6 as relu6
from fluxion.nn import selu as selu
from fluxion.nn import sigmoid as sigmoid
from fluxion.nn import silu as silu
from fluxion.nn import soft_sign as soft_sign
from fluxion.nn import softmax as softmax
from fluxion.nn import softplus as softplus
from fluxion.nn import standardize as standardize
from fluxion.nn import swish as swish
from fluxion.numpy import tanh as tanh

from .module import Module, compact

normalize = standardize

Array = Any
Dtype = Any


class PReLU(Module):
    """Leaky ReLU with a learned negative slope: ``where(x >= 0, x, slope * x)``.

    The slope is the scalar parameter ``negative_slope``.

    Attributes:
        param_dtype: dtype of the slope parameter.
        negative_slope_init: its initial value (default 0.01).
    """

    param_dtype: Dtype = jnp.float32
    negative_slope_init: float = 0.01

    @compact
    def __call__(self, inputs: Array) -> Array:
        """Applies the activation elementwise; same shape and dtype as ``inputs``."""
        slope = self.param('negative_slope',
                           lambda _key: jnp.asarray(self.negative_slope_init, self.param_dtype))
        return jnp.where(inputs >= 0, inputs,
                         jnp.asarray(slope, inputs.dtype) * inputs)

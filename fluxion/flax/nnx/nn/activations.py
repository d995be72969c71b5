"""Activation functions (those of ``fluxion.nn``, as ``flax.nnx`` re-exports ``jax.nn``) and the PReLU layer."""

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
from fluxion.nn import identity as identity
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

from ..module import Module
from ..variables import Param
from .dtypes import promote_dtype


class PReLU(Module):
    """Parametric ReLU: ``x`` where ``x >= 0``, else ``negative_slope * x`` with a learned scalar slope.

    Parameter ``negative_slope`` (shape ``()``, ``param_dtype``), initialised to
    ``negative_slope_init``.  He et al. 2015, "Delving Deep into Rectifiers".
    """

    def __init__(self, negative_slope_init: float = 0.01, *, dtype: Any = None, param_dtype: Any = jnp.float32,
                 promote_dtype: Any = promote_dtype, negative_slope_metadata: Any = None):
        self.negative_slope = Param(jnp.asarray(negative_slope_init, dtype=param_dtype),
                                    **dict(negative_slope_metadata or {}))
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.promote_dtype = promote_dtype

    def __call__(self, inputs: Any) -> Any:
        slope = self.negative_slope[...]
        if self.dtype is not None:
            inputs, slope = self.promote_dtype((inputs, slope), dtype=self.dtype)
        else:
            slope = jnp.asarray(slope, inputs.dtype)
        return jnp.where(inputs >= 0, inputs, slope * inputs)

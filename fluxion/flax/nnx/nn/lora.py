"""Low-rank adaptation layers: LoRA, LoRALinear and the LoRAParam variable type (mirrors ``flax.nnx.nn.lora``).

Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models": a
frozen weight ``W`` is adapted by ``x @ A @ B`` with ``A`` ``(in, rank)``
(He-uniform) and ``B`` ``(rank, out)`` (zeros, so training starts from ``W``).
Keeping A and B in their own Variable type lets an optimizer train only them
(``nnx.Optimizer(model, tx, wrt=nnx.LoRAParam)``).
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp

from ..module import Module
from ..rngs import Rngs
from ..variables import Param
from . import initializers
from .dtypes import promote_dtype as default_promote_dtype
from .linear import Linear

default_a_initializer = initializers.he_uniform()
default_b_initializer = initializers.zeros


class LoRAParam(Param):
    """A LoRA factor (a Param subtype, so ``nnx.Param`` filters include it)."""


class LoRA(Module):
    """``x @ lora_a @ lora_b`` (plus ``base_module(x)`` if given): ``(..., in_features) -> (..., out_features)``.

    Parameters ``lora_a`` ``(in_features, lora_rank)`` then ``lora_b``
    ``(lora_rank, out_features)``, of type ``lora_param_type``.

    Raises:
      ValueError: ``base_module`` is not callable.
    """

    def __init__(self, in_features: int, lora_rank: int, out_features: int, *, base_module: Any = None,
                 dtype: Any = None, param_dtype: Any = jnp.float32, a_initializer: Any = default_a_initializer,
                 b_initializer: Any = default_b_initializer, lora_param_type: type = LoRAParam,
                 promote_dtype: Any = default_promote_dtype, rngs: Rngs, a_metadata: Any = None,
                 b_metadata: Any = None):
        self.in_features = in_features
        self.out_features = out_features
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.lora_param_type = lora_param_type
        self.base_module = base_module
        self.promote_dtype = promote_dtype
        self.lora_a = lora_param_type(a_initializer(rngs.params(), (in_features, lora_rank), param_dtype),
                                      **dict(a_metadata or {}))
        self.lora_b = lora_param_type(b_initializer(rngs.params(), (lora_rank, out_features), param_dtype),
                                      **dict(b_metadata or {}))

    def __call__(self, x: Any, **kwargs: Any) -> Any:
        x, a, b = self.promote_dtype((x, self.lora_a[...], self.lora_b[...]), dtype=self.dtype)
        out = x @ a @ b
        if self.base_module is not None:
            if not callable(self.base_module):
                raise ValueError('`self.base_module` must be callable.')
            out = out + self.base_module(x, **kwargs)
        return out


class LoRALinear(Linear):
    """A :class:`Linear` (same ``kernel``/``bias`` state) whose output adds a :class:`LoRA` branch ``lora``."""

    def __init__(self, in_features: int, out_features: int, *, lora_rank: int, lora_dtype: Any = None,
                 lora_param_dtype: Any = jnp.float32, a_initializer: Any = default_a_initializer,
                 b_initializer: Any = default_b_initializer, lora_param_type: type = LoRAParam,
                 lora_promote_dtype: Any = default_promote_dtype, rngs: Rngs, a_metadata: Any = None,
                 b_metadata: Any = None, **kwargs: Any):
        super().__init__(in_features, out_features, rngs=rngs, **kwargs)
        self.lora = LoRA(in_features, lora_rank, out_features, dtype=lora_dtype, param_dtype=lora_param_dtype,
                         a_initializer=a_initializer, b_initializer=b_initializer, lora_param_type=lora_param_type,
                         promote_dtype=lora_promote_dtype, rngs=rngs, a_metadata=a_metadata, b_metadata=b_metadata)

    def __call__(self, x: Any, out_sharding: Any = None) -> Any:
        return super().__call__(x) + self.lora(x)

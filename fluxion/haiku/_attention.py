"""`MultiHeadAttention` (Vaswani et al. 2017), with Haiku's parameter layout.

Projections are `Linear` modules named `query`, `key`, `value` (each `num_heads * head_size` wide) and the output
projection `linear` (`model_size` wide), all created inside `__call__`, so the tree is
`{'multi_head_attention/query': {'w', 'b'}, ..., 'multi_head_attention/linear': {...}}`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import fluxion.numpy as jnp
from fluxion import nn

from . import initializers
from ._basic import Linear
from ._module import Module, transparent

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(Module):
    """Scaled dot-product attention with `num_heads` heads.

    Raises:
        ValueError: no `w_init` (nor deprecated `w_init_scale`), or both given; a mask whose rank differs from
            the attention logits `(..., heads, T, T')`.
    """

    def __init__(self, num_heads: int, key_size: int, w_init_scale: float | None = None, *,
                 w_init: Callable | None = None, with_bias: bool = True, b_init: Callable | None = None,
                 value_size: int | None = None, model_size: int | None = None, name: str | None = None):
        super().__init__(name=name)
        self.num_heads = num_heads
        self.key_size = key_size
        self.value_size = value_size or key_size
        self.model_size = model_size or key_size * num_heads
        if w_init and w_init_scale:
            raise ValueError("Please provide only `w_init`, not `w_init_scale`.")
        if w_init is None and w_init_scale is None:
            raise ValueError("Please provide a weight initializer: `w_init`. `w_init` will become mandatory once "
                             "`w_init_scale` is fully deprecated.")
        self.w_init = w_init if w_init is not None else initializers.VarianceScaling(w_init_scale)
        self.with_bias = with_bias
        self.b_init = b_init

    def __call__(self, query: Any, key: Any, value: Any, mask: Any = None) -> Any:
        """query `(..., T, D)`, key/value `(..., T', D')`, mask broadcastable to `(..., H, T, T')` ->
        `(..., T, model_size)`."""
        *leading, seq_len, _ = query.shape
        q = self._linear_projection(query, self.key_size, "query")
        k = self._linear_projection(key, self.key_size, "key")
        v = self._linear_projection(value, self.value_size, "value")
        logits = jnp.einsum("...thd,...Thd->...htT", q, k)
        logits = logits / np.sqrt(self.key_size).astype(key.dtype)
        if mask is not None:
            if mask.ndim != logits.ndim:
                raise ValueError(f"Mask dimensionality {mask.ndim} must match logits dimensionality "
                                 f"{logits.ndim}.")
            logits = jnp.where(mask, logits, -1e30)
        weights = nn.softmax(logits)
        attn = jnp.einsum("...htT,...Thd->...thd", weights, v)
        attn = jnp.reshape(attn, (*leading, seq_len, -1))
        return Linear(self.model_size, w_init=self.w_init, with_bias=self.with_bias, b_init=self.b_init)(attn)

    @transparent
    def _linear_projection(self, x: Any, head_size: int, name: str) -> Any:
        y = Linear(self.num_heads * head_size, w_init=self.w_init, with_bias=self.with_bias, b_init=self.b_init,
                   name=name)(x)
        *leading, _ = x.shape
        return y.reshape((*leading, self.num_heads, head_size))

"""Attention: dot-product attention functions and MultiHeadAttention (mirrors ``flax.nnx.nn.attention``).

Vaswani et al. 2017, "Attention Is All You Need"; grouped-query attention
(fewer key/value heads than query heads) after Ainslie et al. 2023.
The mask helpers are Flax's (``fluxion.flax.linen``'s) ``make_attention_mask``,
``make_causal_mask`` and ``combine_masks``.

Difference from Flax: attention is always computed explicitly (weights, then
``einsum`` with the values); Flax switches to ``jax.nn.dot_product_attention``
when there is no dropout, which agrees to rounding.
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import lax, random
from fluxion.flax.linen import combine_masks as combine_masks
from fluxion.flax.linen import make_attention_mask as make_attention_mask
from fluxion.flax.linen import make_causal_mask as make_causal_mask
from fluxion.nn import softmax

from ..module import Module
from ..pytreelib import data
from ..rngs import Rngs, RngStream
from ..variables import Cache, Intermediate
from . import initializers
from .dtypes import promote_dtype as default_promote_dtype
from .linear import LinearGeneral, default_kernel_init
from .normalization import LayerNorm


def _check_shapes(*arrays: Any, names: str) -> None:
    ranks = {a.ndim for a in arrays}
    if len(ranks) != 1:
        raise ValueError(f'{names} must have the same rank, got shapes {[a.shape for a in arrays]}')
    if len({a.shape[:-3] for a in arrays}) != 1:
        raise ValueError(f'{names} batch dims must match, but got shapes {[a.shape for a in arrays]}.')


def dot_product_attention_weights(query: Any, key: Any, bias: Any = None, mask: Any = None,
                                  broadcast_dropout: bool = True, dropout_rng: Any = None, dropout_rate: float = 0.0,
                                  deterministic: bool = False, dtype: Any = None, precision: Any = None,
                                  module: Any = None, promote_dtype: Any = default_promote_dtype,
                                  is_causal: bool = False) -> Any:
    """Softmax of ``query . key / sqrt(depth)`` over the key axis: ``[batch..., heads, q_len, kv_len]``.

    ``query`` ``[batch..., q_len, heads, depth]``, ``key`` ``[batch..., kv_len, kv_heads, depth]``
    (``heads`` a multiple of ``kv_heads``).  ``bias`` is added to the logits,
    ``mask`` (False = masked) and ``is_causal`` set logits to the dtype's minimum;
    with a ``module`` the weights are sown as ``Intermediate('attention_weights')``.

    Raises:
      ValueError: mismatched ranks, batch dims or depths; heads not a multiple of kv_heads.
    """
    query, key = promote_dtype((query, key), dtype=dtype)
    dtype = query.dtype
    _check_shapes(query, key, names='q, k')
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f'q, k depths must match, but got {query.shape[-1]} and {key.shape[-1]}.')
    q_heads, k_heads = query.shape[-2], key.shape[-2]
    depth = query.shape[-1]
    query = query / jnp.sqrt(depth).astype(dtype)
    if q_heads != k_heads:
        if q_heads % k_heads != 0:
            raise ValueError(f'Query heads ({q_heads}) must be multiple of Key heads ({k_heads}) for Grouped '
                             f'Query Attention.')
        grouped = jnp.reshape(query, query.shape[:-2] + (k_heads, q_heads // k_heads, depth))
        w = jnp.einsum('...qhgd,...khd->...hgqk', grouped, key, precision=precision)
        w = jnp.reshape(w, w.shape[:-4] + (q_heads,) + w.shape[-2:])
    else:
        w = jnp.einsum('...qhd,...khd->...hqk', query, key, precision=precision)
    if bias is not None:
        w = w + bias
    if mask is not None or is_causal:
        masks = [mask] if mask is not None else []
        if is_causal:
            t, s = w.shape[-2:]
            masks.append(jnp.broadcast_to(jnp.tril(jnp.ones((t, s), dtype=dtype)),
                                          mask.shape if mask is not None else w.shape))
        w = jnp.where(combine_masks(*masks, dtype=dtype), w, jnp.finfo(dtype).min)
    w = softmax(w).astype(dtype)
    if module is not None:
        module.sow(Intermediate, 'attention_weights', w)
    if not deterministic and dropout_rate > 0.0:
        keep_prob = 1.0 - dropout_rate
        if broadcast_dropout:
            shape = tuple(1 for _ in w.shape[:-2]) + w.shape[-2:]
            keep = jnp.broadcast_to(random.bernoulli(dropout_rng, keep_prob, shape), w.shape)
        else:
            keep = random.bernoulli(dropout_rng, keep_prob, w.shape)
        w = w * (keep.astype(dtype) / jnp.asarray(keep_prob, dtype=dtype))
    return w


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None,
                          broadcast_dropout: bool = True, dropout_rng: Any = None, dropout_rate: float = 0.0,
                          deterministic: bool = False, dtype: Any = None, precision: Any = None, module: Any = None,
                          promote_dtype: Any = default_promote_dtype, is_causal: bool = False) -> Any:
    """Attention output ``[batch..., q_len, heads, v_depth]`` = weights (see above) applied to ``value``.

    Raises:
      ValueError: key and value lengths differ, or the shape errors of
        :func:`dot_product_attention_weights`.
    """
    query, key, value = promote_dtype((query, key, value), dtype=dtype)
    _check_shapes(query, key, value, names='q, k, v')
    if key.shape[-3] != value.shape[-3]:
        raise ValueError(f'k, v lengths must match, got {key.shape[-3]} and {value.shape[-3]}.')
    w = dot_product_attention_weights(query, key, bias, mask, broadcast_dropout, dropout_rng, dropout_rate,
                                      deterministic, query.dtype, precision, module, promote_dtype, is_causal)
    v_heads = value.shape[-2]
    if w.shape[-3] != v_heads:
        q_heads = w.shape[-3]
        grouped = jnp.reshape(w, w.shape[:-3] + (v_heads, q_heads // v_heads) + w.shape[-2:])
        out = jnp.einsum('...hgqk,...khd->...qhgd', grouped, value, precision=precision)
        return jnp.reshape(out, out.shape[:-3] + (q_heads, out.shape[-1]))
    return jnp.einsum('...hqk,...khd->...qhd', w, value, precision=precision)


class MultiHeadAttention(Module):
    """Multi-head attention with learned ``query``/``key``/``value``/``out`` LinearGeneral projections.

    ``query`` maps ``in_features`` to ``(num_heads, head_dim)``; ``key``/``value``
    map ``in_kv_features`` to ``(num_kv_heads, head_dim)``; ``out`` maps
    ``(num_heads, head_dim)`` to ``out_features``; ``head_dim = qkv_features // num_heads``.
    ``normalize_qk`` adds LayerNorms ``query_ln``/``key_ln``.  ``decode=True``
    (after :meth:`init_cache`) attends one new token at a time against the
    ``cached_key``/``cached_value`` Caches.  Dropout on the weights draws from its
    own ``rngs`` (forked from ``rngs.dropout``) when ``dropout_rate > 0``.

    Raises:
      ValueError: ``qkv_features`` not divisible by ``num_heads``, ``num_heads``
        not divisible by ``num_kv_heads``, input features mismatch, or decoding
        without an initialised cache.
    """

    def __init__(self, num_heads: int, in_features: int, qkv_features: Any = None, out_features: Any = None,
                 num_kv_heads: Any = None, in_kv_features: Any = None, *, dtype: Any = None,
                 param_dtype: Any = jnp.float32, broadcast_dropout: bool = True, dropout_rate: float = 0.0,
                 deterministic: Any = None, precision: Any = None, kernel_init: Any = default_kernel_init,
                 out_kernel_init: Any = None, bias_init: Any = initializers.zeros_init(),
                 out_bias_init: Any = None, use_bias: bool = True, attention_fn: Any = dot_product_attention,
                 decode: Any = None, normalize_qk: bool = False, qkv_promote_dtype: Any = default_promote_dtype,
                 out_promote_dtype: Any = default_promote_dtype, ln_promote_dtype: Any = default_promote_dtype,
                 qkv_dot_general: Any = None, out_dot_general: Any = None, qkv_dot_general_cls: Any = None,
                 out_dot_general_cls: Any = None, rngs: Rngs, keep_rngs: bool = True,
                 kernel_metadata: Any = None, out_kernel_metadata: Any = None, bias_metadata: Any = None,
                 out_bias_metadata: Any = None, query_ln_scale_metadata: Any = None,
                 key_ln_scale_metadata: Any = None):
        self.num_heads = num_heads
        self.in_features = in_features
        self.qkv_features = qkv_features if qkv_features is not None else in_features
        self.out_features = out_features if out_features is not None else in_features
        self.in_kv_features = in_kv_features if in_kv_features is not None else in_features
        self.num_kv_heads = num_kv_heads if num_kv_heads is not None else num_heads
        if num_heads % self.num_kv_heads != 0:
            raise ValueError(f'num_heads ({num_heads}) must be divisible by num_kv_heads ({self.num_kv_heads}).')
        if self.qkv_features % num_heads != 0:
            raise ValueError(f"Memory dimension ({self.qkv_features}) must be divisible by 'num_heads' heads "
                             f'({num_heads}).')
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.broadcast_dropout = broadcast_dropout
        self.dropout_rate = dropout_rate
        self.deterministic = deterministic
        self.precision = precision
        self.use_bias = use_bias
        self.attention_fn = attention_fn
        self.decode = decode
        self.normalize_qk = normalize_qk
        self.qkv_promote_dtype = qkv_promote_dtype
        self.out_promote_dtype = out_promote_dtype
        self.ln_promote_dtype = ln_promote_dtype
        self.qkv_dot_general = qkv_dot_general
        self.out_dot_general = out_dot_general
        self.qkv_dot_general_cls = qkv_dot_general_cls
        self.out_dot_general_cls = out_dot_general_cls
        self.head_dim = self.qkv_features // num_heads

        def projection(in_f: int, heads: int) -> LinearGeneral:
            return LinearGeneral(in_f, (heads, self.head_dim), dtype=dtype, param_dtype=param_dtype,
                                 kernel_init=kernel_init, bias_init=bias_init, use_bias=use_bias,
                                 precision=precision, promote_dtype=qkv_promote_dtype,
                                 dot_general=qkv_dot_general or lax.dot_general, dot_general_cls=qkv_dot_general_cls,
                                 kernel_metadata=kernel_metadata, bias_metadata=bias_metadata, rngs=rngs)

        self.query = projection(in_features, num_heads)
        self.key = projection(self.in_kv_features, self.num_kv_heads)
        self.value = projection(self.in_kv_features, self.num_kv_heads)
        if normalize_qk:
            self.query_ln = LayerNorm(self.head_dim, use_bias=False, dtype=dtype, param_dtype=param_dtype,
                                      promote_dtype=ln_promote_dtype, rngs=rngs,
                                      scale_metadata=query_ln_scale_metadata)
            self.key_ln = LayerNorm(self.head_dim, use_bias=False, dtype=dtype, param_dtype=param_dtype,
                                    promote_dtype=ln_promote_dtype, rngs=rngs, scale_metadata=key_ln_scale_metadata)
        else:
            self.query_ln = None
            self.key_ln = None
        self.out = LinearGeneral((num_heads, self.head_dim), self.out_features, axis=(-2, -1),
                                 kernel_init=out_kernel_init or kernel_init, bias_init=out_bias_init or bias_init,
                                 use_bias=use_bias, dtype=dtype, param_dtype=param_dtype, precision=precision,
                                 promote_dtype=out_promote_dtype, dot_general=out_dot_general or lax.dot_general,
                                 dot_general_cls=out_dot_general_cls, rngs=rngs,
                                 kernel_metadata=out_kernel_metadata or kernel_metadata,
                                 bias_metadata=out_bias_metadata or bias_metadata)
        self.rngs = rngs.dropout.fork() if keep_rngs and dropout_rate > 0 else None
        self.cached_key = data(None)
        self.cached_value = data(None)
        self.cache_index = data(None)

    def __call__(self, inputs_q: Any, inputs_k: Any = None, inputs_v: Any = None, *, mask: Any = None,
                 deterministic: Any = None, rngs: Any = None, sow_weights: bool = False, decode: Any = None,
                 is_causal: bool = False, out_sharding: Any = None, qkv_sharding: Any = None) -> Any:
        """Attends ``inputs_q`` ``[batch..., q_len, in_features]`` over ``inputs_k``/``inputs_v`` (default: itself)."""
        rngs = self.rngs if rngs is None else rngs
        if isinstance(rngs, Rngs):
            rngs = rngs.dropout
        if inputs_k is None:
            if inputs_v is not None:
                raise ValueError('`inputs_k` cannot be None if `inputs_v` is not None. To have both `inputs_k` and '
                                 '`inputs_v` be the same value, pass in the value to `inputs_k` and leave '
                                 '`inputs_v` as None.')
            inputs_k = inputs_q
        if inputs_v is None:
            inputs_v = inputs_k
        if inputs_q.shape[-1] != self.in_features:
            raise ValueError(f'Incompatible input dimension, got {inputs_q.shape[-1]} but module expects '
                             f'{self.in_features}.')
        query, key, value = self.query(inputs_q), self.key(inputs_k), self.value(inputs_v)
        if self.normalize_qk:
            query, key = self.query_ln(query), self.key_ln(key)
        decode = self.decode if decode is None else decode
        if decode:
            if self.cached_key is None or self.cached_value is None or self.cache_index is None:
                raise ValueError('Autoregressive cache not initialized, call ``init_cache`` first.')
            *batch_dims, max_length, num_kv_heads, depth = self.cached_key.shape
            expected = tuple(batch_dims) + (1, num_kv_heads, depth)
            if expected != key.shape:
                raise ValueError(f'Autoregressive cache shape error, expected key shape {expected} instead got '
                                 f'{key.shape}.')
            cur = self.cache_index[...]
            zero = jnp.array(0, dtype=cur.dtype)
            indices = (zero,) * len(batch_dims) + (cur, zero, zero)
            key = lax.dynamic_update_slice(self.cached_key[...], key, indices)
            value = lax.dynamic_update_slice(self.cached_value[...], value, indices)
            self.cached_key[...] = key
            self.cached_value[...] = value
            self.cache_index[...] = cur + 1
            mask = combine_masks(mask, jnp.broadcast_to(jnp.arange(max_length) <= cur,
                                                        tuple(batch_dims) + (1, 1, max_length)))
        dropout_rng = None
        if self.dropout_rate > 0.0:
            deterministic = self.deterministic if deterministic is None else deterministic
            if deterministic is None:
                raise ValueError('No `deterministic` argument was provided to MultiHeadAttention as either a '
                                 '__call__ argument or class attribute.')
            if not deterministic:
                if rngs is None:
                    raise ValueError("'rngs' must be provided to __call__ method if MultiHeadAttention instance is "
                                     'defined with keep_rngs=False.')
                dropout_rng = rngs() if isinstance(rngs, RngStream) else rngs
        else:
            deterministic = True
        x = self.attention_fn(query, key, value, mask=mask, dropout_rng=dropout_rng, dropout_rate=self.dropout_rate,
                              broadcast_dropout=self.broadcast_dropout, deterministic=deterministic,
                              dtype=self.dtype, precision=self.precision, module=self if sow_weights else None,
                              is_causal=is_causal)
        return self.out(x)

    def init_cache(self, input_shape: tuple, dtype: Any = jnp.float32) -> None:
        """Creates zero ``cached_key``/``cached_value`` (``input_shape[:-1] + (num_kv_heads, head_dim)``)
        and ``cache_index`` Caches for decoding; ``input_shape`` is ``(batch..., max_length, features)``."""
        shape = (*input_shape[:-1], self.num_kv_heads, self.head_dim)
        self.cached_key = Cache(jnp.zeros(shape, dtype))
        self.cached_value = Cache(jnp.zeros(shape, dtype))
        self.cache_index = Cache(jnp.array(0, dtype=jnp.int32))

"""Dot-product attention and multi-head attention (mirrors ``flax.linen.attention``).

Shapes use ``...`` for any batch dimensions, ``q``/``k`` for query and
key/value lengths, ``h`` for heads and ``d`` for the per-head depth:

* ``query [..., q, h, d]``, ``key [..., k, h, d]``, ``value [..., k, h, dv]``
* attention weights ``[..., h, q, k]``, output ``[..., q, h, dv]``
* masks are boolean-like ``[..., h or 1, q, k]``: 0/False masks a weight out.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Optional

import fluxion.numpy as jnp
from fluxion import lax, nn, random

from .dtypes import promote_dtype
from .linear import DenseGeneral, default_kernel_init
from .module import Module, compact, merge_param
from .normalization import LayerNorm

Array = Any
Dtype = Any
PRNGKey = Any
Initializer = Callable[..., Any]


def _check_attention_shapes(query: Array, key: Array, value: Optional[Array] = None) -> None:
    arrays = [('query', query), ('key', key)] + ([('value', value)] if value is not None else [])
    shapes = ', '.join(f'{n} {tuple(a.shape)}' for n, a in arrays)
    if len({a.ndim for _, a in arrays}) != 1 or query.ndim < 3:
        raise ValueError(f'Attention inputs must have the same rank (>= 3: [..., length, heads, '
                         f'depth]); got {shapes}.')
    if len({tuple(a.shape[:-3]) for _, a in arrays}) != 1:
        raise ValueError(f'Attention inputs must have the same batch dimensions; got {shapes}.')
    if len({a.shape[-2] for _, a in arrays}) != 1:
        raise ValueError(f'Attention inputs must have the same number of heads; got {shapes}.')
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f'query and key must have the same depth; got {shapes}.')
    if value is not None and key.shape[-3] != value.shape[-3]:
        raise ValueError(f'key and value must have the same length; got {shapes}.')


def _default_einsum(precision: Any, dot_general: Optional[Callable[..., Array]]
                    ) -> Callable[..., Array]:
    return functools.partial(jnp.einsum, precision=precision,
                             _dot_general=dot_general or lax.dot_general)


def dot_product_attention_weights(query: Array, key: Array, bias: Optional[Array] = None,
                                  mask: Optional[Array] = None, broadcast_dropout: bool = True,
                                  dropout_rng: Optional[PRNGKey] = None,
                                  dropout_rate: float = 0.0, deterministic: bool = False,
                                  dtype: Optional[Dtype] = None, precision: Any = None,
                                  module: Optional[Module] = None,
                                  force_fp32_for_softmax: bool = False,
                                  einsum_dot_general: Optional[Callable[..., Array]] = None,
                                  einsum: Optional[Callable[..., Array]] = None) -> Array:
    """Returns ``softmax(query·key / sqrt(d) + bias, masked)`` of shape ``[..., h, q, k]``.

    Args:
        query: ``[..., q, h, d]``.
        key: ``[..., k, h, d]``.
        bias: added to the logits, broadcastable to ``[..., h, q, k]``.
        mask: broadcastable to ``[..., h, q, k]``; where False the logit is
            replaced by the most negative finite value of ``dtype``.
        broadcast_dropout: one dropout mask shared over batch dims and heads.
        dropout_rng: key for dropout (needed when it is active).
        dropout_rate: probability of dropping an attention weight.
        deterministic: disables dropout.
        dtype: computation dtype (default: promoted query/key dtype).
        precision: passed to ``jnp.einsum``.
        module: if given, the weights are sown as
            ``intermediates/attention_weights`` of that module.
        force_fp32_for_softmax: compute the softmax in float32.
        einsum_dot_general: the ``dot_general`` that ``jnp.einsum`` uses.
        einsum: replaces ``jnp.einsum`` for the query-key product (e.g. a
            quantized einsum); exclusive with ``precision`` and
            ``einsum_dot_general``.

    Raises:
        ValueError: on incompatible shapes, or ``einsum`` given together with
            ``precision`` or ``einsum_dot_general``.
    """
    if (precision or einsum_dot_general) and einsum:
        raise ValueError('precision/einsum_dot_general and einsum are mutually exclusive. Please'
                         ' specify only one of them.')
    einsum = einsum or _default_einsum(precision, einsum_dot_general)
    query, key = promote_dtype(query, key, dtype=dtype)
    dtype = query.dtype
    _check_attention_shapes(query, key)
    depth = query.shape[-1]
    query = query / jnp.sqrt(depth).astype(dtype)
    weights = einsum('...qhd,...khd->...hqk', query, key)
    if bias is not None:
        weights = weights + bias
    if mask is not None:
        weights = jnp.where(mask, weights, jnp.finfo(dtype).min)
    if force_fp32_for_softmax and dtype != jnp.float32:
        weights = nn.softmax(weights.astype(jnp.float32))
    else:
        weights = nn.softmax(weights).astype(dtype)
    if module is not None:
        module.sow('intermediates', 'attention_weights', weights)
    if not deterministic and dropout_rate > 0.0:
        keep_prob = 1.0 - dropout_rate
        if broadcast_dropout:
            # Shared over batch dims and heads: [1]*(batch + 1) + [q, k].
            shape = (1,) * (key.ndim - 2) + tuple(weights.shape[-2:])
        else:
            shape = tuple(weights.shape)
        keep = random.bernoulli(dropout_rng, keep_prob, shape)
        weights = weights * (keep.astype(dtype) / jnp.asarray(keep_prob, dtype=dtype))
    return weights


def dot_product_attention(query: Array, key: Array, value: Array,
                          bias: Optional[Array] = None, mask: Optional[Array] = None,
                          broadcast_dropout: bool = True,
                          dropout_rng: Optional[PRNGKey] = None, dropout_rate: float = 0.0,
                          deterministic: bool = False, dtype: Optional[Dtype] = None,
                          precision: Any = None, module: Optional[Module] = None,
                          force_fp32_for_softmax: bool = False,
                          einsum_dot_general: Optional[Callable[..., Array]] = None,
                          qk_attn_weights_einsum: Optional[Callable[..., Array]] = None,
                          attn_weights_value_einsum: Optional[Callable[..., Array]] = None
                          ) -> Array:
    """Attends ``query [..., q, h, d]`` over ``key``/``value`` → ``[..., q, h, dv]``.

    See :func:`dot_product_attention_weights` for the arguments;
    ``qk_attn_weights_einsum`` and ``attn_weights_value_einsum`` replace
    ``jnp.einsum`` for the two products (both or neither).

    Raises:
        ValueError: on incompatible shapes, only one of the two einsums given,
            or einsums given together with ``precision``/``einsum_dot_general``.
    """
    if bool(qk_attn_weights_einsum) != bool(attn_weights_value_einsum):
        raise ValueError('qk_attn_weights_einsum and attn_weights_value_einsum must be specified'
                         ' together.')
    if (precision or einsum_dot_general) and (qk_attn_weights_einsum or attn_weights_value_einsum):
        raise ValueError('precision/einsum_dot_general and qk_attn_weights_einsum/'
                         'attn_weights_value_einsum are mutually exclusive. Please specify only '
                         'one of them.')
    query, key, value = promote_dtype(query, key, value, dtype=dtype)
    _check_attention_shapes(query, key, value)
    weights = dot_product_attention_weights(
        query, key, bias, mask, broadcast_dropout, dropout_rng, dropout_rate,
        deterministic, query.dtype, precision, module, force_fp32_for_softmax,
        einsum_dot_general=einsum_dot_general, einsum=qk_attn_weights_einsum)
    einsum = attn_weights_value_einsum or _default_einsum(precision, einsum_dot_general)
    return einsum('...hqk,...khd->...qhd', weights, value)


class MultiHeadDotProductAttention(Module):
    """Multi-head attention with learned query/key/value/output projections.

    Submodules (``DenseGeneral``): ``query``, ``key``, ``value`` with kernels
    ``(features_in, num_heads, head_dim)``, and ``out`` with kernel
    ``(num_heads, head_dim, out_features)``; with ``normalize_qk``, LayerNorms
    ``query_ln`` and ``key_ln`` (no bias).

    Attributes:
        num_heads: number of heads; must divide ``qkv_features``.
        dtype, param_dtype: computation and parameter dtypes.
        qkv_features: total query/key/value size (default: input features).
        out_features: output size (default: input features).
        broadcast_dropout: share the dropout mask over batch dims and heads.
        dropout_rate: dropout on the attention weights.
        deterministic: may instead be passed at call time (needed only when
            ``dropout_rate > 0``).
        precision: for the projections and einsums.
        kernel_init, bias_init, use_bias: of the projections.
        out_kernel_init, out_bias_init: of ``out`` (default: as the others).
        attention_fn: function with the signature of :func:`dot_product_attention`.
        decode: use an autoregressive cache (collection ``'cache'``).
        normalize_qk: apply LayerNorm to queries and keys.
        force_fp32_for_softmax: softmax in float32.
        qkv_dot_general, out_dot_general: ``dot_general`` of the query/key/
            value projections and of ``out`` (see :class:`DenseGeneral`).
        qkv_dot_general_cls, out_dot_general_cls: their ``dot_general_cls``.
        qk_attn_weights_einsum_cls, attn_weights_value_einsum_cls: factories
            (called at each call) of the einsums passed to ``attention_fn`` as
            ``qk_attn_weights_einsum`` / ``attn_weights_value_einsum``.
    """

    num_heads: int
    dtype: Optional[Dtype] = None
    param_dtype: Dtype = jnp.float32
    qkv_features: Optional[int] = None
    out_features: Optional[int] = None
    broadcast_dropout: bool = True
    dropout_rate: float = 0.0
    deterministic: Optional[bool] = None
    precision: Any = None
    kernel_init: Initializer = default_kernel_init
    out_kernel_init: Optional[Initializer] = None
    bias_init: Initializer = nn.initializers.zeros
    out_bias_init: Optional[Initializer] = None
    use_bias: bool = True
    attention_fn: Callable[..., Array] = dot_product_attention
    decode: bool = False
    normalize_qk: bool = False
    force_fp32_for_softmax: bool = False
    qkv_dot_general: Optional[Callable[..., Array]] = None
    out_dot_general: Optional[Callable[..., Array]] = None
    qkv_dot_general_cls: Any = None
    out_dot_general_cls: Any = None
    qk_attn_weights_einsum_cls: Optional[Callable[..., Callable[..., Array]]] = None
    attn_weights_value_einsum_cls: Optional[Callable[..., Callable[..., Array]]] = None

    @compact
    def __call__(self, inputs_q: Array, inputs_k: Optional[Array] = None,
                 inputs_v: Optional[Array] = None, *, inputs_kv: Optional[Array] = None,
                 mask: Optional[Array] = None, deterministic: Optional[bool] = None,
                 dropout_rng: Optional[PRNGKey] = None, sow_weights: bool = False) -> Array:
        """Attends ``inputs_q [..., q, features]`` over keys/values → ``[..., q, out_features]``.

        Args:
            inputs_q: queries.
            inputs_k: keys ``[..., k, features]`` (default: ``inputs_q``).
            inputs_v: values (default: ``inputs_k``).
            inputs_kv: keys and values at once (older API; exclusive with the two above).
            mask: ``[..., h or 1, q, k]``; False entries are masked out.
            deterministic: disables dropout (see the field of the same name).
            dropout_rng: explicit dropout key instead of ``make_rng('dropout')``.
            sow_weights: sow the attention weights into ``'intermediates'``.

        Raises:
            ValueError: inconsistent input arguments, ``qkv_features`` not
                divisible by ``num_heads``, or a cache shape mismatch.
        """
        if inputs_kv is not None:
            if inputs_k is not None or inputs_v is not None:
                raise ValueError('Pass either inputs_kv or inputs_k/inputs_v, not both.')
            inputs_k = inputs_v = inputs_kv
        else:
            if inputs_k is None:
                if inputs_v is not None:
                    raise ValueError('inputs_k cannot be None when inputs_v is given; to use '
                                     'the same array for both, pass only inputs_k.')
                inputs_k = inputs_q
            if inputs_v is None:
                inputs_v = inputs_k
        features = self.out_features or inputs_q.shape[-1]
        qkv_features = self.qkv_features or inputs_q.shape[-1]
        if qkv_features % self.num_heads:
            raise ValueError(f'qkv_features ({qkv_features}) must be divisible by num_heads '
                             f'({self.num_heads}).')
        head_dim = qkv_features // self.num_heads

        def projection(name: str) -> DenseGeneral:
            return DenseGeneral(features=(self.num_heads, head_dim), axis=-1,
                                dtype=self.dtype, param_dtype=self.param_dtype,
                                kernel_init=self.kernel_init, bias_init=self.bias_init,
                                use_bias=self.use_bias, precision=self.precision,
                                dot_general=self.qkv_dot_general,
                                dot_general_cls=self.qkv_dot_general_cls, name=name)

        query = projection('query')(inputs_q)
        key = projection('key')(inputs_k)
        value = projection('value')(inputs_v)
        if self.normalize_qk:
            query = LayerNorm(name='query_ln', use_bias=False, dtype=self.dtype,
                              param_dtype=self.param_dtype)(query)
            key = LayerNorm(name='key_ln', use_bias=False, dtype=self.dtype,
                            param_dtype=self.param_dtype)(key)
        if self.decode:
            key, value, mask = self._update_cache(query, key, value, mask)

        if self.dropout_rate > 0.0:
            deterministic = merge_param('deterministic', self.deterministic, deterministic)
            if not deterministic and dropout_rng is None:
                dropout_rng = self.make_rng('dropout')
        else:
            deterministic = True
        # Optional einsum overrides (e.g. quantized einsums), built at each call as in Flax.
        qk_einsum = self.qk_attn_weights_einsum_cls() if self.qk_attn_weights_einsum_cls else None
        wv_einsum = (self.attn_weights_value_einsum_cls() if self.attn_weights_value_einsum_cls
                     else None)
        kwargs = dict(mask=mask, dropout_rng=dropout_rng, dropout_rate=self.dropout_rate,
                      broadcast_dropout=self.broadcast_dropout, deterministic=deterministic,
                      dtype=self.dtype, precision=self.precision,
                      force_fp32_for_softmax=self.force_fp32_for_softmax,
                      qk_attn_weights_einsum=qk_einsum, attn_weights_value_einsum=wv_einsum)
        # Custom attention functions may accept only some of these options.
        accepted = inspect.signature(self.attention_fn).parameters
        kwargs = {k: v for k, v in kwargs.items() if k in accepted}
        if sow_weights:
            kwargs['module'] = self
        x = self.attention_fn(query, key, value, **kwargs)
        return DenseGeneral(features=features, axis=(-2, -1),
                            kernel_init=self.out_kernel_init or self.kernel_init,
                            bias_init=self.out_bias_init or self.bias_init,
                            use_bias=self.use_bias, dtype=self.dtype,
                            param_dtype=self.param_dtype, precision=self.precision,
                            dot_general=self.out_dot_general,
                            dot_general_cls=self.out_dot_general_cls, name='out')(x)

    def _update_cache(self, query: Array, key: Array, value: Array,
                      mask: Optional[Array]) -> tuple[Array, Array, Optional[Array]]:
        """Writes one decoding step into the ``'cache'`` collection.

        During ``init`` the cache is created with the shapes of the full
        sequence; afterwards each call takes one query position, stores its
        key/value at ``cache_index`` and masks out the positions not yet written.
        """
        initialized = self.has_variable('cache', 'cached_key')
        cached_key = self.variable('cache', 'cached_key', jnp.zeros, key.shape, key.dtype)
        cached_value = self.variable('cache', 'cached_value', jnp.zeros, value.shape,
                                     value.dtype)
        cache_index = self.variable('cache', 'cache_index',
                                    lambda: jnp.array(0, dtype=jnp.int32))
        if not initialized:
            return key, value, mask
        *batch_dims, max_length, num_heads, depth = cached_key.value.shape
        expected = tuple(batch_dims) + (1, num_heads, depth)
        if expected != tuple(query.shape):
            raise ValueError(f'Autoregressive cache expects a query of shape {expected}, got '
                             f'{tuple(query.shape)}.')
        index = cache_index.value
        zero = jnp.array(0, dtype=index.dtype)
        start = (zero,) * len(batch_dims) + (index, zero, zero)
        key = lax.dynamic_update_slice(cached_key.value, key, start)
        value = lax.dynamic_update_slice(cached_value.value, value, start)
        cached_key.value = key
        cached_value.value = value
        cache_index.value = index + 1
        written = jnp.broadcast_to(jnp.arange(max_length) <= index,
                                   tuple(batch_dims) + (1, 1, max_length))
        return key, value, combine_masks(mask, written)


class MultiHeadAttention(MultiHeadDotProductAttention):
    """Alias of :class:`MultiHeadDotProductAttention` (Flax keeps both names)."""


class SelfAttention(MultiHeadDotProductAttention):
    """Multi-head self-attention: keys and values are the queries."""

    @compact
    def __call__(self, inputs_q: Array, mask: Optional[Array] = None,
                 deterministic: Optional[bool] = None,
                 dropout_rng: Optional[PRNGKey] = None, sow_weights: bool = False) -> Array:
        """Attends ``inputs_q [..., length, features]`` to itself."""
        return super().__call__(inputs_q, mask=mask, deterministic=deterministic,
                                dropout_rng=dropout_rng, sow_weights=sow_weights)


def make_attention_mask(query_input: Array, key_input: Array,
                        pairwise_fn: Callable[[Array, Array], Array] = jnp.multiply,
                        extra_batch_dims: int = 0, dtype: Dtype = jnp.float32) -> Array:
    """Builds a ``[batch..., 1, q, k]`` mask from per-position query and key values.

    Args:
        query_input: ``[batch..., q]`` (e.g. a padding indicator).
        key_input: ``[batch..., k]``.
        pairwise_fn: combines a query and a key value (default: product).
        extra_batch_dims: number of leading size-1 dims to add.
        dtype: dtype of the mask.
    """
    mask = pairwise_fn(jnp.expand_dims(query_input, axis=-1),
                       jnp.expand_dims(key_input, axis=-2))
    mask = jnp.expand_dims(mask, axis=-3)
    mask = jnp.expand_dims(mask, axis=tuple(range(extra_batch_dims)))
    return mask.astype(dtype)


def make_causal_mask(x: Array, extra_batch_dims: int = 0, dtype: Dtype = jnp.float32) -> Array:
    """Builds a ``[batch..., 1, len, len]`` mask letting position i attend to j <= i.

    Args:
        x: ``[batch..., len]`` (only the shape is used).
    """
    idxs = jnp.broadcast_to(jnp.arange(x.shape[-1], dtype=jnp.int32), x.shape)
    return make_attention_mask(idxs, idxs, jnp.greater_equal,
                               extra_batch_dims=extra_batch_dims, dtype=dtype)


def combine_masks(*masks: Optional[Array], dtype: Dtype = jnp.float32) -> Optional[Array]:
    """Logical AND of the non-None masks (all of the same rank), or None.

    Raises:
        ValueError: if the masks have different ranks.
    """
    present = [m for m in masks if m is not None]
    if not present:
        return None
    if len({m.ndim for m in present}) != 1:
        raise ValueError(f'Masks must have the same rank, got shapes '
                         f'{[tuple(m.shape) for m in present]}.')
    mask = present[0]
    for other in present[1:]:
        mask = jnp.logical_and(mask, other)
    return mask.astype(dtype)

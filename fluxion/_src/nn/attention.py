"""`dot_product_attention` (mirrors `jax.nn.dot_product_attention`, its XLA path).

For query `[B, T, N, H]` and key/value `[B, S, K, H]` (`K` divides `N`: grouped-query attention, query head `n`
reading key/value head `n // (N // K)`; rank-3 inputs have no batch axis):

    logits = scale * (query . key) over H     in float32 (or wider), [B, N, T, S]; scale defaults to 1/sqrt(H)
    logits = logits + bias                    bias broadcastable to [B, N, T, S]
    logits = where(keep, logits, -0.7 * max)  keep: `mask` AND causal AND local window AND sequence lengths
    probs  = softmax(logits over S)           computed in float32, cast to key's dtype
    out    = probs . value over S             [B, T, N, H]; rows of queries past `query_seq_lengths` are zero

`implementation` accepts None and "xla" ("cudnn" raises: there is no GPU); `return_residual` also returns the
log-sum-exp of the logits per query and head, `[B, T, N]`, as JAX does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..numpy import creation, linear, shape, ufuncs
from ..numpy.util import asarray_arg
from .functions import logsumexp, softmax


def _ensure_4d(t: Any) -> Any:
    return t.reshape((1,) * (4 - t.ndim) + tuple(t.shape)) if t.ndim < 4 else t


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None, *,
                          scale: float | None = None, is_causal: bool = False, query_seq_lengths: Any = None,
                          key_value_seq_lengths: Any = None, local_window_size: int | tuple[int, int] | None = None,
                          implementation: str | None = None, return_residual: bool = False) -> Any:
    """Scaled dot-product attention (see the module docstring).

    Raises:
      ValueError: ranks other than 3 or 4, mismatched batch/length/head sizes, query heads not a multiple of the
        key/value heads, a non-boolean mask, an unknown `implementation`.
    """
    if implementation not in (None, "xla"):
        raise ValueError(f"dot_product_attention: implementation {implementation!r} is not available on fluxion's "
                         "CPU backend (use None or 'xla')")
    query, key, value = (asarray_arg(a, "dot_product_attention") for a in (query, key, value))
    unbatched = query.ndim == 3
    if unbatched:
        query, key, value = query[None], key[None], value[None]
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.ndim != 4:
            raise ValueError(f"{name} ndim should be 4 (or 3 without a batch axis), but got {t.ndim}")
    B, T, N, H = query.shape
    _, S, K, _ = key.shape
    if key.shape != value.shape or key.shape[0] != B or key.shape[3] != H:
        raise ValueError(f"dot_product_attention: key {key.shape} and value {value.shape} must match each other "
                         f"and query {query.shape} in batch and head size")
    if N % K:
        raise ValueError(f"The number of query heads must be a multiple of key/value heads, but got {N} vs {K}")
    if N != K:  # grouped-query attention: query head n reads key/value head n // (N // K)
        key = shape.repeat(key, N // K, axis=2)
        value = shape.repeat(value, N // K, axis=2)
    logits_dtype = dtypes.promote_types(query.dtype, np.float32)
    logits = linear.einsum("BTNH,BSNH->BNTS", query, key, preferred_element_type=logits_dtype)
    scale = (1.0 / np.sqrt(H)) if scale is None else scale
    logits = logits * creation.asarray(scale, dtype=logits.dtype)
    if bias is not None:
        logits = (logits + _ensure_4d(asarray_arg(bias, "dot_product_attention"))).astype(logits.dtype)
    keep = None

    def both(a, b):
        return b if a is None else ufuncs.logical_and(a, b)

    if mask is not None:
        mask = _ensure_4d(asarray_arg(mask, "dot_product_attention"))
        if mask.dtype != np.bool_:
            raise ValueError(f"mask dtype should be bool, but got {mask.dtype}")
        keep = both(keep, mask)
    q_pos = creation.arange(T)[:, None]
    k_pos = creation.arange(S)[None, :]
    if is_causal:
        keep = both(keep, (q_pos >= k_pos)[None, None])
    if local_window_size is not None:
        left, right = ((local_window_size, local_window_size) if isinstance(local_window_size, int)
                       else tuple(local_window_size))
        keep = both(keep, ufuncs.logical_and(q_pos <= k_pos + left, q_pos >= k_pos - right)[None, None])
    if query_seq_lengths is not None:
        q_len = asarray_arg(query_seq_lengths, "dot_product_attention")
        keep = both(keep, (creation.arange(T)[None, :, None] < q_len[:, None, None])[:, None])
    if key_value_seq_lengths is not None:
        kv_len = asarray_arg(key_value_seq_lengths, "dot_product_attention")
        keep = both(keep, (creation.arange(S)[None, None, :] < kv_len[:, None, None])[:, None])
    if keep is not None:
        big = min(float(dtypes.finfo(logits.dtype).max), float(np.finfo(np.float32).max))
        logits = ufuncs.where(keep, logits, creation.asarray(-0.7 * big, dtype=logits.dtype))
    logits = logits.astype(np.float32)
    probs = softmax(logits, axis=-1).astype(key.dtype)
    out = linear.einsum("BNTS,BSNH->BTNH", probs, value)
    if query_seq_lengths is not None:
        valid = creation.arange(T)[None, :] < q_len[:, None]
        out = out * valid[:, :, None, None].astype(out.dtype)
    if return_residual:
        lse = shape.moveaxis(logsumexp(logits, axis=-1).astype(key.dtype), 1, 2)  # [B, N, T] -> [B, T, N]
        return (out[0], lse[0]) if unbatched else (out, lse)
    return out[0] if unbatched else out


def log1mexp(x: Any) -> Any:
    """`log(1 - exp(-x))` for x > 0, accurately: `log(-expm1(-x))` for small x, `log1p(-exp(-x))` above log 2
    (Mächler 2012, "Accurately Computing log(1 - exp(-|a|))")."""
    x = asarray_arg(x, "log1mexp")
    return ufuncs.where(x > np.log(2.0), ufuncs.log1p(-ufuncs.exp(-x)), ufuncs.log(-ufuncs.expm1(-x)))

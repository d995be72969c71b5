"""The `threefry2x32` primitive: the Threefry-2x32 block cipher as one operation of the IR.

`threefry2x32(k1, k2, x1, x2) -> (y1, y2)` encrypts counter pairs under a key, elementwise (Salmon et al. 2011,
"Parallel random numbers: as easy as 1, 2, 3"). All four operands are uint32 and have one shape, or are scalars
(a scalar key word is broadcast against the counters, as the key of a single PRNG key always is). Having the cipher
as a primitive keeps jaxprs short and lets vmap/jit/grad treat it like any elementwise integer op: its batching rule
is the elementwise one and its outputs carry no derivative.
"""

from __future__ import annotations

import numpy as np

from .. import core
from ..core import ShapedArray
from ..interpreters import ad, batching
from ..lax.elementwise import _elementwise_batch_rule
from ..lax.utils import standard_primitive

_UINT32 = np.dtype(np.uint32)


def _threefry_rule(k1, k2, x1, x2) -> list:
    avals = (k1, k2, x1, x2)
    if any(a.dtype != _UINT32 for a in avals):
        got = ", ".join(a.dtype.name for a in avals)
        raise TypeError(f"threefry2x32 requires four uint32 operands (k1, k2, x1, x2), got dtypes {got}")
    shape = ()
    for a in avals:
        if a.shape:
            if shape and a.shape != shape:
                shapes = ", ".join(str(x.shape) for x in avals)
                raise TypeError(f"threefry2x32 operands must have equal shapes or be scalars, got shapes {shapes}")
            shape = a.shape
    out = ShapedArray(shape, _UINT32)
    return [out, out]


threefry2x32_p = standard_primitive("threefry2x32", _threefry_rule, multiple_results=True, weak_type="never")
ad.defjvp_zero(threefry2x32_p)

_elementwise_batch = _elementwise_batch_rule(threefry2x32_p)


def _threefry_batch(vals, dims):
    outs, out_dim = _elementwise_batch(vals, dims)
    return outs, [out_dim, out_dim]


batching.primitive_batchers[threefry2x32_p] = _threefry_batch


def threefry2x32(k1, k2, x1, x2) -> list:
    """Applies the Threefry-2x32 cipher elementwise.

    Args:
      k1, k2: uint32 key words (scalars, or arrays of the counters' shape).
      x1, x2: uint32 counter words of one shape.

    Returns:
      [y1, y2]: uint32 arrays of the counters' shape.

    Raises:
      TypeError: an operand is not uint32, or shapes differ (other than scalars).
    """
    _threefry_rule(*(core.get_aval(v) for v in (k1, k2, x1, x2)))  # the eager path skips abstract evaluation
    return threefry2x32_p.bind(k1, k2, x1, x2)


def threefry_2x32(key, count):
    """Hashes an arbitrary-shape uint32 `count` array under `key` (uint32[2]), JAX's original counter layout.

    The flattened counts are padded with one zero to even length, split into a first and a second half that
    form the (x1, x2) pairs, and the two cipher outputs are concatenated back in that order. This is the layout
    used by the non-partitionable stream and by `fold_in`.

    Args:
      key: uint32[2] key data.
      count: uint32 array of any shape.

    Returns:
      uint32 array of `count`'s shape.
    """
    from ..lax import structural as st
    shape = core.get_aval(count).shape
    n = int(np.prod(shape, dtype=np.int64))
    flat = st.reshape(count, (n,))
    if n % 2:
        flat = st.concatenate([flat, st.full((1,), 0, _UINT32)], 0)
    half = (n + 1) // 2
    x1 = st.slice(flat, (0,), (half,))
    x2 = st.slice(flat, (half,), (2 * half,))
    k1, k2 = key_words(key)
    y1, y2 = threefry2x32(k1, k2, x1, x2)
    out = st.concatenate([y1, y2], 0)
    if n % 2:
        out = st.slice(out, (0,), (n,))
    return st.reshape(out, shape)


def key_words(key) -> tuple:
    """Splits uint32[2] key data into its two scalar words (k1, k2)."""
    from ..lax import structural as st
    k1 = st.reshape(st.slice(key, (0,), (1,)), ())
    k2 = st.reshape(st.slice(key, (1,), (2,)), ())
    return k1, k2

"""NumPy implementations of `sort` (multi-operand, lexicographic on the first `num_keys`) and `top_k`.

Ordering matches XLA's total order as JAX uses it: NaNs sort after every number (whatever their sign), and -0.0
equals 0.0 (ties keep their original order, the sorts being stable). Complex numbers sort lexicographically by
(real, imag), as NumPy does. Half-precision keys are compared in float32 (an order-preserving widening).
"""

from __future__ import annotations

import numpy as np

from ...lax import sorting as ls
from . import register_impl


def _key(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype.kind == "f" and x.dtype.itemsize < 4 or x.dtype.name == "bfloat16":
        return x.astype(np.float32)
    return x


def sort_permutation(keys, axis: int) -> np.ndarray:
    """Stable permutation sorting lexicographically by `keys` (the first is the most significant) along `axis`."""
    if len(keys) == 1:
        return np.argsort(_key(keys[0]), axis=axis, kind="stable")
    # np.lexsort treats its *last* key as the primary one.
    return np.lexsort([_key(k) for k in reversed(keys)], axis=axis)


def sort(*operands, dimension, is_stable=True, num_keys=1):
    if len(operands) == 1 and num_keys == 1 and not (operands[0].dtype.name == "bfloat16"):
        return [np.sort(operands[0], axis=dimension, kind="stable")]
    perm = sort_permutation(operands[:num_keys], dimension)
    return [np.take_along_axis(np.asarray(op), perm, axis=dimension) for op in operands]


register_impl(ls.sort_p, sort)


def top_k(operand, *, k, axis=-1):
    x = np.moveaxis(np.asarray(operand), axis, -1)
    n = x.shape[-1]
    # A stable ascending sort of the reversed array, read backwards, is a descending sort in which ties keep
    # increasing original index, and NaNs (sorted last ascending) come first -- XLA's TopK order.
    order = np.argsort(_key(x[..., ::-1]), axis=-1, kind="stable")[..., ::-1][..., :k]
    indices = (n - 1 - order).astype(np.int32)
    values = np.take_along_axis(x, indices, axis=-1)
    return [np.moveaxis(values, -1, axis), np.moveaxis(indices, -1, axis)]


register_impl(ls.top_k_p, top_k)

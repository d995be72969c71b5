"""Sorting primitives: multi-operand `sort` (as `jax.lax.sort`) and `top_k`.

`sort_p` sorts several same-shape arrays along one dimension by the lexicographic order of the first `num_keys`
of them (NaNs last, -0.0 == 0.0, stable). Its JVP sorts an extra iota operand to recover the permutation and
permutes the tangents with it; `top_k` differentiates the same way through its indices.
"""

from __future__ import annotations

import numpy as np

from .. import core, dtypes
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, batching
from ..interpreters.ad import Zero
from . import structural as st
from .indexing import take_along_axis
from .utils import canonicalize_axis, standard_primitive


sort_p = standard_primitive("sort", multiple_results=True, weak_type="all")


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sorts along `dimension`.

    Args:
      operand: an array, or a sequence of same-shape arrays sorted together by the first `num_keys` of them
        (lexicographically, the first key most significant).
      dimension: the axis to sort along.
      is_stable: accepted for compatibility; the sort is always stable.
      num_keys: how many leading operands are sort keys.

    Returns:
      The sorted array, or a tuple of sorted arrays if `operand` is a sequence.

    Raises:
      TypeError: operands of different shapes or an out-of-range dimension.
    """
    single = not isinstance(operand, (list, tuple))
    operands = [st._as_array(o) for o in ([operand] if single else operand)]
    nd = core.get_aval(operands[0]).ndim
    if nd == 0:
        raise TypeError("sort requires operands of rank >= 1, got a scalar")
    dim = canonicalize_axis(int(dimension), nd, "dimension")
    params = dict(dimension=dim, is_stable=bool(is_stable), num_keys=int(num_keys))
    _sort_abstract_eval(*[core.get_aval(o) for o in operands], **params)  # the eager path skips abstract evaluation
    outs = sort_p.bind(*operands, **params)
    return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    """Sorts `keys` along `dimension` and permutes `values` alike; returns (sorted keys, permuted values)."""
    k, v = sort([keys, values], dimension=dimension, is_stable=is_stable, num_keys=1)
    return k, v


def _sort_abstract_eval(*operands, dimension, is_stable=True, num_keys=1):
    if not operands:
        raise TypeError("sort requires at least one operand")
    shape = operands[0].shape
    for o in operands:
        if o.shape != shape:
            raise TypeError("sort requires all operands to have the same shape, got "
                            + ", ".join(str(a.shape) for a in operands))
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of operands ({len(operands)})")
    if not 0 <= dimension < max(len(shape), 1):
        raise TypeError(f"sort: dimension {dimension} is out of bounds for operands of shape {shape}")
    return [ShapedArray(o.shape, o.dtype) for o in operands]


abstract_eval_rules[sort_p] = _sort_abstract_eval


def _sort_jvp(primals, tangents, *, dimension, is_stable=True, num_keys=1):
    shape = core.get_aval(primals[0]).shape
    iota = st.broadcasted_iota(np.int32, shape, dimension)
    *outs, perm = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    t_out = [Zero(core.get_aval(o)) if type(t) is Zero else take_along_axis(t, perm, dimension)
             for o, t in zip(outs, tangents)]
    return outs, t_out


ad.primitive_jvps[sort_p] = _sort_jvp


def _sort_batch_rule(vals, dims, *, dimension, is_stable=True, num_keys=1):
    size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
    vals = [batching.moveaxis(v, d, 0, size) for v, d in zip(vals, dims)]
    outs = sort_p.bind(*vals, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


batching.primitive_batchers[sort_p] = _sort_batch_rule


# --------------------------------------------------------------------------------------------------------------
# top_k
# --------------------------------------------------------------------------------------------------------------

top_k_p = standard_primitive("top_k", multiple_results=True, weak_type="never")


def top_k(operand, k: int, *, axis: int = -1):
    """The `k` largest entries along `axis` and their indices (descending; ties by lower index; NaN largest).

    Returns:
      (values of operand's dtype, int32 indices), both with size `k` along `axis`.

    Raises:
      ValueError: `k` is negative or larger than the axis.
    """
    operand = st._as_array(operand)
    nd = core.get_aval(operand).ndim
    if nd == 0:
        raise TypeError("top_k requires an operand of rank >= 1, got a scalar")
    params = dict(k=int(k), axis=canonicalize_axis(int(axis), nd))
    _top_k_abstract_eval(core.get_aval(operand), **params)  # the eager path skips abstract evaluation
    values, indices = top_k_p.bind(operand, **params)
    return values, indices


def _top_k_abstract_eval(x, *, k, axis=-1):
    if x.ndim == 0:
        raise TypeError("top_k requires an operand of rank >= 1, got a scalar")
    if not 0 <= axis < x.ndim:
        raise TypeError(f"top_k: axis {axis} is out of bounds for operand shape {x.shape}")
    if not 0 <= k <= x.shape[axis]:
        raise ValueError(f"top_k: k={k} must be between 0 and the size {x.shape[axis]} of axis {axis} "
                         f"(operand shape {x.shape})")
    shape = list(x.shape)
    shape[axis] = k
    return [ShapedArray(tuple(shape), x.dtype), ShapedArray(tuple(shape), dtypes.int32)]


abstract_eval_rules[top_k_p] = _top_k_abstract_eval


def _top_k_jvp(primals, tangents, *, k, axis=-1):
    (x,), (t,) = primals, tangents
    values, indices = top_k_p.bind(x, k=k, axis=axis)
    t_values = Zero(core.get_aval(values)) if type(t) is Zero else take_along_axis(t, indices, axis)
    return [values, indices], [t_values, Zero(core.get_aval(indices))]


ad.primitive_jvps[top_k_p] = _top_k_jvp


def _top_k_batch_rule(vals, dims, *, k, axis=-1):
    (x,), (d,) = vals, dims
    new_axis = axis + 1 if axis >= d else axis
    outs = top_k_p.bind(x, k=k, axis=new_axis)
    return outs, [d, d]


batching.primitive_batchers[top_k_p] = _top_k_batch_rule

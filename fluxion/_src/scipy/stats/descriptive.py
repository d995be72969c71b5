"""Descriptive statistics: `mode`, `rankdata`, `sem` (mirrors `jax.scipy.stats`).

`mode` and `rankdata` compare every element with every other along the reduced axis (O(n^2) work and memory per
slice) instead of sorting: the result is the same, needs no data-dependent shapes, and composes with jit and vmap.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .... import numpy as jnp
from ... import core, dtypes
from ...numpy.util import canonicalize_axis, check_arraylike
from ._common import full_like, promote

_NAN_POLICIES = ("propagate", "omit", "raise")


def _check_nan_policy(name: str, nan_policy: str) -> None:
    if nan_policy not in _NAN_POLICIES:
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of {set(_NAN_POLICIES)}")
    if nan_policy != "propagate":
        raise NotImplementedError(f"{name}: nan_policy={nan_policy!r} is not implemented (only 'propagate'; "
                                  "whether x holds NaNs is not known while tracing)")


class ModeResult(NamedTuple):
    """What `mode` returns: `mode`, the most frequent value along the axis, and `count`, how often it occurs
    (int32, or int64 with x64 enabled); both have the input's shape without that axis (kept with size 1 if
    `keepdims`). Field names and order match `scipy.stats.mode`'s result."""

    mode: Any
    count: Any


def mode(a: Any, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False) -> ModeResult:
    """The most frequent value along `axis` (the smallest one on ties) and its count.

    Args:
      a: array (a scalar is treated as shape (1,)).
      axis: the axis to reduce; None flattens first.
      nan_policy: only "propagate" (NotImplementedError for "omit"/"raise", ValueError for anything else).
      keepdims: keep the reduced axis with size 1.

    Returns:
      A `ModeResult` whose `mode` has a's dtype and whose `count` is int32. An empty slice gives (NaN, 0) in
      the default float dtype, as JAX.
    """
    check_arraylike("mode", a)
    _check_nan_policy("mode", nan_policy)
    x = jnp.atleast_1d(jnp.asarray(a))
    if axis is None:
        out_shape = (1,) * x.ndim if keepdims else ()
        x = jnp.reshape(x, (-1, 1))
    else:
        axis = canonicalize_axis(axis, x.ndim)
        out_shape = tuple(1 if i == axis else s for i, s in enumerate(x.shape)) if keepdims else \
            tuple(s for i, s in enumerate(x.shape) if i != axis)
        x = jnp.moveaxis(x, axis, 0)
        x = jnp.reshape(x, (x.shape[0], math.prod(x.shape[1:])))
    if x.shape[0] == 0:
        nan = jnp.full(out_shape, np.nan, dtypes.default_float_dtype())
        return ModeResult(nan, jnp.zeros(out_shape, dtypes.default_float_dtype()))
    # counts[i, j]: how often x[i, j] occurs in column j.
    counts = jnp.sum((x[:, None, :] == x[None, :, :]).astype(np.int32), axis=1)
    best = jnp.max(counts, axis=0)
    candidates = jnp.where(counts == best[None, :], x, _largest(x))
    values = jnp.min(candidates, axis=0)
    return ModeResult(jnp.reshape(values, out_shape), jnp.reshape(best, out_shape))


def _largest(x):
    dt = core.get_aval(x).dtype
    big = np.inf if dtypes.is_inexact(dt) else (True if dt == np.bool_ else np.iinfo(dt).max)
    return jnp.full_like(x, big)


_RANK_METHODS = ("average", "min", "max", "dense", "ordinal")


def rankdata(a: Any, method: str = "average", *, axis: int | None = None, nan_policy: str = "propagate") -> Any:
    """Ranks (from 1) of the elements of `a`, ties resolved by `method`: "average" (mean of the tied ranks),
    "min", "max", "dense" (consecutive ranks for distinct values) or "ordinal" (ties in order of appearance).

    With `axis=None` the array is flattened; otherwise each slice along `axis` is ranked. Results are in the
    default float dtype (as JAX); a slice containing NaN is all NaN.

    Raises:
      ValueError: for an unknown `method` or `nan_policy`; NotImplementedError for nan_policy "omit"/"raise".
    """
    check_arraylike("rankdata", a)
    _check_nan_policy("rankdata", nan_policy)
    if method not in _RANK_METHODS:
        raise ValueError(f"unknown method '{method}'")
    x = jnp.asarray(a)
    if axis is None:
        return _rank_last(jnp.ravel(x), method)
    axis = canonicalize_axis(axis, x.ndim)
    return jnp.moveaxis(_rank_last(jnp.moveaxis(x, axis, -1), method), -1, axis)


def _rank_last(x, method: str):
    out_dtype = dtypes.default_float_dtype()
    xi, xj = x[..., :, None], x[..., None, :]
    less = jnp.sum(xj < xi, axis=-1)
    equal = jnp.sum(xj == xi, axis=-1)
    if method == "average":
        ranks = less.astype(out_dtype) + 0.5 * (equal.astype(out_dtype) + 1)
    elif method == "min":
        ranks = (less + 1).astype(out_dtype)
    elif method == "max":
        ranks = (less + equal).astype(out_dtype)
    elif method == "ordinal":
        n = x.shape[-1]
        earlier = jnp.arange(n)[None, :] < jnp.arange(n)[:, None]
        ranks = (less + jnp.sum((xj == xi) & earlier, axis=-1) + 1).astype(out_dtype)
    else:  # dense: 1 + the number of distinct values below, each counted once through 1 / multiplicity
        multiplicity = jnp.sum(xj == xi, axis=-1).astype(out_dtype)
        below = jnp.sum(jnp.where(xj < xi, 1 / multiplicity[..., None, :], 0), axis=-1)
        ranks = jnp.round(below) + 1
    has_nan = jnp.any(jnp.isnan(x), axis=-1, keepdims=True) if dtypes.is_inexact(x.dtype) else None
    if has_nan is not None:
        ranks = jnp.where(has_nan, full_like(ranks, np.nan), ranks)
    return ranks


def sem(a: Any, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *, keepdims: bool = False):
    """The standard error of the mean, std(a, ddof) / sqrt(n), along `axis` (None: all elements).

    nan_policy "omit" ignores NaNs (nanstd and the count of non-NaN values); "raise" is not supported
    (ValueError, as JAX).
    """
    (b,) = promote("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[canonicalize_axis(axis, b.ndim)]
        return jnp.std(b, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(jnp.asarray(size, b.dtype))
    if nan_policy == "omit":
        valid = ~jnp.isnan(b)
        count = jnp.sum(valid, axis=axis, keepdims=True).astype(b.dtype)
        mean = jnp.sum(jnp.where(valid, b, 0), axis=axis, keepdims=True) / count
        sq = jnp.sum(jnp.where(valid, jnp.square(b - mean), 0), axis=axis, keepdims=True)
        out = jnp.sqrt(sq / (count - ddof)) / jnp.sqrt(count)
        return out if keepdims else jnp.squeeze(out, axis=axis)
    raise ValueError(f"{nan_policy} is not supported")



"""Histograms: `histogram_bin_edges`, `histogram`, `histogram2d`, `histogramdd`.

Counting is a scatter-add of the weights into bins located by `searchsorted`, so it traces and batches, and the
counts are differentiable with respect to the weights. The number of bins must be static (an int, or explicit
edges); values outside the range are not counted, and values equal to the last edge fall into the last bin.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import core, dtypes
from ..core import Array, Tracer
from ..lax import elementwise as ew
from ..lax import structural as st
from .util import arraylike_arg, asarray_arg


def _len(x) -> int:
    return core.get_aval(x).shape[0]


def _float_of(a):
    dt = core.get_aval(a).dtype
    return dt if dtypes.is_inexact(dt) else dtypes.default_float_dtype()


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """Edges of the histogram bins of `a`: `bins` explicit edges are returned as given; an int gives that many
    equal bins over `range` (default: min to max of `a`, widened by 0.5 on each side when they are equal).

    Raises:
      TypeError: a traced number of bins. ValueError: `range` not of two values, or min > max.
    """
    from .creation import linspace
    from .reductions import max as _max, min as _min
    a = arraylike_arg(a, "histogram_bin_edges")
    if isinstance(bins, (Array, Tracer)) and core.get_aval(bins).ndim == 1 or isinstance(bins, (list, tuple)) or (
            isinstance(bins, np.ndarray) and bins.ndim == 1):
        return asarray_arg(bins, "histogram_bin_edges")
    if isinstance(bins, Tracer):
        raise bins._concretization_error("int", "the number of bins of jnp.histogram")
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` are not supported")
    n = operator.index(int(bins) if isinstance(bins, Array) else bins)
    if n < 1:
        raise ValueError("`bins` must be positive, when an integer")
    dt = _float_of(a)
    if range is None:
        if core.get_aval(a).size == 0:
            lo, hi = Array(np.zeros((), dt)), Array(np.ones((), dt))
        else:
            lo, hi = ew.convert_element_type(_min(a), dt), ew.convert_element_type(_max(a), dt)
    else:
        if len(range) != 2:
            raise ValueError(f"range must be a pair (min, max), got {range!r}")
        lo, hi = (ew.convert_element_type(asarray_arg(r), dt) for r in range)
        vlo, vhi = core.concrete_value(lo), core.concrete_value(hi)
        if vlo is not None and vhi is not None and np.asarray(vlo) > np.asarray(vhi):
            raise ValueError("max must be larger than min in range parameter.")
    same = ew.eq(lo, hi)
    half = Array(np.asarray(0.5, dt), True)
    lo = ew.select_n(same, lo, ew.sub(lo, half))
    hi = ew.select_n(same, hi, ew.add(hi, half))
    return linspace(lo, hi, n + 1, dtype=dt)


def _bin_index(x, edges):
    """Bin number of each value: 1..n inside, 0 below, n+1 above; the last edge belongs to bin n."""
    from .sorting import searchsorted
    from .ufuncs import where
    x = ew.convert_element_type(x, core.get_aval(edges).dtype)
    idx = searchsorted(edges, x, side="right")
    n_edges = _len(edges)
    return where(ew.eq(x, edges[n_edges - 1]), n_edges - 1, idx)


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """Counts (or summed `weights`) of the flattened `a` per bin, and the bin edges (see
    `histogram_bin_edges`). With `density`, counts are divided by the bin widths and the total, so the histogram
    integrates to 1.

    Raises:
      ValueError: `weights` of another shape than `a`.
    """
    from .creation import ones_like
    from .differences import diff
    from .reductions import sum as _sum
    a = arraylike_arg(a, "histogram")
    if weights is not None:
        weights = arraylike_arg(weights, "histogram", 3)
        if core.get_aval(weights).shape != core.get_aval(a).shape:
            raise ValueError(f"weights should have the same shape as a, got {core.get_aval(weights).shape} and "
                             f"{core.get_aval(a).shape}")
    edges = histogram_bin_edges(a, bins, range, weights)
    flat = st.reshape(a, (core.get_aval(a).size,))
    idx = _bin_index(flat, edges)
    w = ones_like(flat, dtype=_float_of(edges)) if weights is None else st.reshape(weights,
                                                                                    (core.get_aval(a).size,))
    n_edges = _len(edges)
    counts = st.full((n_edges,), 0, core.get_aval(w).dtype).at[idx].add(w, mode="drop")
    counts = st.slice_in_dim(counts, 1, n_edges, 1, 0)
    if density:
        widths = diff(edges)
        counts = ew.div(ew.div(counts, ew.convert_element_type(widths, core.get_aval(counts).dtype)), _sum(counts))
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """Multidimensional histogram of the N points of `sample` (shape (N, D)): `bins` is an int, or one int or edge
    array per dimension; `range` one (min, max) pair (or None) per dimension. Returns the (n_1, ..., n_D) counts and
    the list of edge arrays.

    Raises:
      ValueError: `sample` not 2-d, or `bins`/`range` of the wrong length.
    """
    from .creation import ones
    from .differences import diff
    from .indexing import ravel_multi_index
    from .reductions import sum as _sum
    sample = arraylike_arg(sample, "histogramdd")
    if core.get_aval(sample).ndim != 2:
        raise ValueError(f"histogramdd: sample must be 2-d of shape (N, D), got {core.get_aval(sample).shape}")
    n, d = core.get_aval(sample).shape
    if isinstance(bins, (int, np.integer)) or isinstance(bins, (Array, Tracer)) and core.get_aval(bins).ndim == 0:
        bins = [bins] * d
    if len(bins) != d:
        raise ValueError(f"should be a bin for each dimension: got {len(bins)} for D={d}")
    ranges = [None] * d if range is None else list(range)
    if len(ranges) != d:
        raise ValueError(f"should be a range for each dimension: got {len(ranges)} for D={d}")
    if weights is not None:
        weights = arraylike_arg(weights, "histogramdd", 3)
        if core.get_aval(weights).shape != (n,):
            raise ValueError(f"weights should have shape ({n},), got {core.get_aval(weights).shape}")
    edges, idx = [], []
    for i in builtins.range(d):
        col = st.index_in_dim(sample, i, 1, False)
        e = histogram_bin_edges(col, bins[i], ranges[i])
        edges.append(e)
        idx.append(_bin_index(col, e))
    dims = tuple(_len(e) + 1 for e in edges)
    flat_idx = ravel_multi_index(tuple(idx), dims, mode="clip")
    # Unweighted counts are integers here (JAX's histogramdd; `histogram` counts in floats).
    w = ones((n,), dtypes.default_int_dtype()) if weights is None else weights
    total = int(np.prod(dims, dtype=np.int64))
    counts = st.full((total,), 0, core.get_aval(w).dtype).at[flat_idx].add(w, mode="drop")
    counts = st.reshape(counts, dims)
    counts = st.slice(counts, (1,) * d, tuple(x - 1 for x in dims))
    if density:
        if not dtypes.is_inexact(core.get_aval(counts).dtype):
            counts = ew.convert_element_type(counts, _float_of(edges[0]))
        counts = ew.div(counts, _sum(counts))
        for i, e in enumerate(edges):
            widths = ew.convert_element_type(diff(e), core.get_aval(counts).dtype)
            counts = ew.div(counts, st.broadcast_in_dim(widths, core.get_aval(counts).shape, (i,)))
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """Two-dimensional histogram of the points (`x`, `y`): `bins` is an int, a pair of ints or edge arrays, or one
    edge array for both. Returns (counts of shape (nx, ny), x edges, y edges)."""
    from .shape import stack
    x, y = arraylike_arg(x, "histogram2d"), arraylike_arg(y, "histogram2d", 1)
    from .util import promote_dtypes
    x, y = promote_dtypes(x, y)
    sample = stack([x, y], axis=1)
    if isinstance(bins, (Array, Tracer, np.ndarray)) and core.get_aval(asarray_arg(bins)).ndim == 1:
        bins = [bins, bins]
    counts, edges = histogramdd(sample, bins, range, weights, density)
    return counts, edges[0], edges[1]

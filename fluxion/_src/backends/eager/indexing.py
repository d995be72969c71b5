"""NumPy implementations of `gather` and the `scatter` family (XLA's general forms).

Both are vectorized: for every operand dimension we build one broadcastable integer index array (start index +
window offset, or the batch position for batching dimensions) and let NumPy's advanced indexing (for gather and
scatter-set) or `ufunc.at` (for the accumulating scatters) do the work, with no Python loop over indices.

Out-of-bounds handling follows XLA/JAX (see `GatherScatterMode` in `fluxion._src.lax.indexing`):

* gather: CLIP and PROMISE_IN_BOUNDS clamp each start index so the whole slice is in bounds; FILL_OR_DROP returns
  `fill_value` for every element of a slice whose window is not entirely in bounds.
* scatter: CLIP clamps the same way; FILL_OR_DROP and PROMISE_IN_BOUNDS drop a whole update window that is not
  entirely in bounds (what XLA's CPU backend does for PROMISE_IN_BOUNDS).
"""

from __future__ import annotations

import numpy as np

from ...lax import indexing as lx
from . import minmax, register_impl


def default_fill_value(dtype: np.dtype):
    """The fill for out-of-bounds gathers when none is given: NaN (inexact), the minimum (signed ints), the
    maximum (unsigned ints), True (bool) -- JAX's documented defaults for `mode='fill'`."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return True
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if dtype.kind == "i" else info.max
    return np.nan


def _mode_name(mode) -> str:
    return getattr(mode, "name", str(mode))


def _clamped_starts(starts, limits, clamp: bool):
    """Clamps start indices to [0, limit] and returns (clamped starts, validity mask or None).

    Args:
      starts: int64 array (..., k).
      limits: int64 array (k,): the largest valid start of each indexed dimension.
      clamp: whether out-of-bounds windows are clamped (True) or flagged invalid in the returned mask (False).
    """
    valid = None
    if not clamp and starts.shape[-1]:
        valid = np.all((starts >= 0) & (starts <= limits), axis=-1)
    return np.clip(starts, 0, np.maximum(limits, 0)), valid


def _axis_vector(values, axis: int, rank: int):
    shape = [1] * rank
    shape[axis] = values.shape[0]
    return values.reshape(shape)


def gather(operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted=False, unique_indices=False,
           mode=None, fill_value=None):
    operand = np.asarray(operand)
    indices = np.asarray(indices)
    dn = dimension_numbers
    batch_shape = indices.shape[:-1]
    nb = len(batch_shape)
    window_dims = [d for d in range(operand.ndim)
                   if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    window_shape = tuple(slice_sizes[d] for d in window_dims)
    full_shape = batch_shape + window_shape
    rank = len(full_shape)

    limits = np.array([operand.shape[d] - slice_sizes[d] for d in dn.start_index_map], np.int64)
    starts, valid = _clamped_starts(indices.astype(np.int64), limits,
                                    _mode_name(mode) in ("CLIP", "PROMISE_IN_BOUNDS"))

    index_arrays = []
    for d in range(operand.ndim):
        comp = np.zeros((1,) * rank, np.intp)
        if d in dn.start_index_map:
            k = dn.start_index_map.index(d)
            comp = comp + starts[..., k].reshape(batch_shape + (1,) * len(window_dims))
        if d in dn.operand_batching_dims:
            axis = dn.start_indices_batching_dims[dn.operand_batching_dims.index(d)]
            comp = comp + _axis_vector(np.arange(batch_shape[axis]), axis, rank)
        if d in window_dims:
            comp = comp + _axis_vector(np.arange(slice_sizes[d]), nb + window_dims.index(d), rank)
        index_arrays.append(comp)
    if operand.size == 0 or 0 in full_shape:
        out = np.zeros(full_shape, operand.dtype)
    else:
        out = np.broadcast_to(operand[tuple(index_arrays)], full_shape)
    if valid is not None and not valid.all():
        fill = default_fill_value(operand.dtype) if fill_value is None else fill_value
        mask = valid.reshape(batch_shape + (1,) * len(window_dims))
        out = np.where(mask, out, np.asarray(fill).astype(operand.dtype))

    # Gather's output interleaves batch and window dims: window dims sit at `offset_dims`.
    perm, b, w = [], 0, 0
    for i in range(rank):
        if i in dn.offset_dims:
            perm.append(nb + w)
            w += 1
        else:
            perm.append(b)
            b += 1
    return np.array(np.transpose(out, perm), dtype=operand.dtype)  # (np.ascontiguousarray would make 0-d 1-d)


register_impl(lx.gather_p, gather)


def _scatter_index_arrays(operand_shape, indices, updates_shape, dn, mode):
    """Full index arrays (one per operand dim, each of `updates_shape`) plus a validity mask or None."""
    nu = len(updates_shape)
    scatter_axes = [i for i in range(nu) if i not in dn.update_window_dims]
    window_dims = [d for d in range(len(operand_shape))
                   if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    window_size = {d: updates_shape[dn.update_window_dims[w]] for w, d in enumerate(window_dims)}
    limits = np.array([operand_shape[d] - window_size.get(d, 1) for d in dn.scatter_dims_to_operand_dims],
                      np.int64)
    starts, valid = _clamped_starts(indices.astype(np.int64), limits, _mode_name(mode) == "CLIP")
    batch_shape = indices.shape[:-1]
    # Reshape (batch..., ) arrays so their axes land on the updates' scatter axes.
    scatter_view = [1] * nu
    for j, ax in enumerate(scatter_axes):
        scatter_view[ax] = batch_shape[j]

    arrays = []
    for d in range(len(operand_shape)):
        comp = np.zeros((1,) * nu, np.intp)
        if d in dn.scatter_dims_to_operand_dims:
            k = dn.scatter_dims_to_operand_dims.index(d)
            comp = comp + starts[..., k].reshape(scatter_view)
        if d in dn.operand_batching_dims:
            axis = dn.scatter_indices_batching_dims[dn.operand_batching_dims.index(d)]
            comp = comp + _axis_vector(np.arange(batch_shape[axis]), scatter_axes[axis], nu)
        if d in window_size:
            comp = comp + _axis_vector(np.arange(window_size[d]), dn.update_window_dims[window_dims.index(d)], nu)
        arrays.append(np.broadcast_to(comp, updates_shape))
    mask = None
    if valid is not None:
        mask = np.broadcast_to(valid.reshape(scatter_view), updates_shape)
    return arrays, mask


def _make_scatter(combine):
    def impl(operand, indices, updates, *, dimension_numbers, indices_are_sorted=False, unique_indices=False,
             mode=None, **_):
        operand = np.asarray(operand)
        updates = np.asarray(updates)
        out = np.array(operand, copy=True)
        if updates.size == 0 or operand.size == 0:
            return out
        arrays, mask = _scatter_index_arrays(operand.shape, np.asarray(indices), updates.shape,
                                             dimension_numbers, mode)
        if mask is not None and not mask.all():
            arrays = [a[mask] for a in arrays]
            updates = updates[mask]
        combine(out, tuple(arrays), updates)
        return out
    return impl


def _set(out, idx, upd):
    out[idx] = upd


def _accumulate(ufunc):
    def combine(out, idx, upd):
        with np.errstate(all="ignore"):
            ufunc.at(out, idx, upd)
    return combine


scatter = _make_scatter(_set)
register_impl(lx.scatter_p, scatter)
scatter_add = _make_scatter(_accumulate(np.add))
register_impl(lx.scatter_add_p, scatter_add)
scatter_mul = _make_scatter(_accumulate(np.multiply))
register_impl(lx.scatter_mul_p, scatter_mul)
scatter_min = _make_scatter(minmax.scatter_minimum)  # XLA's signed zeros (see minmax)
register_impl(lx.scatter_min_p, scatter_min)
scatter_max = _make_scatter(minmax.scatter_maximum)
register_impl(lx.scatter_max_p, scatter_max)

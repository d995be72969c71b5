"""NumPy implementations of the structural primitives (shapes, slicing, padding, concatenation)."""

from __future__ import annotations

import numpy as np

from ...lax import sharding_rules
from ...lax import structural as st
from . import register_impl


def broadcast_in_dim(x, *, shape, broadcast_dimensions):
    x = np.asarray(x)
    expanded = [1] * len(shape)
    for src, dst in enumerate(broadcast_dimensions):
        expanded[dst] = x.shape[src]
    return np.broadcast_to(x.reshape(expanded), shape)


register_impl(st.broadcast_in_dim_p, broadcast_in_dim)


def reshape(x, *, new_sizes, dimensions=None):
    x = np.asarray(x)
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return x.reshape(new_sizes)


register_impl(st.reshape_p, reshape)


def transpose(x, *, permutation):
    return np.transpose(x, permutation)


register_impl(st.transpose_p, transpose)


def squeeze(x, *, dimensions):
    return np.squeeze(x, axis=dimensions) if dimensions else np.asarray(x)


register_impl(st.squeeze_p, squeeze)


def rev(x, *, dimensions):
    return np.flip(x, dimensions) if dimensions else np.asarray(x)


register_impl(st.rev_p, rev)


def concatenate(*xs, dimension):
    return np.concatenate(xs, axis=dimension)


register_impl(st.concatenate_p, concatenate)


def pad(x, padding_value, *, padding_config):
    x = np.asarray(x)
    lo_hi = []
    interior_any = any(i for _, _, i in padding_config)
    if interior_any:
        shape = [d + max(d - 1, 0) * i for d, (_, _, i) in zip(x.shape, padding_config)]
        y = np.full(shape, padding_value, dtype=x.dtype)
        y[tuple(slice(None, None, i + 1) for _, _, i in padding_config)] = x
        x = y
    # Positive padding first, then negative padding crops; a crop may eat into the added padding on the
    # other side (XLA semantics), so it is applied to the padded array.
    for lo, hi, _ in padding_config:
        lo_hi.append((max(lo, 0), max(hi, 0)))
    x = np.pad(x, lo_hi, mode="constant", constant_values=padding_value)
    crop = tuple(slice(max(-lo, 0), x.shape[k] - max(-hi, 0)) for k, (lo, hi, _) in enumerate(padding_config))
    return x[crop]


register_impl(st.pad_p, pad)


def slice_(x, *, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * len(start_indices)
    return np.asarray(x)[tuple(slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


register_impl(st.slice_p, slice_)


def _clamp_starts(starts, operand_shape, sizes):
    return [int(min(max(int(s), 0), d - z)) for s, d, z in zip(starts, operand_shape, sizes)]


def dynamic_slice(x, *starts, slice_sizes):
    x = np.asarray(x)
    st = _clamp_starts(starts, x.shape, slice_sizes)
    return x[tuple(slice(s, s + z) for s, z in zip(st, slice_sizes))]


register_impl(st.dynamic_slice_p, dynamic_slice)


def dynamic_update_slice(x, update, *starts):
    x = np.asarray(x)
    update = np.asarray(update)
    st = _clamp_starts(starts, x.shape, update.shape)
    out = x.copy()
    out[tuple(slice(s, s + z) for s, z in zip(st, update.shape))] = update
    return out


register_impl(st.dynamic_update_slice_p, dynamic_update_slice)


def iota(*, dtype, shape, dimension):
    r = np.arange(shape[dimension], dtype=dtype)
    return np.broadcast_to(r.reshape([-1 if i == dimension else 1 for i in range(len(shape))]), shape)


register_impl(st.iota_p, iota)


def copy(x):
    return np.array(x, copy=True)


register_impl(st.copy_p, copy)


register_impl(sharding_rules.reshard_p, lambda x, *, sharding: x)  # types only: the value is unchanged

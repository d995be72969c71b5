"""NumPy implementation of `conv_general_dilated` by im2col: one batched matrix product per call.

The lhs is copied to a contiguous channels-last layout (N, spatial..., C), dilated and padded; its windows are read
with `sliding_window_view` (a strided view, no copy) and copied once into a patch matrix laid out (group, positions,
kernel taps x input features) with the features innermost, so the copy moves contiguous runs. A single `np.matmul`
over the group axis then computes every output. Half-precision operands are multiplied in float32, as XLA's CPU
backend accumulates them.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ...lax import convolution as lc
from . import register_impl
from .structural import pad as _pad

# Above this many patch-matrix elements the batch is processed in chunks to bound memory.
_MAX_PATCH_ELEMENTS = 1 << 26


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    if dtype == np.bool_:
        return np.dtype(np.int32)
    if dtype.kind == "f" and dtype.itemsize < 4 or dtype.name == "bfloat16":
        return np.dtype(np.float32)
    return dtype


def _windows(x, kernel_shape, window_strides, rhs_dilation):
    """(N, *spatial, C) -> strided view (N, *out, C, *kernel) of the windows each output position reads."""
    nsp = len(kernel_shape)
    spans = [(k - 1) * r + 1 for k, r in zip(kernel_shape, rhs_dilation)]
    view = sliding_window_view(x, spans, axis=tuple(range(1, 1 + nsp)))  # (N, *out_full, C, *spans)
    sel = (slice(None),) + tuple(slice(None, None, s) for s in window_strides) + (slice(None),) + \
        tuple(slice(None, None, r) for r in rhs_dilation)
    return view[sel]


def _grouped_matmul(win, w, groups: int, split_batch: bool):
    """Contracts windows (N, *out, C, *K) with kernels (O, I, *K) in `groups` groups.

    With `split_batch` the groups split the lhs batch (batch_group_count); otherwise they split the input features
    (feature_group_count). Returns (N_out, *out, O).
    """
    n = win.shape[0]
    nsp = w.ndim - 2
    out_sp = win.shape[1:1 + nsp]
    c = win.shape[1 + nsp]
    o = w.shape[0]
    k_sp = w.shape[2:]
    taps = int(np.prod(k_sp, dtype=np.int64))
    positions = int(np.prod(out_sp, dtype=np.int64))
    og = o // groups
    if split_batch:
        nb, cg = n // groups, c
        g_win = win.reshape((groups, nb) + out_sp + (c,) + k_sp)
    else:
        nb, cg = n, c // groups
        g_win = win.reshape((n,) + out_sp + (groups, cg) + k_sp)
        g_win = np.moveaxis(g_win, 1 + nsp, 0)  # (G, N, *out, Cg, *K)
    # (G, Nb, *out, *K, Cg): taps outer, features inner.
    g_win = np.moveaxis(g_win, 2 + nsp, g_win.ndim - 1)
    kernel = w.reshape((groups, og, cg) + k_sp)
    # (G, *K, Cg, Og), contiguous: np.matmul only uses BLAS for well-strided operands.
    kernel = np.ascontiguousarray(np.moveaxis(kernel, (1, 2), (-1, -2))).reshape(groups, taps * cg, og)

    out = np.empty((groups, nb, positions, og), np.result_type(g_win.dtype, kernel.dtype))
    per_item = positions * taps * cg * groups
    chunk = max(1, min(nb, _MAX_PATCH_ELEMENTS // max(per_item, 1)))
    for start in range(0, nb, chunk):
        stop = min(nb, start + chunk)
        patches = np.ascontiguousarray(g_win[:, start:stop]).reshape(groups, (stop - start) * positions, taps * cg)
        out[:, start:stop] = np.matmul(patches, kernel).reshape(groups, stop - start, positions, og)
    out = out.reshape((groups, nb) + out_sp + (og,))
    out = np.moveaxis(out, 0, -2)  # (Nb, *out, G, Og)
    return out.reshape((nb,) + out_sp + (o,))


def conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                         feature_group_count=1, batch_group_count=1, precision=None, preferred_element_type=None):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out_dtype = np.dtype(preferred_element_type) if preferred_element_type is not None else lhs.dtype
    cdt = _compute_dtype(np.result_type(lhs.dtype, rhs.dtype))
    # Channels-last and contiguous, so that every window row read below is a contiguous run of features (the
    # input is much smaller than the patch matrix built from it, so this copy is cheap).
    x = np.transpose(lhs, (lhs_spec[0],) + tuple(lhs_spec[2:]) + (lhs_spec[1],)).astype(cdt, copy=False)
    w = np.transpose(rhs, rhs_spec).astype(cdt, copy=False)
    cfg = [(0, 0, 0)] + [(lo, hi, d - 1) for (lo, hi), d in zip(padding, lhs_dilation)] + [(0, 0, 0)]
    if any(c != (0, 0, 0) for c in cfg):
        x = _pad(x, np.zeros((), cdt), padding_config=cfg)
    x = np.ascontiguousarray(x)

    groups = batch_group_count if batch_group_count > 1 else feature_group_count
    n_out = x.shape[0] // batch_group_count
    k_sp = w.shape[2:]
    spans = [(k - 1) * r + 1 for k, r in zip(k_sp, rhs_dilation)]
    out_sp = tuple(max(0, (s - sp) // st + 1) if s >= sp else 0
                   for s, sp, st in zip(x.shape[1:-1], spans, window_strides))
    if 0 in out_sp or n_out == 0 or w.shape[0] == 0:
        res = np.zeros((n_out,) + out_sp + (w.shape[0],), cdt)
    elif 0 in k_sp or x.shape[-1] == 0:
        res = np.zeros((n_out,) + out_sp + (w.shape[0],), cdt)
    else:
        win = _windows(x, k_sp, window_strides, rhs_dilation)
        res = _grouped_matmul(win, w, groups, split_batch=batch_group_count > 1)
    res = np.moveaxis(res, -1, 1)  # canonical (N, O, *out)
    res = np.transpose(res, np.argsort(out_spec))
    if out_dtype == np.bool_:
        return np.ascontiguousarray(res != 0)
    return np.ascontiguousarray(res).astype(out_dtype, copy=False)


register_impl(lc.conv_general_dilated_p, conv_general_dilated)

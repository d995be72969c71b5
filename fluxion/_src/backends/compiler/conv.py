"""A faster lowering of `conv_general_dilated` for the forms training programs use (a compiler lowering hint).

Forward convolutions and both of their gradients (which JAX's transpose rules express as convolutions with
permuted dimension numbers) are, for ungrouped convolutions without dilation, one matrix product between a *patch
matrix* and the reshaped kernel:

    out[n, p, o] = sum over taps k and features c of x_padded[n, p * stride + k, c] * w[k, c, o]

The patch matrix (N, *out_positions, *taps, C) is filled by copying strided blocks of the padded input: one block per
tap when there are fewer taps than output positions (forward and input-gradient convolutions: 9 copies for a 3x3
kernel), one block per output position otherwise (weight-gradient convolutions, whose "kernel" is the whole output
gradient: 9 copies for a 3x3 result instead of one per pixel). Each copy moves runs of C contiguous features. The
backend's general implementation (any grouping and dilation) is used for everything else.

Numerics: the same float32 products summed by BLAS as the general implementation (up to summation order).
"""

from __future__ import annotations

import itertools

import numpy as np

from . import ir
from .memory import FRESH

# Patch matrices are built and multiplied in batch chunks of about this many elements, which bounds memory and keeps
# a chunk's patches in cache between the copy and the product (measured, CPU time of the CNN's 14x14x32 -> 64
# convolution: 9.1 ms with 2**19-element chunks, 14.2 ms unchunked)...
MAX_PATCH_ELEMENTS = 1 << 19
# ...but every chunk gives the product at least this many rows (weight gradients have few positions per item).
MIN_ROWS = 512


def supported(eqn) -> bool:
    p = eqn.params
    lhs, rhs = eqn.invars
    dt = lhs.aval.dtype
    pref = p.get("preferred_element_type")
    return (p["feature_group_count"] == 1 and p["batch_group_count"] == 1
            and all(d == 1 for d in p["lhs_dilation"]) and all(d == 1 for d in p["rhs_dilation"])
            and dt in (np.float32, np.float64) and rhs.aval.dtype == dt
            and (pref is None or np.dtype(pref) == dt)
            and ir.size(lhs) > 0 and ir.size(rhs) > 0 and ir.size(eqn.outvars[0]) > 0)


def conv(lhs, rhs, *, window_strides, padding, dimension_numbers, out_shape):
    """The convolution of `lhs` with `rhs` (see the module docstring); `out_shape` is the result's shape."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    nsp = len(lhs_spec) - 2
    x = np.transpose(lhs, (lhs_spec[0],) + tuple(lhs_spec[2:]) + (lhs_spec[1],))     # (N, *sp, C)
    w = np.transpose(rhs, tuple(rhs_spec[2:]) + (rhs_spec[1], rhs_spec[0]))          # (*K, C, O)
    n, c = x.shape[0], x.shape[-1]
    ksp = w.shape[:nsp]
    o = w.shape[-1]
    # Zero padding (negative padding crops).
    if any(lo or hi for lo, hi in padding):
        crop = tuple(slice(max(-lo, 0), x.shape[1 + k] - max(-hi, 0)) for k, (lo, hi) in enumerate(padding))
        x = x[(slice(None),) + crop]
        pads = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
        xp = np.zeros((n,) + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[1:-1], pads)) + (c,), x.dtype)
        xp[(slice(None),) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[1:-1], pads))] = x
        x = xp
    out_sp = tuple(max(0, (s - k) // st + 1) for s, k, st in zip(x.shape[1:-1], ksp, window_strides))
    positions = int(np.prod(out_sp, dtype=np.int64))
    taps = int(np.prod(ksp, dtype=np.int64))
    wmat = np.ascontiguousarray(w).reshape(taps * c, o)
    res = np.empty((n, positions, o), np.result_type(x.dtype, w.dtype))
    chunk = max(1, min(n, max(MAX_PATCH_ELEMENTS // max(positions * taps * c, 1), -(-MIN_ROWS // positions))))
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        xs = x[start:stop]
        patches = np.empty((stop - start,) + out_sp + ksp + (c,), x.dtype)
        if taps <= positions:
            for tap in itertools.product(*(range(k) for k in ksp)):
                src = tuple(slice(t, t + st * (m - 1) + 1, st) for t, st, m in zip(tap, window_strides, out_sp))
                patches[(slice(None),) + (slice(None),) * nsp + tap] = xs[(slice(None),) + src]
        else:
            for pos in itertools.product(*(range(m) for m in out_sp)):
                src = tuple(slice(q * st, q * st + k) for q, st, k in zip(pos, window_strides, ksp))
                patches[(slice(None),) + pos] = xs[(slice(None),) + src]
        np.matmul(patches.reshape((stop - start) * positions, taps * c), wmat,
                  out=res[start:stop].reshape((stop - start) * positions, o))
    res = res.reshape((n,) + out_sp + (o,))
    res = np.moveaxis(res, -1, 1)  # canonical (N, O, *out)
    out = np.ascontiguousarray(np.transpose(res, np.argsort(out_spec)))
    assert out.shape == tuple(out_shape), (out.shape, out_shape)
    return out


def lower_conv(g, eqn, ins, outs, fallback):
    if not supported(eqn):
        return fallback(g, eqn, ins, outs)
    p = eqn.params
    fn = g.bind(conv, "conv_patches")
    dn = g.bind(tuple(tuple(s) for s in p["dimension_numbers"]), "conv_dims")
    g.line(f"{outs[0]} = {fn}({ins[0]}, {ins[1]}, window_strides={tuple(p['window_strides'])!r}, "
           f"padding={tuple(tuple(x) for x in p['padding'])!r}, dimension_numbers={dn}, "
           f"out_shape={eqn.outvars[0].aval.shape!r})")
    return [FRESH]

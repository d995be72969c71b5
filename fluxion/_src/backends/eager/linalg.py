"""NumPy/SciPy implementations of the linear-algebra primitives (all accept leading batch dimensions)."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ...lax import linalg as la
from . import register_impl


def _compute_dtype(x):
    x = np.asarray(x)
    return x.astype(np.float32) if x.dtype.itemsize < 4 and x.dtype.kind == "f" or x.dtype.name == "bfloat16" else x


def cholesky(a):
    a = np.asarray(a)
    try:
        return np.linalg.cholesky(_compute_dtype(a)).astype(a.dtype)
    except np.linalg.LinAlgError:
        # As XLA: a matrix that is not positive definite gives NaNs rather than an exception.
        return np.full(a.shape, np.nan, a.dtype)


register_impl(la.cholesky_p, cholesky)


def triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a, b = np.asarray(a), np.asarray(b)
    dt = b.dtype
    a = np.conj(a) if conjugate_a else a
    batch = a.shape[:-2]
    out = np.empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], dt)
    aa = np.broadcast_to(a, out.shape[:-2] + a.shape[-2:])
    bb = np.broadcast_to(b, out.shape)
    for idx in np.ndindex(*out.shape[:-2]) if out.ndim > 2 else [()]:
        ai, bi = aa[idx], bb[idx]
        if left_side:
            out[idx] = scipy.linalg.solve_triangular(ai, bi, trans=1 if transpose_a else 0, lower=lower,
                                                     unit_diagonal=unit_diagonal)
        else:
            # x a = b  <=>  a^T x^T = b^T
            out[idx] = scipy.linalg.solve_triangular(ai, bi.T, trans=0 if transpose_a else 1, lower=lower,
                                                     unit_diagonal=unit_diagonal).T
    del batch
    return out


register_impl(la.triangular_solve_p, triangular_solve)


def solve(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.linalg.solve(_compute_dtype(a), _compute_dtype(b)).astype(b.dtype)


register_impl(la.solve_p, solve)


def det(a):
    a = np.asarray(a)
    return np.linalg.det(_compute_dtype(a)).astype(a.dtype)


register_impl(la.det_p, det)


def slogdet(a):
    a = np.asarray(a)
    sign, logabs = np.linalg.slogdet(_compute_dtype(a))
    return [sign.astype(a.dtype), logabs.astype(np.real(np.zeros((), a.dtype)).dtype)]


register_impl(la.slogdet_p, slogdet)


def eigh(a, *, lower=True):
    a = np.asarray(a)
    w, v = np.linalg.eigh(_compute_dtype(a), UPLO="L" if lower else "U")
    return [v.astype(a.dtype), w.astype(np.real(np.zeros((), a.dtype)).dtype)]


register_impl(la.eigh_p, eigh)


def qr(a, *, full_matrices):
    a = np.asarray(a)
    q, r = np.linalg.qr(_compute_dtype(a), mode="complete" if full_matrices else "reduced")
    return [q.astype(a.dtype), r.astype(a.dtype)]


register_impl(la.qr_p, qr)


def svd(a, *, full_matrices, compute_uv):
    a = np.asarray(a)
    rdt = np.real(np.zeros((), a.dtype)).dtype
    if not compute_uv:
        return [np.linalg.svd(_compute_dtype(a), compute_uv=False).astype(rdt)]
    u, s, vh = np.linalg.svd(_compute_dtype(a), full_matrices=full_matrices)
    return [s.astype(rdt), u.astype(a.dtype), vh.astype(a.dtype)]


register_impl(la.svd_p, svd)

"""NumPy/SciPy implementations of the linear-algebra primitives (all accept leading batch dimensions).

None of them raises on a singular, indefinite or non-finite matrix: like XLA they return inf/NaN, so one bad matrix
in a batch (or under vmap) does not abort the others. The batched NumPy call runs first; when LAPACK reports a
failure for some matrix the batch is redone one matrix at a time, with these results for the failed ones:

* solve (and inv, which solves against the identity): LAPACK's LU factorization (getrf) and substitution (getrs)
  without the singularity check, which is what XLA runs, so the inf/NaN pattern is the same as JAX's (for the
  matrix [[1, 2], [2, 4]], inv gives [[-inf, inf], [inf, -inf]]).
* triangular_solve: BLAS trsm, which divides by a zero diagonal instead of rejecting it (as XLA).
* cholesky of a matrix that is not positive definite: NaN on and below the diagonal, 0 above (as JAX).
* svd and eigh that do not converge (NaN input): NaN in every output.
* slogdet of a NaN matrix: sign NaN as well as log|det| (NumPy reports sign 1).
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import scipy.linalg
from scipy.linalg import blas

from ...lax import linalg as la
from . import register_impl

_LinAlgError = np.linalg.LinAlgError


def _compute_dtype(x):
    x = np.asarray(x)
    return x.astype(np.float32) if x.dtype.itemsize < 4 and x.dtype.kind == "f" or x.dtype.name == "bfloat16" else x


def _real_dtype(dt):
    return np.real(np.zeros((), dt)).dtype


@contextlib.contextmanager
def _quiet():
    """Silences NumPy's floating-point warnings and SciPy's singular-matrix warnings (XLA warns about neither)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _batch_indices(batch_shape):
    return np.ndindex(*batch_shape) if batch_shape else [()]


def _each_matrix(fn, *arrays, out_shapes, out_dtypes):
    """Applies `fn(*matrices) -> tuple of outputs` to each matrix of the broadcast batch of `arrays`."""
    batch = np.broadcast_shapes(*[a.shape[:-2] for a in arrays])
    outs = [np.empty(batch + s, d) for s, d in zip(out_shapes, out_dtypes)]
    full = [np.broadcast_to(a, batch + a.shape[-2:]) for a in arrays]
    for idx in _batch_indices(batch):
        for o, r in zip(outs, fn(*[f[idx] for f in full])):
            o[idx] = r
    return outs


def cholesky(a):
    a = np.asarray(a)
    x = _compute_dtype(a)
    with _quiet():
        try:
            return np.linalg.cholesky(x).astype(a.dtype)
        except _LinAlgError:
            pass

        def one(m):
            try:
                return (np.linalg.cholesky(m),)
            except _LinAlgError:
                n = m.shape[-1]
                return (np.where(np.tril(np.ones((n, n), bool)), np.nan, 0).astype(m.dtype),)

        return _each_matrix(one, x, out_shapes=[x.shape[-2:]], out_dtypes=[x.dtype])[0].astype(a.dtype)


register_impl(la.cholesky_p, cholesky)


def triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a, b = np.asarray(a), np.asarray(b)
    dt = b.dtype
    a = np.conj(a) if conjugate_a else a
    ac, bc = _compute_dtype(a), _compute_dtype(b)
    trsm = blas.get_blas_funcs("trsm", (ac, bc))
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = np.empty(batch + b.shape[-2:], bc.dtype)
    aa = np.broadcast_to(ac, batch + a.shape[-2:])
    bb = np.broadcast_to(bc, out.shape)
    with _quiet():
        for idx in _batch_indices(batch):
            # op(a) x = b (side 0) or x op(a) = b (side 1); trsm never checks the diagonal for zeros.
            out[idx] = trsm(1.0, aa[idx], bb[idx], side=0 if left_side else 1, lower=int(bool(lower)),
                            trans_a=1 if transpose_a else 0, diag=int(bool(unit_diagonal)))
    return out.astype(dt)


register_impl(la.triangular_solve_p, triangular_solve)


def _lu_solve(m, rhs):
    lu, piv = scipy.linalg.lu_factor(m, check_finite=False)
    return (scipy.linalg.lu_solve((lu, piv), rhs, check_finite=False),)


def solve(a, b):
    a, b = np.asarray(a), np.asarray(b)
    ac, bc = _compute_dtype(a), _compute_dtype(b)
    with _quiet():
        try:
            return np.linalg.solve(ac, bc).astype(b.dtype)
        except _LinAlgError:
            pass
        dt = np.result_type(ac, bc)
        return _each_matrix(_lu_solve, ac.astype(dt), bc.astype(dt), out_shapes=[b.shape[-2:]],
                            out_dtypes=[dt])[0].astype(b.dtype)


register_impl(la.solve_p, solve)


def det(a):
    a = np.asarray(a)
    with _quiet():
        return np.asarray(np.linalg.det(_compute_dtype(a))).astype(a.dtype)


register_impl(la.det_p, det)


def slogdet(a):
    a = np.asarray(a)
    with _quiet():
        sign, logabs = np.linalg.slogdet(_compute_dtype(a))
    sign = np.where(np.isnan(logabs), np.nan, sign)
    return [np.asarray(sign).astype(a.dtype), np.asarray(logabs).astype(_real_dtype(a.dtype))]


register_impl(la.slogdet_p, slogdet)


def eigh(a, *, lower=True):
    a = np.asarray(a)
    x = _compute_dtype(a)
    uplo = "L" if lower else "U"
    with _quiet():
        try:
            w, v = np.linalg.eigh(x, UPLO=uplo)
        except _LinAlgError:
            n = x.shape[-1]
            rdt = _real_dtype(x.dtype)

            def one(m):
                try:
                    return np.linalg.eigh(m, UPLO=uplo)
                except _LinAlgError:
                    return np.full(n, np.nan, rdt), np.full((n, n), np.nan, x.dtype)

            w, v = _each_matrix(one, x, out_shapes=[(n,), (n, n)], out_dtypes=[rdt, x.dtype])
    return [v.astype(a.dtype), w.astype(_real_dtype(a.dtype))]


register_impl(la.eigh_p, eigh)


def qr(a, *, full_matrices):
    a = np.asarray(a)
    with _quiet():
        q, r = np.linalg.qr(_compute_dtype(a), mode="complete" if full_matrices else "reduced")
    return [q.astype(a.dtype), r.astype(a.dtype)]


register_impl(la.qr_p, qr)


def svd(a, *, full_matrices, compute_uv):
    a = np.asarray(a)
    x = _compute_dtype(a)
    rdt = _real_dtype(x.dtype)
    m, n = x.shape[-2:]
    k = min(m, n)
    with _quiet():
        if not compute_uv:
            try:
                s = np.linalg.svd(x, compute_uv=False)
            except _LinAlgError:
                def one(mat):
                    try:
                        return (np.linalg.svd(mat, compute_uv=False)[None],)
                    except _LinAlgError:
                        return (np.full((1, k), np.nan, rdt),)
                s = _each_matrix(one, x, out_shapes=[(1, k)], out_dtypes=[rdt])[0][..., 0, :]
            return [s.astype(_real_dtype(a.dtype))]
        try:
            u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
        except _LinAlgError:
            ushape = (m, m if full_matrices else k)
            vshape = (n if full_matrices else k, n)

            def one(mat):
                try:
                    uu, ss, vv = np.linalg.svd(mat, full_matrices=full_matrices)
                    return uu, ss[None], vv
                except _LinAlgError:
                    return (np.full(ushape, np.nan, x.dtype), np.full((1, k), np.nan, rdt),
                            np.full(vshape, np.nan, x.dtype))

            u, s, vh = _each_matrix(one, x, out_shapes=[ushape, (1, k), vshape], out_dtypes=[x.dtype, rdt, x.dtype])
            s = s[..., 0, :]
    return [s.astype(_real_dtype(a.dtype)), u.astype(a.dtype), vh.astype(a.dtype)]


register_impl(la.svd_p, svd)


def _schur(a):
    x = _compute_dtype(a)
    # A real matrix gets the real (quasi-triangular) form, a complex one the triangular form, as LAPACK's gees.
    output = "complex" if np.iscomplexobj(x) else "real"
    t, z = _each_matrix(lambda m: scipy.linalg.schur(m, output=output), x, out_shapes=[x.shape[-2:]] * 2,
                        out_dtypes=[x.dtype] * 2)
    return [t.astype(a.dtype), z.astype(a.dtype)]


register_impl(la.schur_p, _schur)


def _hessenberg(a):
    x = _compute_dtype(a)
    h, q = _each_matrix(lambda m: scipy.linalg.hessenberg(m, calc_q=True), x, out_shapes=[x.shape[-2:]] * 2,
                        out_dtypes=[x.dtype] * 2)
    return [h.astype(a.dtype), q.astype(a.dtype)]


register_impl(la.hessenberg_p, _hessenberg)

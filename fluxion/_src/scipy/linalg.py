"""`fluxion.scipy.linalg`: SciPy's dense linear algebra (mirrors `jax.scipy.linalg`).

Factorizations come from the `lax.linalg` primitives (cholesky, triangular_solve, eigh, qr, svd) and `jnp.linalg`;
LU with partial pivoting, which has no primitive, is written out as Gaussian elimination over the (static) columns
with `jnp` operations, so it is differentiable and works under jit and vmap. Every function accepts leading batch
dimensions like JAX's. SciPy's `overwrite_*` and `check_finite` arguments are accepted and ignored (arrays are
immutable and nothing is checked, as in JAX).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import dtypes
from ..api import jvp
from ..numpy.util import broadcast_shapes


def _inexact(name: str, a: Any) -> Any:
    a = jnp.asarray(a)
    if not dtypes.is_inexact(a.dtype):
        a = a.astype(dtypes.default_float_dtype())
    return a


def _square(name: str, a: Any) -> Any:
    a = _inexact(name, a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected a (stack of) square matrices, got shape {a.shape}")
    return a


def _promote(a, b):
    dt = jnp.result_type(a.dtype, b.dtype)
    return a.astype(dt), b.astype(dt)


def _solve_tri(a, b, *, lower, trans=False, conj=False, unit=False):
    """Triangular solve a x = b with b of shape (..., n) or (..., n, k), broadcasting the batch dimensions."""
    vector = b.ndim == a.ndim - 1
    bm = b[..., None] if vector else b
    batch = broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    a_b = jnp.broadcast_to(a, batch + a.shape[-2:])
    b_b = jnp.broadcast_to(bm, batch + bm.shape[-2:])
    x = lax.linalg.triangular_solve(a_b, b_b, left_side=True, lower=lower, transpose_a=trans, conjugate_a=conj,
                                    unit_diagonal=unit)
    return x[..., 0] if vector else x


# --- Cholesky -----------------------------------------------------------------------------------------------------

def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The Cholesky factor of a symmetric (Hermitian) positive-definite matrix: upper U with a = U^H U by default
    (SciPy's convention), lower L with a = L L^H if `lower`. Only the lower triangle of `a` is read after
    symmetrization (as JAX). A matrix that is not positive definite gives NaNs (no error is raised, as JAX)."""
    a = _square("cholesky", a)
    chol = lax.linalg.cholesky(a)
    return chol if lower else jnp.conj(jnp.swapaxes(chol, -1, -2))


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    """(c, lower) for `cho_solve`: c is the Cholesky factor in the requested triangle and zeros in the other."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple, b: Any, overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """Solves a x = b given `cho_factor(a)`; b is (..., n) or (..., n, k).

    Raises:
      ValueError: if `c_and_lower` is not a (factor, lower) pair.
    """
    try:
        c, lower = c_and_lower
    except (TypeError, ValueError):
        raise ValueError("cho_solve: c_and_lower must be the (c, lower) pair returned by cho_factor") from None
    c, b = _promote(_square("cho_solve", c), _inexact("cho_solve", b))
    if lower:  # a = L L^H: L y = b, then L^H x = y
        y = _solve_tri(c, b, lower=True)
        return _solve_tri(c, y, lower=True, trans=True, conj=True)
    y = _solve_tri(c, b, lower=False, trans=True, conj=True)  # a = U^H U
    return _solve_tri(c, y, lower=False)


_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False), 2: (True, True),
          "C": (True, True)}


def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug: Any = None, check_finite: bool = True) -> Any:
    """Solves a x = b (trans 0/"N"), a^T x = b (1/"T") or a^H x = b (2/"C") for triangular a, reading only its
    `lower` (or upper) triangle; `unit_diagonal` takes the diagonal as ones. b is (..., n) or (..., n, k).

    Raises:
      ValueError: for an unknown `trans`, or shapes that do not match.
    """
    if trans not in _TRANS:
        raise ValueError(f"solve_triangular: invalid trans {trans!r}; expected 0, 1, 2, 'N', 'T' or 'C'")
    transpose, conj = _TRANS[trans]
    a, b = _promote(_square("solve_triangular", a), _inexact("solve_triangular", b))
    if b.ndim < a.ndim - 1 or b.shape[a.ndim - 2 if b.ndim >= a.ndim else -1] != a.shape[-1]:
        raise ValueError(f"solve_triangular: incompatible shapes a {a.shape} and b {b.shape}")
    return _solve_tri(a, b, lower=lower, trans=transpose, conj=conj, unit=unit_diagonal)


# --- LU -----------------------------------------------------------------------------------------------------------

def _lu_decompose(a):
    """Doolittle elimination with partial pivoting (Golub & Van Loan, "Matrix Computations", Alg. 3.4.1).

    Returns (lu, pivots, permutation): `lu` packs the unit-lower L below the diagonal and U on and above it;
    `pivots[k]` is the row swapped with row k at step k (LAPACK's getrf convention, 0-based); `permutation` is the
    resulting row order, so a[permutation] = L U.
    """
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    rows = jnp.arange(m)[:, None]
    cols = jnp.arange(n)[None, :]
    perm = jnp.broadcast_to(jnp.arange(m, dtype=np.int32), batch + (m,))
    pivots = []
    for k in range(min(m, n)):
        # The pivot's choice is piecewise constant in a: it carries no derivative.
        magnitude = lax.stop_gradient(jnp.abs(a[..., :, k]))
        magnitude = jnp.where(jnp.arange(m) >= k, magnitude, -1)
        p = jnp.argmax(magnitude, axis=-1).astype(np.int32)
        pivots.append(p)
        row_k = a[..., k:k + 1, :]
        row_p = jnp.take_along_axis(a, p[..., None, None], axis=-2)
        is_k, is_p = rows == k, rows == p[..., None, None]
        a = jnp.where(is_k, row_p, jnp.where(is_p, row_k, a))
        perm_k, perm_p = perm[..., k:k + 1], jnp.take_along_axis(perm, p[..., None], axis=-1)
        idx = jnp.arange(m)
        perm = jnp.where(idx == k, perm_p, jnp.where(idx == p[..., None], perm_k, perm))
        pivot = a[..., k:k + 1, k:k + 1]
        # A zero pivot (singular matrix) leaves its column unscaled, as LAPACK does (U then has a zero diagonal).
        safe_pivot = jnp.where(pivot == 0, jnp.ones_like(pivot), pivot)
        factors = a[..., :, k:k + 1] / safe_pivot
        below = rows > k
        a = jnp.where(below & (cols > k), a - factors * a[..., k:k + 1, :], a)
        a = jnp.where(below & (cols == k), factors, a)
    piv = jnp.stack(pivots, axis=-1) if pivots else jnp.zeros(batch + (0,), np.int32)
    return a, piv, perm


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    """LU factorization with partial pivoting, packed as SciPy's (lu, piv): `lu` holds U and the strictly lower
    part of unit-lower L; row k was swapped with row piv[k] (int32) at step k. Works for (..., m, n) matrices."""
    a = _inexact("lu_factor", a)
    if a.ndim < 2:
        raise ValueError(f"lu_factor: expected a (stack of) matrices, got shape {a.shape}")
    lu_, piv, _ = _lu_decompose(a)
    return lu_, piv


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    """The LU factorization a = P L U with partial pivoting: (p, l, u), or (p l, u) with `permute_l`.

    For an (m, n) matrix, with k = min(m, n): p is (m, m), l is (m, k) unit lower triangular, u is (k, n).
    """
    a = _inexact("lu", a)
    if a.ndim < 2:
        raise ValueError(f"lu: expected a (stack of) matrices, got shape {a.shape}")
    m, n = a.shape[-2:]
    k = min(m, n)
    packed, _, perm = _lu_decompose(a)
    lower = jnp.tril(packed[..., :, :k], -1) + jnp.eye(m, k, dtype=a.dtype)
    upper = jnp.triu(packed[..., :k, :])
    # a[perm] = L U, so a = P L U with P[perm[i], i] = 1.
    p = (perm[..., None, :] == jnp.arange(m)[:, None]).astype(a.dtype)
    if permute_l:
        return jnp.matmul(p, lower), upper
    return p, lower, upper


def _apply_pivots(b, piv, vector):
    """Replays the row swaps of `lu_factor` on b (rows along axis -1 for a vector b, else axis -2)."""
    bm = b[..., None] if vector else b
    n = bm.shape[-2]
    rows = jnp.arange(n)[:, None]
    for k in range(piv.shape[-1]):
        p = piv[..., k]
        row_k = bm[..., k:k + 1, :]
        row_p = jnp.take_along_axis(bm, jnp.broadcast_to(p[..., None, None], bm.shape[:-2] + (1, bm.shape[-1])),
                                    axis=-2)
        bm = jnp.where(rows == k, row_p, jnp.where(rows == p[..., None, None], row_k, bm))
    return bm[..., 0] if vector else bm


def _unapply_pivots(b, piv, vector):
    bm = b[..., None] if vector else b
    n = bm.shape[-2]
    rows = jnp.arange(n)[:, None]
    for k in reversed(range(piv.shape[-1])):
        p = piv[..., k]
        row_k = bm[..., k:k + 1, :]
        row_p = jnp.take_along_axis(bm, jnp.broadcast_to(p[..., None, None], bm.shape[:-2] + (1, bm.shape[-1])),
                                    axis=-2)
        bm = jnp.where(rows == k, row_p, jnp.where(rows == p[..., None, None], row_k, bm))
    return bm[..., 0] if vector else bm


def lu_solve(lu_and_piv: tuple, b: Any, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Any:
    """Solves a x = b (trans 0), a^T x = b (1) or a^H x = b (2) from `lu_factor(a)`; b is (n,) / (n, k) (with
    batch dimensions matching the factor's).

    Raises:
      ValueError: for an unknown `trans` or mismatched shapes.
    """
    lu_, piv = lu_and_piv
    lu_, b = _promote(_square("lu_solve", lu_), _inexact("lu_solve", b))
    piv = jnp.asarray(piv)
    if trans not in (0, 1, 2):
        raise ValueError(f"lu_solve: invalid trans {trans!r}; expected 0, 1 or 2")
    vector = b.ndim == lu_.ndim - 1
    n = lu_.shape[-1]
    if (b.shape[-1] if vector else b.shape[-2]) != n:
        raise ValueError(f"lu_solve: incompatible shapes: lu {lu_.shape}, b {b.shape}")
    if trans == 0:  # P L U x = b with P^T = the recorded swaps: L U x = swaps(b)
        y = _solve_tri(lu_, _apply_pivots(b, piv, vector), lower=True, unit=True)
        return _solve_tri(lu_, y, lower=False)
    conj = trans == 2  # a^T = U^T L^T P^T: U^T z = b, L^T w = z, x = P w (the swaps undone in reverse)
    z = _solve_tri(lu_, b, lower=False, trans=True, conj=conj)
    w = _solve_tri(lu_, z, lower=True, trans=True, conj=conj, unit=True)
    return _unapply_pivots(w, piv, vector)


# --- solve, inv, det ----------------------------------------------------------------------------------------------

_ASSUME_A = ("gen", "general", "sym", "symmetric", "her", "hermitian", "pos", "positive definite")


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen") -> Any:
    """Solves a x = b; b is (..., n) or (..., n, k). `assume_a="pos"` uses the Cholesky factorization of the
    `lower` (or upper) triangle; "gen", "sym" and "her" use the general LU solver.

    Raises:
      ValueError: for an unknown `assume_a`.
    """
    if assume_a not in _ASSUME_A:
        raise ValueError(f"solve: expected assume_a to be one of {_ASSUME_A}, got {assume_a!r}")
    a, b = _promote(_square("solve", a), _inexact("solve", b))
    if assume_a in ("pos", "positive definite"):
        # Only the `lower` (or upper) triangle is read: mirror it into a symmetric matrix first.
        tri = jnp.tril(a) if lower else jnp.triu(a)
        diag = jnp.tril(jnp.triu(a))
        full = tri + jnp.conj(jnp.swapaxes(tri, -1, -2)) - diag
        return cho_solve(cho_factor(full, lower=True), b)
    return jnp.linalg.solve(a, b)


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The inverse of a square matrix (or a stack of them)."""
    return jnp.linalg.inv(_square("inv", a))


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The determinant of a square matrix (or a stack of them)."""
    return jnp.linalg.det(_square("det", a))


# --- eigh, qr, svd ------------------------------------------------------------------------------------------------

def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals: None = None, type: int = 1,  # noqa: A002
         check_finite: bool = True) -> Any:
    """Eigenvalues (ascending) and eigenvectors (columns) of a symmetric/Hermitian matrix, reading its `lower`
    (or upper) triangle: (w, v), or w alone with `eigvals_only`.

    Raises:
      NotImplementedError: for the generalized problem (`b` given) or `eigvals` (as JAX).
    """
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if type != 1:
        raise NotImplementedError("Only the type=1 case of eigh is implemented.")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    a = _square("eigh", a)
    v, w = lax.linalg.eigh(a, lower=lower)
    return w if eigvals_only else (w, v)


def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True) -> tuple:
    """The QR factorization a = Q R: mode "full" gives (Q (m, m), R (m, n)); "economic" gives (Q (m, k),
    R (k, n)) with k = min(m, n); "r" gives the 1-tuple (R,) as SciPy does.

    Raises:
      NotImplementedError: for `pivoting=True` or mode "raw" (as JAX). ValueError: for another mode.
    """
    if pivoting:
        raise NotImplementedError("qr: pivoting=True is not implemented")
    if mode == "raw":
        raise NotImplementedError("qr: mode='raw' is not implemented")
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"qr: unsupported mode {mode!r}; expected 'full', 'economic' or 'r'")
    a = _inexact("qr", a)
    if a.ndim < 2:
        raise ValueError(f"qr: expected a (stack of) matrices, got shape {a.shape}")
    q, r = lax.linalg.qr(a, full_matrices=mode != "economic")
    return (r,) if mode == "r" else (q, r)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd") -> Any:
    """The singular value decomposition a = U diag(s) Vh: (U, s, Vh), or s alone without `compute_uv`.
    `lapack_driver` is accepted for compatibility and ignored."""
    a = _inexact("svd", a)
    if a.ndim < 2:
        raise ValueError(f"svd: expected a (stack of) matrices, got shape {a.shape}")
    return jnp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def qr_multiply(a: Any, c: Any, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False) -> tuple:
    """The QR factorization a = Q R together with a product by Q: returns (Q @ c, R) for mode "left" and
    (c @ Q, R) for mode "right", with conj(Q) in place of Q if `conjugate`.

    a is (..., M, N) and K = min(M, N); R is (..., K, N). For "left", c is (..., K, P) (a 1-D c is a column) and
    the product is (..., M, P); for "right", c is (..., P, M) (a 1-D c is a row) and the product, c @ Q restricted
    to Q's first K columns, is (..., P, K). Batch dimensions broadcast. Q is the economic factor of `qr`, so the
    signs follow LAPACK's Householder convention (as JAX's and SciPy's). Unlike JAX's (LAPACK's geqrf/ormqr have
    no derivative rules there), it is differentiable wherever `qr` is, i.e. for M >= N.

    Raises:
      ValueError: for an unknown mode or shapes that do not fit. NotImplementedError: for `pivoting=True`
      (fluxion's QR does not pivot).
    """
    if mode not in ("right", "left"):
        raise ValueError(f"qr_multiply: mode must be 'right' or 'left', got {mode!r}")
    if pivoting:
        raise NotImplementedError("qr_multiply: pivoting=True is not implemented (fluxion's QR does not pivot)")
    a, c = _promote(_inexact("qr_multiply", a), _inexact("qr_multiply", c))
    if a.ndim < 2:
        raise ValueError(f"qr_multiply: a must be a (stack of) matrices, got shape {a.shape}")
    vector = c.ndim == 1
    if vector:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = a.shape[-2:]
    k = min(m, n)
    if mode == "left" and c.shape[-2] != k:
        raise ValueError(f"qr_multiply: shapes are not compatible for Q @ c: a has shape {a.shape}, so Q has {k} "
                         f"columns, but c has {c.shape[-2]} rows")
    if mode == "right" and c.shape[-1] != m:
        raise ValueError(f"qr_multiply: shapes are not compatible for c @ Q: a has shape {a.shape}, so Q has {m} "
                         f"rows, but c has {c.shape[-1]} columns")
    q, r = lax.linalg.qr(a, full_matrices=False)
    if conjugate:
        q = jnp.conj(q)
    out = jnp.matmul(q, c) if mode == "left" else jnp.matmul(c, q)
    return (out.reshape(-1) if vector else out), r


# --- expm ---------------------------------------------------------------------------------------------------------

# Coefficients b_0..b_13 of the [13/13] Pade approximant of exp and its scaling threshold theta_13
# (Higham, "The scaling and squaring method for the matrix exponential revisited", SIAM J. Matrix Anal. Appl.
# 26(4), 2005, Table 2.3 and Algorithm 2.3).
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0,
           1.0)
_THETA13 = 5.371920351148152


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:  # noqa: N803
    """The matrix exponential by scaling and squaring with the degree-13 Pade approximant (Higham 2005).

    The matrix is scaled by 2^-s, with s = ceil(log2(||A||_1 / theta_13)) clipped to [0, max_squarings], and the
    approximant is squared s times; every squaring is computed and kept or discarded by a select, so the function
    has a fixed structure under jit and is differentiable. Differences from JAX: the degree is always 13 (JAX picks
    a lower degree for small norms; results agree to rounding); if ||A|| needs more than `max_squarings` squarings
    the result is inaccurate rather than NaN. `upper_triangular` is accepted and ignored.
    """
    a = _square("expm", A)
    n = a.shape[-1]
    norm1 = jnp.max(jnp.sum(jnp.abs(a), axis=-2), axis=-1)
    norm1 = lax.stop_gradient(norm1)  # s is piecewise constant in A
    s = jnp.ceil(jnp.log2(jnp.maximum(norm1 / _THETA13, 1.0)))
    s = jnp.clip(s, 0, max_squarings)
    scaled = a / jnp.exp2(s)[..., None, None].astype(a.dtype)
    eye = jnp.eye(n, dtype=a.dtype)
    a2 = scaled @ scaled
    a4 = a2 @ a2
    a6 = a4 @ a2
    b = _PADE13
    u_inner = a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye
    u = scaled @ u_inner
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    r = jnp.linalg.solve(v - u, v + u)
    for i in range(max_squarings):
        r = jnp.where((i < s)[..., None, None], r @ r, r)
    return r


def expm_frechet(A: Any, E: Any, *, method: str | None = None, compute_expm: bool = True) -> Any:  # noqa: N803
    """The Frechet derivative of the matrix exponential at A in the direction E: (expm(A), L(A, E)), or L(A, E)
    alone without `compute_expm`. Computed, as JAX does, as the forward-mode derivative (`jvp`) of `expm`, so it
    is itself differentiable. A and E are (..., n, n); `method` is accepted and ignored (SciPy's block-enlargement
    method and this one agree to rounding).

    Raises:
      ValueError: if A or E is not a (stack of) square matrices, or their shapes differ.
    """
    del method
    a, e = jnp.asarray(A), jnp.asarray(E)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"expm_frechet: expected A to be a (stack of) square matrices, got A.shape={a.shape}")
    if e.ndim < 2 or e.shape[-1] != e.shape[-2]:
        raise ValueError(f"expm_frechet: expected E to be a (stack of) square matrices, got E.shape={e.shape}")
    if a.shape != e.shape:
        raise ValueError(f"expm_frechet: expected A and E to have the same shape, got A.shape={a.shape}, "
                         f"E.shape={e.shape}")
    a, e = _promote(_inexact("expm_frechet", a), _inexact("expm_frechet", e))
    value, derivative = jvp(expm, (a,), (e,))
    return (value, derivative) if compute_expm else derivative


# --- eigh_tridiagonal ---------------------------------------------------------------------------------------------

def eigh_tridiagonal(d: Any, e: Any, *, eigvals_only: bool = False, select: str = "a",
                     select_range: tuple | None = None, tol: float | None = None, key: Any = None) -> Any:
    """Eigenvalues (ascending) and, unless `eigvals_only`, eigenvectors (columns) of the real symmetric
    tridiagonal matrix with diagonal d (n,) and off-diagonal e (n-1,). `select="i"` keeps the eigenvalues of
    indices select_range[0]..select_range[1] (inclusive, static).

    The tridiagonal matrix is formed densely and diagonalized by `lax.linalg.eigh` (LAPACK's symmetric solver);
    JAX instead bisects Sturm sequences and finds vectors by inverse iteration. Eigenvalues agree to rounding;
    each eigenvector is determined up to sign and the signs may differ from JAX's. `tol` and `key` (JAX's bisection
    tolerance and its inverse-iteration seed) are accepted and ignored. Unlike JAX's (whose bisection carries no
    derivative), the result is differentiable. Complex input uses the real part of d and |e| (the matrix is
    Hermitian-similar to that real one), as JAX; the eigenvectors are then those of the real matrix.

    Raises:
      TypeError: if d and e have different dtypes, or a dtype other than float32/float64/complex64/complex128.
      ValueError: for select="i" without a non-empty `select_range`, or an unknown `select`.
      NotImplementedError: for select="v" (as JAX).
    """
    del tol, key
    d, e = jnp.asarray(d), jnp.asarray(e)
    if d.dtype != e.dtype:
        raise TypeError(f"eigh_tridiagonal: diagonal and off-diagonal values must have the same dtype, got "
                        f"{d.dtype} and {e.dtype}")
    if d.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise TypeError(f"eigh_tridiagonal: only float32, float64, complex64 and complex128 inputs are supported, "
                        f"got {d.dtype}")
    if d.ndim != 1 or e.shape != (max(d.shape[0] - 1, 0),):
        raise ValueError(f"eigh_tridiagonal: expected d of shape (n,) and e of shape (n-1,), got {d.shape} and "
                         f"{e.shape}")
    if select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    if select not in ("a", "i"):
        raise ValueError(f"eigh_tridiagonal: select must be one of 'a', 'i' or 'v', got {select!r}")
    n = d.shape[0]
    if select == "i":
        if select_range is None:
            raise ValueError("eigh_tridiagonal: for select='i', select_range must be specified")
        lo, hi = int(select_range[0]), int(select_range[1])
        if lo > hi:
            raise ValueError("eigh_tridiagonal: empty index range in select_range")
    else:
        lo, hi = 0, n - 1
    if dtypes.is_complex(d.dtype):
        d, e = jnp.real(d), jnp.abs(e)
    matrix = jnp.diag(d)
    if n > 1:
        matrix = matrix + jnp.diag(e, 1) + jnp.diag(e, -1)
    vectors, values = lax.linalg.eigh(matrix)
    values, vectors = values[lo:hi + 1], vectors[:, lo:hi + 1]
    return values if eigvals_only else (values, vectors)


# --- block_diag ---------------------------------------------------------------------------------------------------

def block_diag(*arrs: Any) -> Any:
    """The block-diagonal matrix with the given blocks (0-d and 1-d arguments count as 1-row matrices, as SciPy);
    the dtype is the promotion of the blocks'. No arguments give a (1, 0) array.

    Raises:
      ValueError: if a block has more than 2 dimensions.
    """
    if not arrs:
        return jnp.zeros((1, 0))
    blocks = [jnp.atleast_2d(jnp.asarray(a)) for a in arrs]
    for i, blk in enumerate(blocks):
        if blk.ndim != 2:
            raise ValueError(f"block_diag: arguments must have 2 or fewer dimensions; argument {i} has shape "
                             f"{blk.shape}")
    dt = jnp.result_type(*blocks)
    width = sum(b.shape[1] for b in blocks)
    rows, col = [], 0
    for blk in blocks:
        rows.append(jnp.pad(blk.astype(dt), ((0, 0), (col, width - col - blk.shape[1]))))
        col += blk.shape[1]
    return jnp.concatenate(rows, axis=0)


# --- polar --------------------------------------------------------------------------------------------------------

def polar(a: Any, side: str = "right", *, method: str = "qdwh", eps: float | None = None,
          max_iterations: int | None = None) -> tuple:
    """The polar decomposition a = U P ("right", P = (a^H a)^(1/2)) or a = P U ("left"), with U having
    orthonormal columns (rows) and P positive semi-definite, both from the SVD a = W S Vh: U = W Vh.

    `method` ("qdwh" or "svd"), `eps` and `max_iterations` are accepted for JAX compatibility; the SVD is always
    used (JAX's QDWH iteration reaches the same factors to rounding).

    Raises:
      ValueError: for an unknown `side` or `method`, or a non-2-D input.
    """
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"polar: method must be 'qdwh' or 'svd', got {method!r}")
    a = _inexact("polar", a)
    if a.ndim != 2:
        raise ValueError(f"polar: expected a 2-D matrix, got shape {a.shape}")
    w, s, vh = jnp.linalg.svd(a, full_matrices=False)
    unitary = w @ vh
    if side == "right":
        p = (jnp.conj(vh.T) * s) @ vh
    else:
        p = (w * s) @ jnp.conj(w.T)
    return unitary, p


__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "eigh_tridiagonal", "expm",
           "expm_frechet", "inv", "lu", "lu_factor", "lu_solve", "polar", "qr", "qr_multiply", "solve",
           "solve_triangular", "svd"]

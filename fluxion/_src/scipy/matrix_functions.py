"""Schur-based matrix functions of `fluxion.scipy.linalg`: `rsf2csf`, `sqrtm`, `funm` and `solve_sylvester`.

Each starts from the Schur decomposition (`schur.py`) and then works on triangular matrices with `fluxion.numpy`
operations over the static matrix size. As in JAX, the functions that call `schur` are not differentiable (the
Schur primitive has no derivative rule); `rsf2csf` alone is an ordinary composition and differentiates.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import dtypes
from .schur import schur


def _complex_dtype(dt):
    return jnp.result_type(dt, np.complex64)


def _mH(x):  # noqa: N802 (the conjugate transpose of the last two axes)
    return jnp.conj(jnp.swapaxes(x, -1, -2))


# --- rsf2csf --------------------------------------------------------------------------------------------------------

def _rotate_rows(t, m, cs, sn):
    """Rows m-1, m of T, from column m-1 on, replaced by G @ rows with G = [[conj(cs), sn], [-sn, cs]]."""
    n = t.shape[-1]
    cs, sn = cs[..., None], sn[..., None]
    r0, r1 = t[..., m - 1, :], t[..., m, :]
    keep = jnp.arange(n) < m - 1
    new0 = jnp.where(keep, r0, jnp.conj(cs) * r0 + sn * r1)
    new1 = jnp.where(keep, r1, -sn * r0 + cs * r1)
    rows = jnp.arange(n)[:, None]
    return jnp.where(rows == m - 1, new0[..., None, :], jnp.where(rows == m, new1[..., None, :], t))


def _rotate_columns(x, m, cs, sn, limit):
    """Columns m-1, m of x (only rows <= `limit` unless it is None) replaced by columns @ G^H."""
    n = x.shape[-1]
    cs, sn = cs[..., None], sn[..., None]
    c0, c1 = x[..., :, m - 1], x[..., :, m]
    n0, n1 = cs * c0 + sn * c1, -jnp.conj(sn) * c0 + jnp.conj(cs) * c1
    if limit is not None:
        inside = jnp.arange(x.shape[-2]) <= limit
        n0, n1 = jnp.where(inside, n0, c0), jnp.where(inside, n1, c1)
    cols = jnp.arange(n)[None, :]
    return jnp.where(cols == m - 1, n0[..., :, None], jnp.where(cols == m, n1[..., :, None], x))


def rsf2csf(T: Any, Z: Any, check_finite: bool = True) -> tuple:  # noqa: N803 (SciPy's argument names)
    """Converts a real Schur form (T quasi-upper-triangular, Z orthogonal, A = Z T Z^T) into the complex one
    (T upper triangular, Z unitary, A = Z T Z^H): returns (T, Z), both complex.

    Each 2x2 diagonal block, from the bottom up, is triangularized by a complex Givens rotation built from one of
    the block's eigenvalues, applied to T's two rows and columns and to Z's two columns (the algorithm of SciPy's
    rsf2csf; see Golub & Van Loan, "Matrix Computations", 7.4). A subdiagonal entry below
    eps (|T[m-1, m-1]| + |T[m, m]|) is taken as zero. T and Z are (..., n, n); `check_finite` is ignored.

    Raises:
      ValueError: if T or Z is not square or their shapes differ.
    """
    t, z = jnp.asarray(T), jnp.asarray(Z)
    if t.ndim < 2 or t.shape[-1] != t.shape[-2]:
        raise ValueError(f"rsf2csf: input 'T' must be square, got shape {t.shape}")
    if z.ndim < 2 or z.shape[-1] != z.shape[-2]:
        raise ValueError(f"rsf2csf: input 'Z' must be square, got shape {z.shape}")
    if t.shape[-1] != z.shape[-1]:
        raise ValueError(f"rsf2csf: input array shapes must match: Z: {z.shape} vs. T: {t.shape}")
    dt = _complex_dtype(jnp.result_type(t, z) if dtypes.is_inexact(jnp.result_type(t, z))
                        else dtypes.default_float_dtype())
    t, z = t.astype(dt), z.astype(dt)
    batch = jnp.broadcast_shapes(t.shape[:-2], z.shape[:-2])
    t = jnp.broadcast_to(t, batch + t.shape[-2:])
    z = jnp.broadcast_to(z, batch + z.shape[-2:])
    n = t.shape[-1]
    eps = float(np.finfo(dt).eps)
    rows = jnp.arange(n)[:, None]
    cols = jnp.arange(n)[None, :]
    for m in range(n - 1, 0, -1):
        a, b = t[..., m - 1, m - 1], t[..., m - 1, m]
        c, d = t[..., m, m - 1], t[..., m, m]
        coupled = jnp.abs(c) > eps * (jnp.abs(a) + jnp.abs(d))
        # Uncoupled entries compute on the stand-in block [[0, 1], [-1, 0]] and are discarded: the real ones may
        # have c = 0, where |c| and the rotation are not differentiable (NaN would leak through the select).
        a, d = (jnp.where(coupled, v, jnp.zeros_like(v)) for v in (a, d))
        b, c = jnp.where(coupled, b, jnp.ones_like(b)), jnp.where(coupled, c, -jnp.ones_like(c))
        # An eigenvalue of the block minus T[m, m]: (a - d)/2 + sqrt(((a - d)/2)^2 + b c), with the principal
        # square root (the eigenvalue of positive imaginary part for a real block, as LAPACK lists it first).
        half = 0.5 * (a - d)
        mu = half + jnp.sqrt(half * half + b * c)
        r = jnp.sqrt(jnp.real(mu * jnp.conj(mu)) + jnp.real(c * jnp.conj(c))).astype(dt)
        cs = jnp.where(coupled, mu / r, jnp.ones_like(mu))
        sn = jnp.where(coupled, c / r, jnp.zeros_like(c))
        t = _rotate_rows(t, m, cs, sn)
        t = _rotate_columns(t, m, cs, sn, limit=m)
        z = _rotate_columns(z, m, cs, sn, limit=None)
        t = jnp.where((rows == m) & (cols == m - 1), jnp.zeros_like(t), t)
    return t, z


# --- sqrtm ----------------------------------------------------------------------------------------------------------

def _sqrt_upper_triangular(t):
    """The principal square root U of an upper triangular T (U^2 = T), column by column: U[j, j] = sqrt(T[j, j])
    and the part above the diagonal solves (U[:j, :j] + U[j, j] I) u = T[:j, j], a triangular system (Bjorck &
    Hammarling, "A Schur method for the square root of a matrix", Linear Algebra Appl. 52, 1983)."""
    n = t.shape[-1]
    diag = jnp.sqrt(jnp.diagonal(t, axis1=-2, axis2=-1))
    u = diag[..., None, :] * jnp.eye(n, dtype=t.dtype)
    for j in range(1, n):
        system = u[..., :j, :j] + diag[..., j, None, None] * jnp.eye(j, dtype=t.dtype)
        col = lax.linalg.triangular_solve(system, t[..., :j, j:j + 1], left_side=True, lower=False)
        u = jnp.concatenate([u[..., :, :j], jnp.concatenate([col, u[..., j:, j:j + 1]], axis=-2), u[..., :, j + 1:]],
                            axis=-1)
    return u


def sqrtm(A: Any, blocksize: int = 1) -> Any:  # noqa: N803
    """The principal matrix square root X (X @ X = A) of a square matrix, as a complex array (as JAX; SciPy
    returns a real result when it can).

    From the complex Schur form A = Z T Z^H, X = Z sqrt(T) Z^H with the triangular square root of Bjorck and
    Hammarling (1983). A (..., n, n). Not differentiable (it calls `schur`, as JAX). For a singular A whose square
    root does not exist the result holds inf/NaN (JAX instead zeroes the entries where the recurrence divides by
    zero).

    Raises:
      NotImplementedError: for `blocksize` > 1 (as JAX). ValueError: for a non-square input.
    """
    if blocksize > 1:
        raise NotImplementedError("sqrtm: the blocked version (blocksize > 1) is not implemented")
    t, z = schur(A, output="complex")
    return z @ _sqrt_upper_triangular(t) @ _mH(z)


# --- funm -----------------------------------------------------------------------------------------------------------

def funm(A: Any, func: Callable, disp: bool = True) -> Any:  # noqa: N803
    """The matrix function F = f(A) for a scalar function f given as `func` (applied elementwise to the vector of
    eigenvalues), as a complex array; with `disp=False`, (F, err) where err estimates the relative error.

    Schur-Parlett method: A = Z T Z^H (complex Schur form through `schur` and `rsf2csf`), F's diagonal is
    f(diag T), and F's superdiagonals follow from T F = F T one diagonal at a time (Parlett's recurrence; Golub &
    Van Loan, "Matrix Computations", Algorithm 11.1.1). The recurrence divides by differences of eigenvalues, so
    it is inaccurate for close or repeated eigenvalues; err is SciPy's estimate
    min(1, max(eps, eps / min|T_jj - T_ii| * ||triu(T, 1)||_1)) (inf if F has an infinite entry). A is 2-D.

    Raises:
      ValueError: for an input that is not a square 2-D matrix.
    """
    a = jnp.asarray(A)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"funm: expected a square 2-D matrix, got shape {a.shape}")
    t, z = rsf2csf(*schur(a))
    n = t.shape[-1]
    eigenvalues = jnp.diagonal(t)
    f = jnp.diag(jnp.asarray(func(eigenvalues)).astype(t.dtype))
    rdt = jnp.real(t).dtype
    minden = jnp.abs(t[0, 0]).astype(rdt) if n else jnp.asarray(np.inf, rdt)
    for p in range(1, n):
        # With F's p-th superdiagonal still zero, (T F - F T)[i, i+p] is exactly the recurrence's numerator.
        commutator = t @ f - f @ t
        mask = jnp.eye(n, k=p, dtype=bool)
        den = eigenvalues[None, :] - eigenvalues[:, None]  # T[j, j] - T[i, i]
        safe = jnp.where(den == 0, jnp.ones_like(den), den)
        f = jnp.where(mask, jnp.where(den == 0, commutator, commutator / safe), f)
        minden = jnp.minimum(minden, jnp.min(jnp.where(mask, jnp.abs(den), jnp.full(den.shape, np.inf, rdt))))
    out = z @ f @ _mH(z)
    if disp:
        return out
    tol = float(np.finfo(rdt).eps)
    minden = jnp.where(minden == 0, jnp.asarray(tol, rdt), minden)
    upper_norm = jnp.max(jnp.sum(jnp.abs(jnp.triu(t, 1)), axis=0)) if n else jnp.asarray(0, rdt)
    err = jnp.minimum(1, jnp.maximum(tol, (tol / minden) * upper_norm))
    err = jnp.where(jnp.any(jnp.isinf(out)), jnp.asarray(np.inf, rdt), err)
    return out, err


# --- solve_sylvester ------------------------------------------------------------------------------------------------

def _solve_sylvester_2d(a, b, c, tol):
    m, n = c.shape[-2:]
    r, u = schur(a, output="complex")
    s, v = schur(_mH(b), output="complex")  # B^H = V S V^H, so B = V S^H V^H
    f = _mH(u) @ c.astype(r.dtype) @ v
    # R Y + Y S^H = F with R upper and S^H lower triangular: column j of Y needs the columns k > j only, and
    # solves (R + conj(S[j, j]) I) y_j = f_j - sum_{k > j} y_k conj(S[j, k]).
    s_h = _mH(s)
    eye = jnp.eye(m, dtype=r.dtype)
    columns = [None] * n
    for j in range(n - 1, -1, -1):
        rhs = f[..., :, j]
        for k in range(j + 1, n):
            rhs = rhs - columns[k] * s_h[..., k, j, None]
        system = r + s_h[..., j, j, None, None] * eye
        columns[j] = lax.linalg.triangular_solve(system, rhs[..., :, None], left_side=True, lower=False)[..., 0]
    y = jnp.stack(columns, axis=-1)
    x = u @ y @ _mH(v)
    if not dtypes.is_complex(c.dtype):
        x = jnp.real(x)
    # The equation is singular (or nearly) when an eigenvalue of A and one of B sum to about zero: NaN, as JAX.
    sums = jnp.diagonal(r, axis1=-2, axis2=-1)[..., :, None] + jnp.conj(jnp.diagonal(s, axis1=-2, axis2=-1))[
        ..., None, :]
    singular = jnp.any(jnp.abs(sums) < tol, axis=(-2, -1))
    return jnp.where(singular[..., None, None], jnp.full_like(x, np.nan), x)


def solve_sylvester(A: Any, B: Any, C: Any, *, method: str = "schur", tol: float = 1e-8) -> Any:  # noqa: N803
    """Solves the Sylvester equation A X + X B = C for X: A (..., m, m), B (..., n, n), C (..., m, n).

    Bartels-Stewart algorithm (R. H. Bartels and G. W. Stewart, "Solution of the matrix equation AX + XB = C",
    Comm. ACM 15(9), 1972): complex Schur forms A = U R U^H and B^H = V S V^H reduce the equation to a triangular
    one, solved column by column with triangular solves. The result is real when C is real. Where some
    eigenvalues of A and B sum to less than `tol` in magnitude the equation is (nearly) singular and the result is
    NaN (as JAX). Not differentiable (it calls `schur`, as JAX's "schur" method).

    Raises:
      ValueError: for shapes that do not fit, or an unknown `method`. NotImplementedError: for method="eigen"
      (JAX's eigendecomposition method needs a general eigensolver, which fluxion does not have).
    """
    if method == "eigen":
        raise NotImplementedError("solve_sylvester: method='eigen' needs a general eigendecomposition, which fluxion "
                                  "does not provide; use method='schur'")
    if method != "schur":
        raise ValueError(f"solve_sylvester: unrecognized method {method!r}; the valid methods are 'schur' and "
                         "'eigen'")
    a, b, c = jnp.asarray(A), jnp.asarray(B), jnp.asarray(C)
    dt = jnp.result_type(a, b, c)
    if not dtypes.is_inexact(dt):
        dt = dtypes.default_float_dtype()
    a, b, c = a.astype(dt), b.astype(dt), c.astype(dt)
    if c.ndim < 2:
        raise ValueError(f"solve_sylvester: C must be a (stack of) matrices, got shape {c.shape}")
    m, n = c.shape[-2:]
    if a.shape[-2:] != (m, m) or b.shape[-2:] != (n, n):
        raise ValueError(f"solve_sylvester: incompatible shapes for the Sylvester equation: A: {a.shape}, "
                         f"B: {b.shape}, C: {c.shape}")
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2], c.shape[:-2])
    a, b, c = (jnp.broadcast_to(x, batch + x.shape[-2:]) for x in (a, b, c))
    return _solve_sylvester_2d(a, b, c, tol)

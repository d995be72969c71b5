"""Linear-algebra primitives: cholesky, triangular_solve, solve, det, eigh, qr, svd.

All operate on the last two dimensions and accept leading batch dimensions, so their batching rule moves the
batch dimension to the front. Derivative rules follow the standard matrix-calculus results, as in JAX's
`jax/_src/lax/linalg.py` (e.g. Murray 2016, "Differentiation of the Cholesky decomposition"; Giles 2008,
"An extended collection of matrix derivative results"; Townsend 2016 for the SVD).
"""

from __future__ import annotations

import numpy as np

from .. import core, dtypes
from ..core import ShapedArray, abstract_eval_rules
from ..interpreters import ad, batching
from ..interpreters.ad import Zero
from . import elementwise as ew
from . import reductions as red
from . import structural as st
from .utils import standard_primitive


# -- helpers (all lax) -----------------------------------------------------------------------------------------------

def _nd(x):
    return core.get_aval(x).ndim


def _T(x):
    n = _nd(x)
    return st.transpose(x, tuple(range(n - 2)) + (n - 1, n - 2))


def _H(x):
    """The conjugate transpose of the last two dimensions (the transpose for real dtypes)."""
    return ew.conj(_T(x)) if dtypes.is_complex(core.get_aval(x).dtype) else _T(x)


def _mm(a, b):
    """Batched matrix product over the last two dimensions (batch dims must match)."""
    n = _nd(a)
    batch = tuple(range(n - 2))
    return red.dot_general(a, b, (((n - 1,), (n - 2,)), (batch, batch)))


def _tri_mask(x, lower: bool, k: int = 0):
    shape = core.get_aval(x).shape
    r = st.broadcasted_iota(np.int32, shape, len(shape) - 2)
    c = st.broadcasted_iota(np.int32, shape, len(shape) - 1)
    kk = core.Array(np.asarray(k, np.int32))
    return ew.le(c, ew.add(r, kk)) if lower else ew.ge(c, ew.add(r, kk))


def _tril(x, k=0):
    a = core.get_aval(x)
    return ew.select_n(_tri_mask(x, True, k), st.full(a.shape, 0, a.dtype), x)


def _triu(x, k=0):
    a = core.get_aval(x)
    return ew.select_n(_tri_mask(x, False, k), st.full(a.shape, 0, a.dtype), x)


def _diag_part(x):
    """(..., n, n) -> (..., n)."""
    a = core.get_aval(x)
    eye = _eye_like(x)
    return red.reduce_sum(ew.mul(x, eye), (a.ndim - 1,))


def _eye_like(x):
    a = core.get_aval(x)
    r = st.broadcasted_iota(np.int32, a.shape, a.ndim - 2)
    c = st.broadcasted_iota(np.int32, a.shape, a.ndim - 1)
    return ew.convert_element_type(ew.eq(r, c), a.dtype)


def _diag_matrix(v):
    """(..., n) -> (..., n, n) with v on the diagonal."""
    a = core.get_aval(v)
    n = a.shape[-1]
    shape = a.shape + (n,)
    vb = st.broadcast_in_dim(v, shape, tuple(range(a.ndim)))
    r = st.broadcasted_iota(np.int32, shape, a.ndim - 1)
    c = st.broadcasted_iota(np.int32, shape, a.ndim)
    return ew.select_n(ew.eq(r, c), st.full(shape, 0, a.dtype), vb)


def _scalar(x, v):
    return core.Array(np.asarray(v, core.get_aval(x).dtype), True)


def _check_square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise TypeError(f"{name} requires a square matrix (or a stack of them), got shape {a.shape}")
    if not dtypes.is_inexact(a.dtype):
        raise TypeError(f"{name} requires a floating or complex matrix, got dtype {a.dtype.name}")


def _leading_batch_rule(prim):
    """The batching rule of a primitive on stacks of matrices: move every batch dimension to the front."""
    def rule(vals, dims, **params):
        size = next(core.get_aval(v).shape[d] for v, d in zip(vals, dims) if d is not None)
        vals = [batching.moveaxis(v, d, 0, size) for v, d in zip(vals, dims)]
        out = prim.bind(*vals, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    return rule


# -- cholesky --------------------------------------------------------------------------------------------------------

cholesky_p = standard_primitive("cholesky", weak_type="never")


def cholesky(x, symmetrize_input: bool = True):
    """Lower-triangular L with L @ L^H = x for Hermitian (real: symmetric) positive-definite x; a matrix that is
    not positive definite gives NaN on and below the diagonal. With `symmetrize_input`, x is first replaced by
    (x + x^H) / 2, and so is its tangent.

    Raises:
      TypeError: `x` is not a (stack of) square floating or complex matrices.
    """
    x = st._as_array(x)
    _cholesky_abstract_eval(core.get_aval(x))
    if symmetrize_input:
        x = ew.div(ew.add(x, _H(x)), _scalar(x, 2))
    return cholesky_p.bind(x)


def _cholesky_abstract_eval(a):
    _check_square("cholesky", a)
    return ShapedArray(a.shape, a.dtype)


abstract_eval_rules[cholesky_p] = _cholesky_abstract_eval


def _cholesky_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    L = cholesky_p.bind(a)
    # dL = L Phi(L^-1 dA L^-H), Phi = lower triangle with the diagonal halved (Murray 2016, "Differentiation of
    # the Cholesky decomposition", arXiv:1602.07527). The conjugate transposes matter for complex inputs: with
    # plain transposes the tangent of a Hermitian input gets a complex diagonal.
    y = triangular_solve(L, da, left_side=True, lower=True)
    x = _H(triangular_solve(L, _H(y), left_side=True, lower=True))
    phi = ew.sub(_tril(x), ew.mul(_scalar(x, 0.5), ew.mul(x, _eye_like(x))))
    return L, _mm(L, phi)


ad.primitive_jvps[cholesky_p] = _cholesky_jvp
batching.primitive_batchers[cholesky_p] = _leading_batch_rule(cholesky_p)


# -- triangular_solve ------------------------------------------------------------------------------------------------

triangular_solve_p = standard_primitive("triangular_solve", weak_type="never")


def triangular_solve(a, b, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False):
    """Solves a x = b (left_side) or x a = b for triangular a (the other triangle is ignored).

    Args:
      a: (..., n, n) triangular matrices (floating or complex).
      b: (..., n, k) if `left_side` else (..., k, n), of a's dtype; or one rank lower, a single vector per matrix.

    Returns:
      x, of b's shape and dtype.

    Raises:
      ValueError: `a` is not square or `b`'s shape does not match it.
      TypeError: the dtypes differ or are not floating/complex.
    """
    a, b = st._as_array(a), st._as_array(b)
    singleton = core.get_aval(b).ndim == core.get_aval(a).ndim - 1
    if singleton:  # a single right-hand side vector per matrix, as jax.lax.linalg accepts
        b = st.expand_dims(b, (core.get_aval(b).ndim if left_side else core.get_aval(b).ndim - 1,))
    params = dict(left_side=bool(left_side), lower=bool(lower), transpose_a=bool(transpose_a),
                  conjugate_a=bool(conjugate_a), unit_diagonal=bool(unit_diagonal))
    _triangular_solve_abstract_eval(core.get_aval(a), core.get_aval(b), **params)
    out = triangular_solve_p.bind(a, b, **params)
    if singleton:
        out = st.squeeze(out, (core.get_aval(out).ndim - 1 if left_side else core.get_aval(out).ndim - 2,))
    return out


def _triangular_solve_abstract_eval(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"triangular_solve: the first input a must be a (stack of) square matrices, got shape "
                         f"{a.shape}")
    n = a.shape[-1]
    if b.ndim != a.ndim or (b.shape[-2] if left_side else b.shape[-1]) != n or b.shape[:-2] != a.shape[:-2]:
        raise ValueError(f"triangular_solve: incompatible shapes for a {a.shape} and b {b.shape} "
                         f"(left_side={left_side})")
    if not dtypes.is_inexact(a.dtype) or a.dtype != b.dtype:
        raise TypeError(f"triangular_solve requires a and b of one floating or complex dtype, got {a.dtype.name} "
                        f"and {b.dtype.name}")
    return ShapedArray(b.shape, b.dtype)


abstract_eval_rules[triangular_solve_p] = _triangular_solve_abstract_eval


def _triangular_solve_jvp_a(da, x, a, b, **p):
    da = _tril(da) if p["lower"] else _triu(da)
    if p["unit_diagonal"]:
        da = ew.mul(da, ew.sub(_scalar(da, 1), _eye_like(da)))
    dat = _T(da) if p["transpose_a"] else da
    # left: x = op(a)^-1 b -> dx = -op(a)^-1 op(da) x; right: x = b op(a)^-1 -> dx = -x op(da) op(a)^-1
    rhs = _mm(dat, x) if p["left_side"] else _mm(x, dat)
    return ew.neg(triangular_solve_p.bind(a, rhs, **p))


ad.defjvp2(triangular_solve_p, _triangular_solve_jvp_a, lambda db, x, a, b, **p: triangular_solve_p.bind(a, db, **p))


def _triangular_solve_transpose(ct, a, b, **p):
    if ad.is_undefined_primal(a):
        raise NotImplementedError("triangular_solve is linear only in b")
    if type(ct) is Zero:
        return [None, None]
    q = dict(p)
    q["transpose_a"] = not p["transpose_a"]
    return [None, triangular_solve_p.bind(a, ct, **q)]


ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose
batching.primitive_batchers[triangular_solve_p] = _leading_batch_rule(triangular_solve_p)


# -- solve -----------------------------------------------------------------------------------------------------------

solve_p = standard_primitive("solve", weak_type="never")


def _solve_abstract_eval(a, b):
    _check_square("solve", a)
    if b.ndim != a.ndim or b.shape[-2] != a.shape[-1] or b.shape[:-2] != a.shape[:-2]:
        raise TypeError(f"solve: b of shape {b.shape} is incompatible with a of shape {a.shape}")
    if a.dtype != b.dtype:
        raise TypeError(f"solve requires a and b of one dtype, got {a.dtype.name} and {b.dtype.name}")
    return ShapedArray(b.shape, b.dtype)


abstract_eval_rules[solve_p] = _solve_abstract_eval


def _solve_jvp(primals, tangents):
    a, b = primals
    da, db = tangents
    x = solve_p.bind(a, b)
    rhs = Zero(core.get_aval(x))
    if type(db) is not Zero:
        rhs = ad.add_tangents(rhs, db)
    if type(da) is not Zero:
        rhs = ad.add_tangents(rhs, ew.neg(_mm(da, x)))
    if type(rhs) is Zero:
        return x, rhs
    return x, solve_p.bind(a, rhs)


ad.primitive_jvps[solve_p] = _solve_jvp


def _solve_transpose(ct, a, b):
    if ad.is_undefined_primal(a):
        raise NotImplementedError("solve is linear only in b")
    if type(ct) is Zero:
        return [None, None]
    return [None, solve_p.bind(_T(a), ct)]


ad.primitive_transposes[solve_p] = _solve_transpose
batching.primitive_batchers[solve_p] = _leading_batch_rule(solve_p)


# -- det / slogdet ---------------------------------------------------------------------------------------------------

det_p = standard_primitive("det", weak_type="never")


def _det_abstract_eval(a):
    _check_square("det", a)
    return ShapedArray(a.shape[:-2], a.dtype)


abstract_eval_rules[det_p] = _det_abstract_eval


def _det_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    d = det_p.bind(a)
    # d det(A) = det(A) tr(A^-1 dA)
    tr = red.reduce_sum(_diag_part(solve_p.bind(a, da)), (_nd(a) - 2,))
    return d, ew.mul(d, tr)


ad.primitive_jvps[det_p] = _det_jvp
batching.primitive_batchers[det_p] = _leading_batch_rule(det_p)

slogdet_p = standard_primitive("slogdet", multiple_results=True, weak_type="never")


def _slogdet_abstract_eval(a):
    _check_square("slogdet", a)
    real = np.dtype(np.float64) if a.dtype == dtypes.complex128 else (
        np.dtype(np.float32) if dtypes.is_complex(a.dtype) else a.dtype)
    return [ShapedArray(a.shape[:-2], a.dtype), ShapedArray(a.shape[:-2], real)]


abstract_eval_rules[slogdet_p] = _slogdet_abstract_eval


def _slogdet_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    sign, logdet = slogdet_p.bind(a)
    tr = red.reduce_sum(_diag_part(solve_p.bind(a, da)), (_nd(a) - 2,))
    return [sign, logdet], [Zero(core.get_aval(sign)), tr]


ad.primitive_jvps[slogdet_p] = _slogdet_jvp
batching.primitive_batchers[slogdet_p] = _leading_batch_rule(slogdet_p)


# -- eigh ------------------------------------------------------------------------------------------------------------

eigh_p = standard_primitive("eigh", multiple_results=True, weak_type="never")


def eigh(x, lower: bool = True, symmetrize_input: bool = True):
    """Eigendecomposition of a symmetric matrix: returns (v, w) with x = v diag(w) v^T, w ascending.

    Raises:
      TypeError: `x` is not a (stack of) square floating or complex matrices.
    """
    x = st._as_array(x)
    _eigh_abstract_eval(core.get_aval(x), lower=bool(lower))
    if symmetrize_input:
        x = ew.div(ew.add(x, _T(x)), _scalar(x, 2))
    return eigh_p.bind(x, lower=bool(lower))


def _eigh_abstract_eval(a, *, lower=True):
    _check_square("eigh", a)
    real = np.dtype(np.float64) if a.dtype == dtypes.complex128 else (
        np.dtype(np.float32) if dtypes.is_complex(a.dtype) else a.dtype)
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-1], real)]


abstract_eval_rules[eigh_p] = _eigh_abstract_eval


def _eigh_jvp(primals, tangents, *, lower=True):
    (a,), (da,) = primals, tangents
    v, w = eigh_p.bind(a, lower=lower)
    da = ew.div(ew.add(da, _T(da)), _scalar(da, 2))
    m = _mm(_T(v), _mm(da, v))
    dw = _diag_part(m)
    n = core.get_aval(w).ndim
    wj = st.broadcast_in_dim(w, core.get_aval(m).shape, tuple(range(n - 1)) + (n,))
    wi = st.broadcast_in_dim(w, core.get_aval(m).shape, tuple(range(n)))
    diff = ew.sub(wj, wi)
    eye = _eye_like(m)
    f = ew.mul(ew.div(_scalar(diff, 1), ew.add(diff, eye)), ew.sub(_scalar(eye, 1), eye))
    dv = _mm(v, ew.mul(f, m))
    return [v, w], [dv, dw]


ad.primitive_jvps[eigh_p] = _eigh_jvp
batching.primitive_batchers[eigh_p] = _leading_batch_rule(eigh_p)


# -- qr --------------------------------------------------------------------------------------------------------------

qr_p = standard_primitive("qr", multiple_results=True, weak_type="never")


def qr(x, full_matrices: bool = True):
    """QR decomposition: (q, r) with x = q r.

    Raises:
      TypeError: `x` has rank below 2.
    """
    x = st._as_array(x)
    _qr_abstract_eval(core.get_aval(x), full_matrices=bool(full_matrices))
    return tuple(qr_p.bind(x, full_matrices=bool(full_matrices)))


def _qr_abstract_eval(a, *, full_matrices):
    if a.ndim < 2:
        raise TypeError(f"qr requires a matrix, got shape {a.shape}")
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    return [ShapedArray(a.shape[:-2] + (m, k), a.dtype), ShapedArray(a.shape[:-2] + (k, n), a.dtype)]


abstract_eval_rules[qr_p] = _qr_abstract_eval


def _qr_jvp(primals, tangents, *, full_matrices):
    (a,), (da,) = primals, tangents
    q, r = qr_p.bind(a, full_matrices=full_matrices)
    m, n = core.get_aval(a).shape[-2:]
    if m < n or (full_matrices and m != n):
        raise NotImplementedError("Unimplemented case of QR decomposition derivative (needs m >= n and reduced "
                                  "matrices, as in JAX)")
    dx_rinv = triangular_solve(r, da, left_side=False, lower=False)
    qt_dx_rinv = _mm(_T(q), dx_rinv)
    low = _tril(qt_dx_rinv, -1)
    do = ew.sub(low, _T(low))
    dq = ew.add(_mm(q, ew.sub(do, qt_dx_rinv)), dx_rinv)
    dr = _mm(ew.sub(qt_dx_rinv, do), r)
    return [q, r], [dq, dr]


ad.primitive_jvps[qr_p] = _qr_jvp
batching.primitive_batchers[qr_p] = _leading_batch_rule(qr_p)


# -- svd -------------------------------------------------------------------------------------------------------------

svd_p = standard_primitive("svd", multiple_results=True, weak_type="never")


def svd(x, full_matrices: bool = True, compute_uv: bool = True):
    """Singular value decomposition: (u, s, vh) with x = u diag(s) vh, or s alone (compute_uv=False).

    Raises:
      TypeError: `x` has rank below 2.
    """
    x = st._as_array(x)
    params = dict(full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    _svd_abstract_eval(core.get_aval(x), **params)
    out = svd_p.bind(x, **params)
    if not compute_uv:
        return out[0]
    s, u, vh = out
    return u, s, vh


def _svd_abstract_eval(a, *, full_matrices, compute_uv):
    if a.ndim < 2:
        raise TypeError(f"svd requires a matrix, got shape {a.shape}")
    m, n = a.shape[-2:]
    k = min(m, n)
    real = np.dtype(np.float64) if a.dtype == dtypes.complex128 else (
        np.dtype(np.float32) if dtypes.is_complex(a.dtype) else a.dtype)
    s = ShapedArray(a.shape[:-2] + (k,), real)
    if not compute_uv:
        return [s]
    um, vn = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray(a.shape[:-2] + (m, um), a.dtype), ShapedArray(a.shape[:-2] + (vn, n), a.dtype)]


abstract_eval_rules[svd_p] = _svd_abstract_eval


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    (a,), (da,) = primals, tangents
    if full_matrices and compute_uv:
        m, n = core.get_aval(a).shape[-2:]
        if m != n:
            raise NotImplementedError("Singular value decomposition JVP not implemented for full matrices")
    s, u, vh = svd_p.bind(a, full_matrices=False, compute_uv=True)
    ut, v = _T(u), _T(vh)
    ds_mat = _mm(ut, _mm(da, v))
    ds = _diag_part(ds_mat)
    if not compute_uv:
        return [s], [ds]
    nd = core.get_aval(s).ndim
    k = core.get_aval(s).shape[-1]
    mat_shape = core.get_aval(s).shape + (k,)
    s_row = st.broadcast_in_dim(s, mat_shape, tuple(range(nd - 1)) + (nd,))   # s_dim: varies along columns
    s_col = st.broadcast_in_dim(s, mat_shape, tuple(range(nd)))               # transpose
    s_diffs = ew.mul(ew.add(s_row, s_col), ew.sub(s_row, s_col))
    eye = _eye_like(s_diffs)
    f = ew.sub(ew.div(_scalar(eye, 1), ew.add(s_diffs, eye)), eye)
    dss = ew.mul(s_row, ds_mat)
    sds = ew.mul(s_col, ds_mat)
    du = _mm(u, ew.mul(f, ew.add(dss, _T(dss))))
    dv = _mm(v, ew.mul(f, ew.add(sds, _T(sds))))
    m, n = core.get_aval(a).shape[-2:]

    def over_s(x):
        # Divides column j of the (..., rows, k) matrix x by s_j.
        shape = core.get_aval(x).shape
        return ew.div(x, st.broadcast_in_dim(s, shape, tuple(range(nd - 1)) + (nd,)))

    if m > n:
        dav = _mm(da, v)
        du = ew.add(du, over_s(ew.sub(dav, _mm(u, _mm(ut, dav)))))
    if n > m:
        dahu = _mm(_T(da), u)
        dv = ew.add(dv, over_s(ew.sub(dahu, _mm(v, _mm(vh, dahu)))))
    return [s, u, vh], [ds, du, _T(dv)]


ad.primitive_jvps[svd_p] = _svd_jvp
batching.primitive_batchers[svd_p] = _leading_batch_rule(svd_p)


# -- schur, hessenberg -----------------------------------------------------------------------------------------------
# The decompositions behind `fluxion.scipy.linalg.schur` / `hessenberg`. As in JAX, only LAPACK computes them (the
# eager backend calls gees / gehrd through SciPy) and they have no derivative rules. Their outputs are SciPy's
# (T, Z) and (H, Q) rather than the packed LAPACK results of `jax.lax.linalg`'s primitives of the same names, so
# `fluxion.lax.linalg` does not export them.

def _square_pair_abstract_eval(name):
    def rule(a):
        _check_square(name, a)
        return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape, a.dtype)]
    return rule


schur_p = standard_primitive("schur", _square_pair_abstract_eval("schur"), multiple_results=True, weak_type="never")
ad.defnondifferentiable(schur_p)
batching.primitive_batchers[schur_p] = _leading_batch_rule(schur_p)

hessenberg_p = standard_primitive("hessenberg", _square_pair_abstract_eval("hessenberg"), multiple_results=True,
                                  weak_type="never")
ad.defnondifferentiable(hessenberg_p)
batching.primitive_batchers[hessenberg_p] = _leading_batch_rule(hessenberg_p)

"""`jnp.linalg`: norm, inv, solve, det, slogdet, cholesky, eigh, eigvalsh, qr, svd, pinv, matrix_power, ..."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..lax import elementwise as ew
from ..lax import linalg as ll
from ..lax import structural as st
from . import linear as _linear
from . import reductions as _reductions
from . import shape as _shape
from .ufuncs import isnan as _isnan
from .ufuncs import where as _where
from .util import asarray_arg, canonicalize_axes


def _inexact(a, name):
    a = asarray_arg(a, name)
    dt, weak = dtypes.dtype_and_weak(a)
    if not dtypes.is_inexact(dt):
        a = ew._convert_weak(a, dtypes.default_float_dtype(), weak)
    return a


def _square(a, name):
    """`a` (made inexact) after checking it is a stack of square matrices: ValueError naming the shape, as JAX."""
    a = _inexact(a, name)
    shape = core.get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to {name} must have shape [..., n, n], got {shape}")
    return a


@staged_as_call("cholesky")
def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """Cholesky factor of a symmetric positive-definite matrix (lower, or upper with upper=True)."""
    L = ll.cholesky(_inexact(a, "cholesky"), symmetrize_input=symmetrize_input)
    return ll._T(L) if upper else L


@staged_as_call("solve")
def solve(a, b):
    """Solves a x = b; b is (..., n) or (..., n, k). A singular `a` gives inf/NaN as in JAX (see the backend).

    Raises:
      ValueError: `a` is not a stack of square matrices, or b's solved dimension is not a's size."""
    a, b = _square(a, "solve"), _inexact(b, "solve")
    from .util import promote_dtypes
    a, b = promote_dtypes(a, b)
    an, bn = core.get_aval(a).ndim, core.get_aval(b).ndim
    n, b_shape = core.get_aval(a).shape[-1], core.get_aval(b).shape
    if bn == 0 or b_shape[-1 if bn == an - 1 or bn == 1 else -2] != n:
        raise ValueError(f"solve: b of shape {b_shape} does not match a of shape {core.get_aval(a).shape}")
    if bn == an - 1:
        b2 = st.reshape(b, core.get_aval(b).shape + (1,))
        return st.reshape(ll.solve_p.bind(a, b2), core.get_aval(b).shape)
    return ll.solve_p.bind(a, b)


@staged_as_call("inv")
def inv(a):
    """Matrix inverse (of the last two dimensions); a singular matrix gives inf/NaN entries as in JAX.

    Raises:
      ValueError: `a` is not a stack of square matrices."""
    a = _square(a, "inv")
    return ll.solve_p.bind(a, ll._eye_like(a))


@staged_as_call("det")
def det(a):
    """Determinants of a stack of square matrices (ValueError otherwise); NaN for a NaN matrix."""
    return ll.det_p.bind(_square(a, "det"))


@staged_as_call("slogdet")
def slogdet(a, *, method=None):
    """(sign, log|det|) of square matrices as an `SlogdetResult`; a NaN matrix gives NaN for both."""
    sign, logdet = ll.slogdet_p.bind(_square(a, "slogdet"))
    return SlogdetResult(sign, logdet)


class SlogdetResult(NamedTuple):
    """`slogdet`'s result (a pytree, as JAX's NamedTuple of the same name and fields)."""
    sign: Any
    logabsdet: Any


@staged_as_call("eigh")
def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix as an `EighResult` (w, v), as NumPy orders
    them; a NaN matrix gives NaN in both."""
    v, w = ll.eigh(_inexact(a, "eigh"), lower=(UPLO or "L") == "L", symmetrize_input=symmetrize_input)
    return EighResult(w, v)


class EighResult(NamedTuple):
    """`eigh`'s result (JAX's NamedTuple of the same name and fields)."""
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    """`qr`'s result for the reduced and complete modes (JAX's NamedTuple of the same name and fields)."""
    Q: Any
    R: Any


class SVDResult(NamedTuple):
    """`svd`'s result with `compute_uv=True` (JAX's NamedTuple of the same name and fields)."""
    U: Any
    S: Any
    Vh: Any


@staged_as_call("eigvalsh")
def eigvalsh(a, UPLO: str | None = "L"):
    """Eigenvalues of the Hermitian (real symmetric) matrices `a` (..., n, n), in ascending order, shape (..., n),
    real even for complex input. Only the lower (`UPLO="L"`) or upper (`"U"`) triangle is read; the other is
    assumed to mirror it. Differentiable (the derivative assumes distinct eigenvalues). Same as `eigh(a)[0]`.

    >>> import fluxion.numpy as jnp
    >>> jnp.linalg.eigvalsh(jnp.array([[2., 1.], [1., 2.]]))
    Array([1., 3.], dtype=float32)
    """
    return eigh(a, UPLO)[0]


@staged_as_call("qr")
def qr(a, mode: str = "reduced"):
    """QR decomposition of the matrices `a` (..., m, n): `a = q @ r` with orthonormal columns in `q` and `r` upper
    triangular. `mode="reduced"` gives q (..., m, k) and r (..., k, n) with k = min(m, n); `"complete"` gives
    q (..., m, m) and r (..., m, n); `"r"` returns r alone (not a tuple). Returns a `QRResult(Q, R)` otherwise.
    Integer input is converted to the default float dtype; an unknown `mode` raises `ValueError` (NumPy's
    `"raw"` mode is not supported, as in JAX). Signs follow LAPACK, so they may differ from another library's.

    >>> import fluxion.numpy as jnp
    >>> q, r = jnp.linalg.qr(jnp.array([[3., 1.], [4., 2.]]))
    >>> bool(jnp.allclose(q @ r, jnp.array([[3., 1.], [4., 2.]]), atol=1e-5))
    True
    """
    a = _inexact(a, "qr")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"Unsupported QR decomposition mode {mode!r}")
    q, r = ll.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


@staged_as_call("svd")
def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition: an `SVDResult(U, S, Vh)`, or the singular values alone with
    compute_uv=False; a matrix LAPACK cannot decompose (NaN input) gives NaN in every output."""
    a = _inexact(a, "svd")
    out = ll.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return SVDResult(*out) if compute_uv else out


def svdvals(a):
    """The singular values of the matrices `a` (..., m, n), in descending order, shape (..., min(m, n)); real for
    complex input. Same as `svd(a, compute_uv=False)`.

    >>> import fluxion.numpy as jnp
    >>> jnp.linalg.svdvals(jnp.array([[3., 0.], [0., -4.]]))
    Array([4., 3.], dtype=float32)
    """
    return svd(a, compute_uv=False)


def pinv(a, rtol=None):
    """Moore-Penrose pseudo-inverse of the matrices `a` (..., m, n), shape (..., n, m), through the SVD: singular
    values at or below `rtol` times the largest are treated as zero (default `rtol`: 10 * max(m, n) * eps of the
    dtype, as JAX). Integer input is converted to the default float dtype.

    >>> import fluxion.numpy as jnp
    >>> jnp.linalg.pinv(jnp.array([[2., 0.], [0., 0.]]))
    Array([[0.5, 0. ],
           [0. , 0. ]], dtype=float32)
    """
    a = _inexact(a, "pinv")
    u, s, vh = ll.svd(a, full_matrices=False)
    m, n = core.get_aval(a).shape[-2:]
    eps = dtypes.finfo(core.get_aval(a).dtype).eps
    rtol = 10 * max(m, n) * eps if rtol is None else rtol
    cutoff = ew.mul(core.Array(np.asarray(rtol, core.get_aval(s).dtype), True),
                    _reductions.max(s, axis=-1, keepdims=True))
    cutoff = st.broadcast_in_dim(cutoff, core.get_aval(s).shape, tuple(range(core.get_aval(s).ndim)))
    s_inv = ew.select_n(ew.gt(s, cutoff), st.full(core.get_aval(s).shape, 0, core.get_aval(s).dtype),
                        ew.div(core.Array(np.ones((), core.get_aval(s).dtype), True), s))
    from .linear import matmul
    # pinv(a) = V diag(1/s) U^H: conjugate transposes, and the real 1/s cast to a's (possibly complex) dtype.
    v = ll._H(vh)
    s_inv = ew.convert_element_type(s_inv, core.get_aval(v).dtype)
    vs = ew.mul(v, st.broadcast_in_dim(s_inv, core.get_aval(v).shape,
                                       tuple(range(core.get_aval(s_inv).ndim - 1)) + (core.get_aval(s_inv).ndim,)))
    return matmul(vs, ll._H(u))


def matrix_power(a, n: int):
    """`a` (..., k, k) raised to the integer power `n` by repeated squaring (about 2 log2 |n| products): the
    identity for n = 0, and the power of the inverse for n < 0 (singular matrices then give inf/NaN rather than
    raising, as in JAX). `n` must be a Python int, not a traced value.

    >>> import fluxion.numpy as jnp
    >>> jnp.linalg.matrix_power(jnp.array([[1, 1], [0, 1]]), 3)
    Array([[1, 3],
           [0, 1]], dtype=int32)
    """
    a = asarray_arg(a)
    from .linear import matmul
    if n == 0:
        return ll._eye_like(a)
    if n < 0:
        a, n = inv(a), -n
    result = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        base = matmul(base, base) if n > 1 else base
        n >>= 1
    return result


@staged_as_call("matrix_rank")
def matrix_rank(a, rtol=None):
    """The rank of the matrices `a` (..., m, n): how many singular values exceed `rtol` times the largest (default
    `rtol`: max(m, n) * eps of the dtype). Returns int32 (int64 with x64), shape (...). NumPy's `tol` (an
    absolute threshold) is not accepted; JAX also takes only `rtol`.

    >>> import fluxion.numpy as jnp
    >>> jnp.linalg.matrix_rank(jnp.array([[1., 2.], [2., 4.]]))
    Array(1, dtype=int32)
    """
    s = svd(a, compute_uv=False)
    m, n = core.get_aval(asarray_arg(a)).shape[-2:]
    eps = dtypes.finfo(core.get_aval(s).dtype).eps
    rtol = max(m, n) * eps if rtol is None else rtol
    from .reductions import sum as _sum
    tol = ew.mul(_reductions.max(s, axis=-1, keepdims=True),
                 core.Array(np.asarray(rtol, core.get_aval(s).dtype), True))
    return _sum(ew.gt(s, st.broadcast_in_dim(tol, core.get_aval(s).shape, tuple(range(core.get_aval(s).ndim)))),
                axis=-1)


@staged_as_call("norm")
def norm(x, ord=None, axis=None, keepdims: bool = False):  # noqa: A002
    """Vector or matrix norm (NumPy's `ord` conventions: None/2/1/inf/-inf/0/p for vectors; 'fro', 'nuc',
    1, -1, 2, -2, inf, -inf for matrices)."""
    from .reductions import max as _max, min as _min, sum as _sum
    from .ufuncs import abs as _abs, power, sqrt
    x = _inexact(x, "norm")
    nd = core.get_aval(x).ndim
    if axis is None:
        if ord is None:
            out = sqrt(_sum(ew.real(ew.mul(x, ew.conj(x))) if dtypes.is_complex(core.get_aval(x).dtype)
                            else ew.mul(x, x)))
            return st.reshape(out, (1,) * nd) if keepdims else out
        axis = tuple(range(nd))
    axes = canonicalize_axes(axis, nd)
    if len(axes) == 1:
        if ord is None or ord == 2:
            return sqrt(_sum(ew.mul(_abs(x), _abs(x)), axis=axes, keepdims=keepdims))
        if ord == np.inf:
            return _max(_abs(x), axis=axes, keepdims=keepdims)
        if ord == -np.inf:
            return _min(_abs(x), axis=axes, keepdims=keepdims)
        if ord == 0:
            # The count of non-zeros, in the real dtype of |x| (float32 for complex64), as JAX.
            dt = core.get_aval(x).dtype
            real_dt = dtypes.finfo(dt).dtype if dtypes.is_complex(dt) else dt
            return _sum(ew.convert_element_type(ew.ne(x, core.Array(np.zeros((), dt), True)), real_dt), axis=axes,
                        keepdims=keepdims)
        if ord == 1:
            return _sum(_abs(x), axis=axes, keepdims=keepdims)
        p = float(ord)
        return power(_sum(power(_abs(x), p), axis=axes, keepdims=keepdims), 1.0 / p)
    if len(axes) == 2:
        r, c = axes
        if ord in (None, "fro", "f"):
            return sqrt(_sum(ew.mul(_abs(x), _abs(x)), axis=axes, keepdims=keepdims))
        if ord in (1, -1):
            colsum = _sum(_abs(x), axis=r, keepdims=True)
            red = _max if ord == 1 else _min
            out = red(colsum, axis=(r, c), keepdims=True)
            return out if keepdims else st.squeeze(out, (r, c))
        if ord in (np.inf, -np.inf):
            rowsum = _sum(_abs(x), axis=c, keepdims=True)
            red = _max if ord == np.inf else _min
            out = red(rowsum, axis=(r, c), keepdims=True)
            return out if keepdims else st.squeeze(out, (r, c))
        y = _shape.moveaxis(x, (r, c), (-2, -1))
        s = svd(y, compute_uv=False)
        if ord == 2:
            out = _reductions.max(s, axis=-1)
        elif ord == -2:
            out = _reductions.min(s, axis=-1)
        elif ord == "nuc":
            out = _sum(s, axis=-1)
        else:
            raise ValueError(f"Invalid order {ord!r} for matrix norm")
        if keepdims:
            shape = list(core.get_aval(x).shape)
            shape[r] = shape[c] = 1
            out = st.reshape(out, shape)
        return out
    raise ValueError(f"Invalid axis {axis!r} for norm")


def matrix_norm(x, ord="fro", keepdims=False):
    """The norm of each matrix in the last two axes of `x` (..., m, n): `ord` is `"fro"` (Frobenius, default),
    `"nuc"` (sum of singular values), 1 / -1 (max / min column sum of absolute values), 2 / -2 (largest / smallest
    singular value) or inf / -inf (max / min row sum). Shape (...), or (..., 1, 1) with `keepdims`. The array API's
    spelling of `norm(x, ord, axis=(-2, -1))`.

    >>> import fluxion.numpy as jnp
    >>> jnp.linalg.matrix_norm(jnp.array([[3., 0.], [0., 4.]]))
    Array(5., dtype=float32)
    """
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def vector_norm(x, ord=2, axis=None, keepdims=False):
    """The vector `ord`-norm of `x` along the int `axis` (None: over all elements, as one flattened vector,
    unlike `norm`, which treats a 2-d input as a matrix). `ord` may be any real p, inf (max of absolute values),
    -inf (min) or 0 (count of non-zeros). The array API's vector norm. `axis` may also be a tuple of any number
    of axes: their elements are taken as one vector. With `keepdims`, every reduced axis stays with size 1 (all of
    them for `axis=None`).

    >>> import fluxion.numpy as jnp
    >>> jnp.linalg.vector_norm(jnp.array([[3., 0.], [0., 4.]]))
    Array(5., dtype=float32)
    """
    x = asarray_arg(x)
    shape = core.get_aval(x).shape
    axes = canonicalize_axes(axis, len(shape))
    if isinstance(axis, (int, np.integer)):
        return norm(x, ord=ord, axis=axes[0], keepdims=keepdims)
    # Several axes (or all): move them to the end and merge them into one, so the norm is the vector norm of
    # their elements (`norm` would read a pair of axes as a matrix).
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    perm = kept + tuple(sorted(axes))
    if perm != tuple(range(len(shape))):
        x = st.transpose(x, perm)
    merged = int(np.prod([shape[i] for i in axes], dtype=np.int64))
    x = st.reshape(x, tuple(shape[i] for i in kept) + (merged,))
    out = norm(x, ord=ord, axis=-1)
    if keepdims:
        out = st.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(shape)))
    return out


@staged_as_call("_lstsq")
def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """Least-squares solution of a x = b through the SVD of `a`: returns (x, residuals, rank, s).

    Singular values below `rcond * s[0]` (default eps * max(m, n)) are dropped. As in JAX, `residuals` is always
    the squared 2-norm of each column of b - a x (NumPy returns an empty array when rank < n or m <= n; pass
    numpy_resid=True for that). `a` must be 2-d and `b` 1-d or 2-d with b.shape[0] == a.shape[0] (ValueError
    otherwise, TypeError for other ranks). A NaN input gives NaN (not an exception)."""
    from .linear import matmul
    from .reductions import sum as _sum
    from .ufuncs import conj, where
    from .util import promote_dtypes
    a, b = promote_dtypes(_inexact(a, "lstsq"), _inexact(b, "lstsq"))
    a_aval, b_aval = core.get_aval(a), core.get_aval(b)
    if a_aval.ndim != 2:
        raise TypeError(f"lstsq: a must be two-dimensional, got shape {a_aval.shape}")
    if b_aval.ndim not in (1, 2):
        raise TypeError(f"lstsq: b must be one- or two-dimensional, got shape {b_aval.shape}")
    if a_aval.shape[0] != b_aval.shape[0]:
        raise ValueError(f"lstsq: leading dimensions of a {a_aval.shape} and b {b_aval.shape} must match")
    vector = b_aval.ndim == 1
    if vector:
        b = st.reshape(b, (b_aval.shape[0], 1))
    m, n = a_aval.shape
    if a_aval.size == 0:
        s = st.full((0,), 0, dtypes.finfo(a_aval.dtype).dtype)
        rank = core.Array(np.zeros((), dtypes.default_int_dtype()))
        x = st.full((n, core.get_aval(b).shape[1]), 0, a_aval.dtype)
    else:
        if rcond is None:
            rcond = float(dtypes.finfo(a_aval.dtype).eps) * max(m, n)
        elif not isinstance(rcond, (core.Array, core.Tracer)) and rcond < 0:
            rcond = float(dtypes.finfo(a_aval.dtype).eps)
        u, s, vh = ll.svd(a, full_matrices=False)
        s_dt = core.get_aval(s).dtype
        # Singular values kept: positive and at least rcond times the largest (NaN ones are dropped).
        mask = (s > 0) & (s >= np.asarray(rcond, s_dt) * s[0])
        rank = _sum(mask)
        safe_s = where(mask, s, 1).astype(a_aval.dtype)
        s_inv = st.reshape(where(mask, 1 / safe_s, 0), (core.get_aval(s).shape[0], 1))
        x = matmul(ll._T(conj(vh)), s_inv * matmul(ll._T(conj(u)), b))
    s_dt = core.get_aval(s).dtype
    if numpy_resid and (int(rank) < n or m <= n):
        resid = core.Array(np.zeros((0,), s_dt))
    else:
        r = b - matmul(a, x)
        resid = _sum(ew.real(r * conj(r)) if dtypes.is_complex(a_aval.dtype) else r * r, axis=0)
    if vector:
        x = st.reshape(x, (n,))
    return x, resid, rank, s


# --------------------------------------------------------------------------------------------------------------
# Array API linalg names (vector/matrix forms over the last axes) and tensor helpers
# --------------------------------------------------------------------------------------------------------------

def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """`jnp.matmul` (the Array API's `linalg.matmul`)."""
    return _linear.matmul(x1, x2, precision=precision, preferred_element_type=preferred_element_type)


def matrix_transpose(x, /):
    """Swaps the last two axes (rank >= 2, else ValueError)."""
    return _shape.matrix_transpose(x)


def outer(x1, x2, /):
    """The outer product of two 1-D arrays (ValueError for other ranks, unlike `jnp.outer`, which flattens)."""
    x1, x2 = asarray_arg(x1, "linalg.outer"), asarray_arg(x2, "linalg.outer")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={x1.ndim} and x2.ndim={x2.ndim}")
    return _linear.outer(x1, x2)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    """`jnp.tensordot` (the Array API's `linalg.tensordot`)."""
    return _linear.tensordot(x1, x2, axes=axes, precision=precision, preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """The conjugated dot product of vectors along `axis` (broadcasting the others)."""
    return _linear.vecdot(x1, x2, axis=axis, precision=precision, preferred_element_type=preferred_element_type)


def cross(x1, x2, /, *, axis: int = -1):
    """The cross product of 3-vectors along `axis` (ValueError unless both have size 3 there)."""
    x1, x2 = asarray_arg(x1, "linalg.cross"), asarray_arg(x2, "linalg.cross")
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but they have "
                         f"x1.shape[{axis}]={x1.shape[axis]} and x2.shape[{axis}]={x2.shape[axis]}")
    return _linear.cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset: int = 0):
    """The `offset` diagonal of the matrices in the last two axes."""
    return _shape.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset: int = 0, dtype=None):
    """The sum of the `offset` diagonal of the matrices in the last two axes."""
    return _shape.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def multi_dot(arrays, *, precision=None):
    """The product of a chain of matrices (the first may be a vector, as may the last), evaluated in the order that
    needs the fewest scalar multiplications (the classic dynamic program over split points)."""
    arrays = [asarray_arg(a, "linalg.multi_dot") for a in arrays]
    if len(arrays) < 2:
        raise ValueError(f"multi_dot requires at least two arrays, got {len(arrays)}")
    first_vec, last_vec = arrays[0].ndim == 1, arrays[-1].ndim == 1
    mats = [a.reshape(1, -1) if (i == 0 and first_vec) else a.reshape(-1, 1) if (i == len(arrays) - 1 and last_vec)
            else a for i, a in enumerate(arrays)]
    for a in mats:
        if a.ndim != 2:
            raise ValueError(f"multi_dot: the inner arrays must be 2-D, got shape {a.shape}")
    n = len(mats)
    dims = [mats[0].shape[0]] + [a.shape[1] for a in mats]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return _linear.matmul(product(i, k), product(k + 1, j), precision=precision)

    out = product(0, n - 1)
    if first_vec and last_vec:
        return out.reshape(())
    if first_vec:
        return out.reshape(-1)
    if last_vec:
        return out.reshape(-1)
    return out


@staged_as_call("cond")
def cond(x, p=None):
    """The condition number of the matrices in the last two axes in norm `p` (None or 2: largest over smallest
    singular value; -2: the reverse; 1, -1, inf, -inf, 'fro', 'nuc': `norm(x, p) * norm(inv(x), p)`). A singular
    matrix gives inf (NaNs from its inverse are replaced, as in JAX)."""
    x = _inexact(x, "linalg.cond")
    if x.ndim < 2:
        raise ValueError(f"linalg.cond needs a matrix (rank >= 2), got shape {x.shape}")
    if p is None or p in (2, -2):
        s = svd(x, compute_uv=False)
        big, small = _reductions.max(s, axis=-1), _reductions.min(s, axis=-1)
        return big / small if p != -2 else small / big
    r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    return _where(_isnan(r), np.inf, r)


def tensorinv(a, ind: int = 2):
    """The inverse of `a` seen as a linear map from its last `a.ndim - ind` axes to its first `ind` axes: shape
    `a.shape[ind:] + a.shape[:ind]` (ValueError unless both parts have the same size)."""
    a = _inexact(a, "linalg.tensorinv")
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer, got {ind}")
    out_shape, in_shape = a.shape[:ind], a.shape[ind:]
    rows, cols = int(np.prod(out_shape)), int(np.prod(in_shape))
    if rows != cols:
        raise ValueError(f"tensorinv: the first {ind} axes of shape {a.shape} must have as many elements as the rest")
    return inv(a.reshape(rows, cols)).reshape(in_shape + out_shape)


def tensorsolve(a, b, axes=None):
    """The `x` with `tensordot(a, x, x.ndim) == b` (the unknown's axes are `a.shape[b.ndim:]`); `axes` first moves
    those axes of `a` to the end."""
    a, b = _inexact(a, "linalg.tensorsolve"), _inexact(b, "linalg.tensorsolve")
    if axes is not None:
        axes = [ax % a.ndim for ax in (axes if isinstance(axes, (tuple, list)) else (axes,))]
        a = _shape.moveaxis(a, axes, list(range(a.ndim - len(axes), a.ndim)))
    x_shape = a.shape[b.ndim:]
    rows, cols = int(np.prod(b.shape)), int(np.prod(x_shape))
    if rows != cols:
        raise ValueError(f"tensorsolve: a of shape {a.shape} does not map {x_shape} onto b's shape {b.shape}")
    return solve(a.reshape(rows, cols), b.reshape(rows)).reshape(x_shape)

"""Polynomials as 1-d coefficient arrays, highest power first (NumPy's `poly1d` convention): `polyval`, `polyadd`,
`polysub`, `polymul`, `polydiv`, `polyder`, `polyint`, `polyfit`, `poly`, `roots`, and `vander`.

Everything except `roots` (and `poly` of a square matrix, which needs its eigenvalues) is arithmetic, slicing,
`convolve` and `lstsq`, so it traces and differentiates. The eigenvalues of a general (non-symmetric) matrix have no
fluxion primitive; `roots` computes those of the companion matrix with LAPACK (NumPy) through `pure_callback`, and
defines its derivative analytically: for a simple root r of p, dr = -dp(r) / p'(r).
"""

from __future__ import annotations

import operator

import numpy as np

from ..staged_call import staged_as_call
from .. import core, dtypes
from ..core import Array, Tracer
from ..lax import elementwise as ew
from ..lax import structural as st
from .util import arraylike_arg, promote_args_inexact, promote_dtypes


def _len(x) -> int:
    return core.get_aval(x).shape[0]


def _inexact(name, *args):
    from .differences import _promote_inexact_no_broadcast
    return _promote_inexact_no_broadcast(name, *[arraylike_arg(a, name, i) for i, a in enumerate(args)])


def _vector(p, name, what="p"):
    if core.get_aval(p).ndim != 1:
        raise ValueError(f"{name}: {what} must be a rank-1 array of coefficients, got shape {core.get_aval(p).shape}")
    return p


@staged_as_call("polyval")
def polyval(p, x, *, unroll: int = 16):
    """p[0] * x**(n-1) + ... + p[n-1] by Horner's rule; `p`'s leading axis indexes the coefficients (further axes
    broadcast against `x`). `unroll` is accepted for compatibility (the loop is unrolled in Python).

    >>> import fluxion.numpy as jnp
    >>> jnp.polyval(jnp.array([1, 2, 3]), jnp.array([0, 1, 2]))
    Array([ 3,  6, 11], dtype=int32)
    """
    from .ufuncs import add, multiply
    from .creation import zeros_like
    p, x = promote_dtypes(arraylike_arg(p, "polyval"), arraylike_arg(x, "polyval", 1))
    n = core.get_aval(p).shape[0] if core.get_aval(p).ndim else 1
    y = zeros_like(x)
    if core.get_aval(p).ndim == 0:
        p = st.reshape(p, (1,))
    for i in range(n):
        y = add(multiply(y, x), st.index_in_dim(p, i, 0, False))
    return y


def _pad_front(a, n):
    k = _len(a)
    return a if k == n else st.pad(a, Array(np.zeros((), core.get_aval(a).dtype)), [(n - k, 0, 0)])


@staged_as_call("polyadd")
def polyadd(a1, a2):
    """Sum of two polynomials (the shorter one is aligned to the lowest powers).

    >>> import fluxion.numpy as jnp
    >>> jnp.polyadd(jnp.array([1, 2]), jnp.array([1, 0, 3]))
    Array([1, 1, 5], dtype=int32)
    """
    a1, a2 = promote_dtypes(_vector(arraylike_arg(a1, "polyadd"), "polyadd", "a1"),
                            _vector(arraylike_arg(a2, "polyadd", 1), "polyadd", "a2"))
    n = max(_len(a1), _len(a2))
    return ew.add(_pad_front(a1, n), _pad_front(a2, n))


@staged_as_call("polysub")
def polysub(a1, a2):
    """Difference of two polynomials.

    >>> import fluxion.numpy as jnp
    >>> jnp.polysub(jnp.array([1, 2]), jnp.array([1, 0, 3]))
    Array([-1,  1, -1], dtype=int32)
    """
    a1, a2 = promote_dtypes(_vector(arraylike_arg(a1, "polysub"), "polysub", "a1"),
                            _vector(arraylike_arg(a2, "polysub", 1), "polysub", "a2"))
    n = max(_len(a1), _len(a2))
    return ew.sub(_pad_front(a1, n), _pad_front(a2, n))


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """Product of two polynomials (the convolution of their coefficients), in an inexact dtype.

    `trim_leading_zeros` drops leading zero coefficients of the inputs first, which needs concrete inputs.

    >>> import fluxion.numpy as jnp
    >>> jnp.polymul(jnp.array([1, 1]), jnp.array([1, -1]))
    Array([ 1.,  0., -1.], dtype=float32)
    """
    from .signal import convolve
    a1, a2 = _inexact("polymul", a1, a2)
    a1 = st.reshape(a1, (1,)) if core.get_aval(a1).ndim == 0 else a1
    a2 = st.reshape(a2, (1,)) if core.get_aval(a2).ndim == 0 else a2
    if trim_leading_zeros and (_len(a1) > 1 or _len(a2) > 1):
        from .array_edit import trim_zeros
        a1, a2 = trim_zeros(a1, "f"), trim_zeros(a2, "f")
    if _len(a1) == 0:
        a1 = Array(np.zeros((1,), core.get_aval(a1).dtype))
    if _len(a2) == 0:
        a2 = Array(np.zeros((1,), core.get_aval(a2).dtype))
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """Quotient and remainder of `u / v` by long division; the remainder keeps `u`'s length unless
    `trim_leading_zeros` (which needs concrete values) removes its leading zeros.

    >>> import fluxion.numpy as jnp
    >>> jnp.polydiv(jnp.array([1.0, 0.0, -1.0]), jnp.array([1.0, 1.0]))
    (Array([ 1., -1.], dtype=float32), Array([0., 0., 0.], dtype=float32))
    """
    u, v = _inexact("polydiv", u, v)
    _vector(u, "polydiv", "u")
    _vector(v, "polydiv", "v")
    m, n = _len(u) - 1, _len(v) - 1
    scale = ew.div(Array(np.ones((), core.get_aval(v).dtype), True), v[0])
    q = []
    for k in range(0, m - n + 1):
        d = ew.mul(scale, u[k])
        q.append(d)
        seg = ew.sub(st.slice_in_dim(u, k, k + n + 1, 1, 0), ew.mul(d, v))
        u = st.concatenate([st.slice_in_dim(u, 0, k, 1, 0), seg, st.slice_in_dim(u, k + n + 1, m + 1, 1, 0)], 0)
    quot = st.concatenate([st.reshape(d, (1,)) for d in q], 0) if q else Array(np.zeros((1,), core.get_aval(u).dtype))
    if trim_leading_zeros:
        from .array_edit import trim_zeros
        u = trim_zeros(u, "f")
    return quot, u


def polyder(p, m: int = 1):
    """Coefficients of the `m`-th derivative of `p`.

    Raises:
      ValueError: `m` is negative.

    >>> import fluxion.numpy as jnp
    >>> jnp.polyder(jnp.array([1, 2, 3, 4]))
    Array([3., 4., 3.], dtype=float32)
    >>> jnp.polyder(jnp.array([1, 2, 3, 4]), m=2)
    Array([6., 4.], dtype=float32)
    """
    from .creation import arange
    from .reductions import prod
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    p, = _inexact("polyder", p)
    if m == 0:
        return p
    dt = core.get_aval(p).dtype
    n = _len(p)
    # Coefficient of x**j after m derivatives of x**(j+m): (j+m)(j+m-1)...(j+1).
    grid = ew.sub(st.broadcast_in_dim(arange(m, n, dtype=dt), (m, max(n - m, 0)), (1,)),
                  st.broadcast_in_dim(arange(m, dtype=dt), (m, max(n - m, 0)), (0,)))
    coeff = prod(grid, axis=0)
    return ew.mul(st.slice_in_dim(p, 0, max(n - m, 0), 1, 0), st.rev(coeff, (0,)))


def polyint(p, m: int = 1, k=None):
    """Coefficients of the `m`-th antiderivative of `p`, with integration constants `k` (a scalar or `m` values,
    the first used for the first integration; default zeros).

    Raises:
      ValueError: `m` is negative, or `k` has a length other than 1 or `m`.

    >>> import fluxion.numpy as jnp
    >>> jnp.polyint(jnp.array([3.0, 2.0, 1.0]))
    Array([1., 1., 1., 0.], dtype=float32)
    """
    from .creation import arange
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder for derivatives)")
    k_arr = Array(np.zeros((m,), dtypes.default_float_dtype()), True) if k is None else arraylike_arg(k, "polyint", 2)
    if core.get_aval(k_arr).ndim == 0 or core.get_aval(k_arr).shape == (1,):
        k_arr = st.broadcast_in_dim(st.reshape(k_arr, ()), (m,), ())
    if core.get_aval(k_arr).shape != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    p, k_arr = _inexact("polyint", p, k_arr)
    if m == 0:
        return p
    dt = core.get_aval(p).dtype
    for i in range(m):
        n = _len(p)
        p = st.concatenate([ew.div(p, arange(n, 0, -1, dtype=dt)), st.reshape(k_arr[i], (1,))], 0)
    return p


def vander(x, N: int | None = None, increasing: bool = False):
    """Vandermonde matrix: column j is `x ** (N-1-j)` (or `x ** j` if `increasing`), in `x`'s dtype.

    Raises:
      ValueError: `x` is not 1-d or `N` is negative.

    >>> import fluxion.numpy as jnp
    >>> jnp.vander(jnp.array([1, 2, 3]))
    Array([[1, 1, 1],
           [4, 2, 1],
           [9, 3, 1]], dtype=int32)
    >>> jnp.vander(jnp.array([1, 2]), 3, increasing=True)
    Array([[1, 1, 1],
           [1, 2, 4]], dtype=int32)
    """
    from .ufuncs import power
    x = arraylike_arg(x, "vander")
    if core.get_aval(x).ndim != 1:
        raise ValueError(f"x must be a one-dimensional array, got shape {core.get_aval(x).shape}")
    N = _len(x) if N is None else operator.index(N)
    if N < 0:
        raise ValueError("N must be nonnegative")
    exps = np.arange(N) if increasing else np.arange(N - 1, -1, -1)
    n = _len(x)
    xb = st.broadcast_in_dim(x, (n, N), (0,))
    return power(xb, Array(np.broadcast_to(exps.astype(dtypes.default_int_dtype()), (n, N)).copy()))


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov=False):
    """Least-squares polynomial of degree `deg` through (`x`, `y`) (`y` may hold several data sets as columns).

    Solved by `lstsq` on the column-scaled Vandermonde matrix (weights `w` multiply the rows). Returns the
    coefficients; with `full`, also the residuals, rank, singular values and `rcond`; with `cov`, the covariance
    of the coefficients (scaled by the residual variance unless cov='unscaled').

    Raises:
      TypeError: `x` is not 1-d and non-empty, `y` not 1-d or 2-d, their lengths differ, or `w` is not 1-d of
        the same length (NumPy's classes).
      ConcretizationTypeError: `deg` is traced.

    >>> import fluxion.numpy as jnp
    >>> jnp.round(jnp.polyfit(jnp.array([0.0, 1.0, 2.0]), jnp.array([1.0, 3.0, 5.0]), 1), 4)
    Array([2., 1.], dtype=float32)
    """
    from .linalg import inv, lstsq
    from .reductions import sum as _sum
    from .ufuncs import multiply, sqrt, true_divide
    if isinstance(deg, Tracer):
        raise deg._concretization_error("int", "jnp.polyfit deg")
    deg = operator.index(deg)
    x, y = _inexact("polyfit", x, y)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    order = deg + 1
    if core.get_aval(x).ndim != 1:
        raise TypeError("expected 1D vector for x")
    if _len(x) == 0:
        raise TypeError("expected non-empty vector for x")
    if core.get_aval(y).ndim < 1 or core.get_aval(y).ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if _len(x) != _len(y):
        raise TypeError("expected x and y to have same length")
    dt = core.get_aval(x).dtype
    if rcond is None:
        rcond = _len(x) * float(dtypes.finfo(dt).eps)
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w, = _inexact("polyfit", w)
        if core.get_aval(w).ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if _len(w) != _len(y):
            raise TypeError("expected w and y to have the same length")
        lhs = multiply(lhs, st.broadcast_in_dim(w, core.get_aval(lhs).shape, (0,)))
        rhs = multiply(rhs, w if core.get_aval(rhs).ndim == 1 else st.broadcast_in_dim(w, core.get_aval(rhs).shape,
                                                                                          (0,)))
    scale = sqrt(_sum(multiply(lhs, lhs), axis=0))
    lhs = true_divide(lhs, scale)
    c, _, rank, s = lstsq(lhs, rhs, rcond)
    # Squared residual norms per data set (JAX's default residuals: always computed, shape (1,) for 1-d y).
    from .linear import matmul
    err = ew.sub(rhs, matmul(lhs, c))
    resids = _sum(multiply(err, err), axis=0)
    resids = st.reshape(resids, (1,)) if core.get_aval(resids).ndim == 0 else resids
    c = true_divide(c, scale) if core.get_aval(c).ndim == 1 else true_divide(
        c, st.broadcast_in_dim(scale, core.get_aval(c).shape, (0,)))
    if full:
        return c, resids, rank, s, Array(np.asarray(rcond, dt), True)
    if cov:
        from .linear import dot, outer
        vbase = inv(dot(st.transpose(lhs, (1, 0)), lhs))
        vbase = true_divide(vbase, outer(scale, scale))
        if cov == "unscaled":
            fac = Array(np.ones((), dt), True)
        else:
            if _len(x) <= order:
                raise ValueError("the number of data points must exceed order to scale the covariance matrix")
            fac = true_divide(resids, _len(x) - order)
        if core.get_aval(y).ndim == 1:
            return c, multiply(vbase, fac)
        return c, multiply(st.expand_dims(vbase, (2,)), fac)
    return c


@staged_as_call("poly")
def poly(seq_of_zeros):
    """Coefficients of the monic polynomial with the given roots (or, for a square matrix, its characteristic
    polynomial, through its eigenvalues as in `roots`; that case is not differentiable).

    Raises:
      ValueError: the input is not 1-d or a non-empty square matrix.

    >>> import fluxion.numpy as jnp
    >>> jnp.poly(jnp.array([1.0, 2.0]))
    Array([ 1., -3.,  2.], dtype=float32)
    """
    from .signal import convolve
    z, = _inexact("poly", seq_of_zeros)
    sh = core.get_aval(z).shape
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        z = _eigvals(z)
    elif len(sh) != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    dt = core.get_aval(z).dtype
    if _len(z) == 0:
        return Array(np.ones((), dt))
    a = Array(np.ones((1,), dt))
    one = Array(np.ones((1,), dt))
    for k in range(_len(z)):
        a = convolve(a, st.concatenate([one, st.reshape(ew.neg(z[k]), (1,))], 0), mode="full")
    return a


def _complex_of(dt):
    return np.dtype(np.complex128) if dt in (np.float64, np.complex128) else np.dtype(np.complex64)


def _eigvals_host(a):
    return np.linalg.eigvals(np.asarray(a))


def _eigvals(a):
    """Eigenvalues of a general square matrix, computed by LAPACK on the host (not differentiable)."""
    from ..api import ShapeDtypeStruct
    from ..callback import pure_callback
    n = core.get_aval(a).shape[0]
    out = ShapeDtypeStruct((n,), _complex_of(core.get_aval(a).dtype))
    return pure_callback(_eigvals_host, out, a, vmap_method="sequential")


def _roots_no_zeros(p):
    n = _len(p)
    cdt = _complex_of(core.get_aval(p).dtype)
    if n < 2:
        return Array(np.zeros((0,), cdt))
    # Companion matrix: ones on the sub-diagonal, -p[1:] / p[0] in the first row.
    first = ew.div(ew.neg(st.slice_in_dim(p, 1, n, 1, 0)), p[0])
    sub = np.eye(n - 1, k=-1, dtype=core.get_aval(p).dtype)[1:]
    comp = st.concatenate([st.reshape(first, (1, n - 1)), Array(sub)], 0) if n > 2 else st.reshape(first, (1, 1))
    return _roots_with_jvp(p, comp)


def _roots_with_jvp(p, comp):
    from ..custom_derivatives import custom_jvp

    @custom_jvp
    def f(p, comp):
        return _eigvals(comp)

    @f.defjvp
    def f_jvp(primals, tangents):
        p_, comp_ = primals
        dp, _ = tangents
        r = f(p_, comp_)
        cdt = core.get_aval(r).dtype
        pc = ew.convert_element_type(p_, cdt)
        dpc = ew.convert_element_type(dp, cdt)
        # Implicit differentiation of p(r) = 0 at a simple root: p'(r) dr + dp(r) = 0.
        return r, ew.neg(ew.div(polyval(dpc, r), polyval(polyder(pc), r)))

    return f(p, comp)


def roots(p, *, strip_zeros: bool = True):
    """Roots of the polynomial `p` (complex), as the eigenvalues of its companion matrix.

    With `strip_zeros` (default) leading zero coefficients are removed, which needs a concrete `p`; with
    strip_zeros=False `p` may be traced and one NaN root is returned per leading zero, in place of zero roots
    (JAX replaces whichever roots its eigensolver lists last). The order of
    the roots is LAPACK's, as in NumPy and JAX. Differentiable at simple roots; not batched by vmap other than by
    a loop.

    Raises:
      ValueError: `p` is not 1-d.
      ConcretizationTypeError: `strip_zeros` with a traced `p`.

    >>> import fluxion.numpy as jnp
    >>> jnp.sort(jnp.roots(jnp.array([1.0, -3.0, 2.0])).real)
    Array([1., 2.], dtype=float32)
    """
    from .reductions import all as _all, argmin
    from .ufuncs import where
    p = arraylike_arg(p, "roots")
    p, = promote_args_inexact("roots", p)
    if core.get_aval(p).ndim == 0:
        p = st.reshape(p, (1,))
    if core.get_aval(p).ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    n = _len(p)
    if n < 2:
        return Array(np.zeros((0,), _complex_of(core.get_aval(p).dtype)))
    is_zero = ew.eq(p, Array(np.zeros((), core.get_aval(p).dtype), True))
    lead = where(_all(is_zero), n, argmin(is_zero))
    if strip_zeros:
        v = core.concrete_value(lead)
        if v is None:
            from .. import errors
            raise errors.ConcretizationTypeError(
                "jnp.roots with strip_zeros=True needs a concrete p (the number of leading zeros decides the "
                "output length). Pass strip_zeros=False to use it under jit; leading zeros then give NaN roots.")
        return _roots_no_zeros(st.slice_in_dim(p, int(v), n, 1, 0))
    from .indexing import take
    idt = core.get_aval(lead).dtype
    shifted = take(p, ew.rem(ew.add(st.iota(idt, n), lead), Array(np.asarray(n, idt), True)))
    r = _roots_no_zeros(shifted)
    m = _len(r)
    # The rotation moved the leading zeros to the end, which adds `lead` exact zero roots; move zero roots last
    # (stable) so that the NaN mask below replaces those rather than LAPACK's arbitrary last entries.
    from ..lax import sorting as lsort
    zero_last = ew.convert_element_type(ew.eq(r, Array(np.zeros((), core.get_aval(r).dtype), True)), np.int8)
    _, r = lsort.sort([zero_last, r], dimension=0, num_keys=1)
    keep = ew.lt(st.iota(idt, m), ew.sub(Array(np.asarray(m, idt), True), lead))
    nan = Array(np.asarray(complex(np.nan, np.nan), core.get_aval(r).dtype), True)
    return where(keep, r, nan)

"""Structured-matrix constructors of `fluxion.scipy.linalg` (mirrors `jax.scipy.linalg`): toeplitz, hankel,
circulant, companion, leslie, fiedler and convolution_matrix from arrays (leading dimensions of the vector
arguments are batch dimensions, as in JAX); hilbert, invhilbert, pascal, invpascal, helmert, hadamard and dft
from a static size, computed exactly in NumPy (integers and binomials) and rounded once."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import numpy as jnp
from .. import dtypes


def _vector(a: Any) -> Any:
    """`a` as an array with at least one dimension (a scalar is a length-1 vector)."""
    a = jnp.asarray(a)
    if a.ndim == 0:
        a = a[None]
    return a


def toeplitz(c: Any, r: Any = None) -> Any:
    """The Toeplitz matrix T[i, j] = c[i - j] for i >= j and r[j - i] above the diagonal (r[0] is ignored;
    without r, r = conj(c)). c (..., m) and r (..., n) give (..., m, n)."""
    c = _vector(c)
    r = jnp.conj(c) if r is None else _vector(r)
    dt = jnp.result_type(c, r)
    c, r = c.astype(dt), r.astype(dt)
    batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    m, n = c.shape[-1], r.shape[-1]
    # One vector holding r reversed (without r[0]) then c: T[i, j] = vals[n - 1 + i - j].
    vals = jnp.concatenate([jnp.broadcast_to(jnp.flip(r[..., 1:], -1), batch + (n - 1,)),
                            jnp.broadcast_to(c, batch + (m,))], axis=-1)
    idx = (n - 1) + np.arange(m)[:, None] - np.arange(n)[None, :]
    return vals[..., idx]


def hankel(c: Any, r: Any = None) -> Any:
    """The Hankel matrix H[i, j] = c[i + j] while i + j < m, then r[i + j - m + 1] (r[0] is ignored; without r,
    zeros). c (..., m) and r (..., n) give (..., m, n)."""
    c = _vector(c)
    r = jnp.zeros_like(c) if r is None else _vector(r)
    dt = jnp.result_type(c, r)
    c, r = c.astype(dt), r.astype(dt)
    batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    m, n = c.shape[-1], r.shape[-1]
    vals = jnp.concatenate([jnp.broadcast_to(c, batch + (m,)), jnp.broadcast_to(r[..., 1:], batch + (n - 1,))],
                           axis=-1)
    idx = np.arange(m)[:, None] + np.arange(n)[None, :]
    return vals[..., idx]


def circulant(c: Any) -> Any:
    """The circulant matrix C[i, j] = c[(i - j) mod n] (first column c); c (..., n) gives (..., n, n)."""
    c = _vector(c)
    n = c.shape[-1]
    idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % n
    return c[..., idx]


def hilbert(n: int) -> Any:
    """The n x n Hilbert matrix 1 / (i + j + 1), in the default float dtype."""
    i = np.arange(n)
    return jnp.asarray((1.0 / (i[:, None] + i[None, :] + 1)).astype(dtypes.default_float_dtype()))


def companion(a: Any) -> Any:
    """The companion matrix of the polynomial with coefficients a (highest degree first): first row -a[1:]/a[0],
    ones on the subdiagonal. a (..., k) with k >= 2 gives (..., k-1, k-1).

    Raises:
      ValueError: if a has fewer than two coefficients.
    """
    a = jnp.asarray(a)
    if a.ndim == 0 or a.shape[-1] < 2:
        raise ValueError(f"companion: the polynomial needs at least two coefficients, got shape {a.shape}")
    if not dtypes.is_inexact(a.dtype):
        a = a.astype(dtypes.default_float_dtype())
    k = a.shape[-1] - 1
    first = -a[..., 1:] / a[..., :1]
    below = jnp.broadcast_to(jnp.eye(k - 1, k, dtype=a.dtype), a.shape[:-1] + (k - 1, k))
    return jnp.concatenate([first[..., None, :], below], axis=-2)


def fiedler_companion(a: Any) -> Any:
    """The Fiedler companion matrix of the polynomial with coefficients a (highest degree first; normalized by
    a[0]): a pentadiagonal matrix with the same characteristic polynomial as `companion(a)`, from the product of
    Fiedler's elementary factors (M. Fiedler, "A note on companion matrices", Linear Algebra Appl. 372, 2003).
    With n = len(a) - 1 and b = a / a[0]: C[0, 0] = -b[1], C[1, 0] = 1; for even i, C[i, i+1] = -b[i+2] and
    C[i, i+2] = 1; for even i >= 2, C[i, i-1] = -b[i+1]; for odd i >= 3, C[i, i-2] = 1 (entries past n - 1 are
    dropped). a (..., n+1) gives (..., n, n); a single coefficient gives a (..., 0, 0) matrix.

    Raises:
      ValueError: if the last axis of a is empty.
    """
    a = _vector(a)
    if not dtypes.is_inexact(a.dtype):
        a = a.astype(dtypes.default_float_dtype())
    if a.shape[-1] == 0:
        raise ValueError(f"fiedler_companion: the last axis of 'a' must be non-empty, got shape {a.shape}")
    n = a.shape[-1] - 1
    b = a / a[..., :1]
    if n == 0:
        return jnp.zeros(a.shape[:-1] + (0, 0), a.dtype)
    # Each entry is either a constant 1, a coefficient -b[k] or zero; build the (static) pattern in NumPy and
    # gather the coefficients through it.
    source = np.zeros((n, n), np.int64)  # index into [0, 1, -b[1], ..., -b[n]]: 0 -> 0, 1 -> 1, k+1 -> -b[k]
    source[0, 0] = 2
    if n > 1:
        source[1, 0] = 1
    for i in range(0, n, 2):
        if i + 1 < n:
            source[i, i + 1] = i + 3
        if i + 2 < n:
            source[i, i + 2] = 1
        if i >= 2:
            source[i, i - 1] = i + 2
    for i in range(3, n, 2):
        source[i, i - 2] = 1
    values = jnp.concatenate([jnp.zeros_like(b[..., :1]), jnp.ones_like(b[..., :1]), -b[..., 1:]], axis=-1)
    return jnp.take(values, jnp.asarray(source.reshape(-1)), axis=-1).reshape(a.shape[:-1] + (n, n))


def dft(n: int, scale: str | None = None, *, dtype: Any = None) -> Any:
    """The n x n discrete Fourier transform matrix exp(-2 pi i j k / n), scaled by 1/sqrt(n) ("sqrtn") or 1/n
    ("n"); complex64 by default (complex128 with x64 or an explicit dtype).

    Raises:
      ValueError: for another `scale`.
    """
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"dft: scale must be None, 'sqrtn' or 'n', got {scale!r}")
    jk = np.outer(np.arange(n), np.arange(n)) % max(n, 1)
    m = np.exp(-2j * np.pi * jk / max(n, 1))
    if scale == "sqrtn":
        m = m / math.sqrt(n)
    elif scale == "n":
        m = m / n
    dt = dtypes.canonicalize_dtype(np.complex128) if dtype is None else np.dtype(dtype)
    return jnp.asarray(m.astype(dt))


def leslie(f: Any, s: Any) -> Any:
    """The Leslie matrix: fecundities f (..., n) in the first row, survival rates s (..., n-1) on the
    subdiagonal.

    Raises:
      ValueError: unless s has exactly one entry fewer than f.
    """
    f, s = jnp.asarray(f), jnp.asarray(s)
    if f.ndim == 0 or s.ndim == 0 or s.shape[-1] != f.shape[-1] - 1:
        raise ValueError(f"leslie: s must have one entry fewer than f, got shapes {f.shape} and {s.shape}")
    dt = jnp.result_type(f, s)
    n = f.shape[-1]
    batch = np.broadcast_shapes(f.shape[:-1], s.shape[:-1])
    f, s = jnp.broadcast_to(f.astype(dt), batch + (n,)), jnp.broadcast_to(s.astype(dt), batch + (n - 1,))
    sub = s[..., :, None] * jnp.eye(n - 1, n, dtype=dt)
    return jnp.concatenate([f[..., None, :], sub], axis=-2)


def fiedler(a: Any) -> Any:
    """The symmetric Fiedler matrix |a[i] - a[j]|; a (..., n) gives (..., n, n)."""
    a = jnp.asarray(a)
    return jnp.abs(a[..., :, None] - a[..., None, :])


def _static_n(name: str, n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"{name}: n must be a non-negative Python integer, got {n!r}")
    return int(n)


def hadamard(n: int, dtype: Any = int) -> Any:
    """The n x n Hadamard matrix of Sylvester's construction (n a power of 2), in `dtype` (int: int32, or int64
    with x64, as JAX).

    Raises:
      ValueError: if n is not a positive power of 2.
    """
    n = _static_n("hadamard", n)
    if n < 1 or n & (n - 1):
        raise ValueError(f"hadamard: n must be a positive power of 2, got {n}")
    h = np.ones((1, 1), np.int64)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return jnp.asarray(h.astype(dtypes.canonicalize_dtype(dtype)))


def helmert(n: int, full: bool = False) -> Any:
    """The Helmert matrix: row 0 is 1/sqrt(n); row k > 0 has k entries 1/sqrt(k(k+1)), then -k/sqrt(k(k+1)).
    Rows 1..n-1 (an (n-1, n) matrix) unless `full`. Default float dtype."""
    n = _static_n("helmert", n)
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
    d = np.arange(n) * np.arange(1, n + 1)
    h[0] = 1
    d[0] = n
    h = h / np.sqrt(d)[:, None]
    return jnp.asarray((h if full else h[1:]).astype(dtypes.default_float_dtype()))


def pascal(n: int, kind: str | None = None) -> Any:
    """The n x n Pascal matrix: "symmetric" (the default) C(i + j, i), "lower" C(i, j), "upper" its transpose;
    exact binomials rounded once to the default float dtype (JAX computes them through gammaln).

    Raises:
      ValueError: for another `kind`.
    """
    n = _static_n("pascal", n)
    kind = kind or "symmetric"
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"pascal: kind must be 'symmetric', 'lower' or 'upper', got {kind!r}")
    if kind == "symmetric":
        m = [[math.comb(a + b, a) for b in range(n)] for a in range(n)]
    else:
        m = [[math.comb(a, b) if a >= b else 0 for b in range(n)] for a in range(n)]
    out = np.array(m, dtype=np.float64).reshape(n, n)
    return jnp.asarray((out.T if kind == "upper" else out).astype(dtypes.default_float_dtype()))


def invpascal(n: int, kind: str | None = None) -> Any:
    """The inverse of `pascal(n, kind)`, from exact integers: the lower one is (-1)^(i+j) C(i, j), and the
    symmetric one is upper^-1 lower^-1."""
    n = _static_n("invpascal", n)
    kind = kind or "symmetric"
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"invpascal: kind must be 'symmetric', 'lower' or 'upper', got {kind!r}")
    lower = [[(-1) ** (a + b) * math.comb(a, b) if a >= b else 0 for b in range(n)] for a in range(n)]
    low = np.array(lower, dtype=object).reshape(n, n)
    if kind == "lower":
        out = low
    elif kind == "upper":
        out = low.T
    else:
        out = low.T.dot(low)  # (L L^T)^-1 = L^-T L^-1
    return jnp.asarray(np.array(out, dtype=np.float64).astype(dtypes.default_float_dtype()))


def invhilbert(n: int) -> Any:
    """The inverse of the n x n Hilbert matrix from its closed form in binomials (exact integers, rounded once
    to the default float dtype):
    (-1)^(i+j) (i+j+1) C(n+i, n-j-1) C(n+j, n-i-1) C(i+j, i)^2."""
    n = _static_n("invhilbert", n)
    out = [[(-1) ** (i + j) * (i + j + 1) * math.comb(n + i, n - j - 1) * math.comb(n + j, n - i - 1)
            * math.comb(i + j, i) ** 2 for j in range(n)] for i in range(n)]
    return jnp.asarray(np.array(out, dtype=np.float64).reshape(n, n).astype(dtypes.default_float_dtype()))


def convolution_matrix(a: Any, n: int, mode: str = "full") -> Any:
    """The matrix A with A @ v == convolve(a, v, mode) for any v of length n: a Toeplitz matrix with a in its
    first column, rows trimmed for "same" and "valid" as `scipy.signal.convolve` trims its output.

    Raises:
      ValueError: for a non-1-D a, n < 1 or an unknown mode.
    """
    a = jnp.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"convolution_matrix: a must be 1-D, got shape {a.shape}")
    n = _static_n("convolution_matrix", n)
    if n < 1:
        raise ValueError("convolution_matrix: n must be at least 1")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolution_matrix: mode must be 'full', 'same' or 'valid', got {mode!r}")
    m = a.shape[0]
    col = jnp.concatenate([a, jnp.zeros(n - 1, a.dtype)])
    row = jnp.concatenate([a[:1], jnp.zeros(n - 1, a.dtype)])
    full = toeplitz(col, row)
    if mode == "full":
        return full
    if mode == "valid":
        trim = min(n, m) - 1
        start, stop = trim, full.shape[0] - trim
    else:  # "same": the output has max(m, n) rows, centred like convolve's
        trim = min(n, m) - 1
        start = trim // 2
        stop = full.shape[0] - (trim - start)
    return full[start:stop]

"""Structured-matrix constructors of `fluxion.scipy.linalg`: toeplitz, hankel, circulant, hilbert, companion,
dft, leslie, fiedler (mirrors `jax.scipy.linalg`; leading dimensions of the vector arguments are batch
dimensions, as in JAX)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import numpy as jnp
from .. import dtypes


def _vector(name: str, a: Any, arg: str) -> Any:
    a = jnp.asarray(a)
    if a.ndim == 0:
        a = a[None]
    return a


def toeplitz(c: Any, r: Any = None) -> Any:
    """The Toeplitz matrix T[i, j] = c[i - j] for i >= j and r[j - i] above the diagonal (r[0] is ignored;
    without r, r = conj(c)). c (..., m) and r (..., n) give (..., m, n)."""
    c = _vector("toeplitz", c, "c")
    r = jnp.conj(c) if r is None else _vector("toeplitz", r, "r")
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
    c = _vector("hankel", c, "c")
    r = jnp.zeros_like(c) if r is None else _vector("hankel", r, "r")
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
    c = _vector("circulant", c, "c")
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

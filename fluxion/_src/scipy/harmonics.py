"""Spherical harmonics `sph_harm_y` of `fluxion.scipy.special`.

The orthonormalized associated Legendre functions are built by the standard three-term recurrences over the
(static) degrees up to `n_max`, for every element at once, and the wanted (degree, order) pair is selected per
element; everything is `fluxion.numpy`, so the result differentiates in theta and phi, traces and batches.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import numpy as jnp
from .. import core, dtypes
from ..errors import ConcretizationTypeError

__all__ = ["sph_harm_y"]


def _normalized_legendre(n, order, x, s, n_max):
    """sqrt((2n+1)/(4 pi) (n-m)!/(n+m)!) P_n^m(x) for each element's degree n and order m = |order| (with the
    Condon-Shortley phase), where s = sqrt(1 - x^2) >= 0. Recurrences for the orthonormalized functions
    (e.g. T. Limpanuparb and J. Milthorpe, "Associated Legendre polynomials and spherical harmonics computation
    for chemistry applications", arXiv:1410.1748, 2014, eqs. 12-14):
      Pbar_0^0 = 1/sqrt(4 pi),   Pbar_m^m = -sqrt((2m+1)/(2m)) s Pbar_{m-1}^{m-1},
      Pbar_{m+1}^m = sqrt(2m+3) x Pbar_m^m,
      Pbar_l^m = a_l^m (x Pbar_{l-1}^m - Pbar_{l-2}^m / a_{l-1}^m),  a_l^m = sqrt((4l^2 - 1) / (l^2 - m^2)).
    """
    out = jnp.zeros_like(x)
    diagonal = jnp.full_like(x, 1 / math.sqrt(4 * math.pi))
    for m in range(n_max + 1):
        if m > 0:
            diagonal = -math.sqrt((2 * m + 1) / (2 * m)) * s * diagonal
        here = order == m
        out = jnp.where(here & (n == m), diagonal, out)
        if m == n_max:
            break
        prev, cur = diagonal, math.sqrt(2 * m + 3) * x * diagonal
        out = jnp.where(here & (n == m + 1), cur, out)
        a_prev = math.sqrt(2 * m + 3)  # a_{m+1}^m
        for degree in range(m + 2, n_max + 1):
            a = math.sqrt((4 * degree * degree - 1) / (degree * degree - m * m))
            prev, cur = cur, a * (x * cur - prev / a_prev)
            a_prev = a
            out = jnp.where(here & (n == degree), cur, out)
    return out


def sph_harm_y(n: Any, m: Any, theta: Any, phi: Any, diff_n: int | None = None, n_max: int | None = None) -> Any:
    """The spherical harmonic Y_n^m(theta, phi) = sqrt((2n+1)/(4 pi) (n-m)!/(n+m)!) P_n^m(cos theta) e^(i m phi),
    elementwise with broadcasting: n the degree (>= 0) and m the order (|m| <= n) as integers, theta the polar
    (colatitude) angle in [0, pi] and phi the azimuth, as SciPy's `sph_harm_y` (Condon-Shortley phase included;
    Y_n^-m = (-1)^m conj(Y_n^m)). The result is complex (complex64, or complex128 under x64) and at least 1-D, as
    JAX's.

    `n_max`, as in JAX, is the largest degree, which must be static: by default max(n), which needs a concrete n;
    degrees and orders above a given `n_max` are clipped to it in the Legendre factor (JAX's behaviour). JAX needs n, m, theta and phi to be 1-D of one
    length (or a scalar theta); fluxion broadcasts them. Values for n < 0 or |m| > n are undefined (as JAX).

    Raises:
      NotImplementedError: for `diff_n` (as JAX). ConcretizationTypeError: if n_max is None and n is traced.
    """
    if diff_n is not None:
        raise NotImplementedError("sph_harm_y: the 'diff_n' argument is not supported")
    n, m = jnp.asarray(n), jnp.asarray(m)
    theta = jnp.atleast_1d(jnp.asarray(theta))
    phi = jnp.asarray(phi)
    if n_max is None:
        concrete = core.concrete_value(n) if isinstance(n, (core.Array, core.Tracer)) else n
        if concrete is None:
            raise ConcretizationTypeError("sph_harm_y: n_max must be given statically when n is traced (under jit "
                                          "or another transformation)")
        n_max = int(np.max(np.asarray(concrete))) if np.size(concrete) else 0
    n_max = int(n_max)
    real = jnp.result_type(theta, phi)
    if not dtypes.is_inexact(real):
        real = dtypes.default_float_dtype()
    theta, phi = theta.astype(real), phi.astype(real)
    n, m, theta, phi = jnp.broadcast_arrays(n, m, theta, phi)
    order = jnp.abs(m)
    # JAX reads its table of Legendre values with both indices clipped to n_max (the phase keeps the true order).
    legendre = _normalized_legendre(jnp.minimum(n, n_max), jnp.minimum(order, n_max), jnp.cos(theta),
                                    jnp.sin(theta), n_max)
    angle = order.astype(real) * phi
    harmonic = legendre * jnp.cos(angle) + 1j * (legendre * jnp.sin(angle))
    sign = jnp.where(order % 2 == 1, -1.0, 1.0).astype(real)
    return jnp.where(m < 0, sign * jnp.conj(harmonic), harmonic)

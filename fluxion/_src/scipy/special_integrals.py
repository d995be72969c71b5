"""Error-function relatives and oscillatory integrals of `fluxion.scipy.special`: `wofz`, `dawsn`, `fresnel`,
`sici`, `spence` and `owens_t`.

Each is written with `fluxion.numpy` operations (so it traces, batches and runs under jit) and gets its derivative
from a closed form through `custom_jvp`, as JAX does for every one of these but `spence` (whose closed form is used
here too). The algorithms and their sources are named in each docstring; the split points between series and
asymptotic forms were chosen by measuring against SciPy in float64. Results are strongly typed even for Python
scalar arguments, as JAX's are.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import dtypes
from ..custom_derivatives import custom_jvp
from ..numpy.util import promote_args_inexact
from .special import _real, _strong_array

__all__ = ["dawsn", "fresnel", "owens_t", "sici", "spence", "wofz"]

_SQRT_PI = math.sqrt(math.pi)
_EULER_GAMMA = 0.57721566490153286061


# --------------------------------------------------------------------------------------------------------------
# The Faddeeva function
# --------------------------------------------------------------------------------------------------------------

def _weideman_coefficients(n: int) -> tuple[float, np.ndarray]:
    """(L, a) of Weideman's rational approximation of the Faddeeva function with `n` terms.

    J. A. C. Weideman, "Computation of the complex error function", SIAM J. Numer. Anal. 31(5), 1994: with
    Z = (L + iz) / (L - iz), w(z) = 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz)) for Im z >= 0, where the
    polynomial p's coefficients are the Fourier coefficients of (L^2 + t^2) exp(-t^2) on t = L tan(theta / 2),
    computed here once by an FFT at M = 2n equispaced angles.
    """
    m = 2 * n
    scale = math.sqrt(n / math.sqrt(2.0))
    k = np.arange(-m + 1, m)
    t = scale * np.tan(k * np.pi / (2 * m))
    samples = np.concatenate([[0.0], np.exp(-t * t) * (scale * scale + t * t)])
    coeffs = np.real(np.fft.fft(np.fft.fftshift(samples))) / (2 * m)
    return scale, coeffs[1:n + 1][::-1].copy()  # highest power first, for polyval


_WOFZ_L, _WOFZ_COEFFS = _weideman_coefficients(32)


def _wofz_upper(z):
    """w(z) for Im z >= 0 (Weideman's approximation)."""
    iz = 1j * z
    denom = _WOFZ_L - iz
    big_z = (_WOFZ_L + iz) / denom
    p = jnp.polyval(jnp.asarray(_WOFZ_COEFFS, dtype=z.dtype), big_z)
    return 2 * p / (denom * denom) + (1 / _SQRT_PI) / denom


@custom_jvp
def _wofz(z):
    upper = jnp.imag(z) >= 0
    z_up = jnp.where(upper, z, -z)
    w_up = _wofz_upper(z_up)
    # w(-z) = 2 exp(-z^2) - w(z) carries the lower half plane over to the upper one.
    return jnp.where(upper, w_up, 2 * jnp.exp(-z * z) - w_up)


@_wofz.defjvp
def _wofz_jvp(primals, tangents):
    (z,), (tz,) = primals, tangents
    w = _wofz(z)
    return w, tz * (-2 * z * w + 2j / _SQRT_PI)


def wofz(z: Any) -> Any:
    """The Faddeeva function w(z) = exp(-z^2) erfc(-iz), elementwise.

    Real inputs are promoted to complex (float32 to complex64, float64 and integers under x64 to complex128), as
    JAX does. Computed by Weideman's 32-term rational approximation (SIAM J. Numer. Anal. 31(5), 1994) in the
    upper half plane and the reflection w(-z) = 2 exp(-z^2) - w(z) below it; the accuracy is a few 1e-13
    relative near the real axis (SciPy's Faddeeva package is more accurate far into the lower half plane, where
    exp(-z^2) overflows in both). Derivative: w'(z) = -2 z w(z) + 2i / sqrt(pi).
    """
    (z,) = promote_args_inexact("wofz", z)
    if not dtypes.is_complex(z.dtype):
        z = z.astype(jnp.result_type(z.dtype, np.complex64))
    return _wofz(z)


# --------------------------------------------------------------------------------------------------------------
# Dawson's integral and the Fresnel integrals: power series near 0, the Faddeeva function elsewhere
# --------------------------------------------------------------------------------------------------------------

_DAWSN_SERIES_LIMIT = 0.2
_FRESNEL_SERIES_LIMIT = 1.6
_FRESNEL_SERIES_TERMS = 22


def _dawsn_series(x):
    """D(x) = sum_n (-2)^n x^(2n+1) / (2n+1)!! (Abramowitz & Stegun 7.1.17 with erf's series), for small |x|."""
    x2 = x * x
    term, total = x, x
    for n in range(1, 12):
        term = term * (-2 * x2) / (2 * n + 1)
        total = total + term
    return total


@custom_jvp
def _dawsn(x):
    small = jnp.abs(x) < _DAWSN_SERIES_LIMIT
    series = _dawsn_series(jnp.where(small, x, jnp.zeros_like(x)))
    # For real x, Im w(x) = 2 D(x) / sqrt(pi) (Abramowitz & Stegun 7.1.3 and 7.1.8).
    safe = jnp.where(small, jnp.ones_like(x), x)
    far = (_SQRT_PI / 2) * jnp.imag(_wofz(safe.astype(jnp.result_type(x.dtype, np.complex64))))
    value = jnp.where(small, series, far.astype(x.dtype))
    return jnp.where(jnp.isinf(x), jnp.zeros_like(x), value)  # D(x) ~ 1 / (2x)


@_dawsn.defjvp
def _dawsn_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    d = _dawsn(x)
    return d, tx * (1 - 2 * x * d)


def dawsn(x: Any) -> Any:
    """Dawson's integral D(x) = exp(-x^2) int_0^x exp(t^2) dt, elementwise, for real x.

    A power series for |x| < 0.2, and D(x) = sqrt(pi)/2 Im w(x) (the Faddeeva function, `wofz`) elsewhere
    (Abramowitz & Stegun 7.1.3, 7.1.17); JAX uses Cody's rational approximations, which agree to about 1e-14.
    Derivative: D'(x) = 1 - 2 x D(x).

    Raises:
      ValueError: for complex input (as JAX).
    """
    (x,) = _real("dawsn", x)
    return _strong_array(_dawsn(x))


def _fresnel_series(x):
    """(S(x), C(x)) from their power series (Abramowitz & Stegun 7.3.11, 7.3.13):
    C = sum_n (-1)^n (pi/2)^(2n) x^(4n+1) / ((2n)! (4n+1)), S = sum_n (-1)^n (pi/2)^(2n+1) x^(4n+3) / ((2n+1)! (4n+3)).
    Both are driven by t_k = (pi/2 x^2)^k / k! x, alternating between C (even k) and S (odd k)."""
    u = (math.pi / 2) * x * x
    term = x
    c_sum, s_sum = x, jnp.zeros_like(x)
    for k in range(1, 2 * _FRESNEL_SERIES_TERMS):
        term = term * u / k
        sign = -1.0 if (k // 2) % 2 else 1.0
        if k % 2:
            s_sum = s_sum + sign * term / (2 * k + 1)
        else:
            c_sum = c_sum + sign * term / (2 * k + 1)
    return s_sum, c_sum


def _fresnel_far(x):
    """(S(x), C(x)) for x > 0 from C + iS = (1 + i)/2 (1 - exp(i pi x^2 / 2) w((1 + i) sqrt(pi)/2 x)), which is
    erf((1 - i) sqrt(pi)/2 x) (Abramowitz & Stegun 7.3.22) with erf written through the Faddeeva function."""
    cdt = jnp.result_type(x.dtype, np.complex64)
    xc = x.astype(cdt)
    w = _wofz((0.5 + 0.5j) * _SQRT_PI * xc)
    phase = jnp.exp(0.5j * math.pi * xc * xc)
    both = (0.5 + 0.5j) * (1 - phase * w)
    return jnp.imag(both).astype(x.dtype), jnp.real(both).astype(x.dtype)


@custom_jvp
def _fresnel(x):
    ax = jnp.abs(x)
    small = ax < _FRESNEL_SERIES_LIMIT
    s_near, c_near = _fresnel_series(jnp.where(small, ax, jnp.zeros_like(ax)))
    s_far, c_far = _fresnel_far(jnp.where(small | jnp.isinf(ax), jnp.full_like(ax, 2.0), ax))
    # Past the largest finite float the limits 1/2 are exact; the phase would be NaN there.
    s = jnp.where(small, s_near, jnp.where(jnp.isinf(ax), jnp.full_like(ax, 0.5), s_far))
    c = jnp.where(small, c_near, jnp.where(jnp.isinf(ax), jnp.full_like(ax, 0.5), c_far))
    sign = jnp.sign(x)
    return sign * s, sign * c


@_fresnel.defjvp
def _fresnel_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    s, c = _fresnel(x)
    arg = (math.pi / 2) * x * x
    return (s, c), (tx * jnp.sin(arg), tx * jnp.cos(arg))


def fresnel(x: Any) -> tuple:
    """The Fresnel integrals (S(x), C(x)) = (int_0^x sin(pi t^2 / 2) dt, int_0^x cos(pi t^2 / 2) dt), for real x.

    Power series for |x| < 1.6 and the Faddeeva function (`wofz`) beyond (Abramowitz & Stegun 7.3.11, 7.3.13,
    7.3.22); both are odd in x and tend to 1/2. JAX uses Cephes' rational approximations; the values agree to
    about 1e-13. Derivatives: S' = sin(pi x^2 / 2), C' = cos(pi x^2 / 2).

    Raises:
      NotImplementedError: for complex input (JAX supports only real arguments as well).
    """
    (x,) = promote_args_inexact("fresnel", x)
    if dtypes.is_complex(x.dtype):
        raise NotImplementedError("fresnel: complex-valued inputs are not supported")
    s, c = _fresnel(x)
    return _strong_array(s), _strong_array(c)


# --------------------------------------------------------------------------------------------------------------
# Sine and cosine integrals
# --------------------------------------------------------------------------------------------------------------

_SICI_SERIES_LIMIT = 4.0
_SICI_SERIES_TERMS = 24
_SICI_CF_TERMS = 80


def _sici_series(x):
    """(Si(x), Ci(x)) for 0 < x <= 4 by their power series (Abramowitz & Stegun 5.2.14, 5.2.16):
    Si = sum_n (-1)^n x^(2n+1) / ((2n+1) (2n+1)!), Ci = gamma + log x + sum_{n>=1} (-1)^n x^(2n) / (2n (2n)!).
    Both are driven by t_k = (-1)^floor(k/2) x^k / k!: odd k feed Si, even k feed Ci."""
    term = x
    si, ci_sum = x, jnp.zeros_like(x)
    for k in range(2, 2 * _SICI_SERIES_TERMS):
        term = term * x / k
        sign = -1.0 if (k // 2) % 2 else 1.0
        if k % 2:
            si = si + sign * term / k
        else:
            ci_sum = ci_sum + sign * term / k
    return si, _EULER_GAMMA + jnp.log(x) + ci_sum


def _sici_far(x):
    """(Si(x), Ci(x)) for x >= 4 from E1(ix) = -Ci(x) + i (Si(x) - pi/2) (Abramowitz & Stegun 5.2.23), with E1
    from its continued fraction E1(z) = exp(-z) / (z + 1 - 1^2 / (z + 3 - 2^2 / (z + 5 - ...))) (A&S 5.1.22),
    evaluated from the tail with a fixed number of terms."""
    z = 1j * x.astype(jnp.result_type(x.dtype, np.complex64))
    tail = jnp.zeros_like(z)
    for k in range(_SICI_CF_TERMS, 0, -1):
        tail = (k * k) / (z + (2 * k + 1) - tail)
    e1 = jnp.exp(-z) / (z + 1 - tail)
    return (math.pi / 2 + jnp.imag(e1)).astype(x.dtype), (-jnp.real(e1)).astype(x.dtype)


@custom_jvp
def _sici(x):
    ax = jnp.abs(x)
    small = ax <= _SICI_SERIES_LIMIT
    si_near, ci_near = _sici_series(jnp.where(small, ax, jnp.ones_like(ax)))
    si_far, ci_far = _sici_far(jnp.where(small | jnp.isinf(ax), jnp.full_like(ax, 5.0), ax))
    si = jnp.where(small, si_near, jnp.where(jnp.isinf(ax), jnp.full_like(ax, math.pi / 2), si_far))
    ci = jnp.where(small, ci_near, jnp.where(jnp.isinf(ax), jnp.zeros_like(ax), ci_far))
    ci = jnp.where(ax == 0, jnp.full_like(ax, -np.inf), ci)
    ci = jnp.where(jnp.isneginf(x), jnp.full_like(ax, np.nan), ci)
    return jnp.sign(x) * si, ci


@_sici.defjvp
def _sici_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    si, ci = _sici(x)
    return (si, ci), (tx * jnp.sinc(x / math.pi), tx * jnp.cos(x) / x)


def sici(x: Any) -> tuple:
    """The sine and cosine integrals (Si(x), Ci(x)): Si = int_0^x sin(t)/t dt, Ci = gamma + log|x| +
    int_0^|x| (cos t - 1)/t dt, for real x.

    Power series for |x| <= 4, the continued fraction of E1(i|x|) beyond (Abramowitz & Stegun 5.2.14, 5.2.16,
    5.2.23, 5.1.22). Si is odd; for negative x, Ci is Ci(|x|) (the real part, as JAX returns; SciPy adds i pi
    only for complex input) and Ci(-inf) is NaN. Ci(0) = -inf. Derivatives: Si' = sin(x)/x, Ci' = cos(x)/x.

    Raises:
      ValueError: for complex input (as JAX).
    """
    (x,) = promote_args_inexact("sici", x)
    if dtypes.is_complex(x.dtype):
        raise ValueError("sici does not support complex-valued inputs.")
    si, ci = _sici(x)
    return _strong_array(si), _strong_array(ci)


# --------------------------------------------------------------------------------------------------------------
# Spence's function
# --------------------------------------------------------------------------------------------------------------

def _bernoulli_dilog_coefficients(count: int) -> list:
    """c_k with Li2(1 - exp(-u)) = u - u^2/4 + sum_k c_k u^(2k+1), c_k = B_2k / (2k+1)! (the Bernoulli-number series
    of the dilogarithm in u = -log(1 - y), convergent for |u| < 2 pi)."""
    from fractions import Fraction
    b = [Fraction(1)]
    for m in range(1, 2 * count + 1):  # B_m from sum_{j<=m} C(m+1, j) B_j = 0
        b.append(-sum(math.comb(m + 1, j) * b[j] for j in range(m)) / (m + 1))
    return [float(b[2 * k] / math.factorial(2 * k + 1)) for k in range(1, count + 1)]


_DILOG_COEFFS = _bernoulli_dilog_coefficients(12)


def _spence_near_one(x):
    """spence(x) = Li2(1 - x) for x in [1/2, 2], with u = -log x in [-log 2, log 2]."""
    u = -jnp.log(x)
    u2 = u * u
    odd = jnp.zeros_like(u)
    for c in reversed(_DILOG_COEFFS):
        odd = (odd + c) * u2
    return (u - 0.25 * u2 + u * odd) + 0.0  # + 0.0 turns the -0.0 at x = 1 into 0.0


def _spence_unit(x):
    """spence(x) for x in [0, 2]: below 1/2 through the reflection Li2(y) + Li2(1 - y) = pi^2/6 - log(y) log(1-y)."""
    low = x < 0.5
    direct = _spence_near_one(jnp.where(low, jnp.ones_like(x), x))
    y = jnp.where(low, x, jnp.full_like(x, 0.25))
    safe_y = jnp.where(y == 0, jnp.full_like(y, 0.25), y)  # log(0) * log1p(-0) would be NaN: the limit is 0
    log_term = jnp.where(y == 0, jnp.zeros_like(y), jnp.log(safe_y) * jnp.log1p(-safe_y))
    reflected = math.pi ** 2 / 6 - log_term - _spence_near_one(1 - y)
    return jnp.where(low, reflected, direct)


@custom_jvp
def _spence(x):
    big = x > 2
    inner = _spence_unit(jnp.where(big, 1 / jnp.where(big, x, jnp.ones_like(x)), x))
    # Inversion: Li2(1 - x) + Li2(1 - 1/x) = -log(x)^2 / 2.
    log_x = jnp.log(jnp.where(big, x, jnp.ones_like(x)))
    value = jnp.where(big, -inner - 0.5 * log_x * log_x, inner)
    # NaN at +inf too, as both SciPy and JAX (the limit is -inf).
    return jnp.where((x < 0) | jnp.isnan(x) | jnp.isposinf(x), jnp.full_like(x, np.nan), value)


@_spence.defjvp
def _spence_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    # d/dx Li2(1 - x) = log(x) / (1 - x), whose limit at x = 1 is -1.
    at_one = x == 1
    safe = jnp.where(at_one, jnp.full_like(x, 2.0), x)
    slope = jnp.where(at_one, -jnp.ones_like(x), jnp.log(safe) / (1 - safe))
    return _spence(x), tx * slope


def spence(x: Any) -> Any:
    """Spence's function spence(x) = int_1^x log(t) / (1 - t) dt = Li2(1 - x), elementwise, for real x >= 0
    (NaN for x < 0, as JAX; SciPy also takes complex x).

    The Bernoulli-number series of the dilogarithm in log x on [1/2, 2] (Abramowitz & Stegun 27.7; the series is
    e.g. in L. Lewin, "Polylogarithms and associated functions", 1981, 1.13), the reflection
    Li2(y) + Li2(1 - y) = pi^2/6 - log(y) log(1 - y) below 1/2 and the inversion
    Li2(1 - x) + Li2(1 - 1/x) = -log(x)^2 / 2 above 2. spence(0) = pi^2/6, spence(1) = 0, spence(inf) = NaN (as SciPy and JAX).
    Derivative: log(x) / (1 - x) (-1 at x = 1).

    Raises:
      TypeError: for an input whose dtype is not float32 or float64, integers included (as JAX).
    """
    x = jnp.asarray(x)
    # No promotion, as JAX: an integer x is rejected rather than converted.
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"spence: x.dtype={x.dtype} is not supported; only float32 and float64 are")
    return _strong_array(_spence(x))


# --------------------------------------------------------------------------------------------------------------
# Owen's T function
# --------------------------------------------------------------------------------------------------------------

_LEGENDRE_NODES, _LEGENDRE_WEIGHTS = np.polynomial.legendre.leggauss(40)
# Squared nodes and weights on [0, 1] (the rule mapped from [-1, 1]).
_OWENS_NODES, _OWENS_WEIGHTS = (0.5 * (_LEGENDRE_NODES + 1)) ** 2, 0.5 * _LEGENDRE_WEIGHTS


def _owens_t_quadrature(h, a):
    """T(h, a) = a / (2 pi) int_0^1 exp(-h^2 (1 + a^2 t^2) / 2) / (1 + a^2 t^2) dt by 40-point Gauss-Legendre
    quadrature (the integrand is smooth for |a| <= 1: its poles sit at t = +-i/a)."""
    r = 1 + (a * a)[..., None] * jnp.asarray(_OWENS_NODES, dtype=a.dtype)
    integrand = jnp.exp(-0.5 * (h * h)[..., None] * r) / r
    return a / (2 * math.pi) * jnp.sum(integrand * jnp.asarray(_OWENS_WEIGHTS, dtype=a.dtype), axis=-1)


@custom_jvp
def _owens_t(h, a):
    h = jnp.abs(h)
    abs_a = jnp.abs(a)
    inner = abs_a <= 1
    a_used = jnp.where(inner, abs_a, 1 / jnp.where(inner, jnp.ones_like(abs_a), abs_a))
    h_used = jnp.where(inner, h, abs_a * h)
    t = _owens_t_quadrature(h_used, a_used)
    # For |a| > 1 (h >= 0): T(h, a) = (p + q)/2 - p q - T(a h, 1/a) with p = Q(h), q = Q(a h) the upper normal
    # tails (Owen 1956, eq. 2.3), written in the tails so nothing cancels for large h.
    p = 0.5 * lax.erfc(h / math.sqrt(2))
    q = 0.5 * lax.erfc(abs_a * h / math.sqrt(2))
    outer = 0.5 * (p + q) - p * q - t
    value = jnp.where(inner, t, outer)
    value = jnp.where(jnp.isposinf(abs_a), 0.5 * p, value)  # T(h, inf) = Q(|h|) / 2
    result = jnp.sign(a) * value
    return jnp.where(jnp.isnan(a) | jnp.isnan(h), jnp.full_like(result, np.nan), result)


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
    (h, a), (th, ta) = primals, tangents
    value = _owens_t(h, a)
    # dT/dh = -phi(h) erf(a h / sqrt 2) / 2, dT/da = exp(-h^2 (1 + a^2) / 2) / (2 pi (1 + a^2)).
    d_h = -jnp.exp(-0.5 * h * h) * lax.erf(a * h / math.sqrt(2)) / (2 * math.sqrt(2 * math.pi))
    d_a = jnp.exp(-0.5 * h * h * (1 + a * a)) / (2 * math.pi * (1 + a * a))
    return value, th * d_h + ta * d_a


def owens_t(h: Any, a: Any) -> Any:
    """Owen's T function T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx, elementwise with
    broadcasting, for real h and a.

    40-point Gauss-Legendre quadrature of the defining integral for |a| <= 1, and Owen's identity relating
    T(h, a) to T(a h, 1/a) for |a| > 1 (D. B. Owen, "Tables for computing bivariate normal probabilities", Ann.
    Math. Statist. 27, 1956). T is even in h and odd in a. JAX uses a 13-point rule on the same reduction; values
    agree to about 1e-14 for moderate h (both lose relative accuracy once exp(-h^2/2) underflows). Derivatives
    in closed form in both arguments.
    """
    h, a = _real("owens_t", h, a)
    h, a = jnp.broadcast_arrays(h, a)
    return _strong_array(_owens_t(h, a))

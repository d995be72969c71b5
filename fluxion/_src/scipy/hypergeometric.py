"""The hypergeometric functions `hyp1f1` (confluent) and `hyp2f1` (Gauss) of `fluxion.scipy.special`.

Sums run in `lax.while_loop`s until every element's next term is below machine epsilon relative to its sum (at
most `_MAX_TERMS` terms), so they trace, batch and run under jit. The derivative is attached with `custom_jvp`
from the term-wise differentiated power series for the parameters and the identities for d/dx, as JAX does; like
JAX's, those series are while loops, so derivatives are first order in reverse mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import lax
from ... import numpy as jnp
from ..custom_derivatives import custom_jvp
from .special import _real, _strong_array, digamma, gammaln, gammasgn

__all__ = ["hyp1f1", "hyp2f1"]

_MAX_TERMS = 500
# Beyond this |x| the power series needs too many terms (and cancels for x < 0): the asymptotic expansion is used.
_ASYMPTOTIC_LIMIT = 100.0


def _sum_series(first_term, next_ratio, weight=None):
    """sum_k w_k t_k with t_0 = `first_term`, t_{k+1} = t_k * next_ratio(k) and weights w_k = weight(k) (1 if
    None), stopped once every element's term is negligible against its sum."""
    eps = float(np.finfo(first_term.dtype).eps)

    def w(k):
        return 1.0 if weight is None else weight(k)

    def cond(state):
        k, term, total = state
        big = jnp.abs(term) > eps * jnp.abs(total)
        return (k < _MAX_TERMS) & jnp.any(big | (total == 0) & (term != 0))

    def body(state):
        k, term, total = state
        term = term * next_ratio(k)
        return k + 1, term, total + w(k + 1) * term

    init = (jnp.asarray(0, np.int32), first_term, w(0) * first_term)
    return lax.while_loop(cond, body, init)[2]


def _power_series(a, b, x):
    """M(a, b, x) = sum_k (a)_k / ((b)_k k!) x^k (DLMF 13.2.2); every term is positive for a, b, x > 0."""
    return _sum_series(jnp.ones_like(x), lambda k: (a + k) / (b + k) * x / (k + 1))


def _asymptotic(a, b, x):
    """M(a, b, x) for large positive x: Gamma(b)/Gamma(a) e^x x^(a-b) sum_s (b-a)_s (1-a)_s / s! x^-s (DLMF 13.7.2,
    the exponentially small second term dropped), with the gamma ratio through log-gamma and signs."""
    series = _sum_series(jnp.ones_like(x), lambda k: (b - a + k) * (1 - a + k) / ((k + 1) * x))
    ratio = gammasgn(b) * gammasgn(a) * jnp.exp(gammaln(b) - gammaln(a) + x + (a - b) * jnp.log(x))
    return ratio * series


def _positive_x(a, b, x):
    """M(a, b, x) for x >= 0."""
    far = x >= _ASYMPTOTIC_LIMIT
    near_x = jnp.where(far, jnp.zeros_like(x), x)
    far_x = jnp.where(far, x, jnp.full_like(x, _ASYMPTOTIC_LIMIT))
    return jnp.where(far, _asymptotic(a, b, far_x), _power_series(a, b, near_x))


@custom_jvp
def _hyp1f1(a, b, x):
    # Kummer's transformation M(a, b, x) = e^x M(b - a, b, -x) (DLMF 13.2.39) turns x < 0 into a positive
    # argument, where the series does not cancel.
    negative = x < 0
    ax = jnp.abs(x)
    a_used = jnp.where(negative, b - a, a)
    value = _positive_x(a_used, b, ax)
    value = jnp.where(negative, jnp.exp(x) * value, value)
    # Special cases (JAX's conventions): a = 0 gives 1 (also for b = 0), a = b gives e^x, b = 0 otherwise inf.
    value = jnp.where((b == 0) & (a != 0), jnp.full_like(value, np.inf), value)
    value = jnp.where((a == b) & (a != 0), jnp.exp(x), value)
    return jnp.where(a == 0, jnp.ones_like(value), value)


def _d_da(a, b, x):
    """dM/da = sum_k (a)_k / ((b)_k k!) x^k (psi(a + k) - psi(a))."""
    return _sum_series(jnp.ones_like(x), lambda k: (a + k) / (b + k) * x / (k + 1),
                       weight=lambda k: digamma(a + k) - digamma(a))


def _d_db(a, b, x):
    """dM/db = sum_k (a)_k / ((b)_k k!) x^k (psi(b) - psi(b + k))."""
    return _sum_series(jnp.ones_like(x), lambda k: (a + k) / (b + k) * x / (k + 1),
                       weight=lambda k: digamma(b) - digamma(b + k))


@_hyp1f1.defjvp
def _hyp1f1_jvp(primals, tangents):
    (a, b, x), (ta, tb, tx) = primals, tangents
    value = _hyp1f1(a, b, x)
    d_x = a / b * _hyp1f1(a + 1, b + 1, x)
    return value, ta * _d_da(a, b, x) + tb * _d_db(a, b, x) + tx * d_x


def hyp1f1(a: Any, b: Any, x: Any) -> Any:
    """Kummer's confluent hypergeometric function M(a, b, x) = 1F1(a; b; x) = sum_k (a)_k / ((b)_k k!) x^k,
    elementwise with broadcasting, for real arguments.

    The power series for 0 <= x < 100 and the large-x asymptotic expansion beyond (DLMF 13.2.2, 13.7.2; the
    method of J. Pearson, S. Olver and M. Porter, "Numerical methods for the computation of the confluent and
    Gauss hypergeometric functions", Numer. Algorithms 74, 2017, as in JAX); negative x goes through Kummer's
    transformation M(a, b, x) = e^x M(b - a, b, -x) (DLMF 13.2.39), which keeps the terms positive (JAX sums the
    cancelling series there, so it is more accurate here for x < 0). As JAX: M(0, b, x) = 1 (also for b = 0,
    where SciPy gives inf), M(a, a, x) = e^x, M(a, 0, x) = inf; large a or b make the series slow and inaccurate.
    Derivatives in all three arguments (first order in reverse mode, as JAX).

    Raises:
      ValueError: for complex input (as JAX).
    """
    a, b, x = _real("hyp1f1", a, b, x)
    a, b, x = jnp.broadcast_arrays(a, b, x)
    return _strong_array(_hyp1f1(a, b, x))


# --------------------------------------------------------------------------------------------------------------
# The Gauss hypergeometric function
# --------------------------------------------------------------------------------------------------------------

_SERIES_LIMIT = 0.7


def _near_integer(v):
    eps = 50 * float(np.finfo(v.dtype).eps)
    return jnp.abs(v - jnp.round(v)) < eps


def _gamma_ratio(num, den):
    """prod Gamma(num_i) / prod Gamma(den_j) through log-gamma and signs (1/Gamma is 0 at the poles)."""
    log = sum(gammaln(v) for v in num) - sum(gammaln(v) for v in den)
    sign = 1.0
    for v in list(num) + list(den):
        sign = sign * gammasgn(v)
    return sign * jnp.exp(log)


def _gauss_series(a, b, c, z):
    """2F1(a, b; c; z) = sum_k (a)_k (b)_k / ((c)_k k!) z^k (DLMF 15.2.1): for |z| <= 0.7, or any z < 1 when the
    series terminates (a or b a non-positive integer)."""
    return _sum_series(jnp.ones_like(z), lambda k: (a + k) * (b + k) / ((c + k) * (k + 1)) * z)


def _connection_generic(a, b, c, z):
    """2F1 for 0.7 < z < 1 and c - a - b not an integer, from series in 1 - z (DLMF 15.8.4 / A&S 15.3.6):
    Gamma(c) Gamma(d) / (Gamma(c-a) Gamma(c-b)) F(a, b; 1-d; 1-z)
    + (1-z)^d Gamma(c) Gamma(-d) / (Gamma(a) Gamma(b)) F(c-a, c-b; d+1; 1-z), d = c - a - b."""
    d = c - a - b
    w = 1 - z
    first = _gamma_ratio((c, d), (c - a, c - b)) * _gauss_series(a, b, 1 - d, w)
    second = jnp.power(w, d) * _gamma_ratio((c, -d), (a, b)) * _gauss_series(c - a, c - b, d + 1, w)
    return first + second


def _connection_integer(a, b, m, z):
    """2F1(a, b; a + b + m; z) for 0.7 < z < 1 and an integer m >= 0, the limiting form of the connection formula
    (A&S 15.3.10, 15.3.11; DLMF 15.8.10), with w = 1 - z:
    Gamma(m) Gamma(a+b+m) / (Gamma(a+m) Gamma(b+m)) sum_{n<m} (a)_n (b)_n / (n! (1-m)_n) w^n
    - (-w)^m Gamma(a+b+m) / (Gamma(a) Gamma(b)) sum_n (a+m)_n (b+m)_n / (n! (n+m)!) w^n
      (log w - psi(n+1) - psi(n+m+1) + psi(a+n+m) + psi(b+n+m))."""
    w = 1 - z
    c = a + b + m
    eps = float(np.finfo(z.dtype).eps)

    # The finite sum (empty for m = 0), over the largest m of the batch with the rest masked off.
    def finite_cond(state):
        n, _, _ = state
        return jnp.any(n < m)

    def finite_body(state):
        n, term, total = state
        term = term * (a + n) * (b + n) / ((n + 1) * (1 - m + n)) * w
        total = total + jnp.where(n + 1 < m, term, jnp.zeros_like(term))
        return n + 1, term, total

    zero = jnp.zeros_like(z)
    n0 = jnp.zeros((), z.dtype)  # the (shared) term index
    _, _, finite = lax.while_loop(finite_cond, finite_body, (n0, jnp.ones_like(z),
                                                               jnp.where(m > 0, jnp.ones_like(z), zero)))
    safe_m = jnp.where(m > 0, m, jnp.ones_like(m))
    finite = jnp.where(m > 0, _gamma_ratio((safe_m, c), (a + m, b + m)) * finite, zero)

    log_w = jnp.log(w)

    def weight(n):
        return log_w - digamma(n + 1.0) - digamma(n + m + 1) + digamma(a + n + m) + digamma(b + n + m)

    def infinite_cond(state):
        n, term, total = state
        return (n < _MAX_TERMS) & jnp.any(jnp.abs(term) > eps * jnp.abs(total))

    def infinite_body(state):
        n, term, total = state
        term = term * (a + m + n) * (b + m + n) / ((n + 1) * (n + m + 1)) * w
        return n + 1, term, total + term * weight(n + 1)

    first = jnp.exp(-gammaln(m + 1))  # 1 / m!
    _, _, infinite = lax.while_loop(infinite_cond, infinite_body, (n0, first, first * weight(n0)))
    sign = jnp.where(jnp.round(m) % 2 == 1, -1.0, 1.0).astype(z.dtype)
    return finite - sign * jnp.power(w, m) * _gamma_ratio((c,), (a, b)) * infinite


def _gauss_positive(a, b, c, z):
    """2F1 for 0 <= z < 1 (not terminating). The power series is used up to z = 0.7: measured against SciPy,
    the connection formulas lose digits to cancellation just above z = 1/2, the series far less."""
    near = z <= _SERIES_LIMIT
    z_near = jnp.where(near, z, jnp.zeros_like(z))
    z_far = jnp.where(near, jnp.full_like(z, 0.75), z)
    d = c - a - b
    integer_d = _near_integer(d)
    # Generic parameters for the elements that do not use the generic connection, so it stays finite.
    shift = jnp.where(integer_d, jnp.full_like(d, 0.5), jnp.zeros_like(d))
    generic = _connection_generic(a, b, c + shift, z_far)
    # Integer d: d >= 0 directly; d < 0 through Euler's transformation F = (1-z)^d F(c-a, c-b; c; z)
    # (DLMF 15.8.1), whose own c - a - b is -d > 0.
    m = jnp.round(d)
    positive = m >= 0
    a_i, b_i = jnp.where(positive, a, c - a), jnp.where(positive, b, c - b)
    m_i = jnp.where(integer_d, jnp.abs(m), jnp.zeros_like(m))
    integer = _connection_integer(a_i, b_i, m_i, z_far)
    integer = jnp.where(positive, integer, jnp.power(1 - z_far, m) * integer)
    far = jnp.where(integer_d, integer, generic)
    return jnp.where(near, _gauss_series(a, b, c, z_near), far)


def _terminates(v):
    return (v <= 0) & _near_integer(v)


def _gauss_core(a, b, c, x):
    """2F1 for x < 1: terminating series as they are; x < 0 through Pfaff's transformation
    F(a, b; c; x) = (1-x)^-a F(a, c-b; c; x/(x-1)) (DLMF 15.8.1), which maps x < 0 into (0, 1)."""
    finite = _terminates(a) | _terminates(b)
    negative = (x < 0) & ~finite
    z = jnp.where(negative, x / (x - 1), x)
    b_used = jnp.where(negative, c - b, b)
    z_general = jnp.where(finite, jnp.zeros_like(z), z)
    value = _gauss_positive(a, b_used, c, z_general)
    value = jnp.where(negative, jnp.power(1 - x, -a) * value, value)
    x_finite = jnp.where(finite, x, jnp.zeros_like(x))
    return jnp.where(finite, _gauss_series(a, b, c, x_finite), value)


@custom_jvp
def _hyp2f1(a, b, c, x):
    d = c - a - b
    inside = jnp.where(x < 1, x, jnp.zeros_like(x))
    value = _gauss_core(a, b, c, inside)
    at_one = _gamma_ratio((c, jnp.where(d > 0, d, jnp.ones_like(d))), (c - a, c - b))
    inf = jnp.full_like(x, np.inf)
    # The conventions of JAX (and, but for x > 1 where SciPy may return a finite continuation, of SciPy).
    value = jnp.where(x == 1, jnp.where(d > 0, at_one, inf), value)
    value = jnp.where(x > 1, inf, value)
    value = jnp.where((x < 1) & (a == c), jnp.power(1 - inside, -b), value)
    value = jnp.where((x < 1) & (b == c), jnp.power(1 - inside, -a), value)
    value = jnp.where((c == 0) | ((c < 0) & _near_integer(c) & ~(_terminates(a) | _terminates(b))), inf, value)
    return jnp.where((x == 0) | (((a == 0) | (b == 0)) & (c != 0)), jnp.ones_like(value), value)


def _hyp2f1_param_derivative(a, b, c, x, weight):
    return _sum_series(jnp.ones_like(x), lambda k: (a + k) * (b + k) / ((c + k) * (k + 1)) * x, weight=weight)


@_hyp2f1.defjvp
def _hyp2f1_jvp(primals, tangents):
    (a, b, c, x), (ta, tb, tc, tx) = primals, tangents
    value = _hyp2f1(a, b, c, x)
    # As JAX: the parameter derivatives from the term-wise differentiated power series (so for |x| < 1, slowly
    # near |x| = 1), the x derivative from d/dx F(a, b; c; x) = a b / c F(a+1, b+1; c+1; x) (DLMF 15.5.1).
    d_a = _hyp2f1_param_derivative(a, b, c, x, lambda k: digamma(a + k) - digamma(a))
    d_b = _hyp2f1_param_derivative(a, b, c, x, lambda k: digamma(b + k) - digamma(b))
    d_c = _hyp2f1_param_derivative(a, b, c, x, lambda k: digamma(c) - digamma(c + k))
    d_x = a * b / c * _hyp2f1(a + 1, b + 1, c + 1, x)
    return value, ta * d_a + tb * d_b + tc * d_c + tx * d_x


def hyp2f1(a: Any, b: Any, c: Any, x: Any) -> Any:
    """The Gauss hypergeometric function 2F1(a, b; c; x) = sum_k (a)_k (b)_k / ((c)_k k!) x^k, elementwise with
    broadcasting, for real arguments and x <= 1.

    The power series for |x| <= 0.7 and for terminating series (a or b a non-positive integer); Pfaff's
    transformation for x < 0; for 0.7 < x < 1 the connection formula to series in 1 - x, with its limiting
    digamma form when c - a - b is an integer (DLMF 15.2.1, 15.8.1, 15.8.4, 15.8.10; A&S 15.3.6, 15.3.10-12) and
    Euler's transformation for negative integer c - a - b; Gauss's sum at x = 1 (inf if c - a - b <= 0). As JAX:
    x > 1 gives inf; a non-positive integer c gives inf (unless the series terminates first); a = c or b = c
    give the closed forms (1 - x)^-b, (1 - x)^-a. JAX sums the plain series up to 250 terms even near x = 1,
    so it is less accurate there. Derivatives in all four arguments as JAX's (the parameter ones from the
    differentiated power series, valid for |x| < 1); first order in reverse mode.

    Raises:
      ValueError: for complex input (as JAX).
    """
    a, b, c, x = _real("hyp2f1", a, b, c, x)
    a, b, c, x = jnp.broadcast_arrays(a, b, c, x)
    return _strong_array(_hyp2f1(a, b, c, x))

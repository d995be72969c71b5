"""The confluent hypergeometric function `hyp1f1` of `fluxion.scipy.special`.

Sums run in `lax.while_loop`s until every element's next term is below machine epsilon relative to its sum (at
most `_MAX_TERMS` terms), so they trace, batch and run under jit. The derivative is attached with `custom_jvp`
from series for d/da and d/db and the identity d/dx M(a, b, x) = a/b M(a+1, b+1, x), as JAX does; like JAX's,
those series are while loops, so derivatives are first order in reverse mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import lax
from ... import numpy as jnp
from ..custom_derivatives import custom_jvp
from .special import _real, _strong_array, digamma, gammaln, gammasgn

__all__ = ["hyp1f1"]

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

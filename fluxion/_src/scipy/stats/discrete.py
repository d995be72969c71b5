"""Discrete distributions (mirrors `jax.scipy.stats.{poisson, bernoulli, binom, geom, nbinom, betabinom,
multinomial}`), named `<distribution>_<method>` and re-exported per distribution as `fluxion.scipy.stats`.

As in JAX, `k` is promoted to the common inexact dtype with the parameters; a log-pmf is -inf outside the support
(negative or, where SciPy treats it so, non-integer `k`), and `loc` shifts the support.
"""

from __future__ import annotations

import numpy as np

from .... import lax
from .... import numpy as jnp
from .. import special
from ...numpy.util import broadcast_shapes
from ._common import full_like, fill_where, neg_inf_outside, promote


def _exp(f):
    def pmf(*args, **kwargs):
        return jnp.exp(f(*args, **kwargs))
    pmf.__name__ = f.__name__.replace("logpmf", "pmf")
    pmf.__doc__ = f"The probability mass function, exp of `{f.__name__}` (see there for the support)."
    return pmf


# --- poisson ------------------------------------------------------------------------------------------------------

def poisson_logpmf(k, mu, loc=0):
    """k log(mu) - mu - log(k!) at k - loc; -inf for negative or non-integer k."""
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    x = k - loc
    value = special.xlogy(x, mu) - lax.lgamma(x + 1) - mu
    return neg_inf_outside((x >= 0) & (jnp.round(k) == k), value)


poisson_pmf = _exp(poisson_logpmf)


def poisson_cdf(k, mu, loc=0):
    """P(K <= k) = Q(floor(k - loc) + 1, mu) (regularized upper incomplete gamma); 0 below the support."""
    k, mu, loc = promote("poisson.cdf", k, mu, loc)
    x = k - loc
    value = special.gammaincc(jnp.floor(jnp.maximum(x, 0)) + 1, mu)
    return jnp.where(x < 0, jnp.zeros_like(value), value)


# Poisson entropy: direct summation of -p log p over k < 250 for mu < 100 (the mass beyond mu + 10 sqrt(mu) + 20
# is below float64 resolution), and the asymptotic expansion
# 1/2 log(2 pi e mu) - 1/(12 mu) - 1/(24 mu^2) - 19/(360 mu^3) beyond
# (Evans, Boersma, Blachman & Jagers, "The entropy of a Poisson distribution", SIAM Review 30, 1988).
_ENTROPY_TERMS = 250


def poisson_entropy(mu, loc=0):
    """The Shannon entropy -sum_k p(k) log p(k) of Poisson(mu) in nats (`loc` does not change it)."""
    mu, loc = promote("poisson.entropy", mu, loc)
    shape = broadcast_shapes(mu.shape, loc.shape)
    flat = jnp.ravel(mu)
    safe = jnp.where((flat > 0) & (flat < 100), flat, jnp.ones_like(flat))
    k = jnp.arange(_ENTROPY_TERMS, dtype=flat.dtype)[:, None]
    # -p log p from log p itself: entr(p) would have an infinite derivative where p underflows to 0.
    log_probs = special.xlogy(k, safe) - lax.lgamma(k + 1) - safe
    summed = -jnp.sum(jnp.exp(log_probs) * log_probs, axis=0)
    big = jnp.where(flat >= 100, flat, full_like(flat, 100.0))
    inv = 1 / big
    asymptotic = 0.5 * jnp.log(2 * np.pi * np.e * big) - inv * (1 / 12 + inv * (1 / 24 + inv * (19 / 360)))
    out = jnp.where(flat >= 100, asymptotic, summed)
    out = jnp.where(flat == 0, jnp.zeros_like(out), out)
    out = fill_where(flat < 0, out, np.nan)
    return jnp.broadcast_to(jnp.reshape(out, mu.shape), shape)


# --- bernoulli ----------------------------------------------------------------------------------------------------

def bernoulli_logpmf(k, p, loc=0):
    """log p at k - loc == 1, log(1 - p) at 0, -inf elsewhere."""
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    x = k - loc
    value = special.xlogy(x, p) + special.xlog1py(1 - x, -p)
    return neg_inf_outside((x >= 0) & (x <= 1), value)


bernoulli_pmf = _exp(bernoulli_logpmf)


def bernoulli_cdf(k, p):
    """0 for k < 0, 1 - p for 0 <= k < 1, 1 for k >= 1; NaN for p outside [0, 1] or NaN inputs."""
    k, p = promote("bernoulli.cdf", k, p)
    value = jnp.where(k < 0, jnp.zeros_like(k), jnp.where(k < 1, 1 - p, jnp.ones_like(k)))
    return fill_where(jnp.isnan(k) | jnp.isnan(p) | (p < 0) | (p > 1), value, np.nan)


def bernoulli_ppf(q, p):
    """0 where q <= 1 - p, else 1; NaN outside [0, 1] (JAX's convention: SciPy returns -1 at q == 0)."""
    q, p = promote("bernoulli.ppf", q, p)
    value = jnp.where(q <= 1 - p, jnp.zeros_like(q), jnp.ones_like(q))
    return fill_where(jnp.isnan(q) | jnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1), value, np.nan)


# --- binom, betabinom ---------------------------------------------------------------------------------------------

def _log_comb(n, k):
    return lax.lgamma(n + 1) - lax.lgamma(k + 1) - lax.lgamma(n - k + 1)


def binom_logpmf(k, n, p, loc=0):
    """log C(n, k) + k log p + (n - k) log(1 - p) at k - loc; -inf outside 0 <= k <= n."""
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    y = k - loc
    value = _log_comb(n, y) + special.xlogy(y, p) + special.xlog1py(n - y, -p)
    return neg_inf_outside((y >= 0) & (y <= n), value)


binom_pmf = _exp(binom_logpmf)


def betabinom_logpmf(k, n, a, b, loc=0):
    """log C(n, k) + log B(k + a, n - k + b) - log B(a, b) at k - loc; -inf outside 0 <= k <= n."""
    k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
    y = k - loc
    inside = (y >= 0) & (y <= n)
    safe_y = jnp.where(inside, y, jnp.zeros_like(y))
    value = _log_comb(n, safe_y) + special.betaln(safe_y + a, n - safe_y + b) - special.betaln(a, b)
    return neg_inf_outside(inside, value)


betabinom_pmf = _exp(betabinom_logpmf)


# --- geom, nbinom -------------------------------------------------------------------------------------------------

def geom_logpmf(k, p, loc=0):
    """(k - 1) log(1 - p) + log p at k - loc >= 1 (trials up to the first success); -inf below."""
    k, p, loc = promote("geom.logpmf", k, p, loc)
    x = k - loc
    value = special.xlog1py(x - 1, -p) + jnp.log(p)
    return neg_inf_outside(x >= 1, value)


geom_pmf = _exp(geom_logpmf)


def nbinom_logpmf(k, n, p, loc=0):
    """log Gamma(n + k) - log k! - log Gamma(n) + n log p + k log(1 - p) at k - loc >= 0 (failures before the
    n-th success); -inf below."""
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    value = (lax.lgamma(n + y) - lax.lgamma(y + 1) - lax.lgamma(n) + special.xlogy(n, p)
             + special.xlog1py(y, -p))
    return neg_inf_outside(y >= 0, value)


nbinom_pmf = _exp(nbinom_logpmf)


# --- multinomial --------------------------------------------------------------------------------------------------

def multinomial_logpmf(x, n, p):
    """log n! - sum_i log x_i! + sum_i x_i log p_i over the last axis; -inf where sum(x) != n.

    Differences from JAX: counts of any dtype are accepted (JAX requires integers), and the support check sums
    each row of a batched `x` separately (JAX sums over all axes, making every row of a batch -inf).

    Raises:
      ValueError: if `x` and `p` do not broadcast.
    """
    x, n, p = promote("multinomial.logpmf", x, n, p)
    value = lax.lgamma(n + 1) + jnp.sum(special.xlogy(x, p) - lax.lgamma(x + 1), axis=-1)
    return neg_inf_outside(jnp.sum(x, axis=-1) == n, value)


multinomial_pmf = _exp(multinomial_logpmf)

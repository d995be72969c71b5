"""Continuous univariate distributions (mirrors the functions of `jax.scipy.stats.<name>`).

Each function is named `<distribution>_<method>` and re-exported by `fluxion/scipy/stats/<distribution>.py` under
the method name (`fluxion.scipy.stats.norm.logpdf`). Arguments are promoted together as JAX does (integers become
the default float, Python scalars stay weak) and broadcast against each other. Location-scale families evaluate
their standard form at z = (x - loc) / scale and subtract log(scale) from log-densities; as in JAX, a non-positive
`scale` is not checked (the result is whatever the formula gives, where SciPy returns NaN).

Log-CDFs and survival functions are computed directly where a stable form exists (log_ndtr for the normal,
log(-expm1(.)) for the Gumbels, ...), so tails keep their relative accuracy.
"""

from __future__ import annotations

import math

import numpy as np

from .... import lax
from .... import numpy as jnp
from .. import special
from ._common import fill_docstrings, full_like, fill_where, log1mexp, log_diff_exp, neg_inf_outside, promote, standardize

_LOG_2PI = math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)


# --- norm ---------------------------------------------------------------------------------------------------------

def norm_logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return -0.5 * z * z - 0.5 * _LOG_2PI - jnp.log(scale)


def norm_pdf(x, loc=0, scale=1):
    return jnp.exp(norm_logpdf(x, loc, scale))


def norm_cdf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.cdf", x, loc, scale)
    return special.ndtr(standardize(x, loc, scale))


def norm_logcdf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.logcdf", x, loc, scale)
    return special.log_ndtr(standardize(x, loc, scale))


def norm_sf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.sf", x, loc, scale)
    return special.ndtr(-standardize(x, loc, scale))


def norm_logsf(x, loc=0, scale=1):
    x, loc, scale = promote("norm.logsf", x, loc, scale)
    return special.log_ndtr(-standardize(x, loc, scale))


def norm_ppf(q, loc=0, scale=1):
    q, loc, scale = promote("norm.ppf", q, loc, scale)
    return loc + scale * special.ndtri(q)


def norm_isf(q, loc=0, scale=1):
    q, loc, scale = promote("norm.isf", q, loc, scale)
    return loc - scale * special.ndtri(q)


# --- logistic -----------------------------------------------------------------------------------------------------

def logistic_logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.logpdf", x, loc, scale)
    z = jnp.abs(standardize(x, loc, scale))  # the density is even; |z| keeps exp(-|z|) from overflowing
    return -z - 2 * jnp.log1p(jnp.exp(-z)) - jnp.log(scale)


def logistic_pdf(x, loc=0, scale=1):
    return jnp.exp(logistic_logpdf(x, loc, scale))


def logistic_cdf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.cdf", x, loc, scale)
    return lax.logistic(standardize(x, loc, scale))


def logistic_sf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.sf", x, loc, scale)
    return lax.logistic(-standardize(x, loc, scale))


def logistic_ppf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.ppf", x, loc, scale)
    return loc + scale * special.logit(x)


def logistic_isf(x, loc=0, scale=1):
    x, loc, scale = promote("logistic.isf", x, loc, scale)
    return loc - scale * special.logit(x)


# --- laplace ------------------------------------------------------------------------------------------------------

def laplace_logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("laplace.logpdf", x, loc, scale)
    return -math.log(2) - jnp.log(scale) - jnp.abs(standardize(x, loc, scale))


def laplace_pdf(x, loc=0, scale=1):
    return jnp.exp(laplace_logpdf(x, loc, scale))


def laplace_cdf(x, loc=0, scale=1):
    x, loc, scale = promote("laplace.cdf", x, loc, scale)
    z = standardize(x, loc, scale)
    half_tail = 0.5 * jnp.exp(-jnp.abs(z))
    return jnp.where(z < 0, half_tail, 1 - half_tail)


# --- cauchy -------------------------------------------------------------------------------------------------------

def cauchy_logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("cauchy.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return -_LOG_PI - jnp.log(scale) - jnp.log1p(z * z)


def cauchy_pdf(x, loc=0, scale=1):
    return jnp.exp(cauchy_logpdf(x, loc, scale))


def _cauchy_standard_cdf(z):
    # 1/2 + atan(z)/pi; on the left tail atan(-1/z)/pi avoids the cancellation of 1/2 - (1/2 - tiny).
    return jnp.where(z < -1, jnp.arctan(-1 / z) / math.pi, 0.5 + jnp.arctan(z) / math.pi)


def cauchy_cdf(x, loc=0, scale=1):
    x, loc, scale = promote("cauchy.cdf", x, loc, scale)
    return _cauchy_standard_cdf(standardize(x, loc, scale))


def cauchy_logcdf(x, loc=0, scale=1):
    return jnp.log(cauchy_cdf(x, loc, scale))


def cauchy_sf(x, loc=0, scale=1):
    x, loc, scale = promote("cauchy.sf", x, loc, scale)
    return _cauchy_standard_cdf(-standardize(x, loc, scale))


def cauchy_logsf(x, loc=0, scale=1):
    return jnp.log(cauchy_sf(x, loc, scale))


def cauchy_ppf(q, loc=0, scale=1):
    q, loc, scale = promote("cauchy.ppf", q, loc, scale)
    z = jnp.tan(math.pi * (q - 0.5))
    z = jnp.where(q == 0, full_like(z, -np.inf), jnp.where(q == 1, full_like(z, np.inf), z))
    return fill_where((q < 0) | (q > 1), loc + scale * z, np.nan)


def cauchy_isf(q, loc=0, scale=1):
    q, loc, scale = promote("cauchy.isf", q, loc, scale)
    return cauchy_ppf(1 - q, loc, scale)


# --- expon --------------------------------------------------------------------------------------------------------

def expon_logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("expon.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return neg_inf_outside(z >= 0, -z - jnp.log(scale))


def expon_pdf(x, loc=0, scale=1):
    return jnp.exp(expon_logpdf(x, loc, scale))


def expon_cdf(x, loc=0, scale=1):
    x, loc, scale = promote("expon.cdf", x, loc, scale)
    z = jnp.maximum(standardize(x, loc, scale), 0)
    return -jnp.expm1(-z)


def expon_logcdf(x, loc=0, scale=1):
    x, loc, scale = promote("expon.logcdf", x, loc, scale)
    return log1mexp(jnp.maximum(standardize(x, loc, scale), 0))


def expon_sf(x, loc=0, scale=1):
    return jnp.exp(expon_logsf(x, loc, scale))


def expon_logsf(x, loc=0, scale=1):
    x, loc, scale = promote("expon.logsf", x, loc, scale)
    return -jnp.maximum(standardize(x, loc, scale), 0)


def expon_ppf(q, loc=0, scale=1):
    q, loc, scale = promote("expon.ppf", q, loc, scale)
    z = -jnp.log1p(-q)
    return fill_where((q < 0) | (q > 1), loc + scale * z, np.nan)


# --- uniform ------------------------------------------------------------------------------------------------------

def uniform_logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("uniform.logpdf", x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return neg_inf_outside(inside, -jnp.log(scale) + jnp.zeros_like(x))


def uniform_pdf(x, loc=0, scale=1):
    return jnp.exp(uniform_logpdf(x, loc, scale))


def uniform_cdf(x, loc=0, scale=1):
    x, loc, scale = promote("uniform.cdf", x, loc, scale)
    # The bounds are strongly typed arrays, as in JAX, so the result is never weak.
    zero = jnp.zeros((), x.dtype)
    return jnp.clip(standardize(x, loc, scale), zero, zero + 1)


def uniform_ppf(q, loc=0, scale=1):
    q, loc, scale = promote("uniform.ppf", q, loc, scale)
    return fill_where((q < 0) | (q > 1), loc + q * scale, np.nan)


# --- t ------------------------------------------------------------------------------------------------------------

def t_logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    z = standardize(x, loc, scale)
    half_df1 = 0.5 * (df + 1)
    normalizer = lax.lgamma(half_df1) - lax.lgamma(0.5 * df) - 0.5 * (jnp.log(df) + _LOG_PI) - jnp.log(scale)
    return normalizer - half_df1 * jnp.log1p(z * z / df)


def t_pdf(x, df, loc=0, scale=1):
    return jnp.exp(t_logpdf(x, df, loc, scale))


# --- gamma and chi2 -----------------------------------------------------------------------------------------------

def _gamma_standard_logpdf(y, a):
    return neg_inf_outside(y >= 0, special.xlogy(a - 1, y) - y - lax.lgamma(a))


def gamma_logpdf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
    return _gamma_standard_logpdf(standardize(x, loc, scale), a) - jnp.log(scale)


def gamma_pdf(x, a, loc=0, scale=1):
    return jnp.exp(gamma_logpdf(x, a, loc, scale))


def gamma_cdf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote("gamma.cdf", x, a, loc, scale)
    return special.gammainc(a, jnp.maximum(standardize(x, loc, scale), 0))


def gamma_logcdf(x, a, loc=0, scale=1):
    return jnp.log(gamma_cdf(x, a, loc, scale))


def gamma_sf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote("gamma.sf", x, a, loc, scale)
    return special.gammaincc(a, jnp.maximum(standardize(x, loc, scale), 0))


def gamma_logsf(x, a, loc=0, scale=1):
    return jnp.log(gamma_sf(x, a, loc, scale))


def chi2_logpdf(x, df, loc=0, scale=1):
    # chi2(df) is gamma(df/2) with scale 2.
    x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
    y = standardize(x, loc, scale)
    return _gamma_standard_logpdf(0.5 * y, 0.5 * df) - math.log(2) - jnp.log(scale)


def chi2_pdf(x, df, loc=0, scale=1):
    return jnp.exp(chi2_logpdf(x, df, loc, scale))


def chi2_cdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("chi2.cdf", x, df, loc, scale)
    return special.gammainc(0.5 * df, 0.5 * jnp.maximum(standardize(x, loc, scale), 0))


def chi2_logcdf(x, df, loc=0, scale=1):
    return jnp.log(chi2_cdf(x, df, loc, scale))


def chi2_sf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote("chi2.sf", x, df, loc, scale)
    return special.gammaincc(0.5 * df, 0.5 * jnp.maximum(standardize(x, loc, scale), 0))


def chi2_logsf(x, df, loc=0, scale=1):
    return jnp.log(chi2_sf(x, df, loc, scale))


# --- beta ---------------------------------------------------------------------------------------------------------

def beta_logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
    y = standardize(x, loc, scale)
    value = special.xlogy(a - 1, y) + special.xlog1py(b - 1, -y) - special.betaln(a, b) - jnp.log(scale)
    return neg_inf_outside((y >= 0) & (y <= 1), value)


def beta_pdf(x, a, b, loc=0, scale=1):
    return jnp.exp(beta_logpdf(x, a, b, loc, scale))


def beta_cdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("beta.cdf", x, a, b, loc, scale)
    return special.betainc(a, b, jnp.clip(standardize(x, loc, scale), 0, 1))


def beta_logcdf(x, a, b, loc=0, scale=1):
    return jnp.log(beta_cdf(x, a, b, loc, scale))


def beta_sf(x, a, b, loc=0, scale=1):
    # I_{1-y}(b, a) rather than 1 - I_y(a, b): the upper tail keeps its relative accuracy.
    x, a, b, loc, scale = promote("beta.sf", x, a, b, loc, scale)
    return special.betainc(b, a, 1 - jnp.clip(standardize(x, loc, scale), 0, 1))


def beta_logsf(x, a, b, loc=0, scale=1):
    return jnp.log(beta_sf(x, a, b, loc, scale))


# --- pareto -------------------------------------------------------------------------------------------------------

def pareto_logpdf(x, b, loc=0, scale=1):
    x, b, loc, scale = promote("pareto.logpdf", x, b, loc, scale)
    y = standardize(x, loc, scale)
    safe_y = jnp.where(y >= 1, y, jnp.ones_like(y))
    return neg_inf_outside(y >= 1, jnp.log(b) - (b + 1) * jnp.log(safe_y) - jnp.log(scale))


def pareto_pdf(x, b, loc=0, scale=1):
    return jnp.exp(pareto_logpdf(x, b, loc, scale))


def pareto_logsf(x, b, loc=0, scale=1):
    x, b, loc, scale = promote("pareto.logsf", x, b, loc, scale)
    return -b * jnp.log(jnp.maximum(standardize(x, loc, scale), 1))


def pareto_sf(x, b, loc=0, scale=1):
    return jnp.exp(pareto_logsf(x, b, loc, scale))


def pareto_logcdf(x, b, loc=0, scale=1):
    return log1mexp(-pareto_logsf(x, b, loc, scale))


def pareto_cdf(x, b, loc=0, scale=1):
    return -jnp.expm1(pareto_logsf(x, b, loc, scale))


def pareto_ppf(q, b, loc=0, scale=1):
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    y = jnp.exp(-jnp.log1p(-q) / b)
    return fill_where((q < 0) | (q > 1), loc + scale * y, np.nan)


# --- truncnorm ----------------------------------------------------------------------------------------------------

def _log_gauss_mass(a, b):
    """log(Phi(b) - Phi(a)) for a <= b, from whichever side keeps the difference away from cancellation."""
    # Both bounds left of 0: difference of log-CDFs; both right: the mirrored difference; straddling: the mass
    # is at least Phi(0)-ish, so 1 - (left tail) - (right tail) is safe.
    left = log_diff_exp(special.log_ndtr(b), special.log_ndtr(a))
    right = log_diff_exp(special.log_ndtr(-a), special.log_ndtr(-b))
    centre = jnp.log1p(-special.ndtr(a) - special.ndtr(-b))
    return jnp.where(b <= 0, left, jnp.where(a > 0, right, centre))


def truncnorm_logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
    z = standardize(x, loc, scale)
    value = -0.5 * z * z - 0.5 * _LOG_2PI - jnp.log(scale) - _log_gauss_mass(a, b)
    return neg_inf_outside((z >= a) & (z <= b), value)


def truncnorm_pdf(x, a, b, loc=0, scale=1):
    return jnp.exp(truncnorm_logpdf(x, a, b, loc, scale))


def truncnorm_logcdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
    z = jnp.clip(standardize(x, loc, scale), a, b)
    value = _log_gauss_mass(a, z) - _log_gauss_mass(a, b)
    value = jnp.where(z >= b, jnp.zeros_like(value), value)
    return jnp.where(z <= a, full_like(value, -np.inf), value)


def truncnorm_cdf(x, a, b, loc=0, scale=1):
    return jnp.exp(truncnorm_logcdf(x, a, b, loc, scale))


def truncnorm_logsf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
    z = jnp.clip(standardize(x, loc, scale), a, b)
    value = _log_gauss_mass(z, b) - _log_gauss_mass(a, b)
    value = jnp.where(z <= a, jnp.zeros_like(value), value)
    return jnp.where(z >= b, full_like(value, -np.inf), value)


def truncnorm_sf(x, a, b, loc=0, scale=1):
    return jnp.exp(truncnorm_logsf(x, a, b, loc, scale))


# --- gumbel_r and gumbel_l ----------------------------------------------------------------------------------------

def gumbel_r_logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_r.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return -z - jnp.exp(-z) - jnp.log(scale)


def gumbel_r_pdf(x, loc=0, scale=1):
    return jnp.exp(gumbel_r_logpdf(x, loc, scale))


def gumbel_r_logcdf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_r.logcdf", x, loc, scale)
    return -jnp.exp(-standardize(x, loc, scale))


def gumbel_r_cdf(x, loc=0, scale=1):
    return jnp.exp(gumbel_r_logcdf(x, loc, scale))


def gumbel_r_sf(x, loc=0, scale=1):
    return -jnp.expm1(gumbel_r_logcdf(x, loc, scale))


def gumbel_r_logsf(x, loc=0, scale=1):
    return log1mexp(-gumbel_r_logcdf(x, loc, scale))


def gumbel_r_ppf(p, loc=0, scale=1):
    p, loc, scale = promote("gumbel_r.ppf", p, loc, scale)
    return fill_where((p < 0) | (p > 1), loc - scale * jnp.log(-jnp.log(p)), np.nan)


def gumbel_l_logpdf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_l.logpdf", x, loc, scale)
    z = standardize(x, loc, scale)
    return z - jnp.exp(z) - jnp.log(scale)


def gumbel_l_pdf(x, loc=0, scale=1):
    return jnp.exp(gumbel_l_logpdf(x, loc, scale))


def gumbel_l_logsf(x, loc=0, scale=1):
    x, loc, scale = promote("gumbel_l.logsf", x, loc, scale)
    return -jnp.exp(standardize(x, loc, scale))


def gumbel_l_sf(x, loc=0, scale=1):
    return jnp.exp(gumbel_l_logsf(x, loc, scale))


def gumbel_l_cdf(x, loc=0, scale=1):
    return -jnp.expm1(gumbel_l_logsf(x, loc, scale))


def gumbel_l_logcdf(x, loc=0, scale=1):
    return log1mexp(-gumbel_l_logsf(x, loc, scale))


def gumbel_l_ppf(p, loc=0, scale=1):
    p, loc, scale = promote("gumbel_l.ppf", p, loc, scale)
    return fill_where((p < 0) | (p > 1), loc + scale * jnp.log(-jnp.log1p(-p)), np.nan)


# --- gennorm ------------------------------------------------------------------------------------------------------

def gennorm_logpdf(x, beta):
    x, beta = promote("gennorm.logpdf", x, beta)
    return jnp.log(0.5 * beta) - lax.lgamma(1 / beta) - jnp.abs(x) ** beta


def gennorm_pdf(x, beta):
    return jnp.exp(gennorm_logpdf(x, beta))


def gennorm_cdf(x, beta):
    x, beta = promote("gennorm.cdf", x, beta)
    return 0.5 * (1 + jnp.sign(x) * special.gammainc(1 / beta, jnp.abs(x) ** beta))


# --- vonmises and wrapcauchy --------------------------------------------------------------------------------------

def vonmises_logpdf(x, kappa):
    """log of exp(kappa cos x) / (2 pi I0(kappa)), using the scaled Bessel function so large kappa does not
    overflow; NaN for kappa <= 0 (as JAX). Like JAX (and unlike SciPy) x is not reduced modulo 2 pi."""
    x, kappa = promote("vonmises.logpdf", x, kappa)
    value = kappa * (jnp.cos(x) - 1) - _LOG_2PI - jnp.log(special.i0e(kappa))
    return fill_where(~(kappa > 0), value, np.nan)


def vonmises_pdf(x, kappa):
    return jnp.exp(vonmises_logpdf(x, kappa))


def wrapcauchy_logpdf(x, c):
    """log of (1 - c^2) / (2 pi (1 + c^2 - 2 c cos x)) on [0, 2 pi] (-inf outside); NaN unless 0 < c < 1."""
    x, c = promote("wrapcauchy.logpdf", x, c)
    value = jnp.log1p(-c * c) - _LOG_2PI - jnp.log(1 + c * c - 2 * c * jnp.cos(x))
    value = neg_inf_outside((x >= 0) & (x <= 2 * math.pi), value)
    return fill_where(~((c > 0) & (c < 1)), value, np.nan)


def wrapcauchy_pdf(x, c):
    return jnp.exp(wrapcauchy_logpdf(x, c))


fill_docstrings(globals(), {
    "norm": "the normal distribution N(loc, scale^2)",
    "logistic": "the logistic distribution",
    "laplace": "the Laplace distribution exp(-|x - loc| / scale) / (2 scale)",
    "cauchy": "the Cauchy distribution",
    "expon": "the exponential distribution on [loc, inf) with mean loc + scale",
    "uniform": "the uniform distribution on [loc, loc + scale]",
    "t": "Student's t distribution with df degrees of freedom",
    "gamma": "the gamma distribution with shape a",
    "chi2": "the chi-squared distribution with df degrees of freedom",
    "beta": "the beta distribution with shapes a, b on [loc, loc + scale]",
    "pareto": "the Pareto distribution with shape b on [loc + scale, inf)",
    "truncnorm": "the standard normal truncated to [a, b] (then shifted by loc and scaled by scale)",
    "gumbel_r": "the right-skewed Gumbel (maximum) distribution",
    "gumbel_l": "the left-skewed Gumbel (minimum) distribution",
    "gennorm": "the generalized normal distribution with shape beta",
    "vonmises": "the von Mises distribution with concentration kappa",
    "wrapcauchy": "the wrapped Cauchy distribution with shape c",
})

"""Multivariate distributions: `multivariate_normal` and `dirichlet` (mirrors `jax.scipy.stats`)."""

from __future__ import annotations

import math

from .... import lax
from .... import numpy as jnp
from .. import special
from ...numpy.util import broadcast_shapes
from ._common import neg_inf_outside, promote_inexact_dtypes


def multivariate_normal_logpdf(x, mean, cov, allow_singular=None):
    """The log-density of N(mean, cov) at x (the last axis of x and mean is the event axis).

    `cov` may be a scalar (isotropic), or an (..., n, n) positive-definite matrix, factored by Cholesky
    (log det from its diagonal, the quadratic form by a triangular solve). With a scalar `mean`, x is univariate.

    Raises:
      NotImplementedError: if `allow_singular` is given (as JAX).
      ValueError: if `cov` is an array whose trailing shape is not (n, n) for n = mean.shape[-1].
    """
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = promote_inexact_dtypes(x, mean, cov)
    if mean.ndim == 0:
        return -0.5 * jnp.square(x - mean) / cov - 0.5 * (math.log(2 * math.pi) + jnp.log(cov))
    n = mean.shape[-1]
    diff = x - mean
    if cov.ndim == 0:
        return (-0.5 * jnp.sum(diff * diff, axis=-1) / cov - 0.5 * n * (math.log(2 * math.pi) + jnp.log(cov)))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal.logpdf got incompatible shapes: mean {mean.shape} (n = {n}) needs "
                         f"cov of shape (..., {n}, {n}), got {cov.shape}")
    chol = lax.linalg.cholesky(cov)
    batch = broadcast_shapes(diff.shape[:-1], chol.shape[:-2])
    chol_b = jnp.broadcast_to(chol, batch + (n, n))
    diff_b = jnp.broadcast_to(diff, batch + (n,))[..., None]
    y = lax.linalg.triangular_solve(chol_b, diff_b, left_side=True, lower=True)[..., 0]
    log_det_half = jnp.sum(jnp.log(jnp.diagonal(chol_b, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * jnp.sum(y * y, axis=-1) - 0.5 * n * math.log(2 * math.pi) - log_det_half


def multivariate_normal_pdf(x, mean, cov):
    """The density of N(mean, cov) at x, exp of `multivariate_normal_logpdf`."""
    return jnp.exp(multivariate_normal_logpdf(x, mean, cov))


def dirichlet_logpdf(x, alpha):
    """The log-density of Dirichlet(alpha) at x, whose FIRST axis holds the K components (SciPy's layout; further
    axes are batch axes). x may omit the last component (K - 1 entries), which is then 1 - sum(x). -inf off the
    simplex (a component <= 0 or |sum - 1| >= 1e-6).

    Raises:
      ValueError: if alpha is not 1-D, or x.shape[0] is neither K nor K - 1.
    """
    x, alpha = promote_inexact_dtypes(x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    k = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (k, k - 1):
        raise ValueError(f"`x` must have either the same number of entries as `alpha` or one entry fewer; got "
                         f"x.shape={x.shape}, alpha.shape={alpha.shape}")
    if x.shape[0] == k - 1:
        x = jnp.concatenate([x, 1 - jnp.sum(x, axis=0, keepdims=True)], axis=0)
    alpha_b = jnp.reshape(alpha, (k,) + (1,) * (x.ndim - 1))
    log_norm = jnp.sum(lax.lgamma(alpha)) - lax.lgamma(jnp.sum(alpha))
    value = jnp.sum(special.xlogy(alpha_b - 1, x), axis=0) - log_norm
    on_simplex = jnp.all(x > 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < 1e-6)
    return neg_inf_outside(on_simplex, value)


def dirichlet_pdf(x, alpha):
    """The density of Dirichlet(alpha) at x, exp of `dirichlet_logpdf` (x's first axis holds the components)."""
    return jnp.exp(dirichlet_logpdf(x, alpha))




"""`fluxion.scipy.stats.bernoulli`: the Bernoulli distribution (mirrors `jax.scipy.stats.bernoulli`).

See `fluxion/_src/scipy/stats/discrete.py` for the formulas and conventions."""

from ..._src.scipy.stats.discrete import (
    bernoulli_cdf as cdf, bernoulli_logpmf as logpmf, bernoulli_pmf as pmf, bernoulli_ppf as ppf)

__all__ = ["cdf", "logpmf", "pmf", "ppf"]

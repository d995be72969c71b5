"""`fluxion.scipy.stats.poisson`: the Poisson distribution (mirrors `jax.scipy.stats.poisson`).

See `fluxion/_src/scipy/stats/discrete.py` for the formulas and conventions."""

from ..._src.scipy.stats.discrete import (
    poisson_cdf as cdf, poisson_entropy as entropy, poisson_logpmf as logpmf, poisson_pmf as pmf)

__all__ = ["cdf", "entropy", "logpmf", "pmf"]

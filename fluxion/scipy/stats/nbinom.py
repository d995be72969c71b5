"""`fluxion.scipy.stats.nbinom`: the negative binomial distribution (mirrors `jax.scipy.stats.nbinom`).

See `fluxion/_src/scipy/stats/discrete.py` for the formulas and conventions."""

from ..._src.scipy.stats.discrete import (
    nbinom_logpmf as logpmf, nbinom_pmf as pmf)

__all__ = ["logpmf", "pmf"]

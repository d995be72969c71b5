"""`fluxion.scipy.stats.binom`: the binomial distribution (mirrors `jax.scipy.stats.binom`).

See `fluxion/_src/scipy/stats/discrete.py` for the formulas and conventions."""

from ..._src.scipy.stats.discrete import (
    binom_logpmf as logpmf, binom_pmf as pmf)

__all__ = ["logpmf", "pmf"]

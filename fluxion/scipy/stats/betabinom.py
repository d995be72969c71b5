"""`fluxion.scipy.stats.betabinom`: the beta-binomial distribution (mirrors `jax.scipy.stats.betabinom`).

See `fluxion/_src/scipy/stats/discrete.py` for the formulas and conventions."""

from ..._src.scipy.stats.discrete import (
    betabinom_logpmf as logpmf, betabinom_pmf as pmf)

__all__ = ["logpmf", "pmf"]

"""`fluxion.scipy.stats.multinomial`: the multinomial distribution (mirrors `jax.scipy.stats.multinomial`).

See `fluxion/_src/scipy/stats/discrete.py` for the formulas and conventions."""

from ..._src.scipy.stats.discrete import (
    multinomial_logpmf as logpmf, multinomial_pmf as pmf)

__all__ = ["logpmf", "pmf"]

"""`fluxion.scipy.stats.geom`: the geometric distribution (mirrors `jax.scipy.stats.geom`).

See `fluxion/_src/scipy/stats/discrete.py` for the formulas and conventions."""

from ..._src.scipy.stats.discrete import (
    geom_logpmf as logpmf, geom_pmf as pmf)

__all__ = ["logpmf", "pmf"]

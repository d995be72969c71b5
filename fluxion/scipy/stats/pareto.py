"""`fluxion.scipy.stats.pareto`: the Pareto distribution (mirrors `jax.scipy.stats.pareto`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    pareto_cdf as cdf, pareto_logcdf as logcdf, pareto_logpdf as logpdf, pareto_logsf as logsf,
    pareto_pdf as pdf, pareto_ppf as ppf, pareto_sf as sf)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

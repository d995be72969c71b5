"""`fluxion.scipy.stats.cauchy`: the Cauchy distribution (mirrors `jax.scipy.stats.cauchy`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    cauchy_cdf as cdf, cauchy_isf as isf, cauchy_logcdf as logcdf, cauchy_logpdf as logpdf,
    cauchy_logsf as logsf, cauchy_pdf as pdf, cauchy_ppf as ppf, cauchy_sf as sf)

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

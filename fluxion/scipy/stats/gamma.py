"""`fluxion.scipy.stats.gamma`: the gamma distribution (mirrors `jax.scipy.stats.gamma`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    gamma_cdf as cdf, gamma_logcdf as logcdf, gamma_logpdf as logpdf, gamma_logsf as logsf, gamma_pdf as pdf,
    gamma_sf as sf)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

"""`fluxion.scipy.stats.beta`: the beta distribution (mirrors `jax.scipy.stats.beta`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    beta_cdf as cdf, beta_logcdf as logcdf, beta_logpdf as logpdf, beta_logsf as logsf, beta_pdf as pdf,
    beta_sf as sf)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

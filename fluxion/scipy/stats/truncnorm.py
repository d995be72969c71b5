"""`fluxion.scipy.stats.truncnorm`: the normal distribution truncated to [a, b] (in standard units) (mirrors `jax.scipy.stats.truncnorm`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    truncnorm_cdf as cdf, truncnorm_logcdf as logcdf, truncnorm_logpdf as logpdf, truncnorm_logsf as logsf,
    truncnorm_pdf as pdf, truncnorm_sf as sf)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

"""`fluxion.scipy.stats.expon`: the exponential distribution (mirrors `jax.scipy.stats.expon`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    expon_cdf as cdf, expon_logcdf as logcdf, expon_logpdf as logpdf, expon_logsf as logsf, expon_pdf as pdf,
    expon_ppf as ppf, expon_sf as sf)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

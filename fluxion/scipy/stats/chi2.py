"""`fluxion.scipy.stats.chi2`: the chi-squared distribution (mirrors `jax.scipy.stats.chi2`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    chi2_cdf as cdf, chi2_logcdf as logcdf, chi2_logpdf as logpdf, chi2_logsf as logsf, chi2_pdf as pdf,
    chi2_sf as sf)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

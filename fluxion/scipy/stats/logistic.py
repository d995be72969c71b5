"""`fluxion.scipy.stats.logistic`: the logistic distribution (mirrors `jax.scipy.stats.logistic`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    logistic_cdf as cdf, logistic_isf as isf, logistic_logpdf as logpdf, logistic_pdf as pdf,
    logistic_ppf as ppf, logistic_sf as sf)

__all__ = ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"]

"""`fluxion.scipy.stats.gumbel_l`: the left-skewed Gumbel distribution (mirrors `jax.scipy.stats.gumbel_l`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    gumbel_l_cdf as cdf, gumbel_l_logcdf as logcdf, gumbel_l_logpdf as logpdf, gumbel_l_logsf as logsf,
    gumbel_l_pdf as pdf, gumbel_l_ppf as ppf, gumbel_l_sf as sf)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

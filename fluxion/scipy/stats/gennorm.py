"""`fluxion.scipy.stats.gennorm`: the generalized normal distribution (mirrors `jax.scipy.stats.gennorm`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    gennorm_cdf as cdf, gennorm_logpdf as logpdf, gennorm_pdf as pdf)

__all__ = ["cdf", "logpdf", "pdf"]

"""`fluxion.scipy.stats.uniform`: the uniform distribution on [loc, loc + scale] (mirrors `jax.scipy.stats.uniform`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    uniform_cdf as cdf, uniform_logpdf as logpdf, uniform_pdf as pdf, uniform_ppf as ppf)

__all__ = ["cdf", "logpdf", "pdf", "ppf"]

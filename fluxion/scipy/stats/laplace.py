"""`fluxion.scipy.stats.laplace`: the Laplace distribution (mirrors `jax.scipy.stats.laplace`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    laplace_cdf as cdf, laplace_logpdf as logpdf, laplace_pdf as pdf)

__all__ = ["cdf", "logpdf", "pdf"]

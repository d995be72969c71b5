"""`fluxion.scipy.stats.multivariate_normal`: the multivariate normal distribution (mirrors `jax.scipy.stats.multivariate_normal`).

See `fluxion/_src/scipy/stats/multivariate.py` for the formulas and conventions."""

from ..._src.scipy.stats.multivariate import (
    multivariate_normal_logpdf as logpdf, multivariate_normal_pdf as pdf)

__all__ = ["logpdf", "pdf"]

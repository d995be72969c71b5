"""`fluxion.scipy.stats.wrapcauchy`: the wrapped Cauchy distribution (mirrors `jax.scipy.stats.wrapcauchy`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    wrapcauchy_logpdf as logpdf, wrapcauchy_pdf as pdf)

__all__ = ["logpdf", "pdf"]

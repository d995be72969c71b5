"""`fluxion.scipy.stats.t`: Student's t distribution (mirrors `jax.scipy.stats.t`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    t_logpdf as logpdf, t_pdf as pdf)

__all__ = ["logpdf", "pdf"]

"""`fluxion.scipy.stats.vonmises`: the von Mises distribution (mirrors `jax.scipy.stats.vonmises`).

See `fluxion/_src/scipy/stats/continuous.py` for the formulas and conventions."""

from ..._src.scipy.stats.continuous import (
    vonmises_logpdf as logpdf, vonmises_pdf as pdf)

__all__ = ["logpdf", "pdf"]

"""`fluxion.scipy.stats.dirichlet`: the Dirichlet distribution (mirrors `jax.scipy.stats.dirichlet`).

See `fluxion/_src/scipy/stats/multivariate.py` for the formulas and conventions."""

from ..._src.scipy.stats.multivariate import (
    dirichlet_logpdf as logpdf, dirichlet_pdf as pdf)

__all__ = ["logpdf", "pdf"]

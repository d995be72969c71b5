"""`fluxion.scipy.optimize`: unconstrained minimization (mirrors `jax.scipy.optimize`)."""

from .._src.scipy.optimize import OptimizeResults as OptimizeResults, minimize as minimize

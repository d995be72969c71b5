"""`fluxion.scipy.integrate`: integration of sampled data (mirrors `jax.scipy.integrate`)."""

from .._src.scipy.integrate import trapezoid as trapezoid

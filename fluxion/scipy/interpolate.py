"""`fluxion.scipy.interpolate`: interpolation on a rectilinear grid (mirrors `jax.scipy.interpolate`)."""

from .._src.scipy.interpolate import RegularGridInterpolator as RegularGridInterpolator

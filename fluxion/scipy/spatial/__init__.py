"""`fluxion.scipy.spatial`: spatial transformations (mirrors `jax.scipy.spatial`)."""

from . import transform as transform  # noqa: F401

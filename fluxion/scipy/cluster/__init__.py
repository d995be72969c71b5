"""`fluxion.scipy.cluster`: clustering (mirrors `jax.scipy.cluster`)."""

from . import vq as vq  # noqa: F401

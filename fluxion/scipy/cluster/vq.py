"""`fluxion.scipy.cluster.vq`: vector quantization (mirrors `jax.scipy.cluster.vq`)."""

from ..._src.scipy.cluster import vq as vq

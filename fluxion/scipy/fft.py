"""`fluxion.scipy.fft`: the type-II discrete cosine transform (mirrors `jax.scipy.fft`)."""

from .._src.scipy.fft import dct as dct, dctn as dctn, idct as idct, idctn as idctn

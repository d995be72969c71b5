"""`fluxion.numpy.linalg` (mirrors `jax.numpy.linalg`)."""

from .._src.numpy.linalg import (cholesky as cholesky, det as det, eigh as eigh, eigvalsh as eigvalsh, inv as inv,
                                 lstsq as lstsq, matrix_norm as matrix_norm, matrix_power as matrix_power,
                                 matrix_rank as matrix_rank, norm as norm, pinv as pinv, qr as qr, slogdet as slogdet,
                                 solve as solve, svd as svd, svdvals as svdvals, vector_norm as vector_norm)

"""`fluxion.lax.linalg` (mirrors `jax.lax.linalg`)."""

from .._src.lax.linalg import (cholesky as cholesky, eigh as eigh, qr as qr, svd as svd,
                               triangular_solve as triangular_solve)

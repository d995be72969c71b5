"""`fluxion.lax.linalg` (mirrors `jax.lax.linalg`)."""

from .._src.lax.linalg import (cholesky as cholesky, eigh as eigh, qr as qr, svd as svd,
                               triangular_solve as triangular_solve)
from .._src.lax.tridiagonal import tridiagonal_solve as tridiagonal_solve  # noqa: E402
from .._src.lax.linalg import (cholesky_p as cholesky_p, eigh_p as eigh_p, qr_p as qr_p, svd_p as svd_p,  # noqa: E402
                               triangular_solve_p as triangular_solve_p)

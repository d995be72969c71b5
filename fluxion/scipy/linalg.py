"""`fluxion.scipy.linalg`: dense linear algebra (mirrors `jax.scipy.linalg`)."""

from .._src.scipy.linalg import (
    block_diag as block_diag, cho_factor as cho_factor, cho_solve as cho_solve, cholesky as cholesky, det as det,
    eigh as eigh, expm as expm, inv as inv, lu as lu, lu_factor as lu_factor, lu_solve as lu_solve, qr as qr,
    solve as solve, solve_triangular as solve_triangular, svd as svd)

"""`fluxion.scipy.linalg`: dense linear algebra (mirrors `jax.scipy.linalg`)."""

from .._src.scipy.linalg import (
    block_diag as block_diag, cho_factor as cho_factor, cho_solve as cho_solve, cholesky as cholesky, det as det,
    eigh as eigh, eigh_tridiagonal as eigh_tridiagonal, expm as expm, expm_frechet as expm_frechet, inv as inv,
    lu as lu, lu_factor as lu_factor, lu_solve as lu_solve, polar as polar, qr as qr, qr_multiply as qr_multiply,
    solve as solve, solve_triangular as solve_triangular, svd as svd)
from .._src.scipy.matrix_functions import (
    funm as funm, rsf2csf as rsf2csf, solve_sylvester as solve_sylvester, sqrtm as sqrtm)
from .._src.scipy.schur import hessenberg as hessenberg, schur as schur
from .._src.scipy.special_matrices import (
    circulant as circulant, companion as companion, convolution_matrix as convolution_matrix, dft as dft,
    fiedler as fiedler, fiedler_companion as fiedler_companion, hadamard as hadamard, hankel as hankel,
    helmert as helmert, hilbert as hilbert, invhilbert as invhilbert, invpascal as invpascal, leslie as leslie,
    pascal as pascal, toeplitz as toeplitz)

"""`fluxion.scipy.sparse.linalg`: Krylov solvers for matrix-free linear systems (mirrors `jax.scipy.sparse.linalg`)."""

from ..._src.scipy.sparse_linalg import bicgstab as bicgstab, cg as cg, gmres as gmres

"""`fluxion.scipy.sparse.linalg`: Krylov solvers for A x = b with A given as a function (mirrors
`jax.scipy.sparse.linalg`).

`cg`, `bicgstab` and `gmres` iterate in `lax.while_loop`s on pytrees (every leaf of b is a block of the vector) and
are wrapped in `lax.custom_linear_solve`, so derivatives never go through the iterations: the tangent and the
cotangent of x are themselves solves (with A for forward mode, with A's transpose for reverse mode; `cg` assumes
A is symmetric for real inputs, so it reuses itself). Everything is jittable and vmappable.

Algorithms: conjugate gradients (M. R. Hestenes and E. Stiefel, J. Res. NBS 49(6), 1952), BiCGSTAB
(H. A. van der Vorst, SIAM J. Sci. Stat. Comput. 13(2), 1992), restarted GMRES (Y. Saad and M. H. Schultz, SIAM
J. Sci. Stat. Comput. 7(3), 1986), each with the preconditioner M applied as in Saad, "Iterative Methods for
Sparse Linear Systems", 2nd ed., 2003 (left for cg, right for bicgstab and gmres).
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable

import numpy as np

from ... import lax
from ... import numpy as jnp
from ... import tree_util as tu
from .. import dtypes

# --- vectors as pytrees -------------------------------------------------------------------------------------------


def _vdot(x, y):
    """<x, y> = sum conj(x) y over every leaf."""
    return functools.reduce(operator.add, [jnp.vdot(a, b) for a, b in zip(tu.tree_leaves(x), tu.tree_leaves(y))])


def _norm(x):
    return jnp.sqrt(functools.reduce(operator.add, [jnp.sum(jnp.real(a * jnp.conj(a))) for a in tu.tree_leaves(x)]))


def _add(x, y):
    return tu.tree_map(operator.add, x, y)


def _sub(x, y):
    return tu.tree_map(operator.sub, x, y)


def _scale(c, x):
    return tu.tree_map(lambda v: (c * v).astype(v.dtype), x)


def _as_matvec(name: str, f: Any) -> Callable:
    if callable(f):
        return f
    if hasattr(f, "shape") and hasattr(f, "ndim"):
        if f.ndim != 2 or f.shape[0] != f.shape[1]:
            raise ValueError(f"{name}: a matrix operator must be square 2-D, got shape {f.shape}")
        return lambda x: jnp.reshape(jnp.matmul(f, jnp.reshape(x, (-1,))), jnp.shape(x))
    raise TypeError(f"{name}: the operator must be a function or a square matrix, got {type(f).__name__}")


def _tolerance2(b, tol, atol):
    bnorm = _norm(b)
    return jnp.maximum(jnp.square(tol * bnorm), jnp.square(atol))


# --- the iterations ----------------------------------------------------------------------------------------------


def _cg_iterate(A, b, x0, *, maxiter, tol, atol, M):
    limit = _tolerance2(b, tol, atol)
    r0 = _sub(b, A(x0))
    z0 = M(r0)
    state0 = (x0, r0, z0, jnp.real(_vdot(r0, z0)) if not _is_complex(b) else _vdot(r0, z0), 0)

    def keep_going(state):
        _, r, _, _, k = state
        return (jnp.square(_norm(r)) > limit) & (k < maxiter)

    def step(state):
        x, r, p, gamma, k = state
        ap = A(p)
        alpha = gamma / _vdot(p, ap).astype(gamma.dtype)
        x = _add(x, _scale(alpha, p))
        r = _sub(r, _scale(alpha, ap))
        z = M(r)
        gamma_new = _vdot(r, z).astype(gamma.dtype)
        p = _add(z, _scale(gamma_new / gamma, p))
        return x, r, p, gamma_new, k + 1

    return lax.while_loop(keep_going, step, state0)[0]


def _bicgstab_iterate(A, b, x0, *, maxiter, tol, atol, M):
    limit = _tolerance2(b, tol, atol)
    r0 = _sub(b, A(x0))
    dt = _scalar_dtype(b)
    one = jnp.ones((), dt)
    zeros = tu.tree_map(jnp.zeros_like, b)
    state0 = (x0, r0, r0, one, one, one, zeros, zeros, 0)

    def keep_going(state):
        r, k = state[1], state[-1]
        return (jnp.square(_norm(r)) > limit) & (k < maxiter)

    def step(state):
        x, r, rhat, rho, alpha, omega, p, v, k = state
        rho_new = _vdot(rhat, r).astype(dt)
        beta = (rho_new / rho) * (alpha / omega)
        p = _add(r, _scale(beta, _sub(p, _scale(omega, v))))
        phat = M(p)
        v = A(phat)
        alpha = rho_new / _vdot(rhat, v).astype(dt)
        s = _sub(r, _scale(alpha, v))
        shat = M(s)
        t = A(shat)
        tt = jnp.real(_vdot(t, t))
        # A converged half step (s already small) or a vanishing t ends with omega = 0: x moves by alpha phat only.
        done = jnp.square(_norm(s)) <= limit
        omega = jnp.where(done | (tt == 0), jnp.zeros((), dt), _vdot(t, s).astype(dt) / jnp.where(tt == 0, 1, tt))
        x = _add(x, _add(_scale(alpha, phat), _scale(omega, shat)))
        r = _sub(s, _scale(omega, t))
        # omega = 0 would divide by zero in the next beta; the loop stops then anyway (r = s is small or A s = 0).
        return x, r, rhat, rho_new, alpha, jnp.where(omega == 0, one, omega), p, v, k + 1

    return lax.while_loop(keep_going, step, state0)[0]


def _gmres_cycle(A, M, x, b, restart: int, dt):
    """One GMRES cycle from x: an Arnoldi basis V of the Krylov space of A M (modified Gram-Schmidt, twice for
    stability), the least-squares solution y of min ||beta e1 - H y||, and x + M(V y)."""
    r = _sub(b, A(x))
    beta = _norm(r).astype(dt)
    v0 = _scale(1 / jnp.where(beta == 0, 1, beta), r)
    basis = tu.tree_map(lambda leaf: jnp.zeros(leaf.shape + (restart + 1,), dt).at[..., 0].set(leaf), v0)
    hess = jnp.zeros((restart + 1, restart), dt)

    def column(j, carry):
        basis, hess = carry
        w = A(M(tu.tree_map(lambda vs: vs[..., j], basis)))
        h = jnp.zeros((restart + 1,), dt)
        for _ in range(2):  # classical Gram-Schmidt, repeated once ("twice is enough", Giraud et al. 2005)
            proj = functools.reduce(operator.add, [
                jnp.tensordot(jnp.conj(vs), wl, axes=(tuple(range(wl.ndim)), tuple(range(wl.ndim))))
                for vs, wl in zip(tu.tree_leaves(basis), tu.tree_leaves(w))])
            proj = jnp.where(jnp.arange(restart + 1) <= j, proj, 0)
            w = tu.tree_map(lambda wl, vs, p=proj: wl - vs @ p, w, basis)
            h = h + proj
        norm = _norm(w).astype(dt)
        h = h.at[j + 1].set(norm)
        # A breakdown (norm 0: the Krylov space is invariant, the solution is exact) leaves a zero column.
        w = _scale(1 / jnp.where(norm == 0, 1, norm), w)
        basis = tu.tree_map(lambda vs, wl: vs.at[..., j + 1].set(wl), basis, w)
        return basis, hess.at[:, j].set(h)

    basis, hess = lax.fori_loop(0, restart, column, (basis, hess))
    rhs = jnp.zeros((restart + 1,), dt).at[0].set(beta)
    y = jnp.linalg.lstsq(hess, rhs)[0]
    step = M(tu.tree_map(lambda vs: vs[..., :restart] @ y, basis))
    return _add(x, step)


def _gmres_iterate(A, b, x0, *, maxiter, tol, atol, M, restart):
    limit = _tolerance2(b, tol, atol)
    dt = _scalar_dtype(b)

    def keep_going(state):
        x, k = state
        return (jnp.square(_norm(_sub(b, A(x)))) > limit) & (k < maxiter)

    def cycle(state):
        x, k = state
        return _gmres_cycle(A, M, x, b, restart, dt), k + 1

    return lax.while_loop(keep_going, cycle, (x0, 0))[0]


def _is_complex(tree) -> bool:
    return any(dtypes.is_complex(jnp.asarray(leaf).dtype) for leaf in tu.tree_leaves(tree))


def _scalar_dtype(tree):
    return jnp.result_type(*tu.tree_leaves(tree))


# --- the public solvers ------------------------------------------------------------------------------------------


def _solve(name: str, iterate, A, b, x0, *, tol, atol, maxiter, M, symmetric_if_real: bool, **extra):
    b = tu.tree_map(jnp.asarray, b)
    if x0 is None:
        x0 = tu.tree_map(jnp.zeros_like, b)
    x0 = tu.tree_map(jnp.asarray, x0)
    if tu.tree_structure(x0) != tu.tree_structure(b):
        raise ValueError(f"{name}: x0 and b must have the same tree structure, got {tu.tree_structure(x0)} and "
                         f"{tu.tree_structure(b)}")
    shapes_b = [leaf.shape for leaf in tu.tree_leaves(b)]
    shapes_x = [leaf.shape for leaf in tu.tree_leaves(x0)]
    if shapes_b != shapes_x:
        raise ValueError(f"{name}: the arrays of x0 and b must have the same shapes, got {shapes_x} and {shapes_b}")
    if maxiter is None:
        maxiter = 10 * sum(int(np.prod(s)) for s in shapes_b)  # SciPy's default
    matvec = _as_matvec(name, A)
    precond = (lambda x: x) if M is None else _as_matvec(name, M)

    def run(op, rhs):
        return iterate(op, rhs, x0, maxiter=maxiter, tol=tol, atol=atol, M=precond, **extra)

    symmetric = symmetric_if_real and not _is_complex(b)
    x = lax.custom_linear_solve(matvec, b, solve=run, transpose_solve=run, symmetric=symmetric)
    return x, None


def cg(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0, maxiter: int | None = None,
       M: Any = None) -> tuple[Any, None]:
    """Solves A x = b by (preconditioned) conjugate gradients, for A Hermitian positive definite.

    Args:
      A: a function x -> A x on pytrees of b's structure, or a square matrix (applied to the flattened vector).
      b: the right-hand side, an array or pytree of arrays.
      x0: the starting guess (default zeros), b's structure and shapes.
      tol, atol: stop when ||b - A x|| <= max(tol ||b||, atol).
      maxiter: at most this many iterations (default 10 * the number of unknowns, as SciPy).
      M: a preconditioner approximating A^-1 (function or matrix), Hermitian positive definite.

    Returns:
      (x, None): the solution (b's structure) and, as in JAX, no convergence information. Derivatives with respect
      to b and to the values A closes over are implicit (themselves cg solves).

    Raises:
      ValueError: x0 differs from b in structure or shapes; a non-square matrix A. TypeError: A is neither a
      function nor a matrix.
    """
    return _solve("cg", _cg_iterate, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M, symmetric_if_real=True)


def bicgstab(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0, maxiter: int | None = None,
             M: Any = None) -> tuple[Any, None]:
    """Solves A x = b for a general square A by the stabilized biconjugate gradient method (right preconditioned
    by M). Arguments, result and errors as for `cg`; reverse-mode derivatives solve with A's transpose."""
    return _solve("bicgstab", _bicgstab_iterate, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                  symmetric_if_real=False)


def gmres(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0, restart: int = 20,
          maxiter: int | None = None, M: Any = None, solve_method: str = "batched") -> tuple[Any, None]:
    """Solves A x = b for a general square A by restarted GMRES (right preconditioned by M): each cycle builds a
    `restart`-dimensional Krylov basis and takes the least-squares optimal step in it; at most `maxiter` cycles.

    `solve_method` "batched" and "incremental" both run the same cycle here (JAX's "incremental" tests convergence
    after every basis vector; the answer meets the same tolerance). Other arguments, result and errors as for `cg`.

    Raises:
      ValueError: as `cg`, and for an unknown solve_method or restart < 1.
    """
    if solve_method not in ("batched", "incremental"):
        raise ValueError(f"gmres: solve_method must be 'batched' or 'incremental', got {solve_method!r}")
    size = sum(int(np.prod(jnp.shape(leaf))) for leaf in tu.tree_leaves(b))
    if restart < 1:
        raise ValueError(f"gmres: restart must be at least 1, got {restart}")
    restart = min(restart, size)
    return _solve("gmres", _gmres_iterate, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                  symmetric_if_real=False, restart=restart)

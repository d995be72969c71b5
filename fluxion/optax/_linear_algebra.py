r"""Linear-algebra helpers: power iteration, inverse p-th roots, NNLS.

``matrix_inverse_pth_root`` is the coupled Newton iteration used by Shampoo
(Gupta, Koren & Singer 2018; Anil et al. 2020, arXiv:2002.09018); ``nnls`` is
accelerated projected gradient (FISTA, Beck & Teboulle 2009) on
:math:`\min_{x \ge 0} \|Ax - b\|^2`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional, Union

import fluxion.numpy as jnp
import fluxion.random as jrandom
from fluxion import lax

from ._tree_math import tree_norm, tree_scale, tree_sub, tree_vdot


def _normalize(x: Any) -> Any:
    return tree_scale(1.0 / tree_norm(x), x)


def power_iteration(matrix: Union[Any, Callable[[Any], Any]], *, v0: Optional[Any] = None,
                    num_iters: int = 100, error_tolerance: Any = 1e-6, precision: Any = None,
                    key: Optional[Any] = None) -> tuple[Any, Any]:
    r"""Dominant eigenvalue and eigenvector by power iteration.

    Iterates :math:`z \leftarrow M v/\|v\|` until
    :math:`\|z - \lambda v\| / |\lambda| <` ``error_tolerance`` or
    ``num_iters`` iterations, with :math:`\lambda = \langle v, z\rangle`.

    Args:
        matrix: a square array, or a function computing matrix-vector products
            on pytrees (then ``v0`` is required).
        v0: start vector (default: uniform in [-1, 1] from ``key``, default
            ``PRNGKey(0)``, the same draw as optax).
        precision: accepted for optax compatibility (matmuls are exact float32).

    Returns:
        ``(eigenvalue, normalised eigenvector)``.

    Raises:
        ValueError: if ``matrix`` is callable and ``v0`` is None.
    """
    del precision
    if callable(matrix):
        mvp = matrix
        if v0 is None:
            raise ValueError('power_iteration: v0 is required when `matrix` is a function.')
    else:
        matrix = jnp.asarray(matrix)

        def mvp(v):
            return jnp.matmul(matrix, v)

        if v0 is None:
            key = jrandom.PRNGKey(0) if key is None else key
            v0 = jrandom.uniform(key, shape=matrix.shape[-1:], dtype=matrix.dtype, minval=-1.0,
                                 maxval=1.0)
    v0 = _normalize(v0)

    def keep_going(c):
        v, z, eig, it = c
        residual = tree_norm(tree_sub(z, tree_scale(eig, v)))
        return jnp.logical_and(jnp.logical_not(jnp.abs(residual / eig) < error_tolerance),
                               it < num_iters)

    def body(c):
        _, z, _, it = c
        v = _normalize(z)
        z = mvp(v)
        return v, z, tree_vdot(v, z), it + 1

    _, z, eig, _ = lax.while_loop(keep_going, body, (v0, mvp(v0), jnp.asarray(0.0), jnp.asarray(0)))
    return eig, _normalize(z)


def matrix_inverse_pth_root(matrix: Any, p: int, num_iters: int = 100,
                            ridge_epsilon: Any = 1e-6, error_tolerance: Any = 1e-6,
                            precision: Any = None) -> tuple[Any, Any]:
    r""":math:`(M + \epsilon I)^{-1/p}` of a symmetric PSD matrix by a coupled Newton iteration.

    The ridge :math:`\epsilon` is ``ridge_epsilon`` times the largest
    eigenvalue (power iteration). ``p`` must be 1, 2, 4 or 8.

    Raises:
        ValueError: for another ``p``.

    Returns:
        ``(root, error)`` with ``error`` the final max-abs deviation of the
        iteration matrix from the identity.
    """
    del precision
    if p not in (1, 2, 4, 8):
        raise ValueError(f'matrix_inverse_pth_root: p must be 1, 2, 4 or 8, got {p}.')
    squarings = {1: 0, 2: 1, 4: 2, 8: 3}[p]
    matrix = jnp.asarray(matrix)
    n = matrix.shape[0]
    alpha = jnp.asarray(-1.0 / p, jnp.float32)
    identity = jnp.eye(n, dtype=jnp.float32)
    max_ev, _ = power_iteration(matrix=matrix, num_iters=100, error_tolerance=1e-6)
    ridge = ridge_epsilon * jnp.maximum(max_ev, 1e-16)

    def mat_power(m):
        # p is a power of two: repeated squaring (int(log2(p)) squarings).
        for _ in range(squarings):
            m = jnp.matmul(m, m)
        return m

    def keep_going(s):
        i, _, _, _, error, run_step = s
        return jnp.logical_and(i < num_iters, jnp.logical_and(error > error_tolerance, run_step))

    def body(s):
        i, mat_m, mat_h, _, error, _ = s
        mat_m_i = (1 - alpha) * identity + alpha * mat_m
        new_m = jnp.matmul(mat_power(mat_m_i), mat_m)
        new_h = jnp.matmul(mat_h, mat_m_i)
        new_error = jnp.max(jnp.abs(new_m - identity))
        # Stop (and keep the previous iterate) once the error grows by > 20%.
        return i + 1, new_m, new_h, mat_h, new_error, new_error < error * 1.2

    if n == 1:
        return (matrix + ridge) ** alpha, 0
    damped = matrix + ridge * identity
    z = (1 + p) / (2 * jnp.sqrt(jnp.sum(jnp.square(damped))))
    m0 = damped * z
    h0 = identity * jnp.power(z, 1.0 / p)
    start = (jnp.asarray(0), m0, h0, h0, jnp.max(jnp.abs(m0 - identity)), jnp.asarray(True))
    _, mat_m, mat_h, old_h, _, converged = lax.while_loop(keep_going, body, start)
    error = jnp.max(jnp.abs(mat_m - identity))
    ok = jnp.asarray(converged, old_h.dtype)
    return jnp.asarray(ok * mat_h + (1 - ok) * old_h, matrix.dtype), error


def _spectral_radius_upper_bound(matrix: Any) -> Any:
    fro = jnp.sqrt(jnp.sum(jnp.square(matrix)))
    one = jnp.max(jnp.sum(jnp.abs(matrix), axis=0)) if matrix.size else 0
    return jnp.minimum(fro, one)


def nnls(A: Any, b: Any, iters: int, unroll: Union[int, bool] = 1,  # noqa: N803
         L: Optional[Any] = None) -> Any:  # noqa: N803
    r"""Non-negative least squares :math:`\arg\min_{x\ge 0}\|Ax - b\|_2^2` by ``iters``
    FISTA steps with step :math:`1/L` (default :math:`L` bounds the spectral
    radius of :math:`A^TA`). ``b`` may be (m,) or (m, k).

    Raises:
        ValueError: for bad ranks or mismatched rows.
    """
    del unroll
    A, b = jnp.asarray(A), jnp.asarray(b)  # noqa: N806
    if A.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != A.shape[0]:
        raise ValueError(f'nnls: expected A (m, n) and b (m,) or (m, k); got {A.shape}, '
                         f'{b.shape}.')
    Q = A.T @ A  # noqa: N806
    q = A.T @ b
    if L is None:
        L = _spectral_radius_upper_bound(Q)  # noqa: N806
    L = jnp.where(L == 0, 1, L)  # noqa: N806

    def step(carry, _):
        x, p, c = carry
        cn = (1 + jnp.sqrt(1 + 4 * c ** 2)) / 2
        xn = jnp.clip(p - (Q @ p - q) / L, 0)
        return (xn, xn + (c - 1) / cn * (xn - x), cn), None

    x = jnp.zeros(A.shape[-1:] + b.shape[1:], dtype=b.dtype)
    (x, _, _), _ = lax.scan(step, (x, x, jnp.asarray(0.0)), None, length=iters)
    return x

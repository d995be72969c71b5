"""`fluxion.scipy.optimize.minimize`: unconstrained minimization by BFGS (mirrors `jax.scipy.optimize`).

The whole iteration is one `lax.while_loop`, so `minimize` runs unchanged under `jit` and `vmap` (the loop is not
reverse-differentiable, as in JAX: differentiate through the optimum implicitly if needed).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import dtypes
from ..api import value_and_grad


class OptimizeResults(NamedTuple):
    """The outcome of `minimize` (JAX's fields).

    x: the final point. success: converged and no line-search failure. status: 0 converged, 1 the iteration limit
    was reached, 3 the line search failed to decrease the function. fun: f(x). jac: the gradient at x.
    hess_inv: the final BFGS inverse-Hessian estimate. nfev / njev: function / gradient evaluations. nit: iterations.
    """

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


class _State(NamedTuple):
    k: Any
    x: Any
    f: Any
    g: Any
    h: Any
    f_prev: Any
    nfev: Any
    converged: Any
    failed: Any


def _norm(g, order):
    if order == np.inf:
        return jnp.max(jnp.abs(g))
    if order == -np.inf:
        return jnp.min(jnp.abs(g))
    return jnp.sum(jnp.abs(g) ** order) ** (1.0 / order)


def _bfgs(fun: Callable, x0, maxiter: int | None = None, norm=np.inf, gtol: float = 1e-5,
          line_search_maxiter: int = 30):
    """BFGS (Nocedal & Wright, "Numerical Optimization", 2nd ed., Algorithm 6.1) with an Armijo backtracking line
    search (Algorithm 3.1, c1 = 1e-4, step halved) started from the step that would repeat the previous decrease
    (eq. 3.60), capped at 1. The inverse-Hessian update is skipped when the curvature y.s is not positive."""
    d = x0.shape[0]
    maxiter = d * 200 if maxiter is None else int(maxiter)
    f_and_g = value_and_grad(fun)
    f0, g0 = f_and_g(x0)
    dt = x0.dtype
    eye = jnp.eye(d, dtype=dt)

    def line_search(x, f, g, p, f_prev):
        slope = jnp.dot(g, p)
        # Start from the step that would repeat the last decrease along a quadratic model, at most 1.
        start = jnp.where(slope < 0, jnp.minimum(1.0, 1.01 * 2 * (f - f_prev) / slope), 1.0)
        start = jnp.where(jnp.isfinite(start) & (start > 0), start, 1.0).astype(dt)

        def cond(c):
            i, alpha, f_new, _, ok = c
            return ~ok & (i < line_search_maxiter)

        def body(c):
            i, alpha, _, _, _ = c
            alpha = jnp.where(i == 0, alpha, alpha * 0.5)
            f_new, g_new = f_and_g(x + alpha * p)
            ok = jnp.isfinite(f_new) & (f_new <= f + 1e-4 * alpha * slope)
            return i + 1, alpha, f_new, g_new, ok

        init = (jnp.asarray(0, np.int32), start, f, g, jnp.asarray(False))
        i, alpha, f_new, g_new, ok = lax.while_loop(cond, body, init)
        return alpha, f_new, g_new, ok, i

    def cond(s: _State):
        return ~s.converged & ~s.failed & (s.k < maxiter)

    def body(s: _State):
        p = -(s.h @ s.g)
        alpha, f_new, g_new, ok, evals = line_search(s.x, s.f, s.g, p, s.f_prev)
        step = alpha * p
        x_new = s.x + step
        y = g_new - s.g
        sy = jnp.dot(y, step)
        rho = 1.0 / jnp.where(sy > 0, sy, 1.0)
        w = eye - rho * step[:, None] * y[None, :]
        h_new = w @ s.h @ w.T + rho * step[:, None] * step[None, :]
        h_new = jnp.where(sy > 0, h_new, s.h)
        x_new = jnp.where(ok, x_new, s.x)
        f_new = jnp.where(ok, f_new, s.f)
        g_new = jnp.where(ok, g_new, s.g)
        h_new = jnp.where(ok, h_new, s.h)
        return _State(k=s.k + 1, x=x_new, f=f_new, g=g_new, h=h_new, f_prev=s.f, nfev=s.nfev + evals,
                      converged=_norm(g_new, norm) < gtol, failed=~ok)

    init = _State(k=jnp.asarray(0, np.int32), x=x0, f=f0, g=g0, h=eye, f_prev=f0 + jnp.sqrt(jnp.sum(g0 * g0)) / 2,
                  nfev=jnp.asarray(1, np.int32), converged=_norm(g0, norm) < gtol, failed=jnp.asarray(False))
    s = lax.while_loop(cond, body, init)
    status = jnp.where(s.converged, 0, jnp.where(s.failed, 3, jnp.where(s.k >= maxiter, 1, -1)))
    return s, status.astype(np.int32)


def minimize(fun: Callable, x0: Any, args: tuple = (), *, method: str, tol: float | None = None,
             options: dict | None = None) -> OptimizeResults:
    """Minimizes the scalar function `fun(x, *args)` of a 1-D array `x`, starting from `x0`.

    Args:
      fun: a function of a 1-D array (and `args`) returning a scalar; it is differentiated with `value_and_grad`.
      x0: the 1-D starting point (integers become the default float).
      args: extra positional arguments of `fun` (a tuple).
      method: "BFGS" (case-insensitive), the only method.
      tol: if given and options has no "gtol", the gradient tolerance.
      options: "maxiter" (default 200 * x0.size), "norm" (of the gradient in the stopping test, default inf),
        "gtol" (default 1e-5), "line_search_maxiter" (default 30 halvings).

    Returns:
      OptimizeResults with JAX's fields.

    Differences from JAX: the line search is Armijo backtracking (JAX uses a strong-Wolfe zoom), so iteration
    counts and the last digits of the iterates differ; the minimum found is the same to the tolerance.

    Raises:
      TypeError: if `args` is not a tuple. ValueError: for an unknown method or a non-1-D `x0`.
    """
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to fluxion.scipy.optimize.minimize must be a tuple, got {args}")
    if method.lower() != "bfgs":
        raise ValueError(f"Method {method} not recognized")
    options = dict(options or {})
    if tol is not None:
        options.setdefault("gtol", tol)
    unknown = set(options) - {"maxiter", "norm", "gtol", "line_search_maxiter"}
    if unknown:
        raise TypeError(f"minimize: unknown options {sorted(unknown)}")
    x0 = jnp.asarray(x0)
    if not dtypes.is_inexact(x0.dtype):
        x0 = x0.astype(dtypes.default_float_dtype())
    if x0.ndim != 1:
        raise ValueError(f"minimize: x0 must be one-dimensional, got shape {x0.shape}")
    s, status = _bfgs(lambda x: fun(x, *args), x0, **options)
    return OptimizeResults(x=s.x, success=s.converged & ~s.failed, status=status, fun=s.f, jac=s.g, hess_inv=s.h,
                           nfev=s.nfev, njev=s.nfev, nit=s.k)

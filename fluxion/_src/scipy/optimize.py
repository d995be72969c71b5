"""`fluxion.scipy.optimize.minimize`: unconstrained minimization by BFGS (mirrors `jax.scipy.optimize`, JAX 0.10.2).

The method is BFGS (Nocedal & Wright, "Numerical Optimization", 2nd ed., Algorithm 6.1) with a strong-Wolfe line
search (Algorithm 3.5) whose bracketing phase zooms in (Algorithm 3.6) by cubic, quadratic or bisection steps. The
iteration reproduces JAX's own variant of these algorithms decision for decision, including its quirks, so a JAX
program sees the same iterates, counters and status codes:

- the first trial step is `min(1, 1.01 * 2 * (f_k - f_{k-1}) / slope)` (eq. 3.60), with `f_{-1} = f_0 + |g_0| / 2`;
  later trial steps double the previous one;
- the zoom fails as soon as its interval width `a_hi - a_lo` (a signed difference) is at most 1e-5 (1e-10 for 64-bit
  floats), or after 30 steps. Zooming on an interval whose high end lies below its low end therefore fails after one
  trial, so a bracket found by a non-negative slope ends the minimization with status 3;
- a failed zoom still hands back a step (1 unless a trial satisfied the Wolfe conditions) and BFGS still takes it;
- in 32-bit floats a nonzero step below 1e-8 in magnitude is raised to 1e-8.

Every loop is a `lax.while_loop` with selects instead of branches, so `minimize` runs unchanged under `jit` and `vmap`
(the loops are not reverse-differentiable, as in JAX).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import dtypes
from ..api import value_and_grad
from ..tree_util import tree_map


class OptimizeResults(NamedTuple):
    """The outcome of `minimize` (JAX's fields).

    x: the final point. success: converged and the last line search did not fail. status: 0 converged, 1 the
    iteration limit was reached, 3 the zoom of the line search failed, 5 the line search ran out of iterations,
    -1 none of these (JAX also documents 4, a saddle point, which its BFGS never reports). fun: f(x). jac: the
    gradient at x. hess_inv: the final BFGS inverse-Hessian estimate. nfev / njev: function / gradient evaluations
    (equal: each evaluation computes both). nit: BFGS iterations.
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


def _select(pred, new, old):
    """`new` where `pred` holds, else `old`, leaf by leaf (the loops select rather than branch so they batch)."""
    return tree_map(lambda a, b: jnp.where(pred, a, b), new, old)


# --- trial steps inside a bracket ---------------------------------------------------------------------------------
# The products below are spelled out (d * d * d rather than d ** 3): the rounding then matches XLA's integer powers
# (repeated multiplication) instead of depending on how `**` is evaluated.

def _cubic_step(a, fa, da, b, fb, c, fc):
    """The minimizer of the cubic through (a, fa) with slope da at a and through (b, fb) and (c, fc) (Nocedal &
    Wright, eq. 3.59, written about a). NaN when the cubic has no minimizer; the caller's bounds test rejects it."""
    db = b - a
    dc = c - a
    db2, dc2 = db * db, dc * dc
    dbdc = db * dc
    denom = dbdc * dbdc * (db - dc)
    rb = fb - fa - da * db  # what the linear model misses at b and at c
    rc = fc - fa - da * dc
    cube = (dc2 * rb - db2 * rc) / denom
    square = (db2 * db * rc - dc2 * dc * rb) / denom
    disc = square * square - 3.0 * cube * da
    return a + (-square + jnp.sqrt(disc)) / (3.0 * cube)


def _quadratic_step(a, fa, da, b, fb):
    """The minimizer of the parabola through (a, fa) with slope da at a and through (b, fb)."""
    db = b - a
    curv = (fb - fa - da * db) / (db * db)
    return a - da / (2.0 * curv)


class _Point(NamedTuple):
    a: Any     # step length
    phi: Any   # f(x + a p)
    dphi: Any  # the slope g(x + a p) . p


class _ZoomState(NamedTuple):
    done: Any
    failed: Any
    j: Any
    lo: _Point      # the best step so far that satisfies the sufficient-decrease condition
    hi: _Point      # the other end of the bracket
    rec_a: Any      # the previous value of an end: the third point of the cubic
    rec_phi: Any
    star: _Point    # the accepted step
    g_star: Any
    nev: Any


def _zoom(probe, armijo_fails, curvature_holds, lo: _Point, hi: _Point, g0, skip):
    """Nocedal & Wright, Algorithm 3.6, on the bracket between `lo` and `hi`, as JAX runs it. `skip` turns it into
    a no-op (it runs for every lane of a batch, and is used only where the caller's bracket test held)."""
    init = _ZoomState(done=False, failed=False, j=0, lo=lo, hi=hi, rec_a=(lo.a + hi.a) / 2.0,
                      rec_phi=(lo.phi + hi.phi) / 2.0, star=_Point(1.0, lo.phi, lo.dphi), g_star=g0, nev=0)
    tiny = 1e-5 if dtypes.finfo(jnp.result_type(lo.a, hi.a)).bits < 64 else 1e-10

    def body(s: _ZoomState) -> _ZoomState:
        width = s.hi.a - s.lo.a
        left, right = jnp.minimum(s.hi.a, s.lo.a), jnp.maximum(s.hi.a, s.lo.a)
        # The width is signed: a bracket given high-end-first fails here (after this last trial).
        failed = s.failed | (width <= tiny)
        # Interpolated steps must keep 20% (cubic) or 10% (quadratic) of the width from the ends; else bisect.
        cubic = _cubic_step(s.lo.a, s.lo.phi, s.lo.dphi, s.hi.a, s.hi.phi, s.rec_a, s.rec_phi)
        quad = _quadratic_step(s.lo.a, s.lo.phi, s.lo.dphi, s.hi.a, s.hi.phi)
        cmargin, qmargin = 0.2 * width, 0.1 * width
        use_cubic = (s.j > 0) & (cubic > left + cmargin) & (cubic < right - cmargin)
        use_quad = ~use_cubic & (quad > left + qmargin) & (quad < right - qmargin)
        a_j = jnp.where(use_cubic, cubic, jnp.where(use_quad, quad, (s.lo.a + s.hi.a) / 2.0))
        phi_j, dphi_j, g_j = probe(a_j)
        trial = _Point(a_j, phi_j.astype(s.lo.phi.dtype), dphi_j.astype(s.lo.dphi.dtype))
        g_j = g_j.astype(s.g_star.dtype)

        # Four exclusive outcomes: the trial becomes the high end; it is accepted; it becomes the low end with the
        # old low end as the new high end (the slope points back past lo); or it becomes the low end.
        new_hi = armijo_fails(a_j, trial.phi) | (trial.phi >= s.lo.phi)
        accept = curvature_holds(trial.dphi) & ~new_hi
        moves_lo = ~new_hi & ~accept
        flip = moves_lo & (trial.dphi * (s.hi.a - s.lo.a) >= 0.0)
        hi = _select(new_hi, trial, _select(flip, s.lo, s.hi))
        lo = _select(moves_lo, trial, s.lo)
        rec_a = jnp.where(new_hi | flip, s.hi.a, jnp.where(moves_lo, s.lo.a, s.rec_a))
        rec_phi = jnp.where(new_hi | flip, s.hi.phi, jnp.where(moves_lo, s.lo.phi, s.rec_phi))
        star = _select(accept, trial, s.star)
        j = s.j + 1
        return _ZoomState(done=s.done | accept, failed=failed | (j >= 30), j=j, lo=lo, hi=hi, rec_a=rec_a,
                          rec_phi=rec_phi, star=star, g_star=jnp.where(accept, g_j, s.g_star), nev=s.nev + 1)

    return lax.while_loop(lambda s: ~s.done & ~skip & ~s.failed, body, init)


# --- the strong-Wolfe line search -----------------------------------------------------------------------------------

class _LineSearchResults(NamedTuple):
    """What `line_search` found (JAX's internal fields).

    failed: no step satisfying the strong Wolfe conditions was accepted. nit: trial steps of the bracketing phase.
    nfev / ngev: evaluations of f (each one also gives the gradient). k: nit + 1. a_k: the step (see `line_search`
    for the step returned on failure). f_k / g_k: f and its gradient at x + a_k p (on a failed zoom: f at the low end
    of the bracket and the gradient at x). status: 0 found, 1 the zoom failed, 3 the bracketing phase hit maxiter.
    """

    failed: Any
    nit: Any
    nfev: Any
    ngev: Any
    k: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


class _SearchState(NamedTuple):
    done: Any
    failed: Any
    i: Any
    prev: _Point   # the previous trial (step 0 at first)
    nev: Any
    star: _Point
    g_star: Any


def line_search(f: Callable, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1: float = 1e-4, c2: float = 0.9,
                maxiter: int = 20) -> _LineSearchResults:
    """A step along the descent direction `pk` from `xk` satisfying the strong Wolfe conditions
    `f(xk + a pk) <= f(xk) + c1 a g.pk` and `|g(xk + a pk).pk| <= c2 |g(xk).pk|` (Nocedal & Wright, "Numerical
    Optimization", 2nd ed., Algorithms 3.5 and 3.6), as `jax._src.scipy.optimize.line_search.line_search` finds it.

    The first trial step is 1, or with `old_old_fval` (f at the previous iterate) `min(1, 1.01 * 2 * (f(xk) -
    old_old_fval) / g.pk)`; each further trial doubles the step until one is accepted or brackets an acceptable
    step, which the zoom then narrows (at most 30 trials). `old_fval` and `gfk` (f and its gradient at `xk`, both or
    neither) save an evaluation. On failure `a_k` is the last accepted step if any, else 0 (bracketing) or 1 (a
    failed zoom); in 32-bit floats a nonzero step below 1e-8 in magnitude is raised to 1e-8.

    Not public, like JAX's (`jax.scipy.optimize` exports only `minimize`): it is what `minimize` uses.
    """
    xk, pk = jnp.asarray(xk), jnp.asarray(pk)
    dt = jnp.result_type(xk, pk)
    if not dtypes.is_inexact(dt):
        dt = dtypes.default_float_dtype()
    xk, pk = xk.astype(dt), pk.astype(dt)
    f_and_g = value_and_grad(f)

    def probe(t):
        phi, g = f_and_g(xk + jnp.asarray(t, dtype=pk.dtype) * pk)
        return phi, jnp.real(jnp.dot(g, pk)), g

    given = old_fval is not None and gfk is not None
    if given:
        phi0, dphi0 = old_fval, jnp.real(jnp.dot(gfk, pk))
    else:
        phi0, dphi0, gfk = probe(0)
    if old_old_fval is None:
        first = 1
    else:
        first = 1.01 * 2 * (phi0 - old_old_fval) / dphi0
        first = jnp.where(first > 1, 1.0, first)

    def armijo_fails(a, phi):
        return phi > phi0 + c1 * a * dphi0

    def curvature_holds(dphi):
        return jnp.abs(dphi) <= -c2 * dphi0

    def body(s: _SearchState) -> _SearchState:
        a_i = jnp.where(s.i == 1, first, s.prev.a * 2.0)
        phi_i, dphi_i, g_i = probe(a_i)
        trial = _Point(a_i, phi_i, dphi_i)
        # Bracketed with the trial as the high end; accepted; or bracketed with it as the low end (slope >= 0).
        up = armijo_fails(a_i, phi_i) | ((phi_i >= s.prev.phi) & (s.i > 1))
        accept = curvature_holds(dphi_i) & ~up
        down = (dphi_i >= 0.0) & ~up & ~accept
        z_up = _zoom(probe, armijo_fails, curvature_holds, s.prev, trial, gfk, ~up)
        z_down = _zoom(probe, armijo_fails, curvature_holds, trial, s.prev, gfk, ~down)
        star = _select(up, z_up.star, s.star)
        star = _select(accept, trial, star)
        star = _select(down, z_down.star, star)
        g_star = jnp.where(down, z_down.g_star, jnp.where(accept, g_i, jnp.where(up, z_up.g_star, s.g_star)))
        failed = s.failed | (up & z_up.failed) | (down & z_down.failed)
        return _SearchState(done=s.done | up | accept | down, failed=failed, i=s.i + 1, prev=trial,
                            nev=s.nev + 1 + z_up.nev + z_down.nev, star=star, g_star=g_star)

    init = _SearchState(done=jnp.array(False), failed=jnp.array(False), i=1, prev=_Point(0.0, phi0, dphi0),
                        nev=0 if given else 1, star=_Point(0.0, phi0, dphi0), g_star=gfk)
    s = lax.while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, init)
    status = jnp.where(s.failed, jnp.array(1), jnp.where(s.i > maxiter, jnp.array(3), jnp.array(0)))
    a_k = jnp.asarray(s.star.a)
    if dtypes.finfo(a_k.dtype).bits != 64:
        # Keeps a vanishing step from freezing the iteration in low precision.
        a_k = jnp.where(jnp.abs(a_k) < 1e-8, jnp.sign(a_k) * 1e-8, a_k)
    return _LineSearchResults(failed=s.failed | ~s.done, nit=s.i - 1, nfev=s.nev, ngev=s.nev, k=s.i, a_k=a_k,
                              f_k=s.star.phi, g_k=s.g_star, status=status)


# --- BFGS ---------------------------------------------------------------------------------------------------------

class _BFGSState(NamedTuple):
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x: Any
    f: Any
    g: Any
    h: Any        # the inverse-Hessian estimate
    f_prev: Any   # f at the previous iterate, for the first trial step
    ls_status: Any


def _bfgs(fun: Callable, x0, maxiter: int | None = None, norm=np.inf, gtol: float = 1e-5,
          line_search_maxiter: int = 10):
    """Nocedal & Wright, Algorithm 6.1 from H_0 = I, as JAX runs it. Returns the final state and the status."""
    if maxiter is None:
        maxiter = np.size(x0) * 200
    d = x0.shape[0]
    f0, g0 = value_and_grad(fun)(x0)

    def body(s: _BFGSState) -> _BFGSState:
        p = -jnp.dot(s.h, s.g)
        ls = line_search(fun, s.x, p, old_fval=s.f, old_old_fval=s.f_prev, gfk=s.g, maxiter=line_search_maxiter)
        step = ls.a_k * p
        y = ls.g_k - s.g
        rho = jnp.reciprocal(jnp.dot(y, step))
        # H+ = (I - rho s y^T) H (I - rho y s^T) + rho s s^T (eq. 6.17); kept as is when y.s = 0 makes rho infinite.
        w = jnp.eye(d, dtype=rho.dtype) - rho * (step[:, None] * y[None, :])
        h = jnp.dot(jnp.dot(w, s.h), w.T) + rho * step[:, None] * step[None, :]
        h = jnp.where(jnp.isfinite(rho), h, s.h)
        return _BFGSState(converged=jnp.linalg.norm(ls.g_k, ord=norm) < gtol, failed=ls.failed, k=s.k + 1,
                          nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev, x=s.x + step, f=ls.f_k, g=ls.g_k, h=h,
                          f_prev=s.f, ls_status=ls.status)

    init = _BFGSState(converged=jnp.linalg.norm(g0, ord=norm) < gtol, failed=False, k=0, nfev=1, ngev=1, x=x0,
                      f=f0, g=g0, h=jnp.eye(d, dtype=x0.dtype), f_prev=f0 + jnp.linalg.norm(g0) / 2, ls_status=0)
    s = lax.while_loop(lambda s: ~s.converged & ~s.failed & (s.k < maxiter), body, init)
    # A failed line search reports 2 + its own status: 3 for a failed zoom, 5 for too many bracketing trials.
    status = jnp.where(s.converged, 0, jnp.where(s.k == maxiter, 1, jnp.where(s.failed, 2 + s.ls_status, -1)))
    return s, status


_BFGS_OPTIONS = ("maxiter", "norm", "gtol", "line_search_maxiter")


def minimize(fun: Callable, x0: Any, args: tuple = (), *, method: str, tol: float | None = None,
             options: dict | None = None) -> OptimizeResults:
    """Minimizes the scalar function `fun(x, *args)` of a 1-D array `x` by BFGS, starting from `x0`.

    The iteration is JAX 0.10.2's (see the module docstring): same line search, steps, counters and status codes,
    so results agree with `jax.scipy.optimize.minimize` to rounding. Rounding can still matter: XLA fuses `a * b + c`
    into single-rounding multiply-adds (in JAX's loop and in the compiled objective) where fluxion rounds twice, and
    when the iteration reaches float32 noise such a last-bit difference can flip a line-search comparison, so a
    float32 run may stop an iteration earlier or later (or converge where JAX reports a line-search failure).

    Args:
      fun: a function of a 1-D array (and `args`) returning a real scalar; it is differentiated with
        `value_and_grad`.
      x0: the starting point, a 1-D floating array of shape (n,); the result has its dtype.
      args: extra positional arguments of `fun` (a tuple).
      method: "BFGS" (case-insensitive), the only method.
      tol: accepted and ignored, as in JAX 0.10.2 (set the gradient tolerance with options={"gtol": ...}).
      options: "maxiter" (BFGS iterations, default 200 * n), "norm" (the order of the gradient norm in the
        stopping test, default inf), "gtol" (stop when that norm is below it, default 1e-5), "line_search_maxiter"
        (bracketing trials per line search, default 10).

    Returns:
      OptimizeResults. `success` is False and `status` 3 or 5 when a line search fails; JAX stops there too (after
      taking the step the failed search returned), often already close to the minimum.

    Raises:
      TypeError: if `args` is not a tuple, `x0` is not floating (as JAX's `grad` does), or an option is unknown.
      ValueError: for an unknown method or a non-1-D `x0`.

    Differences from JAX: the method "l-bfgs-experimental-do-not-rely-on-this" is not provided.
    """
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to fluxion.scipy.optimize.minimize must be a tuple, got {args}")
    if method.lower() != "bfgs":
        raise ValueError(f"Method {method} not recognized")
    options = dict(options or {})
    unknown = set(options) - set(_BFGS_OPTIONS)
    if unknown:
        raise TypeError(f"minimize: unknown options {sorted(unknown)} for BFGS (known: {list(_BFGS_OPTIONS)})")
    x0 = jnp.asarray(x0)
    if not dtypes.is_inexact(x0.dtype):
        raise TypeError(f"minimize: x0 must have a floating dtype (it is differentiated), got {x0.dtype}")
    if x0.ndim != 1:
        raise ValueError(f"minimize: x0 must be one-dimensional, got shape {x0.shape}")
    s, status = _bfgs(lambda x: fun(x, *args), x0, **options)
    return OptimizeResults(x=s.x, success=s.converged & ~s.failed, status=status, fun=s.f, jac=s.g, hess_inv=s.h,
                           nfev=s.nfev, njev=s.ngev, nit=s.k)

r"""Line searches as gradient transformations, and ``value_and_grad_from_state``.

Both searches receive the current objective value, gradient and a function
``value_fn(params, **fn_kwargs)`` through ``update(..., value=, grad=,
value_fn=, **fn_kwargs)`` and scale the incoming direction by the accepted
step size. The loops are ``lax.while_loop`` so the update is traceable.

References: Armijo (1966) for the backtracking sufficient-decrease rule;
Nocedal & Wright, *Numerical Optimization* (2nd ed.), Algorithms 3.5-3.6 for
the zoom search satisfying the strong Wolfe conditions, with the cubic /
quadratic / bisection trial points of the zoom phase; Hager & Zhang (2006)
for the approximate sufficient-decrease condition.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, tree_util

from . import _numerics
from ._base import GradientTransformationExtraArgs, Updates
from ._state_utils import tree_get
from ._tree_math import (tree_add_scale, tree_cast_like, tree_conj, tree_real, tree_scale,
                         tree_vdot, tree_where, tree_zeros_like)


def _value_dtype(params: Any) -> Any:
    """Real dtype of the objective for these params (float32 for complex64 params)."""
    leaf = jnp.asarray(tree_util.tree_leaves(params)[0])
    return jnp.real(jnp.empty((), leaf.dtype)).dtype


def _split_fn_kwargs(value_fn: Callable[..., Any], extra_args: dict, name: str) -> dict:
    """Keeps the extra args ``value_fn`` accepts; anything else is an error."""
    accepted = set(inspect.signature(value_fn).parameters)
    unused = sorted(k for k in extra_args if k not in accepted)
    if unused:
        raise TypeError(f'{name}.update: extra keyword arguments {unused} are not accepted by '
                        '`value_fn`; every extra argument must be one of its parameters.')
    return {k: v for k, v in extra_args.items() if k in accepted}


# ----------------------------------------------------------------------------
# Backtracking (Armijo) line search.


class BacktrackingLinesearchInfo(NamedTuple):
    """Diagnostics of the last backtracking search."""
    num_linesearch_steps: Any
    decrease_error: Any


class ScaleByBacktrackingLinesearchState(NamedTuple):
    """State of :func:`scale_by_backtracking_linesearch`."""
    learning_rate: Any
    value: Any
    grad: Optional[Updates]
    info: BacktrackingLinesearchInfo


class BacktrackingLineSearchState(NamedTuple):
    """Loop carry of the backtracking search."""
    learning_rate: Any
    new_value: Any
    new_grad: Updates
    decrease_error: Any
    iter_num: Any


def scale_by_backtracking_linesearch(max_backtracking_steps: int, slope_rtol: Any = 1e-4,
                                     decrease_factor: Any = 0.8, increase_factor: Any = 1.5,
                                     max_learning_rate: Any = 1.0, atol: Any = 0.0,
                                     rtol: Any = 0.0, store_grad: bool = False,
                                     verbose: bool = False) -> GradientTransformationExtraArgs:
    r"""Backtracking line search enforcing Armijo's sufficient decrease.

    Starting from ``min(increase_factor * previous_lr, max_learning_rate)``,
    the step :math:`\eta` is multiplied by ``decrease_factor`` until
    :math:`f(\theta + \eta u) \le (1 + rtol) f(\theta) + \eta c \langle u, g\rangle + atol`
    (:math:`c` = ``slope_rtol``) or ``max_backtracking_steps`` is exceeded. If
    every trial was non-finite the step is 0.

    ``update(updates, state, params, *, value, grad, value_fn, **fn_kwargs)``.
    With ``store_grad=True`` the gradient at the accepted point is kept in the
    state (for :func:`value_and_grad_from_state`).

    Args:
        verbose: accepted for optax compatibility; diagnostics are not printed
            (inspect ``state.info`` instead).

    Returns:
        State ``ScaleByBacktrackingLinesearchState(learning_rate, value, grad, info)``.

    Raises:
        TypeError: if an extra keyword argument is not a parameter of ``value_fn``.
    """
    del verbose

    def init_fn(params):
        val_dtype = _value_dtype(params)
        return ScaleByBacktrackingLinesearchState(
            learning_rate=jnp.array(1.0, dtype=val_dtype),
            value=jnp.array(jnp.inf, dtype=val_dtype),
            grad=tree_zeros_like(params) if store_grad else None,
            info=BacktrackingLinesearchInfo(num_linesearch_steps=jnp.asarray(0),
                                            decrease_error=jnp.array(jnp.inf, dtype=val_dtype)))

    def decrease_error_of(stepsize, slope, value, new_value):
        err = new_value - (1.0 + rtol) * value - stepsize * slope_rtol * slope
        err = jnp.where(jnp.isnan(err), jnp.inf, err)
        return jnp.maximum(err, 0.0)

    def update_fn(updates, state, params=None, *, value, grad, value_fn, **extra_args):
        fn_kwargs = _split_fn_kwargs(value_fn, extra_args, 'scale_by_backtracking_linesearch')
        objective = functools.partial(value_fn, **fn_kwargs)
        slope = tree_real(tree_vdot(updates, tree_conj(grad)))

        def cond_fn(s):
            return jnp.logical_and(jnp.logical_not(s.decrease_error <= atol),
                                   s.iter_num <= max_backtracking_steps)

        def body_fn(s):
            lr = jnp.where(s.iter_num > 0, decrease_factor * s.learning_rate, s.learning_rate)
            trial = tree_add_scale(params, lr, updates)
            if store_grad:
                new_value, new_grad_here = fluxion.value_and_grad(objective)(trial)
                err = decrease_error_of(lr, slope, value, new_value)
                accept = jnp.logical_or(err <= atol, s.iter_num == max_backtracking_steps)
                new_grad = tree_where(accept, new_grad_here, s.new_grad)
            else:
                new_value = objective(trial)
                err = decrease_error_of(lr, slope, value, new_value)
                new_grad = s.new_grad
            out = BacktrackingLineSearchState(learning_rate=lr, new_value=new_value,
                                              new_grad=new_grad, decrease_error=err,
                                              iter_num=s.iter_num + 1)
            return tree_cast_like(out, s)

        start_lr = jnp.minimum(increase_factor * state.learning_rate, max_learning_rate)
        carry = BacktrackingLineSearchState(
            learning_rate=start_lr, new_value=jnp.asarray(value, state.value.dtype),
            new_grad=tree_zeros_like(params), decrease_error=jnp.array(jnp.inf),
            iter_num=jnp.asarray(0))
        carry = lax.while_loop(cond_fn, body_fn, carry)
        new_lr = jnp.where(jnp.isinf(carry.decrease_error), 0.0, carry.learning_rate)
        info = BacktrackingLinesearchInfo(num_linesearch_steps=carry.iter_num,
                                          decrease_error=carry.decrease_error)
        new_state = ScaleByBacktrackingLinesearchState(
            learning_rate=new_lr, value=carry.new_value,
            grad=carry.new_grad if store_grad else None, info=info)
        return tree_scale(new_lr, updates), tree_cast_like(new_state, state)

    return GradientTransformationExtraArgs(init_fn, update_fn)


# ----------------------------------------------------------------------------
# Zoom line search (strong Wolfe conditions).


class ZoomLinesearchState(NamedTuple):
    """Loop carry of the zoom line search (interval bounds, safeguarded step...)."""
    count: Any
    params: Any
    updates: Any
    stepsize_guess: Any
    stepsize: Any
    value: Any
    grad: Any
    slope: Any
    value_init: Any
    slope_init: Any
    decrease_error: Any
    curvature_error: Any
    error: Any
    interval_found: Any
    done: Any
    failed: Any
    low: Any
    value_low: Any
    slope_low: Any
    high: Any
    value_high: Any
    slope_high: Any
    cubic_ref: Any
    value_cubic_ref: Any
    safe_stepsize: Any
    safe_value: Any
    safe_grad: Any


class ZoomLinesearchInfo(NamedTuple):
    """Diagnostics of the last zoom search."""
    num_linesearch_steps: Any
    decrease_error: Any
    curvature_error: Any


class ScaleByZoomLinesearchState(NamedTuple):
    """State of :func:`scale_by_zoom_linesearch`: accepted step, value and gradient there."""
    learning_rate: Any
    value: Any
    grad: Updates
    info: ZoomLinesearchInfo


def _cubic_minimizer(a, fa, fpa, b, fb, c, fc):
    """Minimiser of the cubic through (a, fa) with slope fpa at a, (b, fb) and (c, fc)."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    rb = fb - fa - fpa * db
    rc = fc - fa - fpa * dc
    coef_a = (dc ** 2 * rb - db ** 2 * rc) / denom
    coef_b = (-dc ** 3 * rb + db ** 3 * rc) / denom
    radical = coef_b * coef_b - 3.0 * coef_a * fpa
    return a + (-coef_b + jnp.sqrt(radical)) / (3.0 * coef_a)


def _quadratic_minimizer(a, fa, fpa, b, fb):
    """Minimiser of the parabola through (a, fa) with slope fpa at a, and (b, fb)."""
    db = b - a
    curv = (fb - fa - fpa * db) / db ** 2
    return a - fpa / (2.0 * curv)


def _zoom_steps(max_linesearch_steps, max_stepsize, tol, increase_factor, slope_rtol,
                curv_rtol, approx_dec_rtol, interval_threshold):
    """Builds ``(init, step, keep_going)`` of the zoom search."""

    def on_line(value_and_grad_fn, params, stepsize, updates, fn_kwargs):
        point = tree_add_scale(params, stepsize, updates)
        value, grad = value_and_grad_fn(point, **fn_kwargs)
        slope = tree_real(tree_vdot(tree_conj(grad), updates))
        return value, grad, slope

    def decrease_error_of(stepsize, value, slope, value_init, slope_init):
        err = value - value_init - slope_rtol * stepsize * slope_init
        if approx_dec_rtol is not None:
            approx = jnp.maximum(slope - (2 * slope_rtol - 1.0) * slope_init,
                                 value - value_init - approx_dec_rtol * jnp.abs(value_init))
            err = jnp.minimum(approx, err)
        err = jnp.maximum(err, 0.0)
        return jnp.where(jnp.isnan(err), jnp.inf, err)

    def curvature_error_of(slope, slope_init):
        err = jnp.maximum(jnp.abs(slope) - curv_rtol * jnp.abs(slope_init), 0.0)
        return jnp.where(jnp.isnan(err), jnp.inf, err)

    def fall_back_to_safe_step(s):
        # Failed: prefer the best step with sufficient decrease, if any was seen.
        use_safe = jnp.logical_or(s.safe_stepsize > 0.0, jnp.isinf(s.decrease_error))
        stepsize, value, grad = tree_where(use_safe, [s.safe_stepsize, s.safe_value, s.safe_grad],
                                           [s.stepsize, s.value, s.grad])
        return tree_cast_like(s._replace(stepsize=stepsize, value=value, grad=grad), s)

    def search_interval(s, value_and_grad_fn, fn_kwargs):
        # Phase 1 (N&W Alg. 3.5): grow the step until an interval containing a
        # Wolfe point is bracketed.
        it = s.count
        new_step = jnp.where(it == 0, s.stepsize_guess, increase_factor * s.stepsize)
        if max_stepsize is not None:
            max_reached = new_step >= max_stepsize
            new_step = jnp.minimum(new_step, max_stepsize)
        else:
            max_reached = jnp.asarray(False)
        value, grad, slope = on_line(value_and_grad_fn, s.params, new_step, s.updates, fn_kwargs)
        dec_err = decrease_error_of(new_step, value, slope, s.value_init, s.slope_init)
        curv_err = curvature_error_of(slope, s.slope_init)
        err = jnp.maximum(dec_err, curv_err)
        safe_stepsize, safe_value, safe_grad = tree_where(
            dec_err <= tol, [new_step, value, grad], [s.safe_stepsize, s.safe_value, s.safe_grad])
        high_is_new = jnp.logical_or(dec_err > 0.0,
                                     jnp.logical_and(value >= s.value, it > 0))
        low_is_new = jnp.logical_and(slope >= 0.0, jnp.logical_not(high_is_new))
        low, value_low, slope_low, high, value_high, slope_high = tree_where(
            low_is_new,
            [new_step, value, slope, s.stepsize, s.value, s.slope],
            [s.stepsize, s.value, s.slope, new_step, value, slope])
        interval_found = high_is_new | low_is_new | (err <= tol)
        done = (err <= tol) | (max_reached & jnp.logical_not(interval_found))
        failed = (it + 1 >= max_linesearch_steps) & jnp.logical_not(done)
        new = ZoomLinesearchState(
            count=_numerics.safe_increment(it), params=s.params, updates=s.updates,
            stepsize_guess=s.stepsize_guess, stepsize=new_step, value=value, grad=grad,
            slope=slope, value_init=s.value_init, slope_init=s.slope_init,
            decrease_error=dec_err, curvature_error=curv_err, error=err,
            interval_found=jnp.asarray(interval_found), done=jnp.asarray(done),
            failed=jnp.asarray(failed), low=low, value_low=value_low, slope_low=slope_low,
            high=high, value_high=value_high, slope_high=slope_high, cubic_ref=low,
            value_cubic_ref=value_low, safe_stepsize=safe_stepsize, safe_value=safe_value,
            safe_grad=safe_grad)
        return tree_cast_like(new, s)

    def zoom_into_interval(s, value_and_grad_fn, fn_kwargs):
        # Phase 2 (N&W Alg. 3.6): shrink [low, high] with interpolated trial
        # points: cubic if well inside, else quadratic, else bisection.
        it = s.count
        width = jnp.abs(s.high - s.low)
        left, right = jnp.minimum(s.high, s.low), jnp.maximum(s.high, s.low)
        cubic = _cubic_minimizer(s.low, s.value_low, s.slope_low, s.high, s.value_high,
                                 s.cubic_ref, s.value_cubic_ref)
        use_cubic = (cubic > left + 0.2 * width) & (cubic < right - 0.2 * width)
        quad = _quadratic_minimizer(s.low, s.value_low, s.slope_low, s.high, s.value_high)
        use_quad = jnp.logical_not(use_cubic) & (quad > left + 0.1 * width) & \
            (quad < right - 0.1 * width)
        use_bisection = jnp.logical_not(use_cubic) & jnp.logical_not(use_quad)
        middle = jnp.where(use_cubic, cubic, s.cubic_ref)
        middle = jnp.where(use_quad, quad, middle)
        middle = jnp.where(use_bisection, (s.low + s.high) / 2.0, middle)
        value, grad, slope = on_line(value_and_grad_fn, s.params, middle, s.updates, fn_kwargs)
        dec_err = decrease_error_of(middle, value, slope, s.value_init, s.slope_init)
        curv_err = curvature_error_of(slope, s.slope_init)
        err = jnp.maximum(dec_err, curv_err)
        better_safe = (dec_err <= tol) & (value < s.safe_value)
        safe_stepsize, safe_value, safe_grad = tree_where(
            better_safe, [middle, value, grad], [s.safe_stepsize, s.safe_value, s.safe_grad])
        done = err <= tol
        high_to_middle = (dec_err > 0.0) | (value >= s.value_low)
        high_to_low = (slope * (s.high - s.low) >= 0.0) & jnp.logical_not(high_to_middle)
        low_to_middle = jnp.logical_not(high_to_middle)
        high3 = tree_where(high_to_middle, [middle, value, slope],
                           [s.high, s.value_high, s.slope_high])
        high3 = tree_where(high_to_low, [s.low, s.value_low, s.slope_low], high3)
        low3 = tree_where(low_to_middle, [middle, value, slope],
                          [s.low, s.value_low, s.slope_low])
        cubic_ref, value_cubic_ref = tree_where(high_to_middle | high_to_low,
                                                [s.high, s.value_high], [s.low, s.value_low])
        too_small = width <= interval_threshold
        presumably_failed = jnp.asarray(it + 1 >= max_linesearch_steps) | \
            (too_small & (safe_stepsize > 0.0))
        failed = presumably_failed & jnp.logical_not(done)
        new = ZoomLinesearchState(
            count=_numerics.safe_increment(it), params=s.params, updates=s.updates,
            stepsize_guess=s.stepsize_guess, stepsize=middle, value=value, grad=grad,
            slope=slope, value_init=s.value_init, slope_init=s.slope_init,
            decrease_error=dec_err, curvature_error=curv_err, error=err,
            interval_found=s.interval_found, done=done, failed=failed, low=low3[0],
            value_low=low3[1], slope_low=low3[2], high=high3[0], value_high=high3[1],
            slope_high=high3[2], cubic_ref=cubic_ref, value_cubic_ref=value_cubic_ref,
            safe_stepsize=safe_stepsize, safe_value=safe_value, safe_grad=safe_grad)
        return tree_cast_like(new, s)

    def init(updates, params, *, value, grad, prev_stepsize=1.0, initial_guess_strategy='one'):
        if initial_guess_strategy == 'one':
            guess = jnp.asarray(1.0)
        elif initial_guess_strategy == 'keep':
            guess = prev_stepsize
        else:
            raise ValueError('scale_by_zoom_linesearch: unknown initial_guess_strategy='
                             f"{initial_guess_strategy!r}; expected 'one' or 'keep'.")
        val_dtype = _value_dtype(params)
        slope = tree_real(tree_vdot(updates, grad))
        inf = jnp.asarray(jnp.inf)
        zero = jnp.asarray(0.0)
        return ZoomLinesearchState(
            count=jnp.asarray(0), params=params, updates=updates, stepsize_guess=guess,
            stepsize=jnp.asarray(0.0, dtype=val_dtype), value=jnp.array(value, dtype=val_dtype),
            grad=grad, slope=slope, value_init=value, slope_init=slope, decrease_error=inf,
            curvature_error=inf, error=inf, interval_found=jnp.asarray(False),
            done=jnp.asarray(False), failed=jnp.asarray(False), low=zero, value_low=value,
            slope_low=slope, high=zero, value_high=value, slope_high=slope, cubic_ref=zero,
            value_cubic_ref=value, safe_stepsize=zero, safe_value=value, safe_grad=grad)

    def step(s, *, value_and_grad_fn, fn_kwargs):
        new = lax.cond(s.interval_found,
                       functools.partial(zoom_into_interval, value_and_grad_fn=value_and_grad_fn,
                                         fn_kwargs=fn_kwargs),
                       functools.partial(search_interval, value_and_grad_fn=value_and_grad_fn,
                                         fn_kwargs=fn_kwargs),
                       s)
        new = lax.cond(new.failed, fall_back_to_safe_step, lambda x: x, new)
        return tree_cast_like(new, s)

    def keep_going(s):
        return jnp.logical_not(s.done | s.failed)

    return init, step, keep_going


def scale_by_zoom_linesearch(max_linesearch_steps: int, max_learning_rate: Optional[Any] = None,
                             tol: Any = 0.0, increase_factor: Any = 2.0, slope_rtol: Any = 1e-4,
                             curv_rtol: Any = 0.9, approx_dec_rtol: Optional[Any] = 1e-6,
                             stepsize_precision: Any = 1e-5,
                             initial_guess_strategy: str = 'keep', verbose: bool = False
                             ) -> GradientTransformationExtraArgs:
    r"""Line search for a step satisfying the strong Wolfe conditions (zoom method).

    Accepts :math:`\eta` with :math:`f(\theta+\eta u) \le f(\theta) + c_1\eta\langle u, g\rangle`
    (``slope_rtol``; or the approximate condition of Hager & Zhang with
    ``approx_dec_rtol``) and :math:`|\langle u, \nabla f(\theta+\eta u)\rangle| \le
    c_2 |\langle u, g\rangle|` (``curv_rtol``), up to ``tol``. Phase 1 grows the
    step by ``increase_factor`` from the initial guess (1, or the previous step
    with ``initial_guess_strategy='keep'``) until a bracket is found; phase 2
    zooms into it. If the search fails, the best step with sufficient decrease
    seen so far is used.

    ``update(updates, state, params, *, value, grad, value_fn, **fn_kwargs)``;
    the value and gradient at the accepted point are stored in the state (see
    :func:`value_and_grad_from_state`).

    Args:
        verbose: accepted for optax compatibility; diagnostics are not printed.

    Returns:
        State ``ScaleByZoomLinesearchState(learning_rate, value, grad, info)``.

    Raises:
        TypeError: if an extra keyword argument is not a parameter of ``value_fn``.
        ValueError: for an unknown ``initial_guess_strategy`` (at update time).
    """
    del verbose
    init_ls, step_ls, keep_going = _zoom_steps(
        max_linesearch_steps, max_learning_rate, tol, increase_factor, slope_rtol, curv_rtol,
        approx_dec_rtol, stepsize_precision)

    def init_fn(params):
        val_dtype = _value_dtype(params)
        return ScaleByZoomLinesearchState(
            learning_rate=jnp.asarray(1.0, dtype=val_dtype),
            value=jnp.asarray(jnp.inf, dtype=val_dtype), grad=tree_zeros_like(params),
            info=ZoomLinesearchInfo(num_linesearch_steps=jnp.asarray(0),
                                    decrease_error=jnp.asarray(jnp.inf),
                                    curvature_error=jnp.asarray(jnp.inf)))

    def update_fn(updates, state, params=None, *, value, grad, value_fn, **extra_args):
        fn_kwargs = _split_fn_kwargs(value_fn, extra_args, 'scale_by_zoom_linesearch')
        start = init_ls(updates, params, value=value, grad=grad, prev_stepsize=state.learning_rate,
                        initial_guess_strategy=initial_guess_strategy)
        final = lax.while_loop(keep_going,
                               functools.partial(step_ls,
                                                 value_and_grad_fn=fluxion.value_and_grad(value_fn),
                                                 fn_kwargs=fn_kwargs),
                               start)
        info = ZoomLinesearchInfo(num_linesearch_steps=final.count,
                                  decrease_error=final.decrease_error,
                                  curvature_error=final.curvature_error)
        new_state = ScaleByZoomLinesearchState(learning_rate=final.stepsize, value=final.value,
                                               grad=final.grad, info=info)
        return tree_scale(final.stepsize, updates), tree_cast_like(new_state, state)

    return GradientTransformationExtraArgs(init_fn, update_fn)


def value_and_grad_from_state(value_fn: Callable[..., Any]) -> Callable[..., Any]:
    """Like ``fluxion.value_and_grad(value_fn)`` but reuses a value/grad stored in the state.

    The returned function is ``f(params, *args, state=opt_state, **kwargs)``.
    If the optimizer state holds a finite ``value`` (and a ``grad``), e.g.
    computed by a line search at the new parameters, they are returned without
    re-evaluating; otherwise ``value_and_grad(value_fn)`` is called.

    Raises:
        ValueError: if the state has no ``value`` or ``grad`` field.
    """

    def value_and_grad(params, *fn_args, state, **fn_kwargs):
        value = tree_get(state, 'value')
        grad = tree_get(state, 'grad')
        if value is None or grad is None:
            raise ValueError('value_and_grad_from_state: the optimizer state has no `value` / '
                             '`grad` entry; use an optimizer that stores them (e.g. one ending '
                             'in scale_by_zoom_linesearch).')
        return lax.cond(
            jnp.logical_not(jnp.isinf(value)) & jnp.logical_not(jnp.isnan(value)),
            lambda *_: (value, grad),
            lambda p, a, kw: fluxion.value_and_grad(value_fn)(p, *a, **kw),
            params, fn_args, fn_kwargs)

    return value_and_grad

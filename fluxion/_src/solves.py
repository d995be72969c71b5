"""`lax.custom_root`: a root finder differentiated by the implicit function theorem instead of through its
iterations.

`custom_root(f, initial_guess, solve, tangent_solve)` returns x* = solve(f, initial_guess) with f(x*) = 0. The
values `f` closes over (its parameters theta) are found by tracing `f` once (closure conversion: the jaxpr's
constants, including tracers of enclosing transformations, become explicit operands of a `custom_jvp` function), so
derivatives with respect to them flow: differentiating f(x*(theta), theta) = 0 gives
dx* = -(df/dx)^-1 (df/dtheta . dtheta), evaluated with the user's `tangent_solve(g, y)`, which solves g(z) = y for
the linear map g = df/dx at x*. `solve` itself is never differentiated (it may be any iteration).

Difference from JAX: JAX wraps the tangent solve in `custom_linear_solve` so reverse mode never transposes
`tangent_solve`; here reverse mode transposes `tangent_solve` directly, so it must be built from transposable
operations (a direct solve, `jnp.linalg.solve` of the Jacobian, a division; not a `while_loop` iteration).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import api, core, tree_util
from .custom_derivatives import custom_jvp, stop_gradient
from .interpreters import partial_eval as pe
from .interpreters.ad import Zero


def _trace(f: Callable, x_tree, x_avals) -> tuple:
    """f traced on x's abstract values: (jaxpr, consts, output tree)."""
    box: list = []

    def flat(*xs):
        out = f(tree_util.tree_unflatten(x_tree, xs))
        leaves, tree = tree_util.tree_flatten(out)
        box.append(tree)
        return leaves

    jaxpr, consts, _ = pe.trace_to_jaxpr(flat, x_avals)
    return jaxpr, consts, box[0]


def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable, has_aux: bool = False):
    """Finds a root of `f` with `solve` and differentiates it implicitly (see the module docstring).

    Args:
      f: x -> residual, a pytree of x's structure.
      initial_guess: the starting point (a pytree of arrays).
      solve: (f, initial_guess) -> x* (or (x*, aux) with `has_aux`); not differentiated.
      tangent_solve: (g, y) -> z with g(z) = y for the linear map g; differentiated (must be transposable for
        reverse mode).
      has_aux: `solve` also returns auxiliary data, returned alongside x* and not differentiated.

    Returns:
      x* (and aux with `has_aux`), differentiable with respect to the values `f` closes over.

    Raises:
      TypeError: `f`'s output structure differs from `initial_guess`'s.
    """
    guess_leaves, x_tree = tree_util.tree_flatten(initial_guess)
    x_avals = [core.get_aval(core.to_array(v) if not isinstance(v, (core.Array, core.Tracer)) else v)
               for v in guess_leaves]
    jaxpr, consts, out_tree = _trace(f, x_tree, x_avals)
    if out_tree != x_tree:
        raise TypeError(f"custom_root: f must return a pytree of its argument's structure {x_tree}, got {out_tree}")

    def f_closed(cs, x):
        outs = core.eval_jaxpr(jaxpr, list(cs), *tree_util.tree_leaves(x))
        return tree_util.tree_unflatten(x_tree, outs)

    aux_box: list = []

    @custom_jvp
    def root(cs, guess):
        out = solve(lambda x: f_closed(cs, x), guess)
        if has_aux:
            out, aux = out
            aux_box[:] = [aux]
        return tree_util.tree_map(stop_gradient, out)

    @root.defjvp
    def _root_jvp(primals, tangents):
        cs, guess = primals
        cs_dot, _ = tangents
        x = root(cs, guess)
        cs_dot = [_instantiate(c, t) for c, t in zip(cs, cs_dot)]
        # df/dtheta . dtheta at x*, then solve (df/dx) z = -that.
        _, rhs = api.jvp(lambda c: f_closed(c, x), (list(cs),), (list(cs_dot),))
        neg_rhs = tree_util.tree_map(lambda v: -v, rhs)

        def linear(z):
            return api.jvp(lambda y: f_closed(cs, y), (x,), (z,))[1]

        return x, tangent_solve(linear, neg_rhs)

    x = root(list(consts), initial_guess)
    return (x, aux_box[0]) if has_aux else x


def _instantiate(c, t):
    if type(t) is Zero:
        a = core.get_aval(c)
        return core.Array(np.zeros(a.shape, a.dtype))
    return t

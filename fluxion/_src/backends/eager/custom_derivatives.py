"""NumPy implementations of the primitives of `custom_jvp`/`custom_vjp` and `stop_gradient`.

A staged `custom_jvp_call`/`custom_vjp_call` evaluates the function it wraps (its custom rule only matters to
differentiation); `stop_gradient` is the identity on values.
"""

from __future__ import annotations

from ...interpreters.custom import custom_jvp_call_p, custom_lin_p, custom_vjp_call_p
from ...lax.structural import stop_gradient_p
from . import call_closed_jaxpr, register_impl


def custom_lin(*args, num_res, bwd, out_avals, in_avals):
    # custom_lin only exists inside a linearized jaxpr, which reverse mode transposes; evaluating it forward means
    # forward-mode differentiation of a custom_vjp function, which has no rule.
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


register_impl(custom_lin_p, custom_lin)


def call(*args, call_jaxpr, **params):
    return call_closed_jaxpr(call_jaxpr, list(args))


register_impl(custom_jvp_call_p, call)
register_impl(custom_vjp_call_p, call)


def stop_gradient(x):
    return x


register_impl(stop_gradient_p, stop_gradient)

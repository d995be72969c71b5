"""The eager backend: one NumPy implementation per primitive, in `impl_rules`, plus a jaxpr interpreter on raw
buffers.

Implementations take and return raw NumPy values (arrays or NumPy scalars) of the exact dtypes the primitive's
abstract evaluation promises; the tests check eager results against abstract evaluation for every primitive.

The backend registers itself: each submodule imports its primitives from `lax` (and `random`, `custom_derivatives`)
and registers one implementation per primitive object, next to that implementation. Importing this package
imports them all (at the end of this file); `fluxion/__init__.py` imports it before anything can bind a primitive.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ...core import Jaxpr, Literal, Primitive

impl_rules: dict = {}  # prim -> impl(*raw_values, **params) -> raw value (or list for multiple results)


def register_impl(prim: Primitive, impl: Callable) -> None:
    """Makes `impl(*raw_values, **params)` the NumPy implementation of `prim` (also `prim.impl`, the eager path)."""
    impl_rules[prim] = impl
    prim.impl = impl


def eval_jaxpr_raw(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list:
    """Evaluates `jaxpr` on raw NumPy values, calling implementations directly (no tracing, no Array wrapping)."""
    env: dict = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        ins = [v.val._value if type(v) is Literal else env[v] for v in eqn.invars]
        impl = eqn.primitive.impl
        if impl is None:
            raise NotImplementedError(f"Primitive '{eqn.primitive.name}' has no NumPy implementation")
        out = impl(*ins, **eqn.params)
        if eqn.primitive.multiple_results:
            for v, o in zip(eqn.outvars, out):
                env[v] = o
        else:
            env[eqn.outvars[0]] = out
    return [v.val._value if type(v) is Literal else env[v] for v in jaxpr.outvars]


def raw_const(x: Any) -> Any:
    """The raw NumPy value of a jaxpr constant (an Array or already raw)."""
    return getattr(x, "_value", x)


def call_closed_jaxpr(closed, args: Sequence[Any]) -> list:
    return eval_jaxpr_raw(closed.jaxpr, [raw_const(c) for c in closed.consts], args)


# The implementations register themselves on import (the `jit` call's, which runs the compiled program, is in
# `backends`). Last in this file: they use register_impl and the jaxpr interpreter above.
from . import (bits, callback, checkpoint, control_flow, convolution, custom_batching, custom_derivatives,  # noqa: E402,F401
               elementwise, fft, indexing, linalg, linear_solve, parallel, reductions, rng_bits, sorting, special,
               special_functions, structural, threefry, windowed)
from .elementwise import QUIET_PRIMITIVES as QUIET_PRIMITIVES  # noqa: E402

"""Library functions that appear in jaxprs as named `jit` calls, as JAX's do.

JAX defines many `jax.numpy`, `jax.nn` and `jax.numpy.linalg` functions under `jax.jit`, so `make_jaxpr` shows
them as `jit[name=clip jaxpr={ ... }]` equations rather than their primitives inlined. `staged_as_call(name)`
gives a fluxion function the same shape: while a jaxpr is being built (under `jit`, `make_jaxpr`, `eval_shape`,
...), a call binds the `jit` call primitive on the function's own traced program, named `name`; eagerly, and under
transformations that evaluate as they go (eager `grad`, `vmap`), it runs the function directly, so the eager path
pays one check. The compiler inlines the call, so generated code is the same either way.

Which arguments become inputs of the call: arrays (fluxion arrays, tracers, NumPy arrays, and pytrees of only
those). Everything else — Python scalars, dtypes, axes, strings, None — is a static parameter of the call, so the
function sees exactly the values it would see inline. (JAX passes Python scalars as weakly typed inputs instead;
the called program then differs from JAX's only in where the literal appears.) A call whose static values are not
hashable (a list of ints, say) runs inline.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from . import core
from .jit import jit
from .tree_util import tree_leaves

_DYNAMIC_TYPES = (core.Array, core.Tracer, np.ndarray)


def _is_staging() -> bool:
    """Whether the calling thread is building a jaxpr (its dynamic trace is not the eager base)."""
    if core.all_eager.value:
        return False
    state = core.thread_state()
    return state.dynamic is not state.stack[0]


def _is_dynamic(value: Any) -> bool:
    if isinstance(value, _DYNAMIC_TYPES):
        return True
    if value is None or isinstance(value, (str, bool, int, float, complex, np.generic, type, np.dtype)):
        return False
    leaves = tree_leaves(value)
    return bool(leaves) and all(isinstance(x, _DYNAMIC_TYPES) for x in leaves)


# Eager calls of functions marked `fuse_eager` run through their `jit` program (one fused kernel once the compiler's
# tier is in place, as JAX runs these functions jitted) when an argument has at least this many elements; smaller
# calls run inline, where one primitive per NumPy call costs less than a `jit` dispatch.
FUSE_EAGER_MIN_ELEMENTS = 1 << 16


def _fuse_eagerly(args: tuple, kwargs: dict) -> bool:
    """Whether an eager call (not staging) is large enough, and on concrete arrays only, to run its `jit` program.

    Not with NaN/inf checks on (the inline path reports the primitive that made a NaN), not under an evaluating
    transformation (eager grad, vmap: tracers among the arguments), which must see the primitives, and not on weakly
    typed arrays."""
    if not (core.all_eager.value or core.thread_state().eager) or core.float_checks.on:
        return False
    large = False
    for a in (*args, *kwargs.values()):
        t = type(a)
        if t is core.Array:
            if a.weak_type:
                # A traced program can type a weak input's result differently from the eager ops (a custom_jvp
                # call's output is strong when traced, weak eagerly): keep weakly typed calls inline.
                return False
            if a._value.size >= FUSE_EAGER_MIN_ELEMENTS:
                large = True
        elif isinstance(a, core.Tracer):
            return False
    return large


def staged_as_call(name: str, fuse_eager: bool = False, stage: bool = True) -> Callable[[Callable], Callable]:
    """Decorator: the function is staged as one `jit` call named `name` (see the module docstring).

    Args:
      name: the call's name in jaxprs.
      fuse_eager: large eager calls (an argument of `FUSE_EAGER_MIN_ELEMENTS` elements or more) also run the `jit`
        program, so the compiler fuses them into one kernel; results match the inline path to rounding (a fused
        kernel may sum or evaluate a transcendental function differently from NumPy), with the same dtypes, weak
        types and shapes.
      stage: False keeps the function inline in jaxprs (JAX inlines it too) and only applies `fuse_eager`.
    """

    def decorate(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        order = list(sig.parameters)

        def call(dynamic: dict, static: tuple):
            arguments = dict(static)
            arguments.update(dynamic)
            bound = inspect.BoundArguments(sig, {p: arguments[p] for p in order if p in arguments})
            return fn(*bound.args, **bound.kwargs)

        call.__name__ = call.__qualname__ = name
        staged = jit(call, static_argnums=1)
        # One program per shape and dtype the user's calls bring is expected here: the retrace warning would name a
        # library function the user never jitted (JAX's jnp functions do not warn either).
        staged._warn_recompiles = False

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not _is_staging():
                if not (fuse_eager and _fuse_eagerly(args, kwargs)):
                    return fn(*args, **kwargs)
            elif not stage or core.thread_state().inline_staged_calls:
                return fn(*args, **kwargs)
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError:
                return fn(*args, **kwargs)  # the function reports its own argument error
            dynamic, static = {}, []
            for key, value in bound.arguments.items():
                if _is_dynamic(value):
                    dynamic[key] = value
                else:
                    static.append((key, value))
            static = tuple(static)
            try:
                hash(static)
            except TypeError:
                return fn(*args, **kwargs)
            return staged(dynamic, static)

        wrapper.staged = staged  # the `jit`-wrapped program (its cache shows what was staged)
        return wrapper

    return decorate

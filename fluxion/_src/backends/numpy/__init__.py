"""The NumPy backend: one implementation per primitive, in `impl_rules`, plus a jaxpr interpreter on raw buffers.

Implementations take and return raw NumPy values (arrays or NumPy scalars) of the exact dtypes the primitive's
abstract evaluation promises; the tests check eager results against abstract evaluation for every primitive.

The backend registers itself: each submodule imports its primitives from `lax` (and `random`, `custom_derivatives`)
and registers one implementation per primitive object, next to that implementation. Importing this package
imports them all (at the end of this file); `fluxion/__init__.py` imports it before anything can bind a primitive.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ...core import Jaxpr, Literal, Primitive
from ...lax.call import jit_p

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


def compile_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any] | None = None, *, name: str = "jitted",
                  donated: Sequence[int] = ()) -> Callable:
    """Turns a jaxpr into an executable on raw buffers.

    With `consts=None` the result is `run(consts, args) -> outputs` (constants supplied per call); with the
    constants given it is `run(*args) -> tuple of outputs` and the compiler may fold them. The compiler
    (`fluxion._src.compiler`) generates a Python function of NumPy calls; with `FLUXION_JIT_COMPILER=0` the
    jaxpr is interpreted equation by equation instead.

    Args:
      jaxpr: the program.
      consts: the values of `jaxpr.constvars`, or None.
      name: a name hint for generated code.
      donated: indices of arguments whose buffers may be overwritten.
    """
    from ... import compiler
    from ...core import ClosedJaxpr
    from ...interpreters.partial_eval import convert_constvars_jaxpr

    if consts is None:
        n = len(jaxpr.constvars)
        if not compiler.enabled():
            return lambda consts, args: eval_jaxpr_raw(jaxpr, consts, args)
        exe = compiler.compile_closed(ClosedJaxpr(convert_constvars_jaxpr(jaxpr), []), name=name,
                                      donated=[n + d for d in donated])
        return lambda consts, args: list(exe(*consts, *args))
    if not compiler.enabled():
        raw = [raw_const(c) for c in consts]
        return _Interpreted(jaxpr, raw)
    return compiler.compile_closed(ClosedJaxpr(jaxpr, list(consts)), name=name, donated=donated)


def _jit_impl(*args, jaxpr, name: str) -> list:
    """Runs a `jit` call eagerly: the program is compiled once (memoized on it) and its executable called."""
    exe = jaxpr.memo.get("executable")
    if exe is None:
        exe = jaxpr.memo["executable"] = compile_jaxpr(jaxpr.jaxpr, jaxpr.consts, name=name)
    return list(exe(*args))


class _Interpreted:
    """The reference executable: interprets the jaxpr (used when the compiler is disabled)."""

    def __init__(self, jaxpr: Jaxpr, consts: list):
        self.jaxpr = jaxpr
        self.consts = consts

    def __call__(self, *args):
        return tuple(eval_jaxpr_raw(self.jaxpr, self.consts, args))


def executable_text(executable: Callable, jaxpr: Jaxpr) -> str:
    """The code an executable runs: generated source for compiled ones, the jaxpr for interpreted ones."""
    source = getattr(executable, "source", None)
    if source is not None:
        return source
    return "# NumPy backend: equations interpreted in order\n" + str(jaxpr)


register_impl(jit_p, _jit_impl)

# The implementations register themselves on import. (Last in this file: they use register_impl and the jaxpr
# interpreter above.)
from . import (control_flow, convolution, custom_derivatives, elementwise, indexing, linalg,  # noqa: E402,F401
               parallel, reductions, sorting, special, structural, threefry, windowed)
from .elementwise import QUIET_PRIMITIVES as QUIET_PRIMITIVES  # noqa: E402

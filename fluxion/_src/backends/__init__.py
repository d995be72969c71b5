"""Backends turn primitives into computation; nothing above this package computes with NumPy directly.

* `eager`: one NumPy implementation per primitive (`impl_rules`, also `Primitive.impl`), which eager execution
  binds, plus an interpreter of jaxprs on raw buffers;
* `compiler`: turns a closed jaxpr into one generated Python function of NumPy calls and fused Numba kernels.

`jit`, `pmap` and the `jit` call primitive compile through one interface, `compile(closed, name=, donated=)`: an
executable `exe(*raw_args) -> tuple of raw outputs`. With `fluxion_jit_compiler` off the executable interprets the
jaxpr instead (the reference path).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..core import ClosedJaxpr, Jaxpr
from ..interpreters import partial_eval as pe
from ..lax.call import jit_p
from . import compiler, eager
from .eager import eval_jaxpr_raw, raw_const, register_impl


class Interpreted:
    """The reference executable: interprets the jaxpr equation by equation (when the compiler is off)."""

    def __init__(self, jaxpr: Jaxpr, consts: list):
        self.jaxpr = jaxpr
        self.consts = consts

    def __call__(self, *args):
        return tuple(eval_jaxpr_raw(self.jaxpr, self.consts, args))


def compile(closed: ClosedJaxpr, *, name: str = "jitted", donated: Sequence[int] = ()) -> Callable:  # noqa: A001
    """The executable of a closed jaxpr: `exe(*raw_args)` -> tuple of raw outputs.

    Args:
      closed: the program and its constants (the compiler may fold them).
      name: a name hint for generated code.
      donated: indices of arguments whose buffers the executable may overwrite.
    """
    if not compiler.enabled():
        # Dead equations are dropped here too, so an unused pure callback runs in neither mode.
        return Interpreted(pe.dce_jaxpr(closed.jaxpr), [raw_const(c) for c in closed.consts])
    return compiler.compile_closed(closed, name=name, donated=donated)


def executable_text(executable: Callable, jaxpr: Jaxpr) -> str:
    """The code an executable runs: generated source for compiled ones, the jaxpr for interpreted ones."""
    source = getattr(executable, "source", None)
    if source is not None:
        return source
    return "# NumPy backend: equations interpreted in order\n" + str(jaxpr)


def _jit_impl(*args: Any, jaxpr: ClosedJaxpr, name: str) -> list:
    """Runs a `jit` call eagerly: the program is compiled once (memoized on it) and its executable called."""
    exe = jaxpr.memo.get("executable")
    if exe is None:
        exe = jaxpr.memo["executable"] = compile(jaxpr, name=name)
    return list(exe(*args))


register_impl(jit_p, _jit_impl)

__all__ = ["compile", "executable_text", "eager", "compiler", "Interpreted"]

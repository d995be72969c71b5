"""Error classes raised by fluxion, with JAX's names and built-in bases so `except` clauses written for JAX work.

Each tracer error explains what went wrong, why tracing causes it, and how to fix it, and names the traced function,
the argument the value came from and the user's source line when they are known.
"""

from __future__ import annotations

import os
import traceback

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class JAXTypeError(TypeError):
    """Base class of the tracer errors (a `TypeError`, as in JAX)."""


class ConcretizationTypeError(JAXTypeError):
    """A traced value was used where a concrete Python value is required.

    Under `jit`, arguments are abstract: only their shapes and dtypes are known while the function is traced, so
    Python control flow (`if x > 0:`), `float(x)`, or shapes computed from values cannot be decided. Fixes: mark the
    argument static (`jit(f, static_argnames=['n'])`), use structured control flow (`lax.cond`, `lax.fori_loop`,
    `jnp.where`), or compute the value outside the jitted function.
    """


class TracerBoolConversionError(ConcretizationTypeError):
    """`bool()` (an `if`, `while`, `and`/`or`) was applied to a traced array. See `ConcretizationTypeError`."""


class TracerIntegerConversionError(JAXTypeError):
    """`int()` or `__index__` was applied to a traced array (e.g. using it as a Python index or a shape)."""


class TracerArrayConversionError(JAXTypeError):
    """A traced array was passed to NumPy (`np.asarray(x)`, `np.sin(x)`); use `fluxion.numpy` inside transforms."""


class UnexpectedTracerError(JAXTypeError):
    """A tracer escaped the transformation that created it (stored in a global or an attribute, then reused)."""


class NonConcreteBooleanIndexError(JAXTypeError):
    """Boolean-mask indexing needs the mask's value to know the result's shape; use `jnp.where` under jit."""


class ShardingTypeError(Exception):
    """An operation on arrays whose types carry shardings (explicit sharding mode) cannot type its result: the
    operands' shardings conflict, or the result's sharding is ambiguous and must be given (`out_sharding=`).
    Like JAX's class of the same name, it derives from `Exception` only."""


class KeyReuseError(RuntimeError):
    pass


def user_frame() -> str:
    """'file:line (function)' of the innermost stack frame outside the fluxion package, or ''."""
    for frame in reversed(traceback.extract_stack()):
        fname = os.path.abspath(frame.filename)
        if not fname.startswith(_PACKAGE_DIR) or os.sep + "tests" + os.sep in fname:
            if "pytest" in fname or "pluggy" in fname or fname.startswith(os.path.dirname(os.__file__)):
                continue
            line = f"{frame.filename}:{frame.lineno} ({frame.name})"
            if frame.line:
                line += f"\n    {frame.line.strip()}"
            return line
    return ""


_FIXES = {
    "bool": ("Python control flow (if/while/and/or) on a traced value cannot be decided while tracing. "
             "Use fluxion.numpy.where or fluxion.lax.cond/fluxion.lax.while_loop for value-dependent control flow, "
             "or mark the argument static with jit(f, static_argnums=...) / static_argnames=[...]."),
    "int": ("Use the value as an array (not a Python int), or mark the argument static with "
            "static_argnums=.../static_argnames=[...] if it determines a shape or a loop count."),
    "index": ("A traced value cannot be used as a Python index, shape or loop bound. Use lax.dynamic_slice / "
              "jnp.take for value-dependent indexing, or mark the argument static (static_argnames=[...])."),
    "float": ("Keep the value as an array inside the transformed function, or convert it outside (after the "
              "jitted call returns)."),
    "complex": "Keep the value as an array inside the transformed function.",
    "item": "Return the array from the transformed function and call .item() outside it.",
    "tolist": "Return the array from the transformed function and call .tolist() outside it.",
    "array": ("NumPy functions need concrete data; inside jit/grad/vmap use the fluxion.numpy function of the same "
              "name (import fluxion.numpy as jnp) instead of numpy."),
}

_CLASSES = {
    "bool": TracerBoolConversionError,
    "index": TracerIntegerConversionError,  # int() is a ConcretizationTypeError, as in JAX 0.10
    "array": TracerArrayConversionError,
}


def concretization_error(tracer, kind: str, what: str) -> Exception:
    """Builds the error for converting `tracer` to a concrete value with `what` (bool, int, numpy, ...)."""
    cls = _CLASSES.get(kind, ConcretizationTypeError)
    aval = tracer.aval
    if kind == "array":
        head = (f"The numpy.ndarray conversion method __array__() was called on a traced array with shape "
                f"{aval.str_short()}.")
    elif kind == "bool":
        head = f"Attempted boolean conversion of traced array with shape {aval.str_short()}."
    else:
        head = f"Attempted to convert a traced array with shape {aval.str_short()} with {what}()."
    parts = [head]
    origin = tracer._origin_description()
    if origin:
        parts.append(origin)
    where = user_frame()
    if where:
        parts.append(f"The problem arose at {where}")
    parts.append("Fix: " + _FIXES[kind])
    parts.append("See fluxion.errors." + cls.__name__ + " for details.")
    return cls("\n".join(parts))

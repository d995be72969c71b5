"""Helpers the transformation APIs share (`api`, `jit`, `pmap`): converting argument leaves, and naming the
user's function and its arguments in error messages and debug information."""

from __future__ import annotations

import inspect
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from . import core
from .core import Array, Tracer
from .tree_util import keystr, tree_flatten_with_path


def as_value(x: Any) -> Any:
    """Converts a leaf to something primitives accept: Arrays and tracers pass, NumPy values/scalars become Arrays."""
    if isinstance(x, (Array, Tracer)):
        return x
    if isinstance(x, (np.ndarray, np.generic, bool, int, float, complex)):
        return core.to_array(x)
    if hasattr(x, "__jax_array__"):
        return as_value(x.__jax_array__())
    raise TypeError(f"Argument {x!r} of type {type(x).__name__} is not a valid JAX type (arrays, NumPy values and "
                    "Python scalars are; mark other arguments static or wrap them in a pytree)")


def as_output(x: Any, fun: Callable, traced_for: str) -> Any:
    """`as_value` for a traced function's output leaf, with JAX's error naming the function.

    Raises:
      TypeError: "function f at file:line traced for jit returned a value of type <class 'str'>, which is not a
        valid JAX type".
    """
    try:
        return as_value(x)
    except TypeError:
        where = fun_src(fun)
        raise TypeError(f"function {fun_name(fun)}{' at ' + where if where else ''} traced for {traced_for} returned "
                        f"a value of type {type(x)}, which is not a valid JAX type") from None


def fun_name(fun: Callable) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def fun_src(fun: Callable) -> str:
    try:
        code = inspect.unwrap(fun).__code__
        return f"{code.co_filename}:{code.co_firstlineno}"
    except (AttributeError, ValueError):
        return ""


def arg_names(fun: Callable, args: Sequence[Any], kwargs: dict | None = None) -> list[str]:
    """Names for every flat leaf of (args, kwargs): the parameter name plus the key path inside it."""
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else f"args[{i}]"
        for path, _ in tree_flatten_with_path(a)[0]:
            names.append(base + keystr(path))
    for k, v in (kwargs or {}).items():
        for path, _ in tree_flatten_with_path(v)[0]:
            names.append(k + keystr(path))
    return names


class PerFunction:
    """Values kept per Python function (what `jit` and `pmap` cache for each function they wrap).

    Keyed by a weak reference where possible, so the entry goes when the function does. A callable that cannot be
    weakly referenced (a `__slots__` class instance, `operator.itemgetter`, ...) is keyed by identity and kept alive
    by its entry, so that its id can never be reused by another callable while the entry exists (keying by id alone
    ran a dead function's compiled program for a new one).
    """

    def __init__(self, make: Callable[[], Any]):
        self._make = make
        self._weak: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._strong: dict = {}  # id(fun) -> (fun, value)

    def get(self, fun: Callable) -> Any:
        """The value of `fun`, made on first use."""
        try:
            return self._weak.setdefault(fun, self._make())
        except TypeError:  # not weakly referenceable
            entry = self._strong.get(id(fun))
            if entry is None or entry[0] is not fun:
                entry = self._strong[id(fun)] = (fun, self._make())
            return entry[1]

    def values(self) -> list:
        return list(self._weak.values()) + [value for _, value in list(self._strong.values())]

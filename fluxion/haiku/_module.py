"""`hk.Module`: named containers whose methods run inside the module's name scope.

Naming rules (those of Haiku, so parameter trees have the same keys):

* the default name is the class name in snake case (`MyLinear` -> `my_linear`, `ResNet18` -> `res_net18`,
  `Conv2D` -> `conv2_d`);
* names are made unique within the method call that creates them: `linear`, `linear_1`, ...; a name that already
  ends in `_<n>` is kept and bumps the counter (`linear_0` then an unnamed `Linear` gives `linear_1`);
* a module created inside another module's `__init__` is called `parent/~/child`, inside `__call__`
  `parent/child`, inside another method `m` `parent/~m/child`;
* every method call gets a fresh counter, so a module created inside `__call__` has the same name on every call.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import inspect
import re
import threading
from typing import Any, Callable, Iterator, Mapping, NamedTuple, TypeVar

from . import _frame
from ._base import module_name_of
from .config import get_config

__all__ = ["Module", "transparent", "force_name", "camel_to_snake", "MethodContext", "intercept_methods", "name_like",
           "name_scope"]

T = TypeVar("T")

_TRANSPARENT = "__fluxion_haiku_transparent"
_CUSTOM_NAME = "__fluxion_haiku_name_like"
_OUTSIDE_TRANSFORM = "All `hk.Module`s must be initialized inside an `hk.transform`."
_FORCE_PREFIX = "FORCE:"
_IDENTIFIER = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_TRAILING_NUMBER = re.compile(r"^(.*)_(0|[1-9][0-9]*)$", re.DOTALL)


def camel_to_snake(name: str) -> str:
    """`MyLinear` -> `my_linear`, `MLP` -> `mlp`, `ResNet18` -> `res_net18`, `Conv2D` -> `conv2_d`.

    An underscore goes before an upper-case letter that follows a lower-case letter or digit, and before an
    upper-case letter (not the first) that is followed by a lower-case letter -- Haiku's rule.
    """
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i > 0:
            prev_low = name[i - 1].islower() or name[i - 1].isdigit()
            next_low = i + 1 < len(name) and name[i + 1].islower()
            if prev_low or next_low:
                out.append("_")
        out.append(ch.lower())
    return "".join(out)


def transparent(method: T) -> T:
    """Decorator: the method runs in its caller's name scope (modules it creates are named as the caller's)."""
    setattr(method, _TRANSPARENT, True)
    return method


def force_name(name: str) -> str:
    """A `name=` value that makes the module use exactly `name` (e.g. to share another module's parameters)."""
    return f"{_FORCE_PREFIX}{name}"


def _split_number(name: str) -> tuple[str, int | None]:
    m = _TRAILING_NUMBER.match(name)
    return (m.group(1), int(m.group(2))) if m else (name, None)


def _check_name(component: str, full: str) -> None:
    if component.startswith("~"):
        component = component[1:]
        if not component:
            return
    if not _IDENTIFIER.match(component):
        raise ValueError(f"'{full}' is not a valid module name (must be a valid Python identifier)")


def _reserve(frame: _frame.Frame, name: str, check_unique: bool) -> None:
    # Index -2: the naming scope of the method call that is constructing this module (-1 is its own __init__).
    used = frame.names_stack[-2]
    if check_unique and name in used:
        raise ValueError(f"Module name '{name}' is not unique.")
    used.add(name)
    base, number = _split_number(name)
    counters = frame.counter_stack[-2]
    counters[base] = max(counters[base], (number or 0) + 1)


def _unique_name(frame: _frame.Frame, name: str) -> str:
    if len(frame.module_stack) > 1:
        caller = frame.module_stack[-2]
        if caller.method_name == "__init__":
            name = "~/" + name
        elif caller.method_name != "__call__":
            name = f"~{caller.method_name}/{name}"
        name = module_name_of(caller.module) + "/" + name
    base, number = _split_number(name)
    explicit = number is not None
    if number is None:
        number = frame.counter_stack[-2][base]
    name = f"{base}_{number}" if explicit or number else base
    _reserve(frame, name, check_unique=True)
    return name


class MethodContext(NamedTuple):
    """What a method interceptor (`hk.intercept_methods`) is told: the module, the method's name, the bound
    original method and the class that defined it."""

    module: Any
    method_name: str
    orig_method: Callable[..., Any]
    orig_class: type


class _Interceptors(threading.local):
    def __init__(self):
        self.stack: list = []


_INTERCEPTORS = _Interceptors()
# Installed for good (e.g. by `hk.mixed_precision.set_policy`); they run before the scoped ones.
_GLOBAL_INTERCEPTORS: list = []


def intercept_methods_global(interceptor: Callable[..., Any]) -> None:
    """Installs `interceptor` (see `intercept_methods`) for all later module method calls, on every thread."""
    _GLOBAL_INTERCEPTORS.append(interceptor)


@contextlib.contextmanager
def intercept_methods(interceptor: Callable[..., Any]) -> Iterator[None]:
    """A context manager: every module method call inside it (including `__init__`) goes through
    `interceptor(next_fun, args, kwargs, context: MethodContext)`; `next_fun(*args, **kwargs)` runs the next
    interceptor and finally the method. Interceptors run inside the module's name scope, outermost first."""
    _INTERCEPTORS.stack.append(interceptor)
    try:
        yield
    finally:
        _INTERCEPTORS.stack.pop()


def _run_interceptors(bound: Callable, method_name: str, module: Any, orig_class: type, args, kwargs) -> Any:
    chain = _GLOBAL_INTERCEPTORS + _INTERCEPTORS.stack
    if not chain:
        return bound(*args, **kwargs)
    context = MethodContext(module, method_name, bound, orig_class)

    def call(i, *a, **k):
        if i == len(chain):
            return bound(*a, **k)
        return chain[i](functools.partial(call, i + 1), a, k, context)

    return call(0, *args, **kwargs)


def name_like(method_name: str) -> Callable[[T], T]:
    """Decorator: modules created inside the decorated method are named as if created in `method_name` (e.g. a
    `encode` method named like `__call__` creates `parent/linear` rather than `parent/~encode/linear`)."""

    def decorator(method: T) -> T:
        setattr(method, _CUSTOM_NAME, method_name)
        return method

    return decorator


def _wrap_method(method_name: str, fn: Callable, owner: Callable[[], type]) -> Callable:
    if getattr(fn, _TRANSPARENT, False):
        return fn
    scope_name = getattr(fn, _CUSTOM_NAME, method_name)

    @functools.wraps(fn)
    def wrapped(self, *args, **kwargs):
        frame = _frame.current_frame_or_none()
        if frame is None:
            raise ValueError(_OUTSIDE_TRANSFORM)
        with frame.module_call(self, scope_name):
            out = _run_interceptors(functools.partial(fn, self), method_name, self, owner(), args, kwargs)
        # Tell the enclosing modules about us, for `params_dict()` / `state_dict()`.
        name = getattr(self, "module_name", None)
        if name is not None:
            for call in frame.module_stack:
                if call.module is not self:
                    call.module._submodules.add(name)
        return out

    return wrapped


class _ModuleMeta(abc.ABCMeta):
    """Wraps every public method (and `__call__`, and properties) so it runs inside the module's scope."""

    def __new__(mcs, name, bases, clsdict):
        created: list[type] = []
        owner = lambda: created[0]  # the class being defined, for `MethodContext.orig_class`
        for key, value in list(clsdict.items()):
            if key == "module_name" or (key.startswith("__") and key != "__call__"):
                continue
            if isinstance(value, property):
                clsdict[key] = property(*(None if f is None else _wrap_method(key, f, owner)
                                          for f in (value.fget, value.fset, value.fdel)), doc=value.__doc__)
            elif inspect.isfunction(value):
                clsdict[key] = _wrap_method(key, value, owner)
        cls = super().__new__(mcs, name, bases, clsdict)
        created.append(cls)
        return cls

    def __call__(cls, *args, **kwargs):
        if not _frame.inside_transform():
            raise ValueError(_OUTSIDE_TRANSFORM)
        module = cls.__new__(cls)
        _wrap_method("__init__", cls.__init__, lambda: cls)(module, *args, **kwargs)
        if not hasattr(module, "module_name"):
            raise ValueError("Constructing an hk.Module without calling the super constructor is not supported. "
                             f"Add the following as the first line in your __init__ method:\n\n"
                             f"super({cls.__name__}, self).__init__()")
        return module


class Module(metaclass=_ModuleMeta):
    """Base class of Haiku modules: subclass it, call `super().__init__(name=name)` first, create parameters
    with `hk.get_parameter` inside methods. Modules may only be created and called inside `hk.transform`.

    Attributes:
        module_name: the full, unique name (e.g. `"mlp/~/linear_0"`); the key of this module's parameters.
        name: the last component of `module_name`.

    Raises:
        ValueError: when created or called outside a transform ("All `hk.Module`s must be initialized inside an
            `hk.transform`."), or given a name that is not a Python identifier.
    """

    def __init__(self, name: str | None = None):
        frame = _frame.current_frame("Module")
        if name is None:
            name = camel_to_snake(type(self).__name__)
        if name.startswith(_FORCE_PREFIX):
            name = name[len(_FORCE_PREFIX):]
            for component in name.split("/"):
                _check_name(component, name)
            _reserve(frame, name, check_unique=False)
        else:
            _check_name(name, name)
            name = _unique_name(frame, name)
        self._submodules: set[str] = set()
        self.module_name = name
        self.name = name.split("/")[-1]

    def __repr__(self) -> str:
        if not get_config().module_auto_repr:
            return object.__repr__(self)
        return f"{type(self).__name__}(name={getattr(self, 'module_name', '?')!r})"

    def params_dict(self) -> Mapping[str, Any]:
        """`{"<module>/<param>": array}` for this module and the submodules it created or called."""
        return _collect(self, "params", lambda v: v)

    def state_dict(self) -> Mapping[str, Any]:
        """`{"<module>/<state>": current value}` for this module and its submodules."""
        return _collect(self, "state", lambda pair: pair.current)



def _collect(module: Module, which: str, value_of: Callable) -> dict:
    # A function, not a method: methods are wrapped (name scope, interceptors) and this is an implementation detail.
    if not _frame.inside_transform():
        raise ValueError(f"`module.{which}_dict()` must be used as part of an `hk.transform`.")
    frame = _frame.current_frame()
    out = {}
    for bundle_name, bundle in getattr(frame, which).items():
        if (bundle_name == module.module_name or bundle_name.startswith(module.module_name + "/")
                or bundle_name in module._submodules):
            for k, v in bundle.items():
                out[f"{bundle_name}/{k}"] = value_of(v)
    return out


class _NameScopeModule(Module):
    """A module with no methods: entering its scope is what `hk.name_scope` does."""


class _NameScope:
    def __init__(self, name: str, method_name: str):
        if not name or name[0] == "/":
            raise ValueError("Name scopes must not start with /")
        frame = _frame.current_frame("name_scope")
        parts = [name] if name.startswith(_FORCE_PREFIX) else name.split("/")
        module = None
        with contextlib.ExitStack() as stack:
            # "a/b" is the scope `b` created inside the scope `a`.
            for part in parts:
                module = _NameScopeModule(name=part)
                stack.enter_context(frame.module_call(module, method_name))
        self._frame = frame
        self._module = module
        self._method = method_name
        self._stack: contextlib.ExitStack | None = None

    def __enter__(self) -> None:
        if self._stack is not None:
            raise ValueError("name_scope is not reentrant")
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(self._frame.module_call(self._module, self._method))

    def __exit__(self, *exc) -> Any:
        stack, self._stack = self._stack, None
        return stack.__exit__(*exc)


def name_scope(name: str, *, method_name: str = "__call__") -> Any:
    """A context manager adding `name` to the names of parameters, state and modules created inside it, as if
    they were created in method `method_name` of a module called `name` (`"a/b"` nests; names are made unique
    like module names: a second `name_scope("foo")` is `foo_1`).

    Raises:
        ValueError: outside a transform; an empty name or one starting with `/`; re-entering the same scope
            while it is active.
    """
    _frame.assert_context("name_scope")
    return _NameScope(name, method_name)

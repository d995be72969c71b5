"""``nnx.capture``: run a function and collect what the modules ``sow`` and ``perturb`` during the call, as
States, instead of storing it on the modules (mirrors ``flax.nnx.capture`` of Flax 0.12).

During the call every module of the graph carries a ``__captures__`` data
attribute: one Variable per captured type, holding a ``{name: value}`` dict.
``Module.sow``/``Module.perturb`` write there; afterwards the dicts are
gathered into a State keyed by module path (``{'lin': {'name': Intermediate}}``)
and the attribute is removed.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import MutableMapping
from typing import Any, Callable

from .module import Module, iter_modules
from .pytreelib import data
from .state import State, split_state
from .variables import Variable


def _init_by_path(state: Any) -> dict:
    """``{module path: {name: Variable}}`` of a captured State (the ``init`` argument)."""
    by_path: dict = {}

    def collect(s: Any, path: tuple) -> None:
        if isinstance(s, MutableMapping):
            for key, value in s.items():
                if isinstance(value, Variable):
                    by_path.setdefault(path, {})[key] = value
                elif isinstance(value, MutableMapping):
                    collect(value, path + (key,))
    collect(state, ())
    return by_path


def _instrument(cls: type, variable_type: type) -> None:
    # Sow every public method's (and __call__'s) output under the method's name; only the class's own methods.
    for name, method in list(vars(cls).items()):
        if callable(method) and (not name.startswith('_') or name == '__call__') \
                and not hasattr(method, '_nnx_capturing'):
            def make(name: str, method: Callable) -> Callable:
                @functools.wraps(method)
                def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
                    result = method(self, *args, **kwargs)
                    self.sow(variable_type, name, result)
                    return result
                wrapper._nnx_capturing = True
                return wrapper
            setattr(cls, name, make(name, method))


def _uninstrument(cls: type) -> None:
    for name, method in list(vars(cls).items()):
        if hasattr(method, '_nnx_capturing'):
            setattr(cls, name, method.__wrapped__)


def _gather(module: Any, var_types: set) -> State:
    out = State({})
    for path, mod in iter_modules(module):
        captures = vars(mod).get('__captures__')
        if captures is None:
            continue
        for variable in captures:
            if type(variable) not in var_types:
                continue
            node = out
            for part in path:
                if part not in node:
                    node[part] = State({})
                node = node[part]
            for key, value in variable.get_value().items():
                node[key] = type(variable)(value)
    return out


def capture(fn: Any, *var_types: type, init: Any = None, method_outputs: type | None = None) -> Callable:
    """Wraps ``fn`` so that it returns ``(result, state_1, ..., state_n)``: the values sown/perturbed during the
    call, one State per type in ``var_types`` (just ``result`` when no type is given).

    ``fn`` is a function whose first argument is the module, a Module (its
    ``__call__``) or a bound method of one.  ``capture(Intermediate)(fn)``
    (types first) is the decorator form.  ``init`` (a State as returned for
    ``Perturbation``) seeds the collections, e.g. to differentiate with respect
    to perturbations.  ``method_outputs`` (a Variable type) also sows the
    output of every public method and ``__call__`` of the modules' classes
    under the method's name.  A Variable subclass is captured by the first
    requested type it is an instance of (State splitting).
    """
    if isinstance(fn, type) and issubclass(fn, Variable):
        types = (fn, *var_types)
        return lambda actual: capture(actual, *types, init=init, method_outputs=method_outputs)

    bound = None
    if inspect.ismethod(fn) and isinstance(fn.__self__, Module):
        bound = fn.__self__
    elif isinstance(fn, Module):
        bound = fn

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        module = bound if bound is not None else args[0]
        seeds = _init_by_path(init) if init else {}
        modules = list(iter_modules(module))
        for path, m in modules:
            collections: dict = {t: {} for t in var_types}
            for name, variable in seeds.get(path, {}).items():
                collections.setdefault(type(variable), {})[name] = variable.get_value()
            m.__captures__ = data(tuple(t(d) for t, d in collections.items()))
        classes = {type(m) for _, m in modules} if method_outputs else set()
        for cls in classes:
            _instrument(cls, method_outputs)
        try:
            result = fn(*args, **kwargs)
            found = _gather(module, set(var_types))
        finally:
            for cls in classes:
                _uninstrument(cls)
            for _, m in modules:
                if '__captures__' in vars(m):
                    delattr(m, '__captures__')
        if not var_types:
            return result
        states = split_state(found, *var_types)
        return (result, *states) if isinstance(states, tuple) else (result, states)

    return wrapper

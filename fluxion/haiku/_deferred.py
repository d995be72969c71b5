"""`hk.Deferred`: a module whose construction is put off until it is first used."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Generic, Sequence, TypeVar

from . import _frame

__all__ = ["Deferred"]

T = TypeVar("T")


class Deferred(Generic[T]):
    """Wraps `factory()` (which builds a module); the module is created on first access to `target`, a call, or
    a call of one of `call_methods`, and is named as if created where the `Deferred` was (same enclosing module
    and method). Attribute reads and writes go to the module once it exists.

    Useful e.g. to create a module in `__init__` that is only used in some code paths, without creating its
    parameters when it is not used.
    """

    def __init__(self, factory: Callable[[], T], call_methods: Sequence[str] = ("__call__",)):
        self._factory = factory
        self._target = None
        frame = _frame.current_frame_or_none()
        self._constructor_call = frame.module_stack[-1] if frame is not None and frame.module_stack else None
        for method in call_methods:
            if method != "__call__":
                setattr(self, method, self._materialize_then_call(method))

    def _materialize_then_call(self, method_name: str) -> Callable:
        def wrapped(*args, **kwargs):
            return getattr(self.target, method_name)(*args, **kwargs)
        return wrapped

    @property
    def target(self) -> T:
        """The module (built by `factory` on first access)."""
        if self._target is None:
            call = self._constructor_call
            with contextlib.ExitStack() as stack:
                if call is not None:
                    stack.enter_context(_frame.current_frame("Deferred").module_call(call.module,
                                                                                      call.method_name))
                self._target = self._factory()
        return self._target

    def __call__(self, *args, **kwargs) -> Any:
        return self.target(*args, **kwargs)

    def __str__(self) -> str:
        return f"Deferred({self.target})"

    def __repr__(self) -> str:
        return f"Deferred({self.target!r})"

    def __getattr__(self, name: str) -> Any:
        if name != "_target" and "_target" in self.__dict__ and self._target is not None:
            return getattr(self._target, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "_target" and self.__dict__.get("_target") is not None:
            setattr(self._target, name, value)
            return
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name != "_target" and self.__dict__.get("_target") is not None:
            delattr(self._target, name)
            return
        super().__delattr__(name)

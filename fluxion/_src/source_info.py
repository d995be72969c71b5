"""The name stack: the scope names (`named_scope`, `named_call`) under which traced equations are recorded.

`extend_name_stack(name)` pushes a name for the duration of a block (per thread). When a `JaxprTrace` records an
equation it stores the names pushed *since that trace began* in `eqn.source_info.name_stack` (`'outer/inner'`), so
the equations of a sub-jaxpr (a `jit` body, a loop body) carry names relative to the equation holding them, as in
JAX. Eager execution ignores the stack. Only the name stack is kept (JAX's source info also holds tracebacks).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator, NamedTuple


class SourceInfo(NamedTuple):
    """What a jaxpr equation records about where it was traced: its name stack, `'a/b'` (`''` for none)."""

    name_stack: str


class _NameStack(threading.local):
    def __init__(self):
        self.names: tuple = ()


_state = _NameStack()


def current_name_stack() -> tuple:
    """The names pushed on this thread, outermost first."""
    return _state.names


@contextlib.contextmanager
def extend_name_stack(name: str) -> Iterator[None]:
    """Pushes `name` onto this thread's name stack for the block."""
    saved = _state.names
    _state.names = saved + (name,)
    try:
        yield
    finally:
        _state.names = saved


class Recorder:
    """Builds the `SourceInfo` of equations recorded by one trace: the names pushed after the trace began.

    The result is cached while the stack is unchanged (the stack tuple is replaced, never mutated, on every push
    and pop), so recording an equation costs one identity check.
    """

    __slots__ = ("base", "_names", "_info")

    def __init__(self):
        self.base = len(_state.names)
        self._names: tuple | None = None
        self._info: SourceInfo | None = None

    def source_info(self) -> SourceInfo | None:
        names = _state.names
        if names is not self._names:
            self._names = names
            self._info = SourceInfo("/".join(names[self.base:])) if len(names) > self.base else None
        return self._info

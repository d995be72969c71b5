"""``set_graph_mode`` and ``set_graph_updates``: the defaults NNX functions use for their ``graph`` and
``graph_updates`` arguments (mirrors the config contexts of ``flax.nnx.graphlib``).

Graph mode (``graph=True``, the default) takes objects apart with the graph
protocol (shared references allowed); tree mode (``graph=False``) treats
pytree-mode objects as plain pytrees (no sharing, ``Object`` subclasses
rejected).  ``graph_updates`` says whether graph-mode transforms propagate
structural changes made inside them back to their inputs.

Each setting works three ways, like Flax's: calling ``set_graph_mode(False)``
sets the value until further notice; ``with set_graph_mode(False): ...``
restores the previous value on exit; ``@set_graph_mode(False)`` applies it
only while the decorated function runs.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

_STACKS = threading.local()


class _ConfigContext:
    _name: str = ''
    _default: bool = True

    @classmethod
    def _stack(cls) -> list:
        stacks = _STACKS.__dict__.setdefault('stacks', {})
        return stacks.setdefault(cls._name, [])

    def __init__(self, value: bool, /):
        stack = self._stack()
        if stack:
            self.prev_value = stack[-1]
            stack[-1] = value
        else:
            self.prev_value = None
            stack.append(value)
        self.new_value = value

    @classmethod
    def current_value(cls) -> bool:
        """The value in force (the innermost setting, else the default ``True``)."""
        stack = cls._stack()
        return stack[-1] if stack else cls._default

    def __enter__(self) -> _ConfigContext:
        if self.prev_value is not None:
            self._stack().insert(-1, self.prev_value)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack().pop()

    def __call__(self, f: Callable) -> Callable:
        # Used as a decorator: undo the immediate setting, apply it around each call instead.
        stack = self._stack()
        stack.pop()
        if self.prev_value is not None:
            stack.append(self.prev_value)
        value = self.new_value

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with type(self)(value):
                return f(*args, **kwargs)
        return wrapper


class set_graph_mode(_ConfigContext):  # noqa: N801  (Flax's name)
    """Sets the default of the ``graph`` argument (graph mode ``True`` / tree mode ``False``)."""
    _name = 'graph_mode'


class set_graph_updates(_ConfigContext):  # noqa: N801  (Flax's name)
    """Sets the default of the ``graph_updates`` argument of graph-mode transforms."""
    _name = 'graph_updates'


def resolve_graph(graph: bool | None) -> bool:
    """``graph`` itself, or the current :class:`set_graph_mode` value when it is ``None``."""
    return set_graph_mode.current_value() if graph is None else graph


def resolve_graph_updates(graph_updates: bool | None) -> bool:
    """``graph_updates`` itself, or the current :class:`set_graph_updates` value when it is ``None``."""
    return set_graph_updates.current_value() if graph_updates is None else graph_updates

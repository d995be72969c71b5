"""The one context object behind Haiku-style transforms.

`hk.transform` turns a function with *implicit* state (parameters created by `get_parameter`, state read and
written by `get_state`/`set_state`, random keys drawn by `next_rng_key`, modules named by where they are created)
into pure functions with *explicit* arguments. All of that implicit state lives in a single `Frame`; the transform
boundary (`_transform.py`) is the only place that builds a frame from explicit arguments and reads explicit results
back out of it. Everything else (`get_parameter`, `Module`, ...) only ever looks at `current_frame()`.

Frames form a thread-local stack so that a transformed function may call another transformed function's `apply`
(a nested, independent frame) and so that `hk.lift` can run an inner `init` on top of the outer frame.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from typing import Any, Iterator, NamedTuple

__all__ = ["Frame", "StatePair", "ModuleCall", "MissingRNGError", "NonEmptyStateError", "current_frame",
           "assert_context", "inside_transform"]


class MissingRNGError(ValueError):
    """Raised when random numbers are requested but `init`/`apply` got `rng=None`."""


class NonEmptyStateError(ValueError):
    """Raised when a function using `get_state`/`set_state` is wrapped with `transform` (not `_with_state`)."""


class StatePair(NamedTuple):
    """A state value as first seen in this call (`initial`, returned by `init`) and as last set (`current`)."""

    initial: Any
    current: Any


class ModuleCall(NamedTuple):
    """One entry of the module stack: the module whose method is running, and that method's name."""

    module: Any
    method_name: str


class Frame:
    """All per-call state of one `init` or `apply` invocation.

    Attributes:
        params: `{bundle_name: {param_name: array}}`; a bundle is a module name (or `~` outside any module).
        state: `{bundle_name: {state_name: StatePair}}`.
        rng: the `PRNGSequence` keys are drawn from, or `None` when the caller passed no key.
        params_frozen: `True` during `apply` (creating a parameter is then an error), `False` during `init`.
        module_stack: the chain of module method calls currently running.
        counter_stack / names_stack: per method call, the next free number for each module name and the names
            already used; a fresh pair is pushed for every module method call so that a module created inside a
            method gets the same name each time that method runs (Haiku's naming rule).
        allow_nested_init: set by `hk.lift` while it runs an inner `init` on top of this frame.
        teardown_callbacks: checks run when `init`/`apply` returns (e.g. a `lift_with_state` updater was used).
    """

    def __init__(self, params: dict, state: dict, rng: Any, params_frozen: bool):
        self.params = params
        self.state = state
        self.rng = rng
        self.params_frozen = params_frozen
        self.module_stack: list[ModuleCall] = []
        self.counter_stack: list[collections.Counter] = [collections.Counter()]
        self.names_stack: list[set] = [set()]
        self.allow_nested_init = False
        self.teardown_callbacks: list = []

    @contextlib.contextmanager
    def module_call(self, module: Any, method_name: str) -> Iterator[None]:
        """Runs a module method: pushes the module and a fresh naming scope, pops them afterwards."""
        self.module_stack.append(ModuleCall(module, method_name))
        self.counter_stack.append(collections.Counter())
        self.names_stack.append(set())
        try:
            yield
        finally:
            self.module_stack.pop()
            self.counter_stack.pop()
            self.names_stack.pop()

    def evolve(self, params: dict, state: dict, rng: Any, *, decoupled: bool) -> "Frame":
        """A frame over other parameter/state/rng values (the stateful control flow of `_stateful.py`).

        With `decoupled`, module naming (the module, counter and used-name stacks) is copied, so modules created
        inside e.g. a `cond` branch do not take names away from the code after it; otherwise it is shared.
        """
        frame = Frame(params, state, rng, self.params_frozen)
        if decoupled:
            frame.module_stack = list(self.module_stack)
            frame.counter_stack = [collections.Counter(c) for c in self.counter_stack]
            frame.names_stack = [set(n) for n in self.names_stack]
        else:
            frame.module_stack = self.module_stack
            frame.counter_stack = self.counter_stack
            frame.names_stack = self.names_stack
        frame.allow_nested_init = self.allow_nested_init
        return frame

    def teardown(self) -> None:
        for callback in self.teardown_callbacks:
            callback()

    def collect_params(self) -> dict:
        """The parameters as a plain `{bundle: {name: array}}` dict (empty bundles dropped)."""
        return {b: dict(v) for b, v in self.params.items() if v}

    def collect_state(self, initial: bool) -> dict:
        """The state as `{bundle: {name: array}}`, taking each pair's initial or current value."""
        pick = (lambda p: p.initial) if initial else (lambda p: p.current)
        return {b: {k: pick(p) for k, p in v.items()} for b, v in self.state.items() if v}


class _FrameStack(threading.local):
    def __init__(self):
        self.frames: list[Frame] = []


_STACK = _FrameStack()


@contextlib.contextmanager
def push(frame: Frame) -> Iterator[Frame]:
    """Makes `frame` the current frame for the duration of the `with` block."""
    _STACK.frames.append(frame)
    try:
        yield frame
    finally:
        popped = _STACK.frames.pop()
        assert popped is frame, "Haiku frame stack corrupted"


@contextlib.contextmanager
def allow_nested_init(frame: Frame) -> Iterator[None]:
    """Used by `hk.lift`: lets an inner transform's `init` run on top of `frame` for the `with` block."""
    previous, frame.allow_nested_init = frame.allow_nested_init, True
    try:
        yield
    finally:
        frame.allow_nested_init = previous


def inside_transform() -> bool:
    """True while some transformed function's `init` or `apply` is running on this thread."""
    return bool(_STACK.frames)


def current_frame_or_none() -> Frame | None:
    return _STACK.frames[-1] if _STACK.frames else None


def assert_context(public_symbol_name: str) -> None:
    """Raises Haiku's error for `hk.<public_symbol_name>` used outside `init`/`apply`.

    Raises:
        ValueError: "`hk.<name>` must be used as part of an `hk.transform`".
    """
    if not _STACK.frames:
        raise ValueError(f"`hk.{public_symbol_name}` must be used as part of an `hk.transform`")


def current_frame(public_symbol_name: str = "current_frame") -> Frame:
    """The innermost frame; raises Haiku's error naming `public_symbol_name` when there is none."""
    assert_context(public_symbol_name)
    return _STACK.frames[-1]

"""Named events for instrumentation (`jax.monitoring`): code records events, durations, time spans and scalars;
registered listeners receive them (e.g. to forward them to a metrics system).

fluxion records JAX's compile events under JAX's names, so a listener written for JAX sees fluxion's compiles:
`/jax/core/compile/jaxpr_trace_duration` (staging a Python function: jit cache misses, make_jaxpr; `fun_name` is
the function's name) and `/jax/core/compile/backend_compile_duration` (turning a jaxpr into an executable;
`fun_name` is `jit(<name>)`), each as a duration and as a time span.

Listeners are kept in tuples replaced under a lock (copy on write): recording reads the current tuple without
locking, so events recorded from many threads while others register or unregister listeners never see a list
being modified. Listeners are called on the recording thread, in registration order.
"""

from __future__ import annotations

from typing import Callable

from . import forks

JAXPR_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

_lock = forks.lock()
_listeners: dict[str, tuple[Callable, ...]] = {"event": (), "duration": (), "span": (), "scalar": ()}


def _register(kind: str, callback: Callable) -> None:
    with _lock:
        _listeners[kind] = _listeners[kind] + (callback,)


def _unregister(kind: str, callback: Callable, what: str) -> None:
    with _lock:
        current = list(_listeners[kind])
        if callback not in current:
            # JAX asserts here; the same class, with a message.
            raise AssertionError(f"unregister: {callback!r} is not a registered {what} listener")
        current.remove(callback)
        _listeners[kind] = tuple(current)


def record_event(event: str, **kwargs: str | int) -> None:
    """Calls every event listener with `(event, **kwargs)`."""
    for callback in _listeners["event"]:
        callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
    """Calls every duration listener with `(event, duration, **kwargs)`; `duration` is in seconds."""
    for callback in _listeners["duration"]:
        callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs: str | int) -> None:
    """Calls every time-span listener with `(event, start_time, end_time, **kwargs)` (seconds since the epoch)."""
    for callback in _listeners["span"]:
        callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
    """Calls every scalar listener with `(event, value, **kwargs)`."""
    for callback in _listeners["scalar"]:
        callback(event, value, **kwargs)


def register_event_listener(callback: Callable) -> None:
    """`callback(event, **kwargs)` is called by every later `record_event`."""
    _register("event", callback)


def register_event_duration_secs_listener(callback: Callable) -> None:
    """`callback(event, duration_secs, **kwargs)` is called by every later `record_event_duration_secs`."""
    _register("duration", callback)


def register_event_time_span_listener(callback: Callable) -> None:
    """`callback(event, start_time, end_time, **kwargs)` is called by every later `record_event_time_span`."""
    _register("span", callback)


def register_scalar_listener(callback: Callable) -> None:
    """`callback(event, value, **kwargs)` is called by every later `record_scalar`."""
    _register("scalar", callback)


def unregister_event_listener(callback: Callable) -> None:
    """Removes an event listener; `AssertionError` if it is not registered."""
    _unregister("event", callback, "event")


def unregister_event_duration_listener(callback: Callable) -> None:
    """Removes a duration listener; `AssertionError` if it is not registered."""
    _unregister("duration", callback, "event duration")


def unregister_event_time_span_listener(callback: Callable) -> None:
    """Removes a time-span listener; `AssertionError` if it is not registered."""
    _unregister("span", callback, "event time span")


def unregister_scalar_listener(callback: Callable) -> None:
    """Removes a scalar listener; `AssertionError` if it is not registered."""
    _unregister("scalar", callback, "scalar")


def clear_event_listeners() -> None:
    """Removes every listener of every kind (JAX 0.10's version forgets the scalar listeners; fluxion clears them
    too)."""
    with _lock:
        for kind in _listeners:
            _listeners[kind] = ()


def record_duration(event: str, start_time: float, end_time: float, **kwargs: str | int) -> None:
    """Records one timed step both as a duration and as a time span (what fluxion does for its compile events)."""
    if _listeners["duration"]:
        record_event_duration_secs(event, end_time - start_time, **kwargs)
    if _listeners["span"]:
        record_event_time_span(event, start_time, end_time, **kwargs)

"""Tracing profiles (`jax.profiler`): spans of what ran, written as a Chrome trace-event file that Perfetto
(ui.perfetto.dev), chrome://tracing and TensorBoard's trace viewer open.

While a trace is active fluxion records, per thread:

* `TraceAnnotation` / `StepTraceAnnotation` spans and functions decorated with `annotate_function` (category
  "annotation"; keyword arguments become the event's `args`, as strings, as in JAX's files);
* staging of a Python function to a jaxpr (`trace <name>`, category "compile": jit cache misses, make_jaxpr) and
  compilation of a jaxpr to an executable (`compile jit(<name>)`, category "compile");
* every call of a compiled program (`jit(<name>)`, category "execute") and every eager primitive (its name, category
  "eager").

Nothing is recorded, and nothing costs anything, while no trace is active: the instrumented entry points are
swapped in by the modules that own them when a trace starts (see `add_activation_hook`) and swapped out when it
stops. `stop_trace` writes `<log_dir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz`, the file JAX
also writes there (JAX additionally writes an XLA `xplane.pb`, which has no counterpart without XLA).
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import socket
import threading
import time
from typing import Any, Callable, Iterator

from . import forks

_state_lock = forks.lock()
_session: "_Session | None" = None
_activation_hooks: list[Callable[[bool], None]] = []


class ProfileOptions:
    """Options of a profiling session (`jax.profiler.ProfileOptions`), with JAX's defaults.

    fluxion reads none of them: its tracer has one level (every span listed in the module's docstring), and
    `duration_ms`/`start_timestamp_ns` (delayed or timed sessions of a profiler server) have no counterpart.
    """

    def __init__(self):
        self.advanced_configuration: dict = {}
        self.duration_ms = 0
        self.enable_hlo_proto = True
        self.host_tracer_level = 2
        self.include_dataset_ops = True
        self.python_tracer_level = 1
        self.raise_error_on_start_failure = False
        self.repository_path = ""
        self.session_id = ""
        self.start_timestamp_ns = 0


class _Session:
    def __init__(self, log_dir: str, perfetto_trace: bool, perfetto_link: bool):
        self.log_dir = log_dir
        self.perfetto_trace = perfetto_trace
        self.perfetto_link = perfetto_link
        self.events: list[dict] = []  # list.append is atomic: threads record without a lock
        self.threads: dict[int, str] = {}
        self.start_ns = time.perf_counter_ns()
        self.pid = os.getpid()


def add_activation_hook(hook: Callable[[bool], None]) -> None:
    """Calls `hook(True)` when a trace starts and `hook(False)` when it stops (modules swap their instrumented entry
    points in and out, so an inactive profiler costs nothing). Called at once with the current state."""
    _activation_hooks.append(hook)
    hook(_session is not None)


def is_active() -> bool:
    return _session is not None


def record_span(name: str, category: str, start_ns: int, end_ns: int, args: dict | None = None) -> None:
    """Records a complete span (times from `time.perf_counter_ns`) on the calling thread, if a trace is active."""
    session = _session
    if session is None:
        return
    tid = threading.get_ident()
    if tid not in session.threads:
        session.threads[tid] = threading.current_thread().name
    event = {"ph": "X", "pid": session.pid, "tid": tid, "ts": (start_ns - session.start_ns) / 1e3,
             "dur": (end_ns - start_ns) / 1e3, "name": name, "cat": category}
    if args:
        event["args"] = {k: str(v) for k, v in args.items()}
    session.events.append(event)


@contextlib.contextmanager
def span(name: str, category: str, args: dict | None = None) -> Iterator[None]:
    """Records the `with` block as a span when a trace is active (a cheap no-op otherwise)."""
    if _session is None:
        yield
        return
    start = time.perf_counter_ns()
    try:
        yield
    finally:
        record_span(name, category, start, time.perf_counter_ns(), args)


class TraceAnnotation:
    """A named span in the profile around a `with` block (or `annotate_function`'s calls); keyword arguments are
    attached to the span. Nothing is recorded while no trace is active. Usable from any thread; nested
    annotations nest in the viewer."""

    def __init__(self, name: str, **kwargs: Any):
        self.name = name
        self.kwargs = kwargs
        self._start: list[int] = []  # a stack: the same object may be entered again while active (recursion)

    def __enter__(self) -> "TraceAnnotation":
        self._start.append(time.perf_counter_ns())
        return self

    def __exit__(self, *exc) -> None:
        start = self._start.pop()
        if _session is not None:
            record_span(self.name, "annotation", start, time.perf_counter_ns(), self.kwargs)


class StepTraceAnnotation(TraceAnnotation):
    """A `TraceAnnotation` marking one training step: pass `step_num=` (shown in the span's args), as profile
    viewers group steps by it."""

    def __init__(self, name: str, **kwargs: Any):
        super().__init__(name, **kwargs)


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs: Any) -> Callable:
    """Wraps `func` so that each call is a span named `name` (default: the function's qualified name) with
    `decorator_kwargs` as its args."""
    label = name or getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(label, **decorator_kwargs):
            return func(*args, **kwargs)
    return wrapper


def start_trace(log_dir: str | os.PathLike, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
    """Starts recording (see the module docstring for what is recorded); `stop_trace` writes the file.

    Args:
      log_dir: directory under which `plugins/profile/<timestamp>/` is created.
      create_perfetto_trace: also write `perfetto_trace.json.gz` there (JAX converts its trace to Perfetto's
        format; fluxion's trace is already in it, so this is the same content).
      create_perfetto_link: also write the Perfetto file and print its path for ui.perfetto.dev. JAX serves it on
        a local port and waits for the browser; fluxion does not block.
      profiler_options: accepted for compatibility (see `ProfileOptions`).

    Raises:
      RuntimeError: a trace is already active (one at a time, as in JAX).
    """
    global _session
    with _state_lock:
        if _session is not None:
            raise RuntimeError("Profile has already been started. Only one profile may be run at a time.")
        _session = _Session(os.fspath(log_dir), bool(create_perfetto_trace), bool(create_perfetto_link))
        for hook in _activation_hooks:
            hook(True)


def stop_trace() -> None:
    """Stops recording and writes the trace file (see the module docstring for where).

    Raises:
      RuntimeError: no trace is active.
    """
    global _session
    with _state_lock:
        session = _session
        if session is None:
            raise RuntimeError("No profile started")
        _session = None
        for hook in _activation_hooks:
            hook(False)
    _write(session)


def _write(session: _Session) -> str:
    run = time.strftime("%Y_%m_%d_%H_%M_%S", time.localtime())
    out_dir = os.path.join(session.log_dir, "plugins", "profile", run)
    os.makedirs(out_dir, exist_ok=True)
    meta = [{"ph": "M", "pid": session.pid, "name": "process_name", "args": {"name": "/host:CPU"}}]
    for tid, tname in sorted(session.threads.items()):
        meta.append({"ph": "M", "pid": session.pid, "tid": tid, "name": "thread_name", "args": {"name": tname}})
    content = {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True},
               "traceEvents": meta + sorted(session.events, key=lambda e: e["ts"])}
    data = json.dumps(content).encode()
    path = os.path.join(out_dir, f"{socket.gethostname()}.trace.json.gz")
    with gzip.open(path, "wb") as f:
        f.write(data)
    if session.perfetto_trace or session.perfetto_link:
        perfetto = os.path.join(out_dir, "perfetto_trace.json.gz")
        with gzip.open(perfetto, "wb") as f:
            f.write(data)
        if session.perfetto_link:
            print(f"Perfetto trace written to {perfetto}; open it at https://ui.perfetto.dev")
    return path


@contextlib.contextmanager
def trace(log_dir: str | os.PathLike, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
          profiler_options: ProfileOptions | None = None) -> Iterator[None]:
    """`start_trace(...)` for the `with` block, then `stop_trace()` (also when the block raises)."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()

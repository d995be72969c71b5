"""Tracebacks that show the user's code: fluxion's internal frames are removed from exceptions leaving its API.

An error raised while tracing a user function under `jit(grad(f))` passes through dozens of fluxion frames (the
trace stack, rule tables, the compiler); the user needs their own frames and the message. Each public entry point
(`jit`, `grad`, `vmap`, `make_jaxpr`, control flow, ...) is an *API boundary*: an exception crossing it has the
frames of `fluxion/_src` and of generated code removed from its traceback, and a note saying so, as JAX does.
`config.update("jax_traceback_filtering", "off")` (or `JAX_TRACEBACK_FILTERING=off`) keeps every frame.

Filtering costs nothing on the normal path: the boundary is a `try` block, free in Python 3.11+ until an exception
is raised.
"""

from __future__ import annotations

import functools
import os
import types
from typing import Callable

from .config import config

_SRC_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_NOTE = ("--------------------\nFor simplicity, fluxion has removed its internal frames from this traceback. Set "
         "JAX_TRACEBACK_FILTERING=off (or fluxion.config.update('jax_traceback_filtering', 'off')) to include them.")


def _internal(frame: types.FrameType) -> bool:
    filename = frame.f_code.co_filename
    return filename.startswith(_SRC_DIR) or filename.startswith("<fluxion-")


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """`tb` without fluxion's internal frames (a new chain of traceback objects; `tb` is left as it is)."""
    kept = []
    while tb is not None:
        if not _internal(tb.tb_frame):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def filtering_enabled() -> bool:
    mode = str(config.jax_traceback_filtering or "auto").lower()
    return mode not in ("off", "false", "0", "none")


def filtered(err: BaseException) -> types.TracebackType | None:
    """The traceback `err` should be re-raised with at an API boundary: its own with the internal frames removed,
    and a note added the first time (an error crossing nested boundaries is filtered at each)."""
    if not filtering_enabled():
        return err.__traceback__
    if _NOTE not in getattr(err, "__notes__", ()) and hasattr(err, "add_note"):  # add_note: Python 3.11+
        err.add_note(_NOTE)
    return filter_traceback(err.__traceback__)


def api_boundary(fun: Callable) -> Callable:
    """Decorates a public entry point so exceptions leave it with filtered tracebacks."""
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        try:
            return fun(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 -- re-raised, with its traceback filtered
            raise err.with_traceback(filtered(err))  # noqa: B904 -- the same exception, not a new one
    return wrapped

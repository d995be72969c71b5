"""Locks that a process forked from this one starts afresh.

`os.fork` (and multiprocessing's "fork" start method) copies only the calling thread. A lock another thread held at
that moment stays held in the child, by a thread that does not exist there, and the child's first use of it waits
forever. fluxion's background threads -- the kernel compiler, the chunk pool of convolutions, the eager kernels'
compilers -- take module-level locks (a child forked 0.2 s after a first jitted call hung on the thread-count
monitor's), so those locks are made by `lock()`, and a forked child re-initializes them (`_at_fork_reinit`, as
CPython's `logging` and `threading` do for theirs) before any other code runs. Each guards a short update of a table
or counter, never a compilation: the compiler's own locks are instead held across the fork until no compilation
runs (`backends.compiler.fusion.runtime`)."""

from __future__ import annotations

import os
import threading

_locks: list = []


def lock() -> threading.Lock:
    """A new `threading.Lock` that is unlocked again in a forked child. For module-level locks (the list of them is
    kept for the life of the process)."""
    new = threading.Lock()
    _locks.append(new)
    return new


def _after_fork_in_child() -> None:
    for held in _locks:
        held._at_fork_reinit()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

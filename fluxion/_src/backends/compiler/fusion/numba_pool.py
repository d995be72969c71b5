"""Keeps Numba compiling when `NUMBA_NUM_THREADS` changes in a process whose Numba threads are already running.

Numba re-reads its environment variables at every compilation and raises RuntimeError ("Cannot set
NUMBA_NUM_THREADS to a different value once the threads have been launched") when `NUMBA_NUM_THREADS` no longer
matches the value its thread pool started with. A user who lowers the variable to pin a process to fewer threads
after a first threaded kernel ran would otherwise lose every later kernel to that error.

`reconcile`, called before fluxion asks Numba to compile (`runtime.load_kernel`), adopts a value up to the pool's
size as Numba's configured thread count: Numba then accepts the variable, `numba.set_num_threads` is bounded by it,
and fluxion's thread policy already caps its counts by the variable (`config.thread_limit`). A larger value cannot
be honoured (Numba cannot add threads to a running pool): `reconcile` warns once per value, naming the variable,
and raises `PoolSizeChanged`, so fused kernels fall back to NumPy until the variable is at most the pool's size.
"""

from __future__ import annotations

import os
import sys
import warnings

from .... import forks

VARIABLE = "NUMBA_NUM_THREADS"

_lock = forks.lock()
_warned: set = set()  # values of the variable already reported


class PoolSizeChanged(RuntimeError):
    """`NUMBA_NUM_THREADS` was raised above the size of Numba's running thread pool."""


def _wanted(numba) -> int:
    """The thread count Numba's next configuration reload will read (its default when the variable is unset or not
    an integer, as Numba parses it)."""
    raw = os.environ.get(VARIABLE)
    if raw is None:
        return int(numba.config.NUMBA_DEFAULT_NUM_THREADS)
    try:
        return int(raw)
    except ValueError:
        return int(numba.config.NUMBA_DEFAULT_NUM_THREADS)


def reconcile() -> None:
    """Makes Numba's configured thread count agree with `NUMBA_NUM_THREADS` where its pool allows it.

    Raises:
      PoolSizeChanged: the variable asks for more threads than Numba's running pool has (warned once per value).
    """
    numba = sys.modules.get("numba")
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if numba is None or parallel is None or not getattr(parallel, "_is_initialized", False):
        return  # before Numba starts its threads it accepts any value
    wanted = _wanted(numba)
    if wanted == numba.config.NUMBA_NUM_THREADS:
        return
    pool = int(parallel.NUM_THREADS)
    if 1 <= wanted <= pool:
        with _lock:
            numba.config.NUMBA_NUM_THREADS = wanted
        return
    msg = (f"{VARIABLE} is {os.environ.get(VARIABLE)!r}, but Numba started {pool} threads in this process before it "
           f"changed and cannot add threads to a running pool, so fluxion's fused kernels cannot be compiled: they "
           f"run on the NumPy path until {VARIABLE} is between 1 and {pool} again. Set {VARIABLE} before the first "
           f"jitted call, or use FLUXION_NUM_THREADS (fluxion_num_threads), which can change at any time.")
    with _lock:
        first = wanted not in _warned
        _warned.add(wanted)
    if first:
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
    raise PoolSizeChanged(msg)

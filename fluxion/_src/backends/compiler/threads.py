"""How many threads compiled code uses: all cores when the machine is quiet, one when other programs are busy.

Fused kernels (Numba, OpenMP) and BLAS products run on several threads only profitably when those threads get a
core at once. Measured on the 2-core benchmark machine: with the other core idle, two threads halve a
32x784 @ 784x128 float32 product (61 -> 36 us) and a fused kernel over 100K elements (14 -> 8 us); with the other
core busy, a parallel region waits for a descheduled thread (a 0.15 ms selu took 8 ms, a 36 ms convolution 606 ms).
Making idle OpenMP threads sleep instead of spin (OMP_WAIT_POLICY=PASSIVE) avoids the collapse but costs about
45 us per parallel region, more than most kernels take.

So the decision is made per call, from what the rest of the machine is doing: every `INTERVAL` seconds the CPU time
all processes used (`/proc/stat`) minus the time this process used (`time.process_time`) gives the number of cores
other programs keep busy; this process uses the cores they leave (at least one). The first decision, before there is
an interval to measure, counts the runnable tasks in `/proc/loadavg`. Where neither file exists (not Linux), all
cores are used. The option `fluxion_num_threads` (`FLUXION_NUM_THREADS=N`) fixes the count.

Upper bounds: the standard variables `OMP_NUM_THREADS`, `OPENBLAS_NUM_THREADS`, `MKL_NUM_THREADS` and
`NUMBA_NUM_THREADS` (`config.thread_limit`) cap every count fluxion sets, the fixed one included: a user who pins
BLAS to one thread (to run one process per core, say) keeps one thread in compiled code too. The option and the
variables are re-read with the load, every `INTERVAL` seconds, and the option at once when `config.update` changes
it (reading them on every call would cost about a microsecond, a third of a small jitted call).

Generated functions call `enter()` on entry and `leave()` on exit (about 0.3 us when nothing changes): `enter`
sets OpenBLAS's thread count and Numba's (for kernels compiled with `parallel=True`) to the decision.
"""

from __future__ import annotations

import os
import threading
import time

from ...config import config, thread_limit
from . import blas
from .fusion import runtime

# Seconds between two readings of the machine's load.
INTERVAL = 0.25
# Other programs using at least this fraction of a core count as occupying it.
BUSY_CORE_FRACTION = 0.5


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


CORES = _cores()
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _fixed() -> int | None:
    """The thread count fixed by `fluxion_num_threads`, or None.

    Raises:
      ValueError: `FLUXION_NUM_THREADS` is not a positive integer (the message names it).
    """
    return config.fluxion_num_threads


def _machine_busy_seconds() -> float | None:
    """CPU seconds all processes have used since boot (user, system, interrupts, steal), or None."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu":
        return None
    ticks = [int(x) for x in fields[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    guest = sum(ticks[8:10]) if len(ticks) > 9 else 0       # already counted in user/nice
    return (sum(ticks) - idle - guest) / _CLOCK_TICKS


def _runnable_others() -> int | None:
    """Tasks currently runnable on the machine besides this one (`/proc/loadavg`'s fourth field), or None."""
    try:
        with open("/proc/loadavg", "rb") as f:
            running = f.read().split()[3]
        return max(int(running.split(b"/")[0]) - 1, 0)
    except (OSError, IndexError, ValueError):
        return None


def threads_for(other_cores: float, cores: int = CORES) -> int:
    """The thread count to use when other programs keep `other_cores` cores busy (at least 1, at most `cores`)."""
    occupied = int(other_cores + (1 - BUSY_CORE_FRACTION))
    return max(1, min(cores, cores - occupied))


class _Monitor:
    """Keeps the current decision; re-reads the machine's load and the limits at most every `INTERVAL` seconds.

    Attributes:
      measured: the count the machine's load allows (see the module docstring).
      decision: what compiled code uses: the fixed count or `measured`, capped by `config.thread_limit()`.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.next_check = 0.0
        self.last = None   # (wall, machine busy seconds, own cpu seconds)
        others = _runnable_others()
        self.measured = threads_for(others) if others is not None else CORES
        self.decision = self.measured

    def refresh(self, now: float) -> int:
        with self.lock:
            if now < self.next_check:
                return self.decision
            self.next_check = now + INTERVAL
            wanted = _fixed()
            if wanted is None:
                wanted = self._measure(now)
            else:
                self.last = None  # measure afresh if the count is released
            limit = thread_limit()
            self.decision = wanted if limit is None else min(wanted, limit)
            return self.decision

    def _measure(self, now: float) -> int:
        busy, own = _machine_busy_seconds(), time.process_time()
        if busy is None:
            return self.measured
        if self.last is not None:
            wall = now - self.last[0]
            if wall > 0:
                other = max((busy - self.last[1]) - (own - self.last[2]), 0.0) / wall
                self.measured = threads_for(other)
        self.last = (now, busy, own)
        return self.measured


_monitor = _Monitor()
_local = threading.local()   # Numba's thread count is per calling thread


def _option_changed(value) -> None:
    _monitor.next_check = 0.0  # decide again on the next call


config.add_hook("fluxion_num_threads", _option_changed)


def current() -> int:
    """The number of threads compiled code should use now."""
    m = _monitor
    now = time.monotonic()
    if now < m.next_check:
        return m.decision
    return m.refresh(now)


def _set_numba_threads(n: int) -> None:
    if getattr(_local, "numba", None) == n:
        return
    numba = runtime.loaded_numba()
    if numba is None:  # no kernel has been loaded, so none runs in parallel
        return
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))  # Numba's pool has this many threads at most
    _local.numba = n


def enter() -> int:
    """Sets BLAS and Numba to `current()` threads; returns BLAS's previous count if it changed it, else 0."""
    n = current()
    _set_numba_threads(n)
    if not blas.available():
        return 0
    previous = blas.get_threads()
    if previous == n:
        return 0
    blas.set_threads(n)
    return previous


def leave(previous: int) -> None:
    """Restores BLAS's thread count after `enter` changed it (eager NumPy code keeps NumPy's own default)."""
    if previous:
        blas.set_threads(previous)

"""How many threads compiled code uses: BLAS by the size of each call, fused kernels by the machine's load.

Two kinds of multi-threaded work run in compiled code, and they get different rules because only one of them can
change results:

* BLAS calls (products, convolutions, factorizations: `blas.BLAS_PRIMITIVES`). OpenBLAS splits a product between
  its threads in a way that changes the order of the sums for some shapes: on the 2-core benchmark machine a
  float32 (32, 784) @ (784, 128) -- the MNIST MLP's first layer -- has different last bits on one and on two
  threads, as do (128, 784) and (256, 784) @ (784, 128) (while (784, 32) @ (32, 128) and square products from 64
  to 512 did not). A thread count taken from the
  load would make the same program give different bits depending on what else runs, which JAX's fixed thread pools
  never do. So each BLAS call's count follows from its size and the configuration only: the generated code calls
  `blas_for` before it with `blas_parallel(blas_work(eqn))` fixed at code generation -- one thread below
  `BLAS_MIN_WORK` multiply-adds, else `ceiling()`: all cores, or `fluxion_num_threads`, capped by the thread-limit
  variables below. Small products stay on one thread because a second one costs more than it saves there: the
  MNIST MLP step at batch 32 (products of 3.2M multiply-adds, 61 us serial) took 0.76 ms per step in the
  default-threading benchmark run, where the load allowed BLAS two threads, against 0.45 ms pinned to one core.
  2**23 multiply-adds (about 160 us serial at the 52 multiply-adds per ns one core reaches) leaves a thread's
  wake-up (tens of us) well inside the time a second core saves; the MLP at batch 32 stays below it, the ResNet convolutions (151M) and the
  transformer's products (268M) are above. The whole-step tier, whose products run inside one native function,
  decides per program the same way (`wholestep.entry_function`).

  The price of determinism is paid on a busy machine: a parallel BLAS call waits for its slowest thread, and a
  thread of a busy core gets its turn late. Measured on the benchmark machine with other programs keeping about
  six tasks runnable on its two cores, two BLAS threads against one: (32, 784) @ (784, 128) 2.0 ms against 0.35,
  (256, 256) @ (256, 256) 8.6 ms against 1.8, (512, 512) @ (512, 512) 21 ms against 15. On a shared machine, fix
  the count (`fluxion_num_threads=1`, or `OPENBLAS_NUM_THREADS=1`), as one would for JAX.

* Fused kernels compiled with `parallel=True` (Numba, OpenMP). Their results do not depend on the thread count
  (their reductions split work by the extent only: see `fusion.kernel`), so they keep the protection against a busy
  machine: `current()` is the number of cores the rest of the machine leaves idle. With the other core idle two
  threads halve a fused kernel over 100K elements (14 -> 8 us); with it busy, a parallel region waits for a
  descheduled thread (a 0.15 ms selu took 8 ms). Making idle OpenMP threads sleep at once (OMP_WAIT_POLICY=PASSIVE)
  avoids that but costs about 45 us per parallel region, more than most kernels take. Every `INTERVAL` seconds the
  CPU time all processes used (`/proc/stat`) minus the time this process used (`time.process_time`) gives the
  number of cores other programs keep busy; kernels use the cores they leave (at least one). The first decision,
  before there is an interval to measure, counts the runnable tasks in `/proc/loadavg`. Where neither file exists
  (not Linux), all cores are used. The option `fluxion_num_threads` (`FLUXION_NUM_THREADS=N`) fixes the count.
  Programs with multi-threaded BLAS calls keep their kernels serial (`fusion.Planner`, `multithreaded_blas`):
  after a call, OpenBLAS's idle threads spin (yielding) and after a parallel region OpenMP's spin too, so two pools
  taking turns in one program wait for each other's threads. Programs whose BLAS calls all run on one thread --
  small products, and the convolutions and stacks of small matrices that run on the chunk threads below -- use
  threaded kernels: measured on the ResNet step on the loaded 2-core machine (in one process, alternating), 157
  ms against 191 with serial kernels. The whole-step tier, which is serial, is not used where a program's threaded
  kernels would save more (`compiler.threads_beat_whole_step`).

* Chunked kernels on Python threads (`run_chunks`): the convolution and windowed-reduction lowerings work through
  an operand in fixed chunks (a few batch items: a Numba kernel builds a patch matrix or Winograd transform, a
  one-thread BLAS product consumes it while it is in cache). Their chunks are independent and each is computed the
  same way whichever thread takes it, and chunk results that are summed are summed in chunk order after all are
  done, so the bits do not depend on the thread count: like fused kernels, they use `current()` threads -- the
  calling thread and up to `CORES - 1` pool threads, which take the next chunk when they finish one. A parallel
  OpenBLAS call per chunk did not pay: the chunks' products are small (the ResNet step's Winograd products are
  16 of (256, 32) @ (32, 32) per image), and two BLAS threads per such call cost more than they saved (the ResNet
  stem's chunked products took 24 ms on two BLAS threads against 0.9 ms on one, on a loaded machine). So a chunked
  lowering sets BLAS to one thread (`blas_for(False)`) and threads the chunks instead; BLAS and the chunk threads
  never run at once, and neither runs inside a Numba parallel region.

Upper bounds: the standard variables `OMP_NUM_THREADS`, `OPENBLAS_NUM_THREADS`, `MKL_NUM_THREADS` and
`NUMBA_NUM_THREADS` (`config.thread_limit`) cap every count fluxion sets, the fixed one included: a user who pins
BLAS to one thread (to run one process per core, say) keeps one thread in compiled code too. The option and the
variables are re-read with the load, every `INTERVAL` seconds, and the option at once when `config.update` changes
it (reading them on every call would cost about a microsecond, a third of a small jitted call).

Generated functions that call BLAS or a threaded kernel call `enter()` on entry and `leave()` on exit: `enter` sets
Numba's thread count to `current()` and notes OpenBLAS's, `blas_for` sets OpenBLAS's before each BLAS call (a
thread-local copy of the count it set skips the call into OpenBLAS when nothing changes), and `leave` restores
OpenBLAS's count for eager NumPy code. OpenBLAS's count is one per process: two Python threads running compiled
code at once may see each other's settings.

A process forked after Numba started GNU OpenMP's threads must not start a parallel region (GNU OpenMP ends it):
there, fused kernels are serial (`forked_after_openmp`). The chunk pool starts afresh in a forked child.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ... import forks
from ...config import config, thread_limit
from ...lax.convolution import ConvDimensionNumbers, conv_general_dilated_p
from ...lax.reductions import dot_general_p
from . import blas, ir
from .fusion import runtime

# Seconds between two readings of the machine's load.
INTERVAL = 0.25
# Other programs using at least this fraction of a core count as occupying it.
BUSY_CORE_FRACTION = 0.5
# BLAS calls of fewer multiply-adds than this run on one thread (see the module docstring).
BLAS_MIN_WORK = 1 << 23


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
    """Keeps the current decisions; re-reads the machine's load and the limits at most every `INTERVAL` seconds.

    Attributes:
      measured: the count the machine's load allows (see the module docstring).
      decision: what fused kernels use: the fixed count or `measured`, capped by `config.thread_limit()`.
      ceiling: what large BLAS products use: the fixed count or all cores, capped by `config.thread_limit()` --
        never the load, so that a product's bits do not depend on what other programs do.
    """

    def __init__(self):
        self.lock = forks.lock()
        self.next_check = 0.0
        self.last = None   # (wall, machine busy seconds, own cpu seconds)
        others = _runnable_others()
        self.measured = threads_for(others) if others is not None else CORES
        self.decision = self.measured
        self.ceiling = CORES

    def refresh(self, now: float) -> int:
        with self.lock:
            if now < self.next_check:
                return self.decision
            self.next_check = now + INTERVAL
            fixed = _fixed()
            if fixed is None:
                wanted = self._measure(now)
            else:
                wanted = fixed
                self.last = None  # measure afresh if the count is released
            limit = thread_limit()
            self.decision = wanted if limit is None else min(wanted, limit)
            ceiling = CORES if fixed is None else fixed
            self.ceiling = ceiling if limit is None else min(ceiling, limit)
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
    """The number of threads fused kernels should use now (their results do not depend on it)."""
    m = _monitor
    now = time.monotonic()
    if now < m.next_check:
        return m.decision
    return m.refresh(now)


def ceiling() -> int:
    """The number of threads large BLAS products use: `fluxion_num_threads` or all cores, capped by the thread-limit
    variables (configuration only, never the load)."""
    m = _monitor
    if time.monotonic() >= m.next_check:
        m.refresh(time.monotonic())
    return m.ceiling


def blas_work(eqn) -> int:
    """Multiply-adds of a BLAS equation, from its shapes: output elements times the length of each dot (products,
    convolutions), or n**3 per matrix (factorizations and solves)."""
    out = eqn.outvars[0].aval
    prim = eqn.primitive
    if prim is dot_general_p:
        (lhs_contract, _), _ = eqn.params["dimension_numbers"]
        shape = eqn.invars[0].aval.shape
        return int(np.prod(out.shape, dtype=np.int64)) * int(np.prod([shape[d] for d in lhs_contract], dtype=np.int64))
    if prim is conv_general_dilated_p:
        rhs = eqn.invars[1].aval.shape
        dn = eqn.params.get("dimension_numbers")
        out_features = rhs[dn.rhs_spec[0]] if isinstance(dn, ConvDimensionNumbers) else rhs[0]
        per_output = int(np.prod(rhs, dtype=np.int64)) // max(out_features, 1)
        return int(np.prod(out.shape, dtype=np.int64)) * per_output
    shape = eqn.invars[0].aval.shape
    n = shape[-1] if shape else 1
    return int(np.prod(shape[:-2], dtype=np.int64)) * n ** 3


def stacked_blas(eqn) -> bool:
    """Whether a batched `dot_general` runs its matrices on the chunk threads, each on one BLAS thread
    (`contractions.stacked_matmul`): its total work is at least `BLAS_MIN_WORK` multiply-adds but each matrix's is
    below it (a size-only decision, as for BLAS calls)."""
    if eqn.primitive is not dot_general_p:
        return False
    (_, _), (lhs_batch, _) = eqn.params["dimension_numbers"]
    if not lhs_batch:
        return False
    shape = eqn.invars[0].aval.shape
    batch = int(np.prod([shape[d] for d in lhs_batch], dtype=np.int64))
    work = blas_work(eqn)
    return batch > 1 and blas_parallel(work) and not blas_parallel(work // batch)


def multithreaded_blas(closed) -> bool:
    """Whether some BLAS call of the program (or of a sub-program) runs on several OpenBLAS threads: a product or
    factorization of at least `BLAS_MIN_WORK` multiply-adds, other than the stacks of small matrices and the
    convolutions that run on the chunk threads with one BLAS thread per call (`stacked_blas`, `conv.supported`).
    Such programs keep their fused kernels serial (see the module docstring)."""
    from . import conv  # imported here: conv imports this module
    for e in ir.all_eqns(closed.jaxpr):
        if e.primitive not in blas.BLAS_PRIMITIVES or stacked_blas(e):
            continue
        if e.primitive is conv_general_dilated_p and conv.supported(e):
            continue
        if blas_parallel(blas_work(e)):
            return True
    return False


def blas_parallel(work: int) -> bool:
    """Whether a BLAS call of `work` multiply-adds may use several threads (`BLAS_MIN_WORK`)."""
    return work >= BLAS_MIN_WORK


def blas_threads(parallel: bool) -> int:
    """The BLAS thread count of a call `blas_parallel` classified: 1, or `ceiling()`."""
    return ceiling() if parallel else 1


def blas_for(parallel: bool) -> None:
    """Sets OpenBLAS's thread count for the next BLAS call of the generated code (emitted before each one, with
    `blas_parallel` of its size: a size-only decision, so its result has the same bits whatever the load)."""
    n = ceiling() if parallel else 1
    state = _local.__dict__
    if state.get("blas") != n:
        blas.set_threads(n)
        state["blas"] = n


def one_blas_thread() -> None:
    """Sets OpenBLAS to one thread (where fluxion can set it), before work whose products run on the chunk threads
    (`run_chunks`): each of those products takes one BLAS thread, the threads go to whole chunks."""
    if blas.available():
        blas_for(False)


def scipy_blas_serial() -> None:
    """Sets the OpenBLAS SciPy ships -- the one `np.dot` calls inside Numba code -- to one thread, before a scan's
    loop kernel runs. Its products are per-step sized (below `BLAS_MIN_WORK` for the workloads loop kernels take),
    and their bits must not depend on what ran before (a whole-step function may have left two threads set)."""
    get, set_ = blas.scipy_controls()
    if set_ is not None and _local.__dict__.get("scipy_blas") != 1:
        if get() != 1:
            set_(1)
        _local.scipy_blas = 1


def _set_numba_threads(n: int) -> None:
    if getattr(_local, "numba", None) == n:
        return
    numba = runtime.loaded_numba()
    if numba is None:  # no kernel has been loaded, so none runs in parallel
        return
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))  # Numba's pool has this many threads at most
    _local.numba = n


def enter() -> int:
    """Sets Numba's thread count to `current()`, and notes BLAS's (which `blas_for` then sets per call); returns
    BLAS's count on entry (0 without BLAS controls), for `leave`."""
    _set_numba_threads(current())
    if not blas.available():
        return 0
    previous = blas.get_threads()
    _local.blas = previous
    return previous


def leave(previous: int) -> None:
    """Restores BLAS's thread count if the call changed it (eager NumPy code keeps NumPy's own default)."""
    if previous and _local.__dict__.get("blas", previous) != previous:
        blas.set_threads(previous)
        _local.blas = previous


_pool_lock = forks.lock()
_pool: ThreadPoolExecutor | None = None


def _chunk_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(CORES - 1, 1), thread_name_prefix="fluxion-chunks",
                                       initializer=_mark_pool_thread)
        return _pool


def _mark_pool_thread() -> None:
    _local.in_pool = True


# Set in a process forked from one where Numba had started GNU OpenMP's threads (`runtime.openmp_started`).
_forked_after_openmp = False


def forked_after_openmp() -> bool:
    """Whether this process was forked after Numba started GNU OpenMP threads (in its parent, or earlier up the
    line). GNU OpenMP ends such a child when it starts a parallel region ("Terminating: fork() called from a process
    already using GNU OpenMP, this is unsafe."), so it runs no multi-threaded kernel: `fusion.parallel_possible` is
    False, new programs get serial kernels, and executables whose tier calls threaded kernels go back to their NumPy
    code and build a serial tier on their next call (`compiler._after_fork_in_child`). Chunked lowerings
    (`run_chunks`: Python threads) and BLAS keep their threads."""
    return _forked_after_openmp


def _after_fork_in_child() -> None:
    """In a forked child the chunk pool's threads do not exist (its queued chunks would wait forever): start afresh.
    Notes whether the parent had started OpenMP (see `forked_after_openmp`)."""
    global _pool, _forked_after_openmp
    _pool = None
    if runtime.openmp_started():
        _forked_after_openmp = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def run_chunks(count: int, make_body) -> int:
    """Runs `body(i)` for every chunk `i` in `range(count)`, on up to `current()` threads: this one and pool threads
    (see the module docstring). `make_body()` is called once per participating thread and returns its `body` (so
    that each thread has its own scratch buffers). Chunks are handed out one at a time in increasing order; which
    thread runs which chunk varies, so `body` must write each chunk's result to a place of its own. Returns the
    number of threads used. Exceptions raised by a body are re-raised here after every thread has stopped.

    Called from a pool thread (a chunked lowering inside another), or with one thread allowed, everything runs
    here in order."""
    n = min(current(), count)
    if n <= 1 or _local.__dict__.get("in_pool"):
        body = make_body()
        for i in range(count):
            body(i)
        return 1
    counter = itertools.count()
    failed = []

    def participant():
        try:
            body = make_body()
            for i in counter:
                if i >= count or failed:
                    return
                body(i)
        except BaseException as err:  # noqa: BLE001 -- handed to the caller, which re-raises it
            failed.append(err)

    pool = _chunk_pool()
    futures = [pool.submit(participant) for _ in range(n - 1)]
    participant()
    for f in futures:
        if not f.cancel():  # a pool thread that has not started (busy with another caller's chunks) is not awaited
            f.result()
    if failed:
        raise failed[0]
    return n

"""SPMD runtime: one program run as one replica per device on threads, meeting at collectives (`pmap`'s engine).

* Axis frames: while `pmap` traces its body it binds `axis_name` to the global replica count (per thread, like the
  trace stack), so collectives learn their axis size.
* Replica groups: `run_replicas` runs an executable on one thread per device; a collective deposits its operand in a
  shared slot, waits at a barrier for the other replicas (and, after `fluxion.distributed.initialize()`, exchanges
  with the other processes over MPI), and every replica reduces the same list in the same order, so replicated
  results are bitwise identical. Replicas that can never meet -- one returned from its program while others wait at
  a collective (a collective inside a branch only some replicas take), or replicas at different collectives -- fail
  at once with a `CollectiveError` naming the collective and the axis; a replica that is merely late (still running,
  or on another process) is waited for up to the collective timeout.

This sits with the interpreters (below lax) because the collectives' rules and implementations need it; the `pmap`
API that drives it is above.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, NamedTuple, Sequence

from .. import distributed, forks

DEFAULT_COLLECTIVE_TIMEOUT = 300.0


# --------------------------------------------------------------------------------------------------------------
# Axis names bound by pmap while it traces (read by the collectives to learn an axis's size)
# --------------------------------------------------------------------------------------------------------------

class AxisFrame(NamedTuple):
    name: Any
    size: int
    level: int  # trace level of the pmap body: a vmap axis of the same name at a higher level shadows it


class _Frames(threading.local):
    """The pmap axis frames of the calling thread's traces (tracing state is per thread, like the trace stack)."""

    def __init__(self):
        self.stack: list[AxisFrame] = []


_frames = _Frames()


def push_axis_frame(frame: AxisFrame) -> None:
    """Binds `frame.name` for the calling thread's traces (until `pop_axis_frame`)."""
    _frames.stack.append(frame)


def pop_axis_frame() -> None:
    _frames.stack.pop()


def innermost_pmap_frame(name) -> AxisFrame | None:
    for frame in reversed(_frames.stack):
        if same_axis_name(frame.name, name):
            return frame
    return None


def same_axis_name(a, b) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # exotic names whose == is not a bool
        return False


# --------------------------------------------------------------------------------------------------------------
# The replica runtime: groups of threads exchanging values at collectives
# --------------------------------------------------------------------------------------------------------------

class CollectiveError(RuntimeError):
    """A collective could not complete: a replica failed, or another replica/process did not arrive in time."""


class _GroupBroken(CollectiveError):
    """Raised in the replicas that were waiting when another replica failed (the main error is reported)."""


class ReplicaGroup:
    """The replicas of one pmap call on this process: a barrier, one slot per replica, and the MPI link if any.

    The barrier is this class's own (a generation count under a condition variable) so that it can tell why a
    collective cannot complete and say so at once instead of after `timeout`: a replica failed (the others stop),
    a replica returned from its program while others wait at a collective (it will never arrive), or the replicas
    reached different collectives. Collectives every replica reaches are never affected: a replica that passed a
    barrier has passed it, whatever happens next.

    Args:
      axis_name: the pmap axis name (for error messages).
      local_size: replicas (threads) on this process.
      offset: global index of local replica 0.
      global_size: replicas over all processes.
      comm: the distributed communicator (`fluxion._src.distributed`) or None in a single process.
      timeout: seconds a replica waits for the others at a collective before failing.
    """

    def __init__(self, axis_name, local_size: int, offset: int, global_size: int, comm, timeout: float):
        self.axis_name = axis_name
        self.local_size = local_size
        self.offset = offset
        self.global_size = global_size
        self.comm = comm
        self.timeout = timeout
        self._cv = threading.Condition()
        self._generation = 0       # barriers completed
        self._arrived: list = []   # (local index, collective) of the replicas waiting at the current barrier
        # Why the replicas can never meet again, once seen (the first reason only): ("finished", local index of a
        # replica that returned from its program), ("mismatch", message) or ("timeout", None).
        self._cause: tuple | None = None
        self._slots: list = [None] * local_size
        self._shared = None
        self._error: BaseException | None = None
        self._aborted = False

    def abort(self) -> None:
        """A replica failed: the others stop at (or before) their next collective."""
        with self._cv:
            self._aborted = True
            self._cv.notify_all()

    def finish(self, local_index: int) -> None:
        """Replica `local_index` returned from its program: a collective the others wait at can never complete."""
        with self._cv:
            if self._cause is None:
                self._cause = ("finished", local_index)
            self._cv.notify_all()

    def _blocked(self, local_index: int, what: str) -> BaseException | None:
        """The error for replica `local_index` at collective `what` if the current barrier can never complete."""
        me = self.offset + local_index
        # The first reason seen is the cause of whatever failed since (a replica that saw it raised, which aborts
        # the group; a replica that timed out released another that then finished).
        if self._cause is not None:
            kind, detail = self._cause
            if kind == "mismatch":
                return CollectiveError(detail)
            if kind == "finished":
                return CollectiveError(
                    f"pmap replica {me} is at collective '{what}' over axis {self.axis_name!r}, but replica "
                    f"{self.offset + detail} finished its program without reaching it, so the collective can never "
                    "complete. Every replica must execute the same collectives in the same order (a collective "
                    "inside a branch that only some replicas take cannot work).")
            return self._timeout_error(local_index, what)
        if self._aborted:
            return _GroupBroken(f"replica {me} stopped at '{what}' because another replica failed")
        return None

    def _timeout_error(self, local_index: int, what: str) -> CollectiveError:
        return CollectiveError(
            f"pmap replica {self.offset + local_index} waited more than {self.timeout:g} s at collective "
            f"'{what}' over axis {self.axis_name!r} for the other {self.local_size - 1} local replica(s). "
            "Every replica must execute the same collectives in the same order (a collective inside a "
            "branch that only some replicas take deadlocks).")

    def _wait(self, local_index: int, what: str) -> None:
        """Waits until every local replica has reached this barrier (at the same collective)."""
        with self._cv:
            err = self._blocked(local_index, what)
            if err is not None:
                raise err
            if self._arrived and self._arrived[0][1] != what:
                first, other = self._arrived[0]
                message = (f"pmap replicas reached different collectives over axis {self.axis_name!r}: replica "
                           f"{self.offset + first} is at '{other}' while replica {self.offset + local_index} is at "
                           f"'{what}'. Every replica must execute the same collectives in the same order.")
                self._cause = ("mismatch", message)
                self._cv.notify_all()
                raise CollectiveError(message)
            self._arrived.append((local_index, what))
            if len(self._arrived) == self.local_size:
                self._arrived = []
                self._generation += 1
                self._cv.notify_all()
                return
            generation = self._generation
            deadline = time.monotonic() + self.timeout
            while self._generation == generation:
                err = self._blocked(local_index, what)
                if err is None:
                    remaining = deadline - time.monotonic()
                    if remaining > 0:
                        self._cv.wait(remaining)
                        continue
                    self._cause = ("timeout", None)  # the other waiters give up too
                    self._cv.notify_all()
                    err = self._timeout_error(local_index, what)
                raise err

    def exchange(self, local_index: int, payload: list, what: str, combine: Callable[[list], Any]) -> Any:
        """Contributes `payload` (a list of NumPy values) and returns `combine(payloads of every replica)`.

        `combine` runs before the replicas are released, while every payload is still untouched: after the exchange
        each replica may reuse its operand buffers, so results must not alias another replica's payload.
        """
        if self.global_size == 1:
            return combine([payload])
        self._slots[local_index] = payload
        self._wait(local_index, what)
        if self.comm is None:
            result = combine(list(self._slots))
        else:
            if local_index == 0:
                try:
                    self._shared, self._error = self.comm.allgather_replicas(list(self._slots), what), None
                except BaseException as e:  # reported by replica 0; the others learn it failed
                    self._shared, self._error = None, e
            self._wait(local_index, what)
            if self._error is not None:
                if local_index == 0:
                    raise self._error
                raise _GroupBroken(f"replica {self.offset + local_index} stopped at '{what}': the exchange with "
                                   "the other processes failed")
            result = combine(self._shared)
        self._wait(local_index, what)
        return result


class ReplicaSlot(NamedTuple):
    group: ReplicaGroup
    local_index: int

    @property
    def index(self) -> int:
        return self.group.offset + self.local_index

    @property
    def size(self) -> int:
        return self.group.global_size

    def exchange(self, payload: list, what: str, combine: Callable[[list], Any]) -> Any:
        return self.group.exchange(self.local_index, payload, what, combine)


_tls = threading.local()


def current_replica(name) -> ReplicaSlot:
    """The replica slot of the running thread for axis `name`.

    Raises:
      NameError: no pmap replica with that axis name is running on this thread.
    """
    slots = getattr(_tls, "slots", None) or {}
    for key, slot in slots.items():
        if same_axis_name(key, name):
            return slot
    raise NameError(f"unbound axis name: {name!r}. A collective over this axis was evaluated outside a pmap replica "
                    "(collectives only work inside pmap(..., axis_name=...) or vmap(..., axis_name=...)).")


class _DeviceThread:
    """The thread a device's replicas run on (one per local device, created on first use)."""

    def __init__(self, label: str):
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=f"fluxion-{label}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            fn, fut = self._tasks.get()
            try:
                fut.set_result(fn())
            except BaseException as e:  # handed to the caller through the future
                fut.set_exception(e)

    def submit(self, fn: Callable) -> Future:
        fut: Future = Future()
        self._tasks.put((fn, fut))
        return fut


_device_threads: dict = {}
_device_threads_lock = forks.lock()


def _thread_for(device) -> _DeviceThread:
    t = _device_threads.get(device.id)
    if t is None:
        with _device_threads_lock:
            t = _device_threads.get(device.id)
            if t is None:
                t = _device_threads[device.id] = _DeviceThread(str(device))
    return t


def _collective_timeout() -> float:
    return distributed.collective_timeout()


def run_replicas(executable: Callable, consts: list, per_replica_args: list[list], devs: Sequence, axis_name,
                 offset: int, global_size: int, comm) -> list[list]:
    """Runs `executable(consts, args)` once per replica, concurrently, and returns each replica's outputs.

    Replica 0 runs on the calling thread, replica i > 0 on the thread of `devs[i]`.

    Raises:
      The error of the lowest-numbered replica that failed on its own, else the lowest-numbered replica's
      `CollectiveError` (a collective that could not complete); the other replicas are stopped.
    """
    n = len(per_replica_args)
    group = ReplicaGroup(axis_name, n, offset, global_size, comm, _collective_timeout())

    def task(i):
        prev = getattr(_tls, "slots", None)
        _tls.slots = {} if prev is None else dict(prev)
        if axis_name is not None:
            _tls.slots[axis_name] = ReplicaSlot(group, i)
        try:
            out = executable(consts, per_replica_args[i])
        except BaseException:
            group.abort()
            raise
        finally:
            _tls.slots = prev
        group.finish(i)  # collectives the others still wait at can never complete: they fail at once
        return out

    futures = [_thread_for(devs[i]).submit(functools.partial(task, i)) for i in range(1, n)]
    results: list = [None] * n
    errors: list = [None] * n
    try:
        results[0] = task(0)
    except BaseException as e:
        errors[0] = e
    for i, fut in enumerate(futures, start=1):
        try:
            results[i] = fut.result()
        except BaseException as e:
            errors[i] = e
    real = [e for e in errors if e is not None and not isinstance(e, _GroupBroken)]
    # A replica's own failure first: the collective errors of the others may be its consequences.
    own = [e for e in real if not isinstance(e, CollectiveError)]
    if own or real:
        raise (own or real)[0]
    if any(e is not None for e in errors):
        raise next(e for e in errors if e is not None)
    return results


# --------------------------------------------------------------------------------------------------------------
# pmap
# --------------------------------------------------------------------------------------------------------------

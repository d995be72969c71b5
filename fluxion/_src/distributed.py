"""Several processes as one program: `initialize()` joins an MPI world so `pmap` collectives span processes.

Launch the same program on every process with an MPI launcher, e.g. `mpirun -n 2 python train.py`, and call
`fluxion.distributed.initialize()` first. Then:

* `fluxion.devices()` lists every process's CPU devices (global ids numbered process by process, each with its
  `process_index`); `local_devices()`, `process_index()` and `process_count()` describe this process;
* each process calls `pmap` on its local shards (leading axis = its number of devices used); the named axis spans
  all processes, so `lax.psum(x, 'i')` sums over every replica of every process;
* meshes (`make_mesh`) span every process's devices; `make_array_from_process_local_data` and the other
  `make_array_from_*` constructors exchange each process's blocks (`MPICommunicator.allgather_array`), after which
  every process holds the global array (see fluxion/_src/placement.py).

Requirements: the `mpi4py` package and an MPI library. The project's setup installs both from PyPI:
`pip install mpi4py mpich` (the `mpich` wheel provides `libmpi` and the `mpirun`/`mpiexec` launchers). Open MPI
or a system MPICH work as well.

Failure handling: every exchange between processes is non-blocking and polled against a deadline
(`collective_timeout` seconds, default 300: the `fluxion_collective_timeout` option, `FLUXION_COLLECTIVE_TIMEOUT`),
so a process that died, hangs, or never called `initialize()` makes the others raise `DistributedTimeoutError`
naming the missing rank(s) instead of waiting forever. Messages are raw array bytes plus a JSON header: nothing is ever unpickled.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import threading
import time
from typing import Any, Sequence

import numpy as np

from . import devices as devices_mod
from .config import config
_TAG = 7311  # message tag of fluxion's exchanges (below the MPI-guaranteed tag bound of 32767)
_HEADER = struct.Struct("<Q")


class DistributedError(RuntimeError):
    """The processes of the distributed world disagree (different programs, shapes or dtypes at a collective)."""


class DistributedTimeoutError(DistributedError, TimeoutError):
    """Some process did not take part in an exchange within the timeout.

    Attributes:
      missing_ranks: the ranks that did not arrive.
    """

    def __init__(self, message: str, missing_ranks: Sequence[int]):
        super().__init__(message)
        self.missing_ranks = list(missing_ranks)


class _State:
    def __init__(self) -> None:
        self.comm: MPICommunicator | None = None
        self.timeout: float | None = None


_state = _State()


def collective_timeout() -> float:
    """Seconds a replica or process waits for the others at a collective before failing (the `collective_timeout`
    given to `initialize`, else the `fluxion_collective_timeout` option, `FLUXION_COLLECTIVE_TIMEOUT`).

    Raises:
      ValueError: `FLUXION_COLLECTIVE_TIMEOUT` is not a positive number of seconds (the message names it).
    """
    if _state.timeout is not None:
        return _state.timeout
    return float(config.fluxion_collective_timeout)


def is_initialized() -> bool:
    """True after `initialize()` (and before `shutdown()`)."""
    return _state.comm is not None


def communicator() -> "MPICommunicator":
    """The communicator of the world joined by `initialize()`.

    Raises:
      RuntimeError: `initialize()` has not been called.
    """
    if _state.comm is None:
        raise RuntimeError("fluxion.distributed.initialize() has not been called")
    return _state.comm


class MPICommunicator:
    """Exchanges byte messages and arrays among the ranks of an MPI communicator, with a deadline.

    Args:
      mpi: the `mpi4py.MPI` module.
      comm: an MPI communicator (normally `MPI.COMM_WORLD`).
      timeout: seconds to wait for the other ranks in each exchange.
    """

    def __init__(self, mpi, comm, timeout: float):
        self._mpi = mpi
        self._comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = float(timeout)
        self._seq = 0
        self._lock = threading.Lock()
        self._broken: str | None = None

    def _fail(self, message: str, missing: Sequence[int]) -> None:
        self._broken = message
        raise DistributedTimeoutError(message, missing)

    def exchange_bytes(self, payload: bytes, what: str, timeout: float | None = None) -> list[bytes]:
        """Sends `payload` to every other rank and returns every rank's payload (indexed by rank).

        Raises:
          DistributedTimeoutError: some ranks did not send (or receive) within the timeout; names them.
        """
        if self._broken is not None:
            raise DistributedError(f"the distributed world is unusable after an earlier failure: {self._broken}")
        timeout = self.timeout if timeout is None else timeout
        MPI = self._mpi
        comm = self._comm
        with self._lock:
            self._seq += 1
            if self.size == 1:
                return [payload]
            send_buf = bytearray(payload)
            others = [r for r in range(self.size) if r != self.rank]
            sends = [comm.Isend([send_buf, MPI.BYTE], dest=r, tag=_TAG) for r in others]
            received: list = [None] * self.size
            received[self.rank] = payload
            pending = list(others)
            status = MPI.Status()
            deadline = time.monotonic() + timeout
            idle = 0
            while pending:
                progressed = False
                for r in list(pending):
                    if comm.Iprobe(source=r, tag=_TAG, status=status):
                        buf = bytearray(status.Get_count(MPI.BYTE))
                        comm.Recv([buf, MPI.BYTE], source=r, tag=_TAG)
                        received[r] = bytes(buf)
                        pending.remove(r)
                        progressed = True
                if pending and not progressed:
                    if time.monotonic() > deadline:
                        names = ", ".join(map(str, pending))
                        self._fail(f"fluxion.distributed: rank(s) {names} did not take part in '{what}' within "
                                   f"{timeout:g} s (this is rank {self.rank} of {self.size}): process {pending[0]} "
                                   "has died, hangs, never called fluxion.distributed.initialize(), or runs a "
                                   "different sequence of collectives", pending)
                    idle += 1
                    if idle > 200:  # busy-poll briefly (loopback latency is microseconds), then back off
                        time.sleep(0.0002 if idle < 5000 else 0.002)
            while not MPI.Request.Testall(sends):
                if time.monotonic() > deadline:
                    stuck = [r for r, req in zip(others, sends) if not req.Test()]
                    self._fail(f"fluxion.distributed: rank(s) {', '.join(map(str, stuck))} did not receive the "
                               f"data of '{what}' within {timeout:g} s (this is rank {self.rank})", stuck)
                time.sleep(0.0002)
            return received

    # -- arrays ---------------------------------------------------------------------------------------------------
    def _encode(self, what: str, replicas: list[list[np.ndarray]]) -> bytes:
        arrays = [np.ascontiguousarray(a) for rep in replicas for a in rep]
        header = json.dumps({"seq": self._seq + 1, "what": what, "replicas": len(replicas),
                             "arrays": [[a.dtype.name, list(a.shape)] for a in arrays]}).encode()
        return b"".join([_HEADER.pack(len(header)), header] + [a.tobytes() for a in arrays])

    def allgather_replicas(self, replicas: list[list[np.ndarray]], what: str) -> list[list[np.ndarray]]:
        """Gathers every process's per-replica array lists; returns all replicas ordered by global index.

        All processes must contribute the same number of replicas with the same shapes and dtypes.

        Raises:
          DistributedTimeoutError: a process did not arrive in time (names the rank).
          DistributedError: processes contributed different shapes/dtypes or are at different collectives.
        """
        replicas = [[np.asarray(a) for a in rep] for rep in replicas]
        messages = self.exchange_bytes(self._encode(what, replicas), what)
        mine = json.loads(messages[self.rank][_HEADER.size:_HEADER.size + _HEADER.unpack_from(
            messages[self.rank])[0]])
        template = [a for rep in replicas for a in rep]
        out: list[list[np.ndarray]] = []
        for rank, msg in enumerate(messages):
            if rank == self.rank:
                out.extend(replicas)
                continue
            (hlen,) = _HEADER.unpack_from(msg)
            header = json.loads(msg[_HEADER.size:_HEADER.size + hlen])
            if (header["what"], header["seq"]) != (mine["what"], mine["seq"]):
                raise DistributedError(f"fluxion.distributed: rank {rank} is at collective '{header['what']}' "
                                       f"#{header['seq']} while rank {self.rank} is at '{what}' #{mine['seq']}: "
                                       "the processes run different programs")
            if header["replicas"] != len(replicas) or header["arrays"] != mine["arrays"]:
                raise DistributedError(
                    f"fluxion.distributed: at '{what}', rank {rank} contributed {header['replicas']} replica(s) "
                    f"with arrays {header['arrays']} but rank {self.rank} contributed {len(replicas)} with "
                    f"{mine['arrays']}: every process must pmap over the same number of local devices with the "
                    "same shapes and dtypes")
            offset = _HEADER.size + hlen
            flat = []
            for a in template:
                nbytes = a.nbytes
                flat.append(np.frombuffer(msg, dtype=a.dtype, count=a.size, offset=offset).reshape(a.shape))
                offset += nbytes
            per = len(replicas[0]) if replicas else 0
            out.extend(flat[k * per:(k + 1) * per] for k in range(len(replicas)))
        return out

    def allgather_array(self, value: np.ndarray, what: str) -> list[np.ndarray]:
        """Gathers one array from every rank (indexed by rank); unlike `allgather_replicas`, shapes and dtypes may
        differ between ranks (each message carries its own).

        Raises:
          DistributedTimeoutError: a process did not arrive in time (names the rank).
          DistributedError: a rank is at a different collective.
        """
        a = np.ascontiguousarray(value)
        header = json.dumps({"seq": self._seq + 1, "what": what, "dtype": a.dtype.str, "shape": list(a.shape)})
        header = header.encode()
        messages = self.exchange_bytes(b"".join([_HEADER.pack(len(header)), header, a.tobytes()]), what)
        out = []
        for rank, msg in enumerate(messages):
            (hlen,) = _HEADER.unpack_from(msg)
            h = json.loads(msg[_HEADER.size:_HEADER.size + hlen])
            if h["what"] != what:
                raise DistributedError(f"fluxion.distributed: rank {rank} is at collective '{h['what']}' while rank "
                                       f"{self.rank} is at '{what}': the processes run different programs")
            dtype = np.dtype(h["dtype"])
            count = int(np.prod(h["shape"], dtype=np.int64))
            out.append(np.frombuffer(msg, dtype=dtype, count=count, offset=_HEADER.size + hlen)
                       .reshape(h["shape"]))
        return out

    def allgather_json(self, value: Any, what: str, timeout: float | None = None) -> list:
        """Gathers a small JSON-serializable value from every rank (indexed by rank)."""
        msgs = self.exchange_bytes(json.dumps({"what": what, "value": value}).encode(), what, timeout)
        out = []
        for rank, m in enumerate(msgs):
            d = json.loads(m)
            if d.get("what") != what:
                raise DistributedError(f"fluxion.distributed: rank {rank} sent '{d.get('what')}' while rank "
                                       f"{self.rank} expected '{what}'")
            out.append(d["value"])
        return out


def _import_mpi(timeout: float):
    """Imports mpi4py (which runs MPI_Init) with a watchdog: if MPI_Init blocks past `timeout`, exit with a message.

    MPI_Init itself waits for every launched process, so without the watchdog a process that never starts would
    hang the others inside the MPI library, where no Python timeout can reach.
    """
    try:
        import mpi4py
    except ImportError:
        raise ImportError("fluxion.distributed.initialize() needs mpi4py and an MPI library: "
                          "`pip install mpi4py mpich` (or use a system MPICH/Open MPI), then launch with "
                          "`mpirun -n N python your_program.py`") from None
    if "mpi4py.MPI" in sys.modules:
        return sys.modules["mpi4py.MPI"]
    mpi4py.rc.thread_level = "multiple"
    rank = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "?"))

    def watchdog():
        sys.stderr.write(f"fluxion.distributed.initialize: MPI_Init did not complete within {timeout:g} s on rank "
                         f"{rank}: some process of the MPI job never started MPI. Exiting.\n")
        sys.stderr.flush()
        os._exit(1)

    timer = threading.Timer(timeout, watchdog)
    timer.daemon = True
    timer.start()
    try:
        from mpi4py import MPI
    finally:
        timer.cancel()
    return MPI


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids: int | Sequence[int] | None = None,
               cluster_detection_method: str | None = None, initialization_timeout: float = 300,
               heartbeat_timeout_seconds: float = 100, shutdown_timeout_seconds: float = 300,
               coordinator_bind_address: str | None = None, *, collective_timeout: float | None = None,
               **unused: Any) -> None:
    """Joins the MPI world this process was launched in (`mpirun -n N ...`); call once, before using devices.

    Args:
      coordinator_address, coordinator_bind_address, heartbeat_timeout_seconds, shutdown_timeout_seconds,
        cluster_detection_method: accepted for JAX compatibility; MPI's launcher does the rendezvous.
      num_processes, process_id: if given, must match the MPI world size and this process's rank.
      local_device_ids: the local devices this process uses (their number sets its device count); default: the
        configured number of CPU devices (FLUXION_NUM_CPU_DEVICES / jax_num_cpu_devices).
      initialization_timeout: seconds to wait for every process to join.
      collective_timeout: seconds each later collective waits for the other processes (default
        FLUXION_COLLECTIVE_TIMEOUT or 300).

    Raises:
      RuntimeError: called twice.
      ImportError: mpi4py is not installed (the message says what to install).
      ValueError: num_processes/process_id disagree with the MPI launch.
      DistributedTimeoutError: a process did not join within `initialization_timeout` (names its rank).
    """
    if _state.comm is not None:
        raise RuntimeError("fluxion.distributed.initialize should only be called once.")
    MPI = _import_mpi(float(initialization_timeout))
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    if num_processes is not None and int(num_processes) != size:
        raise ValueError(f"initialize: num_processes={num_processes} but the MPI world has {size} processes")
    if process_id is not None and int(process_id) != rank:
        raise ValueError(f"initialize: process_id={process_id} but this process has MPI rank {rank}")
    if local_device_ids is None:
        local_count = devices_mod.configured_num_cpu_devices()
    else:
        ids = [local_device_ids] if isinstance(local_device_ids, int) else list(local_device_ids)
        if not ids:
            raise ValueError("initialize: local_device_ids must not be empty")
        local_count = len(ids)
    timeout = collective_timeout if collective_timeout is not None else None
    comm = MPICommunicator(MPI, world, timeout if timeout is not None else _env_or_default_timeout())
    counts = comm.allgather_json(local_count, "initialize", timeout=float(initialization_timeout))
    if collective_timeout is not None:
        _state.timeout = float(collective_timeout)
    devices_mod.set_num_cpu_devices(local_count)
    devices_mod._set_topology(rank, counts)
    _state.comm = comm


def _env_or_default_timeout() -> float:
    saved, _state.timeout = _state.timeout, None
    try:
        return collective_timeout()
    finally:
        _state.timeout = saved


def shutdown() -> None:
    """Leaves the distributed world: this process becomes a single-process run again (MPI stays initialized)."""
    if _state.comm is None:
        return
    _state.comm = None
    _state.timeout = None
    devices_mod._set_topology(0, None)

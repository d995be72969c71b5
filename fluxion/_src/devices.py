"""CPU devices: how many a process has, and the list of every process's devices (`jax.devices()` and friends).

fluxion runs every computation with NumPy on the host, so a "device" is a logical CPU device: a slot that `pmap`
runs one replica in (on its own thread). The number of CPU devices of a process is, by precedence:

1. `fluxion.config.update("jax_num_cpu_devices", N)` or `set_num_cpu_devices(N)` (may be changed at any time in a
   single-process run; programs and tests use it to pick 1, 2 or 4 devices);
2. the environment variable `FLUXION_NUM_CPU_DEVICES=N` (read when the count is needed);
3. JAX's spelling of the same request, `XLA_FLAGS=--xla_force_host_platform_device_count=N`, so an unchanged JAX
   program that sets it before importing keeps working;
4. otherwise 1.

After `fluxion.distributed.initialize()`, `devices()` lists the devices of every process of the MPI world (global
ids numbered process by process), `local_devices()` only this process's, and the local count is frozen because the
other processes were told it.
"""

from __future__ import annotations

import numbers
import os
import re
from typing import Sequence

from . import forks
from .config import config

_DEFAULT_NUM_DEVICES = 1
_XLA_FLAG = re.compile(r"--xla_force_host_platform_device_count=(\d+)")


class Device:
    """One logical CPU device.

    Attributes:
      id: global device id (unique across all processes).
      process_index: index of the process that owns the device.
      local_hardware_id: index of the device within its process (0 .. local_device_count() - 1).
      platform, device_kind: always "cpu".
    """

    __slots__ = ("id", "process_index", "local_hardware_id")
    platform = "cpu"
    device_kind = "cpu"

    def __init__(self, id: int, process_index: int, local_hardware_id: int):
        self.id = id
        self.process_index = process_index
        self.local_hardware_id = local_hardware_id

    @property
    def host_id(self) -> int:
        """Old name of `process_index`."""
        return self.process_index

    @property
    def client(self):
        return None

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"

    def __str__(self) -> str:
        return f"cpu:{self.id}"

    def __eq__(self, other) -> bool:
        return (isinstance(other, Device) and self.id == other.id and self.process_index == other.process_index)

    def __hash__(self) -> int:
        return hash(("fluxion.Device", self.id, self.process_index))

    def __reduce__(self):
        return (Device, (self.id, self.process_index, self.local_hardware_id))


class _Topology:
    """Which process this is, and how many devices each process of the world has (None = single process)."""

    def __init__(self) -> None:
        self.process_index = 0
        self.process_count = 1
        self.per_process: list[int] | None = None  # set by fluxion.distributed.initialize()


_topology = _Topology()
# Whether `config.update`/`set_num_cpu_devices` chose the count (the environment variable is checked at use).
_explicit_count: list[bool] = [False]
_cache_lock = forks.lock()
_cache: dict = {}


def _mark_explicit(value) -> None:
    _explicit_count[0] = True


config.add_hook("jax_num_cpu_devices", _mark_explicit)


def _validated_count(value, source: str) -> int:
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ValueError(f"{source} must be a positive integer number of CPU devices, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{source} must be a positive integer number of CPU devices, got {value!r}")
    return int(value)


def configured_num_cpu_devices() -> int:
    """The number of CPU devices this process asks for (config, then env vars; see the module docstring).

    Raises:
      ValueError: the configured value is not a positive integer (names the setting).
    """
    if _explicit_count[0] or config.from_environment("jax_num_cpu_devices"):
        return _validated_count(config.jax_num_cpu_devices, "jax_num_cpu_devices / FLUXION_NUM_CPU_DEVICES")
    match = _XLA_FLAG.search(os.environ.get("XLA_FLAGS", ""))
    if match:
        return _validated_count(match.group(1), "XLA_FLAGS --xla_force_host_platform_device_count")
    return _validated_count(config.jax_num_cpu_devices, "jax_num_cpu_devices")


def set_num_cpu_devices(n: int) -> None:
    """Sets the number of CPU devices of this process (same as `config.update("jax_num_cpu_devices", n)`).

    Raises:
      ValueError: `n` is not a positive int.
      RuntimeError: the process has joined a distributed world, whose device layout is fixed.
    """
    n = _validated_count(n, "set_num_cpu_devices: n")
    if _topology.per_process is not None and n != _topology.per_process[_topology.process_index]:
        raise RuntimeError(f"set_num_cpu_devices({n}): this process already joined a distributed world with "
                           f"{_topology.per_process[_topology.process_index]} local devices; the device layout "
                           "cannot change after fluxion.distributed.initialize()")
    config.update("jax_num_cpu_devices", n)


def _set_topology(process_index: int, per_process: Sequence[int] | None) -> None:
    """Records the world layout (called by fluxion.distributed); `per_process=None` returns to a single process."""
    if per_process is None:
        _topology.process_index, _topology.process_count, _topology.per_process = 0, 1, None
    else:
        _topology.process_index = int(process_index)
        _topology.process_count = len(per_process)
        _topology.per_process = [int(c) for c in per_process]
    with _cache_lock:
        _cache.clear()


def _layout() -> tuple[int, tuple[int, ...]]:
    if _topology.per_process is not None:
        return _topology.process_index, tuple(_topology.per_process)
    return 0, (configured_num_cpu_devices(),)


def _all_devices() -> tuple[Device, ...]:
    key = _layout()
    devs = _cache.get(key)
    if devs is None:
        _, per_process = key
        out, next_id = [], 0
        for p, count in enumerate(per_process):
            for local in range(count):
                out.append(Device(next_id, p, local))
                next_id += 1
        devs = tuple(out)
        with _cache_lock:
            _cache[key] = devs
    return devs


def _check_backend(backend) -> None:
    platform = backend if backend is None or isinstance(backend, str) else getattr(backend, "platform", None)
    if platform not in (None, "cpu"):
        raise RuntimeError(f"Unknown backend {backend!r}: fluxion only has the 'cpu' backend")


def devices(backend=None) -> list[Device]:
    """Every device of every process (a list of `Device`, ordered by global id).

    Examples:
      >>> import fluxion
      >>> fluxion.devices()[0].platform
      'cpu'
    """
    _check_backend(backend)
    return list(_all_devices())


def local_devices(process_index: int | None = None, backend=None, host_id: int | None = None) -> list[Device]:
    """The devices of process `process_index` (default: this process).

    Raises:
      ValueError: `process_index` is not a process of the world.

    Examples:
      >>> import fluxion
      >>> [d.platform for d in fluxion.local_devices()][:1]
      ['cpu']
    """
    _check_backend(backend)
    if process_index is None:
        process_index = host_id
    if process_index is None:
        process_index = _topology.process_index
    if not 0 <= process_index < _topology.process_count:
        raise ValueError(f"local_devices: process_index={process_index} is out of range for a world of "
                         f"{_topology.process_count} process(es)")
    return [d for d in _all_devices() if d.process_index == process_index]


def device_count(backend=None) -> int:
    """The number of devices of all processes.

    Examples:
      >>> import fluxion
      >>> fluxion.device_count() >= 1
      True
    """
    _check_backend(backend)
    return len(_all_devices())


def local_device_count(backend=None) -> int:
    """The number of devices of this process.

    Examples:
      >>> import fluxion
      >>> fluxion.local_device_count() == len(fluxion.local_devices())
      True
    """
    _check_backend(backend)
    return _layout()[1][_topology.process_index]


def process_index(backend=None) -> int:
    """The index of this process in the distributed world (0 when running alone).

    Examples:
      >>> import fluxion
      >>> fluxion.process_index()
      0
    """
    return _topology.process_index


def process_count(backend=None) -> int:
    """The number of processes in the distributed world (1 when running alone).

    Examples:
      >>> import fluxion
      >>> fluxion.process_count()   # one process unless launched under mpirun
      1
    """
    return _topology.process_count


def default_backend() -> str:
    """The name of the platform arrays are placed on by default: always `"cpu"`.

    fluxion computes with NumPy (and Numba kernels) on the host, so there is one backend. JAX returns `"gpu"` or
    `"tpu"` when such a device is present; code that branches on this value takes its CPU path under fluxion.

    >>> import fluxion
    >>> fluxion.default_backend()
    'cpu'
    """
    return "cpu"


host_id = process_index
host_count = process_count

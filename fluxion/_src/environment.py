"""`print_environment_info` and the process/host aliases of the `jax` namespace."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys

from . import devices


def print_environment_info(return_string: bool = False) -> str | None:
    """Prints (or returns) fluxion's version, Python's, the platform, the CPU count, the device count and the
    versions of the libraries fluxion computes with."""
    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    lines = [f"fluxion:    {version('fluxion')}",
             f"numpy:      {version('numpy')}",
             f"scipy:      {version('scipy')}",
             f"numba:      {version('numba')}",
             f"ml_dtypes:  {version('ml_dtypes')}",
             f"python:     {sys.version.splitlines()[0]}",
             f"platform:   {platform.platform()}",
             f"cpu count:  {os.cpu_count()}",
             f"devices:    {devices.device_count()} ({devices.default_backend()})"]
    text = "\n".join(lines)
    if return_string:
        return text
    print(text)
    return None


def host_id(backend=None) -> int:
    """Alias of `process_index` (JAX's older name)."""
    return devices.process_index(backend)


def host_count(backend=None) -> int:
    """Alias of `process_count` (JAX's older name)."""
    return devices.process_count(backend)


def process_indices(backend=None) -> list[int]:
    """The indices of all processes: `range(process_count())`."""
    return list(range(devices.process_count(backend)))


host_ids = process_indices

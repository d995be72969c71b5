"""Fixtures for the pmap/collective tests: the number of CPU devices is chosen per test.

`ndev` runs a test on 1, 2 and 4 CPU devices through `fluxion._src.devices.set_num_cpu_devices`, restoring the
previous count (and whether it was set explicitly) afterwards so tests do not leak device counts into each other.
"""

from __future__ import annotations

import contextlib

import pytest


@contextlib.contextmanager
def cpu_devices(n: int):
    """Runs the body with `n` CPU devices in this process."""
    from fluxion._src import devices
    from fluxion._src.config import config
    prev_value, prev_explicit = config.jax_num_cpu_devices, devices._explicit_count[0]
    devices.set_num_cpu_devices(n)
    try:
        yield n
    finally:
        config.update("jax_num_cpu_devices", prev_value)
        devices._explicit_count[0] = prev_explicit


@pytest.fixture(params=[1, 2, 4], ids=lambda n: f"{n}dev")
def ndev(request):
    with cpu_devices(request.param) as n:
        yield n


@pytest.fixture
def four_devices():
    with cpu_devices(4) as n:
        yield n


@pytest.fixture
def eight_devices():
    with cpu_devices(8) as n:
        yield n

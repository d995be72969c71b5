"""Devices (fluxion/_src/devices.py): the device list, its configuration sources and their precedence.

Oracles: the documented settings (config option, FLUXION_NUM_CPU_DEVICES, XLA_FLAGS) and real JAX's device
attributes/reprs on CPU.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import fluxion
from fluxion._src import devices as dev


def test_device_list_and_attributes(four_devices):
    ds = fluxion.devices()
    assert [d.id for d in ds] == [0, 1, 2, 3]
    assert fluxion.local_devices() == ds and fluxion.local_devices(process_index=0) == ds
    assert fluxion.device_count() == fluxion.local_device_count() == 4
    assert fluxion.process_index() == 0 and fluxion.process_count() == 1
    d = ds[2]
    assert (d.platform, d.device_kind, d.process_index, d.local_hardware_id) == ("cpu", "cpu", 0, 2)
    assert repr(d) == "CpuDevice(id=2)" and str(d) == "cpu:2"
    assert d == fluxion.devices()[2] and hash(d) == hash(fluxion.devices()[2]) and d != ds[1]
    assert fluxion.devices()[2] is d  # the list is cached while the configuration is unchanged
    with pytest.raises(ValueError, match="process_index=1 is out of range"):
        fluxion.local_devices(process_index=1)
    with pytest.raises(RuntimeError, match="only has the 'cpu' backend"):
        fluxion.devices("gpu")


def test_set_num_cpu_devices_and_config(ndev):
    assert fluxion.device_count() == ndev
    fluxion.config.update("jax_num_cpu_devices", 3)
    assert fluxion.local_device_count() == 3
    with pytest.raises(ValueError, match="positive integer"):
        dev.set_num_cpu_devices(0)
    with pytest.raises(ValueError, match="positive integer"):
        dev.set_num_cpu_devices(2.5)


def test_array_devices_reports_device_0():
    assert fluxion.numpy.ones(2).devices() == {fluxion.devices()[0]}


def test_jax_reference_attributes():
    jax = pytest.importorskip("jax")
    d = jax.devices("cpu")[0]
    ours = fluxion.devices()[0]
    assert (repr(ours), str(ours), ours.platform, ours.process_index) == (repr(d), str(d), d.platform,
                                                                          d.process_index)


def _count_in_subprocess(env_extra: dict) -> int:
    env = {k: v for k, v in os.environ.items() if k not in ("FLUXION_NUM_CPU_DEVICES", "XLA_FLAGS")}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", "import fluxion; print(fluxion.device_count())"], env=env,
                         capture_output=True, text=True, timeout=120, cwd=os.path.dirname(os.path.dirname(
                             os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip())


def test_environment_variables_and_precedence():
    # FLUXION_NUM_CPU_DEVICES is read when fluxion is imported: check it (and that it beats XLA_FLAGS) in a child.
    assert _count_in_subprocess({"XLA_FLAGS": "--xla_force_host_platform_device_count=5",
                                 "FLUXION_NUM_CPU_DEVICES": "2"}) == 2


def test_xla_flags_apply_unless_the_count_was_set(monkeypatch):
    from fluxion._src.config import config
    monkeypatch.setattr(dev, "_explicit_count", [False])
    monkeypatch.setitem(config._values, "jax_num_cpu_devices", 1)
    monkeypatch.setenv("XLA_FLAGS", "--foo --xla_force_host_platform_device_count=5")
    assert fluxion.device_count() == 5
    monkeypatch.setenv("XLA_FLAGS", "")
    assert fluxion.device_count() == 1
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=5")
    dev.set_num_cpu_devices(3)  # an explicit setting wins over XLA_FLAGS
    assert fluxion.device_count() == 3


def test_pmap_uses_configured_devices(ndev):
    out = fluxion.pmap(lambda x: x * 2)(np.arange(ndev))
    np.testing.assert_array_equal(out, 2 * np.arange(ndev))

"""`compiler.heap`: the malloc settings that keep compiled steps' freed buffers mapped are applied once, when a
program is compiled, and not when the option is off or the user set glibc's own variables."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from fluxion._src.backends.compiler import heap
from fluxion._src.config import config


@pytest.fixture
def fresh(monkeypatch):
    """A heap module that has not applied anything yet, with a recording stand-in for `mallopt`."""
    calls = []
    monkeypatch.setattr(heap, "_done", False)
    monkeypatch.setattr(heap, "_applied", False)
    monkeypatch.setattr(heap, "_mallopt", lambda: lambda param, value: calls.append((param, value)) or 1)
    for name in heap._USER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return calls


def test_thresholds_are_set_once(fresh):
    assert heap.retain_freed_memory() is True
    assert fresh == [(heap.M_MMAP_THRESHOLD, heap.MMAP_THRESHOLD), (heap.M_TRIM_THRESHOLD, heap.TRIM_THRESHOLD)]
    assert heap.retain_freed_memory() is True
    assert len(fresh) == 2


@pytest.mark.parametrize("variable", heap._USER_VARIABLES)
def test_user_malloc_variables_win(fresh, monkeypatch, variable):
    monkeypatch.setenv(variable, "1000000")
    assert heap.retain_freed_memory() is False
    assert fresh == []


def test_option_off_leaves_malloc_alone(fresh, monkeypatch):
    monkeypatch.setenv("FLUXION_MALLOC_RETAIN", "0")
    monkeypatch.setitem(config._values, "fluxion_malloc_retain", config.default("fluxion_malloc_retain"))
    monkeypatch.setitem(config._from_env, "fluxion_malloc_retain", config._env_options["fluxion_malloc_retain"])
    assert heap.retain_freed_memory() is False
    assert fresh == []


def test_failed_mallopt_is_reported(fresh, monkeypatch):
    monkeypatch.setattr(heap, "_mallopt", lambda: lambda param, value: 0)
    assert heap.retain_freed_memory() is False


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="glibc's mallopt only")
def test_compiling_a_program_applies_the_settings_with_glibc():
    code = ("import fluxion, fluxion.numpy as jnp\n"
            "from fluxion._src.backends.compiler import heap\n"
            "assert not heap._done\n"
            "fluxion.jit(lambda x: x * 2)(jnp.ones(3)).block_until_ready()\n"
            "print(heap._done, heap._applied)\n")
    env = {k: v for k, v in os.environ.items() if k not in heap._USER_VARIABLES and k != "FLUXION_MALLOC_RETAIN"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]

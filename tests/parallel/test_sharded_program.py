"""The sharding issue's end-to-end check: `programs/sharded_mlp.py`, a JAX program written for 8 devices (mesh
('data', 'model') of 4 x 2, a jit with in/out shardings, a shard_map'ped psum), runs unmodified on fluxion.

Oracle: the same file run by real JAX with `XLA_FLAGS=--xla_force_host_platform_device_count=8`. fluxion runs it
with `python -m fluxion.run` in one process with 8 devices, and across 2 MPI processes with 4 devices each (skipped
without mpi4py/mpirun, launched as tests/parallel/test_mpi.py does). Losses and metrics must agree to float32
rounding, and in the MPI run each process must hold exactly its own devices' shards.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
PROGRAM = HERE / "programs" / "sharded_mlp.py"
_STEP = re.compile(r"STEP process=(\d+) step=(\d+) loss=([-\d.e]+) mae=([-\d.e]+)")
_SHARDS = re.compile(r"SHARDS process=(\d+) devices=\[([\d, ]*)\] rows=(\d+) global=\((\d+), (\d+)\)")


def _steps(text: str) -> dict:
    """{process: [(loss, mae) per step]} from the program's output (lines of several processes may interleave)."""
    out: dict = {}
    for m in _STEP.finditer(text):
        out.setdefault(int(m.group(1)), []).append((int(m.group(2)), float(m.group(3)), float(m.group(4))))
    return {p: np.array([v[1:] for v in sorted(rows)]) for p, rows in out.items()}


def _shards(text: str) -> dict:
    return {int(m.group(1)): ([int(i) for i in m.group(2).split(",")], int(m.group(3)),
                              (int(m.group(4)), int(m.group(5)))) for m in _SHARDS.finditer(text)}


def _env(**extra) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("FLUXION_NUM_CPU_DEVICES", "XLA_FLAGS"):
        env.pop(k, None)
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def jax_output():
    pytest.importorskip("jax")
    proc = subprocess.run([sys.executable, str(PROGRAM)], capture_output=True, text=True, timeout=600, cwd="/",
                          env=_env(XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    steps = _steps(proc.stdout)
    assert list(steps) == [0] and steps[0].shape == (5, 2), proc.stdout
    return steps[0], _shards(proc.stdout)


def test_eight_devices_one_process_matches_jax(jax_output):
    ref, ref_shards = jax_output
    proc = subprocess.run([sys.executable, "-m", "fluxion.run", str(PROGRAM)], capture_output=True, text=True,
                          timeout=600, cwd=str(REPO), env=_env(FLUXION_NUM_CPU_DEVICES="8"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    np.testing.assert_allclose(_steps(proc.stdout)[0], ref, rtol=1e-5, atol=1e-6)
    assert _shards(proc.stdout) == ref_shards == {0: (list(range(8)), 8, (32, 16))}


def test_two_processes_of_four_devices_match_jax(jax_output):
    spec = importlib.util.spec_from_file_location("test_mpi_launcher", HERE / "test_mpi.py")
    launcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launcher)
    cmd, _ = launcher._launcher()  # skips without mpi4py / mpirun
    ref, _ = jax_output
    proc = subprocess.run(cmd + [sys.executable, "-m", "fluxion.run", str(PROGRAM), "--distributed"],
                          capture_output=True, text=True, timeout=600, cwd=str(REPO),
                          env=_env(FLUXION_NUM_CPU_DEVICES="4"))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    steps = _steps(proc.stdout)
    assert sorted(steps) == [0, 1], proc.stdout
    for p in (0, 1):
        np.testing.assert_allclose(steps[p], ref, rtol=1e-5, atol=1e-6, err_msg=f"process {p}")
    # each process holds only the shards of its own 4 devices: 2 rows of the 4 x 2 mesh, 8 batch rows per device
    assert _shards(proc.stdout) == {0: ([0, 1, 2, 3], 8, (32, 16)), 1: ([4, 5, 6, 7], 8, (32, 16))}

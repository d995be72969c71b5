"""Running a table of `f(jax)` cases on real JAX in a subprocess (8 host devices) and comparing with fluxion.

A cases module (`sharding_cases.py`, `explicit_sharding_cases.py`) holds `CASES` and must import neither jax nor
fluxion; `sharding_cases.run_case` turns each result into plain data, or `("raises", class name, message)`.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import pickle
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent

_ORACLE = """
import pickle, sys
sys.path.insert(0, {here!r})
import jax
import sharding_cases
import {module} as table
out = {{name: sharding_cases.run_case(name, jax, table.CASES) for name in table.CASES}}
sys.stdout.buffer.write(pickle.dumps(out))
"""


def load(module: str):
    """Imports the cases module `module` of this directory (the tests directory is not a package)."""
    spec = importlib.util.spec_from_file_location(module, HERE / f"{module}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_jax(module: str) -> dict:
    """{case name: plain result} of every case of `module`, run on real JAX with 8 CPU devices."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    env.pop("FLUXION_NUM_CPU_DEVICES", None)
    proc = subprocess.run([sys.executable, "-c", _ORACLE.format(here=str(HERE), module=module)],
                          capture_output=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return pickle.loads(proc.stdout)


def compare(mine, ref, where="result"):
    """Asserts plain results are equal: arrays to float32 rounding, everything else exactly."""
    if isinstance(ref, np.ndarray):
        assert isinstance(mine, np.ndarray), f"{where}: expected an array, got {mine!r}"
        assert mine.shape == ref.shape, f"{where}: shape {mine.shape} != {ref.shape}"
        assert mine.dtype == ref.dtype, f"{where}: dtype {mine.dtype} != {ref.dtype}"
        np.testing.assert_allclose(mine, ref, rtol=2e-5, atol=1e-5, err_msg=where)
    elif isinstance(ref, dict):
        assert isinstance(mine, dict) and set(mine) == set(ref), f"{where}: keys {list(mine)} != {list(ref)}"
        for k in ref:
            compare(mine[k], ref[k], f"{where}[{k!r}]")
    elif isinstance(ref, (list, tuple)):
        assert type(mine) is type(ref) and len(mine) == len(ref), f"{where}: {mine!r} != {ref!r}"
        for i, (a, b) in enumerate(zip(mine, ref)):
            compare(a, b, f"{where}[{i}]")
    else:
        assert mine == ref, f"{where}: {mine!r} != {ref!r}"

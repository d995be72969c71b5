"""The two thread modes every workload runs in: `one` (every library on one core) and `default` (as installed).

`one` pins the child process to a single CPU (`os.sched_setaffinity`, done first thing in the child, so every thread
any library starts later inherits it) and tells each library to use one thread: the OpenMP/OpenBLAS/MKL/Numba
variables, fluxion's `FLUXION_NUM_THREADS`, XLA's flags for its CPU backend, and `torch.set_num_threads(1)`. The pin
is what makes the comparison core for core even for a library that ignores its variables.

`default` removes all of these from the child's environment, so each library picks its own threading.
"""

from __future__ import annotations

import os

MODES = ("one", "default")
MODE_VARIABLE = "FLUXION_BENCH_THREADS"
CPU_VARIABLE = "FLUXION_BENCH_CPU"

ONE_THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
    "FLUXION_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}

TITLES = {"one": "one thread: every library pinned to one core",
          "default": "default threading: every library as installed"}


def default_cpu() -> int:
    """The CPU the `one` mode pins to: the highest this process may run on (CPU 0 is the one people pin to)."""
    return max(os.sched_getaffinity(0))


def child_env(mode: str, env: dict, cpu: int) -> dict:
    """`env` adjusted for a child process running in thread mode `mode`."""
    if mode not in MODES:
        raise ValueError(f"thread mode must be one of {MODES}, got {mode!r}")
    env = dict(env)
    for name in ONE_THREAD_ENV:
        env.pop(name, None)
    if mode == "one":
        env.update(ONE_THREAD_ENV)
        env[CPU_VARIABLE] = str(cpu)
    else:
        env.pop(CPU_VARIABLE, None)
    env[MODE_VARIABLE] = mode
    return env


def pin_this_process() -> None:
    """In a child: pins the process to its CPU when the mode is `one` (call before importing any library)."""
    if os.environ.get(MODE_VARIABLE) == "one":
        os.sched_setaffinity(0, {int(os.environ[CPU_VARIABLE])})


def configure_torch(torch) -> None:
    """One intra-op thread in the `one` mode; torch's own default otherwise."""
    if os.environ.get(MODE_VARIABLE) == "one":
        torch.set_num_threads(1)

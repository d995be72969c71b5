"""Processes forked from one that runs jitted code: after multi-threaded (OpenMP) kernels ran, while the background
thread compiles, with fluxion's locks held by other threads, and with compile jobs queued or running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from fluxion._src import forks
from fluxion._src.backends.compiler.fusion import runtime

from .test_numba_pool import THREAD_LIMIT_VARIABLES

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

needs_fork = pytest.mark.skipif(not hasattr(os, "fork") or not hasattr(os, "register_at_fork"), reason="no fork")
needs_numba = pytest.mark.skipif(not runtime.numba_installed(), reason="needs Numba")


def _run(script: str, tmp_path, **env) -> str:
    """Runs `script` in a fresh interpreter with its own kernel cache and no thread limits (so that fused kernels
    use OpenMP threads); returns its stdout. A child it forks that dies or hangs fails the script."""
    full = {k: v for k, v in os.environ.items()
            if k not in THREAD_LIMIT_VARIABLES + ("FLUXION_NUM_THREADS", "FLUXION_CHECK_FUSION")}
    full.update({"FLUXION_CACHE_DIR": str(tmp_path / "cache"), "FLUXION_JIT_WHOLE_STEP": "0",
                 "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), **env})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=full, cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


# The parent runs a program whose fused tier has threaded kernels, then forks. Unfixed, the child's first call of
# it ended the child ("Terminating: fork() called from a process already using GNU OpenMP").
_AFTER_OPENMP = """
    import os, signal, sys
    import numpy as np
    import fluxion, fluxion.numpy as jnp
    from fluxion._src.backends.compiler import fusion, threads
    from fluxion._src.backends.compiler.fusion import runtime

    def program(x):
        return jnp.sum(jnp.tanh(x) * 2.0 + 1.0, axis=1), jnp.exp(-x) + x
    f = fluxion.jit(program)
    x = np.linspace(-3, 3, 1 << 20, dtype=np.float32).reshape(1024, 1024)
    expected = [np.asarray(v) for v in f(x)]
    kernels = runtime.stats()["kernels"]
    if not any(k["parallel"] for k in kernels) or not runtime.openmp_started():
        print("no OpenMP kernels here"); sys.exit(0)

    def same(a, b):
        return all(np.array_equal(u, np.asarray(v)) for u, v in zip(a, b))

    def close(a, b):
        return all(np.allclose(u, np.asarray(v), rtol=1e-5, atol=1e-3) for u, v in zip(a, b))

    pid = os.fork()
    if pid == 0:
        signal.alarm(300)
        checks = {"flag": threads.forked_after_openmp(), "no_threads": not fusion.parallel_possible()}
        checks["first_call"] = close(expected, f(x))                   # the NumPy path, serial tier requested
        runtime.wait_for_kernels(300)
        checks["serial_tier"] = same(expected, f(x))                   # serial kernels: the threaded ones' bits
        checks["new_program"] = same(expected, fluxion.jit(lambda x: program(x))(x))
        new = runtime.stats()["kernels"][len(kernels):]
        checks["serial_kernels"] = bool(new) and not any(k["parallel"] for k in new)
        grandchild = os.fork()                                         # and a child of the child
        if grandchild == 0:
            os._exit(0 if same(expected, f(x)) else 1)
        _, status = os.waitpid(grandchild, 0)
        checks["grandchild"] = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        print(checks, flush=True)
        os._exit(0 if all(checks.values()) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert same(expected, f(x))                                        # the parent keeps its threaded tier
    print("ok")
"""


@needs_fork
@needs_numba
def test_a_child_forked_after_openmp_kernels_ran_uses_serial_kernels(tmp_path):
    out = _run(_AFTER_OPENMP, tmp_path, FLUXION_JIT_SYNC_KERNELS="1", FLUXION_PARALLEL_MIN_WORK="1000")
    if "no OpenMP kernels here" in out:
        pytest.skip("Numba's threading layer here is not GNU OpenMP (fork-safe)")
    assert out.strip().endswith("ok"), out


# Forks while the background thread is busy with Numba (importing and setting it up, compiling kernels) at several
# delays after the first call. Unfixed, children hung in their first compilation (Numba's compiler lock, or a
# fluxion lock, held by the parent's compiler thread, which the child does not have) or found Numba half imported.
_DURING_COMPILE = """
    import os, signal, time
    import numpy as np
    import fluxion, fluxion.numpy as jnp
    from fluxion._src.backends.compiler.fusion import runtime

    x = np.linspace(-3, 3, 1 << 18, dtype=np.float32)
    for i, delay in enumerate((0.0, 0.05, 0.2, 0.6)):
        f = fluxion.jit(lambda x, i=i: jnp.sum(jnp.tanh(x) * (2.0 + i)))
        f(x)
        time.sleep(delay)
        pid = os.fork()
        if pid == 0:
            signal.alarm(120)
            fluxion.config.update("fluxion_jit_sync_kernels", True)
            g = fluxion.jit(lambda x, i=i: jnp.sum(jnp.cos(x) * (3.0 + i)))
            ok = np.isclose(float(g(x)), float(np.sum(np.cos(x) * np.float32(3.0 + i))), rtol=1e-4)
            ok = ok and runtime.wait_for_kernels(120) and np.isfinite(float(f(x)))
            os._exit(0 if ok and "failed" not in str(runtime.stats()["kernels"]) else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (delay, status)
        runtime.wait_for_kernels(300)
    print("ok")
"""


@needs_fork
@needs_numba
def test_forking_while_the_background_thread_compiles(tmp_path):
    out = _run(_DURING_COMPILE, tmp_path)
    assert out.strip().endswith("ok"), out


@needs_fork
def test_fork_safe_locks_are_free_in_the_child():
    lock = forks.lock()
    taken, release = threading.Event(), threading.Event()

    def holder():
        with lock:
            taken.set()
            release.wait(30)
    t = threading.Thread(target=holder)
    t.start()
    assert taken.wait(30)
    try:
        pid = os.fork()
        if pid == 0:   # the holder thread does not exist here: the lock must not stay held
            os._exit(0 if lock.acquire(timeout=5) else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        t.join()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@needs_fork
def test_the_child_runs_the_compile_jobs_queued_or_running_at_the_fork():
    """The job running on the compiler thread at the fork starts over in the child, and queued jobs follow."""
    assert runtime.wait_for_kernels(300)
    started, gate = threading.Event(), threading.Event()
    done: list = []

    def running():
        started.set()
        gate.wait(30)
        done.append("running")
    runtime.submit(running)
    runtime.submit(lambda: done.append("queued"))
    assert started.wait(30)
    try:
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)
            gate.set()   # this process's copy of the event: the restarted job passes it
            ok = runtime.wait_for_kernels(30) and done == ["running", "queued"]
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        gate.set()
    assert runtime.wait_for_kernels(30) and done == ["running", "queued"]
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0

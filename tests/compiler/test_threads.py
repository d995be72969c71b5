"""The thread-count policy of compiled code: all cores when the machine is quiet, one when it is busy."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion._src.backends.compiler import blas, ir, threads
from fluxion._src.backends.compiler.fusion import runtime
from fluxion._src.config import THREAD_LIMIT_VARIABLES, thread_limit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_threads_for_counts_the_cores_other_programs_leave():
    assert threads.threads_for(0.0, cores=2) == 2
    assert threads.threads_for(0.3, cores=2) == 2      # a little background activity does not occupy a core
    assert threads.threads_for(0.6, cores=2) == 1
    assert threads.threads_for(5.0, cores=2) == 1      # never fewer than one
    assert threads.threads_for(1.7, cores=8) == 6


def _without_thread_limits(monkeypatch):
    for var in THREAD_LIMIT_VARIABLES + ("FLUXION_NUM_THREADS",):
        monkeypatch.delenv(var, raising=False)


def test_monitor_measures_other_programs_cpu_time(monkeypatch):
    readings = iter([(100.0, 10.0), (100.8, 10.1), (101.0, 10.5)])   # (machine busy s, own cpu s)
    state = {}

    def busy():
        state["now"] = next(readings)
        return state["now"][0]
    monkeypatch.setattr(threads, "_machine_busy_seconds", busy)
    monkeypatch.setattr(threads.time, "process_time", lambda: state["now"][1])
    _without_thread_limits(monkeypatch)
    m = threads._Monitor()
    m.refresh(0.0)                        # first reading: nothing to compare with yet
    assert m.refresh(0.1) == m.decision   # within the interval: no new reading
    # 1 s later: the machine used 0.8 s, this process 0.1 s -> others kept 0.7 of a core busy.
    assert m.refresh(1.0) == threads.threads_for(0.7)
    # 1 s later: the machine used 0.2 s, all of it this process's -> the other cores are free.
    assert m.refresh(2.0) == threads.CORES


def test_fixed_thread_count_from_the_environment(monkeypatch):
    monkeypatch.setenv("FLUXION_NUM_THREADS", "3")
    assert threads._fixed() == 3
    for bad in ("0", "two"):
        monkeypatch.setenv("FLUXION_NUM_THREADS", bad)
        with pytest.raises(ValueError, match="FLUXION_NUM_THREADS"):
            threads._fixed()


def test_fixed_thread_count_from_the_config_option_applies_at_once(monkeypatch):
    monkeypatch.setenv("FLUXION_NUM_THREADS", "3")
    threads.current()
    with fluxion.config.override("fluxion_num_threads", 1):  # the option wins over the variable
        assert threads.current() == 1
    assert threads.current() == 3  # the variable is read again afterwards
    with pytest.raises(ValueError, match="fluxion_num_threads"):
        fluxion.config.update("fluxion_num_threads", 0)


@pytest.mark.skipif(not blas.available(), reason="this NumPy's BLAS has no thread controls")
def test_generated_code_sets_blas_threads_for_the_call_and_restores_them(monkeypatch):
    seen = []
    f = fluxion.jit(lambda a, b: jnp.tanh(a @ b))
    a = np.ones((8, 8), np.float32)
    before = blas.get_threads()
    real = blas.set_threads
    monkeypatch.setattr(blas, "set_threads", lambda n: (seen.append(n), real(n)))
    with fluxion.config.override("fluxion_num_threads", 1):
        out = f(a, a)
    np.testing.assert_allclose(np.asarray(out), np.tanh(a @ a), rtol=1e-6)
    assert "_threads" in f.lower(a, a).compile().as_text()
    assert blas.get_threads() == before
    if before != 1:
        assert seen == [1, before]


def test_thread_limit_reads_the_standard_variables(monkeypatch):
    _without_thread_limits(monkeypatch)
    assert thread_limit() is None
    monkeypatch.setenv("OMP_NUM_THREADS", "3,2")  # OpenMP's per-level list: the first level counts
    monkeypatch.setenv("MKL_NUM_THREADS", "2")
    assert thread_limit() == 2
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "0")  # not a positive count: ignored, as OpenBLAS does
    assert thread_limit() == 2
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    assert thread_limit() == 1


@pytest.mark.parametrize("var", THREAD_LIMIT_VARIABLES)
def test_standard_variables_cap_the_decision_and_the_fixed_count(monkeypatch, var):
    _without_thread_limits(monkeypatch)
    monkeypatch.setenv(var, "1")
    with fluxion.config.override("fluxion_num_threads", 2):
        assert threads.current() == 1
    monkeypatch.setattr(threads._monitor, "measured", 2)
    threads._monitor.next_check = 0.0
    monkeypatch.setattr(threads, "_machine_busy_seconds", lambda: None)  # keep the measured count
    assert threads.current() == 1


# Runs a large jitted matmul (BLAS) and a jitted parallel kernel with the thread count fixed at 2, and prints the
# thread counts OpenBLAS has during the product (read right after the generated code's `threads.blas_for`) and Numba
# has during the kernel (right after `threads.enter`).
_PROBE = textwrap.dedent("""
    import numpy as np
    import fluxion, fluxion.numpy as jnp
    from fluxion._src.backends.compiler import blas, ir, threads
    from fluxion._src.backends.compiler.fusion import runtime

    seen = {"blas": [], "numba": []}
    real_enter, real_blas_for = threads.enter, threads.blas_for
    def probe_enter():
        previous = real_enter()
        numba = runtime.loaded_numba()
        if numba is not None:
            seen["numba"].append(numba.get_num_threads())
        return previous
    def probe_blas_for(parallel):
        real_blas_for(parallel)
        seen["blas"].append(blas.get_threads())
    threads.enter, threads.blas_for = probe_enter, probe_blas_for
    fluxion.config.update("fluxion_num_threads", 2)
    fluxion.config.update("fluxion_parallel_min_work", 0)
    fluxion.config.update("fluxion_jit_sync_kernels", True)
    a = np.ones((256, 256), np.float32)   # 2**24 multiply-adds: above threads.BLAS_MIN_WORK
    fluxion.jit(lambda a, b: a @ b)(a, a)
    x = np.ones(1 << 16, np.float32)
    fluxion.jit(lambda x: jnp.tanh(x) * 2.0 + 1.0)(x)
    print({"matmul": seen["blas"], "kernel": seen["numba"]})
""")


@pytest.mark.skipif(not (blas.available() and runtime.numba_installed()),
                    reason="needs OpenBLAS's thread controls and Numba")
@pytest.mark.parametrize("var", (None,) + THREAD_LIMIT_VARIABLES)
def test_thread_counts_set_by_compiled_code_respect_the_standard_variables(tmp_path_factory, var):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_LIMIT_VARIABLES + ("FLUXION_NUM_THREADS",
                                                                                     "FLUXION_CHECK_FUSION")}
    env["FLUXION_CACHE_DIR"] = str(tmp_path_factory.getbasetemp() / "thread-limit-kernels")
    if var is not None:
        env[var] = "1"
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    counts = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    expected = 2 if var is None else 1  # the fixed count 2, unless a standard variable caps it at 1
    assert counts == {"matmul": [expected], "kernel": [expected]}


def _load_says(monkeypatch, n: int) -> None:
    """Makes the load monitor decide `n` threads from now on (as if other programs left `n` cores idle)."""
    _without_thread_limits(monkeypatch)
    monkeypatch.setattr(threads._monitor, "_measure", lambda now: n)
    threads._monitor.next_check = 0.0


def test_blas_work_counts_multiply_adds():
    def work(f, *args):
        (eqn,) = [e for e in ir.all_eqns(fluxion.make_jaxpr(f)(*args).jaxpr) if e.primitive in blas.BLAS_PRIMITIVES]
        return threads.blas_work(eqn)
    a, b = np.ones((32, 784), np.float32), np.ones((784, 128), np.float32)
    assert work(lambda a, b: a @ b, a, b) == 32 * 784 * 128
    assert work(lambda a, b: a.T @ b, np.ones((784, 32), np.float32), b) == 32 * 784 * 128
    batched = np.ones((4, 8, 16), np.float32)
    assert work(lambda x: jnp.einsum("bij,bjk->bik", x, x.transpose(0, 2, 1)), batched) == 4 * 8 * 8 * 16
    img, ker = np.ones((2, 3, 10, 10), np.float32), np.ones((5, 3, 3, 3), np.float32)  # NCHW, OIHW
    out = fluxion.lax.conv(img, ker, (1, 1), "VALID")
    assert work(lambda x, k: fluxion.lax.conv(x, k, (1, 1), "VALID"), img, ker) == out.size * 3 * 3 * 3
    nhwc, hwio = img.transpose(0, 2, 3, 1), ker.transpose(2, 3, 1, 0)   # flax's layouts: features last
    assert work(lambda x, k: fluxion.lax.conv_general_dilated(x, k, (1, 1), "VALID",
                                                              dimension_numbers=("NHWC", "HWIO", "NHWC")),
                nhwc, hwio) == out.size * 3 * 3 * 3
    spd = np.eye(6, dtype=np.float32)[None].repeat(3, 0)
    assert work(jnp.linalg.cholesky, spd) == 3 * 6 ** 3
    assert not threads.blas_parallel(32 * 784 * 128)  # the MLP's products stay on one thread
    assert threads.blas_parallel(threads.BLAS_MIN_WORK)


@pytest.mark.skipif(not blas.available(), reason="this NumPy's BLAS has no thread controls")
@pytest.mark.parametrize("m", [32, 512])   # below and above BLAS_MIN_WORK (784 * 128 multiply-adds per row)
def test_a_products_threads_and_bits_do_not_depend_on_the_load(monkeypatch, rng, m):
    # OpenBLAS's float32 (32, 784) @ (784, 128) has different last bits on one and two threads (measured on the
    # 2-core benchmark machine): a thread count taken from the load would make results differ run to run.
    a = rng.standard_normal((m, 784)).astype(np.float32)
    b = rng.standard_normal((784, 128)).astype(np.float32)
    seen: list = []
    real = threads.blas_for

    def recording(parallel):
        real(parallel)
        seen.append(blas.get_threads())
    monkeypatch.setattr(threads, "blas_for", recording)   # bound by the code generated below
    f = fluxion.jit(lambda a, b: a @ b)
    before = blas.get_threads()
    outs, counts = [], []
    for load in (1, max(threads.CORES, 2), 1, max(threads.CORES, 2)):
        _load_says(monkeypatch, load)
        assert threads.current() == min(load, threads.CORES)  # fused kernels do follow the load
        seen.clear()
        outs.append(np.asarray(f(a, b)).tobytes())
        counts.append(list(seen))
        assert blas.get_threads() == before   # restored for eager NumPy code
    assert all(o == outs[0] for o in outs)
    assert all(c == counts[0] for c in counts) and len(counts[0]) == 1
    if m == 32:
        assert counts[0] == [1]
    np.testing.assert_allclose(np.frombuffer(outs[0], np.float32).reshape(m, 128), a @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.skipif(not blas.available(), reason="this NumPy's BLAS has no thread controls")
def test_large_products_use_the_configured_ceiling_whatever_the_load(monkeypatch):
    _load_says(monkeypatch, 1)
    assert threads.blas_threads(True) == threads.CORES and threads.blas_threads(False) == 1
    with fluxion.config.override("fluxion_num_threads", 1):
        assert threads.blas_threads(True) == 1
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    threads._monitor.next_check = 0.0
    assert threads.blas_threads(True) == 1


@pytest.mark.parametrize("m", [32, 512])
def test_whole_step_functions_choose_blas_threads_by_their_products_sizes(monkeypatch, m):
    from fluxion._src.backends.compiler import blas, wholestep
    if blas.scipy_controls()[1] is None:
        pytest.skip("SciPy's OpenBLAS has no thread controls here")
    a, b = np.ones((m, 784), np.float32), np.ones((784, 128), np.float32)
    closed = fluxion.make_jaxpr(lambda a, b: a @ b)(a, b)
    fn = wholestep.entry_function(lambda *args: None, [], lambda *args: None, closed)
    count = fn.__globals__["_current"]   # the count the entry function gives SciPy's BLAS before each call
    for load in (1, max(threads.CORES, 2)):
        _load_says(monkeypatch, load)
        assert count() == (1 if m == 32 else threads.ceiling())

"""The thread-count policy of compiled code: all cores when the machine is quiet, one when it is busy."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion._src.compiler import blas, threads


def test_threads_for_counts_the_cores_other_programs_leave():
    assert threads.threads_for(0.0, cores=2) == 2
    assert threads.threads_for(0.3, cores=2) == 2      # a little background activity does not occupy a core
    assert threads.threads_for(0.6, cores=2) == 1
    assert threads.threads_for(5.0, cores=2) == 1      # never fewer than one
    assert threads.threads_for(1.7, cores=8) == 6


def test_monitor_measures_other_programs_cpu_time(monkeypatch):
    readings = iter([(100.0, 10.0), (100.8, 10.1), (101.0, 10.5)])   # (machine busy s, own cpu s)
    state = {}

    def busy():
        state["now"] = next(readings)
        return state["now"][0]
    monkeypatch.setattr(threads, "_machine_busy_seconds", busy)
    monkeypatch.setattr(threads.time, "process_time", lambda: state["now"][1])
    monkeypatch.delenv("FLUXION_NUM_THREADS", raising=False)
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

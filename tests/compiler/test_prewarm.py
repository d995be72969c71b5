"""Numba's prewarm (`fusion.runtime.prewarm`, started when `jit` wraps a function): it runs once per process, before
any compile job, writes nothing to the kernel cache, and leaves kernels computing what the NumPy path computes; a
program whose kernels are on disk then gets its fused tier before its first call returns. The fresh-process
behaviour is checked in subprocesses (the test session's own Numba is long set up)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import fluxion
from fluxion._src.backends.compiler.fusion import runtime

pytest.importorskip("numba")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Runs in a fresh interpreter: the state before and after `jit` wraps a function, and what a call then does.
_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import fluxion
    import fluxion.numpy as jnp
    from fluxion._src.backends.compiler.fusion import runtime
    out = {"numba_at_import": "numba" in sys.modules, "ready_at_import": runtime.numba_ready()}
    f = fluxion.jit(lambda x: (x - x.mean(0)) / x.std(0))
    out["submitted"] = runtime._prewarm_submitted
    fluxion.jit(lambda x: x + 1)  # a second wrapper starts nothing more
    assert runtime.wait_for_kernels(600)
    out["ready"] = runtime.numba_ready()
    out["stats_after_prewarm"] = {k: runtime.stats()[k] for k in ("loads", "compiles")}
    root = os.environ["FLUXION_CACHE_DIR"]
    out["files_after_prewarm"] = sorted(os.path.join(d, n) for d, _, names in os.walk(root) for n in names)
    x = np.random.default_rng(0).standard_normal((300, 7)).astype(np.float32)
    y = np.asarray(f(x))
    programs = runtime.stats()["programs"]
    out["status_after_first_call"] = programs[-1]["status"]
    assert runtime.wait_for_kernels(600)
    out["fused"] = np.asarray(f(x)).tolist()
    out["program"] = {k: runtime.stats()["programs"][-1][k] for k in ("status", "loads", "compiles", "kernels")}
    with fluxion.config.override("fluxion_jit_fusion", False):
        out["numpy_path"] = np.asarray(fluxion.jit(lambda x: (x - x.mean(0)) / x.std(0))(x)).tolist()
    out["first"] = y.tolist()
    print(json.dumps(out))
""")


def _run(cache_dir: str, **env) -> dict:
    full = {**os.environ, "FLUXION_CACHE_DIR": cache_dir, "FLUXION_FUSE_MIN_ELEMENTS": "1",
            "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **env}
    full.pop("FLUXION_CHECK_FUSION", None)  # check mode compiles synchronously: the schedule is what is tested
    full.pop("FLUXION_JIT_SYNC_KERNELS", None)
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=full, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_prewarm_in_a_fresh_process_cold_then_warm_cache(tmp_path):
    cache = str(tmp_path / "cache")
    cold = _run(cache)
    # `import fluxion` does not import Numba; wrapping a function starts the prewarm, which compiles and loads no
    # kernel and writes nothing to the cache (the warm-up compiles in memory).
    assert not cold["numba_at_import"] and not cold["ready_at_import"]
    assert cold["submitted"] and cold["ready"]
    assert cold["stats_after_prewarm"] == {"loads": 0, "compiles": 0}
    assert cold["files_after_prewarm"] == []
    # Cold cache: the first call runs the NumPy code while the kernels compile in the background.
    assert cold["status_after_first_call"] == "pending"
    assert cold["program"]["status"] == "final" and cold["program"]["compiles"] == cold["program"]["kernels"] > 0
    np.testing.assert_allclose(cold["fused"], cold["numpy_path"], rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(cold["first"], cold["numpy_path"], rtol=2e-6, atol=2e-6)

    warm = _run(cache)
    # Warm cache, Numba set up by the prewarm: the kernels load during the first call, which already runs them.
    assert warm["status_after_first_call"] == "final"
    assert warm["program"]["compiles"] == 0 and warm["program"]["loads"] == warm["program"]["kernels"] > 0
    np.testing.assert_allclose(warm["first"], warm["numpy_path"], rtol=2e-6, atol=2e-6)
    assert warm["fused"] == cold["fused"]


@pytest.mark.parametrize("fusion_on, prewarm_on, module, wanted", [
    (True, True, "__main__", True), (True, True, "user.models", True),
    (False, True, "__main__", False), (True, False, "__main__", False),
    (True, True, "fluxion._src.staged_call", False)])  # fluxion's own import-time wrappers start nothing
def test_which_jit_wrappers_start_the_prewarm(monkeypatch, fusion_on, prewarm_on, module, wanted):
    calls = []
    monkeypatch.setattr(runtime, "prewarm", lambda: calls.append(1))
    namespace = {"__name__": module, "jit": fluxion.jit}
    with fluxion.config.override("fluxion_jit_fusion", fusion_on), \
            fluxion.config.override("fluxion_check_fusion", False), \
            fluxion.config.override("fluxion_jit_prewarm", prewarm_on):
        exec("wrapped = jit(lambda x: x * 2)", namespace)  # noqa: S102 -- a wrapper made from `module`
    assert calls == ([1] if wanted else [])
    np.testing.assert_array_equal(np.asarray(namespace["wrapped"](np.arange(3.0))), np.arange(3.0) * 2)


def test_prewarm_submits_once_from_many_threads(monkeypatch):
    jobs = []
    monkeypatch.setattr(runtime, "_prewarm_submitted", False)
    monkeypatch.setattr(runtime, "submit", lambda job, priority=runtime.FIRST_TIER: jobs.append((job, priority)))
    barrier = threading.Barrier(8)

    def race():
        barrier.wait()
        runtime.prewarm()
    threads = [threading.Thread(target=race) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert jobs == [(runtime._prewarm_job, runtime.PREWARM)]


def test_release_before_the_prewarm_ran_lets_the_next_jit_start_it(monkeypatch):
    monkeypatch.setattr(runtime, "_prewarm_submitted", True)
    monkeypatch.setattr(runtime, "_numba_ready", threading.Event())  # as if the queued prewarm never ran
    fluxion.clear_caches()  # drops queued jobs (`release_kernels`)
    assert not runtime._prewarm_submitted
    runtime._numba_ready.set()
    runtime._prewarm_submitted = True
    fluxion.clear_caches()  # a finished prewarm is not repeated
    assert runtime._prewarm_submitted


def test_priorities_order_the_prewarm_first_and_the_warm_up_before_threaded_variants():
    assert runtime.PREWARM < runtime.FIRST_TIER < runtime.WARM_UP < runtime.LATER_TIER


def test_not_ready_while_the_warm_up_compiles(monkeypatch):
    monkeypatch.setattr(runtime, "_numba_ready", threading.Event())
    monkeypatch.setattr(runtime, "_warming", threading.Event())
    runtime._numba_ready.set()
    assert runtime.numba_ready()
    runtime._warming.set()
    assert not runtime.numba_ready()  # a warm-cache load would wait for Numba's compiler lock


@pytest.mark.parametrize("rows,cols", [(0, 3), (1, 1), (1, 0), (5, 2), (127, 3), (128, 4), (129, 1), (1000, 5),
                                       (2051, 2)])
def test_warm_up_reduction_equals_numpy(rows, cols):
    """The warm-up function is the fused column reduction's shape; compiled, it sums as NumPy does (in float64,
    of float32 products)."""
    numba = pytest.importorskip("numba")
    from fluxion._src.backends.compiler.fusion import warmup
    warmup.check()
    fn = numba.njit(warmup._SIGNATURE, cache=False, error_model="numpy", nogil=True, fastmath={"reassoc"})(
        warmup._column_sums_of_double)
    x = np.random.default_rng(rows * 7 + cols).standard_normal((rows, cols)).astype(np.float32)
    out = np.full(cols, np.nan, np.float32)
    fn(x, out)
    want = (x * np.float32(2)).astype(np.float64).sum(0).astype(np.float32)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def test_warm_up_is_skipped_when_the_cache_holds_machine_code(tmp_path, monkeypatch):
    ran = []
    from fluxion._src.backends.compiler.fusion import warmup
    monkeypatch.setattr(warmup, "check", lambda: ran.append(1))
    monkeypatch.setitem(runtime._stats, "loads", 0)
    root = tmp_path / "cache"
    with fluxion.config.override("fluxion_cache_dir", str(root)):
        runtime._warm_up_job()  # an empty cache: a program will compile, so the warm-up runs
        assert ran == [1] and not runtime._warming.is_set()
        pycache = root / "kernels" / "__pycache__"
        pycache.mkdir(parents=True, exist_ok=True)
        (pycache / "k_0123.kernel-1.py311.nbi").write_bytes(b"")
        runtime._warm_up_job()  # machine code on disk: programs load, the warm-up would only cost time
        assert ran == [1]
    monkeypatch.setitem(runtime._stats, "loads", 1)
    runtime._warm_up_job()  # a kernel was loaded already
    assert ran == [1]

"""How the fused tier arrives: serial kernels first, multi-threaded variants afterwards (only where threads can run),
the order of background jobs, warm starts from the disk cache, and the per-program records of `runtime.stats()`.

Every test uses a private kernel cache of its own, so each kernel it needs is compiled in the test.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion._src.backends import compiler
from fluxion._src.backends.compiler import disk_cache, fusion, threads
from fluxion._src.backends.compiler.fusion import cachedir, rewrite, runtime
from fluxion._src.config import THREAD_LIMIT_VARIABLES

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import BlockedWorker  # noqa: E402

pytestmark = [pytest.mark.skipif(not (compiler.enabled() and fusion.available()),
                                 reason="needs the jit compiler and Numba"),
              pytest.mark.usefixtures("without_fusion_check")]
config = fluxion.config

# (600, 500) float32: enough work (elements x operations >= 2**18) for the default threshold to choose threads.
SHAPE = (600, 500)


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A private kernel cache, no kernel in memory, background compilation, and no thread limit (but Numba's own:
    Numba refuses a process whose NUMBA_NUM_THREADS changes once its threads run)."""
    for var in THREAD_LIMIT_VARIABLES:
        if var != "NUMBA_NUM_THREADS":
            monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("FLUXION_JIT_SYNC_KERNELS", raising=False)
    cachedir.reset()
    runtime.release_kernels()
    with config.override("fluxion_cache_dir", str(tmp_path / "cache")), \
            config.override("fluxion_jit_sync_kernels", False), config.override("fluxion_num_threads", None):
        yield
    assert runtime.wait_for_kernels(120)
    fluxion.clear_caches()
    cachedir.reset()


def _selu(x):
    return 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67)


def _selu_numpy(x):
    return np.float32(1.05) * np.where(x > 0, x, np.float32(1.67) * np.exp(x) - np.float32(1.67))


def _executable(f):
    (compiled,) = f._cache.values()
    return compiled.executable


def _run_watched(f, x):
    """Calls `f(x)` with the background compiler held, and returns its executable and the kernel layouts of every
    tier it switches to (a list of lists of `parallel` flags) once the compiler is released."""
    worker = BlockedWorker()
    try:
        np.testing.assert_allclose(np.asarray(f(x)), _selu_numpy(x), rtol=1e-5, atol=1e-6)
        exe = _executable(f)
        assert exe.tier == 0  # the NumPy path runs until the kernels are ready
        tiers: list = []
        exe.add_listener(lambda fn: tiers.append([k.parallel for k in exe.kernels]))
    finally:
        worker.finish()
    return exe, tiers


@pytest.mark.usefixtures("fresh")
def test_serial_kernels_come_first_and_threaded_variants_replace_them(rng):
    if not fusion.parallel_possible():
        pytest.skip("threaded kernels need two cores and no thread limit")
    x = rng.standard_normal(SHAPE).astype(np.float32)
    f = fluxion.jit(_selu)
    compiles = runtime.stats()["compiles"]
    exe, tiers = _run_watched(f, x)
    assert tiers == [[False], [True]]
    assert exe.tier == 1 and exe.kernels[0].parallel
    np.testing.assert_allclose(np.asarray(f(x)), _selu_numpy(x), rtol=1e-5, atol=1e-6)
    assert runtime.stats()["compiles"] - compiles == 2
    record = runtime.stats()["programs"][-1]
    assert record["status"] == "final" and record["kernels"] == 1
    assert record["loads"] == 2 and record["compiles"] == 2
    assert 0 < record["seconds_to_tier"] <= record["seconds_to_final"]
    assert record["kernel_seconds"] > 0
    assert record["started"] < record["tier_at"] <= record["final_at"]
    assert record["final_at"] - record["started"] == pytest.approx(record["seconds_to_final"], abs=1e-5)


@pytest.mark.usefixtures("fresh")
def test_the_serial_tier_stays_when_a_threaded_variant_fails_to_compile(rng, monkeypatch):
    if not fusion.parallel_possible():
        pytest.skip("threaded kernels need two cores and no thread limit")
    load = runtime._load

    def failing_threaded(digest, source):
        if "parallel=True" in source:
            raise RuntimeError("simulated Numba failure")
        return load(digest, source)
    monkeypatch.setattr(runtime, "_load", failing_threaded)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    f = fluxion.jit(_selu)
    exe, tiers = _run_watched(f, x)
    assert tiers == [[False]]
    assert exe.tier == 1 and not exe.kernels[0].parallel and exe.kernels[0].status == "compiled"
    np.testing.assert_allclose(np.asarray(f(x)), _selu_numpy(x), rtol=1e-5, atol=1e-6)
    record = runtime.stats()["programs"][-1]
    assert record["status"] == "final" and record["kernels"] == 1


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize("pin", ["OMP_NUM_THREADS", "fluxion_num_threads"])
def test_a_process_pinned_to_one_thread_never_compiles_threaded_kernels(rng, monkeypatch, pin):
    if pin == "OMP_NUM_THREADS":
        monkeypatch.setenv(pin, "1")
    x = rng.standard_normal(SHAPE).astype(np.float32)
    f = fluxion.jit(_selu)
    compiles = runtime.stats()["compiles"]
    if pin == "fluxion_num_threads":
        with config.override("fluxion_num_threads", 1):
            exe, tiers = _run_watched(f, x)
    else:
        exe, tiers = _run_watched(f, x)
    assert tiers == [[False]]
    assert runtime.stats()["compiles"] - compiles == 1
    record = runtime.stats()["programs"][-1]
    assert record["status"] == "final" and record["seconds_to_tier"] == record["seconds_to_final"]
    np.testing.assert_allclose(np.asarray(f(x)), _selu_numpy(x), rtol=1e-5, atol=1e-6)


@pytest.mark.usefixtures("fresh")
def test_a_warm_serial_tier_is_in_place_at_the_first_call(rng, monkeypatch):
    if not fusion.parallel_possible():
        pytest.skip("threaded kernels need two cores and no thread limit")
    x = rng.standard_normal(SHAPE).astype(np.float32)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # (Numba rejects a changed NUMBA_NUM_THREADS)
    _run_watched(fluxion.jit(_selu), x)  # records the serial tier on disk (the threaded one is never built)
    key = disk_cache.key(_executable_optimized(x), ())
    assert disk_cache.warm(disk_cache.serial_key(key)) and not disk_cache.warm(key)
    monkeypatch.delenv("OMP_NUM_THREADS")
    fluxion.clear_caches()
    runtime.release_kernels()
    f = fluxion.jit(_selu)
    np.testing.assert_allclose(np.asarray(f(x)), _selu_numpy(x), rtol=1e-5, atol=1e-6)
    exe = _executable(f)
    assert exe.tier == 1, "a serial tier on disk loads before the first call"
    assert runtime.wait_for_kernels(120)
    assert [k.parallel for k in exe.kernels] == [True]
    assert disk_cache.warm(key)
    np.testing.assert_allclose(np.asarray(f(x)), _selu_numpy(x), rtol=1e-5, atol=1e-6)
    record = runtime.stats()["programs"][-1]
    assert record["status"] == "final" and record["compiles"] == 1  # only the threaded variant was compiled


@pytest.mark.usefixtures("fresh")
def test_stats_record_each_kernel_compiled_then_loaded_with_its_times(rng, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # serial kernels only: one record per tier's kernel
    x = rng.standard_normal(SHAPE).astype(np.float32)
    since = time.perf_counter()  # the record list keeps the newest MAX_KERNEL_RECORDS: select by time, not index

    def new_records():
        return [k for k in runtime.stats()["kernels"] if k["ready_at"] > since]

    f = fluxion.jit(_selu)
    f(x)
    assert runtime.wait_for_kernels(120)
    exe = _executable(f)
    assert exe.tier == 1
    (first,) = new_records()
    (kernel,) = exe.kernels
    assert first["digest"] == kernel.digest and first["outcome"] == "compiled"
    assert first["parallel"] is False and first["whole_step"] is False
    assert first["source_chars"] == len(kernel.source)
    assert first["seconds"] > 0 and first["cpu_seconds"] > 0
    program = runtime.stats()["programs"][-1]
    assert program["compiles"] == 1 and 0 < program["kernel_cpu_seconds"]
    assert program["started"] < first["ready_at"] <= program["tier_at"]
    # A second process's view: nothing in memory, the machine code on disk.
    fluxion.clear_caches()
    runtime.release_kernels()
    f = fluxion.jit(_selu)
    f(x)
    assert runtime.wait_for_kernels(120)
    np.testing.assert_allclose(np.asarray(f(x)), _selu_numpy(x), rtol=1e-5, atol=1e-6)
    second = new_records()[1:]
    assert [(k["digest"], k["outcome"]) for k in second] == [(kernel.digest, "loaded")]
    # A kernel already in memory adds no record.
    f2 = fluxion.jit(lambda v: _selu(v))
    f2(x)
    assert runtime.wait_for_kernels(120)
    assert len(new_records()) == 2


def test_stats_never_wait_for_a_kernel_being_compiled():
    """`load_kernel` holds the runtime's lock for a whole compilation (seconds); a caller polling `stats()` (a
    benchmark's loop, a progress display) must not stall behind it."""
    got: list = []
    with runtime._lock:  # what a compilation in progress holds
        reader = threading.Thread(target=lambda: got.append(runtime.stats()), daemon=True)
        reader.start()
        reader.join(30)
        assert not reader.is_alive(), "stats() waited for the kernel lock"
    assert {"programs", "kernels", "loads", "compiles"} <= set(got[0])


def _executable_optimized(x):
    """The optimized program `jit(_selu)` compiles for `x` (what the disk cache keys on)."""
    f = fluxion.jit(_selu)
    with config.override("fluxion_jit_fusion", False):  # (a program of its own: jit's caches key on the option)
        f(x)
    return list(f._cache.values())[-1].executable.optimized


def test_first_tiers_run_before_threaded_variants_and_in_submission_order():
    order: list = []
    worker = BlockedWorker()
    try:
        runtime.submit(lambda: order.append("later a"), runtime.LATER_TIER)
        runtime.submit(lambda: order.append("first a"))
        runtime.submit(lambda: order.append("later b"), runtime.LATER_TIER)
        runtime.submit(lambda: order.append("first b"), runtime.FIRST_TIER)
    finally:
        worker.finish()
    assert order == ["first a", "first b", "later a", "later b"]


@pytest.mark.parametrize(("usable", "option", "processes"), [(1, 1, 0), (2, 1, 1), (3, 1, 1), (3, 4, 2), (4, 0, 0)])
def test_helper_processes_use_only_the_cores_the_process_may_use(monkeypatch, usable, option, processes):
    monkeypatch.setattr(threads, "current", lambda: usable)  # threads compiled code may use now
    with config.override("fluxion_compile_processes", option):
        assert max(runtime.compile_processes(), 0) == processes


@pytest.mark.parametrize(("cores", "option", "env", "want"), [
    (2, None, None, True), (1, None, None, False), (2, 1, None, False), (2, None, "1", False), (4, 2, "3", True)])
def test_parallel_possible(monkeypatch, cores, option, env, want):
    for var in THREAD_LIMIT_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    if env is not None:
        monkeypatch.setenv("OMP_NUM_THREADS", env)
    monkeypatch.setattr(threads, "CORES", cores)
    with config.override("fluxion_num_threads", option):
        assert fusion.parallel_possible() is want


# -- helper processes ---------------------------------------------------------------------------------------------

def _standardize(x):
    # Three kernels: the column means, the column variances, then the standardized elementwise output.
    return (x - x.mean(0)) / x.std(0)


def _standardize_numpy(x):
    return (x - x.mean(0)) / x.std(0)


@pytest.fixture
def one_helper(monkeypatch):
    """One helper process, allowed by two threads."""
    if threads.CORES < 2 or not fusion.parallel_possible():
        pytest.skip("helper processes need two cores and no thread limit")
    with config.override("fluxion_compile_processes", 1), config.override("fluxion_num_threads", 2):
        assert runtime.compile_processes() == 1
        yield


@pytest.mark.usefixtures("fresh", "one_helper")
def test_a_helper_process_compiles_kernels_into_the_cache(rng):
    x = rng.standard_normal(SHAPE).astype(np.float32)
    f = fluxion.jit(_standardize)
    before = runtime.stats()
    f(x)
    assert runtime.wait_for_kernels(120)
    exe = _executable(f)
    assert exe.tier == 1 and len({k.digest for k in exe.kernels}) >= runtime.PROCESS_MIN_KERNELS
    np.testing.assert_allclose(np.asarray(f(x)), _standardize_numpy(x), rtol=1e-4, atol=1e-5)
    after = runtime.stats()
    assert after["process_compiles"] > before["process_compiles"]
    record = after["programs"][-1]
    assert record["status"] == "final" and record["compiles"] >= len({k.digest for k in exe.kernels})


@pytest.mark.usefixtures("fresh", "one_helper")
@pytest.mark.parametrize("helper", ["dies", "hangs"])
def test_kernels_a_helper_cannot_compile_are_compiled_by_the_thread(rng, monkeypatch, tmp_path, helper):
    broken = tmp_path / "worker.py"
    if helper == "dies":
        broken.write_text("import sys\nsys.exit(3)\n")  # before answering
    else:
        broken.write_text("import sys, time\nsys.stdin.readline()\ntime.sleep(600)\n")
        monkeypatch.setattr(runtime, "HELPER_TIMEOUT_SECONDS", 1)
    monkeypatch.setattr(runtime, "WORKER_SCRIPT", str(broken))
    x = rng.standard_normal(SHAPE).astype(np.float32)
    f = fluxion.jit(_standardize)
    before = runtime.stats()
    f(x)
    assert runtime.wait_for_kernels(120)
    assert _executable(f).tier == 1
    np.testing.assert_allclose(np.asarray(f(x)), _standardize_numpy(x), rtol=1e-4, atol=1e-5)
    assert runtime.stats()["process_compiles"] == before["process_compiles"]


@pytest.mark.usefixtures("fresh", "one_helper")
def test_a_helper_never_compiles_a_kernel_file_that_differs_from_the_source(tmp_path):
    import json
    import subprocess
    import sys
    root = cachedir.usable_dir()
    digest = "0" * 24
    path = cachedir.kernel_file(root, digest)
    source = "raise SystemExit('this text is not what the parent sent')\n"
    marker = tmp_path / "ran"
    planted = f"open({str(marker)!r}, 'w').close()\n"
    cachedir.write_atomic(path, planted)
    job = json.dumps({"digest": digest, "path": path, "source": source})
    out = subprocess.run([sys.executable, runtime.WORKER_SCRIPT], input=job + "\n", capture_output=True,
                         text=True, timeout=120)
    (reply,) = [json.loads(line) for line in out.stdout.splitlines()]
    assert reply["digest"] == digest and not reply["ok"] and "does not hold" in reply["error"]
    assert not marker.exists()


def _fused_program(f, *args):
    return fusion.prepare(compiler.passes.optimize(fluxion.make_jaxpr(f)(*args)))


def test_threads_beat_the_whole_step_tier_only_for_large_kernels_without_blas(monkeypatch):
    for var in THREAD_LIMIT_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(threads, "CORES", 2)
    big = np.ones(SHAPE, np.float32)
    with config.override("fluxion_num_threads", None):
        threads._monitor.next_check = 0.0
        assert compiler.threads_beat_whole_step(_fused_program(_selu, big))
        # A large vector dot (a fused sum after `fusion.prepare`) splits across cores the same way: the benchmark's
        # dot(x, x) over 1e7 float32 ran serial on the whole-step tier before this check existed.
        v = np.ones(rewrite.DOT_REDUCE_MIN_ELEMENTS, np.float32)
        assert compiler.threads_beat_whole_step(_fused_program(jnp.dot, v, v))
        # Small kernels: the whole-step tier's saved dispatch is worth more than threads.
        assert not compiler.threads_beat_whole_step(_fused_program(_selu, np.ones((64, 64), np.float32)))
        # A program calling BLAS keeps its kernels serial (see fusion.Planner): nothing for threads to win.
        w = np.ones((500, 500), np.float32)
        assert not compiler.threads_beat_whole_step(_fused_program(lambda x, w: _selu(x @ w), big, w))
    with config.override("fluxion_num_threads", 1):   # no threads to win with
        assert not compiler.threads_beat_whole_step(_fused_program(_selu, big))


@pytest.mark.usefixtures("fresh")
def test_large_kernels_keep_their_threaded_fused_tier_instead_of_the_whole_step(rng):
    # The benchmarks build the whole-step tier at once (fluxion_jit_whole_step_after=0); it is serial, so a large
    # selu used to end on one core there while the threaded fused kernel was ready.
    if not fusion.parallel_possible():
        pytest.skip("threaded kernels need two cores and no thread limit")
    x = rng.standard_normal(SHAPE).astype(np.float32)
    with config.override("fluxion_jit_whole_step", True), config.override("fluxion_jit_whole_step_after", 0):
        f = fluxion.jit(_selu)
        f(x)
        assert runtime.wait_for_kernels(300)
        out = f(x)
    exe = _executable(f)
    assert exe.tier == 1 and [k.parallel for k in exe.kernels] == [True]
    np.testing.assert_allclose(np.asarray(out), _selu_numpy(x), rtol=1e-5, atol=1e-6)

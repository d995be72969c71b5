"""Two processes over MPI on the loopback interface (fluxion/_src/distributed.py).

Launches `mpirun -n 2` on tests/parallel/mpi_worker.py and on the data-parallel MNIST example. With MPICH the
processes are forced onto TCP over `lo` (no shared memory), with Open MPI onto the tcp BTL over `lo`. Skipped when
mpi4py or an MPI launcher is missing (install: `pip install mpi4py mpich`). `FLUXION_TEST_MPIRUN` may give the
launcher command prefix (e.g. "mpiexec -n 2") to use instead.

Oracles: NumPy on the global array for every collective, single-device training for data parallelism, and the
documented failure behaviour (a missing rank is named within the timeout).
"""

from __future__ import annotations

import json
import re
import os
import shlex
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_worker.py")



def _parse_results(text: str) -> list:
    """Every `RESULT <json>` record in the merged output of all ranks.

    mpirun merges the ranks' stdout, so two records can end up on one line; decode each record where it starts.
    """
    decoder = json.JSONDecoder()
    out = []
    for m in re.finditer(r"RESULT ", text):
        obj, _ = decoder.raw_decode(text, m.end())
        out.append(obj)
    return out

def _launcher() -> tuple[list[str], str]:
    pytest.importorskip("mpi4py")
    override = os.environ.get("FLUXION_TEST_MPIRUN")
    if override:
        return shlex.split(override), "custom"
    exe = None
    for name in ("mpirun", "mpiexec"):
        candidate = os.path.join(os.path.dirname(sys.executable), name)
        exe = candidate if os.path.exists(candidate) else shutil.which(name)
        if exe:
            break
    if exe is None:
        pytest.skip("no mpirun/mpiexec found")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    if "Open MPI" in version or "OpenRTE" in version:
        return [exe, "-n", "2", "--oversubscribe", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo",
                "--mca", "oob_tcp_if_include", "lo"], "openmpi"
    from mpi4py import MPI
    cmd = [exe, "-n", "2", "-iface", "lo"]
    if "ofi" in MPI.Get_library_version():  # all traffic through libfabric's TCP provider on loopback
        cmd += ["-genv", "MPIR_CVAR_NOLOCAL", "1", "-genv", "MPIR_CVAR_CH4_NETMOD", "ofi", "-genv", "FI_PROVIDER",
                "tcp", "-genv", "FI_TCP_IFACE", "lo"]
    return cmd, "mpich"


def _run(args: list[str], env_extra: dict | None = None, timeout: float = 120):
    cmd, _ = _launcher()
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra or {})
    t0 = time.time()
    proc = subprocess.run(cmd + [sys.executable] + args, capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=REPO)
    results = _parse_results(proc.stdout)
    return proc, results, time.time() - t0


def test_two_processes_collectives_and_data_parallel():
    proc, results, _ = _run([WORKER, "collectives"], {"FLUXION_NUM_CPU_DEVICES": "2"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    by_rank = {r["rank"]: r for r in results}
    assert sorted(by_rank) == [0, 1]
    for rank, r in by_rank.items():
        assert r["process_count"] == 2
        assert r["devices"] == [[0, 0], [1, 0], [2, 1], [3, 1]]  # every process's devices, numbered in order
        assert r["local_devices"] == [f"CpuDevice(id={2 * rank})", f"CpuDevice(id={2 * rank + 1})"]
        assert r["checks"] and all(r["checks"].values()), r["checks"]


def test_missing_rank_is_named_within_the_timeout(tmp_path):
    proc, results, elapsed = _run([WORKER, "missing", str(tmp_path / "flag")])
    assert [r["rank"] for r in results] == [0], proc.stdout + proc.stderr
    r = results[0]
    assert r["missing"] == [1]
    assert "rank(s) 1 did not take part in 'initialize' within 2 s" in r["error"]
    assert 1.5 < r["seconds"] < 20


def test_hung_rank_is_named_within_the_timeout(tmp_path):
    proc, results, elapsed = _run([WORKER, "hangs", str(tmp_path / "flag")])
    assert [r["rank"] for r in results] == [0], proc.stdout + proc.stderr
    assert results[0]["missing"] == [1]
    assert "rank(s) 1 did not take part in 'psum' within 2 s" in results[0]["error"]
    assert 1.5 < results[0]["seconds"] < 20


def test_killed_rank_never_hangs_the_others(tmp_path):
    """A SIGKILLed rank: depending on the launcher's clean-up race, the survivor either reports the missing rank
    itself or is terminated by the launcher, which reports the killed process. Either way the job ends promptly."""
    proc, results, elapsed = _run([WORKER, "dies", str(tmp_path / "flag")], timeout=60)
    assert elapsed < 30
    assert proc.returncode != 0 or results
    if results:
        assert results[0]["missing"] == [1] and "rank(s) 1" in results[0]["error"]
    else:
        assert "signal 9" in (proc.stdout + proc.stderr) or "Killed" in (proc.stdout + proc.stderr)


@pytest.mark.skipif(not os.path.exists(os.path.join(REPO, "datasets", "mnist", "train-images-idx3-ubyte.gz")),
                    reason="MNIST files not in datasets/mnist")
@pytest.mark.parametrize("strategy", [[], ["--pmap"]], ids=["mesh", "pmap"])
def test_mnist_data_parallel_two_processes_matches_single_process(tmp_path, strategy):
    _launcher()
    out = tmp_path / "params.npz"
    args = ["--train-limit", "256", "--test-limit", "64", "--epochs", "1", "--batch-size", "64", "--no-progress"]
    proc, _, _ = _run(["-m", "fluxion.examples.mnist_dp", "--data-parallel", "--params-out", str(out)] + args
                      + strategy, {"FLUXION_NUM_CPU_DEVICES": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Data-parallel training on 2 device(s) in 2 process(es)" in proc.stdout
    import fluxion
    from fluxion.examples import mnist
    ref = mnist.main(args)
    leaves = fluxion.tree_util.tree_flatten_with_path(ref["state"].params)[0]
    with np.load(out) as saved:
        assert sorted(saved.files) == sorted(fluxion.tree_util.keystr(k) for k, _ in leaves)
        for k, v in leaves:
            np.testing.assert_allclose(saved[fluxion.tree_util.keystr(k)], np.asarray(v), rtol=1e-4, atol=1e-5)


def test_single_process_world_without_launcher():
    pytest.importorskip("mpi4py")
    code = ("import numpy as np, fluxion\n"
            "from fluxion import lax\n"
            "fluxion.distributed.initialize()\n"
            "assert fluxion.distributed.is_initialized() and fluxion.process_count() == 1\n"
            "out = fluxion.pmap(lambda v: lax.psum(v, 'i'), axis_name='i')(np.arange(2.0))\n"
            "assert np.asarray(out).tolist() == [1.0, 1.0]\n"
            "try:\n"
            "    fluxion.distributed.initialize()\n"
            "except RuntimeError as e:\n"
            "    assert 'only be called once' in str(e)\n"
            "else:\n"
            "    raise AssertionError('second initialize did not fail')\n"
            "fluxion.distributed.shutdown()\n"
            "assert not fluxion.distributed.is_initialized()\n"
            "print('OK')\n")
    env = dict(os.environ, FLUXION_NUM_CPU_DEVICES="2", PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                          cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), proc.stdout + proc.stderr


def test_missing_mpi4py_gives_install_hint(monkeypatch):
    from fluxion._src import distributed
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(ImportError, match="pip install mpi4py mpich"):
        distributed.initialize()
    assert not distributed.is_initialized()

"""The benchmark workloads still run (tiny sizes; nothing here is timed), and fluxion's training steps compute the
same losses as JAX's from the same parameters."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks import run, threads, timing, training, workloads  # noqa: E402

# Training steps (checked against JAX below); the x4/x16 batch-scaling rows run the x1 rows' code at other sizes.
STEP_KEYS = [w.key for w in workloads.WORKLOADS if w.scaling and w.scaling[1] == 1] + ["lstm_grad"]
FLUXION_KEYS = [w.key for w in workloads.WORKLOADS
                if ("fluxion" in w.frameworks or "fluxion_eager" in w.frameworks)
                and not w.scaling and w.key not in STEP_KEYS]


def _finite_samples(res):
    return res["samples"] and all(np.isfinite(s) and s >= 0 for s in res["samples"])


@pytest.mark.parametrize("key", FLUXION_KEYS)
def test_fluxion_workload_runs_on_tiny_sizes(key):
    w = workloads.BY_KEY[key]
    fw = "fluxion" if "fluxion" in w.frameworks else "fluxion_eager"
    assert _finite_samples(workloads.run_in_this_process(key, fw, True))


@pytest.mark.parametrize("key", STEP_KEYS)
def test_training_step_runs_and_its_losses_agree_with_jax(key):
    res = workloads.run_in_this_process(key, "fluxion", True)
    assert _finite_samples(res)
    pytest.importorskip("jax")
    pytest.importorskip("flax")
    pytest.importorskip("optax")
    ours = res["info"]
    theirs = workloads.run_in_this_process(key, "jax", True)["info"]
    results = {"one": {key: {"fluxion": {"info": ours}, "jax": {"info": theirs}}}}
    checks = run.loss_checks(results)
    assert checks and all(ok for *_, ok in checks), checks


def test_redraw_gives_both_stacks_the_same_parameters():
    pytest.importorskip("jax")
    pytest.importorskip("flax")
    a = training._redraw(training._libs("fluxion"), {"w": np.ones((3, 4), np.float32) * np.arange(4), "b": np.zeros(4)})
    b = training._redraw(training._libs("jax"), {"w": np.ones((3, 4), np.float32) * np.arange(4), "b": np.zeros(4)})
    np.testing.assert_array_equal(np.asarray(a["w"]), np.asarray(b["w"]))
    np.testing.assert_array_equal(np.asarray(a["b"]), np.zeros(4))
    assert np.std(np.asarray(a["w"])) > 0


def test_linreg_peers_agree_on_the_fit():
    a = workloads.linreg("fluxion", True)["info"]
    b = workloads.linreg("numpy", True)["info"]
    assert a["w"] == pytest.approx(b["w"], abs=1e-3) and a["b"] == pytest.approx(b["b"], abs=1e-3)


def test_loss_check_flags_a_disagreement():
    results = {"one": {"mnist_mlp": {"fluxion": {"info": {"loss@1": 2.0, "loss@2": 1.5}},
                                     "jax": {"info": {"loss@1": 2.0, "loss@2": 1.2}}}}}
    assert [(what, ok) for _, _, what, _, _, ok in run.loss_checks(results)] == [("loss@1", True), ("loss@2", False)]


def test_markdown_table_has_a_row_per_workload_with_results():
    results = {"selu_jit": {"fluxion": {"median": 0.3, "min": 0.3, "max": 0.3, "info": {}},
                            "jax": {"median": 0.6, "min": 0.6, "max": 0.6, "info": {}}, "torch": None}}
    table = run.markdown_table(results, "title")
    row = [ln for ln in table.splitlines() if "selu" in ln][0]
    assert "| 0.3 | 0.6 | n/a |" in row and row.endswith("| 2.00x |")


def test_scaling_table_lists_each_multiplier():
    def r(m):
        return {"median": m, "min": m, "max": m, "info": {}}
    results = {"mnist_mlp": {"fluxion": r(1.0), "jax": r(2.0)}, "mnist_mlp_x4": {"fluxion": r(3.0), "jax": r(3.0)},
               "mnist_mlp_x16": {"fluxion": r(8.0), "jax": r(4.0)}}
    row = [ln for ln in run.scaling_table(results).splitlines() if "MLP" in ln][0]
    assert "| 1.00 | 3.00 | 8.00 | 2.00 | 3.00 | 4.00 | 2.00x, 1.00x, 0.50x |" in row


def test_frameworks_take_turns_process_by_process(monkeypatch):
    """With several processes per row, the frameworks alternate (A B A B), their samples are pooled, and a
    framework whose process failed is not run again."""
    calls = []

    def fake_child(keys, framework, quick, env, timeout):
        calls.append(framework)
        if framework == "torch":
            return {keys[0]: {"error": "boom"}}
        return {keys[0]: {"samples": [len(calls) / 1e3], "info": {}}}

    monkeypatch.setattr(run, "_run_child", fake_child)
    reported = []
    results = run.run_mode("one", ["selu_jit"], ["fluxion", "jax", "torch"], False, "/tmp", 1.0, 0,
                           lambda *row: reported.append(row[2]), {}, rounds=3)
    assert calls == ["fluxion", "jax", "torch", "fluxion", "jax", "fluxion", "jax"]
    scale = workloads.BY_KEY["selu_jit"].scale
    assert results["selu_jit"]["fluxion"]["median"] == pytest.approx(4e-3 * scale)  # samples of calls 1, 4, 6
    assert results["selu_jit"]["torch"] == {"error": "boom"} and reported == ["fluxion", "jax", "torch"]


def test_one_thread_mode_environment():
    env = threads.child_env("one", {"XLA_FLAGS": "--other", "PATH": "/bin"}, cpu=1)
    assert env["OPENBLAS_NUM_THREADS"] == "1" and env["FLUXION_NUM_THREADS"] == "1"
    assert "intra_op_parallelism_threads=1" in env["XLA_FLAGS"] and env[threads.CPU_VARIABLE] == "1"
    default = threads.child_env("default", env, cpu=1)
    assert "OPENBLAS_NUM_THREADS" not in default and "XLA_FLAGS" not in default and default["PATH"] == "/bin"
    with pytest.raises(ValueError, match="thread mode"):
        threads.child_env("two", {}, cpu=0)


def test_time_to_steady_finds_the_first_fast_call():
    calls = []

    def fn():  # five slow calls, then fast ones
        calls.append(None)
        if len(calls) <= 5:
            import time
            time.sleep(0.02)
    res = timing.time_to_steady(fn, quick=False, after_idle=0.0)
    assert res["info"]["calls"] >= 5 and res["samples"][0] >= 5 * 0.02

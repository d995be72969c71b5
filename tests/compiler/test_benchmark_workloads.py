"""The benchmark workloads still run (tiny sizes, fluxion and NumPy only; nothing here is timed)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks import run, workloads  # noqa: E402

FLUXION_KEYS = [w.key for w in workloads.WORKLOADS if "fluxion" in w.frameworks or "fluxion_eager" in w.frameworks]


@pytest.mark.parametrize("key", FLUXION_KEYS)
def test_fluxion_workload_runs_on_tiny_sizes(key):
    w = workloads.BY_KEY[key]
    fw = "fluxion" if "fluxion" in w.frameworks else "fluxion_eager"
    res = workloads.run_in_this_process(key, fw, True)
    assert res["samples"] and all(np.isfinite(s) and s >= 0 for s in res["samples"])


def test_linreg_peers_agree_on_the_fit():
    a = workloads.linreg("fluxion", True)["info"]
    b = workloads.linreg("numpy", True)["info"]
    assert a["w"] == pytest.approx(b["w"], abs=1e-3) and a["b"] == pytest.approx(b["b"], abs=1e-3)


def test_markdown_table_has_a_row_per_workload_with_results():
    results = {"selu_jit": {"fluxion": {"median": 0.3, "min": 0.3, "max": 0.3, "info": {}},
                            "jax": {"median": 0.6, "min": 0.6, "max": 0.6, "info": {}}, "torch": None}}
    table = run.markdown_table(results, "# header", "# roof")
    row = [ln for ln in table.splitlines() if "selu" in ln][0]
    assert "| 0.3 | 0.6 | n/a |" in row and row.endswith("| 2.00x |")

"""`NUMBA_NUM_THREADS` changed after Numba started its threads (`fusion.numba_pool`): a lower value is adopted and
kernels keep compiling; a value above the running pool's size gives one RuntimeWarning naming the variable and the
NumPy path (correct results), and restoring the variable lets kernels compile again. Numba's pool is process-wide and
cannot be restarted, so the scenario runs in a fresh interpreter (with an empty kernel cache, so every kernel is
compiled there)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap

import pytest

from fluxion._src.backends.compiler.fusion import runtime
from fluxion._src.config import THREAD_LIMIT_VARIABLES

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_SCENARIO = textwrap.dedent("""
    import os, warnings
    import numpy as np
    import fluxion, fluxion.numpy as jnp
    from fluxion._src.backends.compiler.fusion import runtime

    fluxion.config.update("fluxion_jit_sync_kernels", True)   # kernels compile during the call
    fluxion.config.update("fluxion_parallel_min_work", 0)     # and run on Numba's threads
    x = np.linspace(0.0, 1.0, 1 << 15, dtype=np.float32)
    results = []

    def step(label, scale):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            before = runtime.stats()["loads"]
            out = np.asarray(fluxion.jit(lambda a: jnp.sin(a) * scale + jnp.exp(a) - a * a)(x))
        np.testing.assert_allclose(out, np.sin(x) * scale + np.exp(x) - x * x, rtol=1e-5, atol=1e-6)
        named = [str(w.message) for w in caught if "NUMBA_NUM_THREADS" in str(w.message)]
        results.append((label, runtime.stats()["loads"] > before, len(named)))

    step("start", 1.0)
    os.environ["NUMBA_NUM_THREADS"] = "1"
    step("lowered", 2.0)
    os.environ["NUMBA_NUM_THREADS"] = "3"
    step("raised", 3.0)
    step("raised_again", 4.0)
    os.environ["NUMBA_NUM_THREADS"] = "2"
    step("restored", 5.0)
    print(results)
""")


@pytest.mark.skipif(not runtime.numba_installed(), reason="needs Numba")
def test_changing_numba_num_threads_after_threads_started(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_LIMIT_VARIABLES + ("FLUXION_NUM_THREADS",
                                                                                     "FLUXION_CHECK_FUSION")}
    env["NUMBA_NUM_THREADS"] = "2"
    env["FLUXION_CACHE_DIR"] = str(tmp_path / "kernels")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _SCENARIO], env=env, cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    results = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert results == [("start", True, 0), ("lowered", True, 0), ("raised", False, 1), ("raised_again", False, 0),
                       ("restored", True, 0)]
    assert "failed to compile" not in out.stderr

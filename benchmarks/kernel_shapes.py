"""Kernel compilations and memory for one fused program run on many large shapes.

    python -m benchmarks.kernel_shapes

Runs a jitted elementwise + row-sum program on 20 shapes of about 1M float32 elements (compiling kernels before the
first call, with an empty kernel cache of its own), and prints the number of fused kernels loaded and compiled, the
time the 20 first calls took and the process's resident memory before, after the first shape and after all 20;
then 20 distinct programs (20 kernels) and what `fluxion.clear_caches()` gives back. Fused kernels read their
extents from their arguments, so the first part should compile one kernel.
"""

from __future__ import annotations

import gc
import os
import tempfile
import time
import warnings

os.environ["FLUXION_JIT_SYNC_KERNELS"] = "1"
os.environ["FLUXION_CACHE_DIR"] = tempfile.mkdtemp(prefix="fluxion-kernel-shapes-")

import numpy as np  # noqa: E402

import fluxion  # noqa: E402
import fluxion.numpy as jnp  # noqa: E402
from fluxion._src.backends.compiler.fusion import runtime  # noqa: E402


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    warnings.simplefilter("ignore")  # the jit's "compiled 20 times" warning is the point here
    rng = np.random.default_rng(0)

    @fluxion.jit
    def f(x, b):
        y = jnp.tanh(x * 2.0 + b) - x
        return y, jnp.sum(y * y, axis=1)

    gc.collect()
    before = _rss_mb()
    stats0 = runtime.stats()
    t0 = time.perf_counter()
    for k in range(20):
        n, m = 1000 + 8 * k, 1000 + 4 * k
        f(rng.standard_normal((n, m)).astype(np.float32), np.ones(m, np.float32))
        if k == 0:
            first = _rss_mb()
    seconds = time.perf_counter() - t0
    gc.collect()
    stats1 = runtime.stats()
    print(f"20 shapes: {stats1['loads'] - stats0['loads']} kernels loaded, "
          f"{stats1['compiles'] - stats0['compiles']} compiled, {seconds:.2f} s")
    print(f"  RSS {before:.0f} MB before, {first:.0f} MB after the first shape, {_rss_mb():.0f} MB after 20")

    x = rng.standard_normal((1000, 1000)).astype(np.float32)
    b = np.ones(1000, np.float32)
    gc.collect()
    before = _rss_mb()
    kept = []
    for k in range(20):
        g = fluxion.jit(lambda x, b, c=1.0 + k / 64: (jnp.tanh(x * c + b) - x, jnp.sum(x * c, axis=1)))
        g(x, b)
        kept.append(g)
    gc.collect()
    print(f"20 distinct programs: {len(runtime._loaded)} kernels in memory, RSS {before:.0f} -> {_rss_mb():.0f} MB")
    fluxion.clear_caches()
    gc.collect()
    print(f"  after clear_caches: {len(runtime._loaded)} kernels in memory, RSS {_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()

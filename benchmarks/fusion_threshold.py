"""Measures where fused kernels start to pay: NumPy-path vs fused code for elementwise chains by array size.

    python -m benchmarks.fusion_threshold

Prints, per size, the median time of the generated NumPy code and of the fused (serial) kernel for a 2-operation
chain (`x * 2 + 1`), a 4-operation chain with a select (`relu`-like), and a chain feeding a sum. The smallest size
at which the fused code wins for all chains is what `fusion.FUSE_MIN_ELEMENTS` is set to.
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("FLUXION_PARALLEL_MIN_ELEMENTS", str(1 << 40))  # serial kernels only

import numpy as np  # noqa: E402

import fluxion  # noqa: E402
import fluxion.numpy as jnp  # noqa: E402
from fluxion._src import compiler  # noqa: E402

CHAINS = {
    "x*2+1": lambda x: x * 2.0 + 1.0,
    "where/exp": lambda x: jnp.where(x > 0, x, jnp.exp(x) - 1.0) * 1.5,
    "sum(x*x-1)": lambda x: jnp.sum(x * x - 1.0),
}


def _median_time(fn, *args, number: int) -> float:
    fn(*args)
    samples = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(number):
            fn(*args)
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


def main() -> None:
    print(f"{'size':>9s} " + " ".join(f"{name + ' numpy':>18s} {name + ' fused':>18s}" for name in CHAINS))
    for log2 in range(10, 21):
        n = 1 << log2
        x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        row = [f"{n:9d}"]
        number = max(1, (1 << 22) // n)
        for name, f in CHAINS.items():
            closed = fluxion.make_jaxpr(f)(x)
            plain = compiler.compile_closed(closed, fuse=False)
            fused = compiler.compile_closed(closed, fuse=True, sync=True)
            if fused.tier == 0:  # below the current threshold: force a kernel by lowering it for the measurement
                old = compiler.fusion.FUSE_MIN_ELEMENTS
                compiler.fusion.FUSE_MIN_ELEMENTS = 1
                try:
                    fused = compiler.compile_closed(closed, fuse=True, sync=True)
                finally:
                    compiler.fusion.FUSE_MIN_ELEMENTS = old
            t_np = _median_time(plain, x, number=number) * 1e6
            t_fu = _median_time(fused, x, number=number) * 1e6
            row.append(f"{t_np:17.1f}us {t_fu:17.1f}us")
        print(" ".join(row), flush=True)


if __name__ == "__main__":
    main()

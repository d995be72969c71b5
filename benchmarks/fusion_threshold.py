"""Measures where fused kernels start to pay, and where threads start to pay, by array size.

    python -m benchmarks.fusion_threshold

Prints, per size, the median time of the generated NumPy code, of the fused serial kernel, and of the fused parallel
kernel on all cores, for a 2-operation chain (`x * 2 + 1`), a 4-operation chain with a select (`relu`-like), and a
chain feeding a sum. The smallest size at which the fused code wins for all chains is what the
`fluxion_fuse_min_elements` option defaults to; the work (elements x operations) at which the parallel kernels start
to win is `fluxion_parallel_min_work`'s default. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import statistics
import time

import numpy as np  # noqa: E402

import fluxion  # noqa: E402
import fluxion.numpy as jnp  # noqa: E402
from fluxion._src.backends import compiler  # noqa: E402
from fluxion._src.backends.compiler import threads  # noqa: E402

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


def _fused(closed, *, parallel: bool):
    """The fused executable of `closed` with kernels forced on (any size), serial or parallel."""
    with fluxion.config.override("fluxion_fuse_min_elements", 1), \
            fluxion.config.override("fluxion_parallel_min_work", 0 if parallel else 1 << 62):
        return compiler.compile_closed(closed, fuse=True, sync=True)


def main() -> None:
    fluxion.config.update("fluxion_num_threads", threads.CORES)  # measure the parallel kernels on every core
    print(f"{'size':>9s} " + " ".join(f"{name:>10s}: numpy / serial / parallel (us)" for name in CHAINS))
    for log2 in range(10, 24):
        n = 1 << log2
        x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        row = [f"{n:9d}"]
        number = max(1, (1 << 22) // n)
        for f in CHAINS.values():
            closed = fluxion.make_jaxpr(f)(x)
            plain = compiler.compile_closed(closed, fuse=False)
            times = [_median_time(exe, x, number=number) * 1e6
                     for exe in (plain, _fused(closed, parallel=False), _fused(closed, parallel=True))]
            row.append(f"{times[0]:>16.1f} {times[1]:8.1f} {times[2]:8.1f}")
        print(" ".join(row), flush=True)


if __name__ == "__main__":
    main()

"""The MNIST MLP train step through each tier of `jit`, against JAX, in one process (ratios, not absolute times).

    taskset -c 0 env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        FLUXION_NUM_THREADS=1 XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \\
        python -m benchmarks.whole_step [--batch 32] [--rounds 15] [--steps 200] [--no-jax]

Variants, each a separately jitted copy of `workloads._jaxlike_train_step` (Flax MLP 784-128-128-10, softmax
cross-entropy, Adam through `TrainState.apply_gradients`):

* `fused`: the fused tier alone (`fluxion_jit_whole_step` off when it is compiled);
* `whole`: the whole-step tier (`compiler.wholestep`);
* `jax`: JAX + Flax + Optax (skipped without JAX).

Each variant is first run until its tiered code is in place; then `--rounds` rounds run `--steps` steps of every
variant in turn, and the medians of steps/s and of the per-round ratios are printed -- alternating in one process
so that a loaded machine slows all variants alike. Also printed: the first call and the time until the whole-step
function is in place (cold or warm disk cache, whichever this run has).
"""

from __future__ import annotations

import argparse
import statistics
import time

from fluxion import config
from fluxion._src.backends import compiler

from . import workloads as W


def _variant(name: str, batch: int):
    framework = "jax" if name == "jax" else "fluxion"
    with config.override("fluxion_jit_whole_step", name == "whole"):
        step, state, x, y = W._jaxlike_train_step(framework, "mlp", batch)
        ready = W._ready_jax if framework == "jax" else W._ready_fx
        box = [state]

        def run():
            box[0], loss = step(box[0], x, y)
            ready(loss)
        t0 = time.perf_counter()
        run()
        first = time.perf_counter() - t0
        compiler.wait_for_kernels()
        settled = time.perf_counter() - t0
    for _ in range(20):
        run()
    if framework == "fluxion":
        tier = next(iter(step._cache.values())).executable.tier
        print(f"{name}: first call {first:.3f} s, tiered code in place after {settled:.2f} s (tier {tier})")
    return run


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--no-jax", action="store_true")
    a = p.parse_args(argv)
    names = ["fused", "whole"]
    if not a.no_jax:
        try:
            import jax  # noqa: F401
            names.append("jax")
        except ImportError:
            pass
    runs = {n: _variant(n, a.batch) for n in names}
    rates: dict = {n: [] for n in names}
    for _ in range(a.rounds):
        for n, run in runs.items():
            t0 = time.perf_counter()
            for _ in range(a.steps):
                run()
            rates[n].append(a.steps / (time.perf_counter() - t0))
    for n in names:
        print(f"{n:6s} {statistics.median(rates[n]):8.0f} steps/s (median of {a.rounds} rounds)")
    for n in names:
        for m in names:
            if n < m:
                ratio = statistics.median(x / y for x, y in zip(rates[n], rates[m]))
                print(f"{n} / {m}: {ratio:.3f}")


if __name__ == "__main__":
    main()

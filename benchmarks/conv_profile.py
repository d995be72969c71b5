"""Where the MNIST CNN training step's time goes, with the compiler's convolution kernels and without them.

    python -m benchmarks.conv_profile [--rounds 9] [--jax]

Pins every library to one thread (run it under `taskset -c 0` to pin the process to one core as well), builds the
benchmark's CNN step (batch 128, Adam; `workloads._jaxlike_train_step`), and alternates, round by round, a step
with the Numba convolution kernels (`compiler.convkernels`) and a step on the NumPy paths they replace (the kernels
reported as not ready), and with `--jax` a JAX step. Prints the median step time of each and, per convolution
(forward, input gradient, weight gradient, by input shape) and per windowed reduction (by operand shape and
strides), the mean time spent in it. Ratios between the columns are what to read on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
             "FLUXION_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
os.environ["FLUXION_JIT_SYNC_KERNELS"] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.workloads import _jaxlike_train_step  # noqa: E402
from fluxion._src.backends.compiler import conv, convkernels, windowed  # noqa: E402

_spent: dict = defaultdict(float)


def _conv_kind(dimension_numbers) -> str:
    """Which of the CNN's convolutions this is, from the dimension numbers JAX's rules give them (NHWC, HWIO)."""
    lhs_spec, rhs_spec, _ = dimension_numbers
    if lhs_spec[0] != 0:
        return "weight gradient"  # the batch is the lhs's feature dimension
    return "input gradient" if tuple(rhs_spec) == (2, 3, 0, 1) else "forward"  # the transposed kernel


def _instrument() -> None:
    """Wraps the lowerings' entry points (before the step is compiled, which binds them) to time each call."""
    real_conv, real_rw = conv.conv, windowed.reduce_window

    def timed_conv(lhs, rhs, **kw):
        t0 = time.perf_counter()
        out = real_conv(lhs, rhs, **kw)
        _spent[f"conv {_conv_kind(kw['dimension_numbers'])} {tuple(np.shape(lhs))}"] += time.perf_counter() - t0
        return out

    def timed_rw(x, **kw):
        t0 = time.perf_counter()
        out = real_rw(x, **kw)
        _spent[f"reduce_window {tuple(np.shape(x))} strides {kw['window_strides']}"] += time.perf_counter() - t0
        return out

    conv.conv, windowed.reduce_window = timed_conv, timed_rw


class _KernelsOff:
    def __enter__(self):
        self.saved = [(k._fn, k._state) for k in convkernels.ALL]
        for k in convkernels.ALL:
            k._fn, k._state = None, "failed"

    def __exit__(self, *exc):
        for k, (fn, state) in zip(convkernels.ALL, self.saved):
            k._fn, k._state = fn, state


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--jax", action="store_true", help="also time JAX's step (alternated with the others)")
    args = ap.parse_args()
    _instrument()
    for k in convkernels.ALL:
        k.get(block=True)
    step, state, x, y = _jaxlike_train_step("fluxion", "cnn", 128)
    box = [state]

    def fluxion_step():
        box[0], loss = step(box[0], x, y)
        return float(loss)

    def numpy_paths():
        with _KernelsOff():
            return fluxion_step()

    runs = {"kernels": fluxion_step, "numpy paths": numpy_paths}
    if args.jax:
        jstep, jstate, jx, jy = _jaxlike_train_step("jax", "cnn", 128)
        jbox = [jstate]

        def jax_step():
            jbox[0], loss = jstep(jbox[0], jx, jy)
            return float(loss)
        runs["jax"] = jax_step
    for fn in runs.values():
        for _ in range(3):
            fn()
    times = {name: [] for name in runs}
    profile = {name: defaultdict(float) for name in runs}
    for _ in range(args.rounds):
        for name, fn in runs.items():
            _spent.clear()
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
            for key, v in _spent.items():
                profile[name][key] += v / args.rounds
    base = np.median(times["kernels"])
    for name in runs:
        med = float(np.median(times[name]))
        print(f"{name:12s} step {med * 1e3:8.1f} ms  {1 / med:6.2f} steps/s  ({med / base:.2f}x the kernels' time)")
    keys = sorted(set(profile["kernels"]) | set(profile["numpy paths"]))
    print(f"\n{'operation':60s} {'kernels':>9s} {'numpy':>9s}  (ms per step)")
    for key in keys:
        print(f"{key:60s} {profile['kernels'][key] * 1e3:9.2f} {profile['numpy paths'][key] * 1e3:9.2f}")
    rest = {n: float(np.median(times[n])) - sum(profile[n].values()) for n in ("kernels", "numpy paths")}
    print(f"{'everything else (dense layers, elementwise, Adam)':60s} {rest['kernels'] * 1e3:9.2f} "
          f"{rest['numpy paths'] * 1e3:9.2f}")


if __name__ == "__main__":
    main()

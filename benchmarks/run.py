"""Runs every workload for fluxion and its peers, each in its own process, and prints times and ratios.

    python -m benchmarks            # all workloads
    python -m benchmarks --quick    # tiny sizes, to keep the runner working in CI

The ratio column is peer time / fluxion time: above 1 means fluxion is faster. Peers that are not installed are
reported as such and skipped.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

import numpy as np

from .workloads import WORKLOADS

_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from benchmarks.workloads import WORKLOADS
fn, _, scale = WORKLOADS[{name!r}]
kwargs = {kwargs!r}
print(json.dumps(fn({framework!r}, **kwargs) * scale))
"""


def roofline() -> str:
    """Float32 matmul GFLOP/s through NumPy's BLAS and memory copy GB/s on this machine."""
    import time
    a = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    a @ a
    t0 = time.perf_counter()
    for _ in range(5):
        a @ a
    gflops = 5 * 2 * 1024 ** 3 / (time.perf_counter() - t0) / 1e9
    buf = np.ones(50_000_000 // 4, np.float32)
    t0 = time.perf_counter()
    for _ in range(5):
        buf.copy()
    gbs = 5 * 2 * buf.nbytes / (time.perf_counter() - t0) / 1e9
    return f"roofline: float32 matmul {gflops:.0f} GFLOP/s (NumPy BLAS), memory copy {gbs:.1f} GB/s"


def run_one(name: str, framework: str, quick: bool) -> float | None:
    kwargs = {"size": 1000} if quick and name.startswith("selu") else {}
    code = _CHILD.format(root=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), name=name,
                         framework=framework, kwargs=kwargs)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        if "ModuleNotFoundError" in proc.stderr:
            return None
        raise RuntimeError(f"{name}/{framework} failed:\n{proc.stderr[-2000:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", nargs="*", default=None)
    args = p.parse_args(argv)
    print(f"# fluxion benchmarks, {datetime.date.today()}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}, NumPy {np.__version__}")
    print("# " + roofline())
    print(f"{'workload':24s} {'framework':10s} {'time':>12s} {'peer/fluxion':>13s}")
    for name, (_, frameworks, _) in WORKLOADS.items():
        if args.only and name not in args.only:
            continue
        base = None
        for fw in frameworks:
            t = run_one(name, fw, args.quick)
            if t is None:
                print(f"{name:24s} {fw:10s} {'not installed':>12s}")
                continue
            if fw == "fluxion":
                base = t
            ratio = f"{t / base:.2f}x" if base else ""
            print(f"{name:24s} {fw:10s} {t:12.2f} {ratio:>13s}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

"""Runs every workload for fluxion and its peers, each in its own process, and prints times and ratios.

    python -m benchmarks                       # all workloads, all installed peers
    python -m benchmarks --quick               # tiny sizes, to keep the runner working in CI
    python -m benchmarks --only selu_jit dot   # some workloads
    python -m benchmarks --markdown table.md   # also write the README table

Each (workload, framework) runs in a fresh process (imports and caches never mix); a workload's samples come from
repeated timings inside that process (and from several processes for first-call latencies). The ratio is
peer / fluxion on medians: above 1 means fluxion is faster (or, for memory, uses less). Peers that are not installed
are reported as such. fluxion's kernel cache lives in a temporary directory per run, so first-call numbers are
cold-cache numbers.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from .workloads import BY_KEY, WORKLOADS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from benchmarks.workloads import run_in_this_process
print("@@RESULT@@" + json.dumps(run_in_this_process({key!r}, {framework!r}, {quick!r})))
"""

NAMES = {"fluxion": "fluxion", "fluxion_eager": "fluxion", "jax": "JAX jit", "jax_eager": "JAX eager",
         "torch": "PyTorch", "torch_compile": "torch.compile", "numpy": "NumPy"}


def roofline() -> dict:
    """Float32 matmul GFLOP/s through NumPy's BLAS and memory copy GB/s on this machine (best of several)."""
    a = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    a @ a
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t0)
    gflops = 2 * 1024 ** 3 / best / 1e9
    buf = np.ones(50_000_000 // 4, np.float32)
    dst = np.empty_like(buf)
    best = float("inf")
    for _ in range(7):
        t0 = time.perf_counter()
        np.copyto(dst, buf)
        best = min(best, time.perf_counter() - t0)
    gbs = 2 * buf.nbytes / best / 1e9
    return {"matmul_gflops": gflops, "copy_gbs": gbs}


def versions() -> dict:
    out = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("fluxion", "jax", "torch", "numba", "flax", "optax"):
        try:
            m = __import__(mod)
            out[mod] = getattr(m, "__version__", "?")
        except ImportError:
            out[mod] = None
    return out


def run_one(key: str, framework: str, quick: bool, cache_dir: str, timeout: float) -> dict | None:
    """Runs one (workload, framework) in child processes; None if the framework is not installed."""
    w = BY_KEY[key]
    env = dict(os.environ)
    env["FLUXION_CACHE_DIR"] = cache_dir
    env["JAX_PLATFORMS"] = "cpu"
    if w.sync_kernels:
        env["FLUXION_JIT_SYNC_KERNELS"] = "1"
    else:
        env.pop("FLUXION_JIT_SYNC_KERNELS", None)
    samples, info = [], {}
    for _ in range(w.processes):
        if not w.sync_kernels:  # first-call latency: a cold kernel cache for every process
            env["FLUXION_CACHE_DIR"] = tempfile.mkdtemp(prefix="fluxion-bench-cold-")
        code = _CHILD.format(root=ROOT, key=key, framework=framework, quick=quick)
        try:
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                                  env=env, cwd=ROOT)
        except subprocess.TimeoutExpired:
            return {"error": f"timeout after {timeout:.0f} s"}
        if proc.returncode != 0:
            if "ModuleNotFoundError" in proc.stderr:
                return None
            return {"error": proc.stderr.strip().splitlines()[-1][:200] if proc.stderr.strip() else "failed"}
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@")][-1]
        res = json.loads(line[len("@@RESULT@@"):])
        samples += res["samples"]
        info.update(res.get("info", {}))
    scaled = [s * w.scale for s in samples]
    return {"median": statistics.median(scaled), "min": min(scaled), "max": max(scaled), "info": info}


def _fmt(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes (CI smoke run)")
    p.add_argument("--only", nargs="*", default=None, help="workload keys to run")
    p.add_argument("--frameworks", nargs="*", default=None, help="frameworks to run (default: all)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per child process")
    p.add_argument("--markdown", default=None, help="write the README table to this file")
    p.add_argument("--json", default=None, help="write all results to this file")
    args = p.parse_args(argv)

    vers = versions()
    roof = roofline()
    header = (f"# fluxion benchmarks, {datetime.date.today()}, {platform.machine()} "
              f"({platform.processor() or 'cpu'}), {os.cpu_count()} cores; "
              + ", ".join(f"{k} {v}" for k, v in vers.items() if v))
    roof_line = (f"# roofline: float32 matmul {roof['matmul_gflops']:.0f} GFLOP/s (NumPy BLAS), "
                 f"memory copy {roof['copy_gbs']:.1f} GB/s")
    print(header)
    print(roof_line)
    print(f"{'workload':24s} {'framework':14s} {'median':>10s} {'min':>10s} {'max':>10s} {'peer/fluxion':>13s}  info")
    results: dict = {}
    cache_dir = tempfile.mkdtemp(prefix="fluxion-bench-cache-")
    for w in WORKLOADS:
        if args.only and w.key not in args.only:
            continue
        base = None
        results[w.key] = {}
        for fw in w.frameworks:
            if args.frameworks and fw not in args.frameworks and fw.replace("_eager", "") not in args.frameworks:
                continue
            r = run_one(w.key, fw, args.quick, cache_dir, args.timeout)
            results[w.key][fw] = r
            if r is None:
                print(f"{w.key:24s} {fw:14s} {'not installed':>10s}")
                continue
            if "error" in r:
                print(f"{w.key:24s} {fw:14s} {'error':>10s}  {r['error']}")
                continue
            if fw.startswith("fluxion"):
                base = r["median"]
            ratio = f"{r['median'] / base:.2f}x" if base else ""
            info = dict(r["info"])
            if "bytes" in info and w.unit == "ms":
                info["GB/s"] = round(info.pop("bytes") / (r["median"] / 1e3) / 1e9, 1)
            print(f"{w.key:24s} {fw:14s} {_fmt(r['median']):>10s} {_fmt(r['min']):>10s} {_fmt(r['max']):>10s} "
                  f"{ratio:>13s}  {w.unit} {json.dumps(info) if info else ''}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "roofline": roof, "versions": vers, "results": results}, f, indent=1)
    table = markdown_table(results, header, roof_line)
    print()
    print(table)
    if args.markdown:
        tmp = args.markdown + ".tmp"
        with open(tmp, "w") as f:
            f.write(table + "\n")
        os.replace(tmp, args.markdown)


def markdown_table(results: dict, header: str, roof_line: str) -> str:
    """The README table: one row per workload, medians per framework, and each peer's ratio to fluxion."""
    cols = ["fluxion", "jax", "torch", "torch_compile", "numpy"]
    lines = [header.lstrip("# "), "", roof_line.lstrip("# "), "",
             "| workload | unit | fluxion | JAX (jit; eager rows: eager) | PyTorch (eager) | torch.compile | NumPy "
             "| best peer / fluxion |",
             "|---|---|---|---|---|---|---|---|"]
    for w in WORKLOADS:
        res = results.get(w.key)
        if not res:
            continue
        cells = []
        base = None
        best = None
        for c in cols:
            fw = {"fluxion": "fluxion_eager", "jax": "jax_eager"}.get(c, c) if (c + "_eager") in res else c
            if c == "fluxion" and "fluxion_eager" in res:
                fw = "fluxion_eager"
            r = res.get(fw)
            if r is None or "error" in r:
                cells.append("n/a" if r is None else "error")
                continue
            cells.append(_fmt(r["median"]))
            if c == "fluxion":
                base = r["median"]
            elif best is None or r["median"] < best:
                best = r["median"]
        ratio = f"{best / base:.2f}x" if base and best else ""
        lines.append(f"| {w.title} | {w.unit} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()

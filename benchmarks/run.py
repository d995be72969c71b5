"""Runs every workload for fluxion and its peers in two thread modes and prints times, ratios and the README tables.

    python -m benchmarks                       # all workloads, both thread modes, all installed peers
    python -m benchmarks --threads one         # only the one-core mode
    python -m benchmarks --quick               # tiny sizes, one thread mode, to keep the runner working in CI
    python -m benchmarks --only selu_jit dot   # some workloads
    python -m benchmarks --markdown table.md   # also write the README tables
    python -m benchmarks --rounds 3            # three processes per row and framework, frameworks taking turns

Thread modes (`threads.py`): `one` pins every library to one core of the machine, `default` leaves each library its
own threading. Each (mode, workload, framework) runs in a fresh process (imports and caches never mix); a
workload's samples come from repeated timings inside that process, after the callable has settled (`timing.py`),
and from several processes for first-call latencies (and with `--rounds N`, for every row); the frameworks of a row
take turns process by process, so a slow phase of the machine hits them alike. The ratio is peer / fluxion on
medians: above 1 means fluxion is faster (or, for memory, uses less). Peers that are not installed are reported as
such. fluxion's kernel cache lives in a temporary directory per run; first-call and time-to-steady rows get an empty
one per process, so they are cold-cache numbers. Training steps report their first two losses for fluxion and JAX
(same parameters), and the runner checks that they agree. The quick run runs all workloads of a framework in one
process, to stay fast.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from . import threads
from .workloads import BY_KEY, WORKLOADS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = """
import sys
sys.path.insert(0, {root!r})
from benchmarks.threads import pin_this_process
pin_this_process()  # before any library starts a thread
import json
from benchmarks.workloads import run_many
print("@@RESULT@@" + json.dumps(run_many({keys!r}, {framework!r}, {quick!r})))
"""

COLUMNS = ["fluxion", "jax", "torch", "torch_compile", "numpy"]
VERSIONED = ("fluxion", "jax", "jaxlib", "flax", "optax", "torch", "numba", "numpy")
# Relative tolerance of the loss comparison: before any update (float32 sums in another order), after one update.
LOSS_RTOL = {"loss@1": 1e-4, "loss@2": 1e-3}


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


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (the platform's processor string elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions() -> dict:
    """Installed versions of the libraries compared (None when absent); fluxion's is the one this checkout holds."""
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    sys.path.insert(0, ROOT)
    try:
        import fluxion
        out["fluxion"] = fluxion.__version__
    except ImportError:
        pass
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip()
        if commit and out.get("fluxion"):
            out["fluxion"] += f" ({commit})"
    except (OSError, subprocess.TimeoutExpired):
        pass
    return out


def _run_child(keys: list, framework: str, quick: bool, env: dict, timeout: float) -> dict:
    """One child process running `keys` for `framework`: key -> result dict (see `workloads.run_many`)."""
    code = _CHILD.format(root=ROOT, keys=keys, framework=framework, quick=quick)
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {k: {"error": f"timeout after {timeout:.0f} s"} for k in keys}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@")]
    if proc.returncode != 0 or not lines:
        err = proc.stderr.strip().splitlines()[-1][:200] if proc.stderr.strip() else f"exit {proc.returncode}"
        return {k: {"error": err} for k in keys}
    return json.loads(lines[-1][len("@@RESULT@@"):])


def _summarize(key: str, parts: list) -> dict | None:
    """Pools the samples of a workload's processes: median/min/max in the row's unit, the info of the last."""
    for p in parts:
        if "missing" in p:
            return None
        if "error" in p:
            return {"error": p["error"]}
    w = BY_KEY[key]
    scaled = [s * w.scale for p in parts for s in p["samples"]]
    info = {}
    for p in parts:
        info.update(p.get("info", {}))
    return {"median": statistics.median(scaled), "min": min(scaled), "max": max(scaled), "info": info}


def run_mode(mode: str, keys: list, frameworks: list | None, quick: bool, cache_dir: str, timeout: float,
             cpu: int, report, results: dict, rounds: int = 1) -> dict:
    """Fills `results` (key -> framework -> summary, None: not installed) with one thread mode's results, calling
    `report(mode, key, framework, summary, results[key])` after each. Each workload runs `rounds` times its
    `processes` child processes per framework, the frameworks alternating, and pools their samples."""
    env = threads.child_env(mode, os.environ, cpu)
    env["FLUXION_CACHE_DIR"] = cache_dir
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("FLUXION_JIT_SYNC_KERNELS", None)  # users' default: kernels compile in the background

    def wanted(fw):
        return not frameworks or fw in frameworks or fw.replace("_eager", "") in frameworks

    results.update({k: {} for k in keys})
    if quick:  # one process per framework, every workload in it
        for fw in dict.fromkeys(fw for k in keys for fw in BY_KEY[k].frameworks):
            if not wanted(fw):
                continue
            mine = [k for k in keys if fw in BY_KEY[k].frameworks]
            for k, part in _run_child(mine, fw, True, env, timeout).items():
                results[k][fw] = _summarize(k, [part])
        for k in keys:
            for fw, r in results[k].items():
                report(mode, k, fw, r, results[k])
        return results
    for k in keys:
        w = BY_KEY[k]
        parts: dict = {fw: [] for fw in w.frameworks if wanted(fw)}
        # The frameworks take turns, one process each (A B A B ...), so that a slow phase of the machine (seen on
        # the benchmark VM: the same code 1.8x slower for seconds to minutes) falls on every framework's samples
        # alike instead of on one framework's whole row.
        for _ in range(w.processes * rounds):
            for fw, mine in parts.items():
                if mine and ("missing" in mine[-1] or "error" in mine[-1]):
                    continue
                child_env = dict(env)
                if w.cold_cache:
                    child_env["FLUXION_CACHE_DIR"] = tempfile.mkdtemp(prefix="fluxion-bench-cold-")
                else:
                    # Steady-state rows measure the code a long run ends up on: the whole-step tier, which by
                    # default is compiled only after a program has run 10 s in total, is compiled at once here
                    # (and the settling phase waits for it). Cold-cache rows keep the users' defaults.
                    child_env.setdefault("FLUXION_JIT_WHOLE_STEP_AFTER", "0")
                mine.append(_run_child([k], fw, False, child_env, timeout)[k])
        for fw, mine in parts.items():
            results[k][fw] = _summarize(k, mine)
            report(mode, k, fw, results[k][fw], results[k])
    return results


def _fmt(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def _fluxion_of(res: dict) -> dict | None:
    r = res.get("fluxion") or res.get("fluxion_eager")
    return r if r and "error" not in r else None


def _print_row(mode: str, key: str, fw: str, r: dict | None, res: dict) -> None:
    head = f"{mode:7s} {key:22s} {fw:14s}"
    if r is None:
        print(f"{head} {'not installed':>10s}", flush=True)
        return
    if "error" in r:
        print(f"{head} {'error':>10s}  {r['error']}", flush=True)
        return
    w = BY_KEY[key]
    base = _fluxion_of(res)
    ratio = f"{r['median'] / base['median']:.2f}x" if base and base["median"] else ""
    info = dict(r["info"])
    if "bytes" in info and w.unit == "ms":
        info["GB/s"] = round(info.pop("bytes") / (r["median"] / 1e3) / 1e9, 1)
    print(f"{head} {_fmt(r['median']):>10s} {_fmt(r['min']):>10s} {_fmt(r['max']):>10s} {ratio:>8s}  {w.unit} "
          f"{json.dumps(info) if info else ''}", flush=True)


def loss_checks(results: dict) -> list:
    """(mode, key, what, fluxion's value, JAX's value, agrees) for every step loss both reported."""
    out = []
    for mode, by_key in results.items():
        for key, res in by_key.items():
            fx, jx = res.get("fluxion"), res.get("jax")
            if not fx or not jx or "error" in fx or "error" in jx:
                if fx and "error" in fx and jx and "error" not in jx and "loss@1" in jx["info"]:
                    out.append((mode, key, "loss@1", None, jx["info"]["loss@1"], False))
                continue
            for what, rtol in LOSS_RTOL.items():
                a, b = fx["info"].get(what), jx["info"].get(what)
                if a is None or b is None:
                    continue
                out.append((mode, key, what, a, b, bool(abs(a - b) <= rtol * max(abs(b), 1e-6))))
    return out


def markdown_table(results: dict, title: str) -> str:
    """One thread mode's table: one row per workload, medians per framework, and the best peer's ratio to fluxion
    (above 1: fluxion is ahead)."""
    lines = [f"**{title}**", "",
             "| workload | unit | fluxion | JAX (jit; eager rows: eager) | PyTorch (eager) | torch.compile | NumPy "
             "| best peer / fluxion |",
             "|---|---|---|---|---|---|---|---|"]
    for w in WORKLOADS:
        res = results.get(w.key)
        if not res:
            continue
        cells, base, best = [], None, None
        for c in COLUMNS:
            fw = c + "_eager" if (c + "_eager") in res else c
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


def scaling_table(results: dict) -> str:
    """Per training step: fluxion's and JAX's ms/step at x1, x4, x16 of the base batch, and JAX / fluxion at each."""
    steps: dict = {}
    for w in WORKLOADS:
        if w.scaling and w.key in results:
            steps.setdefault(w.scaling[0], {})[w.scaling[1]] = results[w.key]
    if not steps:
        return ""
    lines = ["| step (ms/step) | fluxion x1 | x4 | x16 | JAX x1 | x4 | x16 | JAX / fluxion x1, x4, x16 |",
             "|---|---|---|---|---|---|---|---|"]
    for name, by_mult in steps.items():
        def med(fw, m, by_mult=by_mult):
            r = by_mult.get(m, {}).get(fw)
            return r["median"] if r and "error" not in r else None
        cells = []
        for fw in ("fluxion", "jax"):
            for m in (1, 4, 16):
                v = med(fw, m)
                cells.append(_fmt(v) if v is not None else "error" if by_mult.get(m, {}).get(fw) else "n/a")
        ratios = [f"{med('jax', m) / med('fluxion', m):.2f}x" if med("jax", m) and med("fluxion", m) else "-"
                  for m in (1, 4, 16)]
        lines.append(f"| {BY_KEY[name].title.split(',')[0].split(' (')[0]} | " + " | ".join(cells)
                     + f" | {', '.join(ratios)} |")
    return "\n".join(lines)


def report_markdown(results: dict, header: list, checks: list, runtime: float) -> str:
    parts = ["\n\n".join(header)]
    for mode, by_key in results.items():
        parts.append(markdown_table(by_key, threads.TITLES[mode]))
        scaling = scaling_table(by_key)
        if scaling:
            parts.append(f"Batch scaling ({threads.TITLES[mode].split(':')[0]}):\n\n{scaling}")
    if checks:
        rows = ["| mode | workload | loss | fluxion | JAX | agrees |", "|---|---|---|---|---|---|"]
        rows += [f"| {m} | {k} | {what} | {'error' if a is None else a} | {b} | {'yes' if ok else 'NO'} |"
                 for m, k, what, a, b, ok in checks]
        parts.append("Training-step losses, fluxion vs JAX (same parameters and data):\n\n" + "\n".join(rows))
    parts.append(f"Runtime of this run: {runtime / 60:.1f} min.")
    return "\n\n".join(parts)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes, one process per framework (CI smoke run)")
    p.add_argument("--threads", choices=("one", "default", "both"), default=None,
                   help="thread modes to run (default: both; with --quick: one)")
    p.add_argument("--cpu", type=int, default=None, help="the CPU the one-thread mode pins to (default: the last)")
    p.add_argument("--only", nargs="*", default=None, help="workload keys to run")
    p.add_argument("--frameworks", nargs="*", default=None, help="frameworks to run (default: all)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per child process")
    p.add_argument("--rounds", type=int, default=1,
                   help="processes per framework and workload, the frameworks taking turns (default 1)")
    p.add_argument("--markdown", default=None, help="write the README tables to this file")
    p.add_argument("--json", default=None, help="write all results to this file (rewritten after every row)")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error(f"--rounds must be at least 1, got {args.rounds}")
    unknown = set(args.only or ()) - set(BY_KEY)
    if unknown:
        p.error(f"unknown workloads {sorted(unknown)}; known: {', '.join(BY_KEY)}")
    modes = {"one": ["one"], "default": ["default"], "both": list(threads.MODES)}[
        args.threads or ("one" if args.quick else "both")]
    cpu = threads.default_cpu() if args.cpu is None else args.cpu

    t_start = time.perf_counter()
    vers = versions()
    roof = roofline()
    header = [f"fluxion benchmarks, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
              f"{cpu_model()}, {os.cpu_count()} logical CPUs, {platform.machine()}; one-thread mode pinned to CPU "
              f"{cpu}" + ("; QUICK (tiny sizes)" if args.quick else ""),
              "Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items() if v)
              + "; not installed: " + (", ".join(k for k, v in vers.items() if not v) or "none"),
              f"Roofline: float32 matmul {roof['matmul_gflops']:.0f} GFLOP/s (NumPy BLAS, all threads), "
              f"memory copy {roof['copy_gbs']:.1f} GB/s"]
    for line in header:
        print("# " + line)
    print(f"{'mode':7s} {'workload':22s} {'framework':14s} {'median':>10s} {'min':>10s} {'max':>10s} "
          f"{'vs flx':>8s}  info")
    keys = [w.key for w in WORKLOADS if (not args.only or w.key in args.only)
            and not (args.quick and w.scaling and w.scaling[1] != 1)]  # quick: scaling rows repeat the x1 code
    cache_dir = tempfile.mkdtemp(prefix="fluxion-bench-cache-")
    results: dict = {mode: {} for mode in modes}

    def write_json(runtime=None):
        if args.json:
            tmp = args.json + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"header": header, "roofline": roof, "versions": vers, "results": results,
                           "runtime_s": runtime}, f, indent=1)
            os.replace(tmp, args.json)

    def report(*row):  # prints each result, and keeps the JSON file current so a stopped run keeps its rows
        _print_row(*row)
        write_json()
    for mode in modes:
        run_mode(mode, keys, args.frameworks, args.quick, cache_dir, args.timeout, cpu, report, results[mode],
                 args.rounds)
    runtime = time.perf_counter() - t_start
    checks = loss_checks(results)
    for mode, key, what, a, b, ok in checks:
        if not ok:
            print(f"LOSS MISMATCH {mode} {key} {what}: fluxion {a}, JAX {b}")
    write_json(runtime)
    text = report_markdown(results, header, checks, runtime)
    print()
    print(text)
    if args.markdown:
        tmp = args.markdown + ".tmp"
        with open(tmp, "w") as f:
            f.write(text + "\n")
        os.replace(tmp, args.markdown)


if __name__ == "__main__":
    main()

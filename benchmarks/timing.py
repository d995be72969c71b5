"""Timing helpers shared by the workloads: settling tiered code, medians of repeated timings, time to steady state.

Every framework gets the same treatment: a callable is called repeatedly for `SETTLE_SECONDS` before any sample is
taken, and, when fluxion is imported in the process, until its background kernel compiler has nothing left to do
(fluxion's first calls run plain NumPy code while the fused kernels compile on a background thread; timing them
would measure a state users leave after a few seconds). Samples are taken after that: `REPEAT` samples of `number`
calls each, where `number` makes one sample last about `target` seconds.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Callable

SETTLE_SECONDS = 2.0   # minimum warm-up time per timed callable, for every framework
SETTLE_CAP = 300.0     # give up waiting for fluxion's background compiler after this long (reported in `info`)
REPEAT = 7             # samples per timed callable (the reported number is their median)
STEADY_FACTOR = 1.2    # "steady": a call within this factor of the steady median


def kernels_idle() -> bool:
    """Whether fluxion's background kernel compiler has no job queued or running, no program it knows is still
    waiting for its first fused tier, and no eager kernel is being compiled (True without fluxion).

    Both are needed: the queue can be empty between a program's first call and the moment its kernels are queued,
    and a row timed then would compare fluxion's NumPy path with itself. A program on its serial tier counts as
    settled (its threaded variants, when it gets any, are queued jobs).
    """
    eager = sys.modules.get("fluxion._src.backends.eager.kernels")
    if eager is not None and eager.compiling():  # the eager kernels (float32 exp/tanh/log, fma, ...) are tiers too
        return False
    compiler = sys.modules.get("fluxion._src.backends.compiler")
    if compiler is None:
        return True
    return bool(compiler.wait_for_kernels(0)) and "pending" not in program_statuses()


def program_statuses() -> list[str]:
    """The tier status of every program fluxion compiled in this process (empty without fluxion), for `info`."""
    runtime = sys.modules.get("fluxion._src.backends.compiler.fusion.runtime")
    return [] if runtime is None else [p["status"] for p in runtime.stats()["programs"]]


def kernel_compiles(since: float) -> dict:
    """What fluxion's kernel compiler did after the `perf_counter` reading `since` (empty without fluxion, or when it
    made no kernel ready): `kernel_cpu_s`, the compiling thread's CPU seconds in all (unlike wall-clock times, not
    inflated by other programs sharing the cores), and `kernel_cpu`, each kernel's CPU seconds in the order they
    were made ready, suffixed `p` for a multi-threaded variant, `w` for a whole-step function, `l` for a load from
    the disk cache."""
    runtime = sys.modules.get("fluxion._src.backends.compiler.fusion.runtime")
    done = [] if runtime is None else [k for k in runtime.stats()["kernels"] if k["ready_at"] >= since]
    if not done:
        return {}
    tags = [f"{k['cpu_seconds']:.3f}" + ("w" if k["whole_step"] else "p" if k["parallel"] else "")
            + ("l" if k["outcome"] == "loaded" else "") for k in done]
    return {"kernel_cpu_s": round(sum(k["cpu_seconds"] for k in done), 3), "kernel_cpu": " ".join(tags)}


def settle(fn: Callable, quick: bool, seconds: float = SETTLE_SECONDS, min_calls: int = 3) -> dict:
    """Calls `fn` until `seconds` have passed, `min_calls` calls were made and fluxion's compiler is idle.

    One call more follows the moment the compiler is found idle, since an executable switches to its fused kernels
    on the call after they are ready. Returns what happened, for the workload's `info`: `settle_s` when settling
    took longer than usual (kernels compiling), and `last_call_s`, the duration of the last call.
    """
    t0 = time.perf_counter()
    calls = 0
    info: dict = {}
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - t0
        if quick and calls >= 2:
            return {}
        if calls >= min_calls and elapsed >= seconds and kernels_idle():
            break
        if elapsed > SETTLE_CAP:
            info["settle"] = "compiler still busy"
            break
    s = time.perf_counter()
    fn()
    e = time.perf_counter()
    if e - t0 > 2 * seconds:
        info["settle_s"] = round(e - t0, 1)
    info["last_call_s"] = e - s
    return info


def timeit(fn: Callable, number: int, repeat: int = REPEAT) -> list[float]:
    """Per-call seconds of `fn`: `repeat` samples, each the mean of `number` back-to-back calls."""
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        out.append((time.perf_counter() - t0) / number)
    return out


def number_for(fn: Callable, target: float) -> int:
    """How many calls of `fn` take about `target` seconds (at least one)."""
    t0 = time.perf_counter()
    fn()
    dt = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(target / dt))


def bench(fn: Callable, quick: bool, target: float = 0.2, repeat: int = REPEAT, min_calls: int = 3) -> dict:
    """Settles `fn`, then returns `{"samples": [...], "info": {...}}` with `repeat` per-call times in seconds."""
    info = settle(fn, quick, min_calls=min_calls)
    last = info.pop("last_call_s", None)
    if quick:
        n = 1
    elif last is not None and last >= target:  # a slow call: one per sample, no probe call
        n = 1
    else:
        n = number_for(fn, target)
    return {"samples": timeit(fn, n, repeat=2 if quick else repeat), "info": info}


def time_to_steady(fn: Callable, quick: bool, after_idle: float = 1.0, cap: float = 120.0) -> dict:
    """Seconds from the first call of `fn` (a jitted function not called yet) until one call runs at steady speed.

    Calls `fn` back to back, recording when each call ends, until fluxion's compiler is idle (JAX: at once) and
    `after_idle` more seconds passed; then takes the steady median (`REPEAT` samples of ~0.2 s). The answer is the
    end time of the first call whose own duration was within `STEADY_FACTOR` of that median. `info` also holds the
    first call's duration (trace + compile + run for JAX; trace + NumPy run for fluxion) and that median.
    """
    t0 = time.perf_counter()
    ends, durations = [], []
    idle_at = None
    while True:
        s = time.perf_counter()
        fn()
        e = time.perf_counter()
        ends.append(e - t0)
        durations.append(e - s)
        if idle_at is None and kernels_idle():
            idle_at = e - t0
        if quick and len(ends) >= 3:
            break
        if idle_at is not None and e - t0 >= idle_at + after_idle and len(ends) >= 5:
            break
        if e - t0 > cap:
            break
    steady = statistics.median(timeit(fn, 1 if quick else number_for(fn, 0.2), repeat=2 if quick else REPEAT))
    first = next((i for i, d in enumerate(durations) if d <= STEADY_FACTOR * steady), None)
    info = {"first_call_s": round(durations[0], 4), "steady_ms": round(steady * 1e3, 4), "calls": len(ends)}
    info.update(kernel_compiles(t0))
    statuses = program_statuses()
    if any(s != "final" for s in statuses):
        info["tiers"] = statuses   # a program without its final tier: the row does not show fluxion's fused speed
    if first is not None:
        return {"samples": [ends[first]], "info": info}
    # No single call of the window was that fast (a loaded machine makes single calls noisy): the clock keeps
    # running through the steady timing above, and further calls are watched until one is.
    while True:
        s = time.perf_counter()
        fn()
        e = time.perf_counter()
        if e - s <= STEADY_FACTOR * steady or quick:
            return {"samples": [e - t0], "info": info}
        if e - t0 > cap:
            info["steady"] = f"no call within {STEADY_FACTOR}x of the steady median in {cap:.0f} s (lower bound)"
            return {"samples": [e - t0], "info": info}

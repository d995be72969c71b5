"""The jit compiler: jaxpr -> IR passes -> fusion and memory planning -> one generated Python function.

Pipeline (see `compile_closed`):

1. `passes.optimize`: inlining, algebraic simplification, constant folding, CSE, DCE (type-checked after every
   pass in debug mode);
2. `fusion.plan_nodes` (if Numba is installed): elementwise chains and the reductions consuming them become single
   kernels, for arrays above a measured size threshold;
3. `codegen.generate`: the program becomes the source of a Python function of NumPy calls and kernel calls, with
   buffers planned by `memory.Planner` (`out=` into dead buffers, in-place updates, donated arguments);
4. `wholestep.build` (tier 2, in the background, once the program has run `fluxion_jit_whole_step_after` seconds
   in total): a straight-line program made only of fusable operations, views and matrix products becomes one Numba
   function, so no Python runs between its operations.

Set `fluxion_jit_compiler` to False (`FLUXION_JIT_COMPILER=0`) to make `jit` interpret jaxprs equation by equation
instead (the reference path), `fluxion_jit_fusion` to False (`FLUXION_JIT_FUSION=0`) to keep the compiler but
never use Numba kernels, and `fluxion_jit_whole_step` to False to stop at the fused tier (see `fluxion._src.config`
for every option).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from ...config import config
from ...core import ClosedJaxpr
from . import codegen, disk_cache, heap, passes, threads  # threads before this module's at-fork hook (see there)


def enabled() -> bool:
    """Whether `jit` compiles (the `fluxion_jit_compiler` option, default on)."""
    return bool(config.fluxion_jit_compiler)


def fusion_enabled() -> bool:
    """Whether `jit` builds the fused tier (`fluxion_jit_fusion`, default on; always in fusion check mode)."""
    from .fusion import check
    if check.enabled():
        return True
    return bool(config.fluxion_jit_fusion)


class Executable:
    """A compiled program: call it with the raw argument buffers; returns a tuple of raw outputs.

    When the program has fused kernels that are not compiled yet, the executable starts with plain NumPy code and
    `upgrade`s itself (and notifies its listeners) once the kernels are ready.

    Attributes:
      optimized: the jaxpr after the IR passes.
      source: the generated Python source (plus the source of any fused kernels).
      compile_seconds: time spent in passes and code generation (first tier).
      tier: 0 for NumPy-only code, 1 once fused kernels are in use, 2 once the whole program runs as one native
        function (`wholestep`).
    """

    __slots__ = ("fn", "optimized", "module", "compile_seconds", "kernels", "tier", "_listeners", "donated",
                 "name", "_hot", "_numpy", "__weakref__")

    def __init__(self, fn: Callable, optimized: ClosedJaxpr, module: codegen.Module, compile_seconds: float,
                 kernels: Sequence[Any] = (), donated: Sequence[int] = (), name: str = "jitted"):
        self.fn = fn
        self.optimized = optimized
        self.module = module
        self.compile_seconds = compile_seconds
        self.kernels = list(kernels)
        self.tier = 0
        self._listeners: list = []
        self.donated = tuple(donated)
        self.name = name
        self._hot: _HotTrigger | None = None
        self._numpy = (fn, module)  # the NumPy-only tier, kept for `_after_fork_without_threads`

    def __call__(self, *args):
        return self.fn(*args)

    def when_hot(self, seconds: float, job: Callable[[], None]) -> None:
        """Runs `job` once the executable has spent `seconds` in total in its calls (on whatever tier it is on).

        Until then every call is timed (two clock reads); afterwards the plain function is back in place."""
        self._hot = _HotTrigger(self, seconds, job)
        self._set_fn(self._hot.wrap(self.fn))

    def add_listener(self, callback: Callable[[Callable], None]) -> None:
        """`callback(fn)` is called with the new function when the executable upgrades to fused kernels."""
        self._listeners.append(callback)

    def upgrade(self, fn: Callable, module: codegen.Module, kernels: Sequence[Any], tier: int = 1) -> None:
        self.module = module
        self.kernels = list(kernels)
        self.tier = tier
        # Whole-step functions fall back on the fused tier's code, so every kernel listed may run.
        if any(getattr(k, "parallel", False) for k in self.kernels):
            _threaded_executables.add(self)
        else:
            _threaded_executables.discard(self)
        hot = self._hot
        self._set_fn(hot.wrap(fn) if hot is not None else fn)

    def _after_fork_without_threads(self) -> None:
        """In a child forked after OpenMP started (`threads.forked_after_openmp`), where this executable's
        multi-threaded kernels must not run: back to the NumPy code, and on the next call a serial fused tier is
        built (its kernels are on disk when the parent compiled its serial tier first, as it does by default)."""
        numpy_fn, module = self._numpy
        self.module, self.kernels, self.tier = module, [], 0
        _threaded_executables.discard(self)
        ref = weakref.ref(self)
        once = threading.Lock()

        def first_call(*args):
            exe = ref()
            if exe is not None and once.acquire(blocking=False):
                hot = exe._hot
                exe._set_fn(hot.wrap(numpy_fn) if hot is not None else numpy_fn)
                from . import fusion
                _fused_tier_soon(exe, fusion.prepare(exe.optimized), disk_cache.key(exe.optimized, exe.donated),
                                 None, exe.name, time.perf_counter())
            return numpy_fn(*args)
        self._set_fn(first_call)

    def _set_fn(self, fn: Callable) -> None:
        self.fn = fn
        for cb in list(self._listeners):
            cb(fn)

    @property
    def source(self) -> str:
        text = self.module.source()
        for k in self.kernels:
            what = "whole-step function" if k.digest.startswith("w") else "fused kernel"
            text += f"\n# ---- {what} k_{k.digest} ({k.status}) ----\n{k.source}"
        return text


# The executables whose current tier may call a multi-threaded kernel (see `Executable.upgrade`).
_threaded_executables: "weakref.WeakSet[Executable]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """See `threads.forked_after_openmp`. Registered after `threads`' own hook (imported above), which sets it."""
    if threads.forked_after_openmp():
        for exe in list(_threaded_executables):
            exe._after_fork_without_threads()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _HotTrigger:
    """Counts the time an executable spends in its calls and fires a job (once) when it passes a budget -- the
    "rent until the cost of buying is spent" rule of tiered compilers: an expensive tier is compiled only for
    programs that have already run about as long as compiling it takes."""

    __slots__ = ("exe", "budget", "spent", "job", "lock", "raw")

    def __init__(self, exe: Executable, budget: float, job: Callable[[], None]):
        self.exe = weakref.ref(exe)
        self.budget = budget
        self.spent = 0.0
        self.job: Callable[[], None] | None = job
        self.lock = threading.Lock()
        self.raw: Callable | None = None

    def wrap(self, fn: Callable) -> Callable:
        self.raw = fn
        clock = time.perf_counter

        def timed(*args):
            t0 = clock()
            out = fn(*args)
            # Unlocked: a lost update between threads only delays the job by one call's time.
            self.spent += clock() - t0
            if self.spent >= self.budget:
                self.fire()
            return out
        return timed

    def fire(self) -> None:
        with self.lock:
            job, self.job = self.job, None
        exe = self.exe()
        if job is None or exe is None:
            return
        if exe._hot is self:
            exe._hot = None
            exe._set_fn(self.raw)
        job()


def _fused_tier(exe: Executable, program: ClosedJaxpr, cache_key: str | None = None,
                record: Any = None, allow_parallel: bool = True) -> bool:
    """Generates the fused version of `exe` from `program` (`exe.optimized` after `fusion.prepare`), compiling or
    loading its kernels (blocking), and switches to it.

    With `allow_parallel` False every kernel is serial (quicker to compile); the result then tells whether a later
    tier with multi-threaded variants is worth compiling (some kernel would use threads and threads can run). A later
    tier replaces the code only if all its kernels compiled. `record` (a `runtime.TierRecord`) receives the timings.
    """
    from . import fusion
    if exe.tier >= 2:  # the whole-step function is in place: a fused tier would be slower
        return False
    precompiled: list = []  # held until the planner below has loaded them (the kernel table holds them weakly)
    if fusion.runtime.compile_processes() and not fusion.check.enabled():
        # Which kernels the tier needs (generating code without loading any takes milliseconds), so that helper
        # processes compile them while this thread compiles its share.
        wanted: list = []
        dry = fusion.Planner(wanted, load=False, allow_parallel=allow_parallel)
        codegen.generate(program, name=exe.name, donated=exe.donated, plan_nodes=dry.plan_nodes,
                         loop_kernel=dry.scan_kernel)
        before = record.counters() if record is not None else None
        precompiled = fusion.runtime.precompile(wanted)
        if record is not None:
            record.add(before)
    kernels: list = []
    planner = fusion.Planner(kernels, load=True, allow_parallel=allow_parallel)
    before = record.counters() if record is not None else None
    fn, module = codegen.generate(program, name=exe.name, donated=exe.donated,
                                  plan_nodes=planner.plan_nodes, loop_kernel=planner.scan_kernel)
    if record is not None:
        record.add(before)
    del precompiled
    later = planner.deferred_parallel and fusion.parallel_possible()
    compiled = [k for k in kernels if k.status == "compiled"]
    if compiled and (exe.tier == 0 or len(compiled) == len(kernels)):
        exe.upgrade(fn, module, kernels)
        if record is not None:
            record.reached(len({k.digest for k in compiled}), final=not later)
        if cache_key is not None and not fusion.check.enabled():
            # A serial tier the final one will replace is recorded apart: a warm start loads it, then compiles
            # the threaded variants in the background as this process does.
            disk_cache.store(disk_cache.serial_key(cache_key) if planner.deferred_parallel else cache_key, exe)
        return later
    if exe.tier == 0:
        exe.kernels = kernels
        if record is not None:
            record.failed()
    elif record is not None:  # the threaded variants failed: the serial tier stays, and is final
        record.reached(len({k.digest for k in exe.kernels if k.status == "compiled"}), final=True)
    return False


def _whole_step_tier(exe: Executable, program: ClosedJaxpr, cache_key: str | None = None,
                     fused_fallback: bool = False, forced: bool = False) -> None:
    """Compiles (or loads) `program` as one native function and switches `exe` to it. Programs the lowering does
    not support, that fail to compile, or whose threaded kernels would be faster (`threads_beat_whole_step`, unless
    `forced`), keep their current tier -- or get the fused tier now with `fused_fallback`."""
    from . import wholestep
    from .fusion import runtime
    if not forced and threads_beat_whole_step(program):
        if fused_fallback:
            _fused_fallback(exe, program, cache_key)
        return
    try:
        spec = wholestep.build(program)
    except wholestep.Unsupported:
        if fused_fallback:
            _fused_fallback(exe, program, cache_key)
        return
    try:
        native = runtime.load_kernel(spec.digest, spec.source)
    except RuntimeError as err:
        spec.status = f"failed: {err}"
        if fused_fallback:
            _fused_fallback(exe, program, cache_key)
        return
    spec.status = "compiled"
    fn = wholestep.entry_function(native, spec.consts, exe.fn, program)
    exe.upgrade(fn, exe.module, [*exe.kernels, spec], tier=2)
    if cache_key is not None:
        disk_cache.store(cache_key, exe)


# What the whole-step tier saves per node of the fused tier's code (a NumPy call or kernel call it no longer makes
# from Python: "a microsecond or more" each, see `wholestep`; taken high, so that the whole-step tier is kept when in
# doubt), and what a serial fused kernel spends per element-operation (3.2e-11 s: `x * 2 + 1` over 128K float32
# took 8.5 us, see `fusion`; the selu of 1e6 float32, 7 operations, 0.35 ms serial).
WHOLE_STEP_NODE_SECONDS = 2e-6
KERNEL_ELEMENT_OP_SECONDS = 3e-11


def threads_beat_whole_step(program: ClosedJaxpr) -> bool:
    """Whether the fused tier's multi-threaded kernels would save more time per call than the whole-step tier,
    which is serial, would (so the program keeps its fused tier).

    The whole-step function saves the Python dispatch of every node; threads save the fraction (1 - 1/n) of the
    work of the kernels that use them, on n = `threads.ceiling()` cores. Only programs without multi-threaded BLAS
    calls have threaded kernels (see `fusion.Planner`), and only where threads can run (`fusion.parallel_possible`),
    so in practice this keeps the fused tier for a few large elementwise or reduction kernels (a selu over 1e6
    elements: the whole-step tier ran it on one core while the other stayed idle) and the whole-step tier for
    programs of many small operations (a training step)."""
    from . import fusion, threads
    if not fusion.parallel_possible() or threads.multithreaded_blas(program):  # the latter's kernels are serial
        return False
    planner = fusion.Planner(load=False, allow_parallel=True)
    pairs, _ = planner.specs(program)
    work = sum(int(np.prod(g.domain, dtype=np.int64)) * len(g.members) for g, spec in pairs if spec.parallel)
    if not work:
        return False
    nodes = len(program.jaxpr.eqns) - sum(len(g.members) - 1 for g, _ in pairs)
    n = threads.ceiling()
    return work * KERNEL_ELEMENT_OP_SECONDS * (1 - 1 / n) > nodes * WHOLE_STEP_NODE_SECONDS


def _fused_fallback(exe: Executable, program: ClosedJaxpr, cache_key: str | None) -> None:
    """The fused tier for a program the whole-step tier could not take (on the background thread): serial kernels
    now, threaded variants later, as `_fused_tier_soon` schedules them."""
    from .fusion import runtime
    record = runtime.TierRecord(exe.name, time.perf_counter())
    if _fused_tier(exe, program, cache_key, record, allow_parallel=False):
        runtime.submit(_background_job(exe, program, cache_key, record, True), runtime.LATER_TIER)


def compile_closed(closed: ClosedJaxpr, *, name: str = "jitted", donated: Sequence[int] = (),
                   optimize: bool = True, fuse: bool | None = None, sync: bool | None = None,
                   whole_step: bool | None = None) -> Executable:
    """Compiles a closed jaxpr into an `Executable`.

    Args:
      closed: the program (constants included).
      name: a name hint for the generated function.
      donated: indices of inputs whose buffers may be overwritten (from `donate_argnums`).
      optimize: run the IR passes (tests turn this off to test code generation alone).
      fuse: use fused Numba kernels (default: when Numba is installed and `fluxion_jit_fusion` is on).
      sync: compile kernels before returning (default: `fluxion_jit_sync_kernels`, else in the background).
      whole_step: build the whole-step tier (`wholestep`) in the background after the fused tier, once the
        program has run `fluxion_jit_whole_step_after` seconds (at once with `sync`); default: when
        `fluxion_jit_whole_step` is on and the program has fused kernels. True builds it for any program the
        lowering supports (tests), even one `threads_beat_whole_step` would leave on the fused tier; False never.

    Returns:
      The executable; `executable(*raw_args)` returns a tuple of raw outputs.
    """
    t0 = time.perf_counter()
    heap.retain_freed_memory()
    opt = passes.optimize(closed) if optimize else closed
    fn, module = codegen.generate(opt, name=name, donated=donated)
    exe = Executable(fn, opt, module, time.perf_counter() - t0, donated=donated, name=name)
    if fuse is None:
        fuse = fusion_enabled()
    if fuse:
        from . import fusion
        program = fusion.prepare(opt) if fusion.available() else None
        needs = program is not None and fusion.needs_kernels(program)
        from . import wholestep
        want_whole = program is not None and (whole_step if whole_step is not None
                                              else needs and wholestep.enabled())
        if want_whole:
            key = disk_cache.key(opt, donated)
            if disk_cache.warm(key, whole_step=True) and fusion.runtime.numba_ready():
                # On disk it loads in milliseconds: in place from the first call.
                _whole_step_tier(exe, program, key, fused_fallback=needs, forced=whole_step is True)
            elif needs and (sync or (sync is None and fusion.runtime.sync_kernels()) or fusion.check.enabled()):
                _fused_tier_soon(exe, program, key, True, name, t0)
                fusion.runtime.submit(_whole_step_job(exe, program, key, False, whole_step is True),
                                      fusion.runtime.LATER_TIER)
            else:
                # The fused tier first (it arrives in about a second); the whole-step function, whose compilation
                # costs several seconds of CPU and holds the interpreter lock much of that time, only once the
                # program has run for `fluxion_jit_whole_step_after` seconds in total -- a short run (the README's
                # MNIST example) would pay for it and never win it back.
                if needs:
                    _fused_tier_soon(exe, program, key, sync, name, t0)
                job = _whole_step_job(exe, program, key, False, whole_step is True)
                after = 0.0 if whole_step else float(config.fluxion_jit_whole_step_after)  # asked for: at once
                if after <= 0:
                    fusion.runtime.submit(job, fusion.runtime.LATER_TIER if needs else fusion.runtime.FIRST_TIER)
                else:
                    exe.when_hot(after, lambda: fusion.runtime.submit(job, fusion.runtime.LATER_TIER))
        elif needs:
            _fused_tier_soon(exe, program, disk_cache.key(opt, donated), sync, name, t0)
    return exe


def _fused_tier_soon(exe: Executable, program: ClosedJaxpr, key: str, sync: bool | None, name: str,
                     t0: float) -> None:
    """Builds the fused tier now (`sync`, check mode, or kernels on disk) or on the background thread."""
    from . import fusion
    record = fusion.runtime.TierRecord(name, t0)
    if fusion.check.enabled():
        sync = True  # checked kernels run from the first call
    start = "final" if sync else None
    if sync is None:
        # Kernels already on disk load in milliseconds once Numba is imported: then there is no reason
        # to start on the NumPy path (importing Numba itself, ~0.5 s, is never done on the caller's time).
        if fusion.runtime.sync_kernels():
            start = "final"
        elif fusion.runtime.numba_ready():
            start = "final" if disk_cache.warm(key) else \
                "serial" if disk_cache.warm(disk_cache.serial_key(key)) else None
    if start == "final":
        _fused_tier(exe, program, key, record)
    elif start == "serial":
        if _fused_tier(exe, program, key, record, allow_parallel=False):
            fusion.runtime.submit(_background_job(exe, program, key, record, True), fusion.runtime.LATER_TIER)
    else:
        fusion.runtime.submit(_background_job(exe, program, key, record, False))


def _whole_step_job(exe: Executable, program: ClosedJaxpr, key: str, fused_fallback: bool,
                    forced: bool = False) -> Callable[[], None]:
    """The background compilation of `exe`'s whole-step tier (holding the executable weakly, as `_background_job`)."""
    ref = weakref.ref(exe)

    def job() -> None:
        target = ref()
        if target is not None:
            _whole_step_tier(target, program, key, fused_fallback=fused_fallback, forced=forced)
    return job


def _background_job(exe: Executable, program: ClosedJaxpr, key: str, record: Any,
                    allow_parallel: bool) -> Callable[[], None]:
    """The background compilation of `exe`'s fused tier: serial kernels first (`allow_parallel` False), then, as a
    job of lower priority, the tier with threaded variants if it is worth having (see `_fused_tier`). It holds the
    executable weakly: if the caches that own it are cleared before the job runs, nothing is compiled for it."""
    from .fusion import runtime
    ref = weakref.ref(exe)

    def job() -> None:
        target = ref()
        if target is not None and _fused_tier(target, program, key, record, allow_parallel):
            runtime.submit(_background_job(target, program, key, record, True), runtime.LATER_TIER)
    return job


def prewarm() -> None:
    """Starts Numba's one-time set-up on the background compiler thread if `jit` will build fused tiers (compiler
    and fusion on, Numba installed) and `fluxion_jit_prewarm` is on; once per process, non-blocking (see
    `fusion.runtime.prewarm`)."""
    if config.fluxion_jit_prewarm and enabled() and fusion_enabled():
        from .fusion import runtime
        runtime.prewarm()


def wait_for_kernels(timeout: float | None = None) -> bool:
    """Blocks until every fused kernel submitted for background compilation is ready (True) or `timeout`
    seconds passed (False). Benchmarks and tests use it to measure or check the fused code."""
    from .fusion import runtime
    return runtime.wait_for_kernels(timeout)


def release_kernels() -> None:
    """Forgets the compiled fused kernels (each is freed once no executable uses it) and drops the background
    compilations not started yet (see `fusion.runtime.release_kernels`)."""
    from .fusion import runtime
    runtime.release_kernels()


__all__ = ["compile_closed", "Executable", "enabled", "fusion_enabled", "wait_for_kernels", "release_kernels"]

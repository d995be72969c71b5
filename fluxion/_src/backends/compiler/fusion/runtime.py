"""Loading fused kernels: the on-disk cache, Numba, and the background compiler thread.

The cache directory is `fluxion_cache_dir` (`FLUXION_CACHE_DIR`), else `jax_compilation_cache_dir` if set, else
`~/.cache/fluxion`. It holds:

* `kernels/k_<hash>.py`: the generated source of each fused kernel (the name is the hash of the text);
* `kernels/__pycache__/k_<hash>.*.nbi` and `.nbc`: Numba's cache of the machine code compiled from it (`cache=True`),
  so a second process loads kernels in milliseconds instead of compiling them for about a second each. Numba writes
  and reads these files itself, and its index files (`.nbi`) are pickles: whoever can write them can make this
  process run arbitrary code;
* `executables/<key>.json`: a record per compiled program (its generated source and the kernels it uses; see
  `compiler.disk_cache`), read with `json` only.

So the directory must be private: it is created with mode 0o700, and a directory (or `kernels` subdirectory) owned by
another user or writable by group or others is not used -- a warning says so once, and kernels are compiled in
memory (`cachedir.usable_dir`). Every kernel is executed from the source in memory: before Numba loads a kernel, its
file is compared with that source and rewritten atomically (with Numba's files for it deleted) if it differs, so an
edited or truncated file never runs and never serves stale machine code. A load that fails anyway (a damaged Numba
index or data file) deletes that kernel's files and compiles it once more before giving up. Temporary files older
than an hour are removed, and the cache is kept under `fluxion_cache_max_bytes` (default 512 MB) by deleting the
least recently used kernels (`cachedir.maintain`). To clear the cache, delete the directory (or its `kernels` and
`executables` subdirectories) while no fluxion process is compiling; it is rebuilt on demand. With
`NUMBA_CACHE_DIR` set, Numba keeps its files there instead, outside this module's care.

Numba is imported lazily and, by default, kernels are compiled on a background thread: the first call of a jitted
function runs the plain NumPy code at once, and the executable switches to the fused code when its kernels are
ready (`fluxion_jit_sync_kernels`, `FLUXION_JIT_SYNC_KERNELS=1`, compiles them before the first call instead).
How soon that is (the "time to tier", reported per program by `stats()`) is what this module and
`compiler._fused_tier` try to shorten, from what was measured on the 2-core benchmark machine with a cold cache:

* Numba's fixed costs come first: importing it takes 0.5-0.9 s and setting it up (its typing and lowering
  registries, LLVM) another 0.7-1.2 s, needed by a load from the disk cache as much as by a compilation, so a
  one-kernel program would wait 1.5-2.5 s in all. `prewarm` (started by `jit` when it wraps a user's function,
  `fluxion_jit_prewarm`) pays them on the background thread ahead of the first call, in the time programs spend
  between decorating a function and calling it;
* a serial kernel then takes 0.3-1.3 s (typing, lowering and LLVM in roughly equal parts), a multi-threaded one
  1.3-2.2 s (Numba's parfor passes add 1.1-1.4 s). In CPU time of the compiling thread (`stats()["kernels"]`,
  which machine load does not inflate), the standardization's kernels took 0.61-0.72 s (its first column sum:
  0.25 s typing, of which ~0.2 s is Numba typing `np.empty`, `min`/`max`, stepped ranges and slices for the first
  time, 0.22 s lowering, 0.23 s LLVM), 0.12-0.20 s (the elementwise kernel: about Numba's fixed cost per kernel)
  and 0.43-0.55 s (the column sum of squares); their multi-threaded variants 1.4-1.7, 0.48-0.62 and 1.2-1.7 s.
  Rewriting the reduction's source with the same arithmetic (no window slices, hoisted loads, one-row block
  partials), `NUMBA_OPT` 1 or 2, `no_cfunc_wrapper` or disabling the parfor passes the kernels do not use each
  changed these by under 5%: the cost is Numba's pipeline per kernel, not the size of the text. So a program's
  first fused tier uses serial kernels only, and the
  threaded variants follow as a job of lower priority (`LATER_TIER`: the first tiers of programs compiled meanwhile
  go first), only where more than one thread can run (`fusion.parallel_possible`);
* Numba compiles one kernel at a time (a process-wide lock) and holds the GIL for most of it, slowing the caller's
  NumPy code, so with `fluxion_compile_processes` set a program needing at least `PROCESS_MIN_KERNELS` new kernels
  shares them with helper processes (`precompile`, `compile_worker`) that write them to the disk cache, from where
  they load in milliseconds. It is off by default: a helper first spends about as long starting (importing NumPy
  and Numba, Numba's set-up) as the thread needs for three kernels, and on the loaded 2-core benchmark machine (no
  idle core, the helper allowed anyway) the MLP step's five kernels took 5.5-5.7 s to its tier without a helper and
  7.8-10.0 s with one (one run of three the other way round, 18.7 against 15.5 s);
* on a warm cache the kernels load in 10-30 ms each once Numba is set up: a program whose kernels are all on disk
  gets its fused tier before its first call returns when Numba is ready (`numba_ready`: the prewarm has finished,
  or an earlier program loaded kernels), else as soon as the background thread has set Numba up.

In memory, a kernel lives as long as an executable uses it: the table of loaded kernels holds them weakly, and
`release_kernels` (called by `fluxion.clear_caches()`) empties it, forgets failures and drops the background
compilations not started yet. Numba keeps a compiled kernel's machine code in its LLVM engine for the life of the
process (it never unloads code); what a released kernel frees is its dispatcher and the compiler's records behind it.
`stats()` counts kernel loads and Numba compilations and records each program's time to its fused tier and each
kernel's compile or load time (wall clock and CPU), for tests, benchmarks and users.
"""

from __future__ import annotations

import collections
import importlib.util
import itertools
import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
import types
import weakref
from typing import Any, Callable, Sequence

from ....config import config, set_default_environment
from .. import sources
from . import cachedir, numba_pool

logger = logging.getLogger("fluxion.jit")

# Held while a kernel loads or compiles (seconds): one load at a time. Re-entrant so that a fork from the thread
# holding it (see `_before_fork`) does not wait for itself.
_lock = threading.RLock()
# Held by `prewarm` while it imports Numba and sets it up: a fork waits for it (see `_before_fork`).
_setup_lock = threading.RLock()
# Guards the records `stats()` returns, apart from `_lock` so that reading them never waits for a compilation.
_records_lock = threading.Lock()
# digest -> Numba dispatcher, for as long as some executable (or caller) holds the dispatcher.
_loaded: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()
_failed: dict = {}            # digest -> error message
_numba_ok: bool | None = None
_numba_loaded = False         # set once a kernel has been loaded (Numba is then fully imported)
_numba_ready = threading.Event()  # set once `prewarm` has imported Numba and compiled its first function
_prewarm_submitted = False
_warming = threading.Event()      # set while `prewarm`'s warm-up compilation runs
_generation = 0               # incremented by `release_kernels`: background jobs submitted earlier are dropped
_stats = {"loads": 0, "compiles": 0, "process_compiles": 0}


def numba_installed() -> bool:
    """Whether Numba can be imported (checked without importing it, which takes about half a second)."""
    global _numba_ok
    if _numba_ok is None:
        try:
            _numba_ok = importlib.util.find_spec("numba") is not None
        except (ImportError, ValueError):
            _numba_ok = False
    return _numba_ok


def sync_kernels() -> bool:
    """Whether kernels are compiled before the first call (`fluxion_jit_sync_kernels`)."""
    return bool(config.fluxion_jit_sync_kernels)


def kernel_path(digest: str) -> str | None:
    """Where kernel `digest` is cached, or None when the cache directory is not usable (not private)."""
    root = cachedir.usable_dir()
    return None if root is None else cachedir.kernel_file(root, digest)


def _execute(source: str, digest: str, filename: str, cached: bool) -> Any:
    """Runs a kernel module's source (the text in memory, never the file's) and returns its `kernel` function.

    With `cached`, the functions are compiled with their code attributed to `filename` (the verified copy of the
    source on disk), which is what Numba's cache keys on; otherwise Numba's cache is switched off in the text."""
    if not cached:
        marker = ", cache=True,"
        if marker not in source:
            raise RuntimeError(f"kernel {digest} does not use Numba's cache as expected")
        source = source.replace(marker, ", cache=False,", 1)
        # Registered so tracebacks and Numba's error messages show the kernel's lines.
        sources.register(filename, source)
    name = _module_name(digest)
    mod = types.ModuleType(name)
    mod.__file__ = filename
    sys.modules[name] = mod
    exec(compile(source, filename, "exec"), mod.__dict__)  # noqa: S102 -- source generated by the compiler
    # Numba registers every compiled function in its process-wide target context, and that registration reaches
    # the module's globals (the function's environment): a global naming the dispatcher would keep it alive forever.
    # The kernel never refers to itself, so the name is removed and the dispatcher lives as long as its users.
    return mod.__dict__.pop("kernel")


def _module_name(digest: str) -> str:
    return f"fluxion_kernel_{digest}"


def _count(fn: Any, cached: bool) -> None:
    """Counts a load, and a compilation unless Numba served the machine code from its disk cache."""
    _stats["loads"] += 1
    stats = getattr(fn, "stats", None)
    if not cached or stats is None or sum(stats.cache_misses.values()) or not sum(stats.cache_hits.values()):
        _stats["compiles"] += 1


def _load(digest: str, source: str) -> Any:
    root = cachedir.usable_dir()
    if root is None:
        fn = _execute(source, digest, f"<fluxion kernel {digest}>", cached=False)
        _count(fn, cached=False)
        return fn
    path = cachedir.kernel_file(root, digest)
    written = cachedir.ensure_source(root, digest, source)
    try:
        fn = _execute(source, digest, path, cached=True)
    except Exception as err:  # noqa: BLE001 -- e.g. a truncated or garbled Numba index: repair once
        logger.info("fused kernel %s failed to load from the cache (%s: %s); recompiling it", digest,
                    type(err).__name__, err)
        cachedir.purge(root, digest, source_too=True)
        cachedir.write_atomic(path, source)
        written = True
        fn = _execute(source, digest, path, cached=True)
    _count(fn, cached=True)
    cachedir.touch(root, digest)
    if written:
        cachedir.maintain(root)
    return fn


def load_kernel(digest: str, source: str) -> Any:
    """The compiled kernel for `source` (from memory, the disk cache, or compiled now). Blocks.

    Raises:
      RuntimeError: Numba failed to compile the kernel (the error is remembered; the NumPy path is used).
    """
    # Idle OpenMP threads spin only briefly (GNU OpenMP's default is 300,000 iterations, about a millisecond) before
    # sleeping: long enough to stay awake between back-to-back calls, short enough not to hold a core that BLAS's
    # threads or another program need next (measured on 2 cores: a jitted selu alternating with a jitted matmul,
    # both on two threads, took 8.4 ms per pair with the default and 0.42 ms with 1,000 while the other core was
    # busy; back-to-back selu calls ran equally fast either way). Set only if the user has not chosen, and only
    # before Numba starts OpenMP.
    set_default_environment("GOMP_SPINCOUNT", "1000")
    with _lock:
        hit = _loaded.get(digest)
        if hit is not None:
            return hit
        if digest in _failed:
            raise RuntimeError(_failed[digest])
        # NUMBA_NUM_THREADS changed after Numba started its threads: adopt a lower value, or warn once and raise
        # (not remembered as this kernel's failure: restoring the variable lets it compile).
        numba_pool.reconcile()
        compiles, t, cpu = _stats["compiles"], time.perf_counter(), time.thread_time()
        try:
            fn = _load(digest, source)
        except Exception as err:  # noqa: BLE001 -- any Numba failure falls back to NumPy
            msg = f"fused kernel {digest} failed to compile: {type(err).__name__}: {err}"
            _failed[digest] = msg
            _record_kernel(digest, source, "failed", t, cpu)
            logger.warning("%s; using the NumPy path", msg)
            raise RuntimeError(msg) from err
        _record_kernel(digest, source, "compiled" if _stats["compiles"] > compiles else "loaded", t, cpu)
        global _numba_loaded
        _loaded[digest] = fn
        _numba_loaded = True
        return fn


# Records of the kernels made ready (see `stats`), newest last.
MAX_KERNEL_RECORDS = 256
_kernels: "collections.deque[dict]" = collections.deque(maxlen=MAX_KERNEL_RECORDS)


def _record_kernel(digest: str, source: str, outcome: str, t: float, cpu: float) -> None:
    """Appends a `stats()["kernels"]` record for kernel `digest`, made ready (or failed) since the `perf_counter`
    reading `t` and the calling thread's `thread_time` reading `cpu`. Called under `_lock`."""
    now = time.perf_counter()
    record = {"digest": digest, "whole_step": digest.startswith("w"), "parallel": ", parallel=True," in source,
              "source_chars": len(source), "outcome": outcome, "seconds": round(now - t, 6),
              "cpu_seconds": round(time.thread_time() - cpu, 6), "ready_at": now}
    with _records_lock:
        _kernels.append(record)


# Programs with fewer kernels to compile than this compile them on the background thread alone: a helper process
# spends about as long starting (Python, NumPy and Numba imports, Numba's first-compile set-up: ~1.5 s on the
# benchmark machine, against 0.3-0.5 s per serial kernel) as the thread needs for the first few kernels.
PROCESS_MIN_KERNELS = 3
# A helper still busy this long after the calling thread finished its share is stopped (a kernel compiles in
# seconds; this only guards against a hung process keeping the fused tier away forever).
HELPER_TIMEOUT_SECONDS = 300
WORKER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compile_worker.py")


def compile_processes() -> int:
    """How many helper processes may compile a program's kernels now: `fluxion_compile_processes`, but never more
    than the cores this process may use beside its own (`threads.current()`, which counts the cores other programs
    leave idle and obeys `fluxion_num_threads` and the thread-limit variables). On a busy machine a helper would only
    add its start-up (about 1.5 s of CPU) to the work the cores share, and a process pinned to one thread is meant to
    use one core."""
    from .. import threads
    return min(int(config.fluxion_compile_processes), threads.current() - 1)


def precompile(specs: Sequence[Any]) -> list:
    """Makes the disk cache hold the machine code of the kernels among `specs` (objects with `digest` and `source`)
    that are neither loaded nor on disk, so that `load_kernel` then only loads them. Blocks.

    The kernels are shared between helper processes (`compile_worker`), which take them from the front of the list,
    and the calling thread, which compiles from the back (and so loads those into memory too). Best effort: without
    a usable cache directory, with fewer than `PROCESS_MIN_KERNELS` kernels to compile or no helper allowed
    (`compile_processes`), it does nothing; a kernel a helper failed to compile is compiled again by `load_kernel`.
    Returns the kernels the calling thread loaded: the caller holds them until it has loaded the rest (the table of
    loaded kernels holds them only weakly).
    """
    root = cachedir.usable_dir()
    if root is None or compile_processes() < 1:
        return []
    todo: dict = {}
    for spec in specs:
        if spec.digest not in todo and spec.digest not in _loaded and spec.digest not in _failed:
            todo[spec.digest] = spec
    on_disk = cachedir.with_machine_code(root, todo)
    todo = {d: sp for d, sp in todo.items() if d not in on_disk}
    if len(todo) < PROCESS_MIN_KERNELS:
        return []
    for digest, spec in todo.items():
        cachedir.ensure_source(root, digest, spec.source)
    pending = collections.deque(todo.values())
    take = threading.Lock()
    helpers = [_Helper(root, pending, take) for _ in range(min(compile_processes(), len(todo) - 1))]
    helpers = [h for h in helpers if h.start()]
    if not helpers:
        return []
    loaded = []
    while True:
        with take:
            spec = pending.pop() if pending else None
        if spec is None:
            break
        try:
            loaded.append(load_kernel(spec.digest, spec.source))
        except RuntimeError:
            pass  # remembered in `_failed`; the caller's planning reports it
    deadline = time.monotonic() + HELPER_TIMEOUT_SECONDS
    for h in helpers:
        h.thread.join(max(deadline - time.monotonic(), 0.0))
        if h.thread.is_alive():  # stuck: stopped; its kernels are compiled when loaded
            logger.warning("fluxion: a kernel compile process took over %d s; stopping it", HELPER_TIMEOUT_SECONDS)
            h.proc.kill()
            h.thread.join()
    _stats["process_compiles"] += sum(h.compiled for h in helpers)
    return loaded


class _Helper:
    """One helper process and the thread feeding it kernels one at a time from the shared `pending` deque."""

    def __init__(self, root: str, pending: "collections.deque", take: threading.Lock):
        self.root = root
        self.pending = pending
        self.take = take
        self.compiled = 0
        self.proc = None
        self.thread = threading.Thread(target=self._feed, name="fluxion-kernel-helper", daemon=True)

    def start(self) -> bool:
        try:
            self.proc = subprocess.Popen([sys.executable, WORKER_SCRIPT], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                         encoding="utf-8", env=dict(os.environ))
        except OSError as err:
            logger.info("fluxion: no kernel compile process (%s); compiling on the background thread", err)
            return False
        self.thread.start()
        return True

    def _feed(self) -> None:
        proc = self.proc
        try:
            while True:
                with self.take:
                    spec = self.pending.popleft() if self.pending else None
                if spec is None:
                    break
                job = {"digest": spec.digest, "path": cachedir.kernel_file(self.root, spec.digest),
                       "source": spec.source}
                proc.stdin.write(json.dumps(job) + "\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
                if not line:
                    break  # the process died: the kernel is compiled when loaded
                reply = json.loads(line)
                if reply.get("ok"):
                    self.compiled += 1
                else:
                    logger.info("fluxion: kernel compile process failed on %s: %s", spec.digest, reply.get("error"))
        except (OSError, ValueError) as err:
            logger.info("fluxion: kernel compile process stopped (%s)", err)
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def is_loaded(digest: str) -> bool:
    return digest in _loaded


def loaded_numba() -> Any:
    """The `numba` module once a kernel has been loaded or `prewarm` has finished (so Numba is fully imported),
    else None. While the background thread is still importing Numba, `sys.modules` holds a half-initialized
    module."""
    return sys.modules.get("numba") if _numba_loaded or _numba_ready.is_set() else None


def numba_ready() -> bool:
    """Whether a kernel whose machine code is on disk loads in milliseconds now: Numba is imported and set up
    (`prewarm` finished, or a kernel was loaded; or Numba was imported by someone else while no prewarm of ours is
    under way), and `prewarm`'s warm-up compilation is not running (it holds Numba's compiler lock for a second or
    so). Checking `sys.modules` alone is not enough: while the background thread imports Numba the module is there,
    half-initialized, and a caller loading a kernel would wait for that import and Numba's set-up (1.5-2.5 s)."""
    if _warming.is_set():
        return False
    if _numba_loaded or _numba_ready.is_set():
        return True
    return not _prewarm_submitted and "numba" in sys.modules


def prewarm() -> None:
    """Starts paying Numba's one-time costs on the background compiler thread, once per process: importing Numba,
    installing its registries and setting up LLVM (`warmup.set_up`), ahead of any program's kernels. Non-blocking.

    `jit` calls it when it wraps a function (fusion on, Numba installed), so the time between decorating a function
    and calling it -- loading data, initializing parameters -- absorbs the 1.5-3 s of CPU the first fused kernel
    would otherwise wait for, whether it is compiled or loaded from the disk cache. It runs before every compile job
    (priority `PREWARM`). A second step (`warmup.check`: compiling a reduction-shaped function, so that Numba's
    implementations of `np.empty`, `min`/`max`, stepped ranges and 2-D slices are typed before the first real kernel
    needs them) is queued after the programs' first tiers (`WARM_UP`), and skipped once a kernel has been loaded or
    when the disk cache holds machine code (programs that load their kernels need no typing: it would only hold
    Numba's compiler lock when a first call wants to load them). Nothing is written to the kernel cache."""
    global _prewarm_submitted
    if _prewarm_submitted or not numba_installed():
        return
    with _lock:
        if _prewarm_submitted:
            return
        _prewarm_submitted = True
    submit(_prewarm_job, PREWARM)


def _cache_holds_machine_code() -> bool:
    """Whether the kernel cache holds any kernel's machine code: then this user's programs mostly load their kernels
    (which needs no typing), and the warm-up compilation would only hold Numba's lock when a first call wants to
    load them."""
    root = cachedir.usable_dir()
    if root is None:
        return False
    try:
        with os.scandir(os.path.join(cachedir.kernels_dir(root), "__pycache__")) as entries:
            return any(e.name.endswith(".nbi") for e in entries)
    except OSError:
        return False


def _prewarm_job() -> None:
    try:
        with _setup_lock:
            from . import warmup
            warmup.set_up()
    except Exception as err:  # noqa: BLE001 -- a broken Numba: each kernel then fails (and says so) on its own
        logger.info("fluxion: Numba's warm-up failed (%s: %s)", type(err).__name__, err)
        return
    _numba_ready.set()
    submit(_warm_up_job, WARM_UP)


def _warm_up_job() -> None:
    if _stats["loads"] == 0 and not _cache_holds_machine_code():
        from . import warmup
        _warming.set()
        try:
            warmup.check()
        finally:
            _warming.clear()


def stats() -> dict:
    """What the fused tier has done since the process started (for tests, benchmarks and users who wonder when their
    function got fast):

    * `loads`: kernels made ready for use (compiled by Numba or loaded from its disk cache);
    * `compiles`: those Numba compiled in this process (no usable machine code on disk). A kernel already in memory
      counts neither;
    * `process_compiles`: kernels helper processes compiled into the disk cache (`precompile`; each is then counted
      as a load here);
    * `programs`: one record per compiled program that needs kernels, oldest first (the last `MAX_PROGRAM_RECORDS`),
      a dict with `function` (the jitted function's name), `kernels` (how many its fused tier uses), `loads` and
      `compiles` (as above, for this program's tiers; `compiles` includes the helper processes'), `seconds_to_tier`
      (from the start of its compilation -- the first call with these argument types, after tracing -- until its
      fused kernels ran in place of the NumPy code; None while pending or if no kernel could be compiled) and
      `seconds_to_final` (until the final tier, the one with multi-threaded kernel variants where the program has
      them; equal to `seconds_to_tier` otherwise),
      `kernel_seconds` (time spent making its kernels ready), `status` (`"pending"`, `"serial"` while the
      multi-threaded variants are still being compiled, `"final"`, or `"failed"`), and the `time.perf_counter()`
      readings `started`, `tier_at` and `final_at` (None until reached), so that a caller who noted the clock before
      its first call (tracing included) can tell its own time to tier. `kernel_cpu_seconds` is the CPU time of the
      thread that made them ready (`time.thread_time`): unlike the wall-clock seconds it does not grow when other
      programs share the cores, so it tells what compiling the tier costs on a loaded machine (helper processes'
      CPU time is not included);
    * `kernels`: one record per kernel made ready or failed (the last `MAX_KERNEL_RECORDS`, oldest first), a dict
      with `digest`, `whole_step` (a whole-step function rather than a fused kernel), `parallel` (a multi-threaded
      variant), `source_chars` (the length of its generated source), `outcome` (`"compiled"` by Numba in this
      process, `"loaded"` from the disk cache's machine code, or `"failed"`), and `seconds` and `cpu_seconds` (wall
      clock and calling thread's CPU time of that load or compilation), and `ready_at`, the `time.perf_counter()`
      reading when it was done. A kernel found in memory adds no record.

    The records are copies: later progress shows in the next call's result."""
    with _records_lock:
        programs = [dict(r) for r in _programs]
        kernels = [dict(r) for r in _kernels]
    return {**_stats, "programs": programs, "kernels": kernels}


# Records of the programs' tiers (see `stats`).
MAX_PROGRAM_RECORDS = 256
_programs: list = []


class TierRecord:
    """Tracks one program's way to its fused tier (its entry in `stats()["programs"]`)."""

    __slots__ = ("entry", "t0")

    def __init__(self, function: str, t0: float):
        self.t0 = t0
        self.entry = {"function": function, "kernels": 0, "loads": 0, "compiles": 0, "seconds_to_tier": None,
                      "seconds_to_final": None, "kernel_seconds": 0.0, "kernel_cpu_seconds": 0.0,
                      "status": "pending", "started": t0, "tier_at": None, "final_at": None}
        with _records_lock:
            _programs.append(self.entry)
            del _programs[:-MAX_PROGRAM_RECORDS]

    def counters(self) -> tuple:
        """A snapshot of the global counters and the clocks, for `add` (called on the thread that then makes the
        kernels ready)."""
        return (_stats["loads"], _stats["compiles"] + _stats["process_compiles"], time.perf_counter(),
                time.thread_time())

    def add(self, before: tuple) -> None:
        """Adds what happened since `before` (a `counters()` snapshot taken on this thread) to this program's
        counts."""
        loads, compiles, t, cpu = before
        e = self.entry
        e["loads"] += _stats["loads"] - loads
        e["compiles"] += _stats["compiles"] + _stats["process_compiles"] - compiles
        e["kernel_seconds"] = round(e["kernel_seconds"] + time.perf_counter() - t, 6)
        e["kernel_cpu_seconds"] = round(e["kernel_cpu_seconds"] + time.thread_time() - cpu, 6)

    def reached(self, kernels: int, final: bool) -> None:
        """The program now runs a fused tier of `kernels` distinct kernels (`final`: no better variant will
        follow)."""
        now = time.perf_counter()
        dt = now - self.t0
        e = self.entry
        e["kernels"] = kernels
        if e["seconds_to_tier"] is None:
            e["seconds_to_tier"], e["tier_at"] = round(dt, 6), now
        if final:
            e["seconds_to_final"], e["final_at"] = round(dt, 6), now
        e["status"] = "final" if final else "serial"

    def failed(self) -> None:
        if self.entry["seconds_to_tier"] is None:
            self.entry["status"] = "failed"


def release_kernels() -> None:
    """Forgets every loaded kernel (and failure), and drops the background compilations not started yet.

    Dispatchers still used by live executables keep working; the others are freed once unreferenced. A compilation
    already running finishes (it cannot be interrupted) but loads its kernels afresh."""
    global _generation, _prewarm_submitted
    with _lock:
        _generation += 1
        for digest in list(_loaded.keys()) + list(_failed):
            sys.modules.pop(_module_name(digest), None)
            sources.drop(f"<fluxion kernel {digest}>")
        _loaded.clear()
        _failed.clear()
        if not _numba_ready.is_set():  # a queued prewarm is dropped below: the next `jit` may start another
            _prewarm_submitted = False
    _worker.drop_queued()


# Job priorities: Numba's own set-up first (`prewarm`), then the first fused tier of every program, then the
# typing warm-up (`prewarm`'s second step), then any program's multi-threaded variants.
PREWARM = -1
FIRST_TIER = 0
WARM_UP = 1
LATER_TIER = 2


class _Worker:
    """One daemon thread running compile jobs by priority, then in submission order."""

    def __init__(self):
        self.jobs: "queue.PriorityQueue[tuple[int, int, int, Callable[[], None]]]" = queue.PriorityQueue()
        self.thread: threading.Thread | None = None
        self.pending = 0
        self.cv = threading.Condition()
        self.order = itertools.count()
        self.running: tuple | None = None  # the queue entry of the job being run

    def submit(self, job: Callable[[], None], priority: int = FIRST_TIER) -> None:
        with self.cv:
            self.pending += 1
        self._start()
        self.jobs.put((priority, next(self.order), _generation, job))

    def _start(self) -> None:
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._run, name="fluxion-kernel-compiler", daemon=True)
            self.thread.start()

    def after_fork(self, keep_jobs: bool) -> None:
        """In a forked child, where the compiler thread does not exist: the jobs queued in the parent, and the one
        it was running (which starts over: every job checks the tier it would build), run on a new thread -- or,
        without `keep_jobs`, are dropped."""
        entries = list(self.jobs.queue) + ([self.running] if self.running is not None else [])
        self.jobs = queue.PriorityQueue()
        self.cv = threading.Condition()
        self.thread, self.running = None, None
        self.pending = len(entries) if keep_jobs else 0
        if self.pending:
            for entry in entries:
                self.jobs.put(entry)
            self._start()

    def drop_queued(self) -> None:
        """Removes the jobs not started yet (the running one, if any, finishes)."""
        dropped = 0
        while True:
            try:
                self.jobs.get_nowait()
            except queue.Empty:
                break
            dropped += 1
        if dropped:
            with self.cv:
                self.pending -= dropped
                self.cv.notify_all()

    def _run(self) -> None:
        while True:
            entry = self.jobs.get()
            _, _, generation, job = entry
            self.running = entry
            try:
                if generation == _generation:  # else submitted before `release_kernels`: dropped
                    job()
            except Exception:  # noqa: BLE001 -- logged; the executable keeps its NumPy code
                logger.exception("fluxion: background kernel compilation failed")
            finally:
                self.running = None
                with self.cv:
                    self.pending -= 1
                    self.cv.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        with self.cv:
            return self.cv.wait_for(lambda: self.pending == 0, timeout)


_worker = _Worker()


def submit(job: Callable[[], None], priority: int = FIRST_TIER) -> None:
    """Runs `job` on the background compiler thread, after the jobs of a smaller `priority` number and those of
    the same priority submitted earlier (`FIRST_TIER`: a program's first fused tier; `LATER_TIER`: its
    multi-threaded kernel variants)."""
    _worker.submit(job, priority)


def wait_for_kernels(timeout: float | None = None) -> bool:
    """Blocks until every submitted background compilation has finished; returns False on timeout."""
    return _worker.wait(timeout)


# Forking (`os.fork`, multiprocessing's "fork" start method) while another thread compiles would give the child
# Numba's compiler lock, and this module's, held by a thread that does not exist there: the child's first
# compilation or kernel load would wait forever (measured: a child forked 0.2 s after a first jitted call hung in
# its first `jit` with `fluxion_jit_sync_kernels`; one forked while `prewarm` imported Numba found it half
# imported). So a fork waits, up to `FORK_WAIT_SECONDS`, until `prewarm` has imported and set up Numba, no kernel
# loads and Numba compiles nothing, and holds those locks across the fork; the child then restarts the compiler
# thread with the parent's queued jobs (`_Worker.after_fork`). A compilation still running after the wait (none
# takes that long on the benchmark machine; a whole-step function takes a few seconds) leaves the child without
# Numba: its programs keep the kernels already loaded and use the NumPy path for the rest.
FORK_WAIT_SECONDS = 30.0
_fork_held: list = []       # the locks `_before_fork` acquired, released on both sides of the fork
_fork_complete = False      # whether `_before_fork` acquired every lock


def _numba_compiler_lock() -> Any:
    """Numba's process-wide compiler lock (the re-entrant lock inside its `global_compiler_lock`), or None when
    Numba is not imported (or that lock is not where this Numba version keeps it)."""
    if "numba" not in sys.modules:
        return None
    try:
        # Importing `numba` waits for an import of it under way in another thread (its module lock; its submodule
        # `compiler_lock` is complete early in that import, so importing only that would not wait).
        importlib.import_module("numba")
        from numba.core.compiler_lock import global_compiler_lock
    except Exception:  # noqa: BLE001 -- a broken Numba compiles nothing
        return None
    lock = getattr(global_compiler_lock, "_lock", None)
    return lock if hasattr(lock, "acquire") else None


def _before_fork() -> None:
    global _fork_complete
    deadline = time.monotonic() + FORK_WAIT_SECONDS
    complete = True
    # In the order the compiler thread takes them (a prewarm holds the first, then Numba's; a load `_lock`, then
    # Numba's), so that waiting for one never waits on a thread that waits for us.
    for get in (lambda: _setup_lock, lambda: _lock, _numba_compiler_lock, lambda: _records_lock):
        lock = get()
        if lock is None:
            continue
        if not lock.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
            complete = False
            break
        _fork_held.append(lock)
    _fork_complete = complete


def _release_fork_locks() -> None:
    while _fork_held:
        _fork_held.pop().release()


def _after_fork_in_child() -> None:
    global _setup_lock, _lock, _records_lock, _numba_ok
    _release_fork_locks()
    if not _fork_complete:
        # Some thread of the parent was inside a compilation: Numba's state may be half updated. This process no
        # longer compiles or loads kernels (it keeps those loaded), and this module's locks start afresh.
        _setup_lock, _lock, _records_lock = threading.RLock(), threading.RLock(), threading.Lock()
        _numba_ok = False
        logger.warning("fluxion: forked while a kernel compiled for over %.0f s; this process uses the kernels "
                       "already loaded and the NumPy path otherwise", FORK_WAIT_SECONDS)
    _worker.after_fork(keep_jobs=_fork_complete)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_release_fork_locks,
                        after_in_child=_after_fork_in_child)


def openmp_started() -> bool:
    """Whether Numba has started GNU OpenMP threads in this process (or in the parent it was forked from): a forked
    child must then not run a multi-threaded kernel, which GNU OpenMP ends with "Terminating: fork() called from a
    process already using GNU OpenMP" (see `threads`). Numba's other threading layers (TBB, its own workqueue) are
    safe to use after a fork."""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    return bool(parallel is not None and getattr(parallel, "_is_initialized", False)
                and getattr(parallel, "_threading_layer", None) == "omp")

"""Loading fused kernels: the on-disk cache, Numba, and the background compiler thread.

Kernel sources are written to `<cache dir>/kernels/k_<hash>.py` (atomically, once) and imported from there, so
Numba's own cache (`cache=True`) stores the compiled machine code next to them: a second process loads kernels
instead of compiling them. The cache directory is `fluxion_cache_dir` (`FLUXION_CACHE_DIR`), else
`jax_compilation_cache_dir` if set, else `~/.cache/fluxion`.

Numba is imported lazily and, by default, kernels are compiled on a background thread: the first call of a jitted
function runs the plain NumPy code at once, and the executable switches to the fused code when its kernels are
ready (`fluxion_jit_sync_kernels`, `FLUXION_JIT_SYNC_KERNELS=1`, compiles them before the first call instead). Numba keeps its compiled code in
files it serializes itself (with pickle) in the cache directory, which only this user writes.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import queue
import sys
import tempfile
import threading
from typing import Any, Callable

from ...config import config, set_default_environment

logger = logging.getLogger("fluxion.jit")

_lock = threading.Lock()
_loaded: dict = {}            # digest -> Numba dispatcher
_failed: dict = {}            # digest -> error message
_numba_ok: bool | None = None


def numba_installed() -> bool:
    """Whether Numba can be imported (checked without importing it, which takes about half a second)."""
    global _numba_ok
    if _numba_ok is None:
        try:
            _numba_ok = importlib.util.find_spec("numba") is not None
        except (ImportError, ValueError):
            _numba_ok = False
    return _numba_ok


def cache_dir() -> str:
    """The kernel cache directory: `fluxion_cache_dir`, else `jax_compilation_cache_dir`, else `~/.cache/fluxion`."""
    d = config.fluxion_cache_dir or config.jax_compilation_cache_dir
    if not d:
        d = os.path.join(os.path.expanduser("~"), ".cache", "fluxion")
    return os.fspath(d)


def sync_kernels() -> bool:
    """Whether kernels are compiled before the first call (`fluxion_jit_sync_kernels`)."""
    return bool(config.fluxion_jit_sync_kernels)


def _write_atomic(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def kernel_path(digest: str) -> str:
    return os.path.join(cache_dir(), "kernels", f"k_{digest}.py")


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
        path = kernel_path(digest)
        try:
            if not os.path.exists(path):
                _write_atomic(path, source)
            name = f"fluxion_kernel_{digest}"
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            spec.loader.exec_module(mod)
            fn = mod.kernel
        except Exception as err:  # noqa: BLE001 -- any Numba failure falls back to NumPy
            msg = f"fused kernel {digest} failed to compile: {type(err).__name__}: {err}"
            _failed[digest] = msg
            logger.warning("%s; using the NumPy path", msg)
            raise RuntimeError(msg) from err
        _loaded[digest] = fn
        return fn


def is_loaded(digest: str) -> bool:
    return digest in _loaded


def loaded_numba() -> Any:
    """The `numba` module once a kernel has been loaded (so Numba is fully imported), else None. While the
    background thread is still importing Numba, `sys.modules` holds a half-initialized module."""
    return sys.modules.get("numba") if _loaded else None


class _Worker:
    """One daemon thread running compile jobs in submission order."""

    def __init__(self):
        self.jobs: "queue.Queue[Callable[[], None]]" = queue.Queue()
        self.thread: threading.Thread | None = None
        self.pending = 0
        self.cv = threading.Condition()

    def submit(self, job: Callable[[], None]) -> None:
        with self.cv:
            self.pending += 1
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._run, name="fluxion-kernel-compiler", daemon=True)
            self.thread.start()
        self.jobs.put(job)

    def _run(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                job()
            except Exception:  # noqa: BLE001 -- logged; the executable keeps its NumPy code
                logger.exception("fluxion: background kernel compilation failed")
            finally:
                with self.cv:
                    self.pending -= 1
                    self.cv.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        with self.cv:
            return self.cv.wait_for(lambda: self.pending == 0, timeout)


_worker = _Worker()


def submit(job: Callable[[], None]) -> None:
    """Runs `job` on the background compiler thread."""
    _worker.submit(job)


def wait_for_kernels(timeout: float | None = None) -> bool:
    """Blocks until every submitted background compilation has finished; returns False on timeout."""
    return _worker.wait(timeout)

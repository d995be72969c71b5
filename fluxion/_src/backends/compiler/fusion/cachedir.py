"""The on-disk cache directory: where it is, whether it is safe to use, and keeping it verified and bounded.

See `runtime`'s docstring for what the directory holds and why only its owner may write it. This module:

* finds the directory (`cache_dir`) and decides once per process and directory whether it may be used
  (`usable_dir`): it is created with mode 0o700; an existing directory, or its `kernels` subdirectory, that is owned
  by another user or writable by group or others is refused with a warning (as pip and ccache refuse such caches),
  and kernels are then compiled in memory only;
* writes files atomically (`write_atomic`: a temporary file renamed over the target) and makes a kernel's file hold
  exactly the source in memory (`ensure_source`), dropping Numba's compiled code for any other text (`purge`);
* bounds the directory (`maintain`): temporary files older than `STALE_TMP_SECONDS` (left by killed processes) are
  removed, and while the cache is larger than `fluxion_cache_max_bytes` the least recently used kernels (with their
  Numba files) and executable records are deleted. A kernel's last use is the access time of its source file, set
  explicitly on every load (`touch`): its modification time is part of Numba's cache key, so touching that would
  make Numba recompile.
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
import warnings

from .... import forks
from ....config import config

# Temporary files (`.tmp-*`) older than this are left over from killed processes.
STALE_TMP_SECONDS = 3600
# `maintain` scans the directory at most this often per process (a scan stats every file: tens of milliseconds for
# a few thousand kernels).
MAINTAIN_INTERVAL_SECONDS = 60.0

_lock = forks.lock()
_verdicts: dict = {}          # directory -> None (usable) or the reason it is refused
_last_maintenance = [float("-inf")]


def cache_dir() -> str:
    """The cache directory: `fluxion_cache_dir`, else `jax_compilation_cache_dir`, else `~/.cache/fluxion`."""
    d = config.fluxion_cache_dir or config.jax_compilation_cache_dir
    if not d:
        d = os.path.join(os.path.expanduser("~"), ".cache", "fluxion")
    return os.fspath(d)


def _unsafe(path: str) -> str | None:
    """Why `path` (an existing directory) may not hold a cache that this process loads code from, or None."""
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    getuid = getattr(os, "getuid", None)
    if getuid is not None and st.st_uid != getuid():
        return f"{path} is owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by its group or by other users (mode {stat.S_IMODE(st.st_mode):#o})"
    return None


def _check(root: str) -> str | None:
    for path in (root, os.path.join(root, "kernels"), os.path.join(root, "executables")):
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            reason = _unsafe(path)
        except OSError as err:
            return f"{path} cannot be used: {err}"
        if reason is not None:
            return reason
    return None


def usable_dir() -> str | None:
    """The cache directory if it is private to this user (created with mode 0o700 if missing), else None.

    A refused directory is reported once per process with a `RuntimeWarning` naming the reason and the fix; kernels
    are then compiled in memory, without the disk cache.
    """
    root = cache_dir()
    with _lock:
        if root not in _verdicts:
            reason = _check(root)
            _verdicts[root] = reason
            if reason is not None:
                warnings.warn(f"fluxion: not using the kernel cache in {root}: {reason}. Other users could plant "
                              "code there that this process would run (Numba's index files are pickles). Kernels are "
                              "compiled in memory instead; make the directory private (chmod 700, owned by you) or set "
                              "fluxion_cache_dir (FLUXION_CACHE_DIR) to a private directory.", RuntimeWarning,
                              stacklevel=3)
        return root if _verdicts[root] is None else None


def kernels_dir(root: str) -> str:
    return os.path.join(root, "kernels")


def kernel_file(root: str, digest: str) -> str:
    return os.path.join(kernels_dir(root), f"k_{digest}.py")


def write_atomic(path: str, text: str) -> None:
    """Writes `text` to `path` through a temporary file in the same directory renamed over it (readers see the old
    file or the new one, never a partial one)."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.splitext(path)[1])
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def purge(root: str, digest: str, source_too: bool = False) -> None:
    """Deletes Numba's files for kernel `digest` (its index `.nbi` and machine code `.nbc` in `__pycache__`, and any
    bytecode), and its source file if `source_too`."""
    prefix = f"k_{digest}."
    pycache = os.path.join(kernels_dir(root), "__pycache__")
    try:
        names = [n for n in os.listdir(pycache) if n.startswith(prefix)]
    except OSError:
        names = []
    paths = [os.path.join(pycache, n) for n in names]
    if source_too:
        paths.append(kernel_file(root, digest))
    for p in paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def with_machine_code(root: str, digests) -> set:
    """Those of kernels `digests` for which Numba's index exists (their machine code is probably cached; Numba still
    checks the index against the source file when it loads). One directory listing for all of them."""
    try:
        names = os.listdir(os.path.join(kernels_dir(root), "__pycache__"))
    except OSError:
        return set()
    indexed = {n[2:].split(".", 1)[0] for n in names if n.startswith("k_") and n.endswith(".nbi")}
    return indexed & set(digests)


def ensure_source(root: str, digest: str, source: str) -> bool:
    """Makes kernel `digest`'s file hold exactly `source`: if it is missing or differs (edited, planted, truncated),
    Numba's compiled code for it is dropped and the file is rewritten atomically. Returns True if it was written."""
    path = kernel_file(root, digest)
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == source:
                return False
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError):
        pass  # unreadable: rewritten below
    purge(root, digest)
    write_atomic(path, source)
    return True


def touch(root: str, digest: str) -> None:
    """Records a use of kernel `digest` (its source file's access time; the modification time is left alone)."""
    path = kernel_file(root, digest)
    try:
        st = os.stat(path)
        os.utime(path, ns=(time.time_ns(), st.st_mtime_ns))
    except OSError:
        pass


def maintain(root: str, force: bool = False) -> None:
    """Removes stale temporary files and evicts least recently used entries while the cache is larger than
    `fluxion_cache_max_bytes`. Runs at most every `MAINTAIN_INTERVAL_SECONDS` unless `force`."""
    now = time.monotonic()
    with _lock:
        if not force and now - _last_maintenance[0] < MAINTAIN_INTERVAL_SECONDS:
            return
        _last_maintenance[0] = now
    units: dict = {}          # key -> [size, last use, paths]
    wall = time.time()

    def add(key, entry: os.DirEntry, last_use: float | None = None) -> None:
        st = entry.stat(follow_symlinks=False)
        unit = units.setdefault(key, [0, float("-inf"), []])
        unit[0] += st.st_size
        unit[1] = max(unit[1], st.st_mtime if last_use is None else last_use)
        unit[2].append(entry.path)

    kdir = kernels_dir(root)
    for directory, kind in ((kdir, "kernel"), (os.path.join(kdir, "__pycache__"), "numba"),
                            (os.path.join(root, "executables"), "executable")):
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                name = entry.name
                if name.startswith(".tmp-"):
                    if wall - entry.stat(follow_symlinks=False).st_mtime > STALE_TMP_SECONDS:
                        os.unlink(entry.path)
                    continue
                if kind == "executable":
                    add(("x", name), entry)
                elif name.startswith("k_"):
                    digest = name[2:].split(".", 1)[0]
                    st = entry.stat(follow_symlinks=False)
                    add(("k", digest), entry, max(st.st_atime, st.st_mtime) if kind == "kernel" else None)
            except OSError:
                continue  # removed meanwhile by another process
    limit = int(config.fluxion_cache_max_bytes)
    total = sum(u[0] for u in units.values())
    if total <= limit:
        return
    for _, (size, _, paths) in sorted(units.items(), key=lambda kv: kv[1][1]):
        for p in paths:
            try:
                os.unlink(p)
            except OSError:
                pass
        total -= size
        if total <= limit:
            break


def reset() -> None:
    """Forgets the per-process decisions (which directories are usable, when the cache was last maintained)."""
    with _lock:
        _verdicts.clear()
        _last_maintenance[0] = float("-inf")

"""Generated source text registered with `linecache`, so tracebacks, `pdb` and Numba's messages show the lines of
generated programs and kernels.

Entries are never removed one by one while other code may be reading the cache: `linecache.checkcache()` (called by
`doctest`, `pdb`, `traceback`) lists the cache's keys and then indexes the cache with each, so a key removed in
between -- by a finalizer that garbage collection runs inside that very loop, or by another thread -- raises
`KeyError` out of the caller's code (seen in the documentation build). A dropped entry is instead replaced in place
by an empty one (`checkcache` skips entries without a modification time), and the empty entries are pruned together
once `PRUNE_AFTER` of them accumulated, which bounds the memory kept to a few hundred kilobytes at the cost of a rare
window for that race once per `PRUNE_AFTER` dropped programs.
"""

from __future__ import annotations

import linecache

from ... import forks

PRUNE_AFTER = 4096

_lock = forks.lock()
_dropped: list[str] = []


def register(filename: str, source: str) -> None:
    """Makes `source` the text `linecache` gives for `filename`."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def drop(filename: str) -> None:
    """Forgets the text of `filename` (safe to call from a finalizer or any thread; see the module docstring)."""
    if filename not in linecache.cache:
        return
    linecache.cache[filename] = (0, None, [], filename)
    with _lock:
        _dropped.append(filename)
        if len(_dropped) < PRUNE_AFTER:
            return
        names = _dropped[:]
        _dropped.clear()
    for name in names:
        entry = linecache.cache.get(name)
        if entry is not None and len(entry) == 4 and not entry[2]:
            linecache.cache.pop(name, None)

"""Generated sources in `linecache` (`compiler.sources`): dropping one while `linecache.checkcache()` walks the cache
-- as a finalizer run by garbage collection inside that loop does -- must not make `checkcache` raise."""

from __future__ import annotations

import linecache

from fluxion._src.backends.compiler import sources


def test_dropping_an_entry_during_checkcache_does_not_raise(monkeypatch):
    # checkcache stats this entry first (insertion order), and the finalizer drops the later ones meanwhile.
    linecache.cache.pop("<fluxion test file>", None)
    linecache.cache["<fluxion test file>"] = (1, 1.0, ["y\n"], __file__)
    names = [f"<fluxion test source {i}>" for i in range(3)]
    for n in names:
        sources.register(n, "x = 1\n")
    real_stat = linecache.os.stat

    def stat_then_drop(path, *args, **kwargs):   # runs inside checkcache's loop, as a collection would
        for n in names:
            sources.drop(n)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(linecache.os, "stat", stat_then_drop)
    try:
        linecache.checkcache()
    finally:
        monkeypatch.undo()
        linecache.cache.pop("<fluxion test file>", None)
    assert all(linecache.getlines(n) == [] for n in names)


def test_dropped_entries_are_pruned_in_batches(monkeypatch):
    monkeypatch.setattr(sources, "PRUNE_AFTER", 3)
    monkeypatch.setattr(sources, "_dropped", [])
    names = [f"<fluxion prune test {i}>" for i in range(3)]
    for n in names:
        sources.register(n, "z = 2\n")
    sources.drop(names[0])
    sources.drop(names[1])
    assert names[0] in linecache.cache and linecache.getlines(names[0]) == []
    sources.drop(names[2])
    assert not any(n in linecache.cache for n in names)

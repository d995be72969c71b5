"""The on-disk kernel cache is verified (the source in memory is what runs), private (refused unless only its owner
can write it), repaired when damaged and bounded in size. Every test points the cache at its own `tmp_path`."""

from __future__ import annotations

import os
import stat
import time
import warnings

import numpy as np
import pytest

import fluxion
from fluxion._src.backends.compiler import disk_cache, fusion
from fluxion._src.backends.compiler.fusion import cachedir, runtime

pytestmark = pytest.mark.skipif(not runtime.numba_installed(), reason="needs Numba")
config = fluxion.config


@pytest.fixture
def cache(tmp_path):
    """A fresh cache directory (not created yet) and fresh per-process cache decisions."""
    root = tmp_path / "cache"
    cachedir.reset()
    with config.override("fluxion_cache_dir", str(root)), config.override("fluxion_check_fusion", False):
        yield root
    cachedir.reset()


def _kernel(scale: float):
    """The spec of the kernel computing `x * scale + 1` over 8 float32 elements (a distinct kernel per scale)."""
    closed = fluxion.make_jaxpr(lambda x: x * scale + 1.0)(np.ones(8, np.float32))
    with config.override("fluxion_fuse_min_elements", 1):
        ((_, spec),), _ = fusion.Planner(load=False).specs(closed)
    return spec


def _load(spec):
    """Loads `spec` as a new process would (forgetting this process's copy first) and checks what it computes."""
    runtime._loaded.pop(spec.digest, None)
    runtime._failed.pop(spec.digest, None)
    fn = runtime.load_kernel(spec.digest, spec.source)
    x = np.arange(8, dtype=np.float32)
    out = np.empty(8, np.float32)
    fn(x, out)
    return fn, out


def _numba_files(root, spec) -> list:
    pycache = root / "kernels" / "__pycache__"
    return sorted(p for p in pycache.iterdir() if p.name.startswith(f"k_{spec.digest}."))


def _index(root, spec):
    (nbi,) = [p for p in _numba_files(root, spec) if p.suffix == ".nbi"]
    return nbi


def test_cache_is_created_private_and_reused(cache):
    spec = _kernel(3.0)
    fn, out = _load(spec)
    np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32) * 3 + 1)
    for d in (cache, cache / "kernels", cache / "executables"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert (cache / "kernels" / f"k_{spec.digest}.py").read_text() == spec.source
    assert sum(fn.stats.cache_misses.values()) == 1
    fn, _ = _load(spec)  # a second load reuses Numba's machine code from the disk
    assert sum(fn.stats.cache_hits.values()) == 1 and not fn.stats.cache_misses


def test_a_planted_kernel_file_never_runs_and_is_rewritten(cache, tmp_path):
    spec = _kernel(5.0)
    _load(spec)
    path = cache / "kernels" / f"k_{spec.digest}.py"
    marker = tmp_path / "planted-code-ran"
    planted = spec.source.replace("+ np.float32(1.0)", "+ np.float32(1000.0)") + \
        f"\nopen({str(marker)!r}, 'w').close()\n"
    assert planted != spec.source
    path.write_text(planted)
    fake = cache / "kernels" / "__pycache__" / f"k_{spec.digest}.kernel-12.py311.99.nbc"
    fake.write_bytes(b"machine code compiled from the planted text")
    _, out = _load(spec)
    np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32) * 5 + 1)
    assert not marker.exists()
    assert path.read_text() == spec.source
    assert not fake.exists()  # Numba's files for the other text were dropped


def test_a_truncated_kernel_file_is_rewritten(cache):
    spec = _kernel(7.0)
    _load(spec)
    path = cache / "kernels" / f"k_{spec.digest}.py"
    path.write_text(spec.source[: len(spec.source) // 2])
    _, out = _load(spec)
    np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32) * 7 + 1)
    assert path.read_text() == spec.source


@pytest.mark.parametrize("damage", ["garbled index", "truncated machine code"])
def test_a_damaged_numba_cache_is_repaired_instead_of_disabling_the_kernel(cache, damage):
    spec = _kernel(11.0 if damage == "garbled index" else 13.0)
    _load(spec)
    if damage == "garbled index":
        _index(cache, spec).write_bytes(b"\x80\x04garbage")
    else:
        (nbc,) = [p for p in _numba_files(cache, spec) if p.suffix == ".nbc"]
        nbc.write_bytes(nbc.read_bytes()[:40])
    fn, out = _load(spec)
    scale = 11.0 if damage == "garbled index" else 13.0
    np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32) * scale + 1)
    assert spec.digest not in runtime._failed
    fn, _ = _load(spec)  # the repaired entry serves the next process
    assert sum(fn.stats.cache_hits.values()) == 1


@pytest.mark.parametrize("mode", [0o770, 0o707])
def test_a_directory_others_can_write_is_refused_with_one_warning(cache, mode):
    cache.mkdir(mode=0o700)
    os.chmod(cache, mode)
    spec = _kernel(17.0)
    with pytest.warns(RuntimeWarning, match="writable by its group or by other users"):
        _, out = _load(spec)
    np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32) * 17 + 1)  # compiled in memory
    assert not (cache / "kernels").exists()
    assert runtime.kernel_path(spec.digest) is None and not disk_cache.warm("any")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _load(_kernel(19.0))  # warned once per process


def test_a_private_cache_with_a_kernels_directory_others_can_write_is_refused(cache):
    (cache / "kernels").mkdir(parents=True, mode=0o700)
    os.chmod(cache, 0o700)
    os.chmod(cache / "kernels", 0o777)
    with pytest.warns(RuntimeWarning, match="kernels is writable"):
        _load(_kernel(23.0))
    assert not list((cache / "kernels").iterdir())


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="changing a directory's owner needs root")
def test_a_directory_owned_by_another_user_is_refused(cache):
    cache.mkdir(mode=0o700)
    os.chown(cache, 12345, -1)
    with pytest.warns(RuntimeWarning, match="owned by another user"):
        _load(_kernel(29.0))


def test_stale_temporary_files_are_removed(cache):
    _load(_kernel(31.0))
    old = cache / "kernels" / ".tmp-killed.py"
    new = cache / "executables" / ".tmp-writing.json"
    old.write_text("partial")
    new.write_text("partial")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    cachedir.maintain(str(cache), force=True)
    assert not old.exists() and new.exists()


def test_the_cache_is_bounded_by_evicting_the_least_recently_used_kernels(cache):
    specs = [_kernel(37.0), _kernel(41.0), _kernel(43.0)]
    for s in specs:
        _load(s)
    # Last uses: the first kernel long ago, the third recently, the second most recently (touched by a load).
    now = time.time()
    for s, age in zip(specs, (3000, 2000, 1000)):
        for p in [cache / "kernels" / f"k_{s.digest}.py"] + _numba_files(cache, s):
            os.utime(p, (now - age, now - age))
    mtime_before = os.stat(cache / "kernels" / f"k_{specs[1].digest}.py").st_mtime_ns
    _load(specs[1])
    assert os.stat(cache / "kernels" / f"k_{specs[1].digest}.py").st_mtime_ns == mtime_before  # Numba's key kept
    total = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    with config.override("fluxion_cache_max_bytes", total - 1):
        cachedir.maintain(str(cache), force=True)
    assert not (cache / "kernels" / f"k_{specs[0].digest}.py").exists() and not _numba_files(cache, specs[0])
    for s in specs[1:]:
        assert (cache / "kernels" / f"k_{s.digest}.py").exists() and _numba_files(cache, s)
    with config.override("fluxion_cache_max_bytes", 0):
        cachedir.maintain(str(cache), force=True)
    assert not list((cache / "kernels").glob("k_*.py"))
    fn, out = _load(specs[2])  # an evicted kernel is simply compiled again
    np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32) * 43 + 1)

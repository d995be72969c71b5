"""Fused kernels are compiled once per shape class, not per shape: the generated source reads its extents from its
arguments, so a jitted program run on many large shapes compiles its kernels once; and `fluxion.clear_caches()`
releases the kernels (and drops background compilations not started yet).

Each test points the kernel cache at its own directory, so a load is a Numba compilation.
"""

from __future__ import annotations

import gc
import linecache
import os
import sys
import weakref

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion._src.backends import compiler
from fluxion._src.backends.compiler import fusion, passes
from fluxion._src.backends.compiler.fusion import cachedir, kernel, runtime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import BlockedWorker  # noqa: E402

pytestmark = pytest.mark.skipif(not (compiler.enabled() and fusion.available()),
                                reason="needs the jit compiler and Numba")
config = fluxion.config

# Large enough for the default thresholds to fuse with threads (elements x operations >= 2**18), in check mode too.
SHAPES = [(400, 257), (512, 300), (1000, 101), (77, 3001), (640, 480), (129, 1025)]


@pytest.fixture
def fresh(tmp_path):
    """A private kernel cache of its own and no kernel in memory: every kernel this test needs is compiled."""
    cachedir.reset()
    runtime.release_kernels()
    with config.override("fluxion_cache_dir", str(tmp_path / "cache")):
        yield
    cachedir.reset()


def _program(x, b, c):
    # One kernel: a row broadcast, a column broadcast, an elementwise output and a row-wise sum.
    y = jnp.tanh(x * b + 0.5) - x * c
    return y, jnp.sum(y * y, axis=1)


def _numpy_program(x, b, c):
    y = np.tanh(x * b + np.float32(0.5)) - x * c
    return y, np.sum(y.astype(np.float64) ** 2, axis=1)


def _operands(rng, n, m):
    return (rng.standard_normal((n, m)).astype(np.float32), rng.standard_normal(m).astype(np.float32),
            rng.standard_normal((n, 1)).astype(np.float32))


def _check(got, want):
    np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got[1]), want[1], rtol=1e-5)


def _views(rng, n, m):
    """The operands as NumPy views with other layouts: a transposed array and a strided slice."""
    x, b, c = _operands(rng, n, m)
    xt = np.ascontiguousarray(x.T).T  # Fortran order
    wide = rng.standard_normal((n, 2 * m + 1)).astype(np.float32)
    return [(xt, b, c), (wide[:, 1::2], b, c)]


def _kernel_loads() -> int:
    return runtime.stats()["loads"]


@pytest.mark.usefixtures("fresh")
def test_one_kernel_compile_serves_every_large_shape(rng):
    f = fluxion.jit(_program)
    first = _kernel_loads()
    compiles_before = runtime.stats()["compiles"]
    for k, (n, m) in enumerate(SHAPES):
        args = _operands(rng, n, m)
        _check(f(*args), _numpy_program(*args))
        if k == 0:
            assert _kernel_loads() - first == 1, "the program has one fused kernel"
        for view_args in _views(rng, n, m):
            _check(f(*view_args), _numpy_program(*view_args))
    assert _kernel_loads() - first == 1
    assert runtime.stats()["compiles"] - compiles_before == 1
    assert f._cache_size() == len(SHAPES)  # each shape is still its own traced program (cheap to generate)


@pytest.mark.usefixtures("fresh")
def test_dimension_only_an_iota_spans_gets_an_extent_argument():
    # sum(i * x[j]) over an (n, m) domain whose first dimension no array spans: its extent is a kernel parameter.
    def prog(x, n):
        i = lax.broadcasted_iota(np.int32, (n, x.shape[0]), 0)  # integer iotas are computed in kernels
        return jnp.sum(i.astype(np.float32) * x[None, :])

    digests = set()
    for n, m in [(300, 40), (900, 40)]:  # both serial (in check mode both parallel)
        x = np.linspace(-1, 1, m, dtype=np.float32)
        closed = fluxion.make_jaxpr(prog, static_argnums=1)(x, n)
        exe = compiler.compile_closed(closed, optimize=False, fuse=True, sync=True)
        (spec,) = exe.kernels
        assert spec.status == "compiled" and spec.extents == [n]
        digests.add(spec.digest)
        (got,) = exe(x)
        np.testing.assert_allclose(got, np.sum(np.arange(n, dtype=np.float64)[:, None] * x[None, :]), rtol=1e-5)
    assert len(digests) == 1


@pytest.mark.usefixtures("fresh")
def test_one_scan_loop_kernel_serves_every_sequence_length(rng):
    def f(xs):
        return lax.scan(lambda c, x: (jnp.tanh(c * 0.75 + x), c * 2.0), jnp.zeros(4, np.float32), xs, reverse=True)

    loads = _kernel_loads()
    digests = []
    for n in (20, 37, 64):
        xs = rng.standard_normal((n, 4)).astype(np.float32)
        closed = fluxion.make_jaxpr(f)(xs)
        exe = compiler.compile_closed(closed, fuse=True, sync=True)
        assert "loop kernel of a scan" in exe.source
        digests.append(sorted(k.digest for k in exe.kernels))
        want = compiler.compile_closed(closed, fuse=False)(xs)
        for g, w in zip(exe(xs), want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
    assert digests[0] == digests[1] == digests[2]
    assert _kernel_loads() - loads == len(digests[0])


def _digests(fun, *args) -> list:
    closed = passes.optimize(fluxion.make_jaxpr(fun)(*args))
    pairs, _ = fusion.Planner(load=False).specs(fusion.prepare(closed))
    return [spec.digest for _, spec in pairs]


def _f32(*shape):
    return np.ones(shape, np.float32)


def _ew(x, y):
    return jnp.exp(x) * y + 1.0


def _colsum(x):
    return jnp.sum(x * 2.0, axis=0)


# (description, function, operands A, operands B, whether A and B share their kernel). What is in the key: the
# shape class (rank after merging, unit dimensions, broadcasts), dtypes, the thread choice and short extents.
KEY_CASES = [
    ("sizes differ", _ew, (_f32(300, 500), _f32(300, 500)), (_f32(700, 400), _f32(700, 400)), True),
    ("3-D merges into 1-D like 2-D", _ew, (_f32(30, 40, 250), _f32(30, 40, 250)), (_f32(700, 400), _f32(700, 400)),
     True),
    ("a row broadcast is not a column broadcast", _ew, (_f32(300, 500), _f32(500)), (_f32(300, 500), _f32(300, 1)),
     False),
    ("a unit dimension is specialized", lambda x: jnp.sum(jnp.exp(x), axis=1), (_f32(1, 40000),), (_f32(2, 40000),),
     False),
    ("dtype", _ew, (_f32(300, 500), _f32(300, 500)), (np.ones((300, 500), np.int32), np.ones((300, 500), np.int32)),
     False),
    ("threads or not", _ew, (_f32(64, 128), _f32(64, 128)), (_f32(300, 500), _f32(300, 500)), False),
    ("a short extent is a constant", _colsum, (_f32(40000, 3),), (_f32(40000, 4),), False),
    ("a short extent with other long ones", _colsum, (_f32(100000, 3),), (_f32(90000, 3),), True),
    ("long extents are not constants", _colsum, (_f32(8000, 17),), (_f32(8000, 30),), True),
]


@pytest.mark.usefixtures("without_fusion_check")
@pytest.mark.parametrize("what, fun, a, b, same", KEY_CASES, ids=[c[0] for c in KEY_CASES])
def test_kernel_key_holds_what_the_source_depends_on(what, fun, a, b, same):
    da, db = _digests(fun, *a), _digests(fun, *b)
    assert len(da) == len(db) == 1
    assert (da == db) == same


def test_short_extents_are_constants_of_the_source():
    spec_src = {}
    for m in (kernel.SMALL_EXTENT, kernel.SMALL_EXTENT + 1):
        closed = fluxion.make_jaxpr(_colsum)(_f32(40000, m))
        with config.override("fluxion_fuse_min_elements", 1):
            ((_, spec),), _ = fusion.Planner(load=False).specs(closed)
        spec_src[m] = spec.source
    assert f"range({kernel.SMALL_EXTENT})" in spec_src[kernel.SMALL_EXTENT]
    assert str(kernel.SMALL_EXTENT + 1) not in spec_src[kernel.SMALL_EXTENT + 1]
    assert "40000" not in spec_src[kernel.SMALL_EXTENT] + spec_src[kernel.SMALL_EXTENT + 1]


# -- clear_caches -------------------------------------------------------------------------------------------------

@pytest.mark.usefixtures("fresh")
def test_clear_caches_releases_kernels_and_programs(rng):
    f = fluxion.jit(lambda x: jnp.sum(jnp.exp(x * 1.75) - 0.25, axis=0))
    x = rng.standard_normal((600, 300)).astype(np.float32)
    want = np.asarray(f(x))
    compiled = weakref.ref(next(iter(f._cache.values())))
    exe = compiled().executable
    assert exe.tier == 1 and len(exe.kernels) == 1
    dispatcher = weakref.ref(runtime._loaded[exe.kernels[0].digest])
    source_file = exe.module.filename
    assert source_file in linecache.cache
    del exe
    fluxion.clear_caches()
    gc.collect()
    assert f._cache_size() == 0 and compiled() is None
    assert dispatcher() is None, "the kernel's dispatcher outlived clear_caches"
    assert linecache.getlines(source_file) == []   # the entry may stay, emptied (see compiler.sources)
    loads = _kernel_loads()
    np.testing.assert_array_equal(np.asarray(f(x)), want)  # traced and compiled again (from the disk cache)
    assert _kernel_loads() == loads + 1


@pytest.mark.usefixtures("fresh")
def test_a_kept_executable_survives_clear_caches(rng):
    x = rng.standard_normal((600, 300)).astype(np.float32)
    kept = fluxion.jit(lambda x: jnp.tanh(x * 0.625) + 3.0).lower(x).compile()
    want = np.asarray(kept(x))
    fluxion.clear_caches()
    gc.collect()
    np.testing.assert_array_equal(np.asarray(kept(x)), want)


@pytest.mark.usefixtures("fresh", "without_fusion_check")
@pytest.mark.parametrize("clear", ["clear_caches", "function_clear_cache"])
def test_queued_background_compiles_of_cleared_programs_are_dropped(rng, clear):
    x = rng.standard_normal((600, 300)).astype(np.float32)
    f = fluxion.jit(lambda x: jnp.sum(jnp.exp(x * 2.875) + 0.5, axis=1))
    with config.override("fluxion_jit_sync_kernels", False):
        worker = BlockedWorker()
        try:
            loads = _kernel_loads()
            want = np.asarray(f(x))  # the NumPy tier; its fused tier is queued behind the blocked job
            if clear == "clear_caches":
                fluxion.clear_caches()
            else:
                f.clear_cache()
                gc.collect()
        finally:
            worker.finish(60)
    assert _kernel_loads() == loads, "a compilation queued for a cleared program ran"
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-5)


def test_clear_caches_empties_jit_caches_as_jax_does():
    jax = pytest.importorskip("jax")
    for lib in (jax, fluxion):
        f = lib.jit(lambda x: x * 2.0 + 1.0)
        f(np.ones(3, np.float32))
        f(np.ones(4, np.float32))
        assert f._cache_size() == 2, lib.__name__
        assert lib.clear_caches() is None
        assert f._cache_size() == 0, lib.__name__
        np.testing.assert_array_equal(np.asarray(f(np.ones(3, np.float32))), np.full(3, 3.0, np.float32))
        assert f._cache_size() == 1, lib.__name__

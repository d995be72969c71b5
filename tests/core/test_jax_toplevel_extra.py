"""The rest of the `jax` top level: `version`, `memory`, `dlpack`, `custom_derivatives`, `live_arrays`,
`copy_to_host_async`, `effects_barrier`. Each behaviour is checked against real JAX (skipped without it)."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_platforms", "cpu")
    return jax


# --------------------------------------------------------------------------------------------------------------
# version, memory
# --------------------------------------------------------------------------------------------------------------

def test_version_module():
    assert fluxion.version.__version__ == fluxion.__version__
    assert fluxion.version.__version_info__ == tuple(int(p) for p in fluxion.__version__.split("."))
    jax = _jax()
    assert isinstance(jax.version.__version__, str) and isinstance(fluxion.version.__version__, str)


def test_memory_space_enum_and_typeof():
    jax = _jax()
    assert [(m.name, m.value) for m in fluxion.memory.Space] == [(m.name, m.value) for m in jax.memory.Space]
    for m in (fluxion, jax):
        assert m.typeof(m.numpy.ones(3)).memory_space == m.memory.Space.Device
    assert repr(fluxion.memory.Space.Host) == repr(jax.memory.Space.Host)


# --------------------------------------------------------------------------------------------------------------
# dlpack
# --------------------------------------------------------------------------------------------------------------

DLPACK_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                 "float32", "float64", "complex64", "complex128", "bfloat16", "object", "str", "datetime64[s]"]


@pytest.mark.parametrize("name", DLPACK_DTYPES)
def test_dlpack_is_supported_dtype(name):
    jax = _jax()
    dt = fluxion.dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)
    assert fluxion.dlpack.is_supported_dtype(dt) == jax.dlpack.is_supported_dtype(dt)


DLPACK_INPUTS = {
    "f64 matrix": lambda: np.arange(6.0).reshape(2, 3),
    "i64 vector": lambda: np.arange(5),
    "f32 scalar": lambda: np.array(2.5, np.float32),
    "bool": lambda: np.array([True, False]),
    "c64": lambda: np.array([1 + 2j, 3j], np.complex64),
    "u8 strided": lambda: np.arange(20, dtype=np.uint8)[::2],
    "fluxion array": lambda: fnp.arange(4.0),
}


@pytest.mark.parametrize("name", sorted(DLPACK_INPUTS))
def test_from_dlpack_matches_jax(name):
    jax = _jax()
    src = DLPACK_INPUTS[name]()
    ours = fluxion.dlpack.from_dlpack(src)
    theirs = jax.dlpack.from_dlpack(np.array(src))
    assert isinstance(ours, fluxion.Array)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    # Round trip out through fluxion's own exporter, and through jit.
    np.testing.assert_array_equal(np.from_dlpack(ours), np.asarray(theirs))
    np.testing.assert_array_equal(fluxion.jit(lambda x: x * 1)(ours), np.asarray(theirs))


def test_from_dlpack_copies_unless_told_not_to():
    src = np.arange(4.0, dtype=np.float32)
    copied = fluxion.dlpack.from_dlpack(src)
    shared = fluxion.dlpack.from_dlpack(src, copy=False)
    src[0] = 100.0
    assert float(copied[0]) == 0.0 and float(shared[0]) == 100.0


def test_from_dlpack_device_and_errors():
    jax = _jax()
    placed = fluxion.dlpack.from_dlpack(np.ones(2, np.float32), device=fluxion.devices()[0])
    assert placed.sharding.device_set == {fluxion.devices()[0]}
    for m in (fluxion, jax):
        with pytest.raises(TypeError, match="__dlpack__"):
            m.dlpack.from_dlpack([1, 2])


# --------------------------------------------------------------------------------------------------------------
# custom_derivatives
# --------------------------------------------------------------------------------------------------------------

def test_custom_derivatives_module_matches_jax():
    jax = _jax()
    for name in fluxion.custom_derivatives.__all__:
        assert hasattr(jax.custom_derivatives, name), name
        assert getattr(fluxion.custom_derivatives, name) is getattr(fluxion, name)

    def build(m):
        @m.custom_derivatives.custom_jvp
        def f(x):
            return m.numpy.sin(x)

        @f.defjvp
        def f_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return f(x), 3.0 * t
        return m.jit(m.grad(f))(0.4)
    assert float(build(fluxion)) == float(build(jax)) == 3.0


# --------------------------------------------------------------------------------------------------------------
# live_arrays, copy_to_host_async, effects_barrier
# --------------------------------------------------------------------------------------------------------------

def _ids(arrays):
    return {id(a) for a in arrays}


def test_live_arrays_tracks_creation_deletion_and_release():
    jax = _jax()
    for m in (fluxion, jax):
        a = m.numpy.arange(3.0) + 1
        b = m.jit(lambda x: x * 2)(a)
        live = _ids(m.live_arrays())
        assert id(a) in live and id(b) in live
        b.delete()
        assert id(b) not in _ids(m.live_arrays())
        del a, b
        gc.collect()
    before = len(fluxion.live_arrays())
    c = fnp.ones(4)
    assert len(fluxion.live_arrays()) == before + 1
    del c
    assert len(fluxion.live_arrays()) == before
    with pytest.raises(RuntimeError, match="gpu"):
        fluxion.live_arrays("gpu")


def test_live_arrays_sees_arrays_of_other_threads():
    made, go = [], threading.Event()

    def worker():
        made.append(fnp.full(3, 7.0))
        go.wait()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    while len(made) < 4:
        threading.Event().wait(0.001)
    assert {id(a) for a in made} <= _ids(fluxion.live_arrays())
    go.set()
    for t in threads:
        t.join()


def test_copy_to_host_async_returns_the_tree():
    jax = _jax()

    class Leaf:
        calls = 0

        def copy_to_host_async(self):
            Leaf.calls += 1

    leaf = Leaf()
    for m in (fluxion, jax):
        tree = {"a": m.numpy.ones(2), "b": 3, "c": [leaf, "s"]}
        out = m.copy_to_host_async(tree)
        assert out is tree or out == tree
    assert Leaf.calls == 2  # JAX and fluxion each call the leaf's own method


def test_effects_barrier_after_io_callback():
    jax = _jax()
    from jax.experimental import io_callback as jax_io_callback

    from fluxion.experimental import io_callback
    for m, cb in ((fluxion, io_callback), (jax, jax_io_callback)):
        seen = []

        def record(x, seen=seen):
            seen.append(float(x))
            return np.float32(x)

        f = m.jit(lambda x, cb=cb, record=record: cb(record, jax.ShapeDtypeStruct((), np.float32), x * 2,
                                                      ordered=True))
        f(np.float32(1.5))
        assert m.effects_barrier() is None
        assert seen == [3.0]

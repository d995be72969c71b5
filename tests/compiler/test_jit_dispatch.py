"""jit dispatch with the compiler: cache paths, rebuilt outputs, compile diagnostics, and the on-disk cache."""

from __future__ import annotations

import collections
import logging
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion._src.backends import compiler
from fluxion._src.backends.compiler import fusion

needs_compiler = pytest.mark.skipif(not compiler.enabled(), reason="jit compiler disabled (FLUXION_JIT_COMPILER=0)")

Pair = collections.namedtuple("Pair", ["a", "b"])


def test_positional_arrays_hit_the_signature_cache():
    f = fluxion.jit(lambda a, b: a * b + 1.0)
    x = jnp.ones(3)
    f(x, x)
    assert len(f._fast) == 1
    f(x, x)
    f(jnp.ones(4), jnp.ones(4))
    assert len(f._fast) == 2 and f._cache_size() == 2


def test_pytree_arguments_hit_the_structure_cache_and_outputs_keep_their_structure():
    @fluxion.jit
    def f(state, x):
        return {"p": Pair(state["w"] * x, None), "l": [state["w"].sum(), 3]}

    state = {"w": jnp.arange(3.0)}
    out = f(state, 2.0)
    out = f(state, 2.0)
    assert len(f._tree_fast) == 1
    assert isinstance(out["p"], Pair) and out["p"].b is None
    np.testing.assert_array_equal(np.asarray(out["p"].a), [0.0, 2.0, 4.0])
    assert out["l"][1].weak_type and not out["l"][0].weak_type  # weak types survive the rebuild
    # a different structure does not collide with the cached one
    out2 = f({"w": jnp.arange(3.0), "v": jnp.zeros(1)}, 2.0)
    assert len(f._tree_fast) == 2 and isinstance(out2["p"], Pair)


@fluxion.tree_util.register_pytree_node_class
class _Box:
    """A registered node with aux data (a scale that is part of the structure)."""

    def __init__(self, w, scale):
        self.w, self.scale = w, scale

    def tree_flatten(self):
        return (self.w,), self.scale

    @classmethod
    def tree_unflatten(cls, scale, children):
        return cls(children[0], scale)


_Weak = fluxion._src.core.Array  # Array(value, weak_type)


def _f32(*shape):
    return jnp.ones(shape, jnp.float32)


# (arguments of the first call, arguments of the same structure, arguments that differ in one respect each)
FLATTEN_CASES = [
    ((_f32(2), _f32(3)), (_f32(2) * 2, _f32(3)), [(_f32(3), _f32(3)), (_f32(2), jnp.ones(3, jnp.int32)),
                                                 (_f32(2), _Weak(np.ones(3, np.float32), True)), (_f32(2),),
                                                 (_f32(2), np.ones(3, np.float32))]),
    (({"b": _f32(2), "a": [_f32(1), Pair(_f32(2), None)]},), ({"a": [_f32(1), Pair(_f32(2), None)], "b": _f32(2)},),
     [({"b": _f32(2), "c": [_f32(1), Pair(_f32(2), None)]},), ({"b": _f32(2), "a": (_f32(1), Pair(_f32(2), None))},),
      ({"b": _f32(2), "a": [_f32(1), Pair(_f32(2), _f32(1))]},), ({"b": _f32(2), "a": [_f32(1)]},)]),
    ((_Box(_f32(2), 2.0), _f32(1)), (_Box(_f32(2) + 1, 2.0), _f32(1)),
     [(_Box(_f32(2), 3.0), _f32(1)), (Pair(_f32(2), 2.0), _f32(1)), (_Box(_f32(2), 2.0), [_f32(1)])]),
]


@pytest.mark.parametrize("first,same,others", FLATTEN_CASES)
def test_generated_flattener_accepts_exactly_the_structure_it_was_made_for(first, same, others):
    from fluxion._src.jit_flatten import make_flattener
    flatten = make_flattener(first)
    assert flatten is not None
    got = flatten(same)
    want = [x._value for x in fluxion.tree_util.tree_leaves(same)]
    assert len(got) == len(want) and all(g is w for g, w in zip(got, want))
    for other in others:
        assert flatten(other) is None, other


def test_jit_uses_the_flattener_and_retraces_for_other_structures():
    traces = []

    @fluxion.jit
    def f(box, x):
        traces.append(1)
        return box.w * box.scale + x

    a = f(_Box(_f32(2), 2.0), _f32(2))
    assert len(f._flatteners) == 1
    b = f(_Box(_f32(2) * 3, 2.0), _f32(2))          # served by the flattener: no retrace
    c = f(_Box(_f32(2), 5.0), _f32(2))              # other aux data: retraced, correct scale
    d = f(_Box(_f32(2), 2.0), jnp.ones(2, jnp.int32))  # other dtype
    assert len(traces) == 3
    np.testing.assert_allclose(np.asarray(a), 3.0)
    np.testing.assert_allclose(np.asarray(b), 7.0)
    np.testing.assert_allclose(np.asarray(c), 6.0)
    np.testing.assert_allclose(np.asarray(d), 3.0)
    f.clear_cache()
    assert not f._flatteners


def test_a_structure_first_called_with_a_python_scalar_leaf_gets_a_flattener_later():
    f = fluxion.jit(lambda s, x: ({"n": s["n"] + 1, "w": s["w"]}, x * 2.0))
    state, out = f({"n": 0, "w": _f32(2)}, _f32(3))     # a Python int leaf: no flattener
    assert not f._flatteners
    state, out = f(state, out)                           # the same structure, all Arrays
    assert len(f._flatteners) == 1
    state, out = f(state, out)
    assert int(state["n"]) == 3 and float(out[0]) == 8.0 and f._cache_size() == 1


def test_log_compiles_says_what_changed(caplog):
    f = fluxion.jit(lambda x, n: x * n, static_argnums=1)
    with fluxion.config.override("jax_log_compiles", True), caplog.at_level(logging.WARNING, logger="fluxion.jit"):
        f(jnp.ones((32, 784)), 2)
        f(jnp.ones((16, 784)), 2)
        f(jnp.ones((16, 784)), 3)
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 3
    assert "x: f32[32,784] -> f32[16,784]" in msgs[1]
    assert "static argument 1: 2 -> 3" in msgs[2]
    assert "test_jit_dispatch.py" in msgs[0]  # the function's source location


def test_repeated_recompiles_warn():
    f = fluxion.jit(lambda x: x + 1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in range(1, 22):
            f(jnp.ones(n))
    assert any("compiled 20 times" in str(x.message) for x in w)


@needs_compiler
def test_donated_pytree_arguments_are_mapped_to_leaves():
    @fluxion.jit
    def noop(s):
        return s

    step = fluxion.jit(lambda s, g: {"w": s["w"] - g, "b": s["b"] - g.sum()}, donate_argnums=0)
    s = {"w": jnp.ones(1 << 16), "b": jnp.ones(())}
    # The buffer's address, not the buffer: holding it would be an alias, which donation refuses to overwrite.
    ptr = s["w"]._value.__array_interface__["data"][0]
    out = step(s, jnp.ones(1 << 16))
    assert out["w"]._value.__array_interface__["data"][0] == ptr
    assert s["w"].is_deleted()
    np.testing.assert_array_equal(np.asarray(out["w"]), 0.0)
    del noop


@needs_compiler
@pytest.mark.skipif(not fusion.available(), reason="Numba is not installed")
@pytest.mark.usefixtures("without_fusion_check")
def test_second_process_loads_kernels_from_the_disk_cache(tmp_path):
    script = textwrap.dedent("""
        import os, sys, numpy as np
        import fluxion, fluxion.numpy as jnp
        from fluxion._src.backends.compiler.fusion import runtime
        f = fluxion.jit(lambda x: jnp.sum(jnp.exp(x) * 2.0 + x))
        x = jnp.asarray(np.linspace(0, 1, 1 << 15, dtype=np.float32))
        v = float(f(x))
        (cf,) = f._cache.values()
        assert cf.executable.tier == 1, cf.executable.tier
        k = cf.executable.kernels[0]
        hits = runtime._loaded[k.digest].stats.cache_hits
        print(sum(hits.values()), v)
    """)
    env = dict(os.environ, FLUXION_CACHE_DIR=str(tmp_path), FLUXION_JIT_SYNC_KERNELS="1")
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    hits1, v1 = first.stdout.split()
    hits2, v2 = second.stdout.split()
    assert int(hits1) == 0 and int(hits2) >= 1  # compiled once, then loaded
    assert v1 == v2
    assert len(os.listdir(tmp_path / "executables")) == 1

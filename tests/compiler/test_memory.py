"""Memory planning: liveness, buffer reuse (`out=`), in-place updates of dead operands, donated arguments, and the
peak-memory workload of the issue (a chain of `.at[].set` copies that only keeps the last one)."""

from __future__ import annotations

import os
import sys

import tracemalloc
from functools import partial

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion._src.backends import compiler
from fluxion._src.backends.compiler import memory
from fluxion._src.core import ShapedArray, Var

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import assert_same_values, closed_of, reference  # noqa: E402

needs_compiler = pytest.mark.skipif(not compiler.enabled(), reason="jit compiler disabled (FLUXION_JIT_COMPILER=0)")

N = 1 << 20  # 4 MiB of float32


def _var(shape=(N,), dtype=np.float32):
    return Var(ShapedArray(shape, np.dtype(dtype)))


def test_planner_liveness_and_ownership():
    a, b, c, d = _var(), _var(), _var(), _var()
    # node 0: b = f(a); node 1: c = g(b); node 2: d = h(b, c); output d
    p = memory.Planner([[a], [b], [b, c]], [d])
    p.define_external(a)
    p.define(b, memory.FRESH, [a])
    assert not p.inplace_ok(a, 0)          # arguments are never written
    assert not p.inplace_ok(b, 1)          # b is still read by node 2
    assert p.inplace_ok(b, 2)              # ...and dead after it
    p.define(c, memory.VIEW, [b])          # c is a view of b: b's buffer lives as long as c
    assert p.storages[c] == p.storages[b]
    assert p.take_buffer((N,), np.dtype(np.float32), 1, [b]) is None     # b (and its view c) still needed
    assert p.take_buffer((N,), np.dtype(np.float32), 2, [b, c]) is b     # NumPy ufuncs handle the overlap
    p2 = memory.Planner([[a], [b], [b, c]], [d])
    p2.define_external(a)
    p2.define(b, memory.FRESH, [a])
    p2.define(c, memory.FRESH, [b])
    assert p2.take_buffer((N,), np.dtype(np.float32), 2, [b, c]) is b   # a dying operand of the same type
    assert p2.take_buffer((N,), np.dtype(np.float64), 2, [b, c]) is None  # wrong dtype
    assert p2.take_buffer((4,), np.dtype(np.float32), 2, [b, c]) is None   # too small to plan


def test_unknown_implementations_are_assumed_to_alias_their_operands():
    a, b, c = _var(), _var(), _var()
    p = memory.Planner([[a], [b], [c]], [c])
    p.define_fresh(a)
    p.define(b, memory.UNKNOWN, [a])
    assert p.storages[b] >= p.storages[a]
    assert not p.inplace_ok(b, 1)  # unknown results are not writable


def test_free_pool_reuses_dead_buffers_only_if_a_later_node_needs_one():
    a, b, c, d = _var(), _var(), _var(), _var()
    p = memory.Planner([[a], [b], [c]], [d])
    p.expect_outputs([[b], [c], [d]])
    p.define_external(a)
    p.define_fresh(b)
    p.define_fresh(c)
    assert p.release_after(1, [b]) == []          # b is dead after node 1 and node 2 produces a float32[N]: pooled
    assert p.take_buffer((N,), np.dtype(np.float32), 2, [c]) in (b, c)


def test_elementwise_chain_reuses_buffers(rng):
    x = rng.standard_normal(N).astype(np.float32)
    f = lambda x: ((x * 2.0 + 1.0) * x - 3.0) / (x + 4.0)  # noqa: E731
    closed = closed_of(f, x)
    exe = compiler.compile_closed(closed, fuse=False)
    # Four nodes after contraction (two multiply-adds, an add, a quotient); all but those reading only x write
    # into a dead buffer.
    assert exe.source.count("out=") >= 2
    assert_same_values(list(exe(x)), reference(closed, x, contracted=True))


def test_dynamic_update_slice_and_scatter_run_in_place_on_dead_operands():
    def f(x):
        y = x * 2.0                              # owned by the generated code
        y = fluxion.lax.dynamic_update_slice(y, jnp.ones(3), (5,))
        y = y.at[7].set(-1.0)
        y = y.at[jnp.array([2, 3])].set(5.0)
        return y.at[jnp.array([0, 1])].add(10.0)

    x = np.arange(N, dtype=np.float32)
    x_copy = x.copy()
    closed = closed_of(f, x)
    exe = compiler.compile_closed(closed, fuse=False)
    src = exe.source
    assert "scatter_inplace" in src and "] = " in src
    # The element scatter-add is a row scatter-add of a 1-D operand (`compiler.rows`), into `y` itself.
    (add,) = [line for line in src.splitlines() if "add_rows(" in line]
    assert "order='C'" not in add
    assert_same_values(list(exe(x)), reference(closed, x))
    np.testing.assert_array_equal(x, x_copy)  # the argument was not touched


def test_updates_of_arguments_copy_first():
    x = np.arange(10, dtype=np.float32)
    out = fluxion.jit(lambda x: x.at[3].set(0.0))(x)
    assert x[3] == 3.0 and np.asarray(out)[3] == 0.0


@needs_compiler
def test_donated_argument_buffer_is_reused_for_the_output():
    @partial(fluxion.jit, donate_argnums=(0,))
    def step(w, g):
        return w - 0.1 * g

    w = jnp.ones(N)
    g = jnp.ones(N)
    # The buffer's address, not the buffer: holding it would be an alias, which donation refuses to overwrite.
    w_ptr = w._value.__array_interface__["data"][0]
    g_before = np.asarray(g).copy()
    w2 = step(w, g)
    assert w2._value.__array_interface__["data"][0] == w_ptr  # written in place
    assert w.is_deleted()
    np.testing.assert_allclose(np.asarray(w2), 0.9)
    np.testing.assert_array_equal(np.asarray(g), g_before)  # not donated: untouched
    w3 = step(w2, g)                                      # the fast path donates too
    np.testing.assert_allclose(np.asarray(w3), 0.8)


def test_donation_never_writes_into_numpy_inputs_views_or_repeated_arguments():
    step = fluxion.jit(lambda w, g: w - g, donate_argnums=(0,))
    w_np = np.ones(N, np.float32)
    step(w_np, jnp.ones(N))
    assert w_np[0] == 1.0                                  # a NumPy argument stays the caller's
    base = jnp.ones(2 * N)
    view = base[:N]
    step(view, jnp.ones(N))
    assert np.asarray(base)[0] == 1.0                     # a view does not own its buffer: copied first
    w = jnp.ones(N)
    out = step(w, w)                                       # same buffer passed twice
    np.testing.assert_array_equal(np.asarray(out), 0.0)


def test_donate_argnames_maps_to_positions():
    f = fluxion.jit(lambda w, g: w + g, donate_argnames="w")
    assert f._donate_argnums == (0,)


def _peak_bytes(fn, *args) -> int:
    fn(*args)  # compile first; only the run is measured
    tracemalloc.start()
    tracemalloc.reset_peak()
    out = fn(*args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del out
    return peak


@needs_compiler
@pytest.mark.parametrize("n", [1 << 22])
def test_in_place_update_chain_peaks_at_the_arrays_it_needs(n):
    """The issue's memory workload: build n float32, derive two updated copies, use only the last one."""
    @partial(fluxion.jit, static_argnums=0)
    def chain(n, i):
        x = jnp.arange(n, dtype=jnp.float32) * 2.0
        y = x.at[i].set(-1.0)
        z = y.at[i + 1].set(-2.0)
        return z

    peak = _peak_bytes(chain, n, 3)
    one = 4 * n
    assert peak < 1.5 * one, f"peak {peak / one:.2f} arrays, expected about 1"
    z = np.asarray(chain(n, 3))
    assert z[3] == -1.0 and z[4] == -2.0 and z[5] == 10.0

"""The whole-step tier (`compiler.wholestep`) against the plain NumPy path.

Each comparison compiles one closed jaxpr twice -- `compile_closed(fuse=False)` (generated NumPy code) and with the
whole-step tier requested -- waits for the background compilation, checks that the executable switched to the
native function and that the call did run natively (no fallback), and compares outputs. Programs: the MNIST MLP
train step (batch 32 and 1024), table-driven programs over float32/float64/int32/bool, randomly generated programs
(the fused tier's generator), and `jit` against eager execution.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import config, lax
from fluxion._src.backends import compiler
from fluxion._src.backends.compiler import fusion, wholestep

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import closed_of  # noqa: E402
from test_fused_tier import _build, _materialize, _mlp_step, programs  # noqa: E402

needs_numba = pytest.mark.skipif(not (compiler.enabled() and fusion.available()),
                                 reason="needs the jit compiler and Numba")
pytestmark = [needs_numba, pytest.mark.usefixtures("without_fusion_check")]

try:
    import hypothesis
except ImportError:  # pragma: no cover
    hypothesis = None


def run_whole(closed, *args):
    """(NumPy-path outputs, whole-step outputs) of one program, asserting that the whole-step function ran."""
    args = [np.asarray(a).astype(v.aval.dtype) for a, v in zip(args, closed.jaxpr.invars)]
    plain = compiler.compile_closed(closed, fuse=False)
    whole = compiler.compile_closed(closed, fuse=True, whole_step=True)
    assert compiler.wait_for_kernels(600)
    assert whole.tier == 2, "the whole-step function was not built:\n" + whole.source
    want = [np.asarray(o) for o in plain(*[np.array(a) for a in args])]
    got = [np.asarray(o) for o in whole(*[np.array(a) for a in args])]
    assert whole.fn.fallbacks == [0], "the whole-step function refused its arguments"
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
    return want, got


def _close(got, want, rtol):
    for g, w in zip(got, want):
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0))
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)


def _step_program(batch, rng):
    step, args = _mlp_step(batch, rng)
    leaves, tree = fluxion.tree_util.tree_flatten(args)
    closed = fluxion.make_jaxpr(lambda *xs: step(*fluxion.tree_util.tree_unflatten(tree, xs)))(*leaves)
    return closed, [np.asarray(x) for x in leaves]


@pytest.mark.parametrize("batch", [32, 1024])
def test_mnist_mlp_step_whole_step_matches_numpy(batch, rng):
    closed, leaves = _step_program(batch, rng)
    want, got = run_whole(closed, *leaves)
    # The loss to rounding; parameters move by lr * m / (sqrt(v) + eps), which amplifies last-bit differences of
    # near-zero gradients up to the learning rate (1e-3): they get an absolute tolerance well below it.
    assert abs(float(got[-1]) - float(want[-1])) < 1e-5 * abs(float(want[-1])), (got[-1], want[-1])
    for g, w in zip(got, want):
        scale = float(np.max(np.abs(w), initial=0.0))
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=max(1e-4 * scale, 1e-7) if scale < 1e-2 else 1e-4)


def _mixed(x, w, k, m):
    """Products (plain and transposed), a bias, relu, a softmax, integer and boolean work, a slice and a pow."""
    h = jnp.maximum(x @ w + 1.0, 0.0)
    g = (x.T @ h).T
    p = fluxion.nn.softmax(h, axis=-1)
    count = jnp.sum(m.astype(jnp.int32)) + k
    frac = p[:, 1::2].sum(axis=0) * lax.pow(jnp.asarray(0.9, x.dtype), count.astype(x.dtype))
    return g, p, frac, count, jnp.logical_and(m, h[:, :1] > 0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_products_softmax_int_and_bool_work_in_one_function(dtype, rng):
    with config.override("jax_enable_x64", dtype == "float64"):
        x = rng.standard_normal((6, 5)).astype(dtype)
        w = rng.standard_normal((5, 4)).astype(dtype)
        k = np.int32(3)
        m = rng.random((6, 1)) > 0.5
        closed = closed_of(_mixed, x, w, k, m)
        assert closed.out_avals[0].dtype == np.dtype(dtype)
        want, got = run_whole(closed, x, w, k, m)
    _close(got, want, 1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("fun,shapes", [
    (lambda a, b: jnp.dot(a, b), [(3, 4), (4,)]),           # matrix-vector
    (lambda a, b: jnp.dot(a, b), [(4,), (4, 3)]),           # vector-matrix
    (lambda a, b: a.T @ b.T, [(4, 3), (2, 4)]),             # both operands transposed views
    (lambda a, b: (a @ b).reshape(-1) * 2.0, [(1, 1), (1, 1)]),  # size-1 everything
])
def test_product_forms(fun, shapes, rng):
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want, got = run_whole(closed_of(fun, *args), *args)
    _close(got, want, 1e-5)


def test_unsupported_programs_keep_their_tier(rng):
    x = rng.standard_normal((8, 8)).astype(np.float32)
    for fun in (lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0, x),     # control flow
                lambda x: jnp.einsum("bij,bjk->bik", x[None], x[None]),    # a batched product
                lambda x: jnp.sort(x, axis=0)):                            # no kernel or Numba lowering
        closed = closed_of(fun, x)
        with pytest.raises(wholestep.Unsupported):
            wholestep.build(fusion.prepare(compiler.passes.optimize(closed)))
        exe = compiler.compile_closed(closed, fuse=True, whole_step=True)
        assert compiler.wait_for_kernels(600)
        assert exe.tier < 2
        np.testing.assert_allclose(np.asarray(exe(x)[0]), np.asarray(fun(x)), rtol=1e-6)


def test_arguments_of_another_layout_are_copied_or_run_the_previous_tier(rng):
    x = rng.standard_normal((6, 5)).astype(np.float32)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    v = rng.standard_normal(10).astype(np.float32)
    closed = closed_of(lambda x, w, v: (jnp.tanh(x @ w), v * 2.0), x, w, v[:5])
    exe = compiler.compile_closed(closed, fuse=True, whole_step=True)
    assert compiler.wait_for_kernels(600) and exe.tier == 2
    # Column-major matrices (a transposed view) are copied to C order by the entry function: still native.
    got = np.asarray(exe(np.asfortranarray(x), np.asfortranarray(w), v[:5])[0])
    assert exe.fn.fallbacks == [0]
    np.testing.assert_allclose(got, np.tanh(x @ w), rtol=1e-5, atol=1e-6)
    # A strided vector: Numba's C-contiguous signature refuses it, and the previous tier runs.
    got = [np.asarray(o) for o in exe(x, w, v[::2])]
    assert exe.fn.fallbacks == [1]
    np.testing.assert_allclose(got[0], np.tanh(x @ w), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], v[::2] * 2)
    np.testing.assert_allclose(np.asarray(exe(x, w, v[:5])[0]), np.tanh(x @ w), rtol=1e-5, atol=1e-6)
    assert exe.fn.fallbacks == [1]


def _log_prob_loss(logits, actions, advantages):
    """A policy-gradient loss: the log-probability of each taken action (a gather with batching dimensions, whose
    gradient is a scatter-add)."""
    logp = fluxion.nn.log_softmax(logits)
    taken = jnp.take_along_axis(logp, actions[:, None], axis=1)[:, 0]
    return -jnp.mean(taken * advantages)


_ROWS = np.array([3, 0, 3, 7, 1], np.int32)           # a repeated row: the scatter-adds accumulate twice into it
_OUT_OF_BOUNDS = np.array([2, 9, -12, 5, 0], np.int32)  # 9 and -12 lie outside 8 rows (-12 even after wrapping)

# name -> (function, argument makers): gathers and scatters of XLA's general forms, every mode.
INDEXING = {
    "take_along_axis_and_its_gradient": (fluxion.value_and_grad(_log_prob_loss), lambda r: [
        r.standard_normal((6, 3)), np.array([0, 2, 1, 1, 0, 2], np.int32), r.standard_normal(6)]),
    "rows": (lambda x, i: x[i] * 2.0, lambda r: [r.standard_normal((8, 5)), _ROWS]),
    "rows_fill": (lambda x, i: x.at[i].get(mode="fill", fill_value=-1.5), lambda r: [r.standard_normal((8, 5)),
                                                                                      _OUT_OF_BOUNDS]),
    "rows_fill_nan": (lambda x, i: x.at[i].get(mode="fill"), lambda r: [r.standard_normal((8, 5)), _OUT_OF_BOUNDS]),
    "columns_clip": (lambda x, i: jnp.take(x, i, axis=1, mode="clip"), lambda r: [r.standard_normal((3, 8)),
                                                                                   _OUT_OF_BOUNDS]),
    "pairs": (lambda x, i, j: x[i, j], lambda r: [r.standard_normal((8, 6)), _ROWS, _ROWS[::-1] % 6]),
    "windows": (lambda x, s: fluxion.vmap(lambda k: lax.dynamic_slice(x, (k, 1), (3, 4)))(s),
                lambda r: [r.standard_normal((8, 6)), np.array([0, 6, 2, -1], np.int32)]),   # 6, -1: clamped
    "scatter_add_repeated": (lambda x, i, u: x.at[i].add(u), lambda r: [r.standard_normal((8, 5)), _ROWS,
                                                                         r.standard_normal((5, 5))]),
    "scatter_add_drop": (lambda x, i, u: x.at[i].add(u, mode="drop"), lambda r: [
        r.standard_normal((8, 5)), _OUT_OF_BOUNDS, r.standard_normal((5, 5))]),
    "scatter_add_pairs": (lambda x, i, j, u: x.at[i, j].add(u), lambda r: [
        r.standard_normal((8, 6)), _ROWS, _ROWS % 6, r.standard_normal(5)]),
    "scatter_set_clip": (lambda x, i, u: x.at[i].set(u, mode="clip"), lambda r: [
        r.standard_normal((8, 5)), np.array([1, 4, 20], np.int32), r.standard_normal((3, 5))]),
    "batched_take_along_axis": (fluxion.vmap(lambda x, i: jnp.take_along_axis(x, i, axis=0)), lambda r: [
        r.standard_normal((2, 7, 3)), r.integers(0, 7, (2, 4, 3)).astype(np.int32)]),
}


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_gathers_and_scatters_in_the_whole_step_function_match_numpy(name, rng):
    fun, make = INDEXING[name]
    args = [a if a.dtype.kind in "iu" else a.astype(np.float32) for a in map(np.asarray, make(rng))]
    closed = closed_of(fun, *args)
    inlined = compiler.passes.optimize(closed).jaxpr.eqns
    assert any(e.primitive.name in ("gather", "scatter-add", "scatter") for e in inlined), closed
    want, got = run_whole(closed, *args)
    if name == "take_along_axis_and_its_gradient":
        _close(got, want, 1e-6)   # the softmax around it: rounding
    else:
        for g, w in zip(got, want):  # pure data movement and additions in the same order: the same bits
            np.testing.assert_array_equal(g, w)


def test_jit_runs_the_whole_step_function_and_matches_eager(rng):
    step, args = _mlp_step(32, rng)
    with config.override("fluxion_jit_whole_step", True):
        jitted = fluxion.jit(step)
        state, loss = jitted(*args)
        assert compiler.wait_for_kernels(600)
        compiled = next(iter(jitted._cache.values()))
        assert compiled.executable.tier == 2
        state, loss = jitted(state, *args[1:])
        assert compiled.executable.fn.fallbacks == [0]
    eager_state, eager_loss = step(*args)
    eager_state, eager_loss = step(eager_state, *args[1:])
    np.testing.assert_allclose(float(loss), float(eager_loss), rtol=1e-5)
    for g, w in zip(fluxion.tree_util.tree_leaves(state), fluxion.tree_util.tree_leaves(eager_state)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-4)


def test_the_whole_step_function_waits_until_the_program_has_run_long_enough(rng):
    # Without sync kernels the fused tier comes first; the whole-step function is compiled only once the program has
    # spent `fluxion_jit_whole_step_after` seconds in its calls (a short run never pays for it).
    x = rng.standard_normal((64, 64)).astype(np.float32)
    # A constant no other test uses: the program's whole-step function must not be on disk from an earlier test.
    c = float(np.random.default_rng().integers(2, 2 ** 20))
    closed = closed_of(lambda x: jnp.tanh(x @ x) * 2.0 + c, x)
    with config.override("fluxion_jit_whole_step", True), config.override("fluxion_jit_sync_kernels", False), \
            config.override("fluxion_jit_whole_step_after", 0.2):
        exe = compiler.compile_closed(closed, fuse=True)
        want = np.tanh(x @ x) * 2.0 + np.float32(c)
        np.testing.assert_allclose(np.asarray(exe(x)[0]), want, rtol=1e-5, atol=1e-5)
        assert compiler.wait_for_kernels(600)
        assert exe.tier == 1, "the whole-step function was built before the program was hot"
        spent = 0.0
        while exe._hot is not None:  # calls until the trigger fires (it times a little less than this loop)
            t0 = time.perf_counter()
            np.testing.assert_allclose(np.asarray(exe(x)[0]), want, rtol=1e-5, atol=1e-5)
            spent += time.perf_counter() - t0
            assert spent < 60, "the trigger never fired"
        assert spent >= 0.2
        assert compiler.wait_for_kernels(600)
        assert exe.tier == 2
        assert exe._hot is None  # the timing wrapper is gone
        np.testing.assert_allclose(np.asarray(exe(x)[0]), want, rtol=1e-5, atol=1e-5)
        assert exe.fn.fallbacks == [0]


def test_the_tier_can_be_turned_off(rng):
    x = rng.standard_normal((64, 64)).astype(np.float32)
    with config.override("fluxion_jit_whole_step", False):
        assert not wholestep.enabled()
        exe = compiler.compile_closed(closed_of(lambda x: jnp.tanh(x @ x) * 2.0 + 1.0, x), fuse=True)
        assert compiler.wait_for_kernels(600)
        assert exe.tier < 2


if hypothesis is not None:
    st = hypothesis.strategies

    @hypothesis.settings(deadline=None, max_examples=6,
                         suppress_health_check=[hypothesis.HealthCheck.too_slow,
                                                hypothesis.HealthCheck.data_too_large])
    @hypothesis.given(programs(), st.integers(0, 2 ** 32 - 1))
    def test_random_programs_whole_step_matches_numpy(program, seed):
        """The fused tier's random programs (elementwise chains, reductions, broadcasts, transposed and sliced
        views over bool, integer and float dtypes), each compiled into one function (max_examples is small: each
        example compiles a Numba module)."""
        shape, inputs, steps, outputs = program
        rng = np.random.default_rng(seed)
        args, views = _materialize(shape, inputs, rng)
        closed = closed_of(_build(shape, steps, views, outputs), *args)
        try:  # e.g. a float -> int conversion has no kernel form: such programs keep the fused tier
            wholestep.build(fusion.prepare(compiler.passes.optimize(closed)))
        except wholestep.Unsupported:
            hypothesis.assume(False)
        want, got = run_whole(closed, *args)
        for g, w in zip(got, want):
            if w.dtype.kind == "f":
                # Kernels use `mathlib`'s transcendental functions and float64 sums: equal to rounding, with NaN
                # and infinities where NumPy has them.
                np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5 * float(
                    np.max(np.abs(w[np.isfinite(w)]), initial=1.0)), equal_nan=True)
            else:
                np.testing.assert_array_equal(g, w)

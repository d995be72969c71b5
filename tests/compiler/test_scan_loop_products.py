"""Loop kernels with BLAS products (`fusion.loops`): recurrent cells whose per-step products call `np.dot` inside the
compiled scan, input products hoisted out of the time loop, weight-gradient carries summed as one product after it,
products of few rows computed transposed, `pad` in bodies. Every case is checked against the equation-by-equation
interpreter (the NumPy path), and the LSTM's gradient against finite differences and eager execution.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion._src.backends import compiler
from fluxion._src.backends.compiler import fusion
from fluxion._src.backends.compiler.fusion import loops

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import closed_of, reference  # noqa: E402

needs_numba = pytest.mark.skipif(not (compiler.enabled() and fusion.available()),
                                 reason="needs the jit compiler and Numba")

HIDDEN, BATCH, INPUT = 64, 8, 16   # 8 x 256 gates x 64: above `BLAS_MIN_WORK`, so products call BLAS


def _lstm_loss(params, xs, reverse=False):
    wx, wh, b = params

    def cell(carry, x):
        h, c = carry
        z = x @ wx + h @ wh + b
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c = fluxion.nn.sigmoid(f) * c + fluxion.nn.sigmoid(i) * jnp.tanh(g)
        h = fluxion.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h
    zeros = jnp.zeros((xs.shape[1], wh.shape[0]), xs.dtype)
    _, hs = lax.scan(cell, (zeros, zeros), xs, reverse=reverse)
    return jnp.mean(hs * hs)


def _lstm_data(rng, dtype, steps):
    params = ((rng.standard_normal((INPUT, 4 * HIDDEN)) / np.sqrt(INPUT)).astype(dtype),
              (rng.standard_normal((HIDDEN, 4 * HIDDEN)) / np.sqrt(HIDDEN)).astype(dtype),
              (rng.standard_normal(4 * HIDDEN) * 0.1).astype(dtype))
    return params, rng.standard_normal((steps, BATCH, INPUT)).astype(dtype)


def _compiled(fun, *args):
    dtypes = {np.asarray(a).dtype for a in fluxion.tree_util.tree_leaves(args)}
    with fluxion.config.override("jax_enable_x64", np.dtype(np.float64) in dtypes):
        closed = closed_of(fun, *args)
        exe = compiler.compile_closed(closed, fuse=True, sync=True)
        flat = [np.asarray(a) for a in fluxion.tree_util.tree_leaves(args)]
        return list(exe(*flat)), reference(closed, *flat), exe


def _tol(dtype):
    return dict(rtol=2e-4, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reverse", [False, True])
def test_lstm_value_and_grad_matches_numpy_path(rng, dtype, reverse):
    params, xs = _lstm_data(rng, dtype, 9)
    fun = fluxion.value_and_grad(lambda p, xs: _lstm_loss(p, xs, reverse))
    got, want, exe = _compiled(fun, params, xs)
    # Both scans (the forward one and the transposed one of the gradient) are loop kernels calling BLAS, with the
    # input product hoisted and the weight gradients summed after the loop.
    assert exe.source.count("loop kernel of a scan") == 2
    assert "np.dot(xs" in exe.source and ".reshape((nsteps * " in exe.source
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, **_tol(dtype))


@needs_numba
@pytest.mark.parametrize("steps", [0, 1, 2])
def test_lstm_short_sequences(rng, steps):
    params, xs = _lstm_data(rng, np.float64, steps)
    got, want, _ = _compiled(fluxion.value_and_grad(_lstm_loss), params, xs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, equal_nan=True, **_tol(np.float64))


@fluxion.config.override("jax_enable_x64", True)
def test_lstm_gradient_matches_finite_differences_and_eager(rng):
    params, xs = _lstm_data(rng, np.float64, 5)
    jitted = fluxion.jit(fluxion.grad(_lstm_loss))(params, xs)
    eager = fluxion.grad(_lstm_loss)(params, xs)
    for a, b in zip(jitted, eager):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-13)
    eps = 1e-6
    for leaf, grad in zip(range(3), jitted):
        for flat_index in rng.choice(params[leaf].size, 4, replace=False):
            plus = [np.array(p) for p in params]
            minus = [np.array(p) for p in params]
            plus[leaf].flat[flat_index] += eps
            minus[leaf].flat[flat_index] -= eps
            fd = (float(_lstm_loss(tuple(plus), xs)) - float(_lstm_loss(tuple(minus), xs))) / (2 * eps)
            np.testing.assert_allclose(np.asarray(grad).flat[flat_index], fd, rtol=1e-5, atol=1e-9)


@needs_numba
def test_several_carries_stacked_outputs_and_a_carry_only_product(rng):
    # (contractive weights: the recurrence must not amplify rounding differences)
    w = (rng.standard_normal((32, 96)) * 0.5 / np.sqrt(32)).astype(np.float32)
    u = (rng.standard_normal((96, 32)) * 0.5 / np.sqrt(96)).astype(np.float32)
    xs = rng.standard_normal((6, 16, 32)).astype(np.float32)

    def f(w, u, xs):
        def body(carry, x):
            a, acc, k = carry
            y = jnp.tanh(a @ w)                 # few rows, more columns: computed transposed
            a = (y @ u) * 0.5 + x               # per-step product of two computed values
            acc = acc + x.T @ y                 # a carried sum of products: summed after the loop
            return (a, acc, k + 1), (y, a.sum(0))
        return lax.scan(body, (jnp.zeros((16, 32)), jnp.zeros((32, 96)), jnp.int32(0)), xs)

    got, want, exe = _compiled(f, w, u, xs)
    assert "loop kernel of a scan" in exe.source
    flat_want = fluxion.tree_util.tree_leaves(want)
    for g, v in zip(got, flat_want):
        np.testing.assert_allclose(g, v, rtol=1e-5, atol=1e-5)
        assert np.asarray(g).dtype == np.asarray(v).dtype


@needs_numba
@pytest.mark.parametrize("config", [((0, 0, 0), (3, 2, 0)), ((1, -1, 0), (-2, 3, 1)), ((0, 0, 1), (0, 0, 2))])
def test_pad_in_a_loop_kernel(rng, config):
    xs = rng.standard_normal((5, 4, 6)).astype(np.float32)

    def f(xs):
        def body(c, x):
            p = lax.pad(x, np.float32(-1.5), config)
            return c + p.sum(), p * 2.0
        return lax.scan(body, np.float32(0), xs)

    closed = closed_of(f, xs)
    scan = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"][0]
    assert loops.scan_eligible(scan)
    got, want, exe = _compiled(f, xs)
    assert "loop kernel of a scan" in exe.source
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-5, atol=1e-5)


def test_blas_product_rule():
    def eqn_of(a_shape, b_shape, dtype=np.float32):
        closed = closed_of(lambda a, b: a @ b, np.zeros(a_shape, dtype), np.zeros(b_shape, dtype))
        return closed.jaxpr.eqns[-1]
    assert loops.blas_product(eqn_of((16, 128), (128, 512)))
    assert not loops.blas_product(eqn_of((4, 8), (8, 4)))               # small: an explicit loop
    assert not loops.blas_product(eqn_of((16, 128), (128, 512), np.int32))
    assert not loops.blas_product(eqn_of((2, 16, 128), (2, 128, 512)))  # batched


@needs_numba
def test_loop_kernel_products_run_on_one_scipy_blas_thread_whatever_was_set_before(rng):
    """The products inside a loop kernel call the OpenBLAS SciPy ships; a whole-step function may have left it on
    two threads, and OpenBLAS's sums differ between thread counts for some shapes, so the kernel call sets one."""
    from fluxion._src.backends.compiler import blas, threads
    get, set_ = blas.scipy_controls()
    if set_ is None:
        pytest.skip("SciPy's OpenBLAS exposes no thread controls")
    params, xs = _lstm_data(rng, np.float32, 5)
    before = get()
    try:
        set_(2)
        threads._local.__dict__.pop("scipy_blas", None)
        got, want, _ = _compiled(_lstm_loss, params, xs)
        assert get() == 1
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    finally:
        set_(before)
        threads._local.__dict__.pop("scipy_blas", None)


# Bodies exercising the element-loop plans: pads expanded in the formula that reads them (one loop per box of the
# output, or a bounds test where a pad is read at a shifted index), a carry summing a stacked value's columns after
# the loop, and carried products sharing their right operand summed as one product. Each: (name, body, carry
# initial values, xs shape, dtype).
def _pads_body(c, x):  # x (4, 6) -> three pads onto (8, 8): disjoint blocks, an overlapping one with a fill
    y = jnp.tanh(x)
    p1 = lax.pad(y, jnp.zeros((), x.dtype), ((0, 4, 0), (0, 2, 0)))
    p2 = lax.pad(x * 2.0, jnp.zeros((), x.dtype), ((4, 0, 0), (2, 0, 0)))
    p3 = lax.pad(x, jnp.full((), -1.5, x.dtype), ((2, 2, 0), (2, 0, 0)))
    s = p1 + p2 * p3
    return c + s, s


def _nested_pads_body(c, x):  # a pad inside a pad's operand: read at a shifted index, so with a bounds test
    inner = lax.pad(x, jnp.full((), 0.5, x.dtype), ((1, 0, 0), (0, 2, 0)))   # (5, 8)
    outer = lax.pad(inner * 3.0, jnp.zeros((), x.dtype), ((2, 1, 0), (0, 0, 0)))  # (8, 8)
    s = outer + c
    return s * 0.5, s


def _column_sums_body(carry, x):  # x (5, 6): a bias-like carry summing the columns of xs
    c, w = carry
    return (c + x.sum(0), w + x.T @ x), x * 2.0


def _shared_right_operand_body(carry, x):  # two carried product sums against the same per-step value
    h, acc1, acc2 = carry
    y = jnp.tanh(h @ _W + x)                  # (16, 48)
    z = jnp.sin(x)                            # a computed per-step value, stacked
    return (y @ _U, acc1 + x.T @ y, acc2 + z.T @ y), y.sum(1)


_W = (np.random.default_rng(1).standard_normal((48, 48)) * 0.1).astype(np.float32)
_U = (np.random.default_rng(2).standard_normal((48, 48)) * 0.1).astype(np.float32)

ELEMENT_PLAN_CASES = [
    ("pads", _pads_body, lambda dt: np.zeros((8, 8), dt), (5, 4, 6)),
    ("nested_pads", _nested_pads_body, lambda dt: np.zeros((8, 8), dt), (5, 4, 6)),
    ("column_sums", _column_sums_body,
     lambda dt: (np.zeros(6, dt), np.zeros((6, 6), dt)), (7, 5, 6)),
    ("shared_right_operand", _shared_right_operand_body,
     lambda dt: (np.zeros((16, 48), dt), np.zeros((48, 48), dt), np.zeros((48, 48), dt)), (6, 16, 48)),
]


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name,body,init,xs_shape", ELEMENT_PLAN_CASES, ids=[c[0] for c in ELEMENT_PLAN_CASES])
def test_element_loop_plans_match_numpy_path(rng, name, body, init, xs_shape, dtype, reverse):
    xs = rng.standard_normal(xs_shape).astype(dtype)
    carry = init(dtype)

    def f(carry, xs):
        return lax.scan(body, carry, xs, reverse=reverse)

    with fluxion.config.override("jax_enable_x64", dtype == np.float64):
        closed = closed_of(f, carry, xs)
    scan = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"][0]
    assert loops.scan_eligible(scan)
    source = loops.build_scan(scan, 0).source
    if name == "pads":  # three pads, one loop nest per box of their edges (4 x 3), no bounds test, no pad buffer
        assert " if " not in source and source.count("for j0 in range(") == 12 + 1
    if name == "nested_pads":
        assert " if " in source  # the inner pad, read at a shifted index, tests its bounds
    if name == "column_sums":  # summed after the loop
        assert source.count("np.zeros(6, np.float64)") == 1
    if name == "shared_right_operand":
        assert source.count("np.dot(cat") == 1
    got, want, exe = _compiled(f, carry, xs)
    assert "loop kernel of a scan" in exe.source
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, **(_tol(dtype) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-5)))


def _nest(reads, writes, body="pass"):
    return loops._Nest([(0, 4), (0, 8)], [body], reads, writes)


@pytest.mark.parametrize("second,merged", [
    (_nest([("a", True)], ["b"]), True),            # reads what the first wrote, at the loop index
    (_nest([("a", False)], ["b"]), False),          # ... at another index (a transpose, a shifted slice)
    (_nest([("x", True)], ["x"]), True),            # overwrites what the first read at the loop index
    (_nest([], ["y"]), False),                      # overwrites what the first read at another index
])
def test_adjacent_nests_merge_only_when_exact(second, merged):
    first = _nest([("x", True), ("y", False)], ["a"], "first")
    lines = loops._fuse_nests([first, second])
    assert (sum(ln.startswith("for j0") for ln in lines) == 1) == merged
    other = loops._fuse_nests([first, "s = 1", _nest([("a", True)], ["b"])])  # a statement between: no merge
    assert sum(ln.startswith("for j0") for ln in other) == 2


@needs_numba
@pytest.mark.parametrize("hidden", [1, 3, 33])
def test_lstm_gradient_of_other_hidden_sizes_matches_numpy_path(rng, hidden):
    """Hidden sizes whose products are explicit loops (1, 3) or BLAS calls of odd width (33): the gate pads of the
    gradient become boxes of one column up to 33 columns."""
    params = ((rng.standard_normal((INPUT, 4 * hidden)) / np.sqrt(INPUT)),
              (rng.standard_normal((hidden, 4 * hidden)) / np.sqrt(hidden)),
              (rng.standard_normal(4 * hidden) * 0.1))
    xs = rng.standard_normal((7, BATCH, INPUT))
    for dtype in (np.float32, np.float64):
        p = tuple(a.astype(dtype) for a in params)
        got, want, exe = _compiled(fluxion.value_and_grad(_lstm_loss), p, xs.astype(dtype))
        assert exe.source.count("loop kernel of a scan") == 2
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, **_tol(dtype))


def test_a_merged_nest_writes_at_most_max_nest_writes_buffers():
    nests = [_nest([("x", True)], [f"b{k}"]) for k in range(loops.MAX_NEST_WRITES + 3)]
    lines = loops._fuse_nests(nests)
    assert sum(ln.startswith("for j0") for ln in lines) == 2

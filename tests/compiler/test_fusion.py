"""Fusion: which equations are grouped (IR in, groups out), and fused kernels' values against the interpreter.

Kernel tests need Numba and compile a handful of kernels (cached on disk, so reruns are fast)."""

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
from fluxion._src.backends.compiler.fusion import groups, kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import assert_same_values, closed_of, reference  # noqa: E402

needs_compiler = pytest.mark.skipif(not compiler.enabled(), reason="jit compiler disabled (FLUXION_JIT_COMPILER=0)")

BIG = fluxion.config.fluxion_fuse_min_elements * 4


def _groups(fun, *args):
    closed = compiler.passes.optimize(closed_of(fun, *args))
    j = closed.jaxpr
    gs = groups.Grouping(j.eqns, j.outvars, fluxion.config.fluxion_fuse_min_elements).run()
    return j, gs


def _names(j, g):
    return [j.eqns[m].primitive.name for m in g.members]


# -- grouping (no Numba needed) ------------------------------------------------------------------------------------

def test_elementwise_chain_and_its_reduction_form_one_group():
    j, gs = _groups(lambda x: jnp.sum(jnp.exp(x) * 2.0 + 1.0), np.ones(BIG, np.float32))
    assert len(gs) == 1
    assert _names(j, gs[0]) == ["exp", "mul_add", "reduce_sum"]
    assert gs[0].red_axes == (0,)


def test_small_arrays_and_single_cheap_operations_are_not_fused():
    assert _groups(lambda x: jnp.exp(x) * 2.0 + 1.0, np.ones(16, np.float32))[1] == []
    assert _groups(lambda x: x + 1.0, np.ones(BIG, np.float32))[1] == []


def test_broadcasts_are_read_through_index_maps():
    j, gs = _groups(lambda x, m: (x - m) * 2.0, np.ones((BIG // 8, 8), np.float32), np.ones(8, np.float32))
    assert len(gs) == 1 and "broadcast_in_dim" in _names(j, gs[0])


def test_a_cycle_through_an_outside_equation_is_not_fused():
    def f(x):
        a = jnp.exp(x)                       # group candidate
        s = jnp.cumsum(a)                    # outside (not fusible), reads a
        return a * 2.0 + s                  # would join a's group -> cycle through cumsum
    j, gs = _groups(f, np.ones(BIG, np.float32))
    for g in gs:
        names = _names(j, g)
        assert not ("exp" in names and "add" in names)
    order = groups.schedule(j.eqns, gs)
    seen = set()
    for n in order:  # every operand is computed before use (members of a node run in program order)
        for m in n.members:
            for v in j.eqns[m].invars:
                assert type(v).__name__ == "Literal" or v in seen or v in j.invars or v in j.constvars
            seen.update(j.eqns[m].outvars)


def test_an_equation_joins_the_groups_it_can_when_joining_all_would_form_a_cycle():
    # The backward pass of an activation: `g * r` reads a forward residual `r` (its group feeds the cumsum that
    # produces `g`) and `h`, computed after the cumsum. Joining both groups is a cycle; joining `h`'s is not, so the
    # backward chain is one kernel with `r` read from memory.
    def f(x):
        t = jnp.tanh(x)
        r = 1.0 - t * t                      # forward group: residual r, output t
        g = jnp.cumsum(t)                    # outside (not fusible): stands for the product between the passes
        h = jnp.exp(g) * 3.0                 # a group after the outside equation
        return jnp.sum(h * r * 2.0, axis=0)  # `h * r` reads h's group and r's group
    j, gs = _groups(f, np.ones(BIG, np.float32))
    back = [g for g in gs if "cumsum" not in _names(j, g) and "reduce_sum" in _names(j, g)]
    assert len(back) == 1 and _names(j, back[0])[:2] == ["exp", "mul"] and "tanh" not in _names(j, back[0])
    assert len(gs) == 2


def test_reduction_patterns():
    assert groups.reduction_pattern((100, 8), (0, 1)) == "R"
    assert groups.reduction_pattern((100, 8), (1,)) == "KR"
    assert groups.reduction_pattern((100, 8), (0,)) == "RK"
    assert groups.reduction_pattern((1, 100, 8), (1,)) == "RK"   # size-1 dims do not count
    assert groups.reduction_pattern((4, 100, 8), (1,)) is None  # middle axis: not handled by kernels


def test_kernel_source_merges_contiguous_dimensions():
    j, gs = _groups(lambda x: jnp.tanh(x) * 2.0 + x, np.ones((64, 32, 16), np.float32))
    g = gs[0]
    spec = kernel.build(j.eqns, g.members, set(j.outvars), g.domain, g.red_axes, parallel=False, version=0)
    assert "for i0 in range(n0)" in spec.source and "i1" not in spec.source and "32768" not in spec.source
    assert spec.inputs[0][2] == (32768,)


# -- kernels (Numba) ---------------------------------------------------------------------------------------------

needs_numba = pytest.mark.skipif(not fusion.available(), reason="Numba is not installed")


def _fused(fun, *args):
    closed = closed_of(fun, *args)
    exe = compiler.compile_closed(closed, fuse=True, sync=True)
    assert exe.tier == 1 and exe.kernels and all(k.status == "compiled" for k in exe.kernels), \
        [k.status for k in exe.kernels]
    return list(exe(*[np.asarray(a) for a in args])), reference(closed, *args), exe


@needs_numba
def test_fused_elementwise_chain_matches_numpy_including_special_values(rng):
    x = rng.standard_normal(BIG).astype(np.float32) * 30
    x[:6] = [np.nan, np.inf, -np.inf, -0.0, 88.0, -100.0]

    def f(x):
        selu = 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67)
        return selu, jnp.maximum(x, 0.5) * jnp.minimum(x, -0.5), fluxion.nn.sigmoid(x) * jnp.sqrt(jnp.abs(x))

    got, want, exe = _fused(f, x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=4e-7, atol=1e-6, equal_nan=True)  # exp within 3 ulp
    assert "prange" in exe.source or "range" in exe.source


# float32: the `mathlib` polynomial forms (within these ulp of NumPy's); float64: the C library, as NumPy.
_TRANSCENDENTAL = {"log": (jnp.log, 2), "log1p": (jnp.log1p, 4), "expm1": (jnp.expm1, 3), "exp": (jnp.exp, 3),
                   "erf": (fluxion.scipy.special.erf, 7), "erfc": (fluxion.scipy.special.erfc, 12), "tanh": (jnp.tanh, 3), "sigmoid": (fluxion.nn.sigmoid, 4),
                   "gelu": (lambda x: fluxion.nn.gelu(x, approximate=False), 13), "selu": (fluxion.nn.selu, 4)}


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(_TRANSCENDENTAL))
def test_fused_transcendental_functions_match_numpy_in_ulp(rng, name, dtype):
    fn, max_ulp = _TRANSCENDENTAL[name]
    if dtype == np.float64 and name in ("erfc", "gelu"):
        pytest.skip("float64 erfc is not fused (it stays with SciPy)")
    x = (rng.standard_normal(BIG) * 4).astype(dtype)
    x[:12] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 1e30, -1e30, -1.0, 1e-7, 88.0]
    x[12:1000] = np.abs(x[12:1000])  # many positive operands for log
    with fluxion.config.override("jax_enable_x64", dtype == np.float64):
        (got,), (want,), exe = _fused(lambda x: fn(x * 2.0) * 0.5, x)  # exact scalings: a fused group
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype == dtype
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    spacing = np.maximum(np.spacing(np.abs(want[finite])), np.spacing(dtype(0)))
    ulps = np.abs(got[finite].astype(np.float64) - want[finite]) / spacing
    assert ulps.max() <= (max_ulp if dtype == np.float32 else 2), (x[finite][np.argmax(ulps)], ulps.max())
    kernel_source = "\n".join(k.source for k in exe.kernels)
    if dtype == np.float32:  # no C library call left in the kernel
        assert "math." not in kernel_source.split("def kernel")[1], kernel_source


@needs_numba
@pytest.mark.parametrize("axes", [None, 0, 1])
def test_fused_reductions_all_patterns(rng, axes):
    x = rng.standard_normal((BIG // 64, 64)).astype(np.float32)
    x[3, 5] = np.nan

    def f(x):
        y = x * 2.0 - 1.0
        return jnp.sum(jnp.exp(y) - y, axis=axes), jnp.max(y * y, axis=axes), jnp.min(jnp.abs(y) + 1.0, axis=axes)

    got, want, exe = _fused(f, x)
    assert len(exe.kernels) == 1  # sibling reductions share one pass
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, equal_nan=True)
        assert np.asarray(g).dtype == np.asarray(w).dtype


@needs_numba
@pytest.mark.parametrize("axes", [None, 0, 1])
@pytest.mark.usefixtures("without_fusion_check")
def test_parallel_kernels_match_serial_ones_bit_for_bit_on_any_thread_count(rng, monkeypatch, axes):
    from fluxion._src.backends.compiler import threads
    x = rng.standard_normal((BIG // 64, 64)).astype(np.float32)

    def f(x):  # an iota along the chunked dimension, and a value needed outside the reduction group
        y = x * 2.0 - lax.broadcasted_iota(jnp.float32, x.shape, 0) * 1e-3
        return y * 3.0, jnp.sum(jnp.exp(y) - y, axis=axes), jnp.max(y * y, axis=axes)

    closed = closed_of(f, x)
    results = {}
    for parallel in (False, True):
        limit = 0 if parallel else 1 << 62
        with fluxion.config.override("fluxion_parallel_min_work", limit):
            exe = compiler.compile_closed(closed, fuse=True, sync=True)
        assert exe.kernels and all(k.parallel == parallel for k in exe.kernels)
        if parallel and axes != 1:  # chunked reductions read through views starting at the chunk
            assert "= in0[lo:hi]" in exe.source  # (this group writes y * 3.0 as well, so its column sums read the
            assert "range(hi - lo)" in exe.source  # rows one at a time: see test_column_sums_with_elementwise_...)
        for n in (1, threads.CORES):
            with fluxion.config.override("fluxion_num_threads", n):
                assert threads.current() == n
                results[(parallel, n)] = [np.asarray(o) for o in exe(x)]
    first = results[(False, 1)]
    for outs in results.values():
        for a, b in zip(outs, first):
            np.testing.assert_array_equal(a.view(np.int32), b.view(np.int32))
    for a, w in zip(first, reference(closed, x)):
        np.testing.assert_allclose(a, w, rtol=2e-5)


def _numpy_float32_error(x, axis, exact):
    """The largest relative error of NumPy's own float32 sum (pairwise along contiguous rows)."""
    return np.max(np.abs(np.sum(x, axis=axis).astype(np.float64) - exact) / np.abs(exact))


@needs_numba
@pytest.mark.parametrize("case", ["ones_tenth", "uniform", "normal"])
def test_float32_sums_accumulate_in_blocks_at_least_as_accurately_as_numpy(rng, case):
    # 1e7 elements: the blocked float32 sums of the fused tier (`kernel.SUM_BLOCK`) against a float64 reference,
    # no worse than NumPy's pairwise sum; the vector dot product (rewritten as a fused sum) likewise.
    n = 10_000_000
    x = {"ones_tenth": np.full(n, 0.1, np.float32),
         "uniform": rng.uniform(0.0, 1.0, n).astype(np.float32),
         "normal": rng.standard_normal(n).astype(np.float32) + 0.5}[case]
    x64 = x.astype(np.float64)
    (got,), _, exe = _fused(lambda x: jnp.sum(x * 2.0), x)  # doubling is exact: the sum's error is the kernel's
    assert "bacc0 = np.float32(0)" in exe.kernels[0].source  # the blocked form
    exact = 2.0 * np.sum(x64)
    assert abs(float(got) - exact) / abs(exact) <= max(_numpy_float32_error(x * 2, None, exact), 2 ** -24)
    (got,), _, _ = _fused(jnp.dot, x, x)
    exact = np.dot(x64, x64)
    np_err = abs(float(np.sum(x * x, dtype=np.float32)) - exact) / exact
    assert abs(float(got) - exact) / exact <= max(np_err, 2 ** -24)


@needs_numba
@pytest.mark.parametrize("shape, axis", [((7, 100_003), 1), ((100_003, 7), 0), ((40_000, 33), 0), ((33, 1500), 1),
                                         ((2000, 12), 1), ((500, 40), 1), ((1, 5000), None)])
def test_blocked_float32_sums_of_rows_and_columns(rng, shape, axis):
    # Rows (blocks read through views of the row), columns (blocks of rows into a float32 row), short constant rows
    # (float32 directly); an iota along the summed axis and an elementwise output written through the views.
    x = (rng.uniform(0.0, 1.0, shape) + 0.25).astype(np.float32)

    def f(x):
        ax = 0 if axis is None else axis
        y = x * 2.0 + lax.broadcasted_iota(jnp.int32, x.shape, ax).astype(jnp.float32) * 1e-4  # an iota in the kernel
        return y, jnp.sum(y, axis=axis), jnp.max(y, axis=axis)

    got, want, exe = _fused(f, x)
    assert len(exe.kernels) == 1 and "iota" not in exe.source
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[2], want[2])
    y64 = np.asarray(want[0]).astype(np.float64)
    exact = np.sum(y64, axis=axis)
    err = np.max(np.abs(np.asarray(got[1]).astype(np.float64) - exact) / exact)
    # Short rows (12 elements, float32 throughout as JAX sums them) are a few roundings away from exact either way.
    assert err <= max(_numpy_float32_error(np.asarray(want[0]), axis, exact), 2 ** -22)
    assert np.asarray(got[1]).dtype == np.float32


@needs_numba
def test_a_broadcast_shared_by_several_groups_is_read_through_its_operand(rng):
    x = rng.standard_normal((BIG // 32, 32)).astype(np.float32)
    g = rng.standard_normal((BIG // 32, 32)).astype(np.float32)

    def f(x, g, s):  # relu-like forward and backward sharing one broadcast, separated (as in a training step)
        z = lax.broadcast_in_dim(s, x.shape, ())
        y = jnp.cumsum(jnp.maximum(x * 2.0, z), axis=0)     # cumsum is not fusible: two groups
        dx = jnp.where(y > z, g * 2.0, z)
        return jnp.sum(y * y, axis=0), dx

    got, want, exe = _fused(f, x, g, np.float32(0.25))
    for a, w in zip(got, want):
        np.testing.assert_allclose(a, w, rtol=1e-5)
    # No kernel reads the broadcast as an array: kernels read the scalar it broadcasts.
    (z,) = [e.outvars[0] for e in exe.optimized.jaxpr.eqns if e.primitive.name == "broadcast_in_dim"]
    inputs = [v for k in exe.kernels for v, _, _ in k.inputs]
    assert z not in inputs and exe.optimized.jaxpr.invars[2] in inputs


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
def test_select_by_a_stored_mask_fused_with_a_column_sum(rng, dtype):
    # ReLU's gradient feeding BatchNorm's: where(mask, g, 0) over a boolean array read from memory, with its column
    # sum; both operands are evaluated (mathlib._select), so NaN and infinities on the unselected side must not leak.
    mask = rng.random((BIG // 32, 32)) > 0.5
    g = (rng.standard_normal((BIG // 32, 32)) * 5).astype(dtype)
    if np.dtype(dtype).kind == "f":
        g[:4, 0] = [np.nan, np.inf, -np.inf, -0.0]
        mask[:4, 0] = False
        mask[4:8, 1] = True
        g[4:8, 1] = [np.nan, np.inf, 1.0, -0.0]

    def f(mask, g):
        y = jnp.where(mask, g, jnp.zeros_like(g))
        return y, jnp.sum(y.astype(jnp.float32) if dtype == np.bool_ else y, axis=0)

    with fluxion.config.override("jax_enable_x64", dtype == np.float64):
        got, want, exe = _fused(f, mask, g)
    assert any("_select(" in k.source for k in exe.kernels)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5)


@needs_numba
def test_fused_integers_wrap_and_one_hot_with_iota(rng):
    labels = rng.integers(0, 10, BIG // 10).astype(np.int32)
    big = np.full(BIG, 2 ** 30, np.int32)

    def f(labels, big):
        one_hot = fluxion.vmap(lambda l: (jnp.arange(10) == l).astype(jnp.float32))(labels)
        wrapped = big * 4 + big
        return one_hot, wrapped, jnp.sum(wrapped * 3)

    got, want, _ = _fused(f, labels, big)
    assert_same_values(got, want)


@needs_numba
def test_fused_group_writes_values_needed_outside_and_reuses_dead_buffers(rng):
    x = rng.standard_normal((BIG // 100, 100)).astype(np.float32)

    def standardize(x):
        return (x - x.mean(0)) / x.std(0)

    got, want, exe = _fused(standardize, x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)


@needs_numba
@pytest.mark.parametrize("rows", [BIG // 37, BIG // 37 + 3])
def test_column_sums_with_elementwise_outputs_run_row_by_row(rng, rows):
    # A column-wise float32 sum that also writes its elementwise values (a bias gradient next to the activation
    # gradient) loops over rows one at a time; a pure column sum reads four rows per step (`kernel._rows_unrolled`).
    x = rng.standard_normal((rows, 37)).astype(np.float32)
    y = rng.standard_normal((rows, 37)).astype(np.float32)

    def with_output(x, y):
        g = x * y * 0.5 + y * (1.0 - x * x)
        return g, jnp.sum(g, axis=0)

    got, want, exe = _fused(with_output, x, y)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-4)
    assert "m % 4" not in exe.source
    _, _, pure = _fused(lambda x, y: jnp.sum(x * y * 0.5 + y, axis=0), x, y)
    assert "m % 4" in pure.source


@needs_numba
def test_kernels_write_computed_operands_into_other_buffers(rng):
    # A computed operand dying at a kernel is not overwritten by it (an output in an input's buffer keeps LLVM from
    # vectorizing the kernel: the masked softmax of attention ran 30x slower in place). Donated arguments still are
    # (test_memory's donation test).
    import re
    q = rng.standard_normal((4, 128, 4, 16)).astype(np.float32)
    mask = np.tril(np.ones((128, 128), bool))[None, None].repeat(4, 0)  # per batch row, shared by the heads

    def f(q):
        s = lax.dot_general(q, q, (((3,), (3,)), ((0, 2), (0, 2))))  # (4, 4, 128, 128), dies in the kernel
        masked = jnp.where(mask, s, -1e30)
        return masked, jnp.max(masked, axis=-1)

    got, want, exe = _fused(f, q)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-4)
    main = exe.source.split("# ----")[0]
    assert "_kernel_" in main
    assert not re.search(r"^\s*v\d+ = v\d+$", main, re.M), main  # no output adopts an operand's buffer


@needs_numba
def test_backward_chain_joined_past_a_cycle_computes_the_same_values(rng):
    x = (rng.standard_normal(BIG) * 0.01).astype(np.float32)

    def f(x):
        t = jnp.tanh(x)
        g = jnp.cumsum(t)
        return jnp.sum(jnp.exp(g * 1e-3) * 3.0 * (1.0 - t * t) * 2.0, axis=0), t

    got, want, exe = _fused(f, x)
    assert exe.source.count("fused kernel") == 2
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-5)


@needs_compiler
@needs_numba
def test_background_compilation_upgrades_the_jitted_function(rng):
    x = jnp.asarray(rng.standard_normal(BIG).astype(np.float32))
    f = fluxion.jit(lambda x: jnp.sum(jnp.tanh(x) * x * 3.0))
    first = float(f(x))                      # runs at once on the NumPy path
    assert compiler.wait_for_kernels(timeout=120)
    (cf,) = f._cache.values()
    assert cf.executable.tier == 1 and cf._run is cf.executable.fn
    assert float(f(x)) == pytest.approx(first, rel=1e-5)


@needs_compiler
@pytest.mark.usefixtures("without_fusion_check")
def test_fusion_can_be_disabled(monkeypatch, rng):
    monkeypatch.setenv("FLUXION_JIT_FUSION", "0")
    x = jnp.asarray(rng.standard_normal(BIG).astype(np.float32))
    f = fluxion.jit(lambda x: jnp.exp(x) * 2.0 + 1.0)
    f(x)
    (cf,) = f._cache.values()
    assert cf.executable.tier == 0 and not cf.executable.kernels


# -- loop kernels (a whole scan in one Numba function) ----------------------------------------------------------

def test_scan_eligibility():
    from fluxion._src.backends.compiler.fusion import loops
    small = closed_of(lambda xs: lax.scan(lambda c, x: (jnp.tanh(c + x), c * 2.0), jnp.zeros(4), xs),
                      np.ones((5, 4), np.float32))
    assert loops.scan_eligible(small.jaxpr.eqns[-1])
    cum = closed_of(lambda xs: lax.scan(lambda c, x: (jnp.cumsum(c + x), c), jnp.zeros(4), xs),
                    np.ones((5, 4), np.float32))
    assert not loops.scan_eligible(cum.jaxpr.eqns[-1])  # cumsum has no loop form: stays a Python loop


@needs_numba
def test_loop_kernel_rnn_value_and_gradient(rng):
    w = (rng.standard_normal((16, 16)) * 0.2).astype(np.float32)
    u = rng.standard_normal((16, 4)).astype(np.float32)
    xs = rng.standard_normal((50, 4)).astype(np.float32)

    def loss(w, u, xs):
        def cell(h, x):
            h = jnp.tanh(w @ h + u @ x)
            return h, jnp.sum(h * h)
        _, ls = lax.scan(cell, jnp.zeros(16), xs)
        return jnp.sum(ls)

    got, want, exe = _fused(fluxion.value_and_grad(loss, argnums=(0, 1)), w, u, xs)
    assert "loop kernel of a scan" in exe.source
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=2e-5, atol=1e-5)


@needs_numba
def test_loop_kernel_carries_swaps_scalars_literals_and_reverse(rng):
    xs = rng.standard_normal((7, 2, 3)).astype(np.float32)

    def body(carry, x):
        a, b, s, k = carry
        flat = x.reshape(6)                                  # reshape of a per-step slice
        new_a = b                                            # carries swap: needs staging
        new_b = a + flat.sum() * jnp.ones(6)
        return (new_a, new_b, s * 0.5 + jnp.max(x), k + 1), (a, s, x.T)

    def f(xs):
        return lax.scan(body, (jnp.zeros(6), jnp.ones(6), 1.0, jnp.int32(0)), xs, reverse=True)

    got, want, exe = _fused(f, xs)
    assert "loop kernel of a scan" in exe.source
    for g, v in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(v), rtol=1e-6)
        assert np.asarray(g).dtype == np.asarray(v).dtype and np.shape(g) == np.shape(v)


@needs_numba
def test_small_fused_groups_are_bit_identical_to_eager(rng):
    x = rng.standard_normal((7, 5)).astype(np.float32) * 10
    x[0, :4] = [np.inf, -np.inf, np.nan, -0.0]

    def f(x):  # a long chain of exact operations on a small array: fused, and must round as NumPy does
        y = jnp.sign(x) * jnp.sqrt(jnp.abs(x)) / 3.0 - jnp.maximum(x, 0.5) * 2.0
        return jnp.where(y > 1.0, y * y, jnp.clip(y, -4.0, 4.0)) + jnp.floor(x) - x / 7.0

    got, _, exe = _fused(f, x)
    assert exe.kernels
    want = reference(compiler.passes.optimize(closed_of(f, x)), x)  # the program the kernel computes
    got, want = np.asarray(got[0]), np.asarray(want[0])
    # Bits equal, signed zeros included; a NaN's sign is the hardware's choice (IEEE 754 leaves it open): the
    # kernel's fused multiply-add and NumPy's emulation of it propagate different operands' NaNs.
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok].view(np.int32), want[ok].view(np.int32))


def test_small_groups_leave_transcendental_functions_to_numpy():
    j, gs = _groups(lambda x: jnp.tanh(x * 2.0 + 1.0) * 3.0 - 1.0 + x * x, np.ones(37, np.float32))
    assert all("tanh" not in _names(j, g) for g in gs)


# -- rewrites before fusion --------------------------------------------------------------------------------------

def test_only_large_vector_dots_become_reductions():
    from fluxion._src.backends.compiler.fusion import rewrite
    n = rewrite.DOT_REDUCE_MIN_ELEMENTS
    big = closed_of(jnp.dot, np.ones(n, np.float32), np.ones(n, np.float32))
    names = [e.primitive.name for e in rewrite.vector_dots_as_reductions(big).jaxpr.eqns]
    assert names == ["mul", "reduce_sum"]
    for fun, args in [(jnp.dot, (np.ones(16, np.float32),) * 2),                       # small: BLAS
                      (jnp.dot, (np.ones((4, n // 4), np.float32), np.ones(n // 4, np.float32))),  # matrix-vector
                      (jnp.dot, (np.ones(n, np.float16),) * 2)]:                        # half precision
        closed = closed_of(fun, *args)
        assert rewrite.vector_dots_as_reductions(closed) is closed


@needs_numba
def test_large_vector_dot_runs_as_a_fused_reduction(rng):
    from fluxion._src.backends.compiler.fusion import rewrite
    x = rng.standard_normal(rewrite.DOT_REDUCE_MIN_ELEMENTS + 3).astype(np.float32)
    y = rng.standard_normal(x.size).astype(np.float32)
    (got,), _, exe = _fused(jnp.dot, x, y)
    assert "dot" not in exe.module.source() and "reduce_sum" not in exe.module.source()
    exact = np.dot(x.astype(np.float64), y.astype(np.float64))
    assert np.asarray(got).dtype == np.float32
    assert abs(float(got) - exact) <= 1e-6 * np.sum(np.abs(x.astype(np.float64) * y))


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "strided views"])
@pytest.mark.usefixtures("without_fusion_check")
def test_vector_dot_has_the_same_bits_serial_threaded_and_on_any_thread_count(rng, dtype, layout):
    with fluxion.config.override("jax_enable_x64", dtype == np.float64):
        _check_vector_dot_bits(rng, dtype, layout)


def _check_vector_dot_bits(rng, dtype, layout):
    # The dot product's fused sum splits into `kernel.REDUCTION_CHUNKS` chunks by the length alone, combined in
    # chunk order: the serial kernel, the threaded one on one thread and on every core agree bit for bit (the
    # default-threading benchmark runs it on the cores the load leaves, so its bits must not depend on them).
    from fluxion._src.backends.compiler import threads
    from fluxion._src.backends.compiler.fusion import rewrite
    n = rewrite.DOT_REDUCE_MIN_ELEMENTS + 1_234          # not a multiple of the chunk count or the block
    if layout == "contiguous":
        args = (rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype) + 0.25)

        def f(x, y):
            return jnp.dot(x, y)
    else:  # every other element of a longer vector, and a reversed one
        args = (rng.standard_normal(2 * n).astype(dtype), rng.standard_normal(n).astype(dtype) + 0.25)

        def f(x, y):
            return jnp.dot(x[::2], y[::-1])
    closed = closed_of(f, *args)
    results = {}
    for parallel in (False, True):
        with fluxion.config.override("fluxion_parallel_min_work", 0 if parallel else 1 << 62):
            exe = compiler.compile_closed(closed, fuse=True, sync=True)
        assert "dot" not in exe.module.source()
        assert exe.kernels and all(k.parallel == parallel for k in exe.kernels)
        for k in (1, threads.CORES):
            with fluxion.config.override("fluxion_num_threads", k):
                assert threads.current() == k
                (results[(parallel, k)],) = [np.asarray(o) for o in exe(*args)]
    first = results[(False, 1)]
    assert first.dtype == dtype and first.shape == ()
    for got in results.values():
        np.testing.assert_array_equal(got.view(first.dtype), first)
        assert got.tobytes() == first.tobytes()
    x, y = (a.astype(np.float64) for a in args)
    if layout != "contiguous":
        x, y = x[::2], y[::-1]
    exact, scale = np.dot(x, y), np.dot(np.abs(x), np.abs(y))
    # float32: blocks of float32 adds combined in float64 (well below sdot's error); float64: float64 throughout.
    tol = 1e-6 if dtype == np.float32 else 1e-14
    assert abs(float(first) - exact) <= tol * scale


@needs_numba
def test_threaded_chunked_reductions_skip_the_parallel_region_on_one_thread_and_stay_cacheable(rng, tmp_path):
    # Full and column-wise reductions read their thread count (`mathlib._num_threads`) and loop over the same chunks
    # serially on one thread; Numba's own `get_num_threads` would make the kernel uncacheable (a recompile of
    # seconds in every process), so compiling one must not warn, and must leave Numba's index in the cache.
    import warnings

    from fluxion._src.backends.compiler import threads
    from fluxion._src.backends.compiler.fusion import cachedir, runtime
    x = rng.standard_normal((512, 256)).astype(np.float32)
    j, gs = _groups(lambda x: (jnp.sum(x * x), jnp.sum(x * 2.0, axis=0)), x)
    specs = [kernel.build(j.eqns, g.members, set(j.outvars), g.domain, g.red_axes, parallel=True,
                          version=fusion.MATHLIB_VERSION) for g in gs]
    assert sorted(len(sp.outputs[0][1]) for sp in specs) == [1, 1] and len(specs) == 2
    for sp in specs:
        assert kernel.NUM_THREADS_IMPORT in sp.source and "if _num_threads() == 1:" in sp.source
        assert "numba.prange(nch)" in sp.source
    serial = [kernel.build(j.eqns, g.members, set(j.outvars), g.domain, g.red_axes, parallel=False,
                           version=fusion.MATHLIB_VERSION) for g in gs]
    assert not any("_num_threads" in sp.source for sp in serial)
    cachedir.reset()
    runtime.release_kernels()
    try:
        with fluxion.config.override("fluxion_cache_dir", str(tmp_path)), warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fns = [runtime.load_kernel(sp.digest, sp.source) for sp in specs + serial]
        assert not [m for m in w if "cache" in str(m.message).lower()], [str(m.message) for m in w]
        assert any(name.endswith(".nbi") for _, _, files in os.walk(tmp_path) for name in files)
        outs = {}
        for k, (fn, sp) in enumerate(zip(fns, specs + serial)):
            for n in (1, threads.CORES):
                threads._set_numba_threads(n)
                args = [np.ascontiguousarray(np.asarray(x).reshape(m)) for _, _, m in sp.inputs]
                res = [np.empty(m, v.aval.dtype) for v, m in sp.outputs]
                fn(*args, *res, *sp.extents)
                outs.setdefault(k % 2, []).append(b"".join(r.tobytes() for r in res))
        assert all(len(set(v)) == 1 for v in outs.values())  # serial, threaded on 1 and on every thread: same bits
    finally:
        threads._set_numba_threads(threads.current())
        runtime.release_kernels()
        cachedir.reset()


@needs_numba
def test_one_hot_comparisons_become_a_scatter_kernel_with_the_same_values(rng):
    labels = rng.integers(-3, 13, BIG // 10).astype(np.int32)          # out-of-range labels give zero rows
    cases = {
        "float": lambda l: fluxion.vmap(lambda x: (jnp.arange(10) == x).astype(jnp.float32))(l),
        "operands swapped": lambda l: (l[:, None] == jnp.arange(10)[None, :]).astype(jnp.int32),
        "nn.one_hot": lambda l: fluxion.nn.one_hot(l, 10),
    }
    for name, f in cases.items():
        got, want, exe = _fused(f, labels)
        assert "one-hot scatter" in exe.source, name
        assert_same_values(got, want)
        np.testing.assert_array_equal(np.asarray(got[0]), labels[:, None] == np.arange(10))
    # A constant other than arange(K) is compared element by element (the generic kernel).
    got, want, exe = _fused(lambda l: (jnp.arange(10) * 2 == l[:, None]).astype(jnp.float32), labels)
    assert "one-hot scatter" not in exe.source
    assert_same_values(got, want)

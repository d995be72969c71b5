"""Code generation: jaxpr in, values out -- the generated NumPy function must match the reference interpreter
exactly (same NumPy operations), for every lowering and control-flow form."""

from __future__ import annotations

import os
import sys

import warnings

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion._src.backends import compiler
from fluxion._src.backends.eager.elementwise import SELECT_BITS_MIN_ELEMENTS
from fluxion._src.backends.compiler import contractions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compiler_helpers.py is here
from compiler_helpers import assert_same_values, closed_of, reference  # noqa: E402

needs_compiler = pytest.mark.skipif(not compiler.enabled(), reason="jit compiler disabled (FLUXION_JIT_COMPILER=0)")


def compiled_outputs(fun, *args, optimize=True):
    closed = closed_of(fun, *args)
    exe = compiler.compile_closed(closed, optimize=optimize, fuse=False)
    raw = [np.asarray(a) for a in args]
    return list(exe(*raw)), reference(closed, *args, contracted=optimize), exe


@pytest.mark.parametrize("optimize", [False, True])
def test_elementwise_reductions_and_views_match_the_interpreter(rng, optimize):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    i = rng.integers(-5, 5, (3, 4)).astype(np.int32)

    def f(x, i):
        a = jnp.exp(x) * 2.0 - jnp.log1p(jnp.abs(x))
        b = jnp.where(x > 0, a, -a) + i.astype(jnp.float32)
        c = jnp.sum(b, axis=0) + jnp.max(b, axis=1).sum()
        d = jnp.transpose(b)[::-1, 1:3].reshape(-1)
        return c, d, jnp.clip(x, -0.5, 0.5), (i // 3) % 2, jnp.concatenate([x, x], axis=1)

    got, want, _ = compiled_outputs(f, x, i, optimize=optimize)
    assert_same_values(got, want)


@pytest.mark.parametrize("lhs,rhs,dims", [
    ((5,), (5,), (((0,), (0,)), ((), ()))),
    ((3, 5), (5, 4), (((1,), (0,)), ((), ()))),
    ((5, 3), (5, 4), (((0,), (0,)), ((), ()))),
    ((3, 5), (4, 5), (((1,), (1,)), ((), ()))),
    ((3, 5), (5,), (((1,), (0,)), ((), ()))),
    ((5,), (5, 4), (((0,), (0,)), ((), ()))),
    ((2, 3, 5), (2, 5, 4), (((2,), (1,)), ((0,), (0,)))),
    ((2, 5, 3), (2, 4, 5), (((1,), (2,)), ((0,), (0,)))),
    ((2, 3, 5), (2, 5), (((2,), (1,)), ((0,), (0,)))),
    ((2, 3, 5), (5, 4), (((2,), (0,)), ((), ()))),  # not a plain matmul: falls back to the implementation
])
def test_dot_general_forms(rng, lhs, rhs, dims):
    a = rng.standard_normal(lhs).astype(np.float32)
    b = rng.standard_normal(rhs).astype(np.float32)
    got, want, _ = compiled_outputs(lambda a, b: lax.dot_general(a, b, dims), a, b)
    assert_same_values(got, want, exact=False)


def test_matmul_form_only_for_same_float_dtypes():
    closed = closed_of(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
                       np.ones((2, 3), np.int32), np.ones((3, 2), np.int32))
    assert contractions.matmul_form(closed.jaxpr.eqns[0]) is None
    closed = closed_of(lambda a, b: a @ b, np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))
    assert contractions.matmul_form(closed.jaxpr.eqns[0]) == "matmul({a}, {b})"


def test_control_flow_becomes_python_loops(rng):
    xs = rng.standard_normal((6, 3)).astype(np.float32)

    def f(xs):
        c, ys = lax.scan(lambda c, x: (c * 0.9 + jnp.tanh(x), c.sum()), jnp.zeros(3), xs)
        _, zs = lax.scan(lambda c, x: (c + x, c), jnp.zeros(3), xs, reverse=True)
        w = lax.while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, s[1] * 1.5), (0, c))
        k = lax.fori_loop(0, 4, lambda i, v: v + i, 0.0)
        sw = lax.switch(jnp.argmax(c), [lambda v: v + 1, lambda v: v * 2, lambda v: -v], c)
        br = lax.cond(c.sum() > 0, lambda v: v * 3, lambda v: v - 3, ys)
        return c, ys, zs, w, k, sw, br

    got, want, exe = compiled_outputs(f, xs)
    assert_same_values(got, want)
    src = exe.source
    assert "for i" in src and "while " in src and "if b" in src


def test_scan_without_outputs_and_length_zero():
    got, want, _ = compiled_outputs(lambda xs: lax.scan(lambda c, x: (c + x, None), 1.0, xs)[0],
                                    np.zeros(0, np.float32))
    assert_same_values(got, want)


def test_literal_and_argument_outputs_and_scalars():
    def f(x, s):
        return 3.0, x, s * 2, x.reshape(-1)

    got, want, _ = compiled_outputs(f, np.ones((2, 2), np.float32), np.float32(4))
    assert_same_values(got, want)


def test_broadcast_operands_stay_small_only_when_numpy_restores_the_shape(rng):
    v = rng.standard_normal(4).astype(np.float32)
    x = rng.standard_normal((3, 4)).astype(np.float32)

    def f(v, x):
        both = jnp.broadcast_to(v, (3, 4)) + jnp.broadcast_to(v[:, None], (4, 4))[:3]  # no full-size operand
        one = x * jnp.broadcast_to(v, (3, 4))  # x has the full shape: the broadcast can stay (4,)
        return both, one, jnp.broadcast_to(v, (2, 4))

    got, want, exe = compiled_outputs(f, v, x)
    assert_same_values(got, want)
    assert ".reshape((1, 4))" in exe.source


def test_large_float_select_uses_bit_masks_and_is_exact(rng):
    n = SELECT_BITS_MIN_ELEMENTS * 2
    x = rng.standard_normal(n).astype(np.float32)
    x[:4] = [np.nan, -0.0, np.inf, -np.inf]
    y = rng.standard_normal(n).astype(np.float32)
    got, _, exe = compiled_outputs(lambda x, y: jnp.where(x > y, x, y), x, y)
    assert "select_bits" in exe.source
    want = np.where(x > y, x, y)   # NumPy, not the interpreter (whose eager select uses the same bit masks)
    np.testing.assert_array_equal(np.asarray(got[0]).view(np.int32), want.view(np.int32))


@needs_compiler
@pytest.mark.usefixtures("without_fusion_check")
def test_generated_code_is_inspectable_and_has_no_dispatch():
    f = fluxion.jit(lambda a, b, c: a * b + c)
    args = [jnp.ones(3)] * 3
    low = f.lower(*args)
    assert "mul" in low.as_text()
    text = low.compile().as_text()
    # the product and the sum are one fused multiply-add (`passes.contract`), called directly
    assert "def jit_" in text and "_mul_add(a0, a1, a2)" in text and "impl" not in text


def test_noisy_operations_do_not_warn_under_jit():
    f = fluxion.jit(lambda x: (jnp.log(x), 1.0 / x, jnp.sqrt(x - 1.0)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = f(jnp.zeros(3))
    assert np.isneginf(np.asarray(out[0])).all() and np.isinf(np.asarray(out[1])).all()


def test_warning_state_is_restored_after_a_call():
    fluxion.jit(lambda x: jnp.log(x))(jnp.zeros(2))
    with pytest.warns(RuntimeWarning):
        np.log(np.zeros(2, np.float32))


def test_compiler_can_be_disabled(monkeypatch):
    monkeypatch.setenv("FLUXION_JIT_COMPILER", "0")
    f = fluxion.jit(lambda x: jnp.sin(x) * 2.0)
    x = jnp.arange(4.0)
    np.testing.assert_array_equal(np.asarray(f(x)), np.sin(np.arange(4.0, dtype=np.float32)) * 2.0)
    assert "interpreted" in f.lower(x).compile().as_text()


def test_errors_in_generated_code_point_at_generated_lines():
    closed = closed_of(lambda x: jnp.sin(x), np.ones(2, np.float32))
    exe = compiler.compile_closed(closed, fuse=False)
    with pytest.raises(Exception) as info:
        exe("not an array")
    assert "fluxion-jit" in "".join(str(tb.path) for tb in info.traceback)


def test_pad_lowering_matches_jax_for_random_configs(rng):
    jax = pytest.importorskip("jax")
    from fluxion._src.backends.compiler.windowed import pad
    checked = 0
    for shape in [(5,), (3, 4), (1,), (4, 1, 3)]:
        for _ in range(100):
            cfg = tuple((int(rng.integers(-4, 4)), int(rng.integers(-4, 4)), int(rng.integers(0, 3))) for _ in shape)
            x = rng.standard_normal(shape).astype(np.float32)
            out_shape = tuple(lo + hi + n + max(n - 1, 0) * i for n, (lo, hi, i) in zip(shape, cfg))
            if min(out_shape) <= 0:
                continue
            want = np.asarray(jax.lax.pad(x, np.float32(7), cfg))
            got = pad(x, np.float32(7), padding_config=cfg, out_shape=out_shape)
            np.testing.assert_array_equal(got, want)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_reduce_window_lowering_matches_the_interpreter(rng, kind):
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    fn = {"sum": lax.add, "max": lax.max, "min": lax.min}[kind]
    init = {"sum": 0.0, "max": -np.inf, "min": np.inf}[kind]

    def f(x):
        return (lax.reduce_window(x, init, fn, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
                lax.reduce_window(x, init, fn, (1, 3, 3, 1), (1, 1, 2, 1), "SAME"))

    got, want, exe = compiled_outputs(f, x)
    assert "reduce_window_taps" in exe.source
    assert_same_values(got, want, exact=kind != "sum")
    if kind == "sum":
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_convolution_lowering_matches_the_interpreter_with_gradients(rng):
    x = rng.standard_normal((3, 9, 8, 2)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)

    def loss(x, w):
        y = lax.conv_general_dilated(x, w, (2, 1), ((1, 1), (0, 2)), dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.sum(jnp.tanh(y) ** 2)

    got, want, exe = compiled_outputs(fluxion.value_and_grad(loss, argnums=(0, 1)), x, w)
    assert "conv_patches" in exe.source
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=2e-5, atol=2e-5)

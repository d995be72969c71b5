"""Overflow, invalid operations and division by zero give inf/nan silently, as in JAX, even when the user turns
warnings into errors (`warnings.simplefilter("error")`, pytest's `-W error`) or sets `np.seterr(all="raise")`:
eager operations (the Array operators' fast path, `jnp` functions, reductions, `grad`) and `jit` programs (generated
NumPy code, donated arguments, programs with callbacks, fused kernels). The user's own NumPy code still raises."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp

BIG = np.float32(3e38)
LARGE = 1 << 15  # fused kernels


def _programs():
    x = np.array([BIG, 1.0, -BIG, np.inf], np.float32)
    y = np.array([BIG, 0.0, BIG, np.inf], np.float32)
    large = np.resize(x, LARGE)
    return {
        "operator_mul": (lambda a, b: a * 2.0, x, y),
        "operator_add": (lambda a, b: a + b, x, y),
        "operator_sub_inf": (lambda a, b: a - b, x, y),
        "large_add": (lambda a, b: a + b, large, large),
        "square": (lambda a, b: jnp.square(a), x, y),
        "sum": (lambda a, b: jnp.sum(a * 1.0 + b), x, y),
        "softmax": (lambda a, b: fluxion.nn.softmax(a), x, y),
        "divide_by_zero": (lambda a, b: a / b, x, y),
    }


def _quiet_reference(fn, a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return np.asarray(fn(jnp.asarray(a), jnp.asarray(b)))


@pytest.mark.parametrize("strict", ["warnings_error", "seterr_raise"])
@pytest.mark.parametrize("name", list(_programs()))
def test_no_exception_where_jax_returns_inf_or_nan(name, strict):
    fn, a, b = _programs()[name]
    want = _quiet_reference(fn, a, b)
    with warnings.catch_warnings(), np.errstate(all="raise" if strict == "seterr_raise" else "warn"):
        if strict == "warnings_error":
            warnings.simplefilter("error")
        eager = fn(jnp.asarray(a), jnp.asarray(b))
        jitted = fluxion.jit(fn)(a, b)
        with fluxion.config.override("fluxion_jit_sync_kernels", True):
            fused = fluxion.jit(lambda a, b: fn(a, b) + 0.0)(a, b)
        donated = fluxion.jit(fn, donate_argnums=0)(jnp.array(a), b)
        grad = fluxion.grad(lambda a: jnp.sum(fn(a, b) * 0.0))(jnp.asarray(a))
        with pytest.raises((RuntimeWarning, FloatingPointError)):  # the user's own NumPy code is not silenced
            np.multiply(np.float32(BIG), np.float32(4.0))
    for got in (eager, jitted, fused, donated):
        np.testing.assert_array_equal(np.asarray(got), want)
    assert np.asarray(grad).shape == a.shape


def test_a_program_with_a_callback_runs_it_once():
    calls = []

    def f(a):
        fluxion.debug.callback(lambda v: calls.append(1), a)
        return a * 2.0

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fluxion.jit(f)(np.array([BIG, 1.0], np.float32))
    assert calls == [1]
    np.testing.assert_array_equal(np.asarray(out), [np.inf, 2.0])

"""`x ** n` (lax.integer_pow) rounds as JAX's does: XLA multiplies by binary exponentiation (x**3 = x * (x * x)),
which differs in the last bit from NumPy's `power` for a third of float32 inputs. Oracle: real JAX, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp

POWERS = [2, 3, 4, 5, 6, 7, 13, -1, -2, -3]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", POWERS)
def test_integer_pow_is_bit_exact_with_jax(n, dtype):
    jax = pytest.importorskip("jax")
    x = np.random.default_rng(n % 7).standard_normal(4096) * 3
    # Away from results XLA flushes to zero as subnormals (a separate difference, not this test's subject).
    x = np.where(np.abs(x) < 0.1, 0.5, x).astype(dtype)
    with jax.enable_x64(dtype == np.float64), fluxion.enable_x64(dtype == np.float64):
        want = np.asarray(jax.jit(lambda v: v ** n)(x))
        eager = np.asarray(fnp.asarray(x) ** n)
        jitted = np.asarray(fluxion.jit(lambda v: v ** n)(x))
    np.testing.assert_array_equal(eager, want)
    np.testing.assert_array_equal(jitted, want)


def test_binary_power_order():
    from fluxion._src.lax.elementwise import binary_power
    show = lambda u, v: f"({u}*{v})"  # noqa: E731
    assert binary_power("x", 3, show) == "(x*(x*x))"
    assert binary_power("x", 4, show) == "((x*x)*(x*x))"
    assert binary_power("x", 5, show) == "(x*((x*x)*(x*x)))"

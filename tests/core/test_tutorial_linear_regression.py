"""Tutorial 000's linear regression by jitted gradient descent (N = 1e6, lr 0.01, 1,000 steps from w = 1, b = 0).

The data come from `random.key(1)` exactly as in the tutorial, so with the bit-exact PRNG both frameworks see the
same data; the final w and b must agree with real JAX's (when installed) and lie on the way to the least-squares
solution computed by NumPy.
"""

import numpy as np
import pytest

import fluxion


def _run(jax, jnp, n_steps: int):
    N = int(1e6)
    key = jax.random.key(seed=1)
    X = jax.random.uniform(key, shape=(N,))
    y = 4 * X + 1 + jax.random.normal(key, shape=(N,))
    theta = {'w': jnp.array(1.), 'b': jnp.array(0.)}
    lr = 0.01

    def model(theta):
        return X * theta['w'] + theta['b']

    def loss_fn(theta):
        return jnp.mean((model(theta) - y) ** 2)

    def update(theta):
        grads = jax.grad(loss_fn)(theta)
        for k in theta.keys():
            theta[k] = theta[k] - lr * grads[k]
        return theta

    for _ in range(n_steps):
        theta = jax.jit(update)(theta)  # a new jit wrapper each step, as the tutorial writes it
    return float(theta['w']), float(theta['b']), np.asarray(X), np.asarray(y)


def test_linear_regression_matches_jax_and_heads_to_least_squares():
    import fluxion.numpy as jnp
    w, b, X, y = _run(fluxion, jnp, 1000)
    # Least squares on the same data (float64).
    A = np.stack([X.astype(np.float64), np.ones_like(X, dtype=np.float64)], axis=1)
    (w_ls, b_ls), *_ = np.linalg.lstsq(A, y.astype(np.float64), rcond=None)
    # 1,000 steps of lr 0.01 from (1, 0) move monotonically toward the optimum (4, 1) but do not reach it.
    assert 1.0 < w < w_ls and 0.0 < b
    loss = np.mean((X * w + b - y) ** 2)
    loss0 = np.mean((X * 1.0 - y) ** 2)
    assert loss < loss0
    real_jax = pytest.importorskip("jax")
    import jax.numpy as real_jnp
    w_j, b_j, X_j, y_j = _run(real_jax, real_jnp, 1000)
    np.testing.assert_array_equal(X, X_j)  # same PRNG bits, same data
    np.testing.assert_allclose(y, y_j, rtol=1e-6, atol=1e-6)
    assert abs(w - w_j) < 1e-4 and abs(b - b_j) < 1e-4, (w, b, w_j, b_j)


def test_linear_regression_run_longer_converges_to_least_squares():
    import fluxion.numpy as jnp
    rng = np.random.default_rng(0)
    X = rng.uniform(size=20000).astype(np.float32)
    y = (4 * X + 1 + rng.standard_normal(20000)).astype(np.float32)

    @fluxion.jit
    def update(theta):
        grads = fluxion.grad(lambda t: jnp.mean((X * t['w'] + t['b'] - y) ** 2))(theta)
        return fluxion.tree_map(lambda p, g: p - 0.5 * g, theta, grads)

    theta = {'w': jnp.array(1.), 'b': jnp.array(0.)}
    for _ in range(3000):
        theta = update(theta)
    A = np.stack([X.astype(np.float64), np.ones(20000)], axis=1)
    (w_ls, b_ls), *_ = np.linalg.lstsq(A, y.astype(np.float64), rcond=None)
    assert abs(float(theta['w']) - w_ls) < 2e-3 and abs(float(theta['b']) - b_ls) < 2e-3

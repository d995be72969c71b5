"""fluxion.flax.linen under fluxion's transformations: ``apply`` is a pure function.

Checks jit/grad/vmap/scan of ``init``/``apply`` against eager fluxion and
against the same program written with jax + flax (importorskip).
"""

import os
import sys
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion.flax import linen as fnn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # linen_testing.py is here
from linen_testing import assert_trees_close, fkey, to_fluxion, to_numpy  # noqa: E402

flax_linen = pytest.importorskip('flax.linen')
jax = pytest.importorskip('jax')


def _mlp(nn):
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool = False):
            x = nn.Dense(8)(x)
            x = nn.BatchNorm(use_running_average=not train)(x)
            x = nn.relu(x)
            x = nn.Dropout(0.2, deterministic=not train)(x)
            return nn.Dense(3)(x)
    return MLP()


X = np.random.RandomState(0).normal(size=(6, 4)).astype(np.float32)
Y = np.random.RandomState(1).normal(size=(6, 3)).astype(np.float32)


def _variables():
    theirs = _mlp(flax_linen).init(jax.random.PRNGKey(0), jax.numpy.asarray(X))
    return to_fluxion(theirs), theirs


def test_jit_apply_equals_eager():
    ours, _ = _variables()
    model = _mlp(fnn)
    eager = model.apply(ours, jnp.asarray(X))
    jitted = fluxion.jit(model.apply)(ours, jnp.asarray(X))
    assert_trees_close(to_numpy(jitted), to_numpy(eager), rtol=1e-6, atol=1e-6)
    jitted_init = fluxion.jit(model.init)(fkey(0), jnp.asarray(X))
    assert_trees_close(to_numpy(jitted_init), to_numpy(model.init(fkey(0), jnp.asarray(X))),
                       rtol=1e-6, atol=1e-7)


def test_grad_of_training_loss_equals_flax():
    ours_vars, theirs_vars = _variables()

    def ours_loss(params):
        out, updates = _mlp(fnn).apply({**ours_vars, 'params': params}, jnp.asarray(X), train=True,
                                       rngs={'dropout': fkey(5)}, mutable=['batch_stats'])
        return ((out - jnp.asarray(Y)) ** 2).mean(), updates

    def theirs_loss(params):
        out, updates = _mlp(flax_linen).apply(
            {**theirs_vars, 'params': params}, jax.numpy.asarray(X), train=True,
            rngs={'dropout': jax.random.PRNGKey(5)}, mutable=['batch_stats'])
        return ((out - jax.numpy.asarray(Y)) ** 2).mean(), updates

    (l1, u1), g1 = fluxion.jit(fluxion.value_and_grad(ours_loss, has_aux=True))(
        ours_vars['params'])
    (l2, u2), g2 = jax.value_and_grad(theirs_loss, has_aux=True)(theirs_vars['params'])
    np.testing.assert_allclose(float(l1), float(l2), rtol=1e-5)
    assert_trees_close(to_numpy(g1), to_numpy(g2), rtol=1e-4, atol=1e-6)
    assert_trees_close(to_numpy(u1), to_numpy(u2), rtol=1e-5, atol=1e-6)


def test_vmap_over_examples_equals_batched_apply():
    ours, _ = _variables()
    model = _mlp(fnn)
    per_example = fluxion.vmap(lambda x: model.apply(ours, x[None])[0])(jnp.asarray(X))
    batched = model.apply(ours, jnp.asarray(X))
    assert_trees_close(to_numpy(per_example), to_numpy(batched), rtol=1e-5, atol=1e-6)


def test_vmap_init_builds_an_ensemble_like_flax():
    keys = np.stack([np.asarray(jax.random.PRNGKey(i)) for i in range(3)])
    ours = fluxion.vmap(lambda k: fnn.Dense(4).init(k, jnp.ones((1, 2))))(jnp.asarray(keys))
    theirs = jax.vmap(lambda k: flax_linen.Dense(4).init(k, jax.numpy.ones((1, 2))))(
        jax.numpy.asarray(keys))
    assert_trees_close(to_numpy(ours), to_numpy(theirs), rtol=0, atol=0)


def test_batch_norm_axis_name_under_vmap_equals_flax():
    def make(nn):
        return nn.BatchNorm(use_running_average=False, axis_name='batch')

    variables = flax_linen.BatchNorm(use_running_average=False).init(
        jax.random.PRNGKey(0), jax.numpy.asarray(X))
    ours = fluxion.vmap(
        lambda x: make(fnn).apply(to_fluxion(variables), x, mutable=['batch_stats']),
        axis_name='batch')(jnp.asarray(X))
    theirs = jax.vmap(
        lambda x: make(flax_linen).apply(variables, x, mutable=['batch_stats']),
        axis_name='batch')(jax.numpy.asarray(X))
    assert_trees_close(to_numpy(ours), to_numpy(theirs), rtol=1e-5, atol=1e-6)
    # Same normalization as a plain BatchNorm over the whole batch.
    plain = fnn.BatchNorm(use_running_average=False).apply(to_fluxion(variables), jnp.asarray(X),
                                                          mutable=['batch_stats'])
    np.testing.assert_allclose(np.asarray(ours[0]), np.asarray(plain[0]), rtol=1e-5, atol=1e-6)


def test_scan_over_time_with_apply_in_the_body():
    class Cell(fnn.Module):
        @fnn.compact
        def __call__(self, h, x):
            h = jnp.tanh(fnn.Dense(5, name='hh')(h) + fnn.Dense(5, name='xh')(x))
            return h, 2.0 * h

    xs = jnp.asarray(np.random.RandomState(3).normal(size=(7, 2, 3)).astype(np.float32))
    h0 = jnp.zeros((2, 5))
    variables = Cell().init(fkey(0), h0, xs[0])

    def step(h, x):
        return Cell().apply(variables, h, x)

    h_final, ys = lax.scan(step, h0, xs)
    h = h0
    expected = []
    for t in range(7):
        h, y = Cell().apply(variables, h, xs[t])
        expected.append(np.asarray(y))
    np.testing.assert_allclose(np.asarray(ys), np.stack(expected), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(h_final), np.asarray(h), rtol=1e-5, atol=1e-6)
    # Gradient through the scan.
    grads = fluxion.grad(lambda v: lax.scan(lambda h, x: Cell().apply(v, h, x), h0, xs)[1].sum())(
        variables)
    assert grads['params']['hh']['kernel'].shape == (5, 5)
    assert float(jnp.abs(grads['params']['xh']['kernel']).sum()) > 0

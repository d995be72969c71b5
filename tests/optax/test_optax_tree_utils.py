"""fluxion.optax.tree_utils / fluxion.optax.tree against NumPy formulas."""

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion.optax as optax
from fluxion.optax import tree_utils as tu

RNG = np.random.default_rng(0)
X_NP = {'a': RNG.standard_normal((3, 2)).astype(np.float32),
        'b': [RNG.standard_normal(4).astype(np.float32), np.float32(2.5)]}
Y_NP = {'a': RNG.standard_normal((3, 2)).astype(np.float32),
        'b': [RNG.standard_normal(4).astype(np.float32), np.float32(-1.0)]}


def to_f(tree):
    return {'a': jnp.asarray(tree['a']), 'b': [jnp.asarray(tree['b'][0]), jnp.asarray(tree['b'][1])]}


def flat(tree):
    return [np.asarray(tree['a']), np.asarray(tree['b'][0]), np.asarray(tree['b'][1])]


def concat(tree):
    return np.concatenate([np.ravel(x).astype(np.float64) for x in flat(tree)])


X, Y = to_f(X_NP), to_f(Y_NP)


def assert_tree(actual, expected_leaves):
    for a, e in zip(flat(actual), expected_leaves):
        np.testing.assert_allclose(np.asarray(a, dtype=np.float64), e, rtol=1e-6, atol=1e-7)


def test_elementwise_arithmetic():
    xs, ys = flat(X_NP), flat(Y_NP)
    assert_tree(tu.tree_add(X, Y), [x + y for x, y in zip(xs, ys)])
    assert_tree(tu.tree_add(X, Y, X), [2 * x + y for x, y in zip(xs, ys)])
    assert_tree(tu.tree_sub(X, Y), [x - y for x, y in zip(xs, ys)])
    assert_tree(tu.tree_mul(X, Y), [x * y for x, y in zip(xs, ys)])
    assert_tree(tu.tree_div(X, Y), [x / y for x, y in zip(xs, ys)])
    assert_tree(tu.tree_scale(3.0, X), [3 * x for x in xs])
    assert_tree(tu.tree_scalar_mul(3.0, X), [3 * x for x in xs])
    assert_tree(tu.tree_add_scale(X, -2.0, Y), [x - 2 * y for x, y in zip(xs, ys)])
    assert_tree(tu.tree_add_scalar_mul(X, -2.0, Y), [x - 2 * y for x, y in zip(xs, ys)])
    assert_tree(tu.tree_clip(X, -0.5, 0.5), [np.clip(x, -0.5, 0.5) for x in xs])
    assert_tree(tu.tree_where(False, X, Y), ys)


def test_reductions_and_norms():
    x, y = concat(X_NP), concat(Y_NP)
    np.testing.assert_allclose(float(tu.tree_vdot(X, Y)), x @ y, rtol=1e-5)
    np.testing.assert_allclose(float(tu.tree_sum(X)), x.sum(), rtol=1e-5)
    np.testing.assert_allclose(float(tu.tree_max(X)), x.max())
    np.testing.assert_allclose(float(tu.tree_min(X)), x.min())
    assert tu.tree_size(X) == 11
    np.testing.assert_allclose(float(tu.tree_norm(X)), np.linalg.norm(x), rtol=1e-6)
    np.testing.assert_allclose(float(tu.tree_l2_norm(X)), np.linalg.norm(x), rtol=1e-6)
    np.testing.assert_allclose(float(tu.tree_norm(X, squared=True)), x @ x, rtol=1e-6)
    np.testing.assert_allclose(float(tu.tree_norm(X, ord=1)), np.abs(x).sum(), rtol=1e-6)
    np.testing.assert_allclose(float(tu.tree_l1_norm(X)), np.abs(x).sum(), rtol=1e-6)
    np.testing.assert_allclose(float(tu.tree_norm(X, ord='inf')), np.abs(x).max())
    np.testing.assert_allclose(float(tu.tree_linf_norm(X)), np.abs(x).max())
    np.testing.assert_allclose(float(optax.global_norm(X)), np.linalg.norm(x), rtol=1e-6)
    with pytest.raises(ValueError, match='ord'):
        tu.tree_norm(X, ord=3)


def test_empty_tree_reductions():
    assert float(tu.tree_sum({})) == 0.0
    assert float(tu.tree_vdot({}, {})) == 0.0
    assert float(tu.tree_norm({})) == 0.0
    assert tu.tree_size({}) == 0


def test_constructors_and_casting():
    z = tu.tree_zeros_like(X)
    assert all(np.asarray(leaf).shape == np.asarray(x).shape and not np.any(np.asarray(leaf))
               for leaf, x in zip(flat(z), flat(X)))
    assert_tree(tu.tree_ones_like(X), [np.ones_like(x) for x in flat(X_NP)])
    assert_tree(tu.tree_full_like(X, 7.0), [np.full_like(x, 7.0) for x in flat(X_NP)])
    assert np.asarray(tu.tree_zeros_like(X, dtype=jnp.int32)['a']).dtype == np.int32
    casted = tu.tree_cast(X, jnp.bfloat16)
    assert np.asarray(casted['a']).dtype.name == 'bfloat16'
    assert tu.tree_cast(X, None) is X
    back = tu.tree_cast_like(casted, X)
    assert np.asarray(back['b'][0]).dtype == np.float32
    assert tu.tree_dtype(X) == np.float32
    mixed = {'a': jnp.ones(2, dtype=jnp.bfloat16), 'b': jnp.ones(2, dtype=jnp.float32)}
    with pytest.raises(ValueError, match='mixed'):
        tu.tree_dtype(mixed)
    assert tu.tree_dtype(mixed, 'highest') == np.float32
    assert tu.tree_dtype(mixed, 'lowest') == jnp.bfloat16
    assert tu.tree_dtype(mixed, 'promote') == np.float32
    assert tu.tree_allclose(X, to_f(X_NP)) and not tu.tree_allclose(X, Y)


def test_moments_and_bias_correction():
    xs, ys = flat(X_NP), flat(Y_NP)
    assert_tree(tu.tree_update_moment(X, Y, 0.9, 1), [0.1 * x + 0.9 * y for x, y in zip(xs, ys)])
    assert_tree(tu.tree_update_moment_per_elem_norm(X, Y, 0.9, 2),
                [0.1 * x ** 2 + 0.9 * y for x, y in zip(xs, ys)])
    assert_tree(tu.tree_update_infinity_moment(X, Y, 0.9, 1e-3),
                [np.maximum(np.abs(x) + 1e-3, 0.9 * y) for x, y in zip(xs, ys)])
    count = jnp.asarray(3, dtype=jnp.int32)
    assert_tree(tu.tree_bias_correction(X, 0.9, count), [x / (1 - 0.9 ** 3) for x in xs])


def test_short_names_in_tree_namespace():
    assert optax.tree.add is tu.tree_add
    assert optax.tree.norm is tu.tree_norm
    assert optax.tree.zeros_like is tu.tree_zeros_like
    assert_tree(optax.tree.scale(2.0, X), [2 * x for x in flat(X_NP)])

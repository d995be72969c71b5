"""Losses against hand-written NumPy float64 formulas (and optax when installed)."""

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion.optax as optax

RNG = np.random.default_rng(0)
LOGITS = (3 * RNG.standard_normal((5, 7))).astype(np.float32)
INT_LABELS = RNG.integers(0, 7, size=(5,)).astype(np.int32)
PROBS = RNG.dirichlet(np.ones(7), size=5).astype(np.float32)
PRED = RNG.standard_normal((4, 6)).astype(np.float32) * 3
TARGET = RNG.standard_normal((4, 6)).astype(np.float32)


def np_log_softmax(x, axis=-1):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def assert_close(actual, expected, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), expected, rtol=rtol,
                               atol=atol)


def test_softmax_cross_entropy():
    out = optax.softmax_cross_entropy(jnp.asarray(LOGITS), jnp.asarray(PROBS))
    assert out.shape == (5,) and np.asarray(out).dtype == np.float32
    assert_close(out, -(PROBS * np_log_softmax(LOGITS)).sum(-1))


def test_softmax_cross_entropy_other_axis():
    out = optax.softmax_cross_entropy(jnp.asarray(LOGITS.T), jnp.asarray(PROBS.T), axis=0)
    assert_close(out, -(PROBS * np_log_softmax(LOGITS)).sum(-1))


def test_softmax_cross_entropy_with_integer_labels():
    out = optax.softmax_cross_entropy_with_integer_labels(jnp.asarray(LOGITS),
                                                          jnp.asarray(INT_LABELS))
    assert out.shape == (5,)
    assert_close(out, -np_log_softmax(LOGITS)[np.arange(5), INT_LABELS])
    one_hot = np.eye(7, dtype=np.float32)[INT_LABELS]
    assert_close(out, np.asarray(optax.softmax_cross_entropy(jnp.asarray(LOGITS), jnp.asarray(one_hot))))


def test_softmax_cross_entropy_with_integer_labels_axis0():
    out = optax.softmax_cross_entropy_with_integer_labels(
        jnp.asarray(LOGITS.T), jnp.asarray(INT_LABELS), axis=0)
    assert_close(out, -np_log_softmax(LOGITS)[np.arange(5), INT_LABELS])


def test_sigmoid_binary_cross_entropy():
    labels = (RNG.random((4, 6)) > 0.5).astype(np.float32)
    out = optax.sigmoid_binary_cross_entropy(jnp.asarray(PRED), jnp.asarray(labels))
    x = PRED.astype(np.float64)
    p = 1 / (1 + np.exp(-x))
    assert_close(out, -labels * np.log(p) - (1 - labels) * np.log(1 - p))
    # Extreme logits stay finite thanks to log_sigmoid.
    extreme = optax.sigmoid_binary_cross_entropy(jnp.asarray([100.0, -100.0]),
                                                 jnp.asarray([0.0, 1.0]))
    assert_close(extreme, [100.0, 100.0])


def test_regression_losses():
    diff = (PRED - TARGET).astype(np.float64)
    assert_close(optax.l2_loss(jnp.asarray(PRED), jnp.asarray(TARGET)), 0.5 * diff ** 2)
    assert_close(optax.l2_loss(jnp.asarray(PRED)), 0.5 * PRED.astype(np.float64) ** 2)
    assert_close(optax.squared_error(jnp.asarray(PRED), jnp.asarray(TARGET)), diff ** 2)
    for delta in (1.0, 0.5, 2.5):
        a = np.abs(diff)
        expected = np.where(a <= delta, 0.5 * a ** 2, 0.5 * delta ** 2 + delta * (a - delta))
        assert_close(optax.huber_loss(jnp.asarray(PRED), jnp.asarray(TARGET), delta=delta), expected)
    assert_close(optax.log_cosh(jnp.asarray(PRED), jnp.asarray(TARGET)), np.log(np.cosh(diff)))


def test_smooth_labels():
    one_hot = np.eye(4, dtype=np.float32)[[0, 3, 1]]
    assert_close(optax.smooth_labels(jnp.asarray(one_hot), 0.1), 0.9 * one_hot + 0.1 / 4)


def test_losses_are_differentiable():
    grad = fluxion.grad(lambda x: optax.softmax_cross_entropy_with_integer_labels(
        x, jnp.asarray(INT_LABELS)).sum())(jnp.asarray(LOGITS))
    probs = np.exp(np_log_softmax(LOGITS))
    assert_close(grad, probs - np.eye(7)[INT_LABELS])


def test_loss_argument_errors():
    with pytest.raises(ValueError, match='logits'):
        optax.softmax_cross_entropy(jnp.asarray([[1, 2]]), jnp.asarray([[0.0, 1.0]]))
    with pytest.raises(ValueError, match='labels'):
        optax.softmax_cross_entropy_with_integer_labels(jnp.asarray(LOGITS),
                                                        jnp.asarray(PROBS[:, 0]))
    with pytest.raises(ValueError, match='shape'):
        optax.softmax_cross_entropy_with_integer_labels(jnp.asarray(LOGITS),
                                                        jnp.asarray(INT_LABELS[:3]))
    with pytest.raises(ValueError, match='shape'):
        optax.l2_loss(jnp.asarray(PRED), jnp.asarray(TARGET[:2]))


def test_losses_match_optax_including_where():
    ref = pytest.importorskip('optax')
    jax = pytest.importorskip('jax')
    where = RNG.random((5, 7)) > 0.3
    pairs = [
        (lambda m, a: m.softmax_cross_entropy(a(LOGITS), a(PROBS))),
        (lambda m, a: m.softmax_cross_entropy(a(LOGITS), a(PROBS), where=a(where))),
        (lambda m, a: m.softmax_cross_entropy_with_integer_labels(a(LOGITS), a(INT_LABELS))),
        (lambda m, a: m.softmax_cross_entropy_with_integer_labels(
            a(LOGITS), a(INT_LABELS), where=a(where))),
        (lambda m, a: m.sigmoid_binary_cross_entropy(a(PRED), a(TARGET > 0))),
        (lambda m, a: m.huber_loss(a(PRED), a(TARGET), delta=0.7)),
        (lambda m, a: m.l2_loss(a(PRED), a(TARGET))),
        (lambda m, a: m.log_cosh(a(PRED))),
    ]
    for fn in pairs:
        ours = np.asarray(fn(optax, jnp.asarray))
        theirs = np.asarray(fn(ref, jax.numpy.asarray))
        assert ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)

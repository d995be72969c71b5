"""The data-parallel training pattern gives the parameters of single-device training on the same global batches.

The pattern is the one of reference tutorial 002 (Haiku) and the Flax examples: parameters replicated by stacking
(`tree_map(lambda x: np.stack([x] * num_devices), params)`), `pmap(update, axis_name='i')`, and
`lax.pmean(grads, 'i')`. The oracle is the same update run with `jit` on one device on the whole batch; with equal
per-device batches the mean of the per-device mean gradients is the full-batch mean gradient.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax


def init_params(rng):
    return {"w1": rng.standard_normal((5, 8)).astype(np.float32) * 0.5, "b1": np.zeros(8, np.float32),
            "w2": rng.standard_normal((8, 2)).astype(np.float32) * 0.5, "b2": np.zeros(2, np.float32)}


def loss_fn(params, inputs, labels):
    h = jnp.tanh(inputs @ params["w1"] + params["b1"])
    out = h @ params["w2"] + params["b2"]
    return jnp.mean((out - labels) ** 2)


def sgd(params, grads, lr=0.1):
    return fluxion.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def test_pmap_pmean_training_equals_single_device(ndev, rng):
    params = init_params(rng)
    batches = [(rng.standard_normal((8, 5)).astype(np.float32), rng.standard_normal((8, 2)).astype(np.float32))
               for _ in range(5)]

    @fluxion.jit
    def single_update(p, x, y):
        return sgd(p, fluxion.grad(loss_fn)(p, x, y))

    def update(p, x, y, axis_name="i"):
        grads = fluxion.grad(loss_fn)(p, x, y)
        grads = lax.pmean(grads, axis_name)
        return sgd(p, grads)

    num_devices = fluxion.local_device_count()
    assert num_devices == ndev
    replicated = fluxion.tree_util.tree_map(lambda x: np.stack([x] * num_devices), params)
    reference = params
    for x, y in batches:
        reference = single_update(reference, x, y)
        superbatch = (x.reshape(ndev, 8 // ndev, 5), y.reshape(ndev, 8 // ndev, 2))
        replicated = fluxion.pmap(update, axis_name="i")(replicated, *superbatch)
    for k in params:
        rep = np.asarray(replicated[k])
        assert rep.shape == (ndev,) + params[k].shape
        for d in range(ndev):  # every replica holds bitwise the same parameters
            np.testing.assert_array_equal(rep[d], rep[0])
        np.testing.assert_allclose(rep[0], np.asarray(reference[k]), rtol=1e-5, atol=1e-6, err_msg=k)


def _mnist_available() -> bool:
    root = os.path.join(os.path.dirname(__file__), "..", "..", "datasets", "mnist")
    return os.path.exists(os.path.join(root, "train-images-idx3-ubyte.gz")) or "FLUXION_DATA_DIR" in os.environ


@pytest.mark.skipif(not _mnist_available(), reason="MNIST files not present (datasets/mnist or FLUXION_DATA_DIR)")
@pytest.mark.parametrize("strategy", [[], ["--pmap"]], ids=["mesh", "pmap"])
def test_mnist_data_parallel_matches_single_device_training(four_devices, strategy, capsys):
    """fluxion.examples.mnist_dp (Flax TrainState + Adam; on a mesh with NamedShardings, or pmap with a pmean of
    grads) on 4 devices == examples.mnist."""
    from fluxion.examples import mnist, mnist_dp
    args = ["--train-limit", "256", "--test-limit", "64", "--epochs", "1", "--batch-size", "64", "--no-progress"]
    ref = mnist.main(args)
    out = mnist_dp.main(args + ["--data-parallel"] + strategy)
    assert ("(pmap)" if strategy else "(mesh + NamedSharding)") in capsys.readouterr().out
    assert int(out["state"].step) == int(ref["state"].step) == 4
    ref_leaves = fluxion.tree_util.tree_leaves(ref["state"].params)
    dp_leaves = fluxion.tree_util.tree_leaves(out["state"].params)
    assert len(ref_leaves) == len(dp_leaves) == 6
    for a, b in zip(ref_leaves, dp_leaves):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-5)
    assert abs(out["history"][0]["loss"] - ref["history"][0]["loss"]) < 1e-5


def test_local_shard_layout(four_devices):
    from fluxion.examples import mnist_dp
    batch = np.arange(16 * 2).reshape(16, 2)
    shard = mnist_dp.local_shard(batch, 4, 0)
    np.testing.assert_array_equal(shard.reshape(16, 2), batch)
    assert shard.shape == (4, 4, 2)
    with pytest.raises(ValueError, match="global batch size 10 must be divisible by the number of devices 4"):
        mnist_dp.local_shard(np.zeros((10, 2)), 4, 0)


def test_tutorial_002_haiku_pmap_data_parallelism(ndev):
    """Reference tutorial 002's Haiku example (MLP [8, 4, 2], softmax cross-entropy, params stacked per device,
    `pmap(update, axis_name='i')` with `lax.pmean` of the grads), with an SGD update rule; the oracle is one device
    training on the concatenated superbatches."""
    hk = pytest.importorskip("fluxion.haiku")
    jax = fluxion

    def softmax_cross_entropy(logits, labels):
        one_hot = jax.nn.one_hot(labels, logits.shape[-1])
        return -jnp.sum(jax.nn.log_softmax(logits) * one_hot, axis=-1)

    def loss_fn(inputs, labels):
        logits = hk.nets.MLP([8, 4, 2])(inputs)
        return jnp.mean(softmax_cross_entropy(logits, labels))

    loss_obj = hk.without_apply_rng(hk.transform(loss_fn))
    data_rng = np.random.default_rng(1)
    input_dataset = iter([(data_rng.standard_normal((4, 3)).astype(np.float32), data_rng.integers(0, 2, 4))
                          for _ in range(3 * ndev + 1)])
    rng = jax.random.PRNGKey(428)
    sample_image, sample_label = next(input_dataset)
    params = loss_obj.init(rng, sample_image, sample_label)
    single = params
    num_devices = jax.local_device_count()
    params = jax.tree_util.tree_map(lambda x: np.stack([x] * num_devices), params)

    def my_update_rule(p, g):
        return jax.tree_util.tree_map(lambda a, b: a - 0.05 * b, p, g)

    def make_superbatch():
        superbatch = [next(input_dataset) for _ in range(num_devices)]
        superbatch_images, superbatch_labels = zip(*superbatch)
        return np.stack(superbatch_images), np.stack(superbatch_labels)

    def update(params, inputs, labels, axis_name="i"):
        grads = jax.grad(loss_obj.apply)(params, inputs, labels)
        grads = jax.lax.pmean(grads, axis_name)
        return my_update_rule(params, grads)

    single_update = jax.jit(lambda p, x, y: my_update_rule(p, jax.grad(loss_obj.apply)(p, x, y)))
    for _ in range(3):
        superbatch_images, superbatch_labels = make_superbatch()
        params = jax.pmap(update, axis_name="i")(params, superbatch_images, superbatch_labels)
        single = single_update(single, superbatch_images.reshape(-1, 3), superbatch_labels.reshape(-1))
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(single)):
        for d in range(ndev):
            np.testing.assert_allclose(np.asarray(a)[d], np.asarray(b), rtol=1e-5, atol=1e-6)

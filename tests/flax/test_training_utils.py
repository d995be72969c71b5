"""`flax.training` utilities beyond train_state/checkpoints: common_utils, early_stopping, dynamic_scale,
lr_schedule and prefetch_iterator, against real Flax where installed and hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion._src import test_util as tu
from fluxion.flax.training import common_utils, dynamic_scale, early_stopping, lr_schedule, prefetch_iterator


def _flax_training():
    pytest.importorskip("flax")
    import flax.training.common_utils
    import flax.training.dynamic_scale
    import flax.training.early_stopping
    import flax.training.lr_schedule
    return flax.training


def test_common_utils():
    labels = np.array([[0, 2], [1, 1]])
    want = np.zeros((2, 2, 3), np.float32)
    for idx in np.ndindex(2, 2):
        want[idx + (labels[idx],)] = 1.0
    tu.assert_allclose(common_utils.onehot(labels, 3), want)
    tu.assert_allclose(common_utils.onehot(labels, 3, on_value=5.0, off_value=-1.0), want * 6 - 1)
    n = fluxion.local_device_count()
    x = {"a": np.arange(4 * n * 3).reshape(4 * n, 3)}
    assert common_utils.shard(x)["a"].shape == (n, 4, 3)
    assert common_utils.shard_prng_key(fluxion.random.PRNGKey(0)).shape == (n, 2)
    steps = [{"loss": np.full((n,), float(i))} for i in range(3)]
    tu.assert_allclose(common_utils.get_metrics(steps)["loss"], np.arange(3.0), check_dtypes=False)
    flax_training = _flax_training()
    tu.assert_allclose(common_utils.onehot(labels, 3), np.asarray(flax_training.common_utils.onehot(labels, 3)))


def test_early_stopping_matches_flax():
    losses = [4, 3, 3, 3, 2, 2, 2, 2, 1, 1]
    stop = early_stopping.EarlyStopping(min_delta=1e-3, patience=2)
    stopped_at = None
    for epoch, loss in enumerate(losses):
        stop = stop.update(loss)
        if stop.should_stop:
            stopped_at = epoch
            break
    assert stopped_at == 7
    assert stop.reset().best_metric == float("inf") and not stop.reset().should_stop
    ref = _flax_training().early_stopping.EarlyStopping(min_delta=0.5, patience=1)
    ours = early_stopping.EarlyStopping(min_delta=0.5, patience=1)
    for loss in [3.0, 2.8, 2.0, 1.9, 1.8, 1.7]:
        ref, ours = ref.update(loss), ours.update(loss)
        assert (ref.best_metric, ref.patience_count, ref.should_stop, ref.has_improved) == \
            (ours.best_metric, ours.patience_count, ours.should_stop, ours.has_improved)


@pytest.mark.parametrize("name,args", [
    ("create_constant_learning_rate_schedule", (0.1, 100)),
    ("create_constant_learning_rate_schedule", (0.1, 100, 2.0)),
    ("create_stepped_learning_rate_schedule", (0.1, 100, [[3, 0.1], [6, 0.01]], 1.0)),
    ("create_cosine_learning_rate_schedule", (0.1, 100, 10, 0.5)),
])
def test_lr_schedules_match_flax(name, args):
    ours = getattr(lr_schedule, name)(*args)
    theirs = getattr(_flax_training().lr_schedule, name)(*args)
    for step in (0, 1, 50, 99, 100, 250, 299, 300, 301, 650, 999):
        tu.assert_allclose(jnp.asarray(ours(step), jnp.float32), np.float32(theirs(step)), rtol=1e-6, atol=1e-7)


def test_dynamic_scale_matches_flax():
    jax = pytest.importorskip("jax")
    flax_training = _flax_training()

    def loss_fn(m):
        return lambda p: m.numpy.sum(m.numpy.asarray(p, m.numpy.float16) ** 2).astype(m.numpy.float32)

    ours = dynamic_scale.DynamicScale(growth_interval=3)
    theirs = flax_training.dynamic_scale.DynamicScale(growth_interval=3)
    step_ours = fluxion.jit(lambda ds, p: ds.value_and_grad(loss_fn(fluxion))(p))
    step_theirs = jax.jit(lambda ds, p: ds.value_and_grad(loss_fn(jax))(p))
    p = np.array([1.0, 300.0], np.float32)  # 300**2 * 65536 overflows float16: non-finite gradients at first
    for _ in range(12):
        ours, fin_o, val_o, grad_o = step_ours(ours, p)
        theirs, fin_t, val_t, grad_t = step_theirs(theirs, p)
        assert bool(fin_o) == bool(fin_t)
        assert float(ours.scale) == float(theirs.scale) and int(ours.fin_steps) == int(theirs.fin_steps)
        if bool(fin_t):
            tu.assert_allclose(grad_o, np.asarray(grad_t), rtol=1e-3)


def test_prefetch_iterator():
    it = prefetch_iterator.PrefetchIterator(iter(range(10)), buffer_size=3)
    assert list(it) == list(range(10))
    with pytest.raises(StopIteration):
        next(it)

    def failing():
        yield 1
        raise RuntimeError("data source broke")

    it = prefetch_iterator.PrefetchIterator(failing())
    assert next(it) == 1
    with pytest.raises(RuntimeError, match="data source broke"):
        next(it)
    it = prefetch_iterator.PrefetchIterator(iter(range(1000)), buffer_size=2)
    assert next(it) == 0
    it.close()
    with pytest.raises(ValueError):
        prefetch_iterator.PrefetchIterator(iter([]), buffer_size=0)

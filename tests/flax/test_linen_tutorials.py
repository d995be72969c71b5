"""The Flax programs of the reference tutorials, after the import swap.

/work/shared/tutorials/000_*.txt: compact and setup MLPs, their parameter
overview (shapes, sizes and the printed mean/std), Optax + TrainState and the
MNIST training script (on synthetic data here). 004_*.txt: dataclass modules,
``self.param``, ``init_with_output`` and the Conv/LayerNorm/leaky_relu model.
The expected values are the ones printed in the tutorials.
"""

import os
import sys
import numpy as np
import pytest

import fluxion as jax
import fluxion.numpy as jnp
from fluxion import random
from fluxion.flax import linen as nn
from fluxion.flax.training.train_state import TrainState

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # linen_testing.py is here
from linen_testing import shapes  # noqa: E402


class Model(nn.Module):
    @nn.compact
    def __call__(self, inputs):
        inputs = inputs.reshape(inputs.shape[0], -1) / 255.
        x = nn.Dense(128, name='Dense1')(inputs)
        x = nn.relu(x)
        x = nn.Dense(128, name='Dense2')(x)
        x = nn.relu(x)
        outputs = nn.Dense(10, name='Output')(x)
        return outputs


class Model_setup(nn.Module):  # noqa: N801 (tutorial's name)
    def setup(self):
        self.dense1 = nn.Dense(128, name='Dense1')
        self.dense2 = nn.Dense(128, name='Dense2')
        self.output = nn.Dense(10, name='Output')

    def __call__(self, inputs):
        inputs = inputs.reshape(inputs.shape[0], -1) / 255.
        x = self.dense1(inputs)
        x = nn.relu(x)
        x = self.dense2(x)
        x = nn.relu(x)
        outputs = self.output(x)
        return outputs


# The clu parameter overview printed in tutorial 000: (name, shape, size, mean, std).
OVERVIEW = [
    ('Dense1/bias', (128,), 128, '0.0', '0.0'),
    ('Dense1/kernel', (784, 128), 100352, '-3.18e-05', '0.0357'),
    ('Dense2/bias', (128,), 128, '0.0', '0.0'),
    ('Dense2/kernel', (128, 128), 16384, '-3.94e-06', '0.0894'),
    ('Output/bias', (10,), 10, '0.0', '0.0'),
    ('Output/kernel', (128, 10), 1280, '-0.000669', '0.0911'),
]


@pytest.fixture
def legacy_threefry():
    """Tutorial 000 printed its numbers with JAX's older (non-partitionable) threefry."""
    old = jax.config.jax_threefry_partitionable
    jax.config.update('jax_threefry_partitionable', False)
    yield
    jax.config.update('jax_threefry_partitionable', old)


def _fmt(x):
    return f'{x:.3g}' if x != 0 else '0.0'


@pytest.mark.parametrize('model_cls', [Model, Model_setup])
def test_parameter_overview_of_tutorial_000(model_cls, legacy_threefry):
    key, m_key = random.split(random.PRNGKey(42), 2)
    params = model_cls().init(m_key, jnp.zeros((1, 28, 28), jnp.uint8))
    rows = []
    for layer in ('Dense1', 'Dense2', 'Output'):
        for pname in ('bias', 'kernel'):
            value = np.asarray(params['params'][layer][pname])
            rows.append((f'{layer}/{pname}', value.shape, value.size,
                         _fmt(float(value.mean())), _fmt(float(value.std()))))
    assert rows == OVERVIEW
    assert sum(r[2] for r in rows) == 118282


def test_train_state_mnist_script_on_synthetic_data():
    rs = np.random.RandomState(0)
    labels = rs.randint(0, 10, size=(256,))
    # Learnable synthetic digits: class c lights up rows 2c and 2c+1, plus noise.
    images = rs.randint(0, 64, size=(256, 28, 28)).astype(np.uint8)
    for i, c in enumerate(labels):
        images[i, 2 * c:2 * c + 2] = 255
    X_train = jnp.asarray(images)

    def one_hot(y, deep):
        ret = jnp.zeros(deep, dtype='float32')
        return ret.at[y].set(1)

    batch_one_hot = jax.jit(lambda y: jax.vmap(one_hot, in_axes=[0, None])(y, 10))
    y_train = batch_one_hot(jnp.asarray(labels))

    optax = pytest.importorskip('fluxion.optax')
    model = Model()
    key, m_key = random.split(random.PRNGKey(42), 2)
    state = TrainState.create(apply_fn=model.apply, params=model.init(m_key, X_train[0:1]),
                              tx=optax.adam(learning_rate=1e-3))

    @jax.jit
    def train_step(state, idxs):
        def loss_fn(params, X, y):
            logits = state.apply_fn(params, X)
            loss_val = -jnp.sum(y * jax.nn.log_softmax(logits, axis=-1), axis=-1)
            return jnp.mean(loss_val)

        loss_grad_fn = jax.value_and_grad(loss_fn)
        X_batch, y_batch = X_train[idxs], y_train[idxs]
        loss_val, grads = loss_grad_fn(state.params, X_batch, y_batch)
        state = state.apply_gradients(grads=grads)
        return state, loss_val

    @jax.jit
    def accuracy(params, X, y):
        logits = model.apply(params, X)
        return jnp.mean(jnp.argmax(logits, axis=-1) == jnp.argmax(y, axis=-1))

    losses = []
    for _epoch in range(3):
        key, p_key = random.split(key)
        idxs = random.permutation(p_key, 256)
        for i in range(0, 256, 32):
            state, loss_val = train_step(state, idxs[i:i + 32])
            losses.append(float(loss_val))
    assert int(state.step) == 24
    assert np.mean(losses[-8:]) < 0.5 * np.mean(losses[:8])
    assert float(accuracy(state.params, X_train, y_train)) > 0.5
    # Tutorial: the first moments of Adam mirror the parameter tree.
    mu_shapes = jax.tree_util.tree_map(lambda x, y: (x.shape, y.shape),
                                       state.opt_state[0].mu['params'],
                                       state.opt_state[0].nu['params'])
    assert mu_shapes == {
        'Dense1': {'bias': ((128,), (128,)), 'kernel': ((784, 128), (784, 128))},
        'Dense2': {'bias': ((128,), (128,)), 'kernel': ((128, 128), (128, 128))},
        'Output': {'bias': ((10,), (10,)), 'kernel': ((128, 10), (128, 10))}}


def test_tutorial_004_mymod_init_with_output():
    import typing

    class MyMod(nn.Module):
        arg_model: typing.Any

        @nn.compact
        def __call__(self, inputs):
            params = self.param('whatever', nn.initializers.uniform(),
                                (jnp.shape(inputs)[-1], self.arg_model), jnp.float32)
            y = inputs @ params
            return y

    mod = MyMod(arg_model=233)
    key1, key2 = jax.random.split(jax.random.key(0))
    x = jax.random.normal(key1, (64, 10))
    output1, params = mod.init_with_output(key2, x)
    output2 = mod.apply(params, x)
    assert float(((output1 - output2) ** 2).sum()) == 0.0
    assert shapes(params) == {'params': {'whatever': (10, 233)}}


@pytest.mark.parametrize('style', ['compact', 'setup'])
def test_tutorial_004_conv_layernorm_leaky_relu(style):
    class Compact(nn.Module):
        output_channels: int
        kernel_size: int
        leaky_slope: float

        @nn.compact
        def __call__(self, x):
            x = nn.Conv(features=self.output_channels, kernel_size=self.kernel_size,
                        kernel_init=nn.initializers.lecun_normal())(x)
            x = nn.LayerNorm()(x)
            return nn.leaky_relu(x, negative_slope=self.leaky_slope)

    class Setup(nn.Module):
        output_channels: int
        kernel_size: int
        leaky_slope: float

        def setup(self):
            self.conv = nn.Conv(features=self.output_channels, kernel_size=self.kernel_size,
                                kernel_init=nn.initializers.lecun_normal())
            self.layer_norm = nn.LayerNorm()

        @nn.compact
        def __call__(self, x):
            x = self.conv(x)
            x = self.layer_norm(x)
            return nn.leaky_relu(x, negative_slope=self.leaky_slope)

    cls = Compact if style == 'compact' else Setup
    key = random.PRNGKey(0)
    input_data = jnp.ones((1, 32, 32, 3))
    model = cls(output_channels=64, kernel_size=(3, 3), leaky_slope=0.01)
    output_data, params = model.init_with_output(key, input_data)
    output_data2 = model.apply(params, input_data)
    assert output_data.shape == (1, 32, 32, 64)
    np.testing.assert_allclose(np.asarray(output_data), np.asarray(output_data2), rtol=1e-6)
    conv, norm = ('Conv_0', 'LayerNorm_0') if style == 'compact' else ('conv', 'layer_norm')
    assert shapes(params) == {'params': {conv: {'kernel': (3, 3, 3, 64), 'bias': (64,)},
                                         norm: {'scale': (64,), 'bias': (64,)}}}
    # Tutorial 004: the submodules are not reachable on the unbound model.
    with pytest.raises(AttributeError):
        getattr(model, conv)

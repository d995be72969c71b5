"""``Module.tabulate``: same rows, columns and totals as Flax's table (text compared cell by cell)."""

import os
import sys
import re

import pytest

import fluxion.numpy as jnp
from fluxion.flax import linen as fnn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # linen_testing.py is here
from linen_testing import fkey  # noqa: E402

flax_linen = pytest.importorskip('flax.linen')
jax = pytest.importorskip('jax')


def _models(nn):
    class MLP(nn.Module):
        @nn.compact
        def __call__(self, inputs, train=False):
            inputs = inputs.reshape(inputs.shape[0], -1) / 255.
            x = nn.Dense(128, name='Dense1')(inputs)
            x = nn.BatchNorm(use_running_average=not train)(x)
            x = nn.relu(x)
            return nn.Dense(10, name='Output')(x)

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Dense(4)(x)
            return nn.Dense(3)(x), x

    class Nested(nn.Module):
        @nn.compact
        def __call__(self, x):
            y, _ = Block()(x)
            self.param('w', nn.initializers.zeros, (2,))
            return nn.Dense(2)(y)

    return {'mlp': (MLP, (1, 28, 28)), 'nested': (Nested, (1, 5))}


def _rows(table):
    """Parses a box table into rows of cells (each cell: its lines joined by ' | ')."""
    rows, current = [], None
    for line in table.splitlines():
        if line.startswith(('┃', '│')):
            cells = [c.strip() for c in re.split('[┃│]', line)[1:-1]]
            if current is None:
                current = [[c] for c in cells]
            else:
                for acc, c in zip(current, cells):
                    acc.append(c)
        elif current is not None:
            rows.append([' | '.join(x for x in acc if x) for acc in current])
            current = None
    # Flax orders the collection columns by dict insertion order, which varies
    # with its caches; compare them sorted by collection name.
    order = [0, 1, 2, 3] + sorted(range(4, len(rows[0])), key=lambda i: rows[0][i])
    return [[row[i] for i in order] for row in rows]


def _flax_table(name, depth=None):
    cls, shape = _models(flax_linen)[name]
    return cls().tabulate(jax.random.PRNGKey(0), jax.numpy.ones(shape), depth=depth,
                          console_kwargs={'width': 400, 'force_terminal': False})


@pytest.mark.parametrize('name', ['mlp', 'nested'])
@pytest.mark.parametrize('depth', [None, 1])
def test_tabulate_matches_flax_cells(name, depth):
    cls, shape = _models(fnn)[name]
    ours = cls().tabulate(fkey(0), jnp.ones(shape), depth=depth)
    theirs = _flax_table(name, depth)
    assert _rows(ours) == _rows(theirs)
    total = re.search(r'Total Parameters: [\d,]+ \([\d.,]+ [KMG]?B\)', theirs).group(0)
    assert total in ours
    assert ours.lstrip().startswith(f'{cls.__name__} Summary')


def test_tabulate_function_form_and_kwargs():
    cls, shape = _models(fnn)['mlp']
    table = fnn.tabulate(cls(), fkey(0))(jnp.ones(shape), train=True)
    assert '- train: True' in table and '100,480 (401.9 KB)' in table
    # The static keyword is kept when each call is re-run for its FLOPs (train=True: batch statistics).
    ours = fnn.tabulate(cls(), fkey(0), compute_flops=True)(jnp.ones(shape), train=True)
    flax_cls = _models(flax_linen)['mlp'][0]
    theirs = flax_linen.tabulate(flax_cls(), jax.random.PRNGKey(0), compute_flops=True,
                                 console_kwargs={'width': 400, 'force_terminal': False})(
        jax.numpy.ones(shape), train=True)
    assert _flop_cells(ours) == _flop_cells(theirs)
    assert ('BatchNorm_0', '2176') in [cells[:2] for cells in _flop_cells(ours)]


# ----------------------------------------------------------------------------
# The whole text, and the FLOP columns.
# ----------------------------------------------------------------------------


def _tutorial_models(nn, jnp_):
    """The tutorials' models (000: two MLP styles on uint8 images; 004: Conv + LayerNorm + leaky_relu)."""
    class Model(nn.Module):
        @nn.compact
        def __call__(self, inputs):
            inputs = inputs.reshape(inputs.shape[0], -1) / 255.
            x = nn.Dense(128, name='Dense1')(inputs)
            x = nn.relu(x)
            x = nn.Dense(128, name='Dense2')(x)
            x = nn.relu(x)
            return nn.Dense(10, name='Output')(x)

    class Model_setup(nn.Module):  # noqa: N801 (tutorial's name)
        def setup(self):
            self.dense1 = nn.Dense(128, name='Dense1')
            self.dense2 = nn.Dense(128, name='Dense2')
            self.output = nn.Dense(10, name='Output')

        def __call__(self, inputs):
            inputs = inputs.reshape(inputs.shape[0], -1) / 255.
            x = nn.relu(self.dense1(inputs))
            x = nn.relu(self.dense2(x))
            return self.output(x)

    class ConvLayerNorm(nn.Module):
        output_channels: int = 64
        kernel_size: tuple = (3, 3)
        leaky_slope: float = 0.01

        @nn.compact
        def __call__(self, x):
            x = nn.Conv(features=self.output_channels, kernel_size=self.kernel_size,
                        kernel_init=nn.initializers.lecun_normal())(x)
            x = nn.LayerNorm()(x)
            return nn.leaky_relu(x, negative_slope=self.leaky_slope)

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.avg_pool(nn.relu(nn.Conv(features=32, kernel_size=(3, 3))(x)), (2, 2), strides=(2, 2))
            x = nn.avg_pool(nn.relu(nn.Conv(features=64, kernel_size=(3, 3))(x)), (2, 2), strides=(2, 2))
            x = nn.relu(nn.Dense(features=256)(x.reshape((x.shape[0], -1))))
            return nn.Dense(features=10)(x)

    return {'model_000': (Model(), jnp_.zeros((1, 28, 28), jnp_.uint8)),
            'model_setup_000': (Model_setup(), jnp_.zeros((1, 28, 28), jnp_.uint8)),
            'conv_layernorm_004': (ConvLayerNorm(), jnp_.ones((1, 32, 32, 3))),
            'cnn': (CNN(), jnp_.ones((2, 28, 28, 1)))}


# LayerNorm's backward program differs from JAX's (see _flops.py): the 004 model's VJP column is
# compared with a tolerance in test_flop_columns_match_flax (norms) instead.
_TEXT_CASES = [(name, flops) for name in ['model_000', 'model_setup_000', 'conv_layernorm_004', 'cnn']
               for flops in ['none', 'forward', 'both'] if (name, flops) != ('conv_layernorm_004', 'both')]


@pytest.mark.parametrize('name, flops', _TEXT_CASES)
def test_tutorial_tables_are_flax_text(name, flops):
    """Character for character (Flax with a console wide enough and no terminal styling)."""
    kwargs = {'compute_flops': flops != 'none', 'compute_vjp_flops': flops == 'both'}
    model, x = _tutorial_models(fnn, jnp)[name]
    ours = model.tabulate(fkey(0), x, **kwargs)
    model, x = _tutorial_models(flax_linen, jax.numpy)[name]
    theirs = model.tabulate(jax.random.PRNGKey(0), x, console_kwargs={'width': 400, 'force_terminal': False},
                            **kwargs)
    assert ours == theirs


def _flop_models(nn):
    class Convs(nn.Module):
        @nn.compact
        def __call__(self, x):
            return (nn.Conv(4, (3, 3), strides=2, padding='VALID')(x),
                    nn.Conv(6, (3, 2), feature_group_count=3, kernel_dilation=(2, 1))(x),
                    nn.Conv(4, (3, 3), padding='CIRCULAR', use_bias=False)(x),
                    nn.Conv(2, (2, 2), padding=((2, 0), (1, 3)), input_dilation=2)(x),
                    nn.ConvTranspose(4, (3, 3), strides=(2, 2))(x))

    class Linear(nn.Module):
        @nn.compact
        def __call__(self, x):
            return (nn.DenseGeneral((2, 3), axis=(-2, -1))(x), nn.Dense(3, use_bias=False)(x),
                    nn.Dropout(0.5, deterministic=True)(nn.Dense(5)(x)))

    class Norms(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.LayerNorm()(x)
            x = nn.RMSNorm()(x)
            x = nn.GroupNorm(num_groups=2)(x)
            return nn.BatchNorm(use_running_average=False)(x)

    class Attention(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=8)(x)

    class Lookup(nn.Module):
        @nn.compact
        def __call__(self, ids):
            return nn.Embed(10, 4)(ids)

    class Pools(nn.Module):
        @nn.compact
        def __call__(self, x):
            return (nn.max_pool(x, (2, 2), padding='SAME'), nn.avg_pool(x, (3, 3), strides=(2, 2)),
                    nn.gelu(x), nn.softmax(x), nn.sigmoid(x))

    # The last entry: relative tolerance of the VJP counts (0: equal; None: not compared, the backward
    # programs differ -- max_pool's transpose is not JAX's select_and_scatter_add).
    return {'convs': (Convs, (2, 8, 8, 3), 0.01), 'linear': (Linear, (4, 5, 6), 0),
            'norms': (Norms, (2, 4, 6), 0.05), 'attention': (Attention, (2, 5, 8), 0.01),
            'lookup': (Lookup, 'ids', 0), 'pools': (Pools, (2, 6, 6, 3), None)}


def _flop_cells(table):
    """``(path, flops[, vjp_flops])`` of every row (the columns after ``outputs``)."""
    header = next(line for line in table.splitlines() if line.startswith('┃'))
    names = [c.strip() for c in header.split('┃')[1:-1]]
    columns = [i for i, n in enumerate(names) if n in ('flops', 'vjp_flops')]
    cells = []
    for line in table.splitlines():
        parts = [c.strip() for c in line.split('│')[1:-1]] if line.startswith('│') else []
        if parts and parts[1]:
            cells.append((parts[0], *(parts[i] for i in columns)))
    return cells


@pytest.mark.parametrize('name', ['convs', 'linear', 'norms', 'attention', 'lookup', 'pools'])
def test_flop_columns_match_flax(name):
    """Forward FLOPs equal Flax's (XLA's cost analysis) for every call; VJP FLOPs where the backward
    program is the same (see fluxion/flax/linen/_flops.py for the documented differences)."""
    cls, shape, vjp_tolerance = _flop_models(fnn)[name]
    x = jnp.array([[1, 2, 3], [4, 5, 9]]) if shape == 'ids' else jnp.ones(shape)
    ours = _flop_cells(cls().tabulate(fkey(0), x, compute_flops=True, compute_vjp_flops=True))
    cls = _flop_models(flax_linen)[name][0]
    x = jax.numpy.array([[1, 2, 3], [4, 5, 9]]) if shape == 'ids' else jax.numpy.ones(shape)
    theirs = _flop_cells(cls().tabulate(jax.random.PRNGKey(0), x, compute_flops=True, compute_vjp_flops=True,
                                        console_kwargs={'width': 400, 'force_terminal': False}))
    assert [(p, f) for p, f, _ in ours] == [(p, f) for p, f, _ in theirs]
    if vjp_tolerance is not None:
        for (_, _, ours_vjp), (_, _, theirs_vjp) in zip(ours, theirs):
            assert abs(int(ours_vjp) - int(theirs_vjp)) <= vjp_tolerance * int(theirs_vjp)


def test_flops_by_hand():
    """Dense: 2*M*N*K + M*N (bias). Its VJP adds two products, the bias gradient, and the addition of the
    returned parameters' cotangent (apply returns the variables too): Flax's docstring example."""
    class Foo(fnn.Module):
        @fnn.compact
        def __call__(self, x):
            h = fnn.Dense(4)(x)
            return fnn.Dense(2)(h)

    cells = _flop_cells(Foo().tabulate(fkey(0), jnp.ones((16, 9)), compute_flops=True))
    assert cells[0][:2] == ('', str(1216 + 288))
    assert cells[1][:2] == ('Dense_0', str(2 * 16 * 9 * 4 + 16 * 4))
    table = Foo().tabulate(fkey(0), jnp.ones((16, 9)), compute_vjp_flops=True)
    header = next(line for line in table.splitlines() if line.startswith('┃'))
    assert [c.strip() for c in header.split('┃')[1:-1]] == ['path', 'module', 'inputs', 'outputs', 'vjp_flops',
                                                             'params']
    dense_0 = next(line for line in table.splitlines() if line.startswith('│ Dense_0'))
    assert dense_0.split('│')[5].strip() == str(3 * 2 * 16 * 9 * 4 + 16 * 4 + (16 * 4 - 4) + (9 * 4 + 4))
    assert dense_0.split('│')[5].strip() == '3620'   # the number in Flax's tabulate docstring

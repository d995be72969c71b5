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
    with pytest.raises(NotImplementedError, match='compute_flops'):
        cls().tabulate(fkey(0), jnp.ones(shape), compute_flops=True)
